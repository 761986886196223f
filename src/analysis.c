/*
 * analysis.c - the analyzer's streaming pass (see analysis.h).
 *
 * Each series is read once, file after file through trace_reader's fixed
 * buffer.  Enter/exit records go to their thread's callstack, whose
 * completed calls land in funcstats; markers go to the source's notes and
 * loss counters.  When a series ends its threads are closed (what is still
 * open counts as unclosed), their notes are kept as text, and their stacks
 * are freed.
 */
#include "analysis.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "callstack.h"
#include "trace.h"
#include "trace_reader.h"

enum source_kind { SOURCE_PID = 0, SOURCE_STREAM = 1 };

/* Capture-stop and wrap markers: codes 1..5. */
#define CAPTURE_CODES 6

struct analysis_source {
    enum source_kind kind;
    uint32_t id;
    int have_anchor;
    uint64_t anchor_ticks, anchor_ns;
    int have_device;
    uint64_t device_dropped; /* last TRACE_MARK_DEVICE_DROPPED payload */
    uint64_t thread_lost;    /* sum of TRACE_MARK_THREAD_LOST payloads */
    uint64_t capture_count[CAPTURE_CODES];
    uint64_t capture_payload[CAPTURE_CODES]; /* first one; wrap: the sum */
    uint64_t gaps, gap_events, gaps_unknown;
    char **notes; /* thread and series notes, in the order found */
    size_t nnotes, capnotes;
};

struct thread {
    uint32_t tid;
    struct callstack cs;
};

/* The state of the series being read. */
struct series_run {
    struct analysis *a;
    const struct trace_series *s;
    size_t src;             /* position in a->src, valid once have_src */
    int have_src;
    struct thread *threads; /* live threads of this series */
    size_t nthreads, capthreads;
    struct u64map tids; /* tid -> position in threads */
    size_t last;        /* cache: the thread of the previous event */
    int wrapped;
    uint64_t segs_missing;
    int have_seq;
    uint32_t prev_seq;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

void analysis_init(struct analysis *a, FILE *diag, const char *prog)
{
    memset(a, 0, sizeof *a);
    funcstats_init(&a->funcs);
    a->diag = diag;
    a->prog = prog;
}

void analysis_free(struct analysis *a)
{
    for (size_t i = 0; i < a->nsrc; i++) {
        for (size_t j = 0; j < a->src[i].nnotes; j++)
            free(a->src[i].notes[j]);
        free(a->src[i].notes);
    }
    free(a->src);
    u64map_free(&a->src_index);
    u64map_free(&a->threads_seen);
    funcstats_free(&a->funcs);
}

static void diag(struct analysis *a, const char *path, const char *fmt, ...)
{
    va_list ap;
    if (!a->diag)
        return;
    fprintf(a->diag, "%s: %s: ", a->prog, path);
    va_start(ap, fmt);
    vfprintf(a->diag, fmt, ap);
    va_end(ap);
    fputc('\n', a->diag);
}

/* The source's position, created on first sight; -1 out of memory. */
static long source_of(struct analysis *a, enum source_kind kind, uint32_t id)
{
    uint64_t key = (uint64_t)kind << 32 | id;
    uint32_t pos;
    if (u64map_get(&a->src_index, key, &pos))
        return pos;
    if (a->nsrc == a->capsrc) {
        size_t cap = a->capsrc ? a->capsrc * 2 : 16;
        struct analysis_source *v = realloc(a->src, cap * sizeof *v);
        if (!v)
            return -1;
        a->src = v;
        a->capsrc = cap;
    }
    if (u64map_put(&a->src_index, key, (uint32_t)a->nsrc) < 0)
        return -1;
    memset(&a->src[a->nsrc], 0, sizeof a->src[a->nsrc]);
    a->src[a->nsrc].kind = kind;
    a->src[a->nsrc].id = id;
    return (long)a->nsrc++;
}

/* The source a series belongs to; loose files say it in their header. */
static long source_of_series(struct analysis *a, const struct trace_series *s,
                             const struct trace_reader *r)
{
    switch (s->kind) {
    case TRACE_SERIES_LOCAL:
        return source_of(a, SOURCE_PID, s->id);
    case TRACE_SERIES_STREAM:
        return source_of(a, SOURCE_STREAM, s->id);
    default:
        return source_of(a, SOURCE_PID, r->hdr.pid);
    }
}

static const char *source_word(const struct analysis_source *src)
{
    return src->kind == SOURCE_STREAM ? "stream" : "pid";
}

static void add_note(struct analysis *a, size_t src, const char *fmt, ...)
{
    struct analysis_source *s = &a->src[src];
    char buf[512];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "note: %s %u: ", source_word(s), s->id);
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (s->nnotes == s->capnotes) {
        size_t cap = s->capnotes ? s->capnotes * 2 : 8;
        char **v = realloc(s->notes, cap * sizeof *v);
        if (!v) {
            a->oom = 1;
            return;
        }
        s->notes = v;
        s->capnotes = cap;
    }
    if (!(s->notes[s->nnotes] = strdup(buf)))
        a->oom = 1;
    else
        s->nnotes++;
}

/* ---- anchors ------------------------------------------------------------ */

/* Search one series' last segments, newest first, for the last exit clock
 * anchor within ANALYSIS_ANCHOR_TAIL bytes of records. */
static void find_series_anchor(struct analysis *a, const struct trace_series *s,
                               struct trace_reader *r)
{
    uint64_t budget = ANALYSIS_ANCHOR_TAIL;
    char msg[128];
    for (size_t i = s->nsegs; i-- > 0 && budget >= TRACE_EVENT_SIZE;) {
        if (trace_reader_open(r, s->segs[i].path, msg, sizeof msg) < 0)
            continue; /* the main pass reports it */
        long src = source_of_series(a, s, r);
        int ticks = r->ticks;
        uint64_t body = (r->file_size - r->hdr.header_size) / TRACE_EVENT_SIZE * TRACE_EVENT_SIZE;
        int found = 0;
        uint64_t ticks_at = 0, ns_at = 0;
        trace_event_t ev;
        if (src >= 0 && ticks && trace_reader_seek_tail(r, budget) == 0)
            while (trace_reader_next(r, &ev) == TRACE_READER_EVENT)
                if (ev.kind == TRACE_KIND_MARKER && ev.func == TRACE_MARK_CLOCK_ANCHOR) {
                    found = 1;
                    ticks_at = ev.ts;
                    ns_at = ev.call_site;
                }
        trace_reader_close(r);
        if (src < 0) {
            a->oom = 1;
            return;
        }
        if (!ticks)
            return; /* ns timestamps need no anchor */
        if (found) {
            struct analysis_source *so = &a->src[src];
            if (!so->have_anchor || ticks_at > so->anchor_ticks) {
                so->have_anchor = 1;
                so->anchor_ticks = ticks_at;
                so->anchor_ns = ns_at;
            }
            return;
        }
        budget -= body < budget ? body : budget;
    }
}

void analysis_find_anchors(struct analysis *a, const struct trace_files *tf)
{
    struct trace_reader *r = malloc(sizeof *r);
    if (!r) {
        a->oom = 1;
        return;
    }
    /* Sources in series order, so that notes come out in that order. */
    for (size_t i = 0; i < tf->nseries; i++) {
        const struct trace_series *s = &tf->series[i];
        if (s->kind != TRACE_SERIES_LOOSE &&
            source_of(a, s->kind == TRACE_SERIES_STREAM ? SOURCE_STREAM : SOURCE_PID, s->id) < 0)
            a->oom = 1;
    }
    /* A process writes its anchor when it exits, most likely from its main
     * thread (tid == pid): look there first, elsewhere only if needed. */
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < tf->nseries; i++) {
            const struct trace_series *s = &tf->series[i];
            int main_first = s->kind != TRACE_SERIES_LOCAL || s->tid == s->id;
            if (round == 0 ? !main_first : main_first)
                continue;
            uint32_t pos;
            if (s->kind == TRACE_SERIES_LOCAL && u64map_get(&a->src_index, s->id, &pos) &&
                a->src[pos].have_anchor)
                continue;
            find_series_anchor(a, s, r);
        }
    free(r);
}

/* ---- the main pass ------------------------------------------------------ */

static void on_call(void *ctx, uint64_t func, uint64_t incl_ns, uint64_t self_ns)
{
    funcstats_add_call(ctx, (uint32_t)func, incl_ns, self_ns);
}

/* The thread of tid in this series, created if `create`; NULL if absent
 * or out of memory. */
static struct thread *thread_of(struct series_run *run, uint32_t tid, int create)
{
    uint32_t pos;
    if (run->last < run->nthreads && run->threads[run->last].tid == tid)
        return &run->threads[run->last];
    if (u64map_get(&run->tids, tid, &pos)) {
        run->last = pos;
        return &run->threads[pos];
    }
    if (!create)
        return NULL;
    if (run->nthreads == run->capthreads) {
        size_t cap = run->capthreads ? run->capthreads * 2 : 8;
        struct thread *v = realloc(run->threads, cap * sizeof *v);
        if (!v)
            goto oom;
        run->threads = v;
        run->capthreads = cap;
    }
    if (u64map_put(&run->tids, tid, (uint32_t)run->nthreads) < 0)
        goto oom;
    struct thread *t = &run->threads[run->nthreads];
    t->tid = tid;
    callstack_init(&t->cs, CALLSTACK_MAX_DEPTH, on_call, &run->a->funcs);
    run->last = run->nthreads++;
    return t;
oom:
    run->a->oom = 1;
    return NULL;
}

static int32_t low_half(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static void on_marker(struct series_run *run, const trace_event_t *ev)
{
    struct analysis_source *src = &run->a->src[run->src];
    struct thread *t;
    uint64_t code = ev->func, payload = ev->call_site;

    if (code >= TRACE_MARK_BUDGET && code <= TRACE_MARK_WRAP) {
        if (code == TRACE_MARK_WRAP || !src->capture_count[code])
            src->capture_payload[code] =
                code == TRACE_MARK_WRAP ? sat_add(src->capture_payload[code], payload) : payload;
        src->capture_count[code]++;
        return;
    }
    switch (code) {
    case TRACE_MARK_THREAD_LOST:
        src->thread_lost = sat_add(src->thread_lost, payload);
        if ((t = thread_of(run, ev->tid, 1)))
            callstack_lost(&t->cs, payload);
        break;
    case TRACE_MARK_THREAD_RESYNC:
        if ((t = thread_of(run, ev->tid, 1)))
            callstack_resync(&t->cs, low_half(payload), low_half(payload >> 32));
        break;
    case TRACE_MARK_DEVICE_DROPPED:
        src->have_device = 1;
        src->device_dropped = payload;
        break;
    case TRACE_MARK_STREAM_GAP:
        src->gaps++;
        src->gap_events = sat_add(src->gap_events, payload);
        src->gaps_unknown += payload == 0;
        break;
    case TRACE_MARK_THREAD_EXIT:
        if ((t = thread_of(run, ev->tid, 0)))
            callstack_reset(&t->cs);
        break;
    default:
        break; /* the clock anchor was used by the pre-pass; others unknown */
    }
}

static void on_call_event(struct series_run *run, const struct trace_reader *r,
                          const trace_event_t *ev)
{
    struct analysis *a = run->a;
    int64_t ns = trace_reader_ns(r, ev->ts);
    uint32_t id;
    struct thread *t;

    a->events++;
    if (a->events == 1 || ns < a->first_ns)
        a->first_ns = ns;
    if (a->events == 1 || ns > a->last_ns)
        a->last_ns = ns;
    uint64_t key = (uint64_t)run->src << 32 | ev->tid;
    uint32_t seen;
    if (!u64map_get(&a->threads_seen, key, &seen) && u64map_put(&a->threads_seen, key, 0) < 0)
        a->oom = 1;
    if (funcstats_id(&a->funcs, ev->func - r->hdr.load_bias, &id) < 0 ||
        !(t = thread_of(run, ev->tid, 1))) {
        a->oom = 1;
        return;
    }
    if (ev->kind == TRACE_KIND_ENTER)
        callstack_enter(&t->cs, id, ns);
    else
        callstack_exit(&t->cs, id, ns);
}

static void read_segment(struct series_run *run, const struct trace_segment *seg,
                         struct trace_reader *r)
{
    struct analysis *a = run->a;
    char msg[128];
    if (trace_reader_open(r, seg->path, msg, sizeof msg) < 0) {
        diag(a, seg->path, "%s; skipped", msg);
        a->files_bad++;
        return;
    }
    if (!run->have_src) {
        long src = source_of_series(a, run->s, r);
        if (src < 0) {
            a->oom = 1;
            trace_reader_close(r);
            return;
        }
        run->src = (size_t)src;
        run->have_src = 1;
    }
    const struct analysis_source *src = &a->src[run->src];
    if (src->have_anchor)
        trace_reader_set_anchor(r, src->anchor_ticks, src->anchor_ns);
    run->wrapped |= !!(r->hdr.flags & TRACE_FLAG_WRAPPED);
    if (run->have_seq && seg->seq > run->prev_seq + 1)
        run->segs_missing += seg->seq - run->prev_seq - 1;
    run->have_seq = 1;
    run->prev_seq = seg->seq;
    a->files_read++;

    trace_event_t ev;
    enum trace_reader_status st;
    while ((st = trace_reader_next(r, &ev)) == TRACE_READER_EVENT) {
        if (ev.kind == TRACE_KIND_ENTER || ev.kind == TRACE_KIND_EXIT)
            on_call_event(run, r, &ev);
        else if (ev.kind == TRACE_KIND_MARKER)
            on_marker(run, &ev);
    }
    if (st == TRACE_READER_TRUNCATED)
        diag(a, seg->path, "truncated: partial last record (%zu bytes) ignored", r->trailing);
    else if (st == TRACE_READER_IOERR)
        diag(a, seg->path, "read error: %s; rest of file skipped", strerror(r->err));
    trace_reader_close(r);
}

static void close_thread(struct series_run *run, struct thread *t)
{
    struct analysis *a = run->a;
    callstack_reset(&t->cs);
    const struct callstack_counts *c = &t->cs.c;
    a->unmatched_exits += c->unmatched_exits;
    a->unclosed_enters += c->unclosed_enters;
    if (c->lost_events || c->lost_frames || c->orphan_exits)
        add_note(a, run->src,
                 "thread %u lost %llu events (%llu open frames cut short, %llu orphaned exits)",
                 t->tid, (unsigned long long)c->lost_events, (unsigned long long)c->lost_frames,
                 (unsigned long long)c->orphan_exits);
    if (c->overflow_enters)
        add_note(a, run->src, "thread %u: call depth beyond %zu frames: %llu calls not timed",
                 t->tid, (size_t)CALLSTACK_MAX_DEPTH, (unsigned long long)c->overflow_enters);
    callstack_free(&t->cs);
}

static void series_label(const struct trace_series *s, char *buf, size_t len)
{
    if (s->kind == TRACE_SERIES_LOCAL)
        snprintf(buf, len, "thread %u: ", s->tid);
    else
        buf[0] = 0;
}

void analysis_run_series(struct analysis *a, const struct trace_series *s)
{
    struct series_run run;
    struct trace_reader *r = malloc(sizeof *r);
    if (!r) {
        a->oom = 1;
        return;
    }
    memset(&run, 0, sizeof run);
    run.a = a;
    run.s = s;
    for (size_t i = 0; i < s->nsegs; i++)
        read_segment(&run, &s->segs[i], r);
    free(r);
    if (run.have_src) {
        char label[32];
        series_label(s, label, sizeof label);
        if (run.wrapped)
            add_note(a, run.src, "%sflight recorder discarded earlier trace segments", label);
        if (run.segs_missing)
            add_note(a, run.src, "%s%llu trace segments missing", label,
                     (unsigned long long)run.segs_missing);
    }
    for (size_t i = 0; i < run.nthreads; i++)
        close_thread(&run, &run.threads[i]);
    free(run.threads);
    u64map_free(&run.tids);
}

/* ---- summary ------------------------------------------------------------ */

uint64_t analysis_dropped(const struct analysis *a)
{
    uint64_t total = 0;
    for (size_t i = 0; i < a->nsrc; i++) {
        const struct analysis_source *s = &a->src[i];
        /* The same lost events counted two ways: never add them. */
        uint64_t d = s->have_device && s->device_dropped > s->thread_lost ? s->device_dropped
                                                                         : s->thread_lost;
        total = sat_add(total, d);
    }
    return total;
}

static void write_source_notes(const struct analysis_source *s, FILE *out)
{
    const char *w = source_word(s);
    unsigned long long p[CAPTURE_CODES];
    for (int i = 0; i < CAPTURE_CODES; i++)
        p[i] = s->capture_payload[i];
    if (s->capture_count[TRACE_MARK_BUDGET])
        fprintf(out, "note: %s %u: capture stopped: byte budget %llu reached\n", w, s->id,
                p[TRACE_MARK_BUDGET]);
    if (s->capture_count[TRACE_MARK_DISK_FLOOR])
        fprintf(out, "note: %s %u: capture stopped: free disk below the floor of %llu bytes\n", w,
                s->id, p[TRACE_MARK_DISK_FLOOR]);
    if (s->capture_count[TRACE_MARK_WRITE_ERROR])
        fprintf(out, "note: %s %u: capture stopped: write error: %s (errno %llu)\n", w, s->id,
                p[TRACE_MARK_WRITE_ERROR] <= 4095 ? strerror((int)p[TRACE_MARK_WRITE_ERROR])
                                                  : "unknown error",
                p[TRACE_MARK_WRITE_ERROR]);
    if (s->capture_count[TRACE_MARK_EVENT_LIMIT])
        fprintf(out, "note: %s %u: capture stopped: event limit %llu reached\n", w, s->id,
                p[TRACE_MARK_EVENT_LIMIT]);
    if (s->capture_count[TRACE_MARK_WRAP])
        fprintf(out, "note: %s %u: flight recorder wrapped: %llu older events discarded\n", w,
                s->id, p[TRACE_MARK_WRAP]);
    if (s->gaps && !s->gaps_unknown)
        fprintf(out, "note: %s %u: stream gap: %llu events lost\n", w, s->id,
                (unsigned long long)s->gap_events);
    else if (s->gaps)
        fprintf(out, "note: %s %u: stream gap: %s%llu events lost, %llu gaps of unknown size\n", w,
                s->id, s->gap_events ? "at least " : "", (unsigned long long)s->gap_events,
                (unsigned long long)s->gaps_unknown);
    if (s->have_device)
        fprintf(out, "note: %s %u: device dropped %llu events\n", w, s->id,
                (unsigned long long)s->device_dropped);
    for (size_t i = 0; i < s->nnotes; i++)
        fprintf(out, "%s\n", s->notes[i]);
}

void analysis_write_summary(const struct analysis *a, FILE *out)
{
    uint64_t span = a->events && a->last_ns > a->first_ns
                        ? (uint64_t)a->last_ns - (uint64_t)a->first_ns
                        : 0;
    fprintf(out,
            "events=%llu threads=%llu functions=%llu span=%.6fs unmatched_exits=%llu "
            "unclosed_enters=%llu dropped=%llu\n",
            (unsigned long long)a->events, (unsigned long long)a->threads_seen.count,
            (unsigned long long)a->funcs.n, (double)span / 1e9,
            (unsigned long long)a->unmatched_exits, (unsigned long long)a->unclosed_enters,
            (unsigned long long)analysis_dropped(a));
    for (size_t i = 0; i < a->nsrc; i++)
        write_source_notes(&a->src[i], out);
}
