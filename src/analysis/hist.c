/*
 * hist.c - log-scale latency histogram (see hist.h for the error bound).
 *
 * Block 0 holds the exact counts of 0..63.  Block b >= 1 covers the power of
 * two [2^(b+5), 2^(b+6)) in 32 sub-buckets of width 2^b.
 */
#include "hist.h"

#include "trace.h"

#include <stdlib.h>
#include <string.h>

#define EXACT 64u   /* values below this are counted one by one */
#define SUB_BITS 5u /* 32 sub-buckets per power of two */
#define SUB (1u << SUB_BITS)
#define HIST_BLOCKS 59u /* block 0 plus exponents 6..63 */

_Static_assert(EXACT == TRACE_SUMMARY_EXACT && SUB == TRACE_SUMMARY_SUB, "the summary format's buckets");
_Static_assert(HIST_BLOCKS == TRACE_SUMMARY_BLOCKS + 16u, "locate: v >> 16 from 2^48 up");

static unsigned block_len(unsigned b)
{
    return b ? SUB : EXACT;
}

/* hist_locate, v's block and slot, is inline in hist.h. */

/* The midpoint of a bucket: the value itself for the exact ones. */
static uint64_t midpoint(unsigned block, unsigned slot)
{
    if (block == 0)
        return slot;
    unsigned shift = block; /* width 2^block */
    uint64_t lo = (uint64_t)(SUB + slot) << shift;
    return lo + ((uint64_t)1 << (shift - 1));
}

void hist_bucket_range(uint32_t index, uint64_t *lo, uint64_t *hi)
{
    if (index < EXACT) {
        *lo = *hi = index;
        return;
    }
    unsigned b = 1 + (index - EXACT) / SUB, s = (index - EXACT) % SUB;
    if (b >= HIST_BLOCKS) {
        *lo = *hi = UINT64_MAX;
        return;
    }
    *lo = (uint64_t)(SUB + s) << b;
    *hi = b == HIST_BLOCKS - 1 && s == SUB - 1 ? UINT64_MAX : *lo + ((uint64_t)1 << b) - 1;
}

void hist_init(struct hist *h)
{
    memset(h, 0, sizeof *h);
}

void hist_free(struct hist *h)
{
    if (h->blocks)
        for (unsigned b = 0; b < HIST_BLOCKS; b++)
            free(h->blocks[b]);
    free(h->blocks);
    hist_init(h);
}

/* Kept out of hist_add (hist.h), so that its fast path needs no stack frame. */
#if defined(__GNUC__) || defined(__clang__)
#define HIST_RARE __attribute__((noinline, cold))
#else
#define HIST_RARE
#endif

/* The first value, or one whose block is not there yet: allocate. */
HIST_RARE int hist_add_slow(struct hist *h, uint64_t v, unsigned b, unsigned s)
{
    if (!h->blocks && !(h->blocks = calloc(HIST_BLOCKS, sizeof *h->blocks)))
        return -1;
    if (!h->blocks[b] && !(h->blocks[b] = calloc(block_len(b), sizeof **h->blocks)))
        return -1;
    h->blocks[b][s]++;
    if (!h->n || v < h->min)
        h->min = v;
    if (!h->n || v > h->max)
        h->max = v;
    h->n++;
    return 0;
}

/* hist_add is inline in hist.h. */

int hist_add_bucket(struct hist *h, uint32_t index, uint64_t count, uint64_t min, uint64_t max)
{
    unsigned b = index < EXACT ? 0 : 1 + (index - EXACT) / SUB, s = index < EXACT ? index : (index - EXACT) % SUB;
    if (b >= HIST_BLOCKS || !count)
        return b >= HIST_BLOCKS ? -1 : 0;
    if (!h->blocks && !(h->blocks = calloc(HIST_BLOCKS, sizeof *h->blocks)))
        return -1;
    if (!h->blocks[b] && !(h->blocks[b] = calloc(block_len(b), sizeof **h->blocks)))
        return -1;
    h->blocks[b][s] += count;
    if (!h->n || min < h->min)
        h->min = min;
    if (!h->n || max > h->max)
        h->max = max;
    h->n += count;
    return 0;
}

int hist_merge(struct hist *h, const struct hist *from)
{
    if (!from->n)
        return 0;
    if (!h->blocks && !(h->blocks = calloc(HIST_BLOCKS, sizeof *h->blocks)))
        return -1;
    for (unsigned b = 0; b < HIST_BLOCKS; b++) {
        if (!from->blocks[b])
            continue;
        if (!h->blocks[b] && !(h->blocks[b] = calloc(block_len(b), sizeof **h->blocks)))
            return -1;
        for (unsigned s = 0; s < block_len(b); s++)
            h->blocks[b][s] += from->blocks[b][s];
    }
    if (!h->n || from->min < h->min)
        h->min = from->min;
    if (!h->n || from->max > h->max)
        h->max = from->max;
    h->n += from->n;
    return 0;
}

void hist_each_bucket(const struct hist *h, void (*fn)(void *ctx, uint32_t index, uint64_t count), void *ctx)
{
    if (!h->n)
        return;
    for (unsigned b = 0; b < HIST_BLOCKS; b++)
        for (unsigned s = 0; h->blocks[b] && s < block_len(b); s++)
            if (h->blocks[b][s])
                fn(ctx, b ? EXACT + (b - 1) * SUB + s : s, h->blocks[b][s]);
}

/* ceil(pct * n / 100) without overflowing 64 bits, at least 1. */
static uint64_t nearest_rank(uint64_t n, unsigned pct)
{
    uint64_t k = n / 100 * pct + ((n % 100) * pct + 99) / 100;
    return k ? k : 1;
}

uint64_t hist_percentile(const struct hist *h, unsigned pct)
{
    if (!h->n)
        return 0;
    if (pct > 100)
        pct = 100;
    uint64_t rank = nearest_rank(h->n, pct), seen = 0, v = h->max;
    if (rank == 1)
        return h->min; /* the extremes are known exactly */
    if (rank >= h->n)
        return h->max;
    for (unsigned b = 0; b < HIST_BLOCKS; b++) {
        if (!h->blocks[b])
            continue;
        for (unsigned s = 0; s < block_len(b); s++) {
            seen += h->blocks[b][s];
            if (seen >= rank) {
                v = midpoint(b, s);
                goto found;
            }
        }
    }
found:
    if (v < h->min)
        v = h->min;
    if (v > h->max)
        v = h->max;
    return v;
}

int hist_percentile_exact(const struct hist *h, unsigned pct)
{
    if (!h->n || h->min == h->max)
        return 1;
    uint64_t rank = nearest_rank(h->n, pct > 100 ? 100 : pct), seen = 0;
    if (rank == 1 || rank >= h->n)
        return 1;
    if (!h->blocks[0])
        return 0;
    for (unsigned s = 0; s < EXACT; s++)
        if ((seen += h->blocks[0][s]) >= rank)
            return 1; /* in block 0, where each value has its own count */
    return 0;
}
