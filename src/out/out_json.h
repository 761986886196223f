/*
 * out_json.h - `--format json`: the whole report as one JSON object, the
 * schema documented in docs/analysis.md ("format": "callsight-analysis",
 * "version": 1).  `callsight diff` reads it back (diff.c).
 *
 * Integers are exact (nanoseconds, counts); strings are ASCII (other bytes
 * become '?'); absent values are null.  Every function is a row, --top
 * notwithstanding, sorted like the text table (most self time first).
 */
#ifndef CALLSIGHT_OUT_JSON_H
#define CALLSIGHT_OUT_JSON_H

#include <stdio.h>

#include "out.h"

#define OUT_JSON_FORMAT "callsight-analysis"
#define OUT_JSON_VERSION 1

/* 0 ok, -1 out of memory. */
int out_json_write(FILE *out, const struct out_view *v);

#endif
