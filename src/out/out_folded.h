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
 * exactly to the self time in the function table.
 */
#ifndef CALLSIGHT_OUT_FOLDED_H
#define CALLSIGHT_OUT_FOLDED_H

#include <stdio.h>

#include "out.h"

/* 0 ok, -1 out of memory. */
int out_folded_write(FILE *out, const struct out_view *v);

#endif
