/*
 * cctree.h - the calling-context tree: time by call stack, for the folded
 * stacks and the flame graph.
 *
 * Node 0 is the root (all threads); its children are one node per thread;
 * below them, one node per distinct path of function calls (a recursive
 * function gets a node per level).  As a sink it gives every frame in scope
 * a node when it opens (the child of its caller's node, or of its thread's
 * node for the outermost frame in scope), and adds each selected completed
 * call's inclusive and self time and count to that node.  So the self time
 * of all nodes adds up exactly to the self time in the function table.
 *
 * With merge_threads set (before the pass) there are no thread nodes: every
 * thread's outermost frames are children of the root, so the same path on
 * two threads is one node (analyze --format tree, threads merged).
 *
 * Memory grows with distinct stacks, never with events, and is capped:
 * once max_nodes exist, a frame whose path is new, and everything below
 * it, is counted in node 1, "other stacks" (so totals stay exact), and
 * `overflow` says how many calls went there.
 */
#ifndef CALLSIGHT_CCTREE_H
#define CALLSIGHT_CCTREE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/u64map.h"
#include "sink.h"

#define CCTREE_DEFAULT_MAX 100000u
#define CCTREE_NONE UINT32_MAX

enum cctree_kind {
    CCTREE_ROOT,   /* node 0 */
    CCTREE_OTHER,  /* node 1: stacks beyond the cap */
    CCTREE_THREAD, /* key: analysis thread index */
    CCTREE_FUNC,   /* key: function id (funcstats) */
    CCTREE_LOST    /* frames entered while events were lost: function unknown */
};

struct cctree_node {
    uint32_t parent;
    uint32_t key;
    uint32_t first_child, next_sibling; /* CCTREE_NONE-terminated */
    enum cctree_kind kind;
    uint64_t calls, incl_ns, self_ns;
    uint64_t cut; /* selected frames at this path that left without their exit */
};

struct cctree {
    struct cctree_node *v;
    size_t n, cap, max_nodes;
    struct u64map index; /* parent << 32 | key -> node (not node 1) */
    uint64_t overflow;   /* calls counted in node 1 */
    int merge_threads;   /* no thread nodes: every thread's paths under the root */
    int oom;
};

/* max_nodes 0 means CCTREE_DEFAULT_MAX; at least 2.  0 ok, -1 oom. */
int cctree_init(struct cctree *t, size_t max_nodes);
void cctree_free(struct cctree *t);
/* The sink that builds the tree. */
struct sink cctree_sink(struct cctree *t);
/* Sum of self time over each node's subtree, indexed like t->v; malloc'ed,
 * NULL when out of memory.  The root's is the total. */
uint64_t *cctree_totals(const struct cctree *t);

#endif
