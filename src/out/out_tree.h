/*
 * out_tree.h - `--format tree`: the calling-context tree in the terminal,
 * one line per call path, as `uftrace graph` and `perf report --children`
 * show it.
 *
 *   (header line and notes, as text)
 *
 *        calls        incl_us        self_us  call path
 *            1      10000.000       8700.000  main
 *            1       1000.000        500.000    work
 *            1        500.000        500.000      helper
 *            1        300.000        300.000    helper
 *
 * A path's calls are its selected completed calls; incl is their inclusive
 * time, self their self time, so a path's incl is its self plus its
 * children's incl exactly (when nothing was lost: a child cut short by a
 * loss has no call, and its time stays in its caller's self).  A path
 * without a completed call (only frames cut short, or "[lost frames]"
 * standing for frames entered while events were lost) shows the time of
 * the calls under it as its incl.  Frames at a path that left without
 * their exit are counted on its line, "(N cut: no exit)".
 *
 * Children come by inclusive time, most first; `top` of them per node (0:
 * all), the rest summed in one "... N more paths" line; paths deeper than
 * `max_depth` levels are not shown, their number and time said on their
 * ancestor's line, "[+N deeper paths, T us]".  Times are microseconds with
 * three decimals: exact nanoseconds, so the sums can be checked.  A path
 * outside the time window that leads to calls inside it is shown, with no
 * calls of its own, as their context; nothing else outside it is.  Threads are merged (the
 * tree was built with cctree.merge_threads) or, per thread, one tree each
 * under a "thread TID (name):" line.  Calls on paths beyond the tree's
 * node cap are one "[other stacks]" line, and a note says how many.
 * Names longer than the room left in an 80-column row lose their middle.
 */
#ifndef CALLSIGHT_OUT_TREE_H
#define CALLSIGHT_OUT_TREE_H

#include <stddef.h>
#include <stdio.h>

#include "out.h"

#define OUT_TREE_DEPTH 32u     /* levels shown by default (--tree-depth) */
#define OUT_TREE_DEPTH_MAX 4096u /* ... at most */
#define OUT_TREE_WIDTH 80      /* the row names are fitted to */

struct out_tree_opts {
    size_t max_depth; /* levels of calls shown, 1 to OUT_TREE_DEPTH_MAX */
    size_t top;       /* children shown per node, 0: all */
    int per_thread;   /* the tree has thread nodes: one tree per thread */
};

/* Notes, then the tree.  0 ok; -1 out of memory. */
int out_tree_write(FILE *out, const struct out_view *v, const struct out_tree_opts *o);

#endif
