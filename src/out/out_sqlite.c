/*
 * out_sqlite.c - the SQLite database writer (see out_sqlite.h; the schema
 * is documented in docs/sql.md, and must change with it and with
 * OUT_SQLITE_SCHEMA_VERSION).
 *
 * The SQL here is constant text: every value from a trace or a binary is a
 * bound parameter.  Integers above INT64_MAX (SQLite's largest) are stored
 * as INT64_MAX, except addresses, which keep their 64 bits as a signed
 * integer.
 */
#include "out_sqlite.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"
#include "read/elf_buildid.h"
#include "advice.h"
#include "notes.h"
#include "report.h"

/* The tables first, indexes after the load (cheaper than keeping them up
 * to date row by row).  No foreign-key constraints: a slice's parent may
 * be a frame that never returned (cut_frame) or one a filter left out. */
static const char schema[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;\n"
    "CREATE TABLE source (id INTEGER PRIMARY KEY, kind TEXT, source_id INTEGER, dropped INTEGER,"
    " device_dropped INTEGER, thread_lost INTEGER, others_lost INTEGER, gap_events INTEGER, gaps INTEGER,"
    " gaps_unknown INTEGER, cuts INTEGER, resumes INTEGER, tracers_vanished INTEGER, dead_frames INTEGER,"
    " tracer_ns INTEGER, tracer_flushes INTEGER, waited_ns INTEGER, waits INTEGER, records INTEGER,"
    " snapshot INTEGER, snapshot_cause INTEGER);\n"
    "CREATE TABLE process (upid INTEGER PRIMARY KEY, pid INTEGER, name TEXT, source INTEGER,"
    " module_id INTEGER, load_bias INTEGER, events INTEGER);\n"
    "CREATE TABLE thread (utid INTEGER PRIMARY KEY, tid INTEGER, pid INTEGER, upid INTEGER, source INTEGER, name TEXT,"
    " has_events INTEGER, lost INTEGER, events INTEGER, calls INTEGER, self_ns INTEGER, span_ns INTEGER);\n"
    "CREATE TABLE module (id INTEGER PRIMARY KEY, path TEXT, build_id TEXT, is_program INTEGER,"
    " exe TEXT, exe_matches INTEGER, load_bias INTEGER);\n"
    "CREATE TABLE function (id INTEGER PRIMARY KEY, name TEXT, file TEXT, line INTEGER, addr INTEGER,"
    " module_id INTEGER);\n"
    "CREATE TABLE slice_data (id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, self_dur INTEGER,"
    " depth INTEGER, parent_id INTEGER, thread_id INTEGER, function_id INTEGER, call_site INTEGER);\n"
    "CREATE TABLE cut_frame (id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, depth INTEGER,"
    " parent_id INTEGER, thread_id INTEGER, function_id INTEGER, placeholder INTEGER);\n"
    "CREATE TABLE func_stats (function_id INTEGER PRIMARY KEY, name TEXT, file TEXT, line INTEGER,"
    " calls INTEGER, incl_ns INTEGER, self_ns INTEGER, min_ns INTEGER, max_ns INTEGER, mean_ns INTEGER,"
    " p50_ns INTEGER, p90_ns INTEGER, p99_ns INTEGER, lower_bound INTEGER, rank INTEGER);\n"
    "CREATE TABLE thread_func_stats (thread_id INTEGER, function_id INTEGER, name TEXT, calls INTEGER,"
    " incl_ns INTEGER, self_ns INTEGER, min_ns INTEGER, max_ns INTEGER, mean_ns INTEGER, p50_ns INTEGER,"
    " p90_ns INTEGER, p99_ns INTEGER, PRIMARY KEY (thread_id, function_id)) WITHOUT ROWID;\n"
    "CREATE TABLE func_hist (function_id INTEGER, lo_ns INTEGER, hi_ns INTEGER, count INTEGER);\n"
    "CREATE TABLE interval_stats (from_ns INTEGER, function_id INTEGER, calls INTEGER, incl_ns INTEGER,"
    " self_ns INTEGER);\n"
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n"
    "CREATE TABLE trigger_call (id INTEGER PRIMARY KEY, thread_id INTEGER, ts INTEGER, took_ns INTEGER,"
    " function_id INTEGER, outer_frames_unknown INTEGER);\n"
    "CREATE TABLE trigger_frame (trigger_id INTEGER, depth INTEGER, function_id INTEGER);\n"
    "CREATE VIEW slice AS SELECT s.id, s.ts, s.dur, s.self_dur, s.depth, s.parent_id, s.thread_id,"
    " s.function_id, f.name AS name, s.call_site FROM slice_data s LEFT JOIN function f ON f.id = s.function_id;\n"
    "CREATE VIEW hot_functions AS SELECT name, file, line, calls, self_ns, incl_ns, max_ns, p99_ns"
    " FROM func_stats ORDER BY rank;\n"
    "CREATE VIEW slowest_calls AS SELECT s.id, f.name AS name, s.dur, s.self_dur, s.ts, t.tid,"
    " t.name AS thread_name, s.depth FROM slice_data s JOIN thread t ON t.utid = s.thread_id"
    " LEFT JOIN function f ON f.id = s.function_id ORDER BY s.dur DESC, s.id;\n"
    "CREATE TABLE call_edge_data (caller_id INTEGER, callee_id INTEGER, calls INTEGER, dur_ns INTEGER,"
    " self_ns INTEGER, PRIMARY KEY (caller_id, callee_id)) WITHOUT ROWID;\n"
    "CREATE VIEW call_edges AS SELECT e.caller_id, fp.name AS caller, e.callee_id, fc.name AS callee, e.calls,"
    " e.dur_ns, e.self_ns FROM call_edge_data e LEFT JOIN function fp ON fp.id = e.caller_id"
    " LEFT JOIN function fc ON fc.id = e.callee_id;\n"
    "CREATE VIEW callers AS SELECT callee AS function, caller, calls, dur_ns FROM call_edges;\n"
    "CREATE VIEW callees AS SELECT caller AS function, callee, calls, dur_ns FROM call_edges;\n";

/* The page cache, bounded (KiB, as SQLite takes a negative size): the
 * index builds sort in it and spill to temporary files beyond. */
#define OUT_SQLITE_CACHE "-8192"

static const char indexes[] =
    "CREATE INDEX slice_thread_ts ON slice_data (thread_id, ts);\n"
    "CREATE INDEX slice_function ON slice_data (function_id);\n"
    "CREATE INDEX slice_parent ON slice_data (parent_id);\n"
    "CREATE INDEX slice_dur ON slice_data (dur);\n"
    "CREATE INDEX func_hist_function ON func_hist (function_id);\n";

/* The first error is the one reported: what follows it often only
 * follows from it. */
static void fail(struct out_sqlite *q, const char *what)
{
    if (!q->err[0])
        snprintf(q->err, sizeof q->err, "%s: %s", what, q->db ? sqlite3_errmsg(q->db) : "out of memory");
}

static int exec(struct out_sqlite *q, const char *sql, const char *what)
{
    if (sqlite3_exec(q->db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    fail(q, what);
    return -1;
}

static sqlite3_stmt *prepare(struct out_sqlite *q, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail(q, "preparing an insert");
        return NULL;
    }
    return st;
}

static sqlite3_int64 clamp(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

/* A string as valid UTF-8 text (textesc.h), or NULL. */
static int bind_text(struct out_sqlite *q, sqlite3_stmt *st, int i, const char *s)
{
    if (!s)
        return sqlite3_bind_null(st, i);
    size_t n = strlen(s);
    if (textesc_clean_prefix(s, TEXTESC_UTF8) == n)
        return sqlite3_bind_text(st, i, s, (int)(n < INT32_MAX ? n : INT32_MAX), SQLITE_TRANSIENT);
    char *e = n < SIZE_MAX / 5 ? malloc(4 * n + 1) : NULL; /* every byte at most \xNN */
    if (!e) {
        q->oom = 1;
        return sqlite3_bind_null(st, i);
    }
    int rc = sqlite3_bind_text(st, i, textesc(e, 4 * n + 1, s, TEXTESC_UTF8), -1, SQLITE_TRANSIENT);
    free(e);
    return rc;
}

/*
 * One row through st: types says each value's kind, in order:
 *   u  uint64_t          d  int64_t
 *   s  const char * (NULL: null)
 *   o  int, uint64_t: the value when the int is not 0, else null
 *   a  uint64_t, an address: its 64 bits as a signed integer
 * 0 ok; -1 with the error kept.
 */
static int row(struct out_sqlite *q, sqlite3_stmt *st, const char *types, ...)
{
    va_list ap;
    int i = 1, rc = SQLITE_OK;
    if (!st || q->err[0])
        return -1;
    va_start(ap, types);
    for (const char *t = types; *t && rc == SQLITE_OK; t++, i++) {
        if (*t == 'u')
            rc = sqlite3_bind_int64(st, i, clamp(va_arg(ap, uint64_t)));
        else if (*t == 'd')
            rc = sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
        else if (*t == 'a')
            rc = sqlite3_bind_int64(st, i, (sqlite3_int64)va_arg(ap, uint64_t));
        else if (*t == 's')
            rc = bind_text(q, st, i, va_arg(ap, const char *));
        else {
            int have = va_arg(ap, int);
            uint64_t v = va_arg(ap, uint64_t);
            rc = have ? sqlite3_bind_int64(st, i, clamp(v)) : sqlite3_bind_null(st, i);
        }
    }
    va_end(ap);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_DONE)
        return 0;
    fail(q, "writing a row");
    return -1;
}

int out_sqlite_init(struct out_sqlite *q, const struct analysis *a, const char *path)
{
    memset(q, 0, sizeof *q);
    q->a = a;
    /* one thread uses the connection: no mutex on every call */
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        fail(q, path);
        return -1;
    }
    /* The file is new and renamed into place only when whole (analyze's
     * -o): a crash leaves no database to protect, so no journal, no sync.
     * 16 KiB pages: a bulk load splits a quarter as many (3.3 M calls
     * built in 6.8 s instead of 7.5 here). */
    if (exec(q, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                "PRAGMA page_size=16384; PRAGMA cache_size=" OUT_SQLITE_CACHE ";", "pragmas") < 0 ||
        exec(q, schema, "creating the schema") < 0 || exec(q, "BEGIN", "beginning the load") < 0)
        return -1;
    q->slice = prepare(q, "INSERT INTO slice_data VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    q->cut = prepare(q, "INSERT INTO cut_frame VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    return q->slice && q->cut ? 0 : -1;
}

void out_sqlite_free(struct out_sqlite *q)
{
    sqlite3_finalize(q->slice);
    sqlite3_finalize(q->cut);
    sqlite3_close(q->db);
    for (size_t i = 0; i < q->capstacks; i++)
        free(q->stacks[i].v);
    free(q->stacks);
    for (size_t i = 0; i < q->ntf; i++)
        hist_free(&q->tf[i].lat);
    free(q->tf);
    u64map_free(&q->tf_index);
    free(q->edges);
    u64map_free(&q->edge_index);
    memset(q, 0, sizeof *q);
}

/* The thread's stack of slice ids, zeroed when first reached; NULL oom. */
static struct out_sqlite_stack *stack_of(struct out_sqlite *q, uint32_t index)
{
    if (index >= q->capstacks) {
        size_t c = q->capstacks ? q->capstacks : 16;
        while (c <= index)
            c *= 2;
        struct out_sqlite_stack *n = realloc(q->stacks, c * sizeof *n);
        if (!n)
            return NULL;
        memset(n + q->capstacks, 0, (c - q->capstacks) * sizeof *n);
        q->stacks = n;
        q->capstacks = c;
    }
    return &q->stacks[index];
}

static void on_open(void *ctx, const struct analysis_thread *t, const struct callstack *s,
                    struct callstack_frame *f)
{
    struct out_sqlite *q = ctx;
    struct out_sqlite_stack *st = stack_of(q, t->index);
    (void)s;
    if (st && st->n == st->cap) {
        size_t c = st->cap ? st->cap * 2 : 64;
        struct out_sqlite_frame *n = realloc(st->v, c * sizeof *n);
        st = n ? st : NULL;
        if (n) {
            st->v = n;
            st->cap = c;
        }
    }
    if (!st) {
        q->oom = 1;
        return;
    }
    st->v[st->n++] = (struct out_sqlite_frame){f->tag.selected ? ++q->next_id : 0,
                                               f->placeholder ? OUT_SQLITE_UNKNOWN : (uint32_t)f->func};
}

/* The thread's totals of function id; NULL oom. */
static struct funcstats_entry *thread_entry(struct out_sqlite *q, uint32_t thread, uint32_t id)
{
    uint64_t key = (uint64_t)thread << 32 | id;
    uint32_t pos;
    if (u64map_get(&q->tf_index, key, &pos))
        return &q->tf[pos];
    if (q->ntf == q->captf) {
        size_t c = q->captf ? q->captf * 2 : 256;
        struct funcstats_entry *n = realloc(q->tf, c * sizeof *n);
        if (!n)
            return NULL;
        q->tf = n;
        q->captf = c;
    }
    if (q->ntf >= UINT32_MAX - 1 || u64map_put(&q->tf_index, key, (uint32_t)q->ntf) < 0)
        return NULL;
    struct funcstats_entry *e = &q->tf[q->ntf++];
    memset(e, 0, sizeof *e);
    e->addr = id;
    e->bin = thread;
    return e;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* One call of callee made from caller, stored: its pair's totals. */
static void edge_add(struct out_sqlite *q, uint32_t caller, uint32_t callee, uint64_t incl_ns, uint64_t self_ns)
{
    uint64_t key = (uint64_t)caller << 32 | callee;
    uint32_t pos;
    if (!u64map_get(&q->edge_index, key, &pos)) {
        if (q->nedges == q->capedges) {
            size_t c = q->capedges ? q->capedges * 2 : 256;
            struct out_sqlite_edge *n = realloc(q->edges, c * sizeof *n);
            if (!n) {
                q->oom = 1;
                return;
            }
            q->edges = n;
            q->capedges = c;
        }
        if (q->nedges >= UINT32_MAX - 1 || u64map_put(&q->edge_index, key, (uint32_t)q->nedges) < 0) {
            q->oom = 1;
            return;
        }
        pos = (uint32_t)q->nedges++;
        q->edges[pos] = (struct out_sqlite_edge){caller, callee, 0, 0, 0};
    }
    struct out_sqlite_edge *e = &q->edges[pos];
    e->calls++;
    e->dur_ns = sat_add(e->dur_ns, incl_ns);
    e->self_ns = sat_add(e->self_ns, self_ns);
}

/* A long build says how far it is, on one line of the terminal. */
static void say_progress(struct out_sqlite *q, const char *what)
{
    fprintf(q->progress, "\rcallsight analyze: %llu %s ", (unsigned long long)q->slices, what);
    fflush(q->progress);
    q->progress_shown = 1;
}

static void clear_progress(struct out_sqlite *q)
{
    if (q->progress_shown)
        fprintf(q->progress, "\r%60s\r", "");
    q->progress_shown = 0;
}

/* ts as the database has it: ns from the trace's first event. */
static int64_t origin(const struct analysis *a)
{
    return a->have_start ? a->start_ns : 0;
}

static void on_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f, int64_t ts,
                     enum callstack_end how, uint64_t incl_ns, uint64_t self_ns)
{
    struct out_sqlite *q = ctx;
    struct out_sqlite_stack *st = t->index < q->capstacks ? &q->stacks[t->index] : NULL;
    if (!st || !st->n)
        return; /* its open found no memory: said at the end */
    uint64_t id = st->v[--st->n].id, parent = st->n ? st->v[st->n - 1].id : 0;
    if (!id)
        return;
    int64_t t0 = origin(q->a), depth = (int64_t)st->n;
    if (how == CALLSTACK_RETURNED) {
        struct funcstats_entry *e = thread_entry(q, t->index, (uint32_t)f->func);
        if (!e || funcstats_entry_add_call(e, incl_ns, self_ns, f->nested) < 0)
            q->oom = 1;
        if (parent && st->v[st->n - 1].func != OUT_SQLITE_UNKNOWN)
            edge_add(q, st->v[st->n - 1].func, (uint32_t)f->func, incl_ns, self_ns);
        q->slices += row(q, q->slice, "uduudouua", id, f->start - t0, incl_ns, self_ns, depth, parent != 0, parent,
                         (uint64_t)t->index, f->func, f->tag.site) == 0;
        if (q->progress && q->slices % OUT_SQLITE_PROGRESS == 0)
            say_progress(q, "calls written");
        return;
    }
    q->cuts += row(q, q->cut, "udddouou", id, f->start - t0, ts > f->start ? ts - f->start : (int64_t)0, depth,
                   parent != 0, parent, (uint64_t)t->index, !f->placeholder, f->func, (uint64_t)f->placeholder) == 0;
}

/* Summary traces: the thread's gain since its last snapshot; the device
 * sends no per-call latencies per thread, only its longest call. */
static void on_summary(void *ctx, const struct analysis_thread *t, uint32_t func, uint64_t calls, uint64_t incl_ns,
                       uint64_t self_ns, uint64_t max_ns)
{
    struct out_sqlite *q = ctx;
    struct funcstats_entry *e = thread_entry(q, t->index, func);
    if (!e) {
        q->oom = 1;
        return;
    }
    funcstats_entry_add_summary(e, calls, incl_ns, self_ns);
    if (max_ns > e->lat.max && !e->lat.n)
        e->lat.max = max_ns; /* no histogram: max kept alone, n stays 0 */
}

struct sink out_sqlite_sink(struct out_sqlite *q)
{
    return (struct sink){.ctx = q, .open = on_open, .close = on_close, .summary = on_summary};
}

/* ---- after the pass: the tables the JSON report is written from ---- */

static void meta_u64(struct out_sqlite *q, sqlite3_stmt *st, const char *key, uint64_t v)
{
    row(q, st, "su", key, v);
}

static void write_meta(struct out_sqlite *q, const struct out_view *v)
{
    const struct analysis *a = v->a;
    const struct analysis_filter *f = &a->filter;
    sqlite3_stmt *st = prepare(q, "INSERT INTO meta VALUES (?1, ?2)");
    int summary = a->summary_threads || a->summary_outside || a->summary_damaged;
    meta_u64(q, st, "schema_version", OUT_SQLITE_SCHEMA_VERSION);
    row(q, st, "ss", "format", OUT_SQLITE_FORMAT);
    row(q, st, "ss", "title", v->title);
    row(q, st, "ss", "mode", summary ? "summary" : "events");
    meta_u64(q, st, "events", a->events);
    meta_u64(q, st, "threads", a->threads_with_events);
    meta_u64(q, st, "functions", a->funcs.n);
    meta_u64(q, st, "span_ns", analysis_span(a));
    meta_u64(q, st, "unmatched_exits", a->unmatched_exits);
    meta_u64(q, st, "unclosed_enters", a->unclosed_enters);
    meta_u64(q, st, "dropped", analysis_dropped(a));
    meta_u64(q, st, "calls", a->calls);
    meta_u64(q, st, "calls_selected", a->calls_selected);
    meta_u64(q, st, "slices", q->slices);
    meta_u64(q, st, "cut_frames", q->cuts);
    row(q, st, "sd", "ts_origin_ns", origin(a));
    meta_u64(q, st, "interval_ns", a->timeline.width_ns);
    meta_u64(q, st, "filtered", (uint64_t)a->filtering);
    if (a->filtering) {
        row(q, st, "ss", "filter_thread", f->thread);
        row(q, st, "ss", "filter_function", f->nfuncs ? f->function : NULL);
        row(q, st, "so", "filter_since_ns", f->has_since, (uint64_t)f->since_ns);
        row(q, st, "so", "filter_until_ns", f->has_until, (uint64_t)f->until_ns);
    }
    sqlite3_finalize(st);
}

static void write_sources(struct out_sqlite *q, const struct analysis *a)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO source VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                                  " ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)");
    for (size_t i = 0; i < a->nsrc; i++) {
        const struct analysis_source *s = &a->src[i];
        row(q, st, "usuuouuuuuuuuuuuuuuou", (uint64_t)i, analysis_source_word(s), (uint64_t)s->id,
            analysis_source_dropped(s), s->have_device, s->device_dropped, s->thread_lost, s->others_lost,
            s->gap_events, s->gaps, s->gaps_unknown, s->cuts, s->resumes, s->vanished, s->dead_frames,
            s->tracer_ns, s->tracer_flushes, s->waited_ns, s->waits, s->records, s->snapshot != 0,
            (uint64_t)s->snapshot, (uint64_t)s->snapshot_cause);
    }
    sqlite3_finalize(st);
}

/* A stream's default process has no pid of its own (as in the JSON's). */
static int pid_known(const struct analysis *a, const struct analysis_process *p)
{
    return p->announced || a->src[p->src].kind == ANALYSIS_SOURCE_PID;
}

static void write_processes(struct out_sqlite *q, const struct analysis *a)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO process VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    char name[64];
    for (size_t i = 0; i < a->nprocs; i++) {
        const struct analysis_process *p = &a->procs[i];
        out_process_label(a, (uint32_t)i, name, sizeof name);
        row(q, st, "uosuuau", (uint64_t)i, pid_known(a, p), (uint64_t)p->pid, name, (uint64_t)p->src,
            (uint64_t)p->bin, p->bias, p->events);
    }
    sqlite3_finalize(st);
}

static void write_threads(struct out_sqlite *q, const struct analysis *a)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO thread VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    for (size_t i = 0; i < a->nthreads; i++) {
        const struct analysis_thread *t = &a->threads[i];
        const struct analysis_process *p = &a->procs[t->proc];
        row(q, st, "uuouusuuuuuu", (uint64_t)t->index, (uint64_t)t->tid, pid_known(a, p), (uint64_t)p->pid,
            (uint64_t)t->proc, (uint64_t)t->src,
            t->name[0] ? t->name : NULL, (uint64_t)t->has_events, t->lost, t->events, t->calls, t->self_ns,
            t->events && t->last_ns > t->first_ns ? (uint64_t)(t->last_ns - t->first_ns) : 0);
    }
    sqlite3_finalize(st);
}

static void hex_bytes(const unsigned char *b, unsigned n, char *out)
{
    static const char digit[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        out[2 * i] = digit[b[i] >> 4];
        out[2 * i + 1] = digit[b[i] & 15];
    }
    out[2 * n] = 0;
}

static void write_modules(struct out_sqlite *q, const struct analysis *a)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO module VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    char id[2 * TRACE_MODULE_BYTES + 33];
    for (size_t i = 0; i < a->nbins; i++) {
        const struct analysis_bin *b = &a->bins[i];
        const char *exe = b->exe < a->nexes ? a->exes[b->exe].path : NULL;
        if (b->id_len && b->id_len <= TRACE_MODULE_BYTES)
            hex_bytes(b->id_bytes, b->id_len, id);
        else if (b->have_build_id)
            elf_buildid_hex(b->build_id, id);
        else
            id[0] = 0;
        row(q, st, "ussusoo", (uint64_t)i, b->module ? b->path : exe, id[0] ? id : NULL, (uint64_t)!b->module,
            b->module ? NULL : exe, !b->module, (uint64_t)b->exe_matches, b->have_load, b->load_bias);
    }
    sqlite3_finalize(st);
}

static void write_functions(struct out_sqlite *q, const struct out_view *v)
{
    const struct funcstats *fs = &v->a->funcs;
    sqlite3_stmt *st = prepare(q, "INSERT INTO function VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (size_t i = 0; i < fs->n; i++) {
        const struct funcstats_entry *e = &fs->v[i];
        const struct symbol *sym = v->funcs ? &v->funcs[i] : NULL;
        row(q, st, "ussoao", (uint64_t)i, sym ? sym->name : NULL, sym ? sym->file : NULL, sym && sym->line,
            (uint64_t)(sym ? sym->line : 0), e->addr, e->bin != FUNCSTATS_OTHER_BIN, (uint64_t)e->bin);
    }
    sqlite3_finalize(st);
}

struct hist_rows {
    struct out_sqlite *q;
    sqlite3_stmt *st;
    uint32_t id;
};

static void hist_row(void *ctx, uint32_t index, uint64_t count)
{
    struct hist_rows *h = ctx;
    uint64_t lo, hi;
    hist_bucket_range(index, &lo, &hi);
    row(h->q, h->st, "uuuu", (uint64_t)h->id, lo, hi, count);
}

/* func_stats: the JSON report's rows, in its order (rank), from the same
 * entries; and each one's histogram. */
static int write_func_stats(struct out_sqlite *q, const struct out_view *v)
{
    const struct funcstats *fs = &v->a->funcs;
    struct report_opts ro = {0};
    if (v->report)
        ro = *v->report;
    ro.top = 0;
    ro.only_called = v->a->filtering;
    size_t rows;
    uint32_t *order = report_rows(fs, v->funcs, &ro, &rows);
    if (!order)
        return -1;
    sqlite3_stmt *st = prepare(q, "INSERT INTO func_stats VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                                  " ?12, ?13, ?14, ?15)");
    struct hist_rows h = {q, prepare(q, "INSERT INTO func_hist VALUES (?1, ?2, ?3, ?4)"), 0};
    for (size_t i = 0; i < rows; i++) {
        const struct funcstats_entry *e = &fs->v[order[i]];
        const struct symbol *sym = v->funcs ? &v->funcs[order[i]] : NULL;
        row(q, st, "ussouuuuuuuuuuu", (uint64_t)order[i], sym ? sym->name : NULL, sym ? sym->file : NULL,
            sym && sym->line, (uint64_t)(sym ? sym->line : 0), e->calls, e->incl_ns, e->self_ns,
            e->lat.n ? e->lat.min : 0, e->lat.n ? e->lat.max : 0, funcstats_mean(e), hist_percentile(&e->lat, 50),
            hist_percentile(&e->lat, 90), hist_percentile(&e->lat, 99), (uint64_t)e->lower_bound, (uint64_t)i + 1);
        h.id = order[i];
        hist_each_bucket(&e->lat, hist_row, &h);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(h.st);
    free(order);
    return 0;
}

/* The caller-callee pairs the pass summed, as call_edges' rows. */
static void write_edges(struct out_sqlite *q)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO call_edge_data VALUES (?1, ?2, ?3, ?4, ?5)");
    for (size_t i = 0; i < q->nedges; i++) {
        const struct out_sqlite_edge *e = &q->edges[i];
        row(q, st, "uuuuu", (uint64_t)e->caller, (uint64_t)e->callee, e->calls, e->dur_ns, e->self_ns);
    }
    sqlite3_finalize(st);
}

static void write_thread_func_stats(struct out_sqlite *q, const struct out_view *v)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO thread_func_stats VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
                                  " ?10, ?11, ?12)");
    for (size_t i = 0; i < q->ntf; i++) {
        const struct funcstats_entry *e = &q->tf[i];
        const struct symbol *sym = v->funcs ? &v->funcs[e->addr] : NULL;
        int h = e->lat.n > 0; /* summary traces: no per-thread histogram, only the longest call */
        row(q, st, "uusuuuouuooo", (uint64_t)e->bin, e->addr, sym ? sym->name : NULL, e->calls, e->incl_ns,
            e->self_ns, h, e->lat.min, e->lat.max, funcstats_mean(e), h, hist_percentile(&e->lat, 50), h,
            hist_percentile(&e->lat, 90), h, hist_percentile(&e->lat, 99));
    }
    sqlite3_finalize(st);
}

struct note_rows {
    struct out_sqlite *q;
    sqlite3_stmt *st;
};

static void note_row(void *ctx, const char *note)
{
    struct note_rows *n = ctx;
    row(n->q, n->st, "s", note);
}

/* The notes analyze prints, and the advice after them, in their order. */
static void write_notes(struct out_sqlite *q, const struct out_view *v)
{
    struct note_rows n = {q, prepare(q, "INSERT INTO notes (text) VALUES (?1)")};
    notes_each(v->a, note_row, &n);
    if (advice_each(v, note_row, &n) < 0)
        q->oom = 1;
    sqlite3_finalize(n.st);
}

static void write_triggers(struct out_sqlite *q, const struct analysis *a)
{
    sqlite3_stmt *st = prepare(q, "INSERT INTO trigger_call VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    sqlite3_stmt *fr = prepare(q, "INSERT INTO trigger_frame VALUES (?1, ?2, ?3)");
    for (size_t i = 0; i < a->ntriggers; i++) {
        const struct analysis_trigger *g = &a->triggers[i];
        row(q, st, "uuduou", (uint64_t)i + 1, (uint64_t)g->thread, g->ns - origin(a), g->took_ns,
            g->call != UINT32_MAX, (uint64_t)g->call, g->outer);
        for (uint32_t k = 0; k < g->nframes; k++)
            row(q, fr, "uuo", (uint64_t)i + 1, (uint64_t)k, g->frames[k] != UINT32_MAX, (uint64_t)g->frames[k]);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(fr);
}

static void write_intervals(struct out_sqlite *q, const struct analysis *a)
{
    const struct timeline *tl = &a->timeline;
    sqlite3_stmt *st = prepare(q, "INSERT INTO interval_stats VALUES (?1, ?2, ?3, ?4, ?5)");
    for (size_t i = 0; i < tl->n; i++) {
        const struct timeline_entry *e = &tl->e[i];
        row(q, st, "uuuuu", e->interval * tl->width_ns, (uint64_t)e->id, e->calls, e->incl_ns, e->self_ns);
    }
    sqlite3_finalize(st);
}

int out_sqlite_finish(struct out_sqlite *q, const struct out_view *v)
{
    const struct analysis *a = v->a;
    if (q->err[0]) {
        clear_progress(q);
        return -1;
    }
    write_meta(q, v);
    write_sources(q, a);
    write_processes(q, a);
    write_threads(q, a);
    write_modules(q, a);
    write_functions(q, v);
    if (write_func_stats(q, v) < 0)
        q->oom = 1;
    write_thread_func_stats(q, v);
    write_edges(q);
    write_notes(q, v);
    write_triggers(q, a);
    write_intervals(q, a);
    if (q->oom && !q->err[0])
        snprintf(q->err, sizeof q->err, "out of memory");
    if (q->progress_shown)
        say_progress(q, "calls written, building the indexes");
    int bad = q->err[0] || exec(q, "COMMIT", "committing the load") < 0 || exec(q, indexes, "building the indexes") < 0;
    clear_progress(q);
    if (bad)
        return -1;
    sqlite3_finalize(q->slice);
    sqlite3_finalize(q->cut);
    q->slice = q->cut = NULL;
    if (sqlite3_close(q->db) != SQLITE_OK) {
        fail(q, "closing the database");
        return -1;
    }
    q->db = NULL;
    return 0;
}
