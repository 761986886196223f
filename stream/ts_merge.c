/*
 * ts_merge.c - summaries merged per process (part of trace_stream.c):
 * each thread's snapshots taken off the ring and added to its process's
 * table, sent every --summary-ms as one snapshot or as increments.
 */
#include "ts_internal.h"

/* ---- summaries, merged per process --------------------------------------
 *
 * The wire's budget.  A thread's summary snapshot (trace.h) holds every
 * function it called, with its histogram: the demo's 26 busy threads send
 * about 57 KB/s at one snapshot a second each, where a device's link has a
 * few.  So, unless --summary-threads, the client merges: it takes every
 * thread's snapshots off the ring, keeps each thread's last whole one, and
 * adds what a new one gained to its process's merged table; every
 * --summary-ms it sends, for each process that gained anything, one
 * snapshot of that table under the tid TRACE_SUMMARY_MERGED_TID | pid,
 * named "N threads".  That is an ordinary cumulative snapshot, so serve and
 * analyze need nothing new, a lost one still costs resolution only, and the
 * merged table only grows, as a reader checks.  A thread's snapshot that
 * does not hold its last one (a count went down) is damaged and skipped,
 * as the analyzer would skip it.  Only threads announced by a PROCESS
 * marker (each thread's first flush) are merged, from their start, so no
 * thread is ever half merged and half sent as it is; the merge runs on
 * every take, connected or not, so a cut loses events but no merged count.
 * To a server that acks TRACE_ACK_SUMMARY_INCREMENTS the merged snapshot
 * goes as increments (trace_shm.h), only what changed since it was last
 * sent on this connection.
 *
 * Bounded: at most MERGE_MAX_THREADS live threads and MERGE_MAX_PROCS
 * processes are merged (the snapshots of any more go out as they are, and
 * the analyzer adds them alongside), and what is held stays under
 * MERGE_MAX_HELD: the calls of a function that finds no room, or of a
 * thread whose snapshot no longer fits, are counted in the merged
 * snapshot's "beyond the table" count, so they are reported, never lost
 * in silence.  A process that exited is reclaimed once its last merged
 * snapshot went and a table is full.  Nothing read from the ring is
 * trusted: counts saturate.
 */
#define MERGE_MAX_THREADS 4096u
#define MERGE_MAX_PROCS 64u
#define MERGE_MAX_HELD ((size_t)64 << 20)
#define MERGE_SNAP_FUNCS 65536u      /* in one thread's snapshot */
#define MERGE_SNAP_BUCKETS (1u << 20)
#define MERGE_NO_SLOT UINT32_MAX

struct mfn {       /* a function in a thread's snapshot */
    uint64_t addr, calls, incl, self, min, max;
    uint32_t b0, nb;   /* its buckets: b[b0 .. b0 + nb) */
    uint32_t slot;     /* its place in the process's merged table */
};

struct mbucket {
    uint32_t index;
    uint64_t count;
};

struct msnap {
    struct mfn *fn;
    struct mbucket *b;
    uint32_t nfn, capfn, nb, capb;
    uint64_t seq, said, calls; /* calls: of all its functions */
    uint64_t over, deep, unmatched, tracer, end_ts;
    int have_times;
};

struct mthread {
    uint32_t tid, proc;  /* proc: index in merger.p */
    int reading;         /* between a BEGIN and its END */
    int have_last;
    int spilled;         /* no room: only its calls are counted now */
    struct msnap pend, last;
};

struct mbk {       /* a bucket of a process's function that is not zero */
    uint32_t index;
    uint64_t count, sent; /* sent: as last sent on this connection (increments) */
};

struct mtotal {    /* a function of a process, all its threads' calls */
    uint64_t addr, calls, incl, self, min, max;
    struct mbk *bk;    /* its buckets that are not zero, by index (sparse: a few dozen, not 1408) */
    uint32_t nbk, capbk;
    uint32_t in_full;  /* full thread tables it has a place in (a lower bound when fewer than p->full) */
    int sent_lower;    /* the lower-bound flag as last sent on this connection */
    uint64_t sent_calls, sent_incl, sent_self; /* as last sent on this connection */
};

struct mproc {
    uint32_t pid, threads; /* threads: ever merged into it */
    struct mtotal *fn;
    uint32_t nfn, capfn;
    uint32_t *hash;    /* open addressing over fn by address: index + 1, 0 empty */
    uint32_t hmask;    /* slots - 1 (0: no hash yet) */
    uint32_t full;     /* its threads whose tables filled up (their META counts calls beyond them) */
    int lossy;         /* calls went into over here (no room): every row is a lower bound */
    uint64_t over, deep, unmatched, tracer, end_ts, seq;
    int dirty;         /* gained since its last merged snapshot went */
    int exited;        /* a thread's snapshot came from the process's exit (trace.h) */
    int used;          /* the slot holds a process (a free one is reused) */
};

struct merger {
    struct mthread *t;
    uint32_t nt, capt, last_hit;
    struct mproc p[MERGE_MAX_PROCS];
    uint32_t np;
    size_t held;
    uint64_t next_ms;  /* when merged snapshots go next */
    uint64_t merged, damaged, sent; /* thread snapshots merged, skipped; merged ones sent */
    int seen;          /* summary records came: this is a summary stream */
    uint64_t inc_sent; /* increment records sent (not among the stream's records) */
    unsigned char *out; /* CHUNK_RAW bytes of merged records being built */
    size_t out_len;
    unsigned char *inc; /* CHUNK_RAW bytes of increments being built (NULL until needed) */
    size_t inc_len;
};

/* Untrusted counts from the ring: saturate, so that totals only grow. */
static uint64_t merge_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Does the budget have room for `more` bytes? */
static int merge_budget(const struct merger *m, size_t more)
{
    return m->held <= MERGE_MAX_HELD && more <= MERGE_MAX_HELD - m->held;
}

/* Room for one more of n items of `size` in *v, on the budget: 0 or -1. */
static int merge_room(struct merger *m, void **v, uint32_t *cap, uint32_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : 32;
    size_t more = (size_t)(c - *cap) * size;
    if (!merge_budget(m, more))
        return -1;
    void *p = realloc(*v, (size_t)c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    m->held += more;
    return 0;
}

static void msnap_free(struct merger *m, struct msnap *s)
{
    m->held -= (size_t)s->capfn * sizeof *s->fn + (size_t)s->capb * sizeof *s->b;
    free(s->fn);
    free(s->b);
    memset(s, 0, sizeof *s);
}

static void msnap_clear(struct msnap *s)
{
    s->nfn = s->nb = 0;
    s->seq = s->said = s->calls = 0;
    s->over = s->deep = s->unmatched = s->tracer = s->end_ts = 0;
    s->have_times = 0;
}

static void merge_forget(struct merger *m, uint32_t tid);

/* Free the processes that exited and whose last merged snapshot went, and
 * their threads (those killed at the exit never said so): done only when
 * a table is full, since a process's other threads may still write a
 * snapshot while its exit handlers run. */
static void merge_reclaim(struct merger *m)
{
    for (uint32_t i = 0; i < m->np; i++) {
        struct mproc *p = &m->p[i];
        if (!p->used || !p->exited || p->dirty)
            continue;
        for (uint32_t k = 0; k < m->nt;)
            if (m->t[k].proc == i)
                merge_forget(m, m->t[k].tid); /* moves the last thread into k */
            else
                k++;
        for (uint32_t k = 0; k < p->nfn; k++) {
            m->held -= (size_t)p->fn[k].capbk * sizeof *p->fn[k].bk;
            free(p->fn[k].bk);
        }
        m->held -= (size_t)p->capfn * sizeof *p->fn + (p->hmask ? ((size_t)p->hmask + 1u) * sizeof *p->hash : 0);
        free(p->fn);
        free(p->hash);
        memset(p, 0, sizeof *p);
    }
}

/* The live process of pid, added on first sight (a pid whose process
 * exited is a new one); MERGE_MAX_PROCS when there is no slot. */
static uint32_t merge_proc(struct merger *m, uint32_t pid)
{
    for (uint32_t i = 0; i < m->np; i++)
        if (m->p[i].used && m->p[i].pid == pid && !m->p[i].exited)
            return i;
    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < MERGE_MAX_PROCS; i++) {
            if (i < m->np && m->p[i].used)
                continue;
            memset(&m->p[i], 0, sizeof m->p[i]);
            m->p[i].pid = pid;
            m->p[i].used = 1;
            m->np = i >= m->np ? i + 1 : m->np;
            return i;
        }
        merge_reclaim(m);
    }
    return MERGE_MAX_PROCS;
}

/* The thread of tid; with add, added (in process pid) if there is room. */
static struct mthread *merge_thread(struct merger *m, uint32_t tid, int add, uint32_t pid)
{
    if (m->last_hit < m->nt && m->t[m->last_hit].tid == tid)
        return &m->t[m->last_hit];
    for (uint32_t i = 0; i < m->nt; i++)
        if (m->t[i].tid == tid)
            return &m->t[m->last_hit = i];
    if (!add || (tid & TRACE_SUMMARY_MERGED_TID))
        return NULL;
    if (m->nt == MERGE_MAX_THREADS)
        merge_reclaim(m);
    uint32_t proc = m->nt < MERGE_MAX_THREADS ? merge_proc(m, pid) : MERGE_MAX_PROCS;
    if (proc == MERGE_MAX_PROCS || merge_room(m, (void **)&m->t, &m->capt, m->nt, sizeof *m->t) < 0)
        return NULL;
    struct mthread *t = &m->t[m->nt];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->proc = proc;
    m->last_hit = m->nt++;
    return t;
}

/* The thread is gone (its exit): its calls stay in its process's table. */
static void merge_forget(struct merger *m, uint32_t tid)
{
    struct mthread *t = merge_thread(m, tid, 0, 0);
    if (!t)
        return;
    msnap_free(m, &t->pend);
    msnap_free(m, &t->last);
    *t = m->t[--m->nt];
    m->last_hit = 0;
}

/* No room for the thread's snapshots: from now on only its totals count. */
static void merge_spill(struct merger *m, struct mthread *t)
{
    struct msnap pend = t->pend, last = t->last;
    msnap_free(m, &t->pend);
    msnap_free(m, &t->last);
    pend.fn = last.fn = NULL;
    pend.b = last.b = NULL;
    pend.capfn = pend.capb = last.capfn = last.capb = 0;
    pend.nb = last.nb = last.nfn = 0; /* pend.nfn still counts its FUNC parts */
    t->pend = pend;
    t->last = last;
    t->spilled = 1;
}

static uint32_t merge_hash_at(uint64_t addr, uint32_t mask)
{
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

/* The process's hash at twice the slots (or its first), every function put
 * back: 0, or -1 (no room on the budget). */
static int merge_rehash(struct merger *m, struct mproc *p)
{
    uint32_t slots = p->hmask ? (p->hmask + 1u) * 2u : 1024u;
    size_t bytes = (size_t)slots * sizeof *p->hash, was = p->hmask ? ((size_t)p->hmask + 1u) * sizeof *p->hash : 0;
    uint32_t *h;
    if (!merge_budget(m, bytes) || !(h = calloc(slots, sizeof *h)))
        return -1;
    for (uint32_t k = 0; k < p->nfn; k++) {
        uint32_t i = merge_hash_at(p->fn[k].addr, slots - 1u);
        while (h[i])
            i = (i + 1u) & (slots - 1u);
        h[i] = k + 1u;
    }
    free(p->hash);
    p->hash = h;
    p->hmask = slots - 1u;
    m->held = m->held + bytes - was;
    return 0;
}

/* The function's place in the process's table, added when new (found by
 * hash: tens of thousands of functions a process are usual); MERGE_NO_SLOT
 * when there is no room. */
static uint32_t merge_slot(struct merger *m, struct mproc *p, uint64_t addr)
{
    uint32_t i = 0;
    if (p->hmask) {
        for (i = merge_hash_at(addr, p->hmask); p->hash[i]; i = (i + 1u) & p->hmask)
            if (p->fn[p->hash[i] - 1u].addr == addr)
                return p->hash[i] - 1u;
    }
    if (p->nfn >= MERGE_SNAP_FUNCS)
        return MERGE_NO_SLOT;
    if (!p->hmask || 2u * (p->nfn + 1u) > p->hmask + 1u) {
        if (merge_rehash(m, p) < 0)
            return MERGE_NO_SLOT;
        for (i = merge_hash_at(addr, p->hmask); p->hash[i]; i = (i + 1u) & p->hmask)
            ;
    }
    if (merge_room(m, (void **)&p->fn, &p->capfn, p->nfn, sizeof *p->fn) < 0)
        return MERGE_NO_SLOT;
    p->fn[p->nfn] = (struct mtotal){addr, 0, 0, 0, UINT64_MAX, 0, NULL, 0, 0, 0, 0, 0, 0, 0};
    p->hash[i] = p->nfn + 1u;
    return p->nfn++;
}

/* Bucket index of d gains n: its place found (or made, in index order).
 * 0, or -1 when there is no room (the caller counts the calls as lost). */
static int merge_bucket_add(struct merger *m, struct mtotal *d, uint32_t *at, uint32_t index, uint64_t n)
{
    while (*at < d->nbk && d->bk[*at].index < index)
        ++*at;
    if (*at == d->nbk || d->bk[*at].index != index) {
        if (merge_room(m, (void **)&d->bk, &d->capbk, d->nbk, sizeof *d->bk) < 0)
            return -1;
        memmove(&d->bk[*at + 1u], &d->bk[*at], (size_t)(d->nbk - *at) * sizeof *d->bk);
        d->bk[*at] = (struct mbk){index, 0, 0};
        d->nbk++;
    }
    d->bk[*at].count = merge_sat(d->bk[*at].count, n);
    return 0;
}

/* Is the merged function's row a lower bound?  When a thread of its process
 * filled its table without it, or the merge itself lost calls. */
static int merge_lower(const struct mproc *p, const struct mtotal *d)
{
    return p->lossy || d->in_full < p->full;
}

/* One part of a thread's snapshot: 0 taken, 1 damaged. */
static int merge_part(struct merger *m, struct mthread *t, unsigned part, uint64_t ts, uint64_t func,
                      uint64_t site)
{
    struct msnap *s = &t->pend;
    if (part == TRACE_SUMMARY_FUNC) {
        if (s->nfn >= s->said || s->nfn >= MERGE_SNAP_FUNCS || (s->nfn && !s->have_times))
            return 1;
        s->calls = merge_sat(s->calls, site);
        s->have_times = 0;
        if (t->spilled || merge_room(m, (void **)&s->fn, &s->capfn, s->nfn, sizeof *s->fn) < 0) {
            if (!t->spilled)
                merge_spill(m, t);
            s->nfn++;
            return 0;
        }
        s->fn[s->nfn++] = (struct mfn){func, site, ts, 0, 0, 0, s->nb, 0, MERGE_NO_SLOT};
        return 0;
    }
    if (part == TRACE_SUMMARY_TIMES) {
        if (!s->nfn || s->have_times)
            return 1;
        s->have_times = 1;
        if (!t->spilled)
            s->fn[s->nfn - 1].self = ts, s->fn[s->nfn - 1].min = func, s->fn[s->nfn - 1].max = site;
        return 0;
    }
    if (part == TRACE_SUMMARY_BUCKETS) {
        if (!s->nfn || !s->have_times)
            return 1;
        uint64_t idx[2] = {site >> 32, site & 0xffffffffu}, n[2] = {ts, func};
        for (int k = 0; k < 2 && !t->spilled; k++) {
            if (k == 1 && idx[1] == TRACE_SUMMARY_NO_BUCKET)
                break;
            struct mfn *f = &s->fn[s->nfn - 1];
            if (idx[k] >= TRACE_SUMMARY_NBUCKETS || s->nb >= MERGE_SNAP_BUCKETS ||
                (f->nb && s->b[s->nb - 1].index >= idx[k]))
                return 1;
            if (!n[k])
                continue;
            if (merge_room(m, (void **)&s->b, &s->capb, s->nb, sizeof *s->b) < 0) {
                merge_spill(m, t);
                break;
            }
            s->b[s->nb++] = (struct mbucket){(uint32_t)idx[k], n[k]};
            f->nb++;
        }
        return 0;
    }
    if (part == TRACE_SUMMARY_META) {
        s->over = ts, s->deep = func, s->unmatched = site;
        return 0;
    }
    return 1;
}

/* Does the new snapshot hold all of the last one, function by function
 * (the device's table only grows, in order) and bucket by bucket? */
static int merge_holds(const struct msnap *l, const struct msnap *e)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < l->nfn && j < e->nfn; i++) {
        const struct mfn *a = &l->fn[i], *b = &e->fn[j];
        if (a->addr != b->addr)
            continue;
        if (a->calls < b->calls || a->incl < b->incl || a->self < b->self || a->min > b->min || a->max < b->max)
            return 0;
        for (uint32_t x = 0, y = 0; y < b->nb; y++) {
            while (x < a->nb && l->b[a->b0 + x].index < e->b[b->b0 + y].index)
                x++;
            if (x == a->nb || l->b[a->b0 + x].index != e->b[b->b0 + y].index ||
                l->b[a->b0 + x].count < e->b[b->b0 + y].count)
                return 0;
        }
        j++;
    }
    return j == e->nfn;
}

/* One function's gain since the last snapshot, into its process's table. */
static void merge_add_fn(struct merger *m, struct mproc *p, const struct msnap *s, struct mfn *f,
                         const struct msnap *e, const struct mfn *was)
{
    f->slot = was ? was->slot : merge_slot(m, p, f->addr);
    uint64_t calls = f->calls - (was ? was->calls : 0);
    if (f->slot == MERGE_NO_SLOT) {
        p->over = merge_sat(p->over, calls);
        p->lossy = 1;
        return;
    }
    struct mtotal *d = &p->fn[f->slot];
    d->calls = merge_sat(d->calls, calls);
    d->incl = merge_sat(d->incl, f->incl - (was ? was->incl : 0));
    d->self = merge_sat(d->self, f->self - (was ? was->self : 0));
    d->min = f->min < d->min ? f->min : d->min;
    d->max = f->max > d->max ? f->max : d->max;
    for (uint32_t k = 0, y = 0, at = 0; k < f->nb; k++) {
        const struct mbucket *b = &s->b[f->b0 + k];
        uint64_t before = 0;
        while (was && y < was->nb && e->b[was->b0 + y].index < b->index)
            y++;
        if (was && y < was->nb && e->b[was->b0 + y].index == b->index)
            before = e->b[was->b0 + y].count;
        if (b->count > before && merge_bucket_add(m, d, &at, b->index, b->count - before) < 0)
            p->lossy = 1; /* the calls are counted; their bucket is not: the row says so */
    }
}

/* END of a thread's snapshot: what it gained goes into its process's table. */
static int merge_finish(struct merger *m, struct mthread *t, uint64_t ts, uint64_t seq, uint64_t tracer,
                        unsigned ends)
{
    struct msnap *s = &t->pend, *e = &t->last;
    struct mproc *p = &m->p[t->proc];
    if (seq != s->seq || s->nfn != s->said || (s->nfn && !s->have_times))
        return 1;
    if (t->have_last && s->seq == 1)
        t->have_last = 0; /* a new table under the same tid (exec) */
    int have = t->have_last;
    if (have && (s->seq <= e->seq || s->calls < e->calls || s->over < e->over || s->deep < e->deep ||
                 s->unmatched < e->unmatched || tracer < e->tracer || (!t->spilled && !merge_holds(s, e))))
        return 1;
    if (!have && !t->spilled)
        p->threads++;
    if (t->spilled) {
        p->over = merge_sat(p->over, s->calls - (have ? e->calls : 0));
        p->lossy = 1;
    } else {
        for (uint32_t i = 0, j = 0; i < s->nfn; i++) {
            const struct mfn *was = have && j < e->nfn && e->fn[j].addr == s->fn[i].addr ? &e->fn[j++] : NULL;
            merge_add_fn(m, p, s, &s->fn[i], e, was);
        }
        /* The thread's table filled up now: it holds what it will hold, and
         * the process's functions it lacks may have calls in its META. */
        if (s->over && !(have && e->over)) {
            p->full++;
            for (uint32_t i = 0; i < s->nfn; i++)
                if (s->fn[i].slot != MERGE_NO_SLOT)
                    p->fn[s->fn[i].slot].in_full++;
        }
    }
    p->over = merge_sat(p->over, s->over - (have ? e->over : 0));
    p->deep = merge_sat(p->deep, s->deep - (have ? e->deep : 0));
    p->unmatched = merge_sat(p->unmatched, s->unmatched - (have ? e->unmatched : 0));
    p->tracer = merge_sat(p->tracer, tracer - (have ? e->tracer : 0));
    p->end_ts = ts > p->end_ts ? ts : p->end_ts;
    p->dirty = 1;
    p->exited |= ends == (TRACE_SUMMARY_ENDS | TRACE_SUMMARY_PROCESS_EXIT);
    s->tracer = tracer;
    s->end_ts = ts;
    struct msnap x = *e;
    *e = *s;
    *s = x;
    msnap_clear(s);
    t->have_last = 1;
    m->merged++;
    return 0;
}

/* A summary record of a thread being merged. */
static void merge_record(struct merger *m, struct mthread *t, const unsigned char *r)
{
    uint64_t ts = wire_le64(r), func = wire_le64(r + 8), site = wire_le64(r + 16);
    unsigned part = r[offsetof(trace_event_t, pad)];
    if (part == TRACE_SUMMARY_BEGIN) {
        m->damaged += (uint64_t)t->reading; /* the one before never ended */
        msnap_clear(&t->pend);
        t->pend.seq = func;
        t->pend.said = site;
        t->reading = 1;
        return;
    }
    if (!t->reading)
        return;
    unsigned ends = r[offsetof(trace_event_t, pad) + 1];
    int bad = part == TRACE_SUMMARY_END ? merge_finish(m, t, ts, func, site, ends)
                                        : merge_part(m, t, part, ts, func, site);
    if (bad || part == TRACE_SUMMARY_END) {
        m->damaged += (uint64_t)bad;
        t->reading = 0;
        msnap_clear(&t->pend);
    }
}

/*
 * Take the summary records of merged threads out of n bytes of records
 * (little-endian), noting which process each thread is in and which exit;
 * the rest stays, in order.  The new length.
 */
static long merge_take(struct merger *m, unsigned char *raw, long n)
{
    long w = 0;
    for (long off = 0; off < n; off += TRACE_EVENT_SIZE) {
        const unsigned char *r = raw + off;
        unsigned kind = r[offsetof(trace_event_t, kind)];
        if (kind == TRACE_KIND_MARKER || kind == TRACE_KIND_SUMMARY) { /* enter and exit pass untouched */
            uint32_t tid = wire_le32(r + offsetof(trace_event_t, tid));
            uint64_t code = wire_le64(r + 8), payload = wire_le64(r + 16);
            if (kind == TRACE_KIND_MARKER && code == TRACE_MARK_PROCESS && payload <= UINT32_MAX) {
                merge_forget(m, tid); /* a new thread, or one forked: it starts again */
                merge_thread(m, tid, 1, (uint32_t)payload);
            } else if (kind == TRACE_KIND_MARKER && code == TRACE_MARK_THREAD_EXIT) {
                merge_forget(m, tid);
            } else if (kind == TRACE_KIND_SUMMARY) {
                struct mthread *t = merge_thread(m, tid, 0, 0); /* merged from its start, or never */
                if (t) {
                    m->seen = 1;
                    merge_record(m, t, r);
                    continue;
                }
            }
        }
        if (w != off)
            memmove(raw + w, r, TRACE_EVENT_SIZE);
        w += TRACE_EVENT_SIZE;
    }
    return w;
}

/* Which end the merged snapshot is (END's pad[1], trace.h): the process's
 * exit once a thread's snapshot from it came, else periodic. */
static unsigned char merge_end_flag(const struct mproc *p)
{
    return (unsigned char)(TRACE_SUMMARY_ENDS | (p->exited ? TRACE_SUMMARY_PROCESS_EXIT : TRACE_SUMMARY_PERIODIC));
}

/* A merged record into buf at *len (little-endian, as the wire). */
static void merge_put_at(unsigned char *buf, size_t *len, uint32_t tid, unsigned kind, unsigned part, uint64_t ts,
                         uint64_t func, uint64_t site)
{
    unsigned char *r = buf + *len;
    memset(r, 0, TRACE_EVENT_SIZE);
    wire_put_le64(r, ts);
    wire_put_le64(r + 8, func);
    wire_put_le64(r + 16, site);
    wire_put_le32(r + offsetof(trace_event_t, tid), tid);
    r[offsetof(trace_event_t, kind)] = (unsigned char)kind;
    r[offsetof(trace_event_t, pad)] = (unsigned char)part;
    *len += TRACE_EVENT_SIZE;
}

static void merge_put(struct merger *m, uint32_t tid, unsigned kind, unsigned part, uint64_t ts, uint64_t func,
                      uint64_t site)
{
    merge_put_at(m->out, &m->out_len, tid, kind, part, ts, func, site);
}

/* A new connection: increments start again from zero (trace_shm.h). */
static void merge_new_connection(struct merger *m)
{
    for (uint32_t i = 0; i < m->np; i++) {
        m->p[i].dirty |= m->p[i].seq > 0; /* what the last connection got may not have arrived */
        for (uint32_t k = 0; k < m->p[i].nfn; k++) {
            struct mtotal *d = &m->p[i].fn[k];
            d->sent_calls = d->sent_incl = d->sent_self = 0;
            d->sent_lower = 0;
            for (uint32_t b = 0; b < d->nbk; b++)
                d->bk[b].sent = 0;
        }
    }
}

/* The increments built so far as one chunk, in planes. */
static int merge_inc_flush(struct sender *s, struct merger *m)
{
    size_t n = m->inc_len / TRACE_EVENT_SIZE;
    long held = (long)m->out_len; /* the markers first: they bind the merged tid to its process */
    m->inc_len = m->out_len = 0;
    if (held && send_records(s, m->out, held))
        return -1;
    if (!n || s->sock < 0)
        return 0; /* a cut: the processes are due again, whole, on the next connection */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < TRACE_EVENT_SIZE; k++)
            s->raw[k * n + i] = m->inc[i * TRACE_EVENT_SIZE + k];
    /* Not counted among the stream's records (sent, discarded, resume): a
     * lost increment is superseded, not lost; serve does not count them either. */
    int rc = send_chunk(s, TRACE_CHUNK_SUMMARY_INCREMENTS, s->raw, n * TRACE_EVENT_SIZE);
    if (rc < 0)
        return -1;
    if (rc == 1)
        return sender_lost(s);
    m->inc_sent += n;
    s->chunks++;
    return 0;
}

static int merge_inc(struct sender *s, struct merger *m, uint32_t tid, unsigned part, uint64_t ts, uint64_t func,
                     uint64_t site)
{
    if (m->inc_len + TRACE_EVENT_SIZE > CHUNK_RAW && merge_inc_flush(s, m))
        return -1;
    merge_put_at(m->inc, &m->inc_len, tid, TRACE_KIND_SUMMARY, part, ts, func, site);
    return 0;
}

/* A function's buckets that gained since it was last sent, as increments. */
static int merge_inc_buckets(struct sender *s, struct merger *m, uint32_t tid, struct mtotal *d)
{
    uint32_t held = TRACE_SUMMARY_NO_BUCKET;
    uint64_t held_n = 0;
    for (uint32_t k = 0; k <= d->nbk; k++) {
        int last = k == d->nbk;
        if (!last && d->bk[k].count == d->bk[k].sent)
            continue;
        uint64_t n = last ? 0 : d->bk[k].count - d->bk[k].sent;
        if (!last && held == TRACE_SUMMARY_NO_BUCKET) {
            held = d->bk[k].index, held_n = n;
            continue;
        }
        if (held == TRACE_SUMMARY_NO_BUCKET)
            break;
        uint64_t pair = (uint64_t)held << 32 | (last ? TRACE_SUMMARY_NO_BUCKET : d->bk[k].index);
        if (merge_inc(s, m, tid, TRACE_SUMMARY_BUCKETS, held_n, n, pair))
            return -1;
        held = TRACE_SUMMARY_NO_BUCKET;
    }
    for (uint32_t k = 0; k < d->nbk; k++)
        d->bk[k].sent = d->bk[k].count;
    return 0;
}

/* The buffer increments are built in; 0, or -1 (then whole snapshots go
 * instead).  What was sent of each function is kept beside its counts. */
static int merge_inc_room(struct merger *m, struct mproc *p)
{
    (void)p;
    if (!m->inc && !(m->inc = malloc(CHUNK_RAW)))
        return -1;
    return 0;
}

/* FUNC's pad[1] (trace.h): TRACE_SUMMARY_FUNC_LOWER for a lower bound. */
static void merge_mark_lower(unsigned char *buf, size_t len, int lower)
{
    buf[len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = (unsigned char)(lower ? TRACE_SUMMARY_FUNC_LOWER : 0);
}

/* One process's merged table as increments since it was last sent on this
 * connection (TRACE_CHUNK_SUMMARY_INCREMENTS): what changed only (a row
 * that became a lower bound has changed).  -1 fatal. */
static int merge_emit_inc(struct sender *s, struct merger *m, struct mproc *p, uint32_t tid, uint64_t seq)
{
    uint64_t listed = 0;
    for (uint32_t i = 0; i < p->nfn; i++)
        listed += p->fn[i].calls != p->fn[i].sent_calls || (p->fn[i].calls && merge_lower(p, &p->fn[i]) != p->fn[i].sent_lower);
    if (merge_inc(s, m, tid, TRACE_SUMMARY_BEGIN, p->end_ts, seq, listed))
        return -1;
    for (uint32_t i = 0; i < p->nfn; i++) {
        struct mtotal *d = &p->fn[i];
        int lower = merge_lower(p, d);
        if (d->calls == d->sent_calls && (!d->calls || lower == d->sent_lower))
            continue;
        if (merge_inc(s, m, tid, TRACE_SUMMARY_FUNC, d->incl - d->sent_incl, d->addr, d->calls - d->sent_calls))
            return -1;
        merge_mark_lower(m->inc, m->inc_len, lower);
        if (merge_inc(s, m, tid, TRACE_SUMMARY_TIMES, d->self - d->sent_self, d->min, d->max) ||
            merge_inc_buckets(s, m, tid, d))
            return -1;
        d->sent_calls = d->calls, d->sent_incl = d->incl, d->sent_self = d->self;
        d->sent_lower = lower;
    }
    if (merge_inc(s, m, tid, TRACE_SUMMARY_META, p->over, p->deep, p->unmatched))
        return -1;
    m->inc[m->inc_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = TRACE_SUMMARY_META_LOWER_SAID;
    if (merge_inc(s, m, tid, TRACE_SUMMARY_END, p->end_ts, seq, p->tracer))
        return -1;
    m->inc[m->inc_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = merge_end_flag(p);
    return 0;
}

/* "26 threads" as a THREAD_NAME marker's two words (trace.h). */
static void merge_name(uint32_t threads, uint64_t *lo, uint64_t *hi)
{
    char name[16] = {0};
    snprintf(name, sizeof name, "%" PRIu32 " threads", threads);
    *lo = *hi = 0;
    for (int i = 7; i >= 0; i--) {
        *lo = *lo << 8 | (unsigned char)name[i];
        *hi = *hi << 8 | (unsigned char)name[8 + i];
    }
}


/* Room for k more records in m->out, sending what it holds if need be. */
static int merge_out_room(struct sender *s, struct merger *m, size_t k)
{
    if (m->out_len + k * TRACE_EVENT_SIZE <= CHUNK_RAW)
        return 0;
    long n = (long)m->out_len;
    m->out_len = 0;
    return send_records(s, m->out, n);
}

/* One process's merged table as a snapshot (trace.h's parts, in order). */
static int merge_emit_proc(struct sender *s, struct merger *m, struct mproc *p)
{
    uint32_t tid = TRACE_SUMMARY_MERGED_TID | (p->pid & ~TRACE_SUMMARY_MERGED_TID);
    uint64_t lo, hi, ts = p->end_ts, seq = ++p->seq, nfn = 0;
    for (uint32_t i = 0; i < p->nfn; i++)
        nfn += p->fn[i].calls > 0;
    merge_name(p->threads, &lo, &hi);
    if (merge_out_room(s, m, 3))
        return -1;
    if (p->pid)
        merge_put(m, tid, TRACE_KIND_MARKER, 0, ts, TRACE_MARK_PROCESS, p->pid);
    merge_put(m, tid, TRACE_KIND_MARKER, 0, hi, TRACE_MARK_THREAD_NAME, lo);
    if (s->peer.sum_inc && merge_inc_room(m, p) == 0) {
        p->dirty = 0;
        m->sent++;
        return merge_emit_inc(s, m, p, tid, seq);
    }
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_BEGIN, ts, seq, nfn);
    for (uint32_t i = 0; i < p->nfn; i++) {
        const struct mtotal *d = &p->fn[i];
        if (!d->calls)
            continue;
        if (merge_out_room(s, m, 2))
            return -1;
        merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_FUNC, d->incl, d->addr, d->calls);
        merge_mark_lower(m->out, m->out_len, merge_lower(p, d));
        merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_TIMES, d->self, d->min, d->max);
        for (uint32_t k = 0; k < d->nbk; k += 2) { /* buckets in pairs, index order; none is zero */
            if (merge_out_room(s, m, 1))
                return -1;
            int two = k + 1u < d->nbk;
            merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_BUCKETS, d->bk[k].count, two ? d->bk[k + 1].count : 0,
                      (uint64_t)d->bk[k].index << 32 | (two ? d->bk[k + 1].index : TRACE_SUMMARY_NO_BUCKET));
        }
    }
    if (merge_out_room(s, m, 2))
        return -1;
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_META, p->over, p->deep, p->unmatched);
    m->out[m->out_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = TRACE_SUMMARY_META_LOWER_SAID;
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_END, ts, seq, p->tracer);
    m->out[m->out_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = merge_end_flag(p);
    p->dirty = 0;
    m->sent++;
    return 0;
}

/* Every process that gained something since its last merged snapshot:
 * each --summary-ms, and at the end (force).  Only while connected: a
 * process's table is kept, so the next one sent holds it all.  0 or -1. */
static int merge_emit(struct sender *s, struct merger *m, int force)
{
    uint64_t now = now_ms();
    if (s->sock < 0 || (!force && now < m->next_ms && m->out_len < CHUNK_RAW / 2))
        return 0;
    m->next_ms = now + (uint64_t)s->o->summary_ms;
    for (uint32_t i = 0; i < m->np && s->peer.sum_ok; i++)
        if (m->p[i].used && m->p[i].dirty && merge_emit_proc(s, m, &m->p[i]) < 0)
            return -1;
    long n = (long)m->out_len;
    m->out_len = 0;
    int rc = n ? send_records(s, m->out, n) : 0;
    if (rc == 0)
        rc = merge_inc_flush(s, m);
    for (uint32_t i = 0; i < m->np && s->sock < 0; i++)
        m->p[i].dirty |= m->p[i].seq > 0; /* cut on the way: send it all again */
    return rc;
}

/* In a summary stream the ring carries little but markers (each thread's
 * flush says how long it took), in batches of a record or two: sent one
 * chunk each, their headers and frames would cost more than the merged
 * snapshots.  They wait in m->out for the next merged snapshot instead
 * (order per thread kept), at most --summary-ms.  0, or -1 fatal. */
static int merge_hold(struct sender *s, struct merger *m, unsigned char *raw, long n)
{
    if (m->out_len + (size_t)n > CHUNK_RAW / 2) { /* full: what waits goes first, in order */
        long held = (long)m->out_len;
        m->out_len = 0;
        if (send_records(s, m->out, held))
            return -1;
        if ((size_t)n > CHUNK_RAW / 2)
            return send_records(s, raw, n);
    }
    memcpy(m->out + m->out_len, raw, (size_t)n);
    m->out_len += (size_t)n;
    return 0;
}

/* Something is still to be sent: a process that gained (to a server
 * that takes them), or held records. */
static int merge_due(const struct sender *s)
{
    const struct merger *m = s->merge;
    for (uint32_t i = 0; i < m->np && s->peer.sum_ok; i++)
        if (m->p[i].used && m->p[i].dirty)
            return 1;
    return m->out_len > 0;
}

static void merge_free(struct merger *m)
{
    while (m->nt)
        merge_forget(m, m->t[0].tid);
    free(m->t);
    for (uint32_t i = 0; i < m->np; i++) {
        for (uint32_t k = 0; k < m->p[i].nfn; k++)
            free(m->p[i].fn[k].bk);
        free(m->p[i].fn);
        free(m->p[i].hash);
    }
    free(m->out);
    free(m->inc);
    memset(m, 0, sizeof *m);
}
