/*
 * fuzz_callgraph.c - libFuzzer harness for the call graph reader
 * (src/select/graph.c): the input is one -fcallgraph-info file, read as a
 * unit beside a fixed second unit that calls into it, then walked the way
 * choose.c and `callsight select` walk it (every function's subtree at
 * depth 1 and all, every name's exclude-list text).
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "select/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char other[] = "graph: { title: \"b.c\"\n"
                            "node: { title: \"main\" label: \"main\\nb.c:1:5\" }\n"
                            "node: { title: \"f\" label: \"f\\na.h:2:5\" shape : ellipse }\n"
                            "edge: { sourcename: \"main\" targetname: \"f\" label: \"b.c:2:3\" }\n"
                            "}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct graph g;
    char err[GRAPH_ERR_MAX];
    memset(&g, 0, sizeof g);
    if (graph_add_text(&g, "b.c", "b.ci", other, sizeof other - 1, err, sizeof err) == 0 &&
        graph_add_text(&g, "a.c", "a.ci", (const char *)data, size, err, sizeof err) == 0 && graph_finish(&g) == 0) {
        unsigned char *mark = calloc(g.nf ? g.nf : 1, 1);
        for (size_t i = 0; mark && i < g.nf && i < 64; i++) {
            (void)graph_reach(&g, i, 1, mark);
            (void)graph_reach(&g, i, -1, mark);
            (void)graph_match_text(g.f[i].name);
        }
        free(mark);
    }
    graph_free(&g);
    return 0;
}
