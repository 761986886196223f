/*
 * graph.h - a project's static call graph, read from the .ci files that
 * GCC's -fcallgraph-info writes, one per translation unit, for trace.config's
 * function-level directives (choose.h) and `callsight select`.
 *
 * Why the compiler's graph and not a scan of the sources: it sees the code
 * after the preprocessor (a call written through a macro is a call), it
 * names a static function by its unit ("src/net/a.c:helper"), so two of one
 * name stay two, and it marks every call it cannot follow (through a
 * function pointer, a virtual call) with a placeholder, which the graph
 * keeps as a count per caller: the limits `select` reports.  Units are
 * compiled at -O0 (graph_build.h), so inlining removes no edge.
 *
 * A .ci file is VCG text: `graph: { title: "UNIT"`, then
 *   node: { title: "T" label: "NAME\nFILE:LINE:COL" }            defined here
 *   node: { title: "T" label: "..." shape : ellipse }             declared only
 *   edge: { sourcename: "T1" targetname: "T2" label: "FILE:LINE:COL" }
 * and `}`.  An edge may come before its target's node.  Nothing in it is
 * trusted: sizes are bounded and a line that does not parse is an error
 * naming the file and line.
 *
 * One function across units: a global one by its assembler name (the
 * title), a local one by where it is defined and its assembler name, so a
 * header's static inline function compiled into many units is one function.
 */
#ifndef CALLSIGHT_GRAPH_H
#define CALLSIGHT_GRAPH_H

#include <stddef.h>

#include "lib/strmap.h"

#define GRAPH_MAX_FILE ((size_t)64 << 20) /* one .ci file */
#define GRAPH_MAX_FUNCS 1000000
#define GRAPH_MAX_EDGES 10000000
#define GRAPH_ERR_MAX 1200

struct graph_func {
    char *key;          /* its identity (above) */
    char *name;         /* the name GCC's -finstrument-functions-exclude-function-list
                           matches: C's identifier; C++'s qualified name with
                           no parameters (A<T>::get, ns::f; a class template's
                           arguments as the label spells them) */
    char *plain;        /* name without any template arguments: A::get */
    char *label;        /* the compiler's own: "int ns::S::f(int)" */
    char *file;         /* where it is defined, as the compiler named it (where
                           it is declared, for a function outside the project) */
    unsigned line;
    int defined;        /* its body is in one of the units read */
    unsigned indirect;  /* calls it makes that no compiler can follow */
    char *indirect_at;  /* the first of them, FILE:LINE:COL */
    size_t out, nout;   /* its callees: graph.callee[out .. out + nout) */
};

struct graph_unit {
    char *source;       /* as the build names it */
    size_t *funcs;      /* the functions whose body it compiles */
    size_t n, cap;
};

struct graph {
    struct graph_func *f;
    size_t nf, capf;
    struct graph_unit *u;
    size_t nu, capu;
    size_t *callee;     /* after graph_finish: callees by caller, each once */
    size_t *edges;      /* while reading: (caller, callee) pairs */
    size_t nedges, capedges; /* in pairs */
    struct strmap by_key;
};

/* Read one unit's .ci file; source names the unit.  0 ok; -1 with err set
 * ("FILE:LINE: what"). */
int graph_add_unit(struct graph *g, const char *source, const char *ci_path, char *err, size_t errlen);
/* The same from text[0..len), named `name` in messages (for the fuzzer). */
int graph_add_text(struct graph *g, const char *source, const char *name, const char *text, size_t len, char *err,
                   size_t errlen);
/* After the last unit: build the callee lists.  0 ok; -1 out of memory. */
int graph_finish(struct graph *g);
void graph_free(struct graph *g);

/* Mark in mark[] (g->nf entries, set to 1) every function reachable from
 * root within depth calls (-1: any depth).  The root itself is marked.
 * 0, or -1 out of memory. */
int graph_reach(const struct graph *g, size_t root, int depth, unsigned char *mark);

/* GCC's user-visible name (see graph_func.name) from a label's first line,
 * into out; with plain, every template argument left out. */
void graph_visible_name(const char *label, char *out, size_t len, int plain);

/* The part of a name that is certain to be in GCC's own spelling of it
 * (a class template's arguments are spelled differently in the label): what
 * an exclude list may hold for it.  A pointer into name. */
const char *graph_match_text(const char *name);

#endif
