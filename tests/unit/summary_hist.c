/*
 * summary_hist.c - unit test: the summary histogram's bucket rule.  The
 * runtime (runtime/trace_summary.c) and the analyzer (src/analysis/hist.c)
 * both bucket with trace_summary_bucket (runtime/trace.h); here it is held
 * to the rule as trace.h states it, bucket by bucket, and to the
 * analyzer's reading of an index back (hist_bucket_range,
 * hist_add_bucket), so that a summary's percentiles are those an event
 * trace of the same calls would give, with the same 1.6% bound.  Known
 * sets of durations (uniform, bimodal, heavy-tailed, one value, values at
 * and beside bucket edges) go once through hist_add and once through
 * trace_summary_bucket + hist_add_bucket; every percentile must agree, and
 * each must be within 1.6% of the exact order statistic.  Durations past
 * the format's 2^48 ns go to its last bucket, and the analyzer's own
 * histogram, which carries the rule on to 2^64, stays within the bound.
 */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

#include "analysis/hist.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The set v[0..n) both ways; 1 when every percentile agrees and is within
 * 1.6% of the exact nearest-rank value. */
static int check_as(const char *what, uint64_t *v, size_t n, int summary)
{
    struct hist ev, sm;
    hist_init(&ev);
    hist_init(&sm);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t block;
        hist_add(&ev, v[i]);
        hist_add_bucket(&sm, trace_summary_bucket(summary ? v[i] : 0, &block), 1, lo, hi);
    }
    qsort(v, n, sizeof *v, cmp_u64);
    int good = 1;
    for (unsigned p = 1; p <= 100 && good; p++) {
        uint64_t a = hist_percentile(&ev, p), b = summary ? hist_percentile(&sm, p) : a;
        size_t rank = (size_t)(((uint64_t)n * p + 99) / 100);
        uint64_t exact = v[(rank ? rank : 1) - 1];
        double err = exact ? ((double)b - (double)exact) / (double)exact : (double)b;
        if (a != b || err > 0.016 || err < -0.016) {
            printf("# %s: p%u events %llu summary %llu exact %llu\n", what, p, (unsigned long long)a,
                   (unsigned long long)b, (unsigned long long)exact);
            good = 0;
        }
    }
    good &= hist_percentile(summary ? &sm : &ev, 100) == hi;
    hist_free(&ev);
    hist_free(&sm);
    return ok(good, what);
}

static int check(const char *what, uint64_t *v, size_t n)
{
    return check_as(what, v, n, 1);
}

/* Every bucket as trace.h describes it: 0..63 one value each, then bucket
 * 64 + 32 * (b - 1) + s holding [(32 + s) << b, (33 + s) << b), for b up
 * to 42; its first and last value (and the analyzer's range of it) agree. */
static int check_rule(void)
{
    uint32_t block;
    for (uint64_t v = 0; v < 64; v++)
        if (trace_summary_bucket(v, &block) != v || block != 0)
            return ok(0, "the buckets as trace.h states them");
    for (uint32_t b = 1; b < TRACE_SUMMARY_BLOCKS; b++)
        for (uint32_t s = 0; s < 32; s++) {
            uint32_t index = 64 + 32 * (b - 1) + s, b1, b2;
            uint64_t lo = (uint64_t)(32 + s) << b, hi = ((uint64_t)(33 + s) << b) - 1, rlo, rhi;
            hist_bucket_range(index, &rlo, &rhi);
            if (trace_summary_bucket(lo, &b1) != index || trace_summary_bucket(hi, &b2) != index ||
                b1 != b || b2 != b || rlo != lo || rhi != hi) {
                printf("# bucket %u (block %u, slot %u): [%llu, %llu]\n", index, b, s, (unsigned long long)lo,
                       (unsigned long long)hi);
                return ok(0, "the buckets as trace.h states them");
            }
        }
    return ok(64 + 32 * (TRACE_SUMMARY_BLOCKS - 1) == TRACE_SUMMARY_NBUCKETS,
              "the buckets as trace.h states them, each one's first and last value, and the analyzer's range of each");
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(void)
{
    enum { N = 20000 };
    static uint64_t v[N];
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i < N; i++)
        v[i] = 100 + rnd(&s) % 900;
    check("uniform 100..999 ns", v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = i % 10 ? 40 + rnd(&s) % 20 : 2000000 + rnd(&s) % 500000;
    check("bimodal: 90% near 50 ns, 10% near 2.2 ms", v, N);
    for (size_t i = 0; i < N; i++) {
        double u = (double)(rnd(&s) % 1000000 + 1) / 1e6;
        v[i] = (uint64_t)(1000.0 / (u * u)); /* Pareto-like: a long tail */
    }
    check("heavy-tailed (1 us to seconds)", v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = 12345;
    check("a single value", v, N);
    size_t n = 0;
    for (unsigned b = 1; b < 40 && n + 96 <= N; b++)
        for (unsigned k = 0; k < 32; k++) {
            uint64_t edge = (uint64_t)(32 + k) << b;
            v[n++] = edge - 1;
            v[n++] = edge;
            v[n++] = edge + 1;
        }
    check("values at and beside every bucket edge up to 2^45 ns", v, n);
    check_rule();
    uint32_t block, b2;
    ok(trace_summary_bucket((uint64_t)1 << 62, &block) == TRACE_SUMMARY_NBUCKETS - 1 &&
           block == TRACE_SUMMARY_BLOCKS - 1 && trace_summary_bucket(UINT64_MAX, &b2) == TRACE_SUMMARY_NBUCKETS - 1 &&
           trace_summary_bucket(((uint64_t)1 << 48) - 1, &b2) == TRACE_SUMMARY_NBUCKETS - 1,
       "a duration past 2^48 ns goes to the last bucket, and so does the largest below it");
    for (size_t i = 0; i < N; i++)
        v[i] = ((uint64_t)1 << 47) + (rnd(&s) >> (rnd(&s) % 17)); /* 2^47 .. 2^64 */
    check_as("the analyzer's own histogram past 2^48 ns (events only)", v, N, 0);
    printf("1..%d\n", test_no);
    return 0;
}
