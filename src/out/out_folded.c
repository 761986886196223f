/*
 * out_folded.c - collapsed stacks (see out_folded.h).  One depth-first walk
 * of the calling-context tree keeps the path to the current node in one
 * growing buffer, cut back to the parent's length at each step.  A line
 * holds its whole path, so the output grows with the square of the depth:
 * frames beyond max_depth are folded into their ancestor's "[deeper]"
 * line, and lines beyond max_bytes are left out, both counted.
 */
#include "out_folded.h"

#include <stdlib.h>
#include <string.h>

struct path {
    char *buf;
    size_t len, cap;
    size_t *ends; /* ends[d]: length of the path through depth d */
};

/* The walk's state: the deep nodes folded so far, bytes written. */
struct walk {
    FILE *out;
    struct path p;
    struct out_folded_limits *lim;
    uint64_t bytes;
    uint64_t deep_ns; /* self time below max_depth of the current ancestor */
    int deep;         /* ... there is some to write */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Append ";label" (or "label" at the start), made safe for the format. */
static int path_push(struct path *p, const char *label)
{
    size_t n = strlen(label);
    if (p->len + n + 2 > p->cap) {
        size_t cap = (p->len + n + 2) * 2;
        char *b = realloc(p->buf, cap);
        if (!b)
            return -1;
        p->buf = b;
        p->cap = cap;
    }
    if (p->len)
        p->buf[p->len++] = ';';
    for (size_t i = 0; i < n; i++) {
        char c = label[i];
        p->buf[p->len++] = c == ';' ? ':' : (unsigned char)c < 0x20 ? '?' : c;
    }
    p->buf[p->len] = 0;
    return 0;
}

/* One line, the path (and tail) then the time, unless it would pass max_bytes. */
static void line(struct walk *w, const char *tail, uint64_t ns)
{
    char num[32];
    int k = snprintf(num, sizeof num, " %llu\n", (unsigned long long)ns);
    uint64_t len = w->p.len + (tail ? 1 + strlen(tail) : 0) + (uint64_t)k;
    if (w->bytes + len > w->lim->max_bytes) {
        w->lim->cut_lines++;
        w->lim->cut_ns = sat_add(w->lim->cut_ns, ns);
        return;
    }
    fwrite(w->p.buf, 1, w->p.len, w->out);
    if (tail)
        fprintf(w->out, ";%s", tail);
    fputs(num, w->out);
    w->bytes += len;
}

/* The deep nodes folded into the ancestor at max_depth: its "[deeper]" line. */
static void flush_deep(struct walk *w)
{
    if (!w->deep)
        return;
    w->p.len = w->p.ends[w->lim->max_depth + 1];
    if (w->deep_ns)
        line(w, "[deeper]", w->deep_ns);
    w->deep = 0;
    w->deep_ns = 0;
}

/* Node at depth d (1: a thread; its frames from 2). */
static int visit(struct walk *w, const struct out_view *v, uint32_t node, uint32_t d)
{
    const struct cctree_node *n = &v->tree->v[node];
    char label[1024];
    if ((size_t)d - 1 > w->lim->max_depth) { /* folded into the ancestor at max_depth */
        w->lim->deep_stacks += n->self_ns != 0;
        w->deep_ns = sat_add(w->deep_ns, n->self_ns);
        w->deep = 1;
        return 0;
    }
    flush_deep(w);
    w->p.len = d > 1 ? w->p.ends[d - 1] : 0;
    out_node_label(v, node, label, sizeof label);
    if (path_push(&w->p, label) < 0)
        return -1;
    w->p.ends[d] = w->p.len;
    if (n->self_ns)
        line(w, NULL, n->self_ns);
    return 0;
}

int out_folded_write(FILE *out, const struct out_view *v, struct out_folded_limits *lim)
{
    uint32_t *order, *depth;
    long n = out_tree_order(v, &order, &depth);
    struct walk w = {out, {NULL, 0, 0, malloc((v->tree->n + 1) * sizeof *w.p.ends)}, lim, 0, 0, 0};
    int rc = n < 0 || !w.p.ends ? -1 : 0;
    if (!lim->max_depth)
        lim->max_depth = 1;
    for (long i = 1; i < n && rc == 0; i++) /* 0 is the root: not a frame */
        rc = visit(&w, v, order[i], depth[i]);
    if (rc == 0)
        flush_deep(&w);
    if (n >= 0) {
        free(order);
        free(depth);
    }
    free(w.p.buf);
    free(w.p.ends);
    return rc;
}
