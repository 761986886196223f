/*
 * notes.h - the analysis' header line and capture notes, as text.
 *
 *   events=N threads=N functions=N span=S.SSSSSSs unmatched_exits=N unclosed_enters=N dropped=N
 *   note: pid 500: capture stopped: byte budget 1048576 reached
 *
 * Every output that carries notes (the text and call-site tables, JSON)
 * takes them from here, so they say the same thing in the same words.
 */
#ifndef CALLSIGHT_NOTES_H
#define CALLSIGHT_NOTES_H

#include <stdio.h>

#include "analysis/analysis.h"

/* Call fn with each note ("pid 500: ..."), source by source. */
void notes_each(const struct analysis *a, void (*fn)(void *ctx, const char *note), void *ctx);
/* The first line, then "note: " and each note on a line of its own. */
void notes_write_text(const struct analysis *a, FILE *out);
/* When filtering: "filter: thread=T since=S until=U function=F: N of M
 * calls selected" (times in seconds from the trace's first event). */
void notes_write_filter(const struct analysis *a, FILE *out);

#endif
