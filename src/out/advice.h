/*
 * advice.h - when a trace lost more than a few percent of its events, what
 * would help, from what the trace measured: the rate the program made
 * events at, the rate the trace kept, and the functions that made most.
 *
 *   note: advice: 80.1% of the events were dropped (4791234 of 5978123): ...
 *   note: advice: the busiest functions made 90% of the events kept: ...
 *
 * Every format that carries notes carries these after them.
 */
#ifndef CALLSIGHT_ADVICE_H
#define CALLSIGHT_ADVICE_H

#include <stdio.h>

#include "out.h"

#define ADVICE_DROPPED_PCT 5   /* advice when more than this share of events was dropped, */
#define ADVICE_MIN_DROPPED 1000 /* ... and at least this many (a few lost of a tiny trace need none) */
#define ADVICE_NAMES 8         /* busiest functions named, at most */

/* Call fn with each line of advice ("advice: ..."); none when the trace
 * lost ADVICE_DROPPED_PCT or less, or fewer than ADVICE_MIN_DROPPED events.  0, or -1 out of memory (said as a line). */
int advice_each(const struct out_view *v, void (*fn)(void *ctx, const char *note), void *ctx);
/* The same as "note: " lines, escaped for a terminal. */
int advice_write_text(const struct out_view *v, FILE *out);

#endif
