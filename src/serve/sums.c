/*
 * sums.c - increments back into whole summary snapshots (see
 * sums.h).
 *
 * A function's buckets are held sparsely: its non-zero counts in index
 * order with their indices beside them (10 bytes a bucket), or, once that
 * would take as much as the whole histogram, all TRACE_SUMMARY_NBUCKETS
 * counts.  Increments add to them in index order, one function at a time,
 * so the function being read is unpacked into one whole histogram per
 * connection (work) and packed back when another one needs it or its
 * snapshot ends: adding is then a store, and the packed form grows once
 * per function and increment, not once per bucket.
 *
 * Every byte held is accounted twice, against the connection's
 * SUMS_MAX_BYTES and, atomically, against the budget of all connections
 * (all_held, budget), before it is allocated.
 */
#include "sums.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_wire.h"

#define OUT_RECORDS 4096 /* whole records staged before each put */
#define NB TRACE_SUMMARY_NBUCKETS
#define SPARSE_EACH (sizeof(uint64_t) + sizeof(uint16_t)) /* a count and its index */
/* From this many non-zero buckets on, the whole histogram is no bigger. */
#define DENSE_AT ((NB * sizeof(uint64_t) + SPARSE_EACH - 1) / SPARSE_EACH)
#define ALLOC_OVERHEAD 16u /* what malloc adds to each block, about: accounted too */

_Static_assert(NB <= UINT16_MAX + 1u, "bucket indices fit 16 bits");

struct sums_fn {
    uint64_t addr, calls, incl, self, min, max;
    uint64_t bucketed; /* the sum of its buckets: never above calls (one bucket per call) */
    uint64_t *cnt;     /* nb counts then nb uint16_t indices, ascending; all NB counts once nb >= DENSE_AT */
    uint32_t nb;       /* buckets that are not zero */
    unsigned lower;    /* TRACE_SUMMARY_FUNC_LOWER once an increment's FUNC said so (it stays) */
};

struct sums_tid {
    uint32_t tid;
    struct sums_fn *fn;
    uint32_t nfn, capfn;
    uint32_t *hash;       /* open addressing over fn by address: index + 1, 0 empty */
    uint32_t hmask;       /* slots - 1; 0: no hash yet */
    int reading;          /* between a BEGIN and its END */
    int have_times;       /* the function being read has its TIMES */
    uint32_t cur;         /* the function being read */
    uint32_t last_bucket; /* its last bucket index read, + 1 (0: none yet) */
    uint64_t seq, said, listed, begin_ts;
    uint64_t begun_ms;    /* when its BEGIN was taken (sums_take's now_ms) */
    uint64_t over, deep, unmatched;
    unsigned meta_pad;    /* META's pad[1] (TRACE_SUMMARY_META_LOWER_SAID), kept for the whole one */
    int meta_changed;     /* META of this increment differs from the totals' */
    int written;          /* a whole snapshot of these totals is in the file */
    unsigned last_ends;   /* the END pad[1] of the one written last */
};

struct sums {
    struct sums_tid t[SUMS_MAX_TIDS];
    uint32_t nt;
    size_t held;          /* bytes accounted to this connection (and to all_held) */
    int refused;          /* counted once in refused_all */
    uint64_t now_ms;
    /* The buckets of function work_fn of work_t, whole, while it is read
     * (work_t NULL: none); work_nz of them are not zero. */
    uint64_t work[NB];
    struct sums_tid *work_t;
    uint32_t work_fn, work_nz;
    unsigned char rec[TRACE_EVENT_SIZE];
    unsigned char out[OUT_RECORDS * TRACE_EVENT_SIZE];
    size_t nout;
    sums_put put;
    void *ctx;
    int put_failed;
};

/* ---- the accounts ------------------------------------------------------ */

static atomic_size_t budget = (size_t)SUMS_DEFAULT_BUDGET_MB << 20;
static atomic_size_t all_held;
static atomic_uint_least64_t refused_all;

void sums_set_budget(size_t bytes)
{
    atomic_store(&budget, bytes);
}

size_t sums_held_all(void)
{
    return atomic_load(&all_held);
}

uint64_t sums_refused_all(void)
{
    return atomic_load(&refused_all);
}

enum { SUMS_CONN_FULL = 1, SUMS_ALL_FULL, SUMS_NO_MEMORY };

/* Account more bytes to s and to all connections: 0, or which cap refused. */
static int charge(struct sums *s, size_t more)
{
    if (s->held > SUMS_MAX_BYTES || more > SUMS_MAX_BYTES - s->held)
        return SUMS_CONN_FULL;
    size_t cur = atomic_load(&all_held), lim = atomic_load(&budget);
    do {
        if (cur > lim || more > lim - cur) {
            if (!s->refused)
                atomic_fetch_add(&refused_all, 1);
            s->refused = 1;
            return SUMS_ALL_FULL;
        }
    } while (!atomic_compare_exchange_weak(&all_held, &cur, cur + more));
    s->held += more;
    return 0;
}

static void discharge(struct sums *s, size_t less)
{
    s->held -= less;
    atomic_fetch_sub(&all_held, less);
}

/* A function's packed buckets: bytes of the block, and what is accounted for it. */
static size_t block_bytes(uint32_t nb)
{
    return nb >= DENSE_AT ? NB * sizeof(uint64_t) : nb * SPARSE_EACH;
}

static size_t block_charge(uint32_t nb)
{
    return nb ? block_bytes(nb) + ALLOC_OVERHEAD : 0;
}

static uint16_t *idx_of(const struct sums_fn *f)
{
    return (uint16_t *)(void *)(f->cnt + f->nb);
}

/* ---- life ---------------------------------------------------------------- */

struct sums *sums_new(void)
{
    return calloc(1, sizeof(struct sums));
}

static void forget_totals(struct sums *s, struct sums_tid *t)
{
    size_t held = (size_t)t->capfn * sizeof *t->fn + (t->hmask ? ((size_t)t->hmask + 1u) * sizeof *t->hash : 0);
    for (uint32_t i = 0; i < t->nfn; i++) {
        held += block_charge(t->fn[i].nb);
        free(t->fn[i].cnt);
    }
    discharge(s, held);
    if (s->work_t == t) {
        memset(s->work, 0, sizeof s->work);
        s->work_t = NULL;
    }
    free(t->fn);
    free(t->hash);
    t->fn = NULL;
    t->hash = NULL;
    t->nfn = t->capfn = t->hmask = 0;
    t->written = 0;
}

void sums_free(struct sums *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nt; i++)
        forget_totals(s, &s->t[i]);
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

/* Why a cap refused, for the stream's one error line.  The stream ends
 * there, so its totals go back to the budget now, not when the caller
 * gets to sums_free: other connections need not wait for this one's end. */
static int refused(struct sums *s, int why_code, uint32_t tid, char *why, size_t len)
{
    size_t held = s->held;
    for (uint32_t i = 0; i < s->nt; i++)
        forget_totals(s, &s->t[i]);
    if (why_code == SUMS_ALL_FULL)
        return bad(why, len, "the summary totals of all connections are at their cap, %" PRIu64
                   " MB (--max-summary-mb)", tid, (uint64_t)(atomic_load(&budget) >> 20));
    if (why_code == SUMS_CONN_FULL)
        return bad(why, len, "more functions and buckets than one connection may hold (%" PRIu64 " MiB)", tid,
                   SUMS_MAX_BYTES >> 20);
    return bad(why, len, "out of memory for the totals (%" PRIu64 " bytes held)", tid, held);
}

static uint32_t hash_at(uint64_t addr, uint32_t mask)
{
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

/* t's hash at twice the slots (or its first 1024), every function put
 * back: 0, or which cap refused. */
static int rehash(struct sums *s, struct sums_tid *t)
{
    uint32_t slots = t->hmask ? (t->hmask + 1u) * 2u : 1024u;
    size_t bytes = (size_t)slots * sizeof *t->hash, was = t->hmask ? ((size_t)t->hmask + 1u) * sizeof *t->hash : 0;
    int rc = charge(s, bytes);
    if (rc)
        return rc;
    uint32_t *h = calloc(slots, sizeof *h);
    if (!h) {
        discharge(s, bytes);
        return SUMS_NO_MEMORY;
    }
    for (uint32_t k = 0; k < t->nfn; k++) {
        uint32_t i = hash_at(t->fn[k].addr, slots - 1u);
        while (h[i])
            i = (i + 1u) & (slots - 1u);
        h[i] = k + 1u;
    }
    free(t->hash);
    discharge(s, was);
    t->hash = h;
    t->hmask = slots - 1u;
    return 0;
}

/* The function of addr (t->cur), found by hash (a merged process has tens
 * of thousands), added after the others when new: 0, or which cap refused
 * (or SUMS_NO_MEMORY).  Its buckets come later, as they come. */
static int fn_of(struct sums *s, struct sums_tid *t, uint64_t addr)
{
    uint32_t i = 0;
    if (t->hmask)
        for (i = hash_at(addr, t->hmask); t->hash[i]; i = (i + 1u) & t->hmask)
            if (t->fn[t->hash[i] - 1u].addr == addr) {
                t->cur = t->hash[i] - 1u;
                return 0;
            }
    int rc;
    if (!t->hmask || 2u * ((uint64_t)t->nfn + 1u) > (uint64_t)t->hmask + 1u) {
        if ((rc = rehash(s, t)) != 0)
            return rc;
        for (i = hash_at(addr, t->hmask); t->hash[i]; i = (i + 1u) & t->hmask)
            ;
    }
    if (t->nfn == t->capfn) { /* doubling: 20,000 functions are a dozen reallocs, not a thousand */
        uint32_t more = t->capfn < 16u ? 16u : t->capfn;
        size_t grow = (size_t)more * sizeof *t->fn;
        if ((rc = charge(s, grow)) != 0)
            return rc;
        void *p = realloc(t->fn, ((size_t)t->capfn + more) * sizeof *t->fn);
        if (!p) {
            discharge(s, grow);
            return SUMS_NO_MEMORY;
        }
        t->fn = p;
        t->capfn += more;
    }
    t->fn[t->nfn] = (struct sums_fn){addr, 0, 0, 0, UINT64_MAX, 0, 0, NULL, 0, 0};
    t->hash[i] = t->nfn + 1u;
    t->cur = t->nfn++;
    return 0;
}

/* The buckets in work back into their function, packed: 0, or which cap
 * refused (the function keeps what it had). */
static int work_pack(struct sums *s)
{
    if (!s->work_t)
        return 0;
    struct sums_fn *f = &s->work_t->fn[s->work_fn];
    s->work_t = NULL;
    if (s->work_nz == f->nb) { /* the same buckets: new counts in place */
        if (f->nb >= DENSE_AT) {
            memcpy(f->cnt, s->work, sizeof s->work);
            memset(s->work, 0, sizeof s->work);
        }
        for (uint32_t i = 0; f->nb < DENSE_AT && i < f->nb; i++) {
            f->cnt[i] = s->work[idx_of(f)[i]];
            s->work[idx_of(f)[i]] = 0;
        }
        return 0;
    }
    uint32_t nb = s->work_nz; /* more than before: counts only grow */
    size_t more = block_charge(nb) - block_charge(f->nb);
    int rc = charge(s, more);
    uint64_t *cnt = rc ? NULL : malloc(block_bytes(nb));
    if (!rc && !cnt) {
        discharge(s, more);
        rc = SUMS_NO_MEMORY;
    }
    if (rc) {
        memset(s->work, 0, sizeof s->work);
        return rc;
    }
    free(f->cnt);
    f->cnt = cnt;
    f->nb = nb;
    if (nb >= DENSE_AT)
        memcpy(cnt, s->work, sizeof s->work);
    for (uint32_t k = 0, j = 0; nb < DENSE_AT && k < NB; k++)
        if (s->work[k]) {
            cnt[j] = s->work[k];
            idx_of(f)[j++] = (uint16_t)k;
        }
    memset(s->work, 0, sizeof s->work);
    return 0;
}

/* The buckets of t's current function into work, whole (packing whichever
 * function was there): 0, or which cap refused. */
static int work_on(struct sums *s, struct sums_tid *t)
{
    if (s->work_t == t && s->work_fn == t->cur)
        return 0;
    int rc = work_pack(s);
    if (rc)
        return rc;
    const struct sums_fn *f = &t->fn[t->cur];
    if (f->nb >= DENSE_AT)
        memcpy(s->work, f->cnt, sizeof s->work);
    for (uint32_t i = 0; f->nb < DENSE_AT && i < f->nb; i++)
        s->work[idx_of(f)[i]] = f->cnt[i];
    s->work_t = t;
    s->work_fn = t->cur;
    s->work_nz = f->nb;
    return 0;
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

/* f's next bucket that is not zero from *pos on, in index order: its
 * index (its count in *count), or NB when there is none left. */
static uint32_t next_bucket(const struct sums_fn *f, uint32_t *pos, uint64_t *count)
{
    if (f->nb < DENSE_AT) {
        if (*pos >= f->nb)
            return NB;
        *count = f->cnt[*pos];
        return idx_of(f)[(*pos)++];
    }
    while (*pos < NB && !f->cnt[*pos])
        ++*pos;
    if (*pos == NB)
        return NB;
    *count = f->cnt[*pos];
    return (*pos)++;
}

/* The tid's totals as one whole snapshot (its functions all packed). */
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
        out(s, t->tid, TRACE_SUMMARY_FUNC, f->incl, f->addr, f->calls, f->lower);
        out(s, t->tid, TRACE_SUMMARY_TIMES, f->self, f->min, f->max, 0);
        uint32_t held = TRACE_SUMMARY_NO_BUCKET, pos = 0, k;
        uint64_t count, held_count = 0;
        while ((k = next_bucket(f, &pos, &count)) != NB) {
            if (held == TRACE_SUMMARY_NO_BUCKET) {
                held = k, held_count = count;
                continue;
            }
            out(s, t->tid, TRACE_SUMMARY_BUCKETS, held_count, count, (uint64_t)held << 32 | k, 0);
            held = TRACE_SUMMARY_NO_BUCKET;
        }
        if (held != TRACE_SUMMARY_NO_BUCKET)
            out(s, t->tid, TRACE_SUMMARY_BUCKETS, held_count, 0, (uint64_t)held << 32 | TRACE_SUMMARY_NO_BUCKET, 0);
    }
    out(s, t->tid, TRACE_SUMMARY_META, t->over, t->deep, t->unmatched, t->meta_pad);
    out(s, t->tid, TRACE_SUMMARY_END, end_ts, t->seq, tracer, ends);
}

static int take_bucket(struct sums *s, struct sums_tid *t, uint64_t index, uint64_t count, char *why,
                       size_t len)
{
    if (index >= TRACE_SUMMARY_NBUCKETS || index + 1 <= t->last_bucket)
        return bad(why, len, "bucket %" PRIu64 " out of place", t->tid, index);
    t->last_bucket = (uint32_t)index + 1;
    int rc = work_on(s, t);
    if (rc)
        return refused(s, rc, t->tid, why, len);
    uint64_t *w = &s->work[index];
    int was = *w != 0;
    if (add(w, count) < 0)
        return bad(why, len, "bucket %" PRIu64 "'s count wraps", t->tid, index);
    s->work_nz += !was && *w;
    struct sums_fn *f = &t->fn[t->cur];
    if (add(&f->bucketed, count) < 0 || f->bucketed > f->calls)
        return bad(why, len, "buckets count more calls than the function's %" PRIu64, t->tid, f->calls);
    return 0;
}

/* One part of an increment.  0, or -1 (why set). */
static int take_part(struct sums *s, struct sums_tid *t, unsigned part, unsigned pad1, uint64_t ts, uint64_t func,
                     uint64_t site, char *why, size_t len)
{
    struct sums_fn *f;
    int rc;
    switch (part) {
    case TRACE_SUMMARY_FUNC:
        if (t->listed >= t->said || (t->listed && !t->have_times))
            return bad(why, len, "function %" PRIu64 " out of place", t->tid, t->listed + 1);
        if ((rc = fn_of(s, t, func)) != 0)
            return refused(s, rc, t->tid, why, len);
        f = &t->fn[t->cur];
        f->lower |= pad1 & TRACE_SUMMARY_FUNC_LOWER;
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
        if (take_bucket(s, t, site >> 32, ts, why, len) < 0)
            return -1;
        return (site & 0xffffffffu) == TRACE_SUMMARY_NO_BUCKET ? 0
                                                               : take_bucket(s, t, site & 0xffffffffu, func, why, len);
    case TRACE_SUMMARY_META:
        t->meta_changed |= t->over != ts || t->deep != func || t->unmatched != site || t->meta_pad != pad1;
        t->over = ts, t->deep = func, t->unmatched = site;
        t->meta_pad = pad1 & TRACE_SUMMARY_META_LOWER_SAID;
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
        t->begun_ms = s->now_ms;
        return 0;
    }
    if (!t->reading)
        return bad(why, len, "a part outside a snapshot", tid, 0);
    if (part != TRACE_SUMMARY_END)
        return take_part(s, t, part, r[offsetof(trace_event_t, pad) + 1], ts, func, site, why, len);
    if (func != t->seq || t->listed != t->said || (t->listed && !t->have_times))
        return bad(why, len, "snapshot %" PRIu64 " ends short or out of order", tid, t->seq);
    int rc = s->work_t == t ? work_pack(s) : 0;
    if (rc)
        return refused(s, rc, tid, why, len);
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

int sums_oldest_open(const struct sums *s, struct sums_open *out)
{
    int any = 0;
    for (uint32_t i = 0; i < s->nt; i++) {
        const struct sums_tid *t = &s->t[i];
        if (t->reading && (!any || t->begun_ms < out->since_ms)) {
            *out = (struct sums_open){t->tid, t->seq, t->begun_ms};
            any = 1;
        }
    }
    return any;
}

int sums_take(struct sums *s, const unsigned char *planes, size_t n, uint64_t now_ms, sums_put put,
              void *ctx, char *why, size_t why_len)
{
    s->now_ms = now_ms;
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
