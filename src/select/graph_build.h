/*
 * graph_build.h - compile a project's units for their call graph and read
 * it (graph.h): what trace.config's function-level directives and
 * `callsight select` stand on.
 *
 * Each unit is compiled once with the build's own command plus -O0 (so
 * inlining removes no call), -fno-lto (so the graph is written at compile
 * time) and -fcallgraph-info, into OBJDIR/REL.cg.ci, with ccache off (a
 * cached object would come without its graph),
 * and again only when it is stale: when the command changed (kept in
 * REL.cg.cmd) or a file the compiler read (REL.cg.d, from -MMD) is newer.
 * Up to `jobs` compilers run at once; their messages go to stderr as
 * they are.  GCC 10 or newer; clang has no such graph (and no function
 * exclusion), which graph_build_is_clang tells so that callers can say so.
 */
#ifndef CALLSIGHT_GRAPH_BUILD_H
#define CALLSIGHT_GRAPH_BUILD_H

#include <stddef.h>

#include "graph.h"

struct graph_build {
    const char *cc;      /* the C compile command: "gcc -Iinclude -O2" */
    const char *cxx;     /* the C++ one (NULL: cc) */
    const char *objdir;  /* where the graph files are kept */
    const char *prog;    /* for progress lines: "callsight flags" */
    int jobs;            /* compilers at once (<= 0: the CPUs online) */
};

/* The units' graph, compiled where stale, into g (which the caller frees,
 * also on error).  srcs[i] is compiled as named; its files are kept under
 * objdir by that name.  0 ok; -1 with err set. */
int graph_build_run(const struct graph_build *b, struct graph *g, char *const *srcs, size_t n, char *err,
                    size_t errlen);

/* Whether the compile command runs clang (its --version says so). */
int graph_build_is_clang(const char *cc);

#endif
