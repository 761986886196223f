/*
 * summary_delta.c - unit test of the summary snapshot reader's differences
 * (src/analysis/summary.c): each whole snapshot minus the one before, by
 * function and bucket; snapshots that do not hold the one before (a count
 * that went down, a function gone, a number not rising), torn ones and
 * ones past the memory budget are damaged, counted and not used; seq 1
 * starts the thread again; every byte held is given back.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/summary.h"
#include "unit.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static struct summary_thread st;
static uint64_t now; /* BEGIN's and END's ts */

static int put(uint8_t part, uint64_t ts, uint64_t func, uint64_t site)
{
    trace_event_t ev = unit_record_event(TRACE_KIND_SUMMARY, part, 0, ts, func, site);
    return summary_record(&st, &ev);
}

/* One function of a snapshot: its totals and one bucket (index b, count n). */
struct fn {
    uint64_t addr, calls, incl, self, min, max;
    uint32_t b;
    uint64_t n;
};

/* A whole snapshot; the value summary_record gave for its END. */
static int snapshot(uint64_t seq, const struct fn *f, size_t nf, int torn)
{
    put(TRACE_SUMMARY_BEGIN, now, seq, nf);
    for (size_t i = 0; i < nf; i++) {
        put(TRACE_SUMMARY_FUNC, f[i].incl, f[i].addr, f[i].calls);
        put(TRACE_SUMMARY_TIMES, f[i].self, f[i].min, f[i].max);
        put(TRACE_SUMMARY_BUCKETS, f[i].n, 0, (uint64_t)f[i].b << 32 | TRACE_SUMMARY_NO_BUCKET);
    }
    put(TRACE_SUMMARY_META, 0, 0, 0);
    return torn ? 0 : put(TRACE_SUMMARY_END, now, seq, 0);
}

/* The differences of the last whole snapshot, as "addr:calls/incl/self/bucket " ... */
static const char *deltas(void)
{
    static char buf[512];
    size_t at = 0, j = 0;
    buf[0] = 0;
    for (size_t i = 0; i < st.done.nfn && at < sizeof buf - 64; i++) {
        struct summary_delta d;
        size_t b = 0;
        summary_delta(&st, i, &j, &d);
        uint64_t n = d.fn->nb ? summary_delta_bucket(&st, &d, 0, &b) : 0;
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%llx:%llu/%llu/%llu/%llu ", (unsigned long long)d.fn->addr,
                               (unsigned long long)d.calls, (unsigned long long)d.incl_ns,
                               (unsigned long long)d.self_ns, (unsigned long long)n);
    }
    return buf;
}

int main(void)
{
    struct summary_budget budget = {0, 0};
    printf("1..12\n");
    summary_init(&st, &budget);
    struct fn a = {0xa0, 10, 1000, 600, 50, 200, 70, 10}, b = {0xb0, 1, 7, 7, 7, 7, 7, 1};
    struct fn s1[] = {a};
    ok(snapshot(1, s1, 1, 0) == 1 && !strcmp(deltas(), "a0:10/1000/600/10 "), "the first snapshot is all new");
    struct fn a2 = a, s2[2];
    a2.calls = 25, a2.incl = 2500, a2.self = 1500, a2.n = 25, a2.max = 300;
    s2[0] = b, s2[1] = a2; /* b got a slot before a's: it was entered, not yet returned, before */
    ok(snapshot(2, s2, 2, 0) == 1 && !strcmp(deltas(), "b0:1/7/7/1 a0:15/1500/900/15 "),
       "the next one minus it, a function new in between counted whole");
    struct fn a3 = a2, s3[2] = {b, a2};
    a3.calls = 24;
    s3[1] = a3;
    ok(snapshot(3, s3, 2, 0) == 0 && st.damaged == 1 && !strcmp(deltas(), "b0:1/7/7/1 a0:15/1500/900/15 "),
       "a count that went down: damaged, and the last whole one stays");
    struct fn s4[1] = {a2};
    ok(snapshot(4, s4, 1, 0) == 0 && st.damaged == 2, "a function that is gone: damaged");
    ok(snapshot(2, s2, 2, 0) == 0 && st.damaged == 3, "a number not above the last: damaged");
    struct fn a5 = a2, s5[2] = {b, a2};
    a5.calls = 30, a5.n = 30, a5.b = 71; /* bucket 70 gone */
    s5[1] = a5;
    ok(snapshot(5, s5, 2, 0) == 0 && st.damaged == 4, "a bucket that is gone: damaged");
    a5.b = 70;
    s5[1] = a5;
    ok(snapshot(6, s5, 2, 1) == 0 && snapshot(7, s5, 2, 0) == 1 && st.damaged == 5 &&
           !strcmp(deltas(), "b0:0/0/0/0 a0:5/0/0/5 "),
       "a torn one is damaged; the next whole one covers it");
    ok(snapshot(1, s1, 1, 0) == 1 && !strcmp(deltas(), "a0:10/1000/600/10 "),
       "seq 1 again: a new table under the tid (exec) starts over");
    struct fn a7 = a, s7[1];
    a7.calls = 11, a7.n = 11;
    s7[0] = a7;
    now = 50;
    ok(snapshot(5, s7, 1, 0) == 1, "the new table goes on (5)");
    now = 100; /* a new life whose snapshot 1 was lost: numbered lower, begun after the last ended */
    struct fn c = {0xc0, 4, 40, 40, 10, 10, 10, 4}, s6[1] = {c};
    ok(snapshot(2, s6, 1, 0) == 1 && !strcmp(deltas(), "c0:4/40/40/4 ") && st.damaged == 5,
       "a lower number begun after the last one ended: a new table, not damage");
    size_t held = budget.held;
    summary_free(&st);
    ok(held > 0 && st.whole == 0 && budget.held == 0, "snapshots held are on the budget, and given back");
    budget.held = SUMMARY_MAX_HELD - 1; /* as if other threads held it all */
    summary_init(&st, &budget);
    ok(snapshot(1, s1, 1, 0) == 0 && budget.refused == 1 && st.damaged == 1, "past the budget: refused, counted");
    budget.held = 0;
    summary_free(&st);
    return 0;
}
