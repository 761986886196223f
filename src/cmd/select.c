/*
 * select.c - `callsight select [DIR] --function NAME`: the subtree an
 * include-func would take, before anything is built: every function the
 * named one calls, to --depth levels, as an indented tree with file:line,
 * the calls the call graph cannot follow (through pointers, virtual
 * calls), and the line to paste into trace.config.
 *
 * The graph is DIR's, compiled as scan and `make instrument` compile it
 * (graph_build.h, into DIR/callsight-obj).  Each function is expanded once;
 * met again it is shown as "(above)", so the output is bounded by the
 * graph, recursion included.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "lib/textesc.h"
#include "select/choose.h"
#include "select/graph_build.h"
#include "select/sources.h"

#define PROG "callsight select"

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight select [DIR] --function NAME [--depth N] [--list] [--cc CMD] [--cxx CMD]\n"
"\n"
"Show what `include-func NAME [N]` in trace.config would instrument: NAME\n"
"and every function it calls, N levels deep (default: all), from DIR's call\n"
"graph (default DIR: here).  NAME is a function's name (ns::Class::method in\n"
"C++), or FILE:NAME for a static one.\n"
"\n"
"options:\n"
"  --function NAME  the function\n"
"  --depth N        levels of calls below it (0: the function alone)\n"
"  --list           one line per function, sorted, instead of the tree\n"
"  --cc CMD         how DIR's C sources compile, run in DIR (default: cc);\n"
"                   --cc 'gcc -Iinclude -DNDEBUG'\n"
"  --cxx CMD        the same for C++ sources (default: c++)\n"
"  -h, --help       print this help\n"
"\n"
"The graph is GCC's (-fcallgraph-info, at -O0, kept in DIR/callsight-obj):\n"
"calls written through macros are in it; a call through a function pointer\n"
"or a virtual call is not followed, and is listed as a limit.\n"
"\n"
"Exit status: 0 done, 1 error (no such function included), 2 usage error.\n");
}

struct walk {
    const struct graph *g;
    unsigned char *shown; /* expanded already */
    size_t nfuncs, nind, nout;
    const char *first_ind_from, *first_ind_at;
};

static const struct graph *sort_graph; /* qsort has no context argument */

static int by_name(const void *a, const void *b)
{
    const struct graph_func *x = &sort_graph->f[*(const size_t *)a], *y = &sort_graph->f[*(const size_t *)b];
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->file, y->file);
}

struct frame {
    size_t *kids; /* the function's callees, sorted by name */
    size_t n, next;
};

/* The callees of f, sorted; NULL for none (or out of memory: *n = 0). */
static size_t *sorted_kids(const struct graph *g, size_t f, size_t *n)
{
    *n = g->f[f].nout;
    size_t *k = *n ? malloc(*n * sizeof *k) : NULL;
    if (!k) {
        *n = 0;
        return NULL;
    }
    memcpy(k, g->callee + g->f[f].out, *n * sizeof *k);
    sort_graph = g;
    qsort(k, *n, sizeof *k, by_name);
    return k;
}

/* A function as name and place, escaped for the terminal: a project's file
 * names may hold anything, a newline or an ESC among it. */
static void print_func(const struct graph_func *f, int level, const char *tail)
{
    printf("%*s", 2 * level, "");
    textesc_put(stdout, f->name);
    fputs("  ", stdout);
    textesc_put(stdout, f->file);
    printf(":%u%s\n", f->line, tail);
}

/* The calls f makes that the graph cannot follow, under it. */
static void print_indirect(struct walk *w, const struct graph_func *f, int level, int depth)
{
    char at[4 * PATH_MAX];
    if (!f->indirect || (depth >= 0 && level >= depth))
        return;
    printf("%*s[%u call%s through a pointer, first at %s: not followed]\n", 2 * (level + 1), "", f->indirect,
           f->indirect == 1 ? "" : "s", textesc(at, sizeof at, f->indirect_at ? f->indirect_at : "?", TEXTESC_TERMINAL));
    w->nind += f->indirect;
}

/* Print the tree below root, depth levels deep (-1: all).  Depth first,
 * on a stack of its own, since a call graph can be deeper than C's. */
static int print_tree(struct walk *w, size_t root, int depth)
{
    const struct graph *g = w->g;
    struct frame *st = malloc((g->nf + 1) * sizeof *st);
    if (!st)
        return -1;
    size_t top = 0;
    print_func(&g->f[root], 0, "");
    print_indirect(w, &g->f[root], 0, depth);
    w->shown[root] = 1;
    w->nfuncs++;
    st[top].kids = sorted_kids(g, root, &st[top].n);
    st[top++].next = 0;
    while (top) {
        struct frame *fr = &st[top - 1];
        int level = (int)top;
        if (depth >= 0 && level > depth)
            fr->next = fr->n; /* below the depth asked for */
        if (fr->next == fr->n) {
            free(fr->kids);
            top--;
            continue;
        }
        size_t c = fr->kids[fr->next++];
        const struct graph_func *f = &g->f[c];
        if (!f->defined) {
            w->nout += !w->shown[c];
            w->shown[c] = 1;
            continue;
        }
        if (w->shown[c]) {
            print_func(f, level, "  (above)");
            continue;
        }
        w->shown[c] = 1;
        w->nfuncs++;
        print_func(f, level, "");
        print_indirect(w, f, level, depth);
        st[top].kids = sorted_kids(g, c, &st[top].n);
        st[top++].next = 0;
    }
    free(st);
    return 0;
}

static int by_place(const void *a, const void *b)
{
    const struct graph_func *x = &sort_graph->f[*(const size_t *)a], *y = &sort_graph->f[*(const size_t *)b];
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static void print_list(const struct graph *g, const unsigned char *mark)
{
    size_t n = 0, *v = malloc((g->nf ? g->nf : 1) * sizeof *v);
    for (size_t i = 0; v && i < g->nf; i++)
        if (mark[i] && g->f[i].defined)
            v[n++] = i;
    sort_graph = g;
    if (v)
        qsort(v, n, sizeof *v, by_place);
    for (size_t i = 0; i < n; i++)
        print_func(&g->f[v[i]], 0, "");
    free(v);
}

/* For --list, what the tree would have shown: the calls through pointers
 * and out of the project made by the functions whose calls are followed
 * (all but the last level's).  mark is reused. */
static void followed_limits(const struct choose *ch, const struct graph *g, const char *name, int depth,
                            unsigned char *mark, struct walk *w)
{
    if (depth == 0)
        return;
    memset(mark, 0, g->nf);
    for (size_t i = 0; i < g->nf; i++)
        if (g->f[i].defined && choose_names(ch, name, &g->f[i]))
            (void)graph_reach(g, i, depth > 0 ? depth - 1 : -1, mark);
    for (size_t i = 0; i < g->nf; i++) {
        if (!mark[i])
            continue;
        w->nind += g->f[i].indirect;
        for (size_t k = 0; k < g->f[i].nout; k++) {
            size_t c = g->callee[g->f[i].out + k];
            w->nout += !g->f[c].defined && !w->shown[c];
            w->shown[c] = 1;
        }
    }
}

/* The roots named, their subtrees printed, the summary and the line to
 * paste.  0, or 1 when no function has that name. */
static int show(const struct choose *ch, const struct graph *g, const char *name, int depth, int list)
{
    struct walk w = {g, calloc(g->nf ? g->nf : 1, 1), 0, 0, 0, NULL, NULL};
    unsigned char *mark = calloc(g->nf ? g->nf : 1, 1);
    size_t roots = 0, nodes = 0, ind = 0;
    for (size_t i = 0; w.shown && mark && i < g->nf; i++) {
        if (!g->f[i].defined || !choose_names(ch, name, &g->f[i]))
            continue;
        if (roots++ && !list)
            printf("\n");
        if (!list)
            print_tree(&w, i, depth);
        if (graph_reach(g, i, depth, mark) < 0)
            break;
    }
    for (size_t i = 0; i < g->nf && mark; i++)
        nodes += mark[i] && g->f[i].defined;
    if (list && mark && w.shown) {
        print_list(g, mark);
        followed_limits(ch, g, name, depth, mark, &w);
    }
    ind = w.nind;
    free(w.shown);
    free(mark);
    if (!roots) {
        fprintf(stderr, PROG ": no function named %s is defined in the %zu units compiled\n", name, g->nu);
        return 1;
    }
    char d[32] = "";
    if (depth >= 0)
        snprintf(d, sizeof d, " %d", depth);
    printf("select: %s%s: %zu function%s", name, d, nodes, nodes == 1 ? "" : "s");
    if (roots > 1)
        printf(" (%zu functions of that name: qualify one as FILE:%s)", roots, name);
    printf("\n");
    if (ind)
        printf("limits: %zu call%s through a function pointer or a virtual call not followed%s; what they reach "
               "needs an include-func of its own\n", ind, ind == 1 ? "" : "s", list ? "" : " (marked above)");
    if (w.nout)
        printf("outside the project: %zu function%s called that no unit defines (libraries): no hooks there\n",
               w.nout, w.nout == 1 ? "" : "s");
    printf("paste into trace.config:\n    include-func %s%s    # %zu function%s\n", name, d, nodes,
           nodes == 1 ? "" : "s");
    return 0;
}

int cmd_select(int argc, char **argv)
{
    const char *dir = NULL, *name = NULL;
    int depth = -1, list = 0;
    struct graph_build b = {"cc", "c++", "callsight-obj", PROG, 0};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(o, "--list")) {
            list = 1;
        } else if (v && !strcmp(o, "--function")) {
            name = argv[++i];
        } else if (v && !strcmp(o, "--depth")) {
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 1000000) {
                fprintf(stderr, PROG ": --depth needs a number from 0 to 1000000, not '%s'\n", v);
                return 2;
            }
            depth = (int)n;
            i++;
        } else if (v && (!strcmp(o, "--cc") || !strcmp(o, "--cxx"))) {
            *(o[3] == 'x' ? &b.cxx : &b.cc) = argv[++i];
        } else if (o[0] == '-' || dir) {
            fprintf(stderr, PROG ": unknown, incomplete or extra argument '%s' (try '" PROG " --help')\n", o);
            return 2;
        } else {
            dir = o;
        }
    }
    if (!name) {
        fprintf(stderr, PROG ": give --function NAME (try '" PROG " --help')\n");
        return 2;
    }
    if (dir && chdir(dir) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (graph_build_is_clang(b.cc)) {
        fprintf(stderr, PROG ": --cc is clang, which writes no call graph: give a GCC (--cc gcc)\n");
        return 1;
    }
    struct sources l;
    struct graph g;
    struct choose ch;
    memset(&g, 0, sizeof g);
    char err[CONFIG_ERR_MAX + 4200]; /* may quote a file name: said by textesc_say */
    if (sources_find_here(&l, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        return 1;
    }
    int rc = 1;
    if (choose_init(&ch, NULL, 0, err, sizeof err) < 0) /* no rules: names only */
        textesc_say(PROG, err);
    else if (graph_build_run(&b, &g, l.v, l.n, err, sizeof err) < 0)
        textesc_say(PROG, err);
    else
        rc = show(&ch, &g, name, depth, list);
    choose_free(&ch);
    graph_free(&g);
    sources_free(&l);
    return fflush(stdout) == 0 ? rc : 1;
}
