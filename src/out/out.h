/*
 * out.h - what every output format is given, and the labels they share.
 *
 * After the pass, analyze resolves names (one addr2line batch for the
 * functions and the call sites) and hands each output module a view: the
 * analysis, the names, and the optional aggregates (calling-context tree,
 * call sites) that the format asked for.  Output modules (report.c for the
 * text table, out_json.c, out_folded.c, out_svg.c, out_callers.c,
 * out_tree.c; the timelines are out_perfetto.c and out_chrome.c, and the
 * replay out_replay.c, sinks that write while the pass runs) only read it.
 */
#ifndef CALLSIGHT_OUT_H
#define CALLSIGHT_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "analysis/callsites.h"
#include "analysis/cctree.h"
#include "read/symbols.h"

struct report_opts;

struct out_view {
    const struct analysis *a;
    const struct symbol *funcs;      /* indexed like a->funcs.v; NULL: hex */
    const struct callsites *sites;   /* NULL unless the format needs them */
    const struct symbol *site_syms;  /* indexed like sites->sites */
    const struct cctree *tree;       /* NULL unless the format needs it */
    size_t top;                      /* rows to print, 0 all */
    const char *title;
    const struct report_opts *report; /* the table's order, row filters, names (report.h); NULL: defaults */
};

/* The function's bare name, or its address in hex (in buf). */
const char *out_func_name(const struct out_view *v, uint32_t id, char *buf, size_t len);
/* The function's name (or hex address) for a row of at most `width`
 * characters (at least OUT_FIT_MIN): a longer name keeps its head and
 * tail, "..." in the middle (cut at whole UTF-8 characters), so a C++
 * method keeps its class and its name; then escaped for the terminal. */
#define OUT_FIT_MIN 24
void out_func_fit(const struct out_view *v, uint32_t id, size_t width, char *buf, size_t len);
/* The pid a timeline shows a process under: its own, or for a stream's
 * default process (which has none) 2^30 + the stream's id, above any real
 * pid.  Its label: "pid 500", "stream 4" or "pid 500 (stream 4)". */
uint32_t out_process_pid(const struct analysis *a, uint32_t proc);
void out_process_label(const struct analysis *a, uint32_t proc, char *buf, size_t len);
/* An unlinked temporary file for a timeline's events, in dir (NULL:
 * $TMPDIR or /tmp), named .callsight-<what>.XXXXXX while it is being made;
 * NULL with errno set. */
FILE *out_temp_file(const char *dir, const char *what);
/* A tree node's label: a thread, a function, "[lost frames]", "[other stacks]". */
void out_node_label(const struct out_view *v, uint32_t node, char *buf, size_t len);
/*
 * The tree's nodes in depth-first order, children sorted (threads in order
 * of first sight, then functions by name), each with its depth (the root
 * is depth 0).  Malloc'ed arrays of v->tree->n in *order and *depth; returns
 * how many were filled, or -1 when out of memory.
 */
long out_tree_order(const struct out_view *v, uint32_t **order, uint32_t **depth);
/* One "trigger: ..." line per slow call kept (TRACE_TRIGGER): the call,
 * when it ended, and its stack then, outermost first. */
void out_triggers_text(FILE *out, const struct out_view *v);
/* analyze --trigger: below each trigger line, its stack, a frame a line. */
void out_triggers_stacks(FILE *out, const struct out_view *v);

#endif
