/*
 * cctree.c - calling-context tree (see cctree.h).
 */
#include "cctree.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define LOST_KEY UINT32_MAX

/* A new node; CCTREE_NONE when the cap is reached or memory ran out. */
static uint32_t add_node(struct cctree *t, uint32_t parent, uint32_t key, enum cctree_kind kind)
{
    if (t->n >= t->max_nodes)
        return CCTREE_NONE;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct cctree_node *v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            t->oom = 1;
            return CCTREE_NONE;
        }
        t->v = v;
        t->cap = cap;
    }
    uint32_t id = (uint32_t)t->n++;
    t->v[id] = (struct cctree_node){parent, key, CCTREE_NONE, CCTREE_NONE, kind, 0, 0, 0, 0};
    if (id) {
        t->v[id].next_sibling = t->v[parent].first_child;
        t->v[parent].first_child = id;
    }
    return id;
}

int cctree_init(struct cctree *t, size_t max_nodes)
{
    memset(t, 0, sizeof *t);
    t->max_nodes = max_nodes ? max_nodes : CCTREE_DEFAULT_MAX;
    if (t->max_nodes < 2)
        t->max_nodes = 2;
    if (t->max_nodes > UINT32_MAX - 1)
        t->max_nodes = UINT32_MAX - 1;
    add_node(t, 0, 0, CCTREE_ROOT);
    add_node(t, 0, 0, CCTREE_OTHER);
    return t->oom ? -1 : 0;
}

void cctree_free(struct cctree *t)
{
    free(t->v);
    u64map_free(&t->index);
    memset(t, 0, sizeof *t);
}

/* The child of parent with this key, made on first sight; node 1 when the
 * tree is full (or out of memory: t->oom says so). */
static uint32_t child(struct cctree *t, uint32_t parent, uint32_t key, enum cctree_kind kind)
{
    uint64_t k = (uint64_t)parent << 32 | key;
    uint32_t id;
    if (parent == 1)
        return 1;
    if (u64map_get(&t->index, k, &id))
        return id;
    id = add_node(t, parent, key, kind);
    if (id == CCTREE_NONE)
        return 1;
    if (u64map_put(&t->index, k, id) < 0)
        t->oom = 1;
    return id;
}

static void tree_open(void *ctx, const struct analysis_thread *th, const struct callstack *s,
                      struct callstack_frame *f)
{
    struct cctree *t = ctx;
    f->tag.node = CCTREE_NONE;
    if (!f->tag.in_scope)
        return;
    uint32_t parent = s->n > 1 ? s->frames[s->n - 2].tag.node : CCTREE_NONE;
    if (parent == CCTREE_NONE)
        parent = t->merge_threads ? 0 : child(t, 0, th->index, CCTREE_THREAD);
    if (f->placeholder)
        f->tag.node = child(t, parent, LOST_KEY, CCTREE_LOST);
    else
        f->tag.node = child(t, parent, (uint32_t)f->func, CCTREE_FUNC);
}

static void tree_close(void *ctx, const struct analysis_thread *th, const struct callstack_frame *f,
                       int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct cctree *t = ctx;
    (void)th;
    (void)ts;
    if (!f->tag.selected || f->tag.node == CCTREE_NONE)
        return;
    struct cctree_node *n = &t->v[f->tag.node];
    if (how != CALLSTACK_RETURNED) {
        n->cut++;
        return;
    }
    n->calls++;
    n->incl_ns += incl;
    n->self_ns += self;
    t->overflow += f->tag.node == 1;
}

struct sink cctree_sink(struct cctree *t)
{
    return (struct sink){.ctx = t, .open = tree_open, .close = tree_close};
}

uint64_t *cctree_totals(const struct cctree *t)
{
    uint64_t *tot = malloc((t->n ? t->n : 1) * sizeof *tot);
    if (!tot)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        tot[i] = t->v[i].self_ns;
    /* A child is always made after its parent: one backward sweep. */
    for (size_t i = t->n; i-- > 1;)
        tot[t->v[i].parent] += tot[i];
    return tot;
}
