/*
 * live.h - the Live page's stream (server-sent events): every second, the
 * frame `callsight top DIR --once` prints for a trace directory, as one
 * event.  top is run as a process, as analyze is (traces.h), so the page
 * shows top's own figures; at most UI_LIVE_MAX streams at once.
 */
#ifndef CALLSIGHT_UI_LIVE_H
#define CALLSIGHT_UI_LIVE_H

#include <stddef.h>
#include <sys/types.h>

#include "traces.h"

#define UI_LIVE_MAX 4            /* live streams at once */
#define UI_LIVE_FRAME (64u << 10) /* a frame's bytes: longer ones are cut */

struct ui_live;

/* A stream of tr's frames, or NULL when UI_LIVE_MAX are open already (or
 * out of memory). */
struct ui_live *ui_live_open(struct ui_traces *t, struct ui_trace *tr);

/* The next bytes of the stream into buf (max bytes): waits for the next
 * frame when none is pending (the first at once, then one a second).  The
 * number of bytes, or -1 when the stream cannot go on. */
ssize_t ui_live_read(struct ui_live *l, char *buf, size_t max);

void ui_live_close(struct ui_live *l);

#endif
