/*
 * out_folded.c - collapsed stacks (see out_folded.h).  One depth-first walk
 * of the calling-context tree keeps the path to the current node in one
 * growing buffer, cut back to the parent's length at each step.
 */
#include "out_folded.h"

#include <stdlib.h>
#include <string.h>

struct path {
    char *buf;
    size_t len, cap;
    size_t *ends; /* ends[d]: length of the path through depth d */
};

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

int out_folded_write(FILE *out, const struct out_view *v)
{
    uint32_t *order, *depth;
    long n = out_tree_order(v, &order, &depth);
    struct path p = {NULL, 0, 0, malloc((v->tree->n + 1) * sizeof *p.ends)};
    char label[1024];
    int rc = n < 0 || !p.ends ? -1 : 0;
    for (long i = 1; i < n && rc == 0; i++) { /* 0 is the root: not a frame */
        const struct cctree_node *node = &v->tree->v[order[i]];
        p.len = depth[i] > 1 ? p.ends[depth[i] - 1] : 0;
        out_node_label(v, order[i], label, sizeof label);
        if (path_push(&p, label) < 0) {
            rc = -1;
            break;
        }
        p.ends[depth[i]] = p.len;
        if (node->self_ns)
            fprintf(out, "%s %llu\n", p.buf, (unsigned long long)node->self_ns);
    }
    if (n >= 0) {
        free(order);
        free(depth);
    }
    free(p.buf);
    free(p.ends);
    return rc;
}
