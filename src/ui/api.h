/*
 * api.h - the JSON API of `callsight ui` (docs/ui.md): the traces, each
 * one's report (analyze's JSON, byte for byte), a function's histogram,
 * callers, callees and slowest calls, the flame graph's tree and the calls
 * in a time window.  Every answer is bounded: lists are capped, the flame
 * graph leaves out what is too small to see and the timeline the calls
 * too short to see, and says how much it left out.
 */
#ifndef CALLSIGHT_UI_API_H
#define CALLSIGHT_UI_API_H

#include <stddef.h>

#include "traces.h"

/* An answer: HTTP status, a malloc'd body and its type. */
struct ui_reply {
    int status;
    char *body;
    size_t len;
    const char *type;
};

/* The value of a query parameter, or NULL. */
typedef const char *(*ui_arg_fn)(void *ctx, const char *name);

/* Answer GET /api/<what> (what: "traces", "report", ...).  r->body is
 * always set (an error is {"error": "..."}), or NULL when out of memory. */
void ui_api(struct ui_traces *t, const char *what, ui_arg_fn arg, void *ctx, struct ui_reply *r);

#endif
