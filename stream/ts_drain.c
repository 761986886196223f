/*
 * ts_drain.c - the drain loop (part of trace_stream.c): waiting for a
 * tracer, taking chunks from the ring and sending them (coded, with
 * summaries merged, or left out for a server that does not take them),
 * and the end of a stream: tracers that died, and what the link cost when
 * no connection is up.
 */
#include "ts_internal.h"

/* An older server does not take summary records: leave them out of the
 * chunk (counted, and carried in the dropped count of the notices). */
static long drop_summaries(struct sender *s, unsigned char *raw, long n)
{
    long out = 0;
    for (long off = 0; off < n; off += TRACE_EVENT_SIZE) {
        if (raw[off + offsetof(trace_event_t, kind)] == TRACE_KIND_SUMMARY) {
            s->sum_dropped++;
            continue;
        }
        if (out != off)
            memmove(raw + out, raw + off, TRACE_EVENT_SIZE);
        out += TRACE_EVENT_SIZE;
    }
    return out;
}

/* A tracer attached: connect again, if parked.  1, or -1 when the server
 * cannot be reached now and --retry is 0 (with --retry the ring keeps the
 * events while the link is down, as after any cut). */
static int unpark(struct sender *s)
{
    if (!s->parked)
        return 1;
    s->parked = 0;
    if ((s->sock = net_connect(s->o->host, s->o->port, 1)) >= 0)
        return 1;
    fprintf(stderr, "trace_stream: %s:%s, reached before, cannot be reached now that a tracer attached\n",
            s->o->host, s->o->port);
    sender_down(s);
    if (s->o->retry_s == 0) {
        s->link.gave_up = 1;
        return -1;
    }
    fprintf(stderr, "trace_stream: reconnecting for up to %ld s; meanwhile the ring keeps what the tracers "
                    "write (once it is full they drop new events, counted)\n", s->o->retry_s);
    return 1;
}

/*
 * A tracer has been here once its `writers` increment is visible (acquire:
 * it wrote the header's lower half before), or once head moved: a tracer
 * can come and go between two looks.  1 when attached, 0 when stopped by a
 * signal first, -1 when the server went away for good.
 */
static int wait_for_tracer(struct ring *r, struct sender *s, int quiet)
{
    trace_shm_header_t *h = r->hdr;
    uint64_t head0 = atomic_load_explicit(a64(&h->head), memory_order_acquire);
    if (head0 != r->tail)
        return 1;
    if (!quiet)
        fprintf(stderr, "trace_stream: waiting for a tracer on %s\n", r->name);
    uint64_t park_at = now_ms() + PARK_AFTER_MS;
    for (;;) {
        if (s->sock >= 0 && now_ms() >= park_at) { /* reached: park until there is a handshake to send */
            close(s->sock);
            s->sock = -1;
            s->parked = 1;
        }
        if (atomic_load_explicit(a32(&h->writers), memory_order_acquire) > 0)
            return unpark(s);
        if (atomic_load_explicit(a64(&h->head), memory_order_acquire) != head0)
            return unpark(s);
        if (stop_requested)
            return 0;
        if ((!s->parked && maybe_reconnect(s, NULL)) || idle_wait(s, 5))
            return -1;
    }
}

/* n bytes of little-endian records as one chunk, coded once the server
 * acked the codec.  0 sent (or the connection was lost: counted as
 * discarded, reconnecting), -1 fatal. */
static int send_records(struct sender *s, unsigned char *raw, long n)
{
    uint64_t records = (uint64_t)n / TRACE_EVENT_SIZE;
    int rc;
    if (s->sock < 0) {
        s->discarded += records;
        return 0;
    }
    if (s->peer.acked) {
        wire_codec_encode(s->codec, raw, s->coded, (size_t)records);
        rc = send_chunk(s, TRACE_CHUNK_EVENTS_CODED, s->coded, (size_t)n);
        s->coded_chunks += rc == 0;
    } else {
        rc = send_chunk(s, TRACE_CHUNK_EVENTS, raw, (size_t)n);
    }
    if (rc < 0)
        return -1;
    if (rc == 1) {
        s->discarded += records; /* some of it may have left: the server's count decides */
        return sender_lost(s);
    }
    s->events += records;
    s->chunks++;
    return 0;
}

/*
 * The loss table's counts (trace_shm.h) that changed since this connection
 * last had them, all of them on a new connection, as TRACE_MARK_THREAD_DROPPED
 * records (tid 0: `other`) in a chunk of their own, before the notice that
 * carries the total they are part of.  Cumulative, so a lost chunk costs
 * nothing once a later one arrives; the counts are final once no tracer is
 * attached, and the drain's last look comes after that.  0, or -1 fatal.
 */
static int send_losses(struct sender *s)
{
    const trace_shm_losses_t *l = s->losses;
    if (!l || s->sock < 0)
        return 0;
    unsigned char buf[(TRACE_SHM_LOSS_SLOTS + 1) * TRACE_EVENT_SIZE];
    uint64_t now[TRACE_SHM_LOSS_SLOTS + 1], ts = ring_now_ts(s->ring);
    uint32_t tid[TRACE_SHM_LOSS_SLOTS + 1];
    long n = 0;
    for (uint32_t i = 0; i <= TRACE_SHM_LOSS_SLOTS; i++) {
        /* relaxed: counters; what a tracer added before it detached is seen
         * through the acquire load of `writers` that ended the drain */
        tid[i] = i < TRACE_SHM_LOSS_SLOTS
                     ? atomic_load_explicit(a32((uint32_t *)&l->slot[i].tid), memory_order_relaxed) : 0;
        now[i] = atomic_load_explicit(a64((uint64_t *)(i < TRACE_SHM_LOSS_SLOTS ? &l->slot[i].events : &l->other)),
                                      memory_order_relaxed);
        int changed = now[i] != s->loss_sent[i] || (i < TRACE_SHM_LOSS_SLOTS && tid[i] != s->loss_tid[i]);
        if (now[i] == 0 || (i < TRACE_SHM_LOSS_SLOTS && tid[i] == 0) || !(changed || s->notice_due))
            continue;
        unsigned char *p = buf + n;
        memset(p, 0, TRACE_EVENT_SIZE);
        wire_put_le64(p + offsetof(trace_event_t, ts), ts);
        wire_put_le64(p + offsetof(trace_event_t, func), TRACE_MARK_THREAD_DROPPED);
        wire_put_le64(p + offsetof(trace_event_t, call_site), now[i]);
        wire_put_le32(p + offsetof(trace_event_t, tid), tid[i]);
        p[offsetof(trace_event_t, kind)] = TRACE_KIND_MARKER;
        n += TRACE_EVENT_SIZE;
    }
    if (n == 0)
        return 0;
    if (send_records(s, buf, n))
        return -1;
    if (s->sock >= 0) { /* sent whole: a cut resends them all (notice_due) */
        memcpy(s->loss_sent, now, sizeof s->loss_sent);
        memcpy(s->loss_tid, tid, sizeof s->loss_tid);
    }
    return 0;
}

/* The server surely does not take summaries: it said so, or did not
 * answer in time. */
static int sum_refused(const struct sender *s)
{
    return s->sock >= 0 && !s->peer.sum_ok &&
           (s->peer.ack_got >= TRACE_STREAM_ACK_SIZE || now_ms() - s->peer.hello_ms >= TRACE_ACK_WAIT_MS);
}

/*
 * Take one chunk's worth from the ring and send it; 1 if there was nothing.
 * Only while a connection is up: without one the ring keeps what it holds
 * for the next (the tracers drop new events, counted, once it is full),
 * and before each take the socket is read, so that a server that has gone
 * (its end arrived while we were busy or stopped) leaves the chunk in the
 * ring rather than lost in flight.
 */
static int forward_chunk(struct ring *r, struct sender *s)
{
    if (s->sock < 0)
        return 1;
    if (read_server(s))
        return sender_lost(s);
    /* turning the recorder on: up to where the ring was made SHIPPING, no
     * further (what follows is the recording's) */
    size_t max = r->arming && r->arm_at - r->tail < CHUNK_RAW ? (size_t)(r->arm_at - r->tail) : CHUNK_RAW;
    long n = max ? ring_take(r, s->raw, max) : 0;
    if (n < 0)
        return -1;
    if (n == 0)
        return 1;
    if (!host_is_little_endian())
        for (long off = 0; off < n; off += TRACE_EVENT_SIZE)
            event_to_le(s->raw + off);
    if (s->merge) { /* even while disconnected: the merged tables outlive a cut */
        long before = n;
        n = merge_take(s->merge, s->raw, n);
        if (sum_refused(s))
            s->sum_dropped += (uint64_t)(before - n) / TRACE_EVENT_SIZE;
    }
    if (!s->peer.sum_ok)
        n = drop_summaries(s, s->raw, n);
    if (n == 0)
        return 0; /* only summary records: none taken by this server, or all merged */
    if (s->merge && s->merge->seen && s->peer.sum_ok)
        return merge_hold(s, s->merge, s->raw, n); /* a summary stream's markers ride with the next snapshot */
    return send_records(s, s->raw, n);
}

/* Version 3: a batch at tail is still being copied (ring_take stopped
 * there), so the ring is not empty yet; its writer commits it or is found
 * gone (batch_abandoned).  Stopping, we wait for it a LIVENESS_MS at most. */
static int ring_pending(const struct ring *r, uint64_t stop_ms)
{
    return r->version == TRACE_SHM_VERSION_COMMIT &&
           atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire) != r->tail &&
           (stop_ms == 0 || now_ms() - stop_ms < LIVENESS_MS);
}

/* The host asked for the recorder: make the ring SHIPPING (every put from
 * then on a whole batch under the lock) and note head, up to which the
 * drain goes on (trace_shm.h).  1 once it has: time to record; 0 not yet
 * (the lock was busy: tried again next time). */
static int drain_arm(struct ring *r, struct sender *s)
{
    if (s->ctl.rec_want != TRACE_STREAM_CTL_RECORDER_ON)
        return 0;
    if (!r->arming) {
        if (recorder_lock(r))
            return 0;
        atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_SHIPPING, memory_order_relaxed);
        r->arm_at = atomic_load_explicit(a64(&r->hdr->head), memory_order_relaxed);
        recorder_unlock(r);
        r->arming = 1;
    }
    return r->tail >= r->arm_at;
}

/*
 * Forward until the tracer has detached and the ring is empty, or, after
 * SIGINT/SIGTERM, until what the ring held at that moment is sent, or until
 * the tracers are found dead and what they left is sent.  The tracer
 * publishes its last head before it decrements `writers` (both release), so
 * reading writers == 0 (acquire) and then an empty ring means nothing more
 * comes.  2 when the host turned the flight recorder on and everything
 * before it is sent (stream_modes makes the switch).
 */
static int drain(struct ring *r, struct sender *s)
{
    int idle_ms = IDLE_MIN_MS, stopping = 0;
    uint64_t stop_at = 0, stop_ms = 0;
    for (;;) {
        if (!stopping && r->rec && drain_arm(r, s))
            return 2;
        if (stop_requested && !stopping) {
            stopping = 1;
            stop_ms = now_ms();
            stop_at = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
        }
        if (stopping && r->tail >= stop_at)
            return 0; /* sent what the ring held when we were asked to stop */
        if (maybe_reconnect(s, r->hdr))
            return -1;
        if (s->sock < 0) { /* the ring keeps it all for the next connection */
            if (stopping)
                return 0; /* the caller says what stays behind */
            if (!r->vanished)
                r->vanished = ring_dead_writers(r);
            sleep_ms(LINK_WAIT_MS);
            continue;
        }
        if (ack_pending(s, r)) { /* whether summaries may go: see TRACE_STREAM_FLAG_SUMMARY_OFFER */
            if (idle_wait(s, 5))
                return -1;
            continue;
        }
        uint32_t writers = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
        if (!r->vanished)
            r->vanished = ring_dead_writers(r);
        int rc = forward_chunk(r, s);
        if (rc < 0 || send_losses(s) || send_notice_if_changed(s, r->hdr) || (s->merge && merge_emit(s, s->merge, 0)) ||
            ctl_service(s))
            return -1;
        if (rc == 0) {
            idle_ms = IDLE_MIN_MS;
            continue;
        }
        if ((writers == 0 || stopping || r->vanished) && !ring_pending(r, stop_ms))
            return 0;
        if (heartbeat(s) || idle_wait(s, idle_ms))
            return -1;
        idle_ms = idle_ms * 2 > IDLE_MAX_MS ? IDLE_MAX_MS : idle_ms * 2;
    }
}

/*
 * The ring is drained but the server is away: what was discarded must still
 * reach it (in the resume notice), so keep trying within --retry.  0
 * connected; -1 not (--retry ran out, or SIGINT/SIGTERM: link_end says
 * what it cost), or a fatal error.
 */
static int reach_server_at_end(struct sender *s, const trace_shm_header_t *h)
{
    while (s->sock < 0 && !stop_requested) {
        if (maybe_reconnect(s, h))
            return -1;
        if (s->sock < 0)
            sleep_ms(LINK_WAIT_MS);
    }
    return s->sock < 0 ? -1 : 0;
}

/* Tell the server that tracers died, and say so; the exit status is EXIT_TRACER_LOST. */
static int report_vanished(struct ring *r, struct sender *s)
{
    if (r->vanished_said++)
        return 0;
    unsigned char payload[8];
    wire_put_le64(payload, r->vanished);
    if (send_small(s, TRACE_CHUNK_TRACER_LOST, payload, sizeof payload))
        return -1;
    fprintf(stderr, "trace_stream: %" PRIu32 " tracer process%s died without detaching (killed?); "
                    "sent what %s had put in the ring, the rest of %s events is lost\n",
            r->vanished, r->vanished == 1 ? "" : "es", r->vanished == 1 ? "it" : "they",
            r->vanished == 1 ? "its" : "their");
    return 0;
}

/*
 * The stream ends without a connection: --retry ran out (or is 0), or
 * SIGINT/SIGTERM came while none was up.  Say what the link cost: what the
 * ring still holds (never sent), records taken and not sent whole, and the
 * tracers' drops while no connection was up; a flight recorder's ring is
 * its recording, never owed, so only its failed snapshots count.  The exit
 * status: EXIT_LINK_LOST when anything was lost, else 1 when the server
 * could not be reached, 0 when a stop found nothing owed.  --retry 0 keeps
 * its single line when nothing was lost.
 */
static int link_end(struct ring *r, struct sender *s)
{
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    uint64_t left = r->recording || head < r->tail || head - r->tail > r->capacity ? 0
                    : r->version == TRACE_SHM_VERSION_COMMIT || r->mixed ? ring_records_left(r, head)
                                                      : (head - r->tail) / TRACE_EVENT_SIZE;
    uint64_t dropped = r->recording ? 0 : outage_drops(s), lost = left + s->discarded + dropped;
    char why[160];
    if (r->vanished)
        report_vanished(r, s); /* says it; there is no connection to tell */
    if (!s->link.gave_up)
        snprintf(why, sizeof why, "stopped while disconnected");
    else if (s->o->retry_s)
        snprintf(why, sizeof why, "gave up reconnecting to %s:%s after %ld s", s->o->host, s->o->port,
                 s->o->retry_s);
    else
        snprintf(why, sizeof why, "not reconnecting (--retry 0)");
    if (lost || s->link.snap_lost || s->o->retry_s || !s->link.gave_up)
        fprintf(stderr, "trace_stream: %s; %" PRIu64 " events lost: %" PRIu64 " left in the ring, %" PRIu64
                        " discarded, %" PRIu64 " dropped by the tracers while disconnected%s\n",
                why, lost, left, s->discarded, dropped, s->link.snap_lost ? "; snapshots failed" : "");
    return lost || s->link.snap_lost ? EXIT_LINK_LOST : s->link.gave_up ? 1 : 0;
}

/* A step of the end failed: without a connection that is link_end's to say, else an error. */
static int end_failed(struct ring *r, struct sender *s)
{
    return s->sock < 0 && (s->link.gave_up || stop_requested) ? link_end(r, s) : 1;
}
