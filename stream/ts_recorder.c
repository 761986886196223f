/*
 * ts_recorder.c - the flight recorder (part of trace_stream.c): with
 * --flight-recorder, in place of the drain loop, the ring's contents go as
 * snapshots on connections of their own when a trigger comes.
 */
#include "ts_internal.h"

/* ---- flight recorder ----------------------------------------------------
 *
 * --flight-recorder (trace_shm.h, "flight recorder"): the ring is created
 * with its block, RECORDING, so the tracers keep overwriting its oldest
 * whole batches and this client reads nothing; the connection carries
 * heartbeats and drop notices only (and brings snapshot requests, if the
 * server's ack allowed them).  On a trigger (SIGUSR1, the block's
 * `triggers` moving, a tracer found dead, a request) it takes the ring's lock, turns
 * it to SHIPPING (from then on the ring is an ordinary one, and tail a
 * batch boundary, so nothing it ships can be torn or overwritten), and
 * sends [tail, head of that moment) - plus what comes in --after ms - on a
 * connection of its own: serve makes every connection its own series, so a
 * snapshot is one on any serve, old or new, and a snapshot cut short shows
 * as a cut connection.  Its first records (tid 0) say which snapshot, why,
 * and how many events were overwritten since the last one (SNAPSHOT,
 * WRAP).  It takes whole batches only, so that it can hand the ring back
 * RECORDING with its tail on a batch boundary.
 */
struct recorder {
    uint64_t triggers_seen;    /* the block's `triggers` when last looked at */
    uint64_t overwritten_sent; /* the block's `overwritten` at the last snapshot */
    uint32_t taken;            /* snapshots sent (or tried) */
    uint64_t skipped;          /* triggers over --max-triggers */
    uint64_t skipped_sent, held_sent; /* as last carried in-band */
    int skipped_said;          /* ... at least once on this connection (the first says "a recorder's") */
    uint64_t failed;           /* snapshots that could not be sent whole */
    uint64_t asks;             /* what the last look found: 1, or the tracers' asks since the one before */
    sig_atomic_t signals_seen; /* SIGUSR1s acted on (or declined) */
    int thaw_due;              /* the ring must go back to RECORDING; the lock was busy so far */
    uint64_t *times;           /* when the last --max-triggers snapshots were taken (ms) */
    int aligned;               /* our tail is a batch boundary */
};

static int recorder_init(struct recorder *rc, const struct options *o)
{
    memset(rc, 0, sizeof *rc);
    rc->aligned = 1;
    rc->times = calloc((size_t)o->max_triggers, sizeof *rc->times);
    return rc->times ? 0 : -1;
}

/* The ring's lock, as the tracers take it (trace_shm.h), but we may wait:
 * we are not the workload.  A holder that died is taken over.  0 or -1. */
static int recorder_lock(struct ring *r)
{
    _Atomic uint32_t *lock = a32(&r->hdr->lock);
    uint32_t me = (uint32_t)getpid();
    for (int i = 0; i < RECORDER_LOCK_TRIES; i++) {
        uint32_t v = 0;
        /* acquire: pairs with the tracers' release of the lock, so their
         * head, tail and storage writes are seen */
        if (atomic_compare_exchange_strong_explicit(lock, &v, me, memory_order_acquire, memory_order_relaxed))
            return 0;
        if (v && v <= (uint32_t)INT_MAX && kill((pid_t)v, 0) != 0 && errno == ESRCH &&
            atomic_compare_exchange_strong_explicit(lock, &v, me, memory_order_acquire, memory_order_relaxed))
            return 0;
        sleep_ms(1);
    }
    return -1;
}

static void recorder_unlock(struct ring *r)
{
    /* release: pairs with the next holder's acquire CAS */
    atomic_store_explicit(a32(&r->hdr->lock), 0, memory_order_release);
}

/* Turn the ring SHIPPING: *end = head then; r->tail = tail then (a batch
 * boundary); *over = events overwritten so far.  -1 if the lock stays busy. */
static int recorder_freeze(struct ring *r, uint64_t *end, uint64_t *over)
{
    if (recorder_lock(r))
        return -1;
    atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_SHIPPING, memory_order_relaxed);
    *end = atomic_load_explicit(a64(&r->hdr->head), memory_order_relaxed);
    r->tail = atomic_load_explicit(a64(&r->hdr->tail), memory_order_relaxed);
    *over = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
    recorder_unlock(r);
    return 0;
}

/* Back to RECORDING.  Our tail must be a batch boundary for the tracers to
 * walk on from; if it is not (records that are not batches came), what is
 * left is given up, and counted as discarded.  The records given up. */
static uint64_t recorder_thaw(struct ring *r, struct recorder *rc)
{
    uint64_t gone = 0;
    rc->thaw_due = 1;
    if (recorder_lock(r))
        return 0; /* still SHIPPING: an ordinary ring, nothing lost; record() tries again */
    rc->thaw_due = 0;
    if (!rc->aligned) {
        uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_relaxed);
        gone = (head - r->tail) / TRACE_EVENT_SIZE;
        r->tail = head;
        atomic_store_explicit(a64(&r->hdr->tail), head, memory_order_relaxed);
        rc->aligned = 1;
    }
    atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_RECORDING, memory_order_relaxed);
    recorder_unlock(r);
    return gone;
}

/* How many bytes from our tail are whole batches, at most max (while
 * SHIPPING).  A record that is not a batch's start, or a batch larger
 * than max, ends the alignment until the ring is empty again. */
static size_t recorder_whole(struct ring *r, struct recorder *rc, size_t max)
{
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    if (head == r->tail)
        rc->aligned = 1;
    if (!rc->aligned || head < r->tail || head - r->tail > r->capacity)
        return max; /* ring_take reports a broken ring */
    uint64_t pos = r->tail;
    while (pos < head) {
        trace_event_t b;
        memcpy(&b, r->data + pos % r->capacity, sizeof b);
        uint64_t bytes = (uint64_t)(uint32_t)b.call_site * TRACE_EVENT_SIZE;
        if (b.kind != TRACE_KIND_MARKER || b.func != TRACE_MARK_BATCH || bytes == 0 || bytes > head - pos ||
            (pos == r->tail && bytes > max)) {
            if (pos == r->tail)
                rc->aligned = 0;
            return pos == r->tail ? max : (size_t)(pos - r->tail);
        }
        if (pos + bytes - r->tail > max)
            break;
        pos += bytes;
    }
    return (size_t)(pos - r->tail);
}

static void recorder_mark(unsigned char *p, uint64_t ts, uint64_t code, uint64_t payload)
{
    memset(p, 0, TRACE_EVENT_SIZE);
    wire_put_le64(p + offsetof(trace_event_t, ts), ts);
    wire_put_le64(p + offsetof(trace_event_t, func), code);
    wire_put_le64(p + offsetof(trace_event_t, call_site), payload);
    p[offsetof(trace_event_t, kind)] = TRACE_KIND_MARKER;
}

/* May a snapshot be taken now?  At most --max-triggers in any hour. */
static int recorder_allowed(struct recorder *rc, const struct options *o)
{
    uint64_t t = now_ms();
    uint32_t slot = rc->taken % (uint32_t)o->max_triggers;
    if (rc->taken >= (uint32_t)o->max_triggers && t - rc->times[slot] < 3600000u)
        return 0;
    rc->times[slot] = t;
    return 1;
}

static const char *const cause_name[] = {"", "SIGUSR1", "a slow call (TRACE_TRIGGER)", "a tracer died",
                                         "callsight trigger"};

/* Ship from our tail: until `end` is passed, then for the --after window.
 * 0 sent whole, 1 the snapshot's connection failed (said), -1 fatal. */
static int recorder_ship(struct ring *r, struct recorder *rc, struct sender *main, struct sender *snap,
                         uint64_t end, uint64_t until_ms)
{
    for (;;) {
        if (r->tail >= end && (now_ms() >= until_ms || stop_requested))
            return 0;
        if (maybe_reconnect(main, r->hdr) || heartbeat(main))
            return -1;
        size_t max = recorder_whole(r, rc, CHUNK_RAW);
        long n = max ? ring_take(r, snap->raw, max) : 0;
        if (n < 0)
            return -1;
        if (n == 0 && r->tail < end)
            end = r->tail; /* cannot happen with a sound ring: never spin on it */
        if (n == 0) {
            if (r->tail >= end && idle_wait(snap, 2) < 0)
                return 1;
            continue;
        }
        if (!host_is_little_endian())
            for (long off = 0; off < n; off += TRACE_EVENT_SIZE)
                event_to_le(snap->raw + off);
        if (snap->peer.ack_got < TRACE_STREAM_ACK_SIZE && read_server(snap))
            return 1;
        if (send_records(snap, snap->raw, n) || snap->sock < 0)
            return 1;
    }
}

/* One snapshot, on its own connection. 0, or -1 fatal. */
static int recorder_snapshot(struct ring *r, struct recorder *rc, struct sender *main, struct sender *snap,
                             unsigned cause)
{
    const struct options *o = main->o;
    uint64_t ts = ring_now_ts(r->hdr), end, over, t0 = now_ms();
    if (recorder_freeze(r, &end, &over)) {
        fprintf(stderr, "trace_stream: snapshot (%s) not taken: the ring's lock stays taken\n", cause_name[cause]);
        rc->failed++;
        rc->thaw_due = 1; /* a tracer that asked may have frozen it */
        return 0;
    }
    rc->taken++;
    unsigned char head[2 * TRACE_EVENT_SIZE];
    uint64_t wrapped = over - rc->overwritten_sent;
    recorder_mark(head, ts, TRACE_MARK_SNAPSHOT, cause | (uint64_t)(rc->taken & 0xffffffu) << 8);
    recorder_mark(head + TRACE_EVENT_SIZE, ts, TRACE_MARK_WRAP, wrapped);
    rc->overwritten_sent = over;
    uint64_t records = (end - r->tail) / TRACE_EVENT_SIZE;
    int rc_ship = 1;
    snap->sock = net_connect(o->host, o->port, 1);
    if (snap->sock >= 0 && send_handshake(snap, r->hdr) == 0 && send_records(snap, head, sizeof head) == 0 &&
        snap->sock >= 0) {
        uint64_t sent0 = snap->events; /* the two records above */
        rc_ship = recorder_ship(r, rc, main, snap, end, t0 + (uint64_t)o->after_ms);
        if (rc_ship < 0)
            return -1;
        /* No drop notice here: the device's count is the main connection's
         * (it would be counted twice); each thread's losses are in its own
         * records (THREAD_LOST), and analyze knows they are among it. */
        if (rc_ship == 0 && !o->quiet)
            fprintf(stderr, "trace_stream: snapshot %" PRIu32 " (%s): %" PRIu64 " records of the ring, %" PRIu64
                            " in all, %" PRIu64 " events overwritten before it\n",
                    rc->taken, cause_name[cause], records, snap->events - sent0, wrapped);
    }
    if (rc_ship) {
        rc->failed++;
        main->link.snap_lost++; /* the link refused or cut it: events lost, the exit status says so */
        fprintf(stderr, "trace_stream: snapshot %" PRIu32 " (%s) could not be sent whole to %s:%s\n", rc->taken,
                cause_name[cause], o->host, o->port);
        if (r->tail < end) { /* give the rest up: the ring is the tracers' again */
            snap->discarded += (end - r->tail) / TRACE_EVENT_SIZE;
            r->tail = end;
            rc->aligned = 1; /* head at the freeze: the end of a put, so of a batch */
            atomic_store_explicit(a64(&r->hdr->tail), end, memory_order_release);
        }
    }
    sender_close(snap);
    snap->discarded += recorder_thaw(r, rc);
    return 0;
}

/* The block's counts of triggers not taken, in-band (tid 0) when they
 * change: over --max-triggers here, and slow calls the tracers held back. */
static int recorder_send_skipped(struct ring *r, struct recorder *rc, struct sender *s)
{
    uint64_t held = atomic_load_explicit(a64(&r->rec->held), memory_order_relaxed);
    if (s->sock < 0 || (rc->skipped_said && held == rc->held_sent && rc->skipped == rc->skipped_sent))
        return 0;
    unsigned char m[TRACE_EVENT_SIZE];
    uint64_t lo = rc->skipped < UINT32_MAX ? rc->skipped : UINT32_MAX, hi = held < UINT32_MAX ? held : UINT32_MAX;
    recorder_mark(m, ring_now_ts(r->hdr), TRACE_MARK_TRIGGERS_SKIPPED, hi << 32 | lo);
    if (send_records(s, m, sizeof m))
        return -1;
    rc->skipped_sent = rc->skipped;
    rc->held_sent = held;
    rc->skipped_said = s->sock >= 0;
    return 0;
}

/* What wakes the recorder: 0 nothing, else an enum trace_snapshot_cause. */
static unsigned recorder_cause(struct ring *r, struct recorder *rc, struct sender *s, int *death_done)
{
    /* acquire: pairs with the tracer's release increment, made after the
     * batch with the slow call went in */
    uint64_t trig = atomic_load_explicit(a64(&r->rec->triggers), memory_order_acquire);
    unsigned cause = 0;
    rc->asks = 1;
    if (snapshot_requested != rc->signals_seen) {
        rc->signals_seen = snapshot_requested;
        cause = TRACE_SNAPSHOT_SIGNAL;
    } else if (s->peer.requests) {
        s->peer.requests--;
        cause = TRACE_SNAPSHOT_REQUEST;
    } else if (trig != rc->triggers_seen) {
        cause = TRACE_SNAPSHOT_CALL; /* every ask since the last look: one snapshot */
        rc->asks = trig - rc->triggers_seen;
        rc->triggers_seen = trig;
    } else if (r->vanished && !*death_done)
        cause = TRACE_SNAPSHOT_DEATH;
    *death_done |= cause == TRACE_SNAPSHOT_DEATH;
    return cause;
}

/* The recorder's loop, in place of drain(): until the tracers have
 * detached or died, or SIGINT/SIGTERM.  0, 2 the host turned it off, or
 * -1 fatal. */
static int record(struct ring *r, struct sender *s, struct recorder *rc, struct sender *snap)
{
    const struct options *o = s->o;
    int death_done = 0;
    rc->triggers_seen = atomic_load_explicit(a64(&r->rec->triggers), memory_order_acquire);
    snapshot_requested = rc->signals_seen; /* a signal while it was off asked for nothing */
    while (!stop_requested) {
        if (maybe_reconnect(s, r->hdr) || heartbeat(s) || send_notice_if_changed(s, r->hdr) || ctl_service(s))
            return -1;
        if (s->ctl.rec_want == TRACE_STREAM_CTL_RECORDER_OFF)
            return 2; /* the host turned it off: stream_modes makes the switch */
        uint32_t writers = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
        if (!r->vanished)
            r->vanished = ring_dead_writers(r);
        unsigned cause = recorder_cause(r, rc, s, &death_done);
        if (cause && recorder_allowed(rc, o)) {
            /* a slow call that asks while this one ships gets the next */
            if (recorder_snapshot(r, rc, s, snap, cause))
                return -1;
            continue;
        }
        if (cause) {
            rc->skipped += rc->asks;
            rc->thaw_due = 1; /* a tracer that asked froze it */
        }
        if (rc->thaw_due)
            snap->discarded += recorder_thaw(r, rc);
        if (recorder_send_skipped(r, rc, s))
            return -1;
        if (r->vanished || writers == 0)
            return 0;
        if (idle_wait(s, 5))
            return -1;
    }
    return 0;
}

static void recorder_report(const struct ring *r, const struct recorder *rc, const struct sender *snap)
{
    uint64_t over = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
    uint64_t held = atomic_load_explicit(a64(&r->rec->held), memory_order_relaxed);
    fprintf(stderr, "trace_stream: flight recorder: %" PRIu32 " snapshot%s (%" PRIu64 " failed), %" PRIu64
                    " events overwritten, %" PRIu64 " records discarded; triggers not taken: %" PRIu64
                    " over --max-triggers, %" PRIu64 " slow calls within %u ms of another\n",
            rc->taken, rc->taken == 1 ? "" : "s", rc->failed, over, snap->discarded, rc->skipped, held,
            TRACE_TRIGGER_GAP_MS);
}

/* A marker (tid 0) in the main connection's series: the recorder went on
 * or off here (TRACE_MARK_RECORDER, trace.h).  0, or -1 fatal. */
static int recorder_say(struct ring *r, struct sender *s, uint64_t payload)
{
    unsigned char m[TRACE_EVENT_SIZE];
    recorder_mark(m, ring_now_ts(r->hdr), TRACE_MARK_RECORDER, payload);
    return send_records(s, m, sizeof m);
}

/* The host's switch, at the point the loops stopped for it (trace_shm.h):
 * on once everything before it is sent, off by taking tail back from the
 * writers.  0 (made, or the lock was busy: tried again), -1 fatal. */
static int recorder_switch(struct ring *r, struct sender *s, struct recorder *rc)
{
    const struct options *o = s->o;
    if (s->ctl.rec_want == TRACE_STREAM_CTL_RECORDER_ON) {
        if (recorder_say(r, s, TRACE_RECORDER_MARK_ON))
            return -1;
        r->arming = 0;
        r->recording = 1;
        rc->aligned = 1; /* at arm_at: every put after it is a whole batch */
        r->over_at = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
        rc->overwritten_sent = r->over_at;
        s->discarded += recorder_thaw(r, rc); /* RECORDING, or SHIPPING until the lock is had */
        s->ctl.rec_want = 0;
        if (!o->quiet)
            fprintf(stderr, "trace_stream: flight recorder on (live control): the ring keeps its most recent "
                            "events; snapshots go on connections of their own\n");
        return 0;
    }
    if (recorder_lock(r)) {
        sleep_ms(IDLE_MAX_MS);
        return 0; /* still recording; asked again */
    }
    atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_OFF, memory_order_relaxed);
    r->tail = atomic_load_explicit(a64(&r->hdr->tail), memory_order_relaxed);
    uint64_t over = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
    recorder_unlock(r);
    /* release: ours again, as in ring_take */
    atomic_store_explicit(a64(&r->hdr->tail), r->tail, memory_order_release);
    r->recording = 0;
    rc->thaw_due = 0;
    s->ctl.rec_want = 0;
    if (recorder_say(r, s, TRACE_RECORDER_MARK_OFF | (over - r->over_at) << 8))
        return -1;
    if (!o->quiet)
        fprintf(stderr, "trace_stream: flight recorder off (live control): %" PRIu64 " events overwritten while it "
                        "recorded; streaming again, from its last recording on\n", over - r->over_at);
    return 0;
}

/* The stream's loops: drain(), and record() while the flight recorder is
 * on (--flight-recorder, or turned on from the host), until the end.  0,
 * or -1 (the link is gone for good, or fatal). */
static int stream_modes(struct ring *r, struct sender *s, const struct options *o)
{
    if (!r->rec)
        return drain(r, s) || reach_server_at_end(s, r->hdr) ? -1 : 0;
    struct recorder rc;
    struct sender snap = {.sock = -1};
    struct options so = *o;
    so.summary_threads = 1; /* a snapshot is what the ring held, as it was */
    so.retry_s = 0;         /* a snapshot's connection is not resumed: a cut shows as one */
    so.recorder = 0;        /* and takes no requests: the main connection does */
    int bad = recorder_init(&rc, o) || sender_init(&snap, -1, &so), used = r->recording, step = 0;
    while (!bad) {
        step = r->recording ? record(r, s, &rc, &snap) : drain(r, s);
        if (step != 2)
            break;
        bad = recorder_switch(r, s, &rc) < 0;
        used = 1;
    }
    bad = bad || step < 0 || reach_server_at_end(s, r->hdr);
    if (!bad && used)
        recorder_report(r, &rc, &snap);
    free(rc.times);
    sender_free(&snap);
    return bad ? -1 : 0;
}
