/*
 * ts_link.c - the link to serve (part of trace_stream.c): connecting,
 * sending, a lost connection and the outage's accounting, reading the
 * server's ack and snapshot requests without blocking, the handshake,
 * chunks, drop notices, resume notices and heartbeats, and reconnecting
 * with a doubling backoff within --retry.
 */
#include "ts_internal.h"

/*
 * Retrying a server on this host while nothing listens on its port, a
 * connect can pick that very port as its own and open a connection to
 * itself (TCP simultaneous open): everything sent would come back to us
 * and count as sent.  Such a socket is no server; errno is set to
 * ECONNREFUSED, as if nobody listened.
 */
static int self_connected(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    errno = 0;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
        return 0;
    if (ml != pl || memcmp(&me, &peer, ml) != 0)
        return 0;
    errno = ECONNREFUSED;
    return 1;
}

static int net_connect(const char *host, const char *port, int quiet)
{
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        if (!quiet)
            fprintf(stderr, "trace_stream: cannot resolve %s port %s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 || self_connected(fd)) {
            err = errno ? errno : ECONNREFUSED;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0 && !quiet)
        fprintf(stderr, "trace_stream: cannot connect to %s:%s: %s\n", host, port, strerror(err));
    return fd;
}

static void report_send_error(int err)
{
    if (err == EPIPE || err == ECONNRESET)
        fprintf(stderr, "trace_stream: the server closed the connection\n");
    else
        fprintf(stderr, "trace_stream: sending to the server failed: %s\n", strerror(err));
}

/* 0 sent, -1 the connection failed (reported). */
static int send_all(struct sender *s, const unsigned char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(s->sock, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            report_send_error(n < 0 ? errno : EPIPE);
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        s->wire_bytes += (uint64_t)n;
    }
    s->last_send = now_ms();
    return 0;
}

/* No connection from now on: the outage's clock and the tracers' drops start. */
static void sender_down(struct sender *s)
{
    s->link.down_since = now_ms();
    s->link.backoff_ms = BACKOFF_MIN_MS;
    s->link.next_try = s->link.down_since + BACKOFF_MIN_MS;
    if (s->ring)
        s->link.down_dropped = ring_dropped(s->ring);
}

/* The tracers' drops while no connection was up, this outage included. */
static uint64_t outage_drops(const struct sender *s)
{
    uint64_t d = s->link.outage_dropped;
    if (s->sock < 0 && s->ring)
        d += ring_dropped(s->ring) - s->link.down_dropped;
    return d;
}

/*
 * The connection is gone (already reported).  With --retry 0 that ends the
 * program (-1); otherwise we stop taking from the ring, which keeps what the
 * tracers write for the next connection (full, they drop new events and
 * count them), and try to reconnect with a doubling backoff (0).
 */
static int sender_lost(struct sender *s)
{
    close(s->sock);
    s->sock = -1;
    sender_down(s);
    if (s->o->retry_s == 0) {
        s->link.gave_up = 1;
        return -1;
    }
    fprintf(stderr, "trace_stream: reconnecting for up to %ld s; meanwhile the ring keeps what the tracers "
                    "write (once it is full they drop new events, counted)\n", s->o->retry_s);
    return 0;
}

/* The ack is whole: a known magic, and our codec and summaries among its bits. */
static void ack_check(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_ACK_MAGIC, sizeof TRACE_STREAM_ACK_MAGIC - 1);
    uint32_t codecs = wire_le32(s->peer.ack + offsetof(trace_stream_ack_t, codecs));
    uint32_t features = wire_le32(s->peer.ack + offsetof(trace_stream_ack_t, features));
    if (memcmp(s->peer.ack, magic, 8) != 0) {
        fprintf(stderr, "trace_stream: the server answered the handshake with something else than "
                        "an ack; sending plain chunks\n");
        return;
    }
    s->peer.acked = s->peer.offered && (codecs & TRACE_CODEC_STACK_SHUFFLE) != 0;
    s->peer.sum_ok = (features & TRACE_ACK_SUMMARIES) != 0;
    s->peer.sum_inc = s->peer.sum_ok && (features & TRACE_ACK_SUMMARY_INCREMENTS) != 0;
    s->peer.req_ok = s->o->recorder && (features & TRACE_ACK_SNAPSHOT_REQUESTS) != 0;
    s->peer.ctl_ok = s->ctl.block && (features & TRACE_ACK_CONTROL) != 0;
    s->auth.acked = s->auth.offered && s->peer.ctl_ok && (features & TRACE_ACK_AUTH) != 0;
    if (s->auth.offered && !s->auth.acked && s->peer.ctl_ok)
        fprintf(stderr, "trace_stream: the server has no key (serve --auth-key): it cannot prove ours, so "
                        "every control request it sends is refused\n");
    if (s->peer.acked && !s->o->quiet)
        fprintf(stderr, "trace_stream: the server decodes coded chunks; sending them from now on\n");
}

/* Still waiting for the server to say whether it takes summary snapshots:
 * the ring is held back meanwhile, so that none is dropped for not knowing,
 * but never past half full, so that the tracers drop nothing for our
 * waiting (what summaries then find no answer are counted as dropped). */
static int ack_pending(const struct sender *s, const struct ring *r)
{
    if (s->sock < 0 || s->peer.ack_got >= TRACE_STREAM_ACK_SIZE || now_ms() - s->peer.hello_ms >= TRACE_ACK_WAIT_MS)
        return 0;
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    return head - r->tail < r->capacity / 2;
}

/* A whole 16-byte request head came (after an ack that allows them): a
 * snapshot request, or a control request's head; anything else ends our
 * reading of requests, never the stream. */
static void request_check(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_REQUEST_MAGIC, sizeof TRACE_STREAM_REQUEST_MAGIC - 1);
    s->peer.req_got = 0;
    if (s->peer.req_ok && memcmp(s->peer.req, magic, sizeof magic) == 0) {
        s->peer.requests++;
        return;
    }
    if (auth_head(s) || ctl_head(s))
        return;
    s->peer.req_ok = s->peer.ctl_ok = 0;
    fprintf(stderr, "trace_stream: the server sent something else than a request; "
                    "no more requests are taken on this connection\n");
}

/*
 * Read what the server sent, never blocking: the codec ack while one is
 * due, then snapshot requests if it allowed them; anything else a server
 * sends is ignored.  0, or 1 when the server closed the connection or it
 * failed (reported).  Bounded, so that a server that floods us cannot keep
 * us from the ring.
 */
static int read_server(struct sender *s)
{
    for (int round = 0; round < 16; round++) {
        unsigned char junk[256];
        int want_ack = s->peer.ack_got < TRACE_STREAM_ACK_SIZE;
        int want_auth = !want_ack && s->peer.ctl_ok && s->auth.in_body;
        int want_body = !want_ack && !want_auth && s->peer.ctl_ok && s->ctl.in_body;
        /* one control answer owed at a time: the next request waits in the socket until it went */
        int want_req = !want_ack && !want_auth && !want_body && (s->peer.req_ok || s->peer.ctl_ok) && !s->ctl.due;
        if (!want_ack && !want_auth && !want_body && !want_req && (s->peer.req_ok || s->peer.ctl_ok))
            return 0; /* requests wait for the answer owed (ctl_service) */
        unsigned char *dst = want_ack    ? s->peer.ack + s->peer.ack_got
                             : want_auth ? s->auth.body + s->auth.got
                             : want_body ? s->ctl.body + s->ctl.body_got
                             : want_req  ? s->peer.req + s->peer.req_got
                                         : junk;
        size_t len = want_ack    ? TRACE_STREAM_ACK_SIZE - s->peer.ack_got
                     : want_auth ? TRACE_STREAM_AUTH_BODY - s->auth.got
                     : want_body ? s->ctl.body_len - s->ctl.body_got
                     : want_req  ? TRACE_STREAM_REQUEST_SIZE - s->peer.req_got
                                 : sizeof junk;
        ssize_t n = recv(s->sock, dst, len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            report_send_error(n == 0 ? EPIPE : errno);
            return 1;
        }
        if (want_ack && (s->peer.ack_got += (unsigned)n) == TRACE_STREAM_ACK_SIZE)
            ack_check(s);
        if (want_req && (s->peer.req_got += (unsigned)n) == TRACE_STREAM_REQUEST_SIZE)
            request_check(s);
        if (want_auth)
            auth_body_got(s, (size_t)n);
        if (want_body)
            ctl_body_got(s, (size_t)n);
    }
    return 0;
}

/*
 * Sleep up to ms, waking early when the server sends something: the codec
 * ack, or the end of the connection.  0, or -1 when the connection is gone
 * and may not be retried.
 */
static int idle_wait(struct sender *s, int ms)
{
    if (s->sock < 0) {
        sleep_ms(ms);
        return 0;
    }
    if (s->ctl.due && (s->peer.req_ok || s->peer.ctl_ok)) {
        sleep_ms(ms); /* requests wait in the socket until the answer owed went: poll would spin */
        return 0;
    }
    struct pollfd p = {s->sock, POLLIN, 0};
    int rc = poll(&p, 1, ms);
    if (rc <= 0)
        return 0; /* timeout, or a signal: the caller looks at its flags */
    return read_server(s) ? sender_lost(s) : 0;
}

static int send_handshake(struct sender *s, const trace_shm_header_t *h)
{
    unsigned char hs[TRACE_STREAM_HANDSHAKE_SIZE] = {0};
    memcpy(hs + offsetof(trace_stream_handshake_t, magic), TRACE_STREAM_MAGIC, 8);
    wire_put_le32(hs + offsetof(trace_stream_handshake_t, version), TRACE_STREAM_VERSION);
    wire_put_le32(hs + offsetof(trace_stream_handshake_t, event_size), TRACE_EVENT_SIZE);
    uint32_t flags = h->flags & ~(TRACE_FLAG_BIGENDIAN | TRACE_STREAM_FLAG_CODEC_OFFER | TRACE_STREAM_FLAG_SUMMARY_OFFER |
                                  TRACE_STREAM_FLAG_REQUEST_OFFER | TRACE_STREAM_FLAG_RESUME_KEY |
                                  TRACE_STREAM_FLAG_CONTROL_OFFER | TRACE_STREAM_FLAG_AUTH_OFFER);
    /* A new connection: whether it may carry coded chunks and summary
     * snapshots is asked afresh. */
    s->peer.offered = s->codec != NULL;
    s->peer.acked = s->peer.sum_ok = s->peer.sum_inc = s->peer.req_ok = s->peer.ctl_ok = 0;
    s->peer.ack_got = s->peer.req_got = 0;
    s->ctl.in_body = s->ctl.due = 0; /* a new server asked nothing yet */
    auth_new_connection(s);          /* ... and proved nothing */
    if (s->ctl.block) { /* a control answer is one small chunk: Nagle would hold it for the server's delayed ack */
        int one = 1;
        (void)setsockopt(s->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (s->merge)
        merge_new_connection(s->merge);
    s->peer.hello_ms = now_ms();
    flags |= TRACE_STREAM_FLAG_SUMMARY_OFFER | (s->peer.offered ? TRACE_STREAM_FLAG_CODEC_OFFER : 0) |
             (s->o->recorder ? TRACE_STREAM_FLAG_REQUEST_OFFER : 0) |
             (s->resume.keyed ? TRACE_STREAM_FLAG_RESUME_KEY : 0) |
             (s->ctl.block ? TRACE_STREAM_FLAG_CONTROL_OFFER : 0) |
             (s->auth.offered ? TRACE_STREAM_FLAG_AUTH_OFFER : 0);
    wire_put_le32(hs + offsetof(trace_stream_handshake_t, flags), flags);
    wire_put_le64(hs + offsetof(trace_stream_handshake_t, load_bias), h->load_bias);
    wire_put_le64(hs + offsetof(trace_stream_handshake_t, tick_hz), h->tick_hz);
    wire_put_le64(hs + offsetof(trace_stream_handshake_t, t0_ticks), h->t0_ticks);
    wire_put_le64(hs + offsetof(trace_stream_handshake_t, t0_ns), h->t0_ns);
    wire_put_le64(hs + offsetof(trace_stream_handshake_t, hook_ns), h->hook_ns);
    return send_all(s, hs, sizeof hs);
}

/*
 * Compress `len` bytes of payload into one frame and send it as a chunk.
 * 0 sent, 1 the connection is lost (reported; the caller decides), -1 a
 * compression failure.
 */
static int send_chunk(struct sender *s, uint32_t type, const void *payload, size_t len)
{
    unsigned char *frame = s->wire + TRACE_STREAM_CHUNK_HEADER_SIZE;
    size_t z = frame_make(s, frame, s->wire_cap - TRACE_STREAM_CHUNK_HEADER_SIZE, payload, len);
    if (z == 0)
        return -1;
    wire_put_le32(s->wire + offsetof(trace_stream_chunk_header_t, type), type);
    wire_put_le32(s->wire + offsetof(trace_stream_chunk_header_t, raw_len), (uint32_t)len);
    wire_put_le32(s->wire + offsetof(trace_stream_chunk_header_t, zstd_len), (uint32_t)z);
    return send_all(s, s->wire, TRACE_STREAM_CHUNK_HEADER_SIZE + z) ? 1 : 0;
}

/* A small chunk (notice, resume, tracer lost): 0 sent or lost-and-retrying, -1 fatal. */
static int send_small(struct sender *s, uint32_t type, const void *payload, size_t len)
{
    if (s->sock < 0)
        return 0;
    int rc = send_chunk(s, type, payload, len);
    if (rc == 1)
        return sender_lost(s);
    return rc;
}

static int send_notice_if_changed(struct sender *s, trace_shm_header_t *h)
{
    uint64_t dropped = atomic_load_explicit(a64(&h->dropped), memory_order_relaxed) + s->sum_dropped;
    if (s->sock < 0 || (dropped == s->dropped_sent && !(s->notice_due && dropped)))
        return 0;
    unsigned char payload[8];
    wire_put_le64(payload, dropped);
    s->notice_due = 0;
    if (send_small(s, TRACE_CHUNK_NOTICE, payload, sizeof payload))
        return -1;
    if (s->sock >= 0)
        s->dropped_sent = dropped;
    return 0;
}

/*
 * Handshake, then who we are and what we did before this connection
 * (TRACE_CHUNK_RESUME), on every connection: the first one tells the server
 * the stream's identity, later ones let it count exactly what went missing.
 */
static int send_resume(struct sender *s)
{
    unsigned char p[TRACE_STREAM_RESUME_SIZE] = {0};
    wire_put_le64(p + offsetof(trace_stream_resume_t, stream_id), s->resume.stream_id);
    wire_put_le64(p + offsetof(trace_stream_resume_t, start_ns), s->resume.start_ns);
    wire_put_le32(p + offsetof(trace_stream_resume_t, conn_seq), s->resume.conn_seq);
    wire_put_le64(p + offsetof(trace_stream_resume_t, sent), s->resume.sent_before);
    wire_put_le64(p + offsetof(trace_stream_resume_t, discarded), s->resume.discarded_before);
    return send_small(s, TRACE_CHUNK_RESUME, p, sizeof p);
}

/* The handshake offered the key: it follows the connection's first resume
 * notice at once (the server reads it as the second chunk), and only that
 * one: heartbeats repeat the notice, never the key. */
static int send_hello(struct sender *s, const trace_shm_header_t *h)
{
    if (send_handshake(s, h))
        return sender_lost(s);
    s->resume.conn_seq++;
    s->resume.sent_before = s->events;
    s->resume.discarded_before = s->discarded;
    s->notice_due = s->resume.conn_seq > 1;
    if (send_resume(s))
        return -1;
    if (s->resume.keyed && s->sock >= 0 && send_small(s, TRACE_CHUNK_RESUME_KEY, s->resume.key, sizeof s->resume.key))
        return -1;
    if (!s->auth.offered || s->sock < 0) /* --auth-key: our nonce, after the intro */
        return 0;
    return send_small(s, TRACE_CHUNK_AUTH_HELLO, s->auth.nonce, sizeof s->auth.nonce);
}

/* A quiet stream repeats its resume notice (servers ignore it after the first). */
static int heartbeat(struct sender *s)
{
    if (s->sock < 0 || now_ms() - s->last_send < (uint64_t)s->o->heartbeat_s * 1000u)
        return 0;
    return send_resume(s);
}

/*
 * While disconnected: try again when the backoff has passed.  With h, a new
 * connection gets its handshake at once; without (no tracer yet, so no
 * calibration to send) the caller sends it later.  0 (connected or not
 * yet), -1 when --retry has run out.
 */
static int maybe_reconnect(struct sender *s, const trace_shm_header_t *h)
{
    if (s->sock >= 0)
        return 0;
    uint64_t t = now_ms();
    if (t - s->link.down_since >= (uint64_t)s->o->retry_s * 1000u) {
        s->link.gave_up = 1; /* the caller's end says what it cost */
        return -1;
    }
    if (t < s->link.next_try)
        return 0;
    s->link.backoff_ms = s->link.backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->link.backoff_ms * 2;
    s->link.next_try = t + (uint64_t)s->link.backoff_ms;
    int sock = net_connect(s->o->host, s->o->port, 1);
    if (sock < 0)
        return 0;
    uint64_t dropped = outage_drops(s); /* while still down: this outage's drops count */
    s->link.outage_dropped = dropped;
    s->sock = sock;
    int again = s->link.ever_up;
    s->link.ever_up = 1;
    if (h && send_hello(s, h))
        return -1;
    if (s->sock >= 0)
        fprintf(stderr, "trace_stream: %sconnected to %s:%s (connection %" PRIu32 "); lost to the link so far: %"
                        PRIu64 " events discarded, %" PRIu64 " dropped by the tracers while disconnected\n",
                again ? "re" : "", s->o->host, s->o->port, (uint32_t)(s->resume.conn_seq + (h ? 0u : 1u)), s->discarded,
                dropped);
    return 0;
}
