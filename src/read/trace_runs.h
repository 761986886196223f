/*
 * trace_runs.h - the runs in a set of local trace files, and the choice of
 * which to report.
 *
 * File mode writes trace.<pid>.<tid>.<seq>.bin into TRACE_DIR and never
 * removes what an earlier run left there, so one directory piles up runs.
 * A run is one program start: the runtime takes its clock anchor (t0_ticks,
 * t0_ns in every file header) once, when the process starts, and a forked
 * child keeps it, so the files of a program and of the children it forked
 * share one anchor, and another start of the program has another.  Stream
 * series (one connection, however many processes wrote its ring) and
 * files whose header cannot be read belong to no run and are always kept:
 * the pass reports what is wrong with the latter.
 */
#ifndef CALLSIGHT_TRACE_RUNS_H
#define CALLSIGHT_TRACE_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_files.h"

#define TRACE_RUNS_NONE ((size_t)-1) /* a series in no run */

struct trace_run {
    uint64_t t0_ticks, t0_ns; /* the anchor that makes it one run */
    uint32_t pid;             /* its lowest pid: the program, before what it forked */
    uint32_t npids;           /* processes (the program and its forked children) */
    size_t nseries;           /* threads' series */
    int64_t mtime_s;          /* its newest file's last change ... */
    long mtime_ns;            /* ... and the nanoseconds of it */
};

struct trace_runs {
    struct trace_run *v; /* in the order they started: oldest first */
    size_t n;
    size_t *of;          /* per series of the trace_files: its run, or TRACE_RUNS_NONE */
    size_t nof;
    size_t newest;       /* the run whose files changed last (when n > 0) */
};

/* Find the runs of tf's series (grouped).  0 ok; -1 out of memory. */
int trace_runs_find(const struct trace_files *tf, struct trace_runs *runs);
void trace_runs_free(struct trace_runs *runs);
/* The run with this pid among its processes, or TRACE_RUNS_NONE. */
size_t trace_runs_of_pid(const struct trace_files *tf, const struct trace_runs *runs, uint32_t pid);
/* Drop from tf every series of another run than keep (those in no run stay). */
void trace_runs_keep(struct trace_files *tf, const struct trace_runs *runs, size_t keep);
/*
 * One line for the report: which run it is, and the others by pid and the
 * time their files were last written, with the options to choose
 * (all: --all-runs was given, the runs were merged).  Empty when there are
 * fewer than two runs.
 */
void trace_runs_note(const struct trace_runs *runs, size_t chosen, int all, char *buf, size_t len);
/* "pid 4200 (12:01:10), pid 4250 (12:02:30)": the runs, at most max named. */
void trace_runs_list(const struct trace_runs *runs, size_t skip, size_t max, char *buf, size_t len);

#endif
