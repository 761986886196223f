/*
 * hist.h - per-function latency histogram with bounded relative error.
 *
 * Values (nanoseconds) below 64 are counted exactly; above that each power
 * of two is split into 32 equal sub-buckets, so a bucket is at most 1/32 of
 * its lower bound wide and its midpoint is within 1/64 (1.6%) of any value
 * in it.  hist_percentile() returns the midpoint of the bucket holding the
 * nearest-rank order statistic, clamped to the exact min and max, which are
 * kept on the side: so it is within 1.6% of the exact answer, never outside
 * [min, max], and monotone in the percentile; ranks 1 and n give the exact
 * min and max.
 *
 * Blocks of counters are allocated only for the powers of two actually hit,
 * so thousands of functions with narrow distributions stay small; an empty
 * histogram owns no memory at all.
 */
#ifndef CALLSIGHT_HIST_H
#define CALLSIGHT_HIST_H

#include <stdint.h>

#include "trace.h" /* trace_summary_bucket: hist_add's buckets */

struct hist {
    uint64_t n;        /* values added */
    uint64_t min, max; /* exact; meaningful when n > 0 */
    uint64_t **blocks; /* HIST_BLOCKS pointers, allocated on first add */
};

/* A zeroed struct is an empty histogram. */
void hist_init(struct hist *h);
void hist_free(struct hist *h);
/* 0 ok, -1 out of memory (the value is then not counted at all). */
static inline int hist_add(struct hist *h, uint64_t v);
/* count values in bucket `index` of the same scheme as a summary
 * snapshot's (trace.h: 0..63 exact, then 32 per power of two), whose
 * values lie in [min, max] (exact, kept on the side).  0 ok; -1 out of
 * memory or an index past the last bucket. */
int hist_add_bucket(struct hist *h, uint32_t index, uint64_t count, uint64_t min, uint64_t max);
/* Add every value of `from` to h, as if each had been added to it.  0 ok,
 * -1 out of memory (h may then hold part of them). */
int hist_merge(struct hist *h, const struct hist *from);
/* The values bucket `index` of that scheme counts: [*lo, *hi]. */
void hist_bucket_range(uint32_t index, uint64_t *lo, uint64_t *hi);
/* Every bucket that counts a value, in order: fn(ctx, index, count) with
 * the index of the summary format's scheme (hist_bucket_range gives its
 * values). */
void hist_each_bucket(const struct hist *h, void (*fn)(void *ctx, uint32_t index, uint64_t count), void *ctx);
/* Nearest-rank percentile, pct in 0..100: the value of rank ceil(pct/100*n)
 * (at least 1), approximated as described above.  0 when empty. */
uint64_t hist_percentile(const struct hist *h, unsigned pct);
/* 1 when hist_percentile(h, pct) is the exact order statistic, not an
 * estimate: ranks 1 and n (the exact min and max), a value below 64 ns
 * (counted one by one), or every value the same; else 0. */
int hist_percentile_exact(const struct hist *h, unsigned pct);

/* ---- hist_add, inline: every completed call comes here ---------------- */
int hist_add_slow(struct hist *h, uint64_t v, unsigned b, unsigned s);

/* v's block and slot.  The buckets are the summary format's, by its one
 * function (trace.h), the runtime's too; the format stops at 2^48 ns, and
 * this histogram goes on to 2^64 by the same rule, which is the same at
 * every scale: v >> 16 lies in the same slot 16 blocks down (hist.c's
 * HIST_BLOCKS). */
static inline void hist_locate(uint64_t v, unsigned *block, unsigned *slot)
{
    unsigned up = 0;
    if (v >> 48) {
        v >>= 16;
        up = 16;
    }
    uint32_t b, index = trace_summary_bucket(v, &b);
    *block = b + up;
    *slot = b ? index % TRACE_SUMMARY_SUB : index;
}

/* The first value, or one whose block is not there yet, allocates
 * (hist_add_slow, in hist.c). */
static inline int hist_add(struct hist *h, uint64_t v)
{
    unsigned b, s;
    hist_locate(v, &b, &s);
    if (!h->n || !h->blocks[b])
        return hist_add_slow(h, v, b, s);
    h->blocks[b][s]++;
    h->min = v < h->min ? v : h->min;
    h->max = v > h->max ? v : h->max;
    h->n++;
    return 0;
}

#endif
