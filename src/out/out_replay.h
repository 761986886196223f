/*
 * out_replay.h - `--format replay` (and `callsight replay`): each thread's
 * calls in the order they started, one line per call, nested by
 * indentation, as `uftrace replay` shows them.
 *
 *   (header line and notes, as text)
 *
 *   thread 500 (main): 4 calls
 *         start_us       dur_us  call
 *            0.000    10000.000  main
 *          100.000     1000.000    work
 *          200.000      500.000      helper
 *         2000.000      300.000    helper
 *
 * start_us is from the trace's start (where --since and --until count
 * from), dur_us the call's inclusive time (the tracer's own time taken out,
 * as in the table).  A frame that left without its exit (open at the end,
 * cut by a loss or an unmatched exit) has no duration: "-" and "(no exit in
 * the trace)"; frames entered while events were lost are "[lost frames]".
 * Where a thread lost events, or its stream lost records, a line says so
 * in its place.  Each thread's first max_lines calls are shown, then one
 * line says how many more there were.
 *
 * Names come only after the pass, so, as for the Chrome timeline, each
 * selected frame becomes a fixed record in an unlinked temporary file when
 * it opens (its duration filled in when it closes), chained to its thread's
 * next; out_replay_finish follows each thread's chain.  Memory is a few
 * counters per thread: the depth is the number of its selected frames open,
 * and the frame's tag holds its record's number.
 */
#ifndef CALLSIGHT_OUT_REPLAY_H
#define CALLSIGHT_OUT_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/sink.h"
#include "out.h"

#define OUT_REPLAY_LINES 10000u /* calls shown per thread by default (--max-lines) */
#define OUT_REPLAY_BUF 8192u    /* records buffered before they go to the file */
#define OUT_REPLAY_INDENT 64u   /* levels indented; deeper lines say their depth */

struct out_replay_rec;

struct out_replay_thread {
    int used;          /* a record of it exists */
    uint32_t first, last; /* its records, chained */
    uint64_t lines;    /* records of it */
    uint64_t calls;    /* ... of them its frames */
    uint64_t more;     /* selected frames beyond max_lines: not shown */
    uint32_t open;     /* its selected frames open now */
};

struct out_replay {
    const struct analysis *a;
    uint64_t max_lines;          /* per thread; 0: all */
    FILE *body;                  /* the records so far */
    struct out_replay_rec *buf;  /* records not yet in body, from number buf_first */
    size_t nbuf;
    uint64_t buf_first, nrec;
    struct out_replay_thread *threads; /* by analysis thread index */
    size_t capthreads;
    uint64_t over;               /* frames not recorded: the file's record numbers ran out */
    int err;                     /* errno of a failed write, or ENOMEM */
};

/* Records go to a temporary file in dir (NULL: $TMPDIR or /tmp); max_lines
 * calls per thread (0: all).  0 ok; -1 with errno set. */
int out_replay_init(struct out_replay *r, const struct analysis *a, const char *dir, uint64_t max_lines);
void out_replay_free(struct out_replay *r);
struct sink out_replay_sink(struct out_replay *r);
/* The notes, then each thread's calls.  0 ok; -1 with errno set. */
int out_replay_finish(struct out_replay *r, const struct out_view *v, FILE *out);

#endif
