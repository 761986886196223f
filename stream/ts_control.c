/*
 * ts_control.c - live control from the host (part of trace_stream.c;
 * docs/control.md): with --allow-control the ring's segment has a control
 * block (trace_shm.h) that every tracer of this tree obeys, the handshake
 * offers TRACE_STREAM_FLAG_CONTROL_OFFER, and a server that acks it may
 * send control requests (trace_wire.h) among its snapshot requests.  Each
 * request is a whole setting, checked (wire_ctl_parse) and published
 * (trace_ctl_publish) at once or refused whole; its answer goes out as a
 * TRACE_CHUNK_CONTROL_ANSWER once a tracer's thread applied it, or after
 * TRACE_STREAM_CTL_WAIT_MS saying it is written but pending.  Reading the
 * request happens in read_server, never blocking; the answer is sent from
 * the loops (ctl_service), where sending is safe.
 */
#include "ts_internal.h"

/* The answer to request seq, due now (refused: why) or once applied. */
static void ctl_due(struct sender *s, uint32_t seq, uint32_t status, uint64_t gen, const char *why)
{
    s->ctl.due = 1;
    s->ctl.seq = seq;
    s->ctl.status = status;
    s->ctl.gen = gen;
    s->ctl.until = now_ms() + TRACE_STREAM_CTL_WAIT_MS;
    snprintf(s->ctl.why, sizeof s->ctl.why, "%s", why ? why : "");
}

/* The flight recorder on or off (trace_shm.h): NULL, the loops make the
 * switch (stream_modes), or why not.  Refused while a tracer that knows
 * nothing of a live recorder writes the ring: its records would be
 * overwritten without a count of their events. */
static const char *ctl_recorder(struct sender *s, uint32_t want)
{
    struct ring *r = s->ctl.ring;
    if (!r || !r->rec)
        return "this ring has no flight recorder to switch (an older trace_stream or a tracer made it)";
    int on = want == TRACE_STREAM_CTL_RECORDER_ON;
    s->ctl.rec_want = 0;
    if (on == r->recording && !r->arming)
        return NULL; /* already so: applied */
    if (on && r->rec_live) {
        uint32_t writers = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
        uint32_t aware = atomic_load_explicit(a32(&r->rec->aware), memory_order_relaxed);
        if (writers > aware)
            return "a tracer writing the ring predates the live flight recorder: it stays off";
    }
    s->ctl.rec_want = want;
    return NULL;
}

/* A whole request body came: apply it or refuse it, whole. */
static void ctl_request(struct sender *s)
{
    struct wire_ctl q;
    uint64_t gen = 0;
    uint32_t len = s->ctl.body_len;
    const char *why = auth_request(s, s->ctl.req_seq, &len); /* with --auth-key: the code checked, and cut */
    if (!why)
        why = wire_ctl_parse(s->ctl.body, len, &q, s->ctl.funcs);
    if (!why && !s->ctl.block)
        why = "this trace_stream's ring has no control block";
    s->ctl.rec_req = !why && (q.flags & TRACE_STREAM_CTL_RECORDER);
    if (s->ctl.rec_req) {
        why = ctl_recorder(s, q.recorder);
        gen = atomic_load_explicit(a64(&s->ctl.block->gen), memory_order_acquire); /* it stays */
    } else if (!why)
        why = trace_ctl_publish(s->ctl.block, q.flags, q.build_id, s->ctl.funcs, q.nfuncs, q.under, q.depth, q.threads,
                                q.trig, q.mode, q.keep, &gen);
    if (why && !s->o->quiet)
        fprintf(stderr, "trace_stream: control request %" PRIu32 " refused: %s; nothing changed\n", s->ctl.req_seq,
                why);
    ctl_due(s, s->ctl.req_seq, why ? TRACE_CTL_ANSWER_REFUSED : TRACE_CTL_ANSWER_APPLIED, gen, why);
}

/* The 16-byte head of a control request is in s->peer.req: 1 if it was
 * one (its body is read next), 0 if not.  A body longer than any request
 * ends our reading of requests, never the stream. */
static int ctl_head(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_CTL_MAGIC, sizeof TRACE_STREAM_CTL_MAGIC - 1);
    if (!s->peer.ctl_ok || memcmp(s->peer.req, magic, sizeof magic) != 0)
        return 0;
    uint32_t len = wire_le32(s->peer.req + offsetof(trace_stream_ctl_request_t, len));
    s->ctl.req_seq = wire_le32(s->peer.req + offsetof(trace_stream_ctl_request_t, seq));
    uint32_t max = TRACE_STREAM_CTL_BODY_MAX + (s->auth.offered ? TRACE_STREAM_AUTH_MAC : 0u);
    if (len > max) {
        s->peer.ctl_ok = s->peer.req_ok = 0;
        fprintf(stderr, "trace_stream: the server sent a control request of %" PRIu32 " bytes (at most %" PRIu32 "); "
                        "no more requests are taken on this connection\n", len, max);
        return 1;
    }
    s->ctl.body_len = len;
    s->ctl.body_got = 0;
    s->ctl.in_body = 1;
    if (len == 0) { /* too short to be one: refused, and the framing holds */
        s->ctl.in_body = 0;
        ctl_request(s);
    }
    return 1;
}

/* n more bytes of the body arrived. */
static void ctl_body_got(struct sender *s, size_t n)
{
    if ((s->ctl.body_got += (uint32_t)n) < s->ctl.body_len)
        return;
    s->ctl.in_body = 0;
    ctl_request(s);
}

/* Send the answer that is due, if its time came: 0, or -1 fatal. */
static int ctl_service(struct sender *s)
{
    if (auth_service(s))
        return -1;
    if (!s->ctl.due || s->sock < 0)
        return 0;
    trace_shm_control_t *c = s->ctl.block;
    uint64_t applied = c ? atomic_load_explicit(a64(&c->applied), memory_order_relaxed) : 0;
    uint32_t status = s->ctl.status;
    if (status == TRACE_CTL_ANSWER_APPLIED && (applied < s->ctl.gen || s->ctl.rec_want)) {
        if (now_ms() < s->ctl.until)
            return 0; /* no thread has taken it yet: each does at its next hook */
        status = TRACE_CTL_ANSWER_PENDING;
    }
    unsigned char a[TRACE_STREAM_CTL_ANSWER_SIZE] = {0};
    uint32_t k = (uint32_t)(s->ctl.gen / 2u) & 1u;
    wire_put_le32(a + offsetof(trace_stream_ctl_answer_t, seq), s->ctl.seq);
    wire_put_le32(a + offsetof(trace_stream_ctl_answer_t, status), status);
    wire_put_le64(a + offsetof(trace_stream_ctl_answer_t, gen), s->ctl.gen);
    wire_put_le64(a + offsetof(trace_stream_ctl_answer_t, applied), applied);
    if (c && s->ctl.gen) {
        const trace_ctl_setting_t *set = &c->setting[k];
        wire_put_le32(a + offsetof(trace_stream_ctl_answer_t, nfuncs),
                      set->flags & TRACE_CTL_UNDER ? set->under_depth : set->nfuncs);
        wire_put_le32(a + offsetof(trace_stream_ctl_answer_t, flags), c->setting[k].flags);
    }
    if (s->ctl.ring && s->ctl.ring->recording) {
        uint32_t f = wire_le32(a + offsetof(trace_stream_ctl_answer_t, flags));
        wire_put_le32(a + offsetof(trace_stream_ctl_answer_t, flags), f | TRACE_STREAM_CTL_RECORDER);
    }
    memcpy(a + offsetof(trace_stream_ctl_answer_t, reason), s->ctl.why,
           strnlen(s->ctl.why, TRACE_STREAM_CTL_ANSWER_SIZE - offsetof(trace_stream_ctl_answer_t, reason) - 1));
    s->ctl.due = 0;
    if (!s->o->quiet && status != TRACE_CTL_ANSWER_REFUSED && !s->ctl.rec_req) /* a switch says itself */
        fprintf(stderr, "trace_stream: control generation %" PRIu64 " %s\n", s->ctl.gen,
                status == TRACE_CTL_ANSWER_APPLIED ? "applied" : "written; no tracer thread has applied it yet");
    return send_small(s, TRACE_CHUNK_CONTROL_ANSWER, a, sizeof a) < 0 ? -1 : 0;
}
