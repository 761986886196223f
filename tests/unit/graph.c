/*
 * graph.c - unit test of the call graph reader (src/select/graph.c): GCC's
 * -fcallgraph-info text read into functions and calls, a static function
 * per file and a header's inline one shared, an edge before its node, the
 * indirect-call placeholder counted, malformed files refused with
 * file:line; and the names GCC's exclude list matches, C and C++.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "select/graph.h"
#include "scratch.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static char dir[160]; /* scratch_make: under $TMPDIR */

/* Write text to DIR/name; its path. */
static const char *put(const char *name, const char *text)
{
    static char path[4][256];
    static int k;
    char *p = path[k++ & 3];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

static size_t find(const struct graph *g, const char *key)
{
    for (size_t i = 0; i < g->nf; i++)
        if (!strcmp(g->f[i].key, key))
            return i;
    return SIZE_MAX;
}

static int calls(const struct graph *g, size_t from, size_t to)
{
    for (size_t k = 0; k < g->f[from].nout; k++)
        if (g->callee[g->f[from].out + k] == to)
            return 1;
    return 0;
}

static const char unit_a[] =
    "graph: { title: \"a.c\"\n"
    "node: { title: \"a.c:helper\" label: \"helper\\na.c:3:12\" }\n"
    "node: { title: \"a.c:clamp\" label: \"clamp\\ninc/h.h:5:19\" }\n"
    "edge: { sourcename: \"pub\" targetname: \"a.c:late\" label: \"a.c:9:5\" }\n"
    "node: { title: \"pub\" label: \"pub\\na.c:8:5\" }\n"
    "edge: { sourcename: \"pub\" targetname: \"a.c:helper\" label: \"a.c:9:12\" }\n"
    "edge: { sourcename: \"pub\" targetname: \"a.c:helper\" label: \"a.c:9:30\" }\n"
    "node: { title: \"__indirect_call\" label: \"Indirect Call Placeholder\" shape : ellipse }\n"
    "edge: { sourcename: \"pub\" targetname: \"__indirect_call\" label: \"a.c:10:3\" }\n"
    "node: { title: \"ext\" label: \"ext\\ninc/h.h:2:5\" shape : ellipse }\n"
    "edge: { sourcename: \"pub\" targetname: \"ext\" label: \"a.c:11:3\" }\n"
    "edge: { sourcename: \"pub\" targetname: \"a.c:clamp\" label: \"a.c:11:9\" }\n"
    "node: { title: \"a.c:late\" label: \"late\\na.c:20:13\" }\n"
    "}\n";
static const char unit_b[] =
    "graph: { title: \"b.c\"\n"
    "node: { title: \"b.c:helper\" label: \"helper\\nb.c:3:12\" }\n"
    "node: { title: \"b.c:clamp\" label: \"clamp\\ninc/h.h:5:19\" }\n"
    "node: { title: \"ext\" label: \"ext\\nb.c:6:5\" }\n"
    "edge: { sourcename: \"ext\" targetname: \"b.c:helper\" label: \"b.c:7:1\" }\n"
    "edge: { sourcename: \"ext\" targetname: \"b.c:clamp\" label: \"b.c:7:9\" }\n"
    "}\n";

static void test_read(void)
{
    struct graph g;
    char err[GRAPH_ERR_MAX] = "";
    memset(&g, 0, sizeof g);
    int rc = graph_add_unit(&g, "a.c", put("a.ci", unit_a), err, sizeof err);
    rc |= graph_add_unit(&g, "b.c", put("b.ci", unit_b), err, sizeof err);
    rc |= graph_finish(&g);
    if (!ok(rc == 0, "two units read"))
        printf("# %s\n", err);
    size_t ha = find(&g, "a.c:3:helper"), hb = find(&g, "b.c:3:helper"), cl = find(&g, "inc/h.h:5:clamp");
    size_t pub = find(&g, "pub"), ext = find(&g, "ext"), late = find(&g, "a.c:20:late");
    ok(ha != SIZE_MAX && hb != SIZE_MAX && ha != hb, "two static helpers of one name stay two");
    ok(cl != SIZE_MAX && g.nf == 6, "a header's static inline function, compiled into both units, is one");
    ok(pub != SIZE_MAX && late != SIZE_MAX && calls(&g, pub, late), "an edge written before its target's node");
    ok(g.f[pub].nout == 4 && calls(&g, pub, ha) && calls(&g, pub, cl) && calls(&g, pub, ext),
       "each callee once, a call written twice counted once");
    ok(g.f[pub].indirect == 1 && g.f[pub].indirect_at && !strcmp(g.f[pub].indirect_at, "a.c:10:3"),
       "the call through a pointer: a count and where");
    ok(ext != SIZE_MAX && g.f[ext].defined && !strcmp(g.f[ext].file, "b.c") && g.f[ext].line == 6,
       "a function declared in one unit and defined in another: one, at its definition");
    ok(calls(&g, ext, hb) && !calls(&g, ext, ha), "calls to a static go to its own file's");
    ok(g.nu == 2 && g.u[0].n == 4 && g.u[1].n == 3, "each unit lists the functions it compiles");
    unsigned char *mark = calloc(g.nf, 1);
    graph_reach(&g, pub, 0, mark);
    int n0 = 0, n1 = 0, nall = 0;
    for (size_t i = 0; i < g.nf; i++)
        n0 += mark[i];
    memset(mark, 0, g.nf);
    graph_reach(&g, pub, 1, mark);
    for (size_t i = 0; i < g.nf; i++)
        n1 += mark[i];
    memset(mark, 0, g.nf);
    graph_reach(&g, pub, -1, mark);
    for (size_t i = 0; i < g.nf; i++)
        nall += mark[i];
    ok(n0 == 1 && n1 == 5 && nall == 6, "reach: depth 0 the function alone, 1 its callees, -1 all of them");
    free(mark);
    graph_free(&g);
}

static int refused(const char *text, const char *want)
{
    struct graph g;
    char err[GRAPH_ERR_MAX] = "", full[600];
    memset(&g, 0, sizeof g);
    const char *path = put("bad.ci", text);
    int rc = graph_add_unit(&g, "bad.c", path, err, sizeof err);
    graph_free(&g);
    snprintf(full, sizeof full, "%s:%s", path, want);
    if (rc == 0 || strcmp(err, full))
        printf("# rc=%d err='%s' want '%s'\n", rc, err, full);
    return rc < 0 && !strcmp(err, full);
}

static void test_refused(void)
{
    ok(refused("hello\n", "1: expected graph:, node:, edge: or }"), "not a graph: file:line");
    ok(refused("graph: { title: \"x.c\"\nnode: { title: \"f label: f }\n}\n", "2: expected KIND: { name: \"value\" ... }"),
       "an unclosed string");
    /* A quote that does not close (inside a name, as GCC writes a"b.c) is
     * part of the value: this title swallows the label. */
    ok(refused("graph: { title: \"x.c\"\nnode: { title: \"f label: \"f\" }\n}\n", "2: a node needs a title and a label"),
       "a quote inside a value does not end it");
    ok(refused("graph: { title: \"x.c\"\nnode: { title: \"f\" }\n}\n", "2: a node needs a title and a label"),
       "a node without a label");
    ok(refused("graph: { title: \"x.c\"\nedge: { sourcename: \"f\" targetname: \"g\" }\n}\n",
               "2: an edge from a function the file does not define"), "an edge from nowhere");
    ok(refused("", "0: no graph: { title: ... } (not a -fcallgraph-info file?)"), "an empty file");
    ok(refused("graph: { title: \"x.c\"\n} }\n", "2: more after the closing }"), "junk after a line");
    ok(refused("graph: { title: \"a\nb.c\"\n} }\n", "3: more after the closing }"),
       "lines counted past a value broken over two");
}

static int name_is(const char *label, const char *want, const char *match)
{
    char out[256];
    graph_visible_name(label, out, sizeof out, 0);
    int good = !strcmp(out, want) && !strcmp(graph_match_text(out), match);
    if (!good)
        printf("# '%s' -> '%s' match '%s'\n", label, out, graph_match_text(out));
    return good;
}

static void test_names(void)
{
    ok(name_is("helper", "helper", "helper"), "C: the identifier");
    ok(name_is("int ns::S::f(int)", "ns::S::f", "ns::S::f"), "C++: qualified, no parameters");
    ok(name_is("T ns::S::t(T) [with T = long int]", "ns::S::t", "ns::S::t"),
       "C++: a function template's instance without its arguments");
    ok(name_is("T A<T>::get(int) [with T = int]", "A<T>::get", "::get"),
       "C++: a class template's member matched by what follows its arguments");
    ok(name_is("virtual int ns::S::g(int)", "ns::S::g", "ns::S::g"), "C++: virtual");
    ok(name_is("S S::operator,(S)", "S::operator,", "S::operator,"), "C++: operator,");
    ok(name_is("bool operator<(const A&, const A&)", "operator<", "operator<"), "C++: operator< is not a template");
    ok(name_is("S::operator int() const", "S::operator int", "S::operator int"), "C++: a conversion");
    ok(name_is("int S::operator()(int)", "S::operator()", "S::operator()"), "C++: operator()");
    char plain[256];
    graph_visible_name("T A<T>::get(int) [with T = int]", plain, sizeof plain, 1);
    ok(!strcmp(plain, "A::get"), "plain: every template argument left out");
}

/* GCC writes names as they are: a unit a"b.c has bare quotes inside its
 * values, a unit whose name holds a newline breaks them over lines, one
 * named b\\nd.c holds what reads as the label's separator, and a unit compiled as ./@o.c (graph_build.c's way with a name
 * that reads as an option) has its functions in @o.c. */
static void test_odd_names(void)
{
    struct graph g;
    char err[GRAPH_ERR_MAX] = "";
    memset(&g, 0, sizeof g);
    const char *q = put("q.ci", "graph: { title: \"a\"b.c\"\n"
                                "node: { title: \"a\"b.c:s\" label: \"s\\na\"b.c:1:12\" }\n"
                                "node: { title: \"g\" label: \"g\\na\"b.c:2:5\" }\n"
                                "edge: { sourcename: \"g\" targetname: \"a\"b.c:s\" label: \"a\"b.c:2:20\" }\n"
                                "}\n");
    const char *at = put("at.ci", "graph: { title: \"./@o.c\"\n"
                                  "node: { title: \"h\" label: \"h\\n./@o.c:3:5\" }\n"
                                  "}\n");
    const char *nl = put("nl.ci", "graph: { title: \"n\nl.c\"\n"
                                  "node: { title: \"k\" label: \"k\\nn\nl.c:4:5\" }\n"
                                  "}\n");
    const char *bs = put("bs.ci", "graph: { title: \"b\\nd.c\"\n"
                                  "node: { title: \"m\" label: \"m\\nb\\nd.c:5:5\" }\n"
                                  "}\n");
    int rc = graph_add_unit(&g, "a\"b.c", q, err, sizeof err);
    rc = rc < 0 ? rc : graph_add_unit(&g, "@o.c", at, err, sizeof err);
    rc = rc < 0 ? rc : graph_add_unit(&g, "n\nl.c", nl, err, sizeof err);
    rc = rc < 0 ? rc : graph_add_unit(&g, "b\\nd.c", bs, err, sizeof err);
    rc = rc < 0 ? rc : graph_finish(&g);
    if (rc < 0)
        printf("# %s\n", err);
    size_t s = find(&g, "a\"b.c:1:s"), gg = find(&g, "g"), h = find(&g, "h"), k = find(&g, "k"), m = find(&g, "m");
    ok(rc == 0 && s != SIZE_MAX && gg != SIZE_MAX && !strcmp(g.f[s].file, "a\"b.c") && g.f[s].line == 1 &&
           !strcmp(g.f[gg].name, "g") && calls(&g, gg, s),
       "a unit named a\"b.c: its quotes are part of its names, its call read");
    ok(rc == 0 && h != SIZE_MAX && !strcmp(g.f[h].file, "@o.c") && g.f[h].line == 3,
       "a unit compiled as ./@o.c: its functions are in @o.c");
    ok(rc == 0 && k != SIZE_MAX && !strcmp(g.f[k].file, "n\nl.c") && g.f[k].line == 4 && !strcmp(g.f[k].name, "k"),
       "a unit named with a newline: its function in it, at its line");
    ok(rc == 0 && m != SIZE_MAX && !strcmp(g.f[m].file, "b\\nd.c") && g.f[m].line == 5 && !strcmp(g.f[m].name, "m"),
       "a unit named b\\nd.c: its function in it, the backslash kept");
    graph_free(&g);
}

/* Blanks after a line's closing } are no junk (a .ci written by another
 * GCC, or edited): the line still reads. */
static void test_blanks(void)
{
    struct graph g;
    char err[GRAPH_ERR_MAX] = "";
    memset(&g, 0, sizeof g);
    int rc = graph_add_unit(&g, "s.c",
                            put("s.ci", "graph: { title: \"s.c\"\n"
                                        "node: { title: \"f\" label: \"f\\ns.c:1:5\" } \t \n"
                                        "} \t\n"),
                            err, sizeof err);
    rc |= graph_finish(&g);
    if (!ok(rc == 0 && g.nf == 1 && !strcmp(g.f[0].name, "f"), "blanks after a line's closing } are read as nothing"))
        printf("# %s\n", err);
    graph_free(&g);
}

int main(void)
{
    if (!scratch_make(dir, sizeof dir, "callsight-graph"))
        return 1;
    test_read();
    test_refused();
    test_names();
    test_odd_names();
    test_blanks();
    if (scratch_remove(dir) != 0)
        return 1;
    printf("1..%d\n", test_no);
    return 0;
}
