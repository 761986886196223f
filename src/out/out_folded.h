/*
 * out_folded.h - `--format folded`: collapsed stacks, one line per distinct
 * stack with self time,
 *
 *   thread 7 (worker);main;work;helper 123456
 *
 * frames separated by ';' from the thread down to the function, then a
 * space and the self time in nanoseconds: the input flamegraph.pl, inferno
 * and speedscope read.  Frames are bare function names (';' in a name
 * becomes ':'); stacks with no self time are left out.  The values add up
 * exactly to the self time in the function table, less what the limits
 * below left out (counted):
 *   - frames deeper than max_depth (--max-folded-depth, default
 *     OUT_FOLDED_MAX_DEPTH) are folded into one line of their ancestor at
 *     that depth, "...;[deeper] SELF_NS", deep_stacks says how many stacks;
 *   - lines that would take the output past max_bytes (--max-folded-mb,
 *     default OUT_FOLDED_MAX_BYTES) are left out: cut_lines, cut_ns.
 */
#ifndef CALLSIGHT_OUT_FOLDED_H
#define CALLSIGHT_OUT_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "out.h"

#define OUT_FOLDED_MAX_DEPTH 1024u                 /* frames per line, by default */
#define OUT_FOLDED_MAX_BYTES ((uint64_t)256 << 20) /* bytes of output, by default */

struct out_folded_limits {
    size_t max_depth;      /* in: frames per line (at least 1) */
    uint64_t max_bytes;    /* in: bytes written at most */
    uint64_t deep_stacks;  /* out: stacks folded into a [deeper] line */
    uint64_t cut_lines, cut_ns; /* out: lines left out for max_bytes, their self time */
};

/* 0 ok, -1 out of memory. */
int out_folded_write(FILE *out, const struct out_view *v, struct out_folded_limits *lim);

#endif
