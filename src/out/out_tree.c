/*
 * out_tree.c - the call tree as text (see out_tree.h).
 *
 * Two backward sweeps over the calling-context tree (a child is always
 * made after its parent) give each node the time shown as its incl, which
 * nodes have anything to show (a path made for a frame outside the time
 * window holds nothing) and how many such paths lie below each; then a
 * depth-first walk prints a node's children sorted, recursing no deeper
 * than max_depth.
 */
#include "out_tree.h"

#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "lib/textesc.h"
#include "notes.h"

#define ROW_COLS 42 /* "calls incl_us self_us  " before the path */

struct walk {
    FILE *out;
    const struct out_view *v;
    const struct out_tree_opts *o;
    uint64_t *incl;  /* shown incl per node */
    uint64_t *below; /* paths with something to show below each node */
    unsigned char *shown; /* the node has something to show */
};

/* ns as microseconds with three decimals (exact), in a field of w. */
static void put_us(FILE *out, int w, uint64_t ns)
{
    char s[32];
    snprintf(s, sizeof s, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
    fprintf(out, " %*s", w, s);
}

/* The three columns of a line. */
static void cols(FILE *out, uint64_t calls, uint64_t incl, uint64_t self)
{
    fprintf(out, "%10llu", (unsigned long long)calls);
    put_us(out, 14, incl);
    put_us(out, 14, self);
    fputs("  ", out);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A node with completed calls shows their incl; one without, the incl of
 * what is under it.  Nodes with neither calls nor cut frames nor anything
 * under them are not shown. */
static void sweep(struct walk *w)
{
    const struct cctree *t = w->v->tree;
    for (size_t i = 0; i < t->n; i++) {
        w->incl[i] = t->v[i].calls ? t->v[i].incl_ns : 0;
        w->below[i] = 0;
        w->shown[i] = t->v[i].calls || t->v[i].cut;
    }
    for (size_t i = t->n; i-- > 1;) {
        uint32_t p = t->v[i].parent;
        if (!w->shown[i])
            continue;
        w->shown[p] = 1;
        w->below[p] += 1 + w->below[i];
        if (!t->v[p].calls)
            w->incl[p] = sat_add(w->incl[p], w->incl[i]);
    }
}

/* Most inclusive time first; then by name, then by key (address). */
static int cmp_children(const void *pa, const void *pb, void *ctx)
{
    const struct walk *w = ctx;
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    if (w->incl[ia] != w->incl[ib])
        return w->incl[ia] > w->incl[ib] ? -1 : 1;
    const struct cctree_node *a = &w->v->tree->v[ia], *b = &w->v->tree->v[ib];
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    if (a->kind == CCTREE_FUNC && w->v->funcs) {
        const char *na = w->v->funcs[a->key].name, *nb = w->v->funcs[b->key].name;
        int c = na && nb ? strcmp(na, nb) : (nb != NULL) - (na != NULL);
        if (c)
            return c;
    }
    return a->key < b->key ? -1 : a->key > b->key;
}

/* The shown children of node, sorted; *n of them (malloc'ed; NULL: none or oom, *n then 0 or -1). */
static uint32_t *children(const struct walk *w, uint32_t node, long *n)
{
    const struct cctree *t = w->v->tree;
    long k = 0;
    for (uint32_t c = t->v[node].first_child; c != CCTREE_NONE; c = t->v[c].next_sibling)
        k += w->shown[c];
    *n = 0;
    if (!k)
        return NULL;
    uint32_t *v = malloc((size_t)k * sizeof *v);
    if (!v) {
        *n = -1;
        return NULL;
    }
    for (uint32_t c = t->v[node].first_child; c != CCTREE_NONE; c = t->v[c].next_sibling)
        if (w->shown[c])
            v[(*n)++] = c;
    qsort_r(v, (size_t)*n, sizeof *v, cmp_children, (void *)w);
    return v;
}

/* One path's line at depth d (0: outermost). */
static void row(struct walk *w, uint32_t node, size_t d)
{
    const struct cctree_node *n = &w->v->tree->v[node];
    char label[1024];
    size_t indent = 2 * d, room = OUT_TREE_WIDTH > ROW_COLS + indent ? OUT_TREE_WIDTH - ROW_COLS - indent : 0;
    if (n->kind == CCTREE_FUNC)
        out_func_fit(w->v, n->key, room, label, sizeof label);
    else
        out_node_label(w->v, node, label, sizeof label);
    cols(w->out, n->calls, w->incl[node], n->self_ns);
    fprintf(w->out, "%*s%s", (int)indent, "", label);
    if (n->cut)
        fprintf(w->out, " (%llu cut: no exit)", (unsigned long long)n->cut);
    if (d + 1 >= w->o->max_depth && w->below[node]) {
        uint64_t under = w->incl[node] > n->self_ns ? w->incl[node] - n->self_ns : 0;
        fprintf(w->out, " [+%llu deeper path%s, %llu.%03u us]", (unsigned long long)w->below[node],
                w->below[node] == 1 ? "" : "s", (unsigned long long)(under / 1000), (unsigned)(under % 1000));
    }
    fputc('\n', w->out);
}

/* node's children at depth d, and below them.  0 ok, -1 oom. */
static int rows(struct walk *w, uint32_t node, size_t d)
{
    long n;
    uint32_t *c = children(w, node, &n);
    if (n < 0)
        return -1;
    size_t shown = w->o->top && (size_t)n > w->o->top ? w->o->top : (size_t)n;
    int rc = 0;
    for (size_t i = 0; i < shown && rc == 0; i++) {
        row(w, c[i], d);
        if (d + 1 < w->o->max_depth)
            rc = rows(w, c[i], d + 1);
    }
    if (shown < (size_t)n) {
        uint64_t calls = 0, incl = 0, self = 0;
        for (size_t i = shown; i < (size_t)n; i++) {
            const struct cctree_node *k = &w->v->tree->v[c[i]];
            calls += k->calls;
            incl = sat_add(incl, w->incl[c[i]]);
            self = sat_add(self, k->self_ns);
        }
        cols(w->out, calls, incl, self);
        fprintf(w->out, "%*s... %zu more path%s (--top)\n", (int)(2 * d), "", (size_t)n - shown,
                (size_t)n - shown == 1 ? "" : "s");
    }
    free(c);
    return rc;
}

/* Threads by index (first sight), then [other stacks]. */
static int cmp_threads(const void *pa, const void *pb, void *ctx)
{
    const struct cctree *t = ctx;
    const struct cctree_node *a = &t->v[*(const uint32_t *)pa], *b = &t->v[*(const uint32_t *)pb];
    if ((a->kind == CCTREE_THREAD) != (b->kind == CCTREE_THREAD))
        return a->kind == CCTREE_THREAD ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* Per thread: each thread's tree under its line, in order of first sight,
 * then [other stacks] if it holds anything. */
static int per_thread(struct walk *w)
{
    const struct cctree *t = w->v->tree;
    long n = 0;
    int rc = 0;
    for (uint32_t c = t->v[0].first_child; c != CCTREE_NONE; c = t->v[c].next_sibling)
        n += w->shown[c];
    uint32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    n = 0;
    for (uint32_t c = t->v[0].first_child; c != CCTREE_NONE; c = t->v[c].next_sibling)
        if (w->shown[c])
            v[n++] = c;
    qsort_r(v, (size_t)n, sizeof *v, cmp_threads, (void *)t);
    for (long i = 0; i < n && rc == 0; i++) {
        char label[1024];
        if (t->v[v[i]].kind != CCTREE_THREAD) {
            fputc('\n', w->out);
            row(w, v[i], 0);
            continue;
        }
        out_node_label(w->v, v[i], label, sizeof label);
        fprintf(w->out, "\n%s: %llu.%03u us in %llu path%s\n", label, (unsigned long long)(w->incl[v[i]] / 1000),
                (unsigned)(w->incl[v[i]] % 1000), (unsigned long long)w->below[v[i]], w->below[v[i]] == 1 ? "" : "s");
        rc = rows(w, v[i], 0);
    }
    free(v);
    return rc;
}

int out_tree_write(FILE *out, const struct out_view *v, const struct out_tree_opts *o)
{
    const struct cctree *t = v->tree;
    struct walk w = {out, v, o, malloc(t->n * sizeof *w.incl), malloc(t->n * sizeof *w.below), malloc(t->n)};
    int rc = -1;
    notes_write_text(v->a, out);
    (void)advice_write_text(v, out); /* out of memory is said in a line of its own */
    notes_write_filter(v->a, out);
    if (t->overflow)
        fprintf(out, "note: %llu calls on paths beyond --max-stacks %zu are counted under [other stacks]\n",
                (unsigned long long)t->overflow, t->max_nodes);
    if (w.incl && w.below && w.shown) {
        sweep(&w);
        fprintf(out, "\n%10s %14s %14s  %s\n", "calls", "incl_us", "self_us", "call path");
        rc = o->per_thread ? per_thread(&w) : rows(&w, 0, 0);
        if (rc == 0 && !w.shown[0])
            fprintf(out, "%10s %14s %14s  (no calls selected)\n", "", "", "");
    }
    free(w.incl);
    free(w.below);
    free(w.shown);
    return rc;
}
