/*
 * live.c - a trace directory analyzed while it grows (see live.h).
 *
 * Why files and not serve: top reads the files serve (or the runtime, in
 * file mode) writes, as analyze does, instead of asking a running serve for
 * aggregates.  So it watches local traces as well as streams, needs no new
 * protocol or socket, leaves serve (which faces the network) unchanged, and
 * counts with analyze's own pass, so its totals are analyze's.  The price is
 * a refresh's delay and reading each record once more on the host.
 *
 * A series is driven through analysis_run_begin/segment/read/end.  Between
 * refreshes a file is only its path and the offset after its last whole
 * record (trace_reader_tell), so a torn record at the end is read again,
 * whole, next time.  A segment is finished once a later one of its series
 * exists: writers rotate only after the last write to the old one.
 *
 * Why a cap on series and not only on sources or events: every series read
 * in detail keeps its analysis_run between refreshes, and a run is about
 * 80 KB whatever the series holds (its caches of resolved addresses are
 * part of it), so 30,000 tiny files once took 2.1 GB.  Past max_series a
 * series is only counted, afresh each refresh, so nothing of it is kept.
 */
#include "live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/vec.h"
#include "read/trace_files.h"
#include "read/trace_reader.h"

struct live_series {
    struct trace_series s;   /* its own copy: kind, id, tid, segments so far */
    size_t capsegs;
    struct analysis_run *run; /* begun when its first segment opens: NULL before */
    size_t cur;              /* the segment being read */
    uint64_t off;            /* where its unread records begin; 0: not opened yet */
    int64_t mtime;           /* its newest segment's, seconds */
};

const char *live_state_word(enum live_state s)
{
    static const char *const words[] = {"streaming", "ended", "cut", "reconnecting", "dropping", "idle"};
    return (unsigned)s < sizeof words / sizeof *words ? words[s] : "?";
}

/* ---- the rows, fed as analyze's function table is --------------------- */

/* calls more calls of f, taking incl and self ns in all, the longest max. */
static void row_add(struct live_func *f, uint64_t calls, uint64_t incl, uint64_t self, uint64_t max)
{
    f->calls += calls;
    f->incl_ns += incl;
    f->self_ns += self;
    if (max > f->max_ns)
        f->max_ns = max;
    if (max > f->cur_max_ns)
        f->cur_max_ns = max;
}

static struct live_func *all_row(struct live *l, uint32_t func)
{
    while (l->nall <= func) {
        if (vec_grow(&l->all, &l->capall, l->nall, sizeof *l->all, 16) < 0)
            return NULL;
        l->all[l->nall] = (struct live_func){.src = LIVE_ALL, .func = (uint32_t)l->nall};
        l->nall++;
    }
    return &l->all[func];
}

static struct live_func *src_row(struct live *l, uint32_t src, uint32_t func)
{
    uint64_t key = (uint64_t)src << 32 | func;
    uint32_t at;
    if (u64map_get(&l->row_index, key, &at))
        return &l->rows[at];
    if (vec_grow(&l->rows, &l->caprows, l->nrows, sizeof *l->rows, 16) < 0 ||
        u64map_put(&l->row_index, key, (uint32_t)l->nrows) < 0)
        return NULL;
    l->rows[l->nrows] = (struct live_func){.src = src, .func = func};
    return &l->rows[l->nrows++];
}

/* The same calls analyze's table counts: returned and selected (top sets
 * no filter, so every returned call). */
static void on_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f, int64_t ts,
                     enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct live *l = ctx;
    (void)ts;
    if (how != CALLSTACK_RETURNED || !f->tag.selected)
        return;
    struct live_func *a = all_row(l, (uint32_t)f->func), *s = src_row(l, t->src, (uint32_t)f->func);
    if (!a || !s) {
        l->oom = 1;
        return;
    }
    uint64_t under = f->nested ? 0 : incl; /* counted once, as analyze does (callstack.h) */
    row_add(a, 1, under, self, incl);
    row_add(s, 1, under, self, incl);
}

/* A summary trace's snapshot: what a thread gained of a function since its
 * snapshot before, counted as analyze's table counts it.  The device keeps
 * the longest call per thread, so max is the longest so far. */
static void on_summary(void *ctx, const struct analysis_thread *t, uint32_t func, uint64_t calls,
                       uint64_t incl, uint64_t self, uint64_t max)
{
    struct live *l = ctx;
    struct live_func *rows[2] = {all_row(l, func), src_row(l, t->src, func)};
    if (!rows[0] || !rows[1]) {
        l->oom = 1;
        return;
    }
    row_add(rows[0], calls, incl, self, max);
    row_add(rows[1], calls, incl, self, max);
}

/* ---- setting up ---------------------------------------------------------- */

int live_init(struct live *l, const char *dir, const struct analysis_exe *exes, size_t nexes, FILE *diag,
              const char *prog)
{
    memset(l, 0, sizeof *l);
    l->dir = dir;
    l->streaming_s = 2;
    analysis_init(&l->a, diag, prog);
    analysis_set_exes(&l->a, exes, nexes);
    /* analyze sets the summary intervals' origin in its pre-pass; a growing
     * directory has none, so they count from 0 (the timeline is not shown) */
    timeline_init(&l->a.timeline, 0, l->a.interval_ns);
    l->reconnect_s = LIVE_RECONNECT_S;
    l->max_series = LIVE_MAX_SERIES;
    l->reader = malloc(sizeof *l->reader);
    struct sink s = {.ctx = l, .close = on_close, .summary = on_summary};
    if (!l->reader || analysis_add_sink(&l->a, s) < 0)
        return -1;
    return 0;
}

static void series_free(struct live_series *ls)
{
    for (size_t i = 0; i < ls->s.nsegs; i++)
        free(ls->s.segs[i].path);
    free(ls->s.segs);
    free(ls);
}

void live_free(struct live *l)
{
    for (size_t i = 0; i < l->nseries; i++) {
        analysis_run_end(l->series[i]->run);
        series_free(l->series[i]);
    }
    free(l->series);
    u64map_free(&l->local_index);
    u64map_free(&l->stream_index);
    u64map_free(&l->row_index);
    free(l->all);
    free(l->rows);
    free(l->srcs);
    free(l->reader);
    analysis_free(&l->a);
    memset(l, 0, sizeof *l);
}

/* ---- finding files --------------------------------------------------------- */

static struct u64map *index_of(struct live *l, const struct trace_series *s, uint64_t *key)
{
    if (s->kind == TRACE_SERIES_STREAM) {
        *key = s->id;
        return &l->stream_index;
    }
    *key = (uint64_t)s->id << 32 | s->tid;
    return &l->local_index;
}

/* The series read in detail that s is, made if there is room: 1 and *out
 * set, 0 when it is beyond max_series, -1 out of memory.  Only its name is
 * kept until a file of it opens (open_at begins its run). */
static int series_of(struct live *l, const struct trace_series *s, struct live_series **out)
{
    uint64_t key;
    struct u64map *m = index_of(l, s, &key);
    uint32_t at;
    if (u64map_get(m, key, &at)) {
        *out = l->series[at];
        return 1;
    }
    if (l->nseries >= l->max_series)
        return 0;
    struct live_series *ls = calloc(1, sizeof *ls);
    if (!ls || vec_grow(&l->series, &l->capseries, l->nseries, sizeof *l->series, 16) < 0 ||
        u64map_put(m, key, (uint32_t)l->nseries) < 0) {
        free(ls);
        return -1;
    }
    ls->s.kind = s->kind;
    ls->s.id = s->id;
    ls->s.tid = s->tid;
    l->series[l->nseries++] = ls;
    *out = ls;
    return 1;
}

/* A series beyond the cap: its files and their bytes, as they are now. */
static void over_add(struct live_over *o, const struct trace_series *s)
{
    o->series++;
    for (size_t i = 0; i < s->nsegs; i++) {
        struct stat st;
        o->files++;
        if (stat(s->segs[i].path, &st) == 0)
            o->bytes += (uint64_t)st.st_size;
    }
}

/* Segments of s not known yet (a higher seq than the last known) join ls. */
static int take_segments(struct live_series *ls, const struct trace_series *s)
{
    for (size_t i = 0; i < s->nsegs; i++) {
        const struct trace_segment *g = &s->segs[i];
        if (ls->s.nsegs && g->seq <= ls->s.segs[ls->s.nsegs - 1].seq)
            continue;
        if (vec_grow(&ls->s.segs, &ls->capsegs, ls->s.nsegs, sizeof *ls->s.segs, 4) < 0)
            return -1;
        char *path = strdup(g->path);
        if (!path)
            return -1;
        ls->s.segs[ls->s.nsegs++] = (struct trace_segment){path, g->seq};
    }
    return 0;
}

/* The directory's trace files now, grouped into series.  0, or -1 said in
 * msg; tf is to be freed either way. */
static int list_files(struct live *l, struct trace_files *tf, char *msg, size_t msglen)
{
    trace_files_init(tf);
    if (trace_files_add(tf, l->dir, msg, msglen) < 0)
        return -1;
    if (trace_files_group(tf) < 0) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

int live_prepare(struct live *l, char *msg, size_t msglen)
{
    struct trace_files tf;
    int rc = list_files(l, &tf, msg, msglen);
    if (!rc) {
        /* only the series the first refresh takes in detail (the first
         * max_series, in this order): the pre-passes make a source of each */
        struct trace_files detail = tf;
        if (detail.nseries > l->max_series)
            detail.nseries = l->max_series;
        analysis_prepare(&l->a, &detail);
    }
    trace_files_free(&tf);
    return rc;
}

static int scan(struct live *l, char *msg, size_t msglen)
{
    struct trace_files tf;
    struct live_over over = {0};
    int rc = list_files(l, &tf, msg, msglen);
    for (size_t i = 0; !rc && i < tf.nseries; i++) {
        struct live_series *ls = NULL;
        int in = series_of(l, &tf.series[i], &ls);
        if (!in)
            over_add(&over, &tf.series[i]);
        else if (in < 0 || take_segments(ls, &tf.series[i]) < 0) {
            snprintf(msg, msglen, "out of memory");
            rc = -1;
        }
    }
    if (!rc)
        l->over = over;
    trace_files_free(&tf);
    return rc;
}

/* ---- reading what was appended -------------------------------------------- */

static void say(struct live *l, const char *path, const char *what)
{
    snprintf(l->said, sizeof l->said, "%s: %s", path, what);
    l->nsaid++;
    if (l->a.diag)
        fprintf(l->a.diag, "%s: %s: %s\n", l->a.prog, path, what);
}

/* Open the segment being read where its unread records begin.  1 open,
 * 0 not now (nothing new, or a header still being written), -1 skip it. */
static int open_at(struct live *l, struct live_series *ls, int last)
{
    const struct trace_segment *g = &ls->s.segs[ls->cur];
    struct trace_reader *r = l->reader;
    struct stat st;
    char msg[160], line[200];
    if (stat(g->path, &st) < 0)
        return last ? 0 : -1; /* removed (a wrapping recorder): its successors go on */
    if ((int64_t)st.st_mtime > ls->mtime)
        ls->mtime = (int64_t)st.st_mtime;
    if (ls->off && (uint64_t)st.st_size < ls->off + TRACE_EVENT_SIZE && last)
        return 0;
    if (trace_reader_open(r, g->path, msg, sizeof msg) < 0) {
        int young = !strcmp(msg, "empty file") || !strcmp(msg, "truncated header");
        if (young && last)
            return 0; /* its writer has not written the header yet */
        snprintf(line, sizeof line, "%s; skipped", msg);
        say(l, g->path, line);
        l->a.files_bad++;
        return -1;
    }
    if (!ls->off) {
        if (!ls->run && !(ls->run = analysis_run_begin(&l->a, &ls->s))) { /* a->oom said */
            trace_reader_close(r);
            return -1;
        }
        if (analysis_run_segment(ls->run, g, r) < 0) {
            trace_reader_close(r);
            return -1;
        }
        ls->off = r->hdr.header_size;
    } else if (trace_reader_seek(r, ls->off) < 0) {
        trace_reader_close(r);
        say(l, g->path, "shrank or changed while read; rest skipped");
        return -1;
    }
    return 1;
}

/* Read the segment being read to its last whole record; 1 when it is done
 * (a later one exists, or it cannot be read), else 0. */
static int read_segment(struct live *l, struct live_series *ls)
{
    int last = ls->cur + 1 == ls->s.nsegs;
    const struct trace_segment *g = &ls->s.segs[ls->cur];
    struct trace_reader *r = l->reader;
    char line[160];
    int o = open_at(l, ls, last);
    if (o <= 0)
        return o < 0;
    enum trace_reader_status st = analysis_run_read(ls->run, g, r);
    int64_t at = trace_reader_tell(r);
    if (at > 0)
        ls->off = (uint64_t)at;
    if (st == TRACE_READER_IOERR) {
        snprintf(line, sizeof line, "read error: %s; rest of file skipped", strerror(r->err));
        say(l, g->path, line);
    } else if (st == TRACE_READER_TRUNCATED && !last) { /* finished torn: damage, said once */
        snprintf(line, sizeof line, "truncated: partial last record (%zu bytes) ignored", r->trailing);
        say(l, g->path, line);
    }
    trace_reader_close(r);
    return !last || st == TRACE_READER_IOERR;
}

static void read_series(struct live *l, struct live_series *ls)
{
    while (ls->cur < ls->s.nsegs && read_segment(l, ls)) {
        ls->cur++;
        ls->off = 0;
    }
}

/* ---- closing an interval ------------------------------------------------- */

static void row_interval(struct live_func *f)
{
    f->i_calls = f->calls - f->p_calls;
    f->i_incl_ns = f->incl_ns - f->p_incl_ns;
    f->i_self_ns = f->self_ns - f->p_self_ns;
    f->i_max_ns = f->cur_max_ns;
    f->p_calls = f->calls;
    f->p_incl_ns = f->incl_ns;
    f->p_self_ns = f->self_ns;
    f->cur_max_ns = 0;
}

/* Nothing after a gap or cut marker: the connection ended abnormally.  A
 * resumable stream's cut (STREAM_CUT) may still be followed by its files
 * going on, while its client retries (trace_stream: --retry, 30 s by
 * default); a GAP has no sequel. */
static enum live_state source_state(const struct live *l, const struct live_source *s,
                                    const struct analysis_source *a)
{
    int64_t quiet = l->now - s->newest_mtime;
    if (analysis_source_cut_at_end(a))
        return a->loss_mark == TRACE_MARK_STREAM_CUT && quiet < l->reconnect_s ? LIVE_RECONNECTING : LIVE_CUT;
    if ((s->i_records && l->refreshes > 1) || quiet < l->streaming_s)
        return s->i_dropped ? LIVE_DROPPING : LIVE_STREAMING;
    return LIVE_ENDED;
}

static int sources_interval(struct live *l)
{
    while (l->nsrcs < l->a.nsrc) {
        if (vec_grow(&l->srcs, &l->capsrcs, l->nsrcs, sizeof *l->srcs, 16) < 0)
            return -1;
        memset(&l->srcs[l->nsrcs++], 0, sizeof *l->srcs);
    }
    for (size_t i = 0; i < l->nsrcs; i++) {
        struct live_source *s = &l->srcs[i];
        const struct analysis_source *a = &l->a.src[i];
        uint64_t dropped = analysis_source_dropped(a);
        s->i_records = a->records - s->records;
        s->i_bytes = s->i_records * TRACE_EVENT_SIZE;
        s->i_dropped = dropped - s->dropped;
        s->records = a->records;
        s->bytes = a->records * TRACE_EVENT_SIZE;
        s->dropped = dropped;
        s->newest_mtime = 0;
    }
    for (size_t i = 0; i < l->nseries; i++) {
        size_t src;
        if (l->series[i]->run && analysis_run_source(l->series[i]->run, &src) &&
            l->series[i]->mtime > l->srcs[src].newest_mtime)
            l->srcs[src].newest_mtime = l->series[i]->mtime;
    }
    for (size_t i = 0; i < l->nsrcs; i++) {
        struct live_source *s = &l->srcs[i];
        const struct analysis_source *a = &l->a.src[i];
        s->state = source_state(l, s, a);
    }
    return 0;
}

void live_wire_begin(struct live *l)
{
    for (size_t i = 0; i < l->nsrcs; i++) {
        l->srcs[i].have_wire = 0;
        l->srcs[i].wire_listed = 0;
    }
}

void live_wire(struct live *l, uint32_t stream_id, uint64_t bytes)
{
    uint32_t at;
    if (!u64map_get(&l->a.src_index, (uint64_t)ANALYSIS_SOURCE_STREAM << 32 | stream_id, &at) || at >= l->nsrcs)
        return; /* nothing of it read yet */
    struct live_source *s = &l->srcs[at];
    s->have_wire = s->wire_before && bytes >= s->wire;
    s->i_wire = s->have_wire ? bytes - s->wire : 0;
    s->wire = bytes;
    s->wire_listed = 1;
}

void live_wire_end(struct live *l)
{
    for (size_t i = 0; i < l->nsrcs; i++)
        if (l->srcs[i].state == LIVE_ENDED && l->srcs[i].wire_listed)
            l->srcs[i].state = LIVE_IDLE;
}

int live_refresh(struct live *l, double interval_s, char *msg, size_t msglen)
{
    if (scan(l, msg, msglen) < 0)
        return -1;
    for (size_t i = 0; i < l->nseries; i++)
        read_series(l, l->series[i]);
    for (size_t i = 0; i < l->nsrcs; i++) /* listed at the refresh before: its bytes then are a base */
        l->srcs[i].wire_before = l->srcs[i].wire_listed;
    l->refreshes++;
    l->interval_s = interval_s;
    l->now = (int64_t)time(NULL);
    for (size_t i = 0; i < l->nall; i++)
        row_interval(&l->all[i]);
    for (size_t i = 0; i < l->nrows; i++)
        row_interval(&l->rows[i]);
    if (sources_interval(l) < 0 || l->oom || l->a.oom || l->a.funcs.oom) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 0;
}

void live_finish(struct live *l)
{
    char line[160];
    for (size_t i = 0; i < l->nseries; i++) {
        struct live_series *ls = l->series[i];
        if (ls->off && ls->cur < ls->s.nsegs) {
            struct stat st;
            const char *path = ls->s.segs[ls->cur].path;
            if (stat(path, &st) == 0 && (uint64_t)st.st_size > ls->off &&
                (uint64_t)st.st_size - ls->off < TRACE_EVENT_SIZE) {
                snprintf(line, sizeof line, "truncated: partial last record (%llu bytes) ignored",
                         (unsigned long long)((uint64_t)st.st_size - ls->off));
                say(l, path, line);
            }
        }
        analysis_run_end(ls->run);
        ls->run = NULL;
    }
    analysis_finish(&l->a);
}
