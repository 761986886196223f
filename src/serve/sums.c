/*
 * sums.c - increments back into whole summary snapshots (see
 * sums.h).
 */
#include "sums.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_wire.h"

#define OUT_RECORDS 4096 /* whole records staged before each put */

struct sums_fn {
    uint64_t addr, calls, incl, self, min, max;
    uint64_t bucketed; /* the sum of hist: never above calls (one bucket per call) */
    uint64_t *hist; /* TRACE_SUMMARY_NBUCKETS counts */
};

struct sums_tid {
    uint32_t tid;
    struct sums_fn *fn;
    uint32_t nfn, capfn;
    int reading;          /* between a BEGIN and its END */
    int have_times;       /* the function being read has its TIMES */
    uint32_t cur;         /* the function being read */
    uint32_t last_bucket; /* its last bucket index read, + 1 (0: none yet) */
    uint64_t seq, said, listed, begin_ts;
    uint64_t over, deep, unmatched;
    int meta_changed;     /* META of this increment differs from the totals' */
    int written;          /* a whole snapshot of these totals is in the file */
    unsigned last_ends;   /* the END pad[1] of the one written last */
};

struct sums {
    struct sums_tid t[SUMS_MAX_TIDS];
    uint32_t nt;
    size_t held;
    unsigned char rec[TRACE_EVENT_SIZE];
    unsigned char out[OUT_RECORDS * TRACE_EVENT_SIZE];
    size_t nout;
    sums_put put;
    void *ctx;
    int put_failed;
};

struct sums *sums_new(void)
{
    return calloc(1, sizeof(struct sums));
}

void sums_free(struct sums *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nt; i++) {
        for (uint32_t k = 0; k < s->t[i].nfn; k++)
            free(s->t[i].fn[k].hist);
        free(s->t[i].fn);
    }
    free(s);
}

static int bad(char *why, size_t len, const char *fmt, uint32_t tid, uint64_t v)
{
    char msg[96];
    snprintf(msg, sizeof msg, fmt, v);
    snprintf(why, len, "summary increments, thread %" PRIu32 ": %s", tid, msg);
    return -1;
}

static struct sums_tid *tid_of(struct sums *s, uint32_t tid)
{
    for (uint32_t i = 0; i < s->nt; i++)
        if (s->t[i].tid == tid)
            return &s->t[i];
    if (s->nt == SUMS_MAX_TIDS)
        return NULL;
    struct sums_tid *t = &s->t[s->nt++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

/* The function of addr, added after the others when new; NULL over the cap. */
static struct sums_fn *fn_of(struct sums *s, struct sums_tid *t, uint64_t addr)
{
    for (uint32_t i = 0; i < t->nfn; i++)
        if (t->fn[i].addr == addr)
            return &t->fn[t->cur = i];
    size_t grow = t->nfn == t->capfn ? 16u * sizeof *t->fn : 0;
    size_t more = TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t) + grow;
    if (s->held > SUMS_MAX_BYTES || more > SUMS_MAX_BYTES - s->held)
        return NULL;
    if (grow) {
        void *p = realloc(t->fn, (t->capfn + 16u) * sizeof *t->fn);
        if (!p)
            return NULL;
        t->fn = p;
        t->capfn += 16u;
        s->held += grow;
    }
    uint64_t *hist = calloc(TRACE_SUMMARY_NBUCKETS, sizeof *hist);
    if (!hist)
        return NULL;
    s->held += more - grow;
    t->fn[t->nfn] = (struct sums_fn){addr, 0, 0, 0, UINT64_MAX, 0, 0, hist};
    return &t->fn[t->cur = t->nfn++];
}

static void forget_totals(struct sums *s, struct sums_tid *t)
{
    for (uint32_t i = 0; i < t->nfn; i++)
        free(t->fn[i].hist);
    s->held -= (size_t)t->nfn * TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t) + (size_t)t->capfn * sizeof *t->fn;
    free(t->fn);
    t->fn = NULL;
    t->nfn = t->capfn = 0;
    t->written = 0;
}

static int add(uint64_t *to, uint64_t v)
{
    if (*to > UINT64_MAX - v)
        return -1;
    *to += v;
    return 0;
}

/* One whole record out (trace.h's layout); pad1: END's pad[1]. */
static void out(struct sums *s, uint32_t tid, unsigned part, uint64_t ts, uint64_t func, uint64_t site,
                unsigned pad1)
{
    if (s->nout == OUT_RECORDS) {
        s->put_failed |= s->put(s->ctx, s->out, s->nout) < 0;
        s->nout = 0;
    }
    unsigned char *r = s->out + s->nout++ * TRACE_EVENT_SIZE;
    memset(r, 0, TRACE_EVENT_SIZE);
    wire_put_le64(r + offsetof(trace_event_t, ts), ts);
    wire_put_le64(r + offsetof(trace_event_t, func), func);
    wire_put_le64(r + offsetof(trace_event_t, call_site), site);
    wire_put_le32(r + offsetof(trace_event_t, tid), tid);
    r[offsetof(trace_event_t, kind)] = TRACE_KIND_SUMMARY;
    r[offsetof(trace_event_t, pad)] = (unsigned char)part;
    r[offsetof(trace_event_t, pad) + 1] = (unsigned char)pad1;
}

/* The tid's totals as one whole snapshot. */
static void write_whole(struct sums *s, const struct sums_tid *t, uint64_t end_ts, uint64_t tracer,
                        unsigned ends)
{
    uint64_t nfn = 0;
    for (uint32_t i = 0; i < t->nfn; i++)
        nfn += t->fn[i].calls > 0;
    out(s, t->tid, TRACE_SUMMARY_BEGIN, t->begin_ts, t->seq, nfn, 0);
    for (uint32_t i = 0; i < t->nfn; i++) {
        const struct sums_fn *f = &t->fn[i];
        if (!f->calls)
            continue;
        out(s, t->tid, TRACE_SUMMARY_FUNC, f->incl, f->addr, f->calls, 0);
        out(s, t->tid, TRACE_SUMMARY_TIMES, f->self, f->min, f->max, 0);
        uint32_t held = TRACE_SUMMARY_NO_BUCKET;
        for (uint32_t k = 0; k < TRACE_SUMMARY_NBUCKETS; k++) {
            if (!f->hist[k])
                continue;
            if (held == TRACE_SUMMARY_NO_BUCKET) {
                held = k;
                continue;
            }
            out(s, t->tid, TRACE_SUMMARY_BUCKETS, f->hist[held], f->hist[k], (uint64_t)held << 32 | k, 0);
            held = TRACE_SUMMARY_NO_BUCKET;
        }
        if (held != TRACE_SUMMARY_NO_BUCKET)
            out(s, t->tid, TRACE_SUMMARY_BUCKETS, f->hist[held], 0, (uint64_t)held << 32 | TRACE_SUMMARY_NO_BUCKET, 0);
    }
    out(s, t->tid, TRACE_SUMMARY_META, t->over, t->deep, t->unmatched, 0);
    out(s, t->tid, TRACE_SUMMARY_END, end_ts, t->seq, tracer, ends);
}

static int take_bucket(struct sums_tid *t, uint64_t index, uint64_t count, char *why, size_t len)
{
    if (index >= TRACE_SUMMARY_NBUCKETS || index + 1 <= t->last_bucket)
        return bad(why, len, "bucket %" PRIu64 " out of place", t->tid, index);
    t->last_bucket = (uint32_t)index + 1;
    if (add(&t->fn[t->cur].hist[index], count) < 0)
        return bad(why, len, "bucket %" PRIu64 "'s count wraps", t->tid, index);
    struct sums_fn *f = &t->fn[t->cur];
    if (add(&f->bucketed, count) < 0 || f->bucketed > f->calls)
        return bad(why, len, "buckets count more calls than the function's %" PRIu64, t->tid, f->calls);
    return 0;
}

/* One part of an increment.  0, or -1 (why set). */
static int take_part(struct sums *s, struct sums_tid *t, unsigned part, uint64_t ts, uint64_t func,
                     uint64_t site, char *why, size_t len)
{
    struct sums_fn *f;
    switch (part) {
    case TRACE_SUMMARY_FUNC:
        if (t->listed >= t->said || (t->listed && !t->have_times))
            return bad(why, len, "function %" PRIu64 " out of place", t->tid, t->listed + 1);
        if (!(f = fn_of(s, t, func)))
            return bad(why, len, "more functions than a connection may hold (%" PRIu64 " MiB)", t->tid,
                       SUMS_MAX_BYTES >> 20);
        if (add(&f->calls, site) < 0 || add(&f->incl, ts) < 0)
            return bad(why, len, "function %" PRIu64 "'s totals wrap", t->tid, t->listed + 1);
        t->listed++;
        t->have_times = 0;
        t->last_bucket = 0;
        return 0;
    case TRACE_SUMMARY_TIMES:
        if (!t->listed || t->have_times)
            return bad(why, len, "times out of place (after %" PRIu64 " functions)", t->tid, t->listed);
        f = &t->fn[t->cur];
        if (add(&f->self, ts) < 0)
            return bad(why, len, "function %" PRIu64 "'s self time wraps", t->tid, t->listed);
        f->min = func;
        f->max = site;
        t->have_times = 1;
        return 0;
    case TRACE_SUMMARY_BUCKETS:
        if (!t->listed || !t->have_times)
            return bad(why, len, "buckets out of place (after %" PRIu64 " functions)", t->tid, t->listed);
        if (take_bucket(t, site >> 32, ts, why, len) < 0)
            return -1;
        return (site & 0xffffffffu) == TRACE_SUMMARY_NO_BUCKET ? 0 : take_bucket(t, site & 0xffffffffu, func, why, len);
    case TRACE_SUMMARY_META:
        t->meta_changed |= t->over != ts || t->deep != func || t->unmatched != site;
        t->over = ts, t->deep = func, t->unmatched = site;
        return 0;
    default:
        return bad(why, len, "unknown part %" PRIu64, t->tid, part);
    }
}

static int take_record(struct sums *s, const unsigned char *r, char *why, size_t len)
{
    uint64_t ts = wire_le64(r), func = wire_le64(r + 8), site = wire_le64(r + 16);
    uint32_t tid = wire_le32(r + offsetof(trace_event_t, tid));
    unsigned part = r[offsetof(trace_event_t, pad)];
    if (r[offsetof(trace_event_t, kind)] != TRACE_KIND_SUMMARY)
        return bad(why, len, "a record of kind %" PRIu64 " among them", tid, r[offsetof(trace_event_t, kind)]);
    struct sums_tid *t = tid_of(s, tid);
    if (!t)
        return bad(why, len, "more than %" PRIu64 " threads in one connection", tid, SUMS_MAX_TIDS);
    if (part == TRACE_SUMMARY_BEGIN) {
        if (t->reading)
            return bad(why, len, "snapshot %" PRIu64 " never ended", tid, t->seq);
        if (t->nfn && (func == 1 || func <= t->seq))
            forget_totals(s, t); /* a new series under the tid (a pid reused): from zero */
        t->reading = 1;
        t->seq = func, t->said = site, t->listed = 0, t->begin_ts = ts;
        t->have_times = 0;
        return 0;
    }
    if (!t->reading)
        return bad(why, len, "a part outside a snapshot", tid, 0);
    if (part != TRACE_SUMMARY_END)
        return take_part(s, t, part, ts, func, site, why, len);
    if (func != t->seq || t->listed != t->said || (t->listed && !t->have_times))
        return bad(why, len, "snapshot %" PRIu64 " ends short or out of order", tid, t->seq);
    t->reading = 0;
    unsigned ends = r[offsetof(trace_event_t, pad) + 1];
    /* An increment that changed nothing would rewrite the whole snapshot
     * for a few wire bytes (issue 29): the one already written holds the
     * same totals.  Only the END's tracer ns may lag until the next change. */
    if (t->written && !t->listed && !t->meta_changed && ends == t->last_ends)
        return 0;
    t->written = 1, t->last_ends = ends, t->meta_changed = 0;
    write_whole(s, t, ts, site, ends);
    return 0;
}

int sums_take(struct sums *s, const unsigned char *planes, size_t n, sums_put put,
                     void *ctx, char *why, size_t why_len)
{
    s->put = put;
    s->ctx = ctx;
    s->nout = 0;
    s->put_failed = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (size_t k = 0; k < TRACE_EVENT_SIZE; k++)
            s->rec[k] = planes[k * n + i];
        rc = take_record(s, s->rec, why, why_len);
    }
    if (s->nout)
        s->put_failed |= put(ctx, s->out, s->nout) < 0;
    s->nout = 0;
    if (rc == 0 && s->put_failed) {
        snprintf(why, why_len, "summary increments: the file could not take them");
        return -1;
    }
    return rc;
}
