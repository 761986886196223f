/*
 * callsites.c - per call-site aggregation (see callsites.h).
 */
#include "callsites.h"

#include <stdlib.h>
#include <string.h>

void callsites_init(struct callsites *c, const struct funcstats *funcs)
{
    memset(c, 0, sizeof *c);
    c->funcs = funcs;
}

void callsites_free(struct callsites *c)
{
    const struct funcstats *funcs = c->funcs;
    addrindex_free(&c->sites);
    free(c->rows);
    u64map_free(&c->row_index);
    callsites_init(c, funcs);
}

/* Room for one more element of size `size` in *v.  0 ok, -1 oom. */
static int reserve(void *vp, size_t *cap, size_t n, size_t size)
{
    void **v = vp;
    if (n < *cap)
        return 0;
    if (n >= UINT32_MAX - 1)
        return -1;
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static struct callsites_row *row_of(struct callsites *c, uint32_t bin, uint64_t site, uint32_t func, int inlined)
{
    uint32_t sid, r;
    int added;
    if (addrindex_id(&c->sites, bin, site, &sid, &added) < 0)
        return NULL;
    uint64_t key = (uint64_t)sid << 32 | func;
    if (u64map_get(&c->row_index, key, &r))
        return &c->rows[r];
    if (reserve(&c->rows, &c->caprows, c->nrows, sizeof *c->rows) < 0 ||
        u64map_put(&c->row_index, key, (uint32_t)c->nrows) < 0)
        return NULL;
    c->rows[c->nrows] = (struct callsites_row){sid, func, (uint8_t)inlined, 0, 0, 0};
    return &c->rows[c->nrows++];
}

static void sites_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                        int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct callsites *c = ctx;
    (void)t;
    (void)ts;
    if (how != CALLSTACK_RETURNED || !f->tag.selected)
        return;
    uint32_t bin = f->tag.site_bin;
    uint64_t site = f->tag.site;
    if (f->tag.site_inlined && f->tag.site_caller < c->funcs->n) {
        /* the caller's function, as a site one byte into it (sites are
         * return addresses, named at site - 1): its name and first line */
        const struct funcstats_entry *e = &c->funcs->v[f->tag.site_caller];
        bin = e->bin;
        site = e->addr + 1;
    }
    struct callsites_row *row = row_of(c, bin, site, (uint32_t)f->func, f->tag.site_inlined);
    if (!row) {
        c->oom = 1;
        return;
    }
    row->calls++;
    row->incl_ns += f->nested ? 0 : incl; /* the time under the callee, once (callstack.h) */
    row->self_ns += self;
}

int callsites_add(struct callsites *c, uint32_t bin, uint64_t site, uint32_t func, int inlined, uint64_t calls,
                  uint64_t incl_ns, uint64_t self_ns)
{
    struct callsites_row *row = row_of(c, bin, site, func, inlined);
    if (!row)
        return -1;
    row->calls += calls;
    row->incl_ns += incl_ns;
    row->self_ns += self_ns;
    return 0;
}

struct sink callsites_sink(struct callsites *c)
{
    return (struct sink){.ctx = c, .close = sites_close};
}

static int cmp_incl(const void *pa, const void *pb, void *ctx)
{
    const struct callsites *c = ctx;
    const struct callsites_row *a = &c->rows[*(const uint32_t *)pa];
    const struct callsites_row *b = &c->rows[*(const uint32_t *)pb];
    if (a->incl_ns != b->incl_ns)
        return a->incl_ns > b->incl_ns ? -1 : 1;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    const struct addrindex *x = &c->sites;
    if (x->bin[a->site] != x->bin[b->site])
        return x->bin[a->site] < x->bin[b->site] ? -1 : 1;
    if (x->addr[a->site] != x->addr[b->site])
        return x->addr[a->site] < x->addr[b->site] ? -1 : 1;
    return a->func < b->func ? -1 : a->func > b->func;
}

uint32_t *callsites_by_incl(const struct callsites *c)
{
    uint32_t *order = malloc((c->nrows ? c->nrows : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (size_t i = 0; i < c->nrows; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, c->nrows, sizeof *order, cmp_incl, (void *)c);
    return order;
}
