/*
 * summary.c - summary snapshots put back together (see summary.h).
 */
#include "summary.h"

#include <stdlib.h>
#include <string.h>

static void snap_clear(struct summary_snap *s)
{
    s->seq = s->nfn_said = 0;
    s->nfn = s->nb = 0;
    s->over_calls = s->deep_calls = s->unmatched = s->tracer_ns = 0;
    s->meta_flags = 0;
    s->ends = 0;
    s->have_times = 0;
}

static size_t snap_bytes(const struct summary_snap *s)
{
    return s->capfn * sizeof *s->fn + s->capb * sizeof *s->b;
}

static void snap_free(struct summary_snap *s)
{
    free(s->fn);
    free(s->b);
    memset(s, 0, sizeof *s);
}

void summary_init(struct summary_thread *st, struct summary_budget *budget)
{
    memset(st, 0, sizeof *st);
    st->budget = budget;
}

void summary_free(struct summary_thread *st)
{
    struct summary_budget *budget = st->budget;
    size_t bytes = snap_bytes(&st->pend) + snap_bytes(&st->done) + snap_bytes(&st->prev);
    if (budget)
        budget->held -= bytes < budget->held ? bytes : budget->held;
    snap_free(&st->pend);
    snap_free(&st->done);
    snap_free(&st->prev);
    summary_init(st, budget);
}

/* Room for one more of n items in *v: 0, 1 over the budget, -1 no memory. */
static int room(struct summary_thread *st, void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64, more = (c - *cap) * size;
    struct summary_budget *budget = st->budget;
    if (budget && more > SUMMARY_MAX_HELD - budget->held) {
        budget->refused++;
        return 1;
    }
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    if (budget)
        budget->held += more;
    return 0;
}

static int add_bucket(struct summary_thread *st, uint64_t index, uint64_t count)
{
    struct summary_snap *s = &st->pend;
    const struct summary_fn *f = &s->fn[s->nfn - 1];
    if (index >= TRACE_SUMMARY_NBUCKETS || s->nb >= SUMMARY_MAX_BUCKETS ||
        (f->nb && s->b[s->nb - 1].index >= index)) /* written in rising order, each once */
        return 1;
    if (!count)
        return 0;
    int r = room(st, (void **)&s->b, &s->capb, s->nb, sizeof *s->b);
    if (r)
        return r;
    s->b[s->nb++] = (struct summary_bucket){(uint32_t)index, count};
    s->fn[s->nfn - 1].nb++;
    return 0;
}

/* One part of the snapshot being read: 0 taken, 1 damaged, -1 no memory. */
static int take_part(struct summary_thread *st, const trace_event_t *ev)
{
    struct summary_snap *s = &st->pend;
    int r;
    switch (ev->pad[0]) {
    case TRACE_SUMMARY_FUNC:
        if (s->nfn >= s->nfn_said || s->nfn >= SUMMARY_MAX_FUNCS || (s->nfn && !s->have_times))
            return 1;
        if ((r = room(st, (void **)&s->fn, &s->capfn, s->nfn, sizeof *s->fn)) != 0)
            return r;
        s->fn[s->nfn++] = (struct summary_fn){ev->func, ev->call_site, ev->ts, 0, 0, 0, s->nb, 0, ev->pad[1]};
        s->have_times = 0;
        return 0;
    case TRACE_SUMMARY_TIMES:
        if (!s->nfn || s->have_times)
            return 1;
        s->fn[s->nfn - 1].self_ns = ev->ts;
        s->fn[s->nfn - 1].min_ns = ev->func;
        s->fn[s->nfn - 1].max_ns = ev->call_site;
        s->have_times = 1;
        return 0;
    case TRACE_SUMMARY_BUCKETS: {
        if (!s->nfn || !s->have_times)
            return 1;
        uint64_t a = ev->call_site >> 32, b = ev->call_site & 0xffffffffu;
        r = add_bucket(st, a, ev->ts);
        return r ? r : b == TRACE_SUMMARY_NO_BUCKET ? 0 : add_bucket(st, b, ev->func);
    }
    case TRACE_SUMMARY_META:
        s->over_calls = ev->ts;
        s->meta_flags = ev->pad[1];
        s->deep_calls = ev->func;
        s->unmatched = ev->call_site;
        return 0;
    default:
        return 1;
    }
}

/* Does the later function hold all of the earlier one?  Totals only grow,
 * min only falls, max only rises, and every bucket is still there. */
static int fn_holds(const struct summary_snap *ls, const struct summary_fn *l, const struct summary_snap *es,
                    const struct summary_fn *e)
{
    if (l->calls < e->calls || l->incl_ns < e->incl_ns || l->self_ns < e->self_ns || l->min_ns > e->min_ns ||
        l->max_ns < e->max_ns)
        return 0;
    size_t k = 0;
    for (size_t m = 0; m < e->nb; m++) {
        const struct summary_bucket *eb = &es->b[e->b0 + m];
        while (k < l->nb && ls->b[l->b0 + k].index < eb->index)
            k++;
        if (k == l->nb || ls->b[l->b0 + k].index != eb->index || ls->b[l->b0 + k].count < eb->count)
            return 0;
    }
    return 1;
}

/* Does snapshot l (later) hold all of e?  Its functions include e's in the
 * same order, the device's table being append-only. */
static int snap_holds(const struct summary_snap *l, const struct summary_snap *e)
{
    size_t j = 0;
    for (size_t i = 0; i < l->nfn && j < e->nfn; i++)
        if (l->fn[i].addr == e->fn[j].addr) {
            if (!fn_holds(l, &l->fn[i], e, &e->fn[j]))
                return 0;
            j++;
        }
    return j == e->nfn && l->over_calls >= e->over_calls && l->deep_calls >= e->deep_calls &&
           l->unmatched >= e->unmatched && l->tracer_ns >= e->tracer_ns;
}

/* END: a whole snapshot becomes the thread's last, the last the one before. */
static int finish(struct summary_thread *st, const trace_event_t *ev)
{
    struct summary_snap *s = &st->pend;
    if (ev->func != s->seq || s->nfn != s->nfn_said || (s->nfn && !s->have_times))
        return 1;
    s->tracer_ns = ev->call_site;
    s->ends = ev->pad[1];
    s->end_ts = ev->ts;
    /* A new table under the same tid (exec, a tid reused without its exit
     * marker, a pid reused in a merged series): numbered 1 again, or, when
     * that one was lost, numbered lower than the last and begun after it
     * ended.  A higher number that does not hold the last is damage. */
    if (st->have_done && (s->seq == 1 || (s->seq < st->done.seq && s->begin_ts > st->done.end_ts)))
        st->have_done = 0;
    if (st->have_done && (s->seq <= st->done.seq || !snap_holds(s, &st->done)))
        return 1;
    struct summary_snap t = st->prev;
    st->prev = st->done;
    st->done = st->pend;
    st->pend = t;
    snap_clear(&st->pend);
    st->have_prev = st->have_done;
    st->have_done = 1;
    st->whole++;
    st->reading = 0;
    return 0;
}

int summary_record(struct summary_thread *st, const trace_event_t *ev)
{
    int r;
    if (ev->pad[0] == TRACE_SUMMARY_BEGIN) {
        st->damaged += st->reading; /* the one before never ended */
        snap_clear(&st->pend);
        st->pend.seq = ev->func;
        st->pend.nfn_said = ev->call_site;
        st->pend.begin_ts = ev->ts;
        st->reading = 1;
        return 0;
    }
    if (!st->reading)
        return 0; /* the rest of a snapshot whose start is gone (or damaged) */
    int end = ev->pad[0] == TRACE_SUMMARY_END;
    r = end ? finish(st, ev) : take_part(st, ev);
    if (r > 0) {
        st->damaged++;
        st->reading = 0;
        snap_clear(&st->pend);
        return 0;
    }
    return r < 0 ? r : end;
}

void summary_delta(const struct summary_thread *st, size_t i, size_t *j, struct summary_delta *d)
{
    const struct summary_fn *f = &st->done.fn[i], *e = NULL;
    if (st->have_prev && *j < st->prev.nfn && st->prev.fn[*j].addr == f->addr)
        e = &st->prev.fn[(*j)++];
    d->fn = f;
    d->before = e;
    d->calls = f->calls - (e ? e->calls : 0);
    d->incl_ns = f->incl_ns - (e ? e->incl_ns : 0);
    d->self_ns = f->self_ns - (e ? e->self_ns : 0);
}

uint64_t summary_delta_bucket(const struct summary_thread *st, const struct summary_delta *d, size_t k,
                              size_t *at)
{
    const struct summary_bucket *b = &st->done.b[d->fn->b0 + k];
    if (!d->before)
        return b->count;
    const struct summary_fn *e = d->before;
    while (*at < e->nb && st->prev.b[e->b0 + *at].index < b->index)
        (*at)++;
    if (*at < e->nb && st->prev.b[e->b0 + *at].index == b->index)
        return b->count - st->prev.b[e->b0 + (*at)++].count;
    return b->count;
}
