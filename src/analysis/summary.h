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
 */
#ifndef CALLSIGHT_SUMMARY_H
#define CALLSIGHT_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define SUMMARY_MAX_FUNCS 65536u
#define SUMMARY_MAX_BUCKETS ((size_t)1 << 22) /* 64 MiB a snapshot: thousands of functions with wide
                                                 * spreads; a device's real ones are far smaller */

struct summary_fn {
    uint64_t addr, calls, incl_ns, self_ns, min_ns, max_ns;
    size_t b0, nb;          /* its buckets: snap.b[b0 .. b0 + nb) */
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
    int have_times;         /* the last FUNC has its TIMES */
};

struct summary_thread {
    struct summary_snap pend, done;
    int reading;            /* between a BEGIN and its END */
    int have_done;
    uint64_t whole, damaged; /* snapshots taken, and dropped */
};

/* One TRACE_KIND_SUMMARY record of the thread.  0, or -1 out of memory. */
int summary_record(struct summary_thread *st, const trace_event_t *ev);
/* The last whole snapshot is used: forget it (and any partial one). */
void summary_reset(struct summary_thread *st);
void summary_free(struct summary_thread *st);

#endif
