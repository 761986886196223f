/*
 * top_view.h - callsight top's frame: the sources and the top functions of
 * a live analysis (analysis/live.h), as lines of text.
 *
 * The same lines are printed by `top --once` and drawn by the full-screen
 * view, so what a script reads is what a user sees.  Function names come
 * from the --exe files through libdw, each function looked up once, when
 * it first shows up (a function is never renamed).
 */
#ifndef CALLSIGHT_TOP_VIEW_H
#define CALLSIGHT_TOP_VIEW_H

#include <stddef.h>

#include "analysis/live.h"
#include "read/symbols.h"

enum top_sort { TOP_SORT_NOW = 0, TOP_SORT_SELF, TOP_SORT_CALLS, TOP_SORT_RATE, TOP_SORT_INCL, TOP_SORT_MAX,
                TOP_SORTS };

struct top_view {
    struct live *l;
    const struct analysis_exe *exes; /* as given to the analysis; none: hex addresses */
    size_t nexes;
    struct symbol *names;  /* by funcstats id, the first nnamed looked up */
    size_t nnamed, capnames;
    int names_failed;      /* said once */
    int said_foreign;      /* a program no --exe matches: said once */
    enum top_sort sort;
    long source;           /* -1: every source; else its position in l->srcs */
    size_t max_rows;       /* function rows shown (0: all) */
    size_t max_sources;    /* source rows shown (0: all): the ended ones give way first */
    size_t width;          /* the screen's columns: the least telling number
                            * columns go first so names fit (0: all, --once) */
};

void top_view_init(struct top_view *v, struct live *l, const struct analysis_exe *exes, size_t nexes);
void top_view_free(struct top_view *v);
/* Names for the functions seen since the last call.  0 ok; -1 out of
 * memory.  A file libdw cannot read leaves hex names, and a one-line
 * reason in msg the first time (else msg is ""). */
int top_view_names(struct top_view *v, char *msg, size_t msglen);
/* The frame, one line at a time, to line(ctx, text) (no newline).  0 ok,
 * -1 out of memory. */
int top_view_frame(struct top_view *v, const char *title, void (*line)(void *ctx, const char *text), void *ctx);
/* The function in the view's first row, for live control: its address
 * (link-time, as the trace names it), its program's build-id (zero: none
 * recorded) and its label.  0, or -1 when the view has none, or it is a
 * shared object's (live control names the program's own only). */
int top_view_first(const struct top_view *v, uint64_t *addr, uint64_t build_id[2], char *name, size_t len);
/* The sort column's name ("self/int", "self", ...). */
const char *top_view_sort_word(enum top_sort s);

#endif
