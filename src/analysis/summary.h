/*
 * summary.h - one thread's summary snapshots (TRACE_MODE=summary, trace.h),
 * put back together record by record as the pass reads them.
 *
 * A snapshot is whole once its END arrives with its own number; only then
 * does it replace the thread's last whole one, so a snapshot cut short by a
 * kill, a full disk or a lost batch is never used, and since snapshots are
 * cumulative the last whole one holds every count up to its time.  Nothing
 * read is trusted: parts out of order, a bucket index past the last or not
 * above the function's previous one, more functions than its BEGIN said,
 * or more than SUMMARY_MAX_FUNCS functions or SUMMARY_MAX_BUCKETS buckets
 * make the snapshot damaged (counted, and dropped).
 *
 * The pass uses a thread's snapshots as differences: each whole one minus
 * the whole one before it is what the thread did in between, which is what
 * gives a time series and lets a time window choose intervals.  A later
 * snapshot holds every function of the earlier one, in the same order (the
 * device's table only grows) and no count of it is smaller; one that does
 * not is damaged too.  Every thread's snapshots draw on one budget, so
 * that no input makes the pass hold more than SUMMARY_MAX_HELD bytes.
 */
#ifndef CALLSIGHT_SUMMARY_H
#define CALLSIGHT_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define SUMMARY_MAX_FUNCS 65536u
#define SUMMARY_MAX_BUCKETS ((size_t)1 << 22) /* 64 MiB a snapshot: thousands of functions with wide
                                                 * spreads; a device's real ones are far smaller */
#define SUMMARY_MAX_HELD ((size_t)256 << 20) /* all threads' snapshots at once */

struct summary_fn {
    uint64_t addr, calls, incl_ns, self_ns, min_ns, max_ns;
    size_t b0, nb;          /* its buckets: snap.b[b0 .. b0 + nb) */
    unsigned flags;         /* FUNC's pad[1] (TRACE_SUMMARY_FUNC_LOWER) */
};

struct summary_bucket {
    uint32_t index;
    uint64_t count;
};

struct summary_snap {
    uint64_t seq, nfn_said;
    struct summary_fn *fn;
    size_t nfn, capfn;
    struct summary_bucket *b;
    size_t nb, capb;
    uint64_t over_calls, deep_calls, unmatched, tracer_ns;
    unsigned meta_flags;    /* META's pad[1] (TRACE_SUMMARY_META_LOWER_SAID) */
    unsigned ends;          /* END's pad[1]: TRACE_SUMMARY_ENDS | which end, or 0 */
    uint64_t begin_ts, end_ts; /* BEGIN's and END's ts (the device's clock) */
    int have_times;         /* the last FUNC has its TIMES */
};

/* What the snapshots of every thread hold, against SUMMARY_MAX_HELD. */
struct summary_budget {
    size_t held;
    uint64_t refused;       /* snapshots dropped because the budget was spent */
};

struct summary_thread {
    struct summary_snap pend, done, prev; /* being read; the last whole; the one before */
    int reading;            /* between a BEGIN and its END */
    int have_done, have_prev;
    uint64_t whole, damaged; /* snapshots taken, and dropped */
    struct summary_budget *budget;
};

/* A function's calls and times between two whole snapshots. */
struct summary_delta {
    const struct summary_fn *fn;     /* in the later snapshot */
    const struct summary_fn *before; /* in the earlier one; NULL: new since */
    uint64_t calls, incl_ns, self_ns;
};

/* A thread that draws on budget (NULL: no limit but SUMMARY_MAX_*). */
void summary_init(struct summary_thread *st, struct summary_budget *budget);
/* One TRACE_KIND_SUMMARY record of the thread: 0 taken, 1 it completed a
 * whole snapshot (now st->done; st->prev, if have_prev, is the one before,
 * and done has been checked to hold all of it), -1 out of memory. */
int summary_record(struct summary_thread *st, const trace_event_t *ev);
/* The i-th function of st->done, minus what st->prev says of it; *j walks
 * st->prev alongside (start it at 0, with i at 0). */
void summary_delta(const struct summary_thread *st, size_t i, size_t *j, struct summary_delta *d);
/* Bucket k (of d->fn's) minus the same bucket in d->before; *at walks
 * d->before's buckets alongside (start it at 0, with k at 0). */
uint64_t summary_delta_bucket(const struct summary_thread *st, const struct summary_delta *d, size_t k,
                              size_t *at);
/* Forget the thread's snapshots and give their memory back (thread exit,
 * end of series); it may start again. */
void summary_free(struct summary_thread *st);

#endif
