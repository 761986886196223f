/*
 * funcstats.c - per-function aggregates (see funcstats.h).
 */
#include "funcstats.h"
#include "lib/vec.h"

#include <stdlib.h>
#include <string.h>

void funcstats_init(struct funcstats *fs)
{
    memset(fs, 0, sizeof *fs);
    fs->max = FUNCSTATS_MAX;
    fs->other = UINT32_MAX;
}

void funcstats_free(struct funcstats *fs)
{
    for (size_t i = 0; i < fs->n; i++)
        hist_free(&fs->v[i].lat);
    free(fs->v);
    addrindex_free(&fs->index);
    size_t max = fs->max;
    funcstats_init(fs);
    fs->max = max;
}

static int add(struct funcstats *fs, uint32_t bin, uint64_t addr, uint32_t *id);

/* At the cap: a function kept, else the "[other]" row (made on first need). */
static int beyond_cap(struct funcstats *fs, uint32_t bin, uint64_t addr, uint32_t *id)
{
    if (addrindex_find(&fs->index, bin, addr, id))
        return 0;
    if (fs->other == UINT32_MAX && add(fs, FUNCSTATS_OTHER_BIN, 0, &fs->other) < 0)
        return -1;
    *id = fs->other;
    return 0;
}

int funcstats_id(struct funcstats *fs, uint32_t bin, uint64_t addr, uint32_t *id)
{
    if (fs->n >= fs->max)
        return beyond_cap(fs, bin, addr, id);
    return add(fs, bin, addr, id);
}

static int add(struct funcstats *fs, uint32_t bin, uint64_t addr, uint32_t *id)
{
    int added;
    /* room first: an id never exists without its entry */
    if (vec_grow(&fs->v, &fs->cap, fs->n, sizeof *fs->v, 256) < 0)
        return -1;
    if (addrindex_id(&fs->index, bin, addr, id, &added) < 0)
        return -1;
    if (added) {
        memset(&fs->v[fs->n], 0, sizeof fs->v[fs->n]);
        fs->v[fs->n].addr = addr;
        fs->v[fs->n].bin = bin;
        fs->n++;
    }
    return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* funcstats_add_call and funcstats_entry_add_call are inline in funcstats.h. */

void funcstats_entry_add_summary(struct funcstats_entry *e, uint64_t calls, uint64_t incl_ns, uint64_t self_ns)
{
    e->calls = sat_add(e->calls, calls);
    e->incl_ns = sat_add(e->incl_ns, incl_ns);
    e->self_ns = sat_add(e->self_ns, self_ns);
    e->lat_ns = sat_add(e->lat_ns, incl_ns);
}

void funcstats_add_summary(struct funcstats *fs, uint32_t id, uint64_t calls, uint64_t incl_ns, uint64_t self_ns)
{
    funcstats_entry_add_summary(&fs->v[id], calls, incl_ns, self_ns);
}

/* Rounded to the nearest ns (halves up), as the text report rounds its
 * mean, so that the JSON, the database and the pages read from them say
 * what the text says (418.52 ns is 419 in each); without overflow. */
uint64_t funcstats_mean(const struct funcstats_entry *e)
{
    if (!e->calls)
        return 0;
    uint64_t q = e->lat_ns / e->calls, r = e->lat_ns % e->calls;
    return q + (r >= e->calls - r);
}

struct by_key {
    const struct funcstats *fs;
    enum funcstats_key key;
};

static uint64_t key_of(const struct funcstats_entry *e, enum funcstats_key key)
{
    switch (key) {
    case FUNCSTATS_BY_CALLS: return e->calls;
    case FUNCSTATS_BY_INCL: return e->incl_ns;
    case FUNCSTATS_BY_MEAN: return funcstats_mean(e);
    case FUNCSTATS_BY_MAX: return e->lat.n ? e->lat.max : 0;
    case FUNCSTATS_BY_P99: return hist_percentile(&e->lat, 99);
    default: return e->self_ns;
    }
}

static int cmp_key(const void *pa, const void *pb, void *ctx)
{
    const struct by_key *k = ctx;
    const struct funcstats *fs = k->fs;
    const struct funcstats_entry *a = &fs->v[*(const uint32_t *)pa];
    const struct funcstats_entry *b = &fs->v[*(const uint32_t *)pb];
    uint64_t ka = key_of(a, k->key), kb = key_of(b, k->key);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    if (a->self_ns != b->self_ns)
        return a->self_ns > b->self_ns ? -1 : 1;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    if (a->bin != b->bin)
        return a->bin < b->bin ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

uint32_t *funcstats_by(const struct funcstats *fs, enum funcstats_key key)
{
    uint32_t *order = malloc((fs->n ? fs->n : 1) * sizeof *order);
    struct by_key k = {fs, key};
    if (!order)
        return NULL;
    for (size_t i = 0; i < fs->n; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, fs->n, sizeof *order, cmp_key, &k);
    return order;
}

uint32_t *funcstats_by_self(const struct funcstats *fs)
{
    return funcstats_by(fs, FUNCSTATS_BY_SELF);
}
