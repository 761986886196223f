/*
 * timeline.c - the per-interval series of summary traces (see timeline.h).
 */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

void timeline_init(struct timeline *tl, int64_t start_ns, uint64_t width_ns)
{
    memset(tl, 0, sizeof *tl);
    tl->start_ns = start_ns;
    tl->width_ns = width_ns ? width_ns : 1;
}

void timeline_free(struct timeline *tl)
{
    free(tl->e);
    tl->e = NULL;
    tl->n = tl->cap = 0;
}

static int cmp_entry(const void *pa, const void *pb)
{
    const struct timeline_entry *a = pa, *b = pb;
    if (a->interval != b->interval)
        return a->interval < b->interval ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Sort, and add up the entries of one interval and function. */
static void merge(struct timeline *tl)
{
    if (!tl->n)
        return;
    qsort(tl->e, tl->n, sizeof *tl->e, cmp_entry);
    size_t w = 0;
    for (size_t i = 1; i < tl->n; i++) {
        struct timeline_entry *d = &tl->e[w], *s = &tl->e[i];
        if (s->interval == d->interval && s->id == d->id) {
            d->calls = sat_add(d->calls, s->calls);
            d->incl_ns = sat_add(d->incl_ns, s->incl_ns);
            d->self_ns = sat_add(d->self_ns, s->self_ns);
        } else {
            tl->e[++w] = *s;
        }
    }
    tl->n = w + 1;
}

/* Room for one more: merge, then widen the intervals while there are two,
 * until half the room is free.  0, or -1 when nothing helps. */
static int make_room(struct timeline *tl)
{
    merge(tl);
    while (tl->n > TIMELINE_MAX_ENTRIES / 2 && tl->width_ns <= UINT64_MAX / 2) {
        int spread = 0;
        for (size_t i = 0; i < tl->n && !spread; i++)
            spread = tl->e[i].interval != 0;
        if (!spread)
            break; /* one interval, all distinct functions */
        for (size_t i = 0; i < tl->n; i++)
            tl->e[i].interval >>= 1;
        tl->width_ns *= 2;
        merge(tl);
    }
    if (tl->n > TIMELINE_MAX_ENTRIES / 2)
        tl->full = 1; /* merging freed too little: more sorting would be in vain */
    return tl->n < TIMELINE_MAX_ENTRIES ? 0 : -1;
}

void timeline_add(struct timeline *tl, int64_t end_ns, uint32_t id, uint64_t calls, uint64_t incl_ns,
                  uint64_t self_ns)
{
    if (tl->n == tl->cap) {
        if (tl->full || (tl->cap == TIMELINE_MAX_ENTRIES && (make_room(tl) < 0 || tl->full))) {
            if (tl->n == tl->cap) { /* no room: dropped, counted */
                tl->full = 1;
                tl->dropped++;
                return;
            }
        }
        if (tl->n == tl->cap) {
            size_t c = tl->cap ? tl->cap * 2 : 256;
            void *p = realloc(tl->e, c * sizeof *tl->e);
            if (!p) {
                tl->oom = 1;
                tl->dropped++;
                return;
            }
            tl->e = p;
            tl->cap = c;
        }
    }
    uint64_t off = end_ns > tl->start_ns ? (uint64_t)end_ns - (uint64_t)tl->start_ns : 0;
    tl->e[tl->n++] = (struct timeline_entry){off / tl->width_ns, id, calls, incl_ns, self_ns};
}

void timeline_finish(struct timeline *tl)
{
    merge(tl);
}
