/*
 * analysis.h - the analyzer's one streaming pass: series of trace files in,
 * per-function aggregates and loss accounting out.
 *
 * Sources are what produced the files: a process (local file mode, one
 * series per thread) or a serve connection (one series, all threads
 * interleaved).  Threads are keyed by (source, tid) and demultiplexed from
 * each series into their own shadow stacks (callstack.h); completed calls go
 * to the function table (funcstats.h).  Markers become capture notes and
 * loss counts.  Memory is bounded by threads x depth of the series being
 * read, plus sources, distinct threads and distinct functions.
 *
 * Order of use: analysis_init, analysis_find_anchors (cheap pre-pass over
 * the tails of the last segments, so that tick timestamps can use the exit
 * clock anchor in the single main pass), analysis_run_series for each
 * series, analysis_write_summary, then the caller reports the table.
 */
#ifndef CALLSIGHT_ANALYSIS_H
#define CALLSIGHT_ANALYSIS_H

#include <stdint.h>
#include <stdio.h>

#include "funcstats.h"
#include "trace_files.h"
#include "u64map.h"

#define ANALYSIS_ANCHOR_TAIL (64u * 1024u) /* bytes of tail searched per series */

struct analysis_source; /* private */

struct analysis {
    struct funcstats funcs;
    struct analysis_source *src;
    size_t nsrc, capsrc;
    struct u64map src_index;    /* (kind << 32 | id) -> src position */
    struct u64map threads_seen; /* (src position << 32 | tid) -> 0 */
    uint64_t events;            /* enter + exit records */
    int64_t first_ns, last_ns;  /* over enter/exit records */
    uint64_t unmatched_exits, unclosed_enters;
    size_t files_read, files_bad;
    int oom;
    FILE *diag;       /* one line per unreadable or damaged file */
    const char *prog; /* prefix for those lines */
};

void analysis_init(struct analysis *a, FILE *diag, const char *prog);
void analysis_free(struct analysis *a);
/* Find exit clock anchors for all sources (reads only file tails). */
void analysis_find_anchors(struct analysis *a, const struct trace_files *tf);
/* Read one series from start to end. */
void analysis_run_series(struct analysis *a, const struct trace_series *s);
/* The first line and the notes (see the command's --help for the shape). */
void analysis_write_summary(const struct analysis *a, FILE *out);
/* Sum over sources of max(device-reported drops, threads' lost events). */
uint64_t analysis_dropped(const struct analysis *a);

#endif
