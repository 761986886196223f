/*
 * out_chrome.c - Chrome's trace-event JSON (see out_chrome.h).
 *
 * The pass hands us frames, notes and losses in each thread's order; each
 * becomes one fixed record in the temporary file (an instant's text
 * follows its record), read back once at the end and written as one JSON
 * event a line.  A frame's record is written when it opens and its
 * duration filled in when it closes (in the write buffer, or in the file
 * with pwrite when it has gone there), so the complete events of a thread
 * come in the order they start, each caller before its callees: viewers
 * that take events of one start time in file order (speedscope,
 * about:tracing, Perfetto's importer) then nest them right.
 *
 * The format's facts used: "ph" X (complete: ts and dur), i (instant, "s"
 * its scope), C (counter: process-local, one series per args key), M
 * (metadata: process_name, thread_name with args.name); ts and dur in
 * microseconds, fractions allowed; complete events in any order.
 */
#include "out_chrome.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advice.h"
#include "lib/textesc.h"
#include "notes.h"

enum rec_kind {
    REC_SLICE,       /* who: thread; func; ts, val: duration (ns) */
    REC_INSTANT,     /* who: thread, or the process when flags has REC_PROCESS; len bytes follow */
    REC_LOST,        /* who: thread; val: its events lost so far */
    REC_DEVICE,      /* who: process; val: the device's drops so far */
    REC_GAPS         /* who: process; val: events lost in stream gaps so far */
};
enum { REC_CUT = 1, REC_PLACEHOLDER = 2, REC_FLUSH = 4, REC_PROCESS = 8 };

struct rec {
    uint8_t kind, flags;
    uint16_t len;  /* REC_INSTANT: bytes of text after the record */
    uint32_t who;
    uint32_t func; /* REC_SLICE: funcstats id */
    uint32_t pad;
    int64_t ts;    /* ns, never negative */
    uint64_t val;
};

#define FLUSH_NAME "[callsight flush]"
#define LOST_NAME "[lost frames]"
#define CUT_ARG "no exit in the trace: closed at the thread's latest time"

int out_chrome_init(struct out_chrome *c, const struct analysis *a, const char *dir)
{
    memset(c, 0, sizeof *c);
    c->a = a;
    c->buf = malloc(OUT_CHROME_BUF);
    if (!c->buf) {
        errno = ENOMEM;
        return -1;
    }
    c->body = out_temp_file(dir, "chrome");
    return c->body ? 0 : -1;
}

void out_chrome_free(struct out_chrome *c)
{
    if (c->body)
        fclose(c->body);
    for (size_t i = 0; i < c->capthreads; i++)
        free(c->threads[i].open);
    free(c->threads);
    free(c->procs_used);
    free(c->gap_events);
    free(c->buf);
    memset(c, 0, sizeof *c);
}

/* v[i] of `size` bytes, zeroed when first reached; NULL (err set) oom. */
static void *slot(struct out_chrome *c, void *vp, size_t *cap, size_t i, size_t size)
{
    void **v = vp;
    if (i >= *cap) {
        size_t n = *cap ? *cap : 16;
        while (n <= i && n <= SIZE_MAX / 2)
            n *= 2;
        char *m = n > i && n <= SIZE_MAX / size ? realloc(*v, n * size) : NULL;
        if (!m) {
            c->err = ENOMEM;
            return NULL;
        }
        memset(m + *cap * size, 0, (n - *cap) * size);
        *v = m;
        *cap = n;
    }
    return (char *)*v + i * size;
}

static struct out_chrome_thread *thread_of(struct out_chrome *c, const struct analysis_thread *t)
{
    struct out_chrome_thread *th = slot(c, &c->threads, &c->capthreads, t->index, sizeof *th);
    if (th)
        th->used = 1;
    return th;
}

static void proc_used(struct out_chrome *c, uint32_t proc)
{
    unsigned char *u = slot(c, &c->procs_used, &c->capprocs, proc, 1);
    if (u)
        *u = 1;
}

/* The thread's time at ts: never before its latest, never negative. */
static int64_t thread_ts(struct out_chrome_thread *th, int64_t ts)
{
    if (ts < 0)
        ts = 0;
    if (th->have_ts && ts < th->last_ts)
        ts = th->last_ts;
    th->last_ts = ts;
    th->have_ts = 1;
    return ts;
}

static void pwrite_all(struct out_chrome *c, const void *p, size_t n, uint64_t off)
{
    const unsigned char *b = p;
    while (n && !c->err) {
        ssize_t w = pwrite(fileno(c->body), b, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->err = w < 0 ? errno : EIO;
            return;
        }
        b += w, n -= (size_t)w, off += (uint64_t)w;
    }
}

static void flush_buf(struct out_chrome *c)
{
    pwrite_all(c, c->buf, c->nbuf, c->buf_off);
    c->buf_off += c->nbuf;
    c->nbuf = 0;
}

/* Append the record (and its text); returns where it is in the file. */
static uint64_t put(struct out_chrome *c, const struct rec *r, const char *text)
{
    size_t n = sizeof *r + r->len;
    if (c->nbuf + n > OUT_CHROME_BUF)
        flush_buf(c);
    uint64_t at = c->buf_off + c->nbuf;
    memcpy(c->buf + c->nbuf, r, sizeof *r);
    if (r->len)
        memcpy(c->buf + c->nbuf + sizeof *r, text, r->len);
    c->nbuf += n;
    return at;
}

/* Fill in the flags and duration of the slice record at `at` (records
 * after an instant's text are not aligned: bytes are copied). */
static void patch(struct out_chrome *c, uint64_t at, uint8_t flags, uint64_t dur)
{
    if (at >= c->buf_off) {
        unsigned char *r = c->buf + (at - c->buf_off);
        memcpy(r + offsetof(struct rec, flags), &flags, 1);
        memcpy(r + offsetof(struct rec, val), &dur, sizeof dur);
        return;
    }
    pwrite_all(c, &flags, 1, at + offsetof(struct rec, flags));
    pwrite_all(c, &dur, sizeof dur, at + offsetof(struct rec, val));
}

/* A slice's record, its duration to come; where it is. */
static uint64_t open_slice(struct out_chrome *c, uint32_t thread, uint32_t func, unsigned flags, int64_t start)
{
    struct rec r = {.kind = REC_SLICE, .flags = (uint8_t)flags, .who = thread, .func = func, .ts = start};
    return put(c, &r, NULL);
}

static void close_slice(struct out_chrome *c, uint64_t at, unsigned flags, int64_t start, int64_t end)
{
    if (!(flags & REC_FLUSH)) {
        c->slices++;
        c->cut_slices += (flags & REC_CUT) != 0;
    }
    patch(c, at, (uint8_t)flags, (uint64_t)end - (uint64_t)start);
}

/* End a pending flush before the thread's next event at ts: at its own
 * end, or at ts when that comes first (a hostile duration must not drag
 * the thread's time along, nor leave the call it interrupted). */
static void settle_flush(struct out_chrome *c, struct out_chrome_thread *th, int64_t ts)
{
    if (!th->flush_open)
        return;
    th->flush_open = 0;
    close_slice(c, th->flush_at, REC_FLUSH, th->flush_start, th->flush_end < ts ? th->flush_end : ts);
}

static void on_open(void *ctx, const struct analysis_thread *t, const struct callstack *s,
                    struct callstack_frame *f)
{
    struct out_chrome *c = ctx;
    struct out_chrome_thread *th;
    (void)s;
    if (!f->tag.selected || !(th = thread_of(c, t)))
        return;
    int64_t ts = thread_ts(th, f->start);
    settle_flush(c, th, ts);
    struct out_chrome_open *o = slot(c, &th->open, &th->capopen, th->nopen, sizeof *o);
    if (!o)
        return;
    o->start = ts;
    o->at = open_slice(c, t->index, (uint32_t)f->func, f->placeholder ? REC_PLACEHOLDER : 0, ts);
    th->nopen++;
}

static void on_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                     int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct out_chrome *c = ctx;
    struct out_chrome_thread *th;
    (void)incl;
    (void)self;
    if (!f->tag.selected || !(th = thread_of(c, t)) || !th->nopen)
        return;
    ts = thread_ts(th, ts);
    settle_flush(c, th, ts);
    unsigned flags = (how == CALLSTACK_CUT ? REC_CUT : 0) | (f->placeholder ? REC_PLACEHOLDER : 0);
    const struct out_chrome_open *o = &th->open[--th->nopen];
    close_slice(c, o->at, flags, o->start, ts);
}

static void on_instant(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts,
                       const char *what)
{
    struct out_chrome *c = ctx;
    size_t n = strlen(what);
    struct rec r = {.kind = REC_INSTANT, .len = (uint16_t)(n > UINT16_MAX ? UINT16_MAX : n)};
    if (t) {
        struct out_chrome_thread *th = thread_of(c, t);
        if (!th)
            return;
        r.ts = thread_ts(th, ts);
        settle_flush(c, th, r.ts);
        r.who = t->index;
    } else {
        r.flags = REC_PROCESS;
        r.who = c->a->src[src].proc; /* a source's own notes: its default process */
        r.ts = ts < 0 ? 0 : ts;
        proc_used(c, r.who);
    }
    put(c, &r, what);
}

static void on_loss(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts, enum sink_loss what,
                    uint64_t n)
{
    struct out_chrome *c = ctx;
    struct rec r = {.ts = ts < 0 ? 0 : ts};
    if (what == SINK_LOSS_THREAD) {
        struct out_chrome_thread *th = t ? thread_of(c, t) : NULL;
        if (!th)
            return;
        r.ts = thread_ts(th, ts);
        th->lost = th->lost + n < th->lost ? UINT64_MAX : th->lost + n;
        r.kind = REC_LOST;
        r.who = t->index;
        r.val = th->lost;
    } else {
        r.who = c->a->src[src].proc;
        proc_used(c, r.who);
        r.kind = what == SINK_LOSS_DEVICE ? REC_DEVICE : REC_GAPS;
        r.val = n;
        if (what == SINK_LOSS_GAP) {
            uint64_t *g = slot(c, &c->gap_events, &c->capsrc, src, sizeof *g);
            if (!g)
                return;
            *g = *g + n < *g ? UINT64_MAX : *g + n;
            r.val = *g;
        }
    }
    put(c, &r, NULL);
}

/* A flush shows as an event of its own inside whatever it interrupted. */
static void on_tracer(void *ctx, const struct analysis_thread *t, int64_t ts, uint64_t ns)
{
    struct out_chrome *c = ctx;
    struct out_chrome_thread *th = thread_of(c, t);
    if (!th)
        return;
    ts = thread_ts(th, ts);
    settle_flush(c, th, ts);
    th->flush_open = 1;
    th->flush_start = ts;
    th->flush_at = open_slice(c, t->index, 0, REC_FLUSH, ts);
    th->flush_end = ns > (uint64_t)(INT64_MAX - ts) ? INT64_MAX : ts + (int64_t)ns; /* untrusted */
}

struct sink out_chrome_sink(struct out_chrome *c)
{
    return (struct sink){.ctx = c, .open = on_open, .close = on_close, .instant = on_instant,
                         .loss = on_loss, .tracer = on_tracer};
}

/* ---- the document --------------------------------------------------------- */

struct doc {
    FILE *out;
    size_t events; /* written to traceEvents so far */
    size_t notes;
};

/* ns as microseconds with three decimals: exact. */
static void put_us(FILE *out, const char *key, uint64_t ns)
{
    fprintf(out, ",\"%s\":%llu.%03u", key, (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

/* The start of the next event: its separator, phase, name. */
static void event_head(struct doc *d, const char *ph, const char *cat, const char *name)
{
    fputs(d->events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"", d->out);
    fprintf(d->out, "%s\"", ph);
    if (cat)
        fprintf(d->out, ",\"cat\":\"%s\"", cat);
    fputs(",\"name\":", d->out);
    textesc_put_json(d->out, name);
}

static void put_ids(struct doc *d, uint32_t pid, uint32_t tid)
{
    fprintf(d->out, ",\"pid\":%u,\"tid\":%u", pid, tid);
}

static void put_meta(struct doc *d, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    event_head(d, "M", NULL, what);
    put_ids(d, pid, tid);
    fputs(",\"args\":{\"name\":", d->out);
    textesc_put_json(d->out, name);
    fputs("}}", d->out);
}

static void put_counter(struct doc *d, const char *name, uint32_t pid, uint32_t tid, int64_t ts, uint64_t n)
{
    event_head(d, "C", "loss", name);
    put_ids(d, pid, tid);
    put_us(d->out, "ts", ts < 0 ? 0 : (uint64_t)ts);
    fprintf(d->out, ",\"args\":{\"events\":%llu}}", (unsigned long long)n);
}

static void write_metadata(struct out_chrome *c, struct doc *d)
{
    const struct analysis *a = c->a;
    char label[64];
    for (size_t i = 0; i < c->capthreads && i < a->nthreads; i++)
        if (c->threads[i].used)
            proc_used(c, a->threads[i].proc);
    for (size_t i = 0; i < c->capprocs && i < a->nprocs; i++) {
        if (!c->procs_used[i])
            continue;
        out_process_label(a, (uint32_t)i, label, sizeof label);
        put_meta(d, "process_name", out_process_pid(a, (uint32_t)i), 0, label);
    }
    for (size_t i = 0; i < c->capthreads && i < a->nthreads; i++) {
        const struct analysis_thread *t = &a->threads[i];
        if (!c->threads[i].used)
            continue;
        analysis_thread_label(t, label, sizeof label);
        put_meta(d, "thread_name", out_process_pid(a, t->proc), t->tid, t->name[0] ? t->name : label);
    }
}

/* Each source's dropped count, as in the header: from 0 at the trace's
 * first event to its total at the last, on its default process. */
static void write_totals(struct out_chrome *c, struct doc *d)
{
    const struct analysis *a = c->a;
    for (size_t i = 0; i < a->nsrc; i++) {
        uint64_t n = analysis_source_dropped(&a->src[i]);
        if (!n)
            continue;
        uint32_t pid = out_process_pid(a, a->src[i].proc);
        put_counter(d, "dropped", pid, 0, a->first_ns, 0);
        put_counter(d, "dropped", pid, 0, a->last_ns > a->first_ns ? a->last_ns : a->first_ns, n);
    }
}

/* Its `who` is a thread (else a process). */
static int on_thread_rec(const struct rec *r)
{
    return !(r->flags & REC_PROCESS) && r->kind != REC_DEVICE && r->kind != REC_GAPS;
}

static void write_record(struct out_chrome *c, struct doc *d, const struct out_view *v, const struct rec *r,
                         const char *text)
{
    const struct analysis *a = c->a;
    const struct analysis_thread *t = on_thread_rec(r) ? &a->threads[r->who] : NULL;
    uint32_t pid = out_process_pid(a, t ? t->proc : r->who), tid = t ? t->tid : 0;
    char hex[32], name[64];
    switch (r->kind) {
    case REC_SLICE:
        event_head(d, "X", r->flags & REC_FLUSH ? "callsight" : "call",
                   r->flags & REC_FLUSH ? FLUSH_NAME
                   : r->flags & REC_PLACEHOLDER ? LOST_NAME : out_func_name(v, r->func, hex, sizeof hex));
        put_ids(d, pid, tid);
        put_us(d->out, "ts", (uint64_t)r->ts);
        put_us(d->out, "dur", r->val);
        fputs(r->flags & REC_CUT ? ",\"args\":{\"cut\":\"" CUT_ARG "\"}}" : "}", d->out);
        break;
    case REC_INSTANT:
        event_head(d, "i", "note", text);
        put_ids(d, pid, tid);
        put_us(d->out, "ts", (uint64_t)r->ts);
        fputs(t ? ",\"s\":\"t\"}" : ",\"s\":\"p\"}", d->out);
        break;
    case REC_LOST:
        snprintf(name, sizeof name, "tid %u lost", tid);
        put_counter(d, name, pid, tid, r->ts, r->val);
        break;
    default:
        put_counter(d, r->kind == REC_DEVICE ? "device dropped" : "stream gaps lost", pid, 0, r->ts, r->val);
        break;
    }
}

/* The records, read back in order and written as events. */
static void write_body(struct out_chrome *c, struct doc *d, const struct out_view *v)
{
    struct rec r;
    char text[UINT16_MAX + 1];
    flush_buf(c);
    if (c->err || fseek(c->body, 0, SEEK_SET) != 0) {
        c->err = errno;
        return;
    }
    while (!c->err && fread(&r, sizeof r, 1, c->body) == 1) {
        if (r.len && fread(text, 1, r.len, c->body) != r.len)
            break;
        text[r.len] = '\0';
        if (r.kind > REC_GAPS || r.who >= (on_thread_rec(&r) ? c->a->nthreads : c->a->nprocs) ||
            (r.kind == REC_SLICE && !(r.flags & (REC_FLUSH | REC_PLACEHOLDER)) && r.func >= c->a->funcs.n)) {
            c->err = EIO; /* our own file, damaged */
            return;
        }
        write_record(c, d, v, &r, text);
    }
    if (!c->err && ferror(c->body))
        c->err = EIO;
}

static void write_note(void *ctx, const char *note)
{
    struct doc *d = ctx;
    fputs(d->notes++ ? ",\n  " : "\n  ", d->out);
    textesc_put_json(d->out, note);
}

static void put_count(FILE *out, const char *key, uint64_t n)
{
    fprintf(out, "\"%s\":%llu,", key, (unsigned long long)n);
}

/* The header's counts and every note, the filter's line, and what the
 * events leave unsaid. */
static void write_other(struct out_chrome *c, struct doc *d, const struct out_view *v)
{
    const struct analysis *a = c->a;
    FILE *out = d->out;
    fputs("\"otherData\":{\"tool\":\"callsight\",", out);
    put_count(out, "events", a->events);
    put_count(out, "threads", a->threads_with_events);
    put_count(out, "functions", a->funcs.n);
    put_count(out, "span_ns", analysis_span(a));
    put_count(out, "unmatched_exits", a->unmatched_exits);
    put_count(out, "unclosed_enters", a->unclosed_enters);
    put_count(out, "dropped", analysis_dropped(a));
    put_count(out, "calls", a->calls);
    put_count(out, "calls_selected", a->calls_selected);
    put_count(out, "slices", c->slices);
    put_count(out, "cut_slices", c->cut_slices);
    fputs("\"notes\":[", out);
    notes_each(a, write_note, d);
    if (advice_each(v, write_note, d) < 0)
        c->err = ENOMEM;
    if (c->cut_slices) {
        char note[256];
        snprintf(note, sizeof note, "%llu slices have no exit in the trace (open at the end, cut by a loss or "
                 "an unmatched exit): each closes at its thread's latest time, with args.cut",
                 (unsigned long long)c->cut_slices);
        write_note(d, note);
    }
    if (a->filtering) {
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);
        if (m) {
            notes_write_filter(a, m);
            fclose(m);
        }
        if (!m || !line)
            c->err = ENOMEM;
        else {
            if (len && line[len - 1] == '\n')
                line[len - 1] = '\0';
            write_note(d, line);
        }
        free(line);
    }
    fputs(d->notes ? "\n]},\n" : "]},\n", out);
}

int out_chrome_finish(struct out_chrome *c, const struct out_view *v, FILE *out)
{
    struct doc d = {out, 0, 0};
    for (size_t i = 0; i < c->capthreads; i++) /* flushes still open at the end of their thread */
        settle_flush(c, &c->threads[i], c->threads[i].flush_end);
    if (c->err) {
        errno = c->err;
        return -1;
    }
    fputs("{\"displayTimeUnit\":\"ns\",\n", out);
    write_other(c, &d, v);
    fputs("\"traceEvents\":[", out);
    write_metadata(c, &d);
    write_totals(c, &d);
    write_body(c, &d, v);
    fputs("\n]}\n", out);
    if (!c->err && ferror(out))
        c->err = errno ? errno : EIO;
    if (c->err) {
        errno = c->err;
        return -1;
    }
    return 0;
}
