/*
 * out_replay.c - each thread's calls in start order (see out_replay.h).
 *
 * A selected frame's record is appended when it opens (callers before
 * their callees: start order) and its duration filled in when it closes,
 * in the write buffer or, once it has gone, in the file with pwrite.  A
 * thread's records are chained by number (each record's `next` is filled
 * in when the thread's next one is made), so that the threads of one
 * stream, whose records come interleaved, are read back one thread at a
 * time, in blocks, with no index held in memory.
 */
#include "out_replay.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advice.h"
#include "lib/textesc.h"
#include "notes.h"

#define REC_NONE UINT32_MAX         /* no record: not selected */
#define REC_UNSHOWN (UINT32_MAX - 1) /* selected, beyond max_lines: counted */
#define REC_MAX (UINT32_MAX - 2)    /* record numbers available */
#define ROW_COLS 29                 /* "start_us dur_us  " before the call */

enum rec_kind { REC_CALL, REC_LOST, REC_GAP };
enum { REC_OPEN = 1, REC_CUT = 2, REC_PLACEHOLDER = 4 };

struct out_replay_rec {
    uint32_t func;  /* REC_CALL: funcstats id */
    uint32_t next;  /* the thread's next record, REC_NONE */
    uint32_t depth; /* selected frames of the thread open below it */
    uint8_t kind, flags;
    uint16_t pad;
    int64_t ts;     /* its start, or where the loss was; ns */
    uint64_t val;   /* REC_CALL: inclusive ns; REC_LOST: events lost; REC_GAP: records lost (0: unknown) */
};
_Static_assert(sizeof(struct out_replay_rec) == 32, "replay records are 32 bytes");

int out_replay_init(struct out_replay *r, const struct analysis *a, const char *dir, uint64_t max_lines)
{
    memset(r, 0, sizeof *r);
    r->a = a;
    r->max_lines = max_lines;
    r->buf = malloc(OUT_REPLAY_BUF * sizeof *r->buf);
    if (!r->buf) {
        errno = ENOMEM;
        return -1;
    }
    r->body = out_temp_file(dir, "replay");
    return r->body ? 0 : -1;
}

void out_replay_free(struct out_replay *r)
{
    if (r->body)
        fclose(r->body);
    free(r->threads);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

static struct out_replay_thread *thread_of(struct out_replay *r, uint32_t index)
{
    if (index >= r->capthreads) {
        size_t n = r->capthreads ? r->capthreads : 16;
        while (n <= index && n <= SIZE_MAX / 2 / sizeof *r->threads)
            n *= 2;
        struct out_replay_thread *v = n > index ? realloc(r->threads, n * sizeof *v) : NULL;
        if (!v) {
            r->err = ENOMEM;
            return NULL;
        }
        memset(v + r->capthreads, 0, (n - r->capthreads) * sizeof *v);
        r->threads = v;
        r->capthreads = n;
    }
    return &r->threads[index];
}

static void pio_all(struct out_replay *r, int writing, void *p, size_t n, uint64_t off)
{
    unsigned char *b = p;
    while (n && !r->err) {
        ssize_t k = writing ? pwrite(fileno(r->body), b, n, (off_t)off) : pread(fileno(r->body), b, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r->err = k < 0 ? errno : EIO;
            return;
        }
        b += k, n -= (size_t)k, off += (uint64_t)k;
    }
}

static void flush_buf(struct out_replay *r)
{
    pio_all(r, 1, r->buf, r->nbuf * sizeof *r->buf, r->buf_first * sizeof *r->buf);
    r->buf_first += r->nbuf;
    r->nbuf = 0;
}

/* Write `n` bytes at `field` of record number i. */
static void patch(struct out_replay *r, uint32_t i, size_t field, const void *p, size_t n)
{
    if (i >= r->buf_first)
        memcpy((unsigned char *)&r->buf[i - r->buf_first] + field, p, n);
    else
        pio_all(r, 1, (void *)p, n, (uint64_t)i * sizeof *r->buf + field);
}

/* Append rec to thread t's chain; its number, or REC_UNSHOWN when the
 * numbers ran out. */
static uint32_t append(struct out_replay *r, struct out_replay_thread *th, const struct out_replay_rec *rec)
{
    if (r->nrec >= REC_MAX) {
        r->over++;
        return REC_UNSHOWN;
    }
    if (r->nbuf == OUT_REPLAY_BUF)
        flush_buf(r);
    uint32_t i = (uint32_t)r->nrec++;
    r->buf[r->nbuf++] = *rec;
    if (th->used)
        patch(r, th->last, offsetof(struct out_replay_rec, next), &i, sizeof i);
    else
        th->first = i;
    th->used = 1;
    th->last = i;
    th->lines++;
    return i;
}

static void on_open(void *ctx, const struct analysis_thread *t, const struct callstack *s,
                    struct callstack_frame *f)
{
    struct out_replay *r = ctx;
    struct out_replay_thread *th;
    (void)s;
    f->tag.node = REC_NONE;
    if (!f->tag.selected || !(th = thread_of(r, t->index)))
        return;
    struct out_replay_rec rec = {.func = (uint32_t)f->func, .next = REC_NONE, .depth = th->open++,
                                 .kind = REC_CALL, .flags = REC_OPEN | (f->placeholder ? REC_PLACEHOLDER : 0),
                                 .ts = f->start};
    if (r->max_lines && th->lines >= r->max_lines) {
        th->more++;
        f->tag.node = REC_UNSHOWN;
        return;
    }
    f->tag.node = append(r, th, &rec);
    th->calls += f->tag.node != REC_UNSHOWN;
}

static void on_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                     int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct out_replay *r = ctx;
    (void)ts;
    (void)self;
    if (f->tag.node == REC_NONE)
        return;
    r->threads[t->index].open--; /* opened: the slot exists */
    if (f->tag.node == REC_UNSHOWN)
        return;
    uint8_t flags = (how == CALLSTACK_CUT ? REC_CUT : 0) | (f->placeholder ? REC_PLACEHOLDER : 0);
    uint64_t dur = how == CALLSTACK_RETURNED ? incl : 0;
    patch(r, f->tag.node, offsetof(struct out_replay_rec, flags), &flags, sizeof flags);
    patch(r, f->tag.node, offsetof(struct out_replay_rec, val), &dur, sizeof dur);
}

/* A loss in its place: on the thread that lost events, or on every thread
 * shown so far of the stream that lost records. */
static void on_loss(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts, enum sink_loss what,
                    uint64_t n)
{
    struct out_replay *r = ctx;
    struct out_replay_thread *th;
    struct out_replay_rec rec = {.next = REC_NONE, .kind = what == SINK_LOSS_THREAD ? REC_LOST : REC_GAP,
                                 .ts = ts, .val = n};
    if (what == SINK_LOSS_THREAD && t && (th = thread_of(r, t->index)) &&
        (!r->max_lines || th->lines < r->max_lines)) {
        rec.depth = th->open;
        append(r, th, &rec);
    }
    for (size_t i = 0; what == SINK_LOSS_GAP && i < r->capthreads && i < r->a->nthreads; i++) {
        th = &r->threads[i];
        if (th->used && r->a->threads[i].src == src && (!r->max_lines || th->lines < r->max_lines)) {
            rec.depth = th->open;
            append(r, th, &rec);
        }
    }
}

struct sink out_replay_sink(struct out_replay *r)
{
    return (struct sink){.ctx = r, .open = on_open, .close = on_close, .loss = on_loss};
}

/* ---- the text --------------------------------------------------------------- */

/* Record number i, read through the buffer (a block at a time). */
static int read_rec(struct out_replay *r, uint32_t i, struct out_replay_rec *rec)
{
    if (i < r->buf_first || i >= r->buf_first + r->nbuf) {
        uint64_t n = r->nrec - i < OUT_REPLAY_BUF ? r->nrec - i : OUT_REPLAY_BUF;
        r->buf_first = i;
        r->nbuf = (size_t)n;
        pio_all(r, 0, r->buf, r->nbuf * sizeof *r->buf, (uint64_t)i * sizeof *r->buf);
    }
    *rec = r->buf[i - r->buf_first];
    return r->err ? -1 : 0;
}

/* ns as microseconds with three decimals, exact, in a field of w. */
static void put_us(FILE *out, int w, uint64_t ns)
{
    char s[32];
    snprintf(s, sizeof s, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
    fprintf(out, "%*s", w, s);
}

static void line(FILE *out, const struct out_view *v, const struct out_replay_rec *rec, int64_t t0)
{
    char label[1024];
    size_t d = rec->depth < OUT_REPLAY_INDENT ? rec->depth : OUT_REPLAY_INDENT;
    size_t room = 80 > ROW_COLS + 2 * d ? 80 - ROW_COLS - 2 * d : 0;
    put_us(out, 14, rec->ts > t0 ? (uint64_t)(rec->ts - t0) : 0);
    if (rec->kind == REC_CALL && !(rec->flags & (REC_CUT | REC_OPEN))) {
        fputc(' ', out);
        put_us(out, 12, rec->val);
    } else {
        fprintf(out, " %12s", "-");
    }
    fprintf(out, "  %*s", (int)(2 * d), "");
    if (rec->depth > OUT_REPLAY_INDENT)
        fprintf(out, "(depth %u) ", rec->depth);
    if (rec->kind == REC_LOST)
        fprintf(out, "[%llu events lost here]\n", (unsigned long long)rec->val);
    else if (rec->kind == REC_GAP && rec->val)
        fprintf(out, "[stream gap: %llu records lost here]\n", (unsigned long long)rec->val);
    else if (rec->kind == REC_GAP)
        fputs("[stream gap: records lost here]\n", out);
    else {
        if (rec->flags & REC_PLACEHOLDER)
            snprintf(label, sizeof label, "[lost frames]");
        else
            out_func_fit(v, rec->func, room, label, sizeof label);
        fprintf(out, "%s%s\n", label, rec->flags & (REC_CUT | REC_OPEN) ? " (no exit in the trace)" : "");
    }
}

static int thread_text(struct out_replay *r, const struct out_view *v, FILE *out, size_t i, int64_t t0)
{
    const struct out_replay_thread *th = &r->threads[i];
    char raw[64], label[256];
    uint64_t calls = th->calls;
    struct out_replay_rec rec;
    uint32_t first = th->used ? th->first : REC_NONE;
    analysis_thread_label(&r->a->threads[i], raw, sizeof raw);
    textesc(label, sizeof label, raw, TEXTESC_TERMINAL);
    fprintf(out, "\n%s: %llu call%s\n", label, (unsigned long long)(calls + th->more),
            calls + th->more == 1 ? "" : "s");
    fprintf(out, "%14s %12s  %s\n", "start_us", "dur_us", "call");
    for (uint32_t k = first; k != REC_NONE; k = rec.next) {
        if (read_rec(r, k, &rec) < 0)
            return -1;
        line(out, v, &rec, t0);
    }
    if (th->more)
        fprintf(out, "... %llu more call%s of this thread not shown (--max-lines %llu)\n",
                (unsigned long long)th->more, th->more == 1 ? "" : "s", (unsigned long long)r->max_lines);
    return 0;
}

int out_replay_finish(struct out_replay *r, const struct out_view *v, FILE *out)
{
    const struct analysis *a = r->a;
    int64_t t0 = a->have_start ? a->start_ns : a->first_ns;
    size_t shown = 0;
    flush_buf(r);
    if (r->err) {
        errno = r->err;
        return -1;
    }
    notes_write_text(a, out);
    (void)advice_write_text(v, out); /* out of memory is said in a line of its own */
    notes_write_filter(a, out);
    if (r->over)
        fprintf(out, "note: %llu calls not shown: the replay holds %llu lines at most\n",
                (unsigned long long)r->over, (unsigned long long)REC_MAX);
    for (size_t i = 0; i < r->capthreads && i < a->nthreads; i++) {
        if (!r->threads[i].used && !r->threads[i].more)
            continue;
        shown++;
        if (thread_text(r, v, out, i, t0) < 0) {
            errno = r->err;
            return -1;
        }
    }
    if (!shown)
        fputs("\n(no calls selected)\n", out);
    return 0;
}
