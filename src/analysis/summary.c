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
    s->have_times = 0;
}

static void snap_free(struct summary_snap *s)
{
    free(s->fn);
    free(s->b);
    memset(s, 0, sizeof *s);
}

void summary_reset(struct summary_thread *st)
{
    snap_clear(&st->pend);
    snap_clear(&st->done);
    st->reading = st->have_done = 0;
}

void summary_free(struct summary_thread *st)
{
    snap_free(&st->pend);
    snap_free(&st->done);
    memset(st, 0, sizeof *st);
}

static int room(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static int add_bucket(struct summary_snap *s, uint64_t index, uint64_t count)
{
    const struct summary_fn *f = &s->fn[s->nfn - 1];
    if (index >= TRACE_SUMMARY_NBUCKETS || s->nb >= SUMMARY_MAX_BUCKETS ||
        (f->nb && s->b[s->nb - 1].index >= index)) /* written in rising order, each once */
        return 1;
    if (!count)
        return 0;
    if (room((void **)&s->b, &s->capb, s->nb, sizeof *s->b) < 0)
        return -1;
    s->b[s->nb++] = (struct summary_bucket){(uint32_t)index, count};
    s->fn[s->nfn - 1].nb++;
    return 0;
}

/* One part of the snapshot being read: 0 taken, 1 damaged, -1 no memory. */
static int take_part(struct summary_thread *st, const trace_event_t *ev)
{
    struct summary_snap *s = &st->pend;
    switch (ev->pad[0]) {
    case TRACE_SUMMARY_FUNC:
        if (s->nfn >= s->nfn_said || s->nfn >= SUMMARY_MAX_FUNCS || (s->nfn && !s->have_times))
            return 1;
        if (room((void **)&s->fn, &s->capfn, s->nfn, sizeof *s->fn) < 0)
            return -1;
        s->fn[s->nfn++] = (struct summary_fn){ev->func, ev->call_site, ev->ts, 0, 0, 0, s->nb, 0};
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
        int r = add_bucket(s, a, ev->ts);
        return r ? r : b == TRACE_SUMMARY_NO_BUCKET ? 0 : add_bucket(s, b, ev->func);
    }
    case TRACE_SUMMARY_META:
        s->over_calls = ev->ts;
        s->deep_calls = ev->func;
        s->unmatched = ev->call_site;
        return 0;
    default:
        return 1;
    }
}

/* END: a whole snapshot becomes the thread's last. */
static int finish(struct summary_thread *st, const trace_event_t *ev)
{
    struct summary_snap *s = &st->pend;
    if (ev->func != s->seq || s->nfn != s->nfn_said || (s->nfn && !s->have_times))
        return 1;
    s->tracer_ns = ev->call_site;
    struct summary_snap t = st->done;
    st->done = st->pend;
    st->pend = t;
    snap_clear(&st->pend);
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
        st->reading = 1;
        return 0;
    }
    if (!st->reading)
        return 0; /* the rest of a snapshot whose start is gone (or damaged) */
    r = ev->pad[0] == TRACE_SUMMARY_END ? finish(st, ev) : take_part(st, ev);
    if (r > 0) {
        st->damaged++;
        st->reading = 0;
        snap_clear(&st->pend);
        return 0;
    }
    return r;
}
