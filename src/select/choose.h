/*
 * choose.h - what the instrumented build does with each source, from a
 * trace.config (config.h): the compiler flags a source gets and why.
 *
 * Sources are named as the build names them (relative to where the build
 * runs, or absolute); the config's patterns are relative to the config's
 * own folder, so each source is first made relative to it.  A source
 * outside that folder is matched as given.
 *
 * By file (include and exclude of sources): a selected source is compiled
 * with CHOOSE_INSTR_FLAGS, any other with no hooks at all, which works with
 * GCC and clang alike and costs an unselected file nothing.
 *
 * By function (exclude-func, include-func, or a rule that names a header):
 * each function is judged by the file it is written in and by the call
 * graph (graph.h), and a unit that compiles some selected functions and
 * some not gets GCC's -finstrument-functions-exclude-function-list with the
 * others.  GCC matches that list by substring, so before a name goes in,
 * every selected function of the same unit is checked against it: a name
 * that would also take a selected one stays out of the list (the function
 * stays instrumented) and a warning says which and why.
 */
#ifndef CALLSIGHT_CHOOSE_H
#define CALLSIGHT_CHOOSE_H

#include <stddef.h>

#include "config.h"
#include "graph.h"

#define CHOOSE_INSTR_FLAGS "-finstrument-functions -g"
#define CHOOSE_PATH_MAX 4096

#define CHOOSE_KEPT 2 /* not selected, but GCC cannot leave it out alone */
#define CHOOSE_FLAGS_MAX 65536 /* one unit's flags, its exclude list included */

struct choose {
    struct config cfg;
    char dir[CHOOSE_PATH_MAX]; /* the config's folder, absolute */
    int have_file;             /* a config file was read (else: every source) */
    char path[CHOOSE_PATH_MAX]; /* the config as named, for messages */
    const struct config_rule *graph_rule; /* the first rule that needs the call
                                             graph (a function or a header), or NULL */
    const struct graph *g;     /* after choose_use_graph */
    unsigned char *on;         /* per function of g: selected (1), kept (CHOOSE_KEPT), or not */
    const struct config_rule **why; /* per function: the rule that decided, or NULL */
};

/* Load the config at path (NULL: none, as for a missing file); a missing
 * file is an error only when `required` (else every source is selected).
 * 0 ok; -1 with err set. */
int choose_init(struct choose *ch, const char *path, int required, char *err, size_t errlen);
void choose_free(struct choose *ch);

/* The source's path relative to the config's folder, into rel. */
void choose_rel(const struct choose *ch, const char *source, char *rel, size_t len);

/* Whether source is instrumented; *why the rule that decided or NULL. */
int choose_source(const struct choose *ch, const char *source, const struct config_rule **why);

/* Decide every function of g (which must outlive ch); functions kept
 * instrumented against the config are warned about on stderr, after prog.
 * 0 ok; -1 with err set, for a directive that names no function of the
 * graph. */
int choose_use_graph(struct choose *ch, const struct graph *g, const char *prog, char *err, size_t errlen);

/* After choose_use_graph: whether unit u is instrumented (1) or not (0),
 * and into buf the exclude-list option it needs besides the instrumenting
 * flags ("" for none), shell-quoted when `quoted` (for a Make recipe).
 * -1 when the option would not fit in len. */
int choose_unit_flags(const struct choose *ch, size_t u, int quoted, char *buf, size_t len);

/* How many of unit u's functions are selected. */
size_t choose_unit_on(const struct choose *ch, size_t u);

/* Does the function-level NAME ([PATH:]NAME) of a directive name f? */
int choose_names(const struct choose *ch, const char *arg, const struct graph_func *f);

/* A warning on stderr for each include or exclude whose pattern matches
 * none of srcs (nor, with the graph, any function's file): a typo selects
 * nothing and says nothing otherwise. */
void choose_warn_unused(const struct choose *ch, char *const *srcs, size_t n, const char *prog);

/* A rule as it was written: "include-func run 1".  buf. */
const char *choose_rule_text(const struct config_rule *r, char *buf, size_t len);

/* Why, in words: "include src/ (trace.config:3)", "no include matches",
 * "no trace.config: every source". */
void choose_why(const struct choose *ch, int on, const struct config_rule *why, char *buf, size_t len);

#endif
