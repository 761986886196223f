/*
 * jobs.h - the analyzer's pass spread over threads (analyze --jobs), with
 * the result one pass gives, exactly.
 *
 * The series are cut into contiguous runs of about equal bytes, one per
 * job.  The first job reads its run into the caller's analysis; each other
 * job reads its own into a private one, started from the same pre-passed
 * state (sources, their clock anchors and default processes, the trace's
 * start), with its own function table, calling-context tree and call-site
 * table.  Then, in series order, each private analysis is merged into the
 * caller's: sources, processes, binaries, threads and functions are matched
 * by their keys and new ones appended in the order the job first saw them,
 * which is the order one pass would have made them in; counts, times,
 * histograms, notes, triggers and the sinks' rows are added.
 *
 * A job's result is only what one pass would give when nothing it read
 * could have been set by an earlier job; a job is merged only when that
 * holds, and otherwise its series are read again, in order, into the
 * caller's analysis, which is then exactly one pass.  That happens when a
 * cap is reached (--max-threads, --max-funcs, the tree's stacks, binaries,
 * the triggers kept), for summary traces, when a thread or a stream's
 * losses, snapshots or wraps continue across the cut, or when a process's bias or binary was
 * used before the job's own records set it and an earlier one had.  So the
 * output never depends on the number of jobs; only the time does.
 *
 * Memory: each job holds what one pass holds (bounded as analysis.h says),
 * and the diagnostics it writes, kept until it is merged.
 */
#ifndef CALLSIGHT_JOBS_H
#define CALLSIGHT_JOBS_H

#include <stddef.h>

#include "analysis.h"
#include "callsites.h"
#include "cctree.h"

#define ANALYSIS_MAX_JOBS 256

struct analysis_jobs_stats {
    size_t jobs;   /* jobs started (1: one pass) */
    size_t merged; /* of the others, merged */
    size_t reread; /* ... and read again into the caller's analysis */
};

/* After analysis_prepare: every series of tf, over at most `jobs` threads
 * (at most one per series), as analysis_run_series in order would.  tree
 * and sites: the caller's sinks of those kinds, or NULL; no other sink
 * but the function table may be added (they could not be merged). */
void analysis_jobs_run(struct analysis *a, const struct trace_files *tf, size_t jobs, struct cctree *tree,
                       struct callsites *sites, struct analysis_jobs_stats *st);

#endif
