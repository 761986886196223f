/*
 * api.c - the JSON API of `callsight ui` (see api.h and docs/ui.md).  The
 * report is analyze's JSON as it wrote it; everything else is read from
 * the database of the same pass (docs/sql.md) or its folded stacks, and
 * every string that came from a trace or a binary is escaped as JSON
 * requires (textesc_put_json), never pasted.
 */
#include "api.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/textesc.h"

#define LIST_MAX 100       /* callers, callees, slowest calls */
#define FLAME_NODES 2000   /* the flame graph's nodes by default ... */
#define FLAME_NODES_MAX 20000
#define FLAME_DEPTH 512
#define TIMELINE_PX 1000   /* the timeline's width in pixels by default ... */
#define TIMELINE_PX_MAX 10000
#define TIMELINE_CALLS 5000 /* calls in one answer */
#define DIFF_TEXT (256u << 10) /* diff's output: at most this */

/* The answer being written. */
struct out {
    FILE *f;
    char *buf;
    size_t len;
};

static int out_open(struct out *o)
{
    o->buf = NULL, o->len = 0;
    o->f = open_memstream(&o->buf, &o->len);
    return o->f ? 0 : -1;
}

static void out_done(struct out *o, struct ui_reply *r, int status)
{
    if (fclose(o->f) != 0) {
        free(o->buf);
        o->buf = NULL, o->len = 0;
    }
    r->status = status, r->body = o->buf, r->len = o->len, r->type = "application/json";
}

static void reply_error(struct ui_reply *r, int status, const char *msg)
{
    struct out o;
    if (out_open(&o) < 0) {
        r->status = 500, r->body = NULL;
        return;
    }
    fputs("{\"error\": ", o.f);
    textesc_put_json(o.f, msg);
    fputs("}\n", o.f);
    out_done(&o, r, status);
}

/* A decimal or 0x number no larger than max; def when absent.  -1 if
 * malformed. */
static int arg_u64(ui_arg_fn arg, void *ctx, const char *name, uint64_t def, uint64_t max, uint64_t *v)
{
    const char *s = arg(ctx, name);
    char *end;
    if (!s) {
        *v = def;
        return 0;
    }
    if (!(*s >= '0' && *s <= '9'))
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end || x > max)
        return -1;
    *v = x;
    return 0;
}

/* A statement's rows as a JSON array of objects, at most limit. */
static int rows_json(FILE *f, sqlite3_stmt *st, size_t limit)
{
    int n = sqlite3_column_count(st), rc = SQLITE_DONE; /* limit 0: no step taken */
    size_t rows = 0;
    fputc('[', f);
    while (rows < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        fputs(rows++ ? ",\n  {" : "\n  {", f);
        for (int c = 0; c < n; c++) {
            if (c)
                fputs(", ", f);
            textesc_put_json(f, sqlite3_column_name(st, c));
            fputs(": ", f);
            switch (sqlite3_column_type(st, c)) {
            case SQLITE_INTEGER: fprintf(f, "%lld", (long long)sqlite3_column_int64(st, c)); break;
            case SQLITE_FLOAT: fprintf(f, "%.17g", sqlite3_column_double(st, c)); break;
            case SQLITE_NULL: fputs("null", f); break;
            default: textesc_put_json(f, (const char *)sqlite3_column_text(st, c)); break;
            }
        }
        fputc('}', f);
    }
    fputs(rows ? "\n]" : "]", f);
    return rows < limit && rc != SQLITE_DONE ? -1 : 0;
}

/* One statement with up to 4 integer parameters (INT64_MIN: NULL), its
 * rows written as "name": [...].  0, or -1. */
static int query_rows(FILE *f, sqlite3 *db, const char *name, const char *sql, const int64_t *p, int np,
                      size_t limit)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    for (int i = 0; i < np; i++)
        if (p[i] == INT64_MIN)
            sqlite3_bind_null(st, i + 1);
        else
            sqlite3_bind_int64(st, i + 1, p[i]);
    fprintf(f, "\"%s\": ", name);
    int rc = rows_json(f, st, limit);
    sqlite3_finalize(st);
    return rc;
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t p, int64_t def)
{
    sqlite3_stmt *st = NULL;
    int64_t v = def;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, p);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* ---- /api/traces ---- */

static void trace_entry(struct ui_traces *t, FILE *f, int first, const char *name, const char *path, const char *real)
{
    struct ui_dirstat st;
    if (ui_dirstat(real, &st) < 0 || !st.files)
        return;
    int64_t age = (int64_t)time(NULL) - st.newest;
    /* From the files' times: a stream written in the last 5 s is
     * streaming; after that cut when its report (made when the trace was
     * opened, of these very files) says a connection ended cut, else idle
     * for a minute; local files written in the last 5 s are growing;
     * anything older has ended. */
    const char *state = age < 5 ? (st.stream ? "streaming" : "growing")
                        : st.stream && ui_traces_cut(t, real, st.key) ? "cut"
                        : st.stream && age < 60 ? "idle"
                                                : "ended";
    fputs(first ? "\n  {\"name\": " : ",\n  {\"name\": ", f);
    textesc_put_json(f, name);
    fputs(", \"path\": ", f);
    textesc_put_json(f, path);
    fprintf(f, ", \"files\": %zu, \"bytes\": %" PRIu64 ", \"age_s\": %" PRId64 ", \"mode\": \"%s\", \"state\": \"%s\"}",
            st.files, st.bytes, age, st.stream ? "stream" : "files", state);
}

static void api_traces(struct ui_traces *t, struct ui_reply *r)
{
    struct out o;
    if (out_open(&o) < 0) {
        r->status = 500, r->body = NULL;
        return;
    }
    int listed = 0;
    fputs("{\"traces\": [", o.f);
    for (size_t i = 0; i < t->ndirs; i++) {
        char name[24];
        struct ui_dirstat st;
        snprintf(name, sizeof name, "%zu", i);
        if (ui_dirstat(t->reals[i], &st) == 0 && st.files && listed < UI_TRACES_MAX)
            trace_entry(t, o.f, !listed++, name, t->dirs[i], t->reals[i]);
        char *subs[UI_TRACES_MAX];
        size_t n = ui_traces_list_sub(t, i, subs, UI_TRACES_MAX);
        for (size_t k = 0; k < n; k++) {
            char path[4096], real[4096];
            const char *rel = strchr(subs[k], '/') + 1;
            snprintf(path, sizeof path, "%s/%s", t->dirs[i], rel);
            snprintf(real, sizeof real, "%s/%s", t->reals[i], rel);
            if (listed < UI_TRACES_MAX)
                trace_entry(t, o.f, !listed++, subs[k], path, real);
            free(subs[k]);
        }
    }
    fputs(listed ? "\n]}\n" : "]}\n", o.f);
    out_done(&o, r, 200);
}

/* ---- one trace's answers ---- */

static void api_report(struct ui_trace *tr, struct ui_reply *r)
{
    char *copy = malloc(tr->json_len + 1);
    if (!copy) {
        r->status = 500, r->body = NULL;
        return;
    }
    memcpy(copy, tr->json, tr->json_len + 1);
    r->status = 200, r->body = copy, r->len = tr->json_len, r->type = "application/json";
}

static void api_sources(struct ui_trace *tr, struct ui_reply *r)
{
    struct out o;
    if (out_open(&o) < 0) {
        r->status = 500, r->body = NULL;
        return;
    }
    fputs("{", o.f);
    int bad = query_rows(o.f, tr->db, "meta", "SELECT key, value FROM meta ORDER BY key", NULL, 0, 64) ||
              fputs(",\n", o.f) < 0 ||
              query_rows(o.f, tr->db, "sources", "SELECT * FROM source ORDER BY id", NULL, 0, 1000) ||
              fputs(",\n", o.f) < 0 ||
              query_rows(o.f, tr->db, "threads",
                         "SELECT utid, tid, pid, name, lost, events, calls, self_ns, span_ns FROM thread ORDER BY utid",
                         NULL, 0, 10000);
    fputs("}\n", o.f);
    out_done(&o, r, 200);
    if (bad) {
        free(r->body);
        reply_error(r, 500, sqlite3_errmsg(tr->db));
    }
}

/* The function the request names: id=N (the database's), or addr=0x...
 * with bin=NAME (a report row's addr and binary).  -1 when none. */
static int64_t function_id(struct ui_trace *tr, ui_arg_fn arg, void *ctx, int *bad)
{
    uint64_t v;
    *bad = 0;
    if (arg(ctx, "id")) {
        if (arg_u64(arg, ctx, "id", 0, INT64_MAX, &v) < 0)
            return *bad = 1, -1;
        return query_int(tr->db, "SELECT id FROM function WHERE id = ?1", (int64_t)v, -1);
    }
    if (!arg(ctx, "addr") || arg_u64(arg, ctx, "addr", 0, UINT64_MAX, &v) < 0)
        return *bad = 1, -1;
    const char *bin = arg(ctx, "bin");
    sqlite3_stmt *st = NULL;
    int64_t id = -1;
    if (sqlite3_prepare_v2(tr->db,
                           "SELECT f.id, m.path FROM function f LEFT JOIN module m ON m.id = f.module_id "
                           "WHERE f.addr = ?1 ORDER BY f.id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)v);
    while (id < 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(st, 1);
        const char *base = path ? strrchr(path, '/') : NULL;
        base = base ? base + 1 : path;
        if (!bin || (base && !strcmp(base, bin)))
            id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return id;
}

static void api_function(struct ui_trace *tr, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    int bad;
    uint64_t limit;
    int64_t id = function_id(tr, arg, ctx, &bad);
    if (bad || arg_u64(arg, ctx, "n", 20, LIST_MAX, &limit) < 0) {
        reply_error(r, 400, "name the function with id=N, or addr=0x... and bin=NAME; n at most 100");
        return;
    }
    if (id < 0) {
        reply_error(r, 404, "no such function in this trace");
        return;
    }
    struct out o;
    if (out_open(&o) < 0) {
        r->status = 500, r->body = NULL;
        return;
    }
    int64_t p[2] = {id, (int64_t)limit};
    fprintf(o.f, "{\"id\": %" PRId64 ",\n", id);
    int err =
        query_rows(o.f, tr->db, "function",
                   "SELECT f.id, f.name, f.file, f.line, printf('0x%x', f.addr) AS addr, m.path AS binary "
                   "FROM function f LEFT JOIN module m ON m.id = f.module_id WHERE f.id = ?1",
                   p, 1, 1) ||
        fputs(",\n", o.f) < 0 ||
        query_rows(o.f, tr->db, "stats", "SELECT * FROM func_stats WHERE function_id = ?1", p, 1, 1) ||
        fputs(",\n", o.f) < 0 ||
        query_rows(o.f, tr->db, "hist",
                   "SELECT lo_ns, hi_ns, count FROM func_hist WHERE function_id = ?1 ORDER BY lo_ns", p, 1, 4096) ||
        fputs(",\n", o.f) < 0 ||
        query_rows(o.f, tr->db, "callers",
                   "SELECT e.caller_id AS id, f.name, e.calls, e.dur_ns, e.self_ns FROM call_edge_data e "
                   "LEFT JOIN function f ON f.id = e.caller_id WHERE e.callee_id = ?1 "
                   "ORDER BY e.dur_ns DESC, e.caller_id LIMIT ?2",
                   p, 2, LIST_MAX) ||
        fputs(",\n", o.f) < 0 ||
        query_rows(o.f, tr->db, "callees",
                   "SELECT e.callee_id AS id, f.name, e.calls, e.dur_ns, e.self_ns FROM call_edge_data e "
                   "LEFT JOIN function f ON f.id = e.callee_id WHERE e.caller_id = ?1 "
                   "ORDER BY e.dur_ns DESC, e.callee_id LIMIT ?2",
                   p, 2, LIST_MAX) ||
        fputs(",\n", o.f) < 0 ||
        query_rows(o.f, tr->db, "slowest",
                   "SELECT s.id, s.ts, s.dur, s.self_dur, s.depth, t.tid, t.name AS thread "
                   "FROM slice_data s JOIN thread t ON t.utid = s.thread_id WHERE s.function_id = ?1 "
                   "ORDER BY s.dur DESC, s.id LIMIT ?2",
                   p, 2, LIST_MAX);
    fputs("}\n", o.f);
    out_done(&o, r, 200);
    if (err) {
        free(r->body);
        reply_error(r, 500, sqlite3_errmsg(tr->db));
    }
}

/* ---- /api/flame: the folded stacks as a tree ---- */

struct fnode {
    const char *name; /* into the folded text, len bytes */
    size_t len;
    uint64_t self, total;
    size_t child, next; /* first child, next sibling (0: none) */
};

struct ftree {
    struct fnode *v;
    size_t n, cap;
};

static size_t fchild(struct ftree *t, size_t parent, const char *name, size_t len)
{
    size_t *link = &t->v[parent].child;
    while (*link) {
        struct fnode *c = &t->v[*link];
        if (c->len == len && !memcmp(c->name, name, len))
            return *link;
        link = &c->next;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap * 2;
        struct fnode *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return 0;
        t->v = v, t->cap = cap;
        link = NULL; /* v moved: find the end again */
        link = &t->v[parent].child;
        while (*link)
            link = &t->v[*link].next;
    }
    t->v[t->n] = (struct fnode){name, len, 0, 0, 0, 0};
    *link = t->n;
    return t->n++;
}

static int ftree_build(struct ftree *t, const char *text, size_t len)
{
    t->cap = 1024, t->n = 1;
    if (!(t->v = calloc(t->cap, sizeof *t->v)))
        return -1;
    t->v[0].name = "all", t->v[0].len = 3;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        const char *sp = eol;
        while (sp > p && sp[-1] != ' ')
            sp--;
        if (sp > p) {
            uint64_t v = strtoull(sp, NULL, 10);
            size_t node = 0;
            const char *s = p, *stop = sp - 1;
            while (s < stop) {
                const char *semi = memchr(s, ';', (size_t)(stop - s));
                const char *e = semi ? semi : stop;
                if (!(node = fchild(t, node, s, (size_t)(e - s))))
                    return -1;
                s = e + 1;
            }
            t->v[node].self += v;
        }
        p = eol + 1;
    }
    return 0;
}

static uint64_t ftree_sum(struct ftree *t, size_t i, int depth)
{
    uint64_t sum = t->v[i].self;
    if (depth < FLAME_DEPTH * 4)
        for (size_t c = t->v[i].child; c; c = t->v[c].next)
            sum += ftree_sum(t, c, depth + 1);
    return t->v[i].total = sum;
}

struct femit {
    FILE *f;
    uint64_t min;  /* nodes smaller than this are left out */
    size_t left;   /* nodes still to send */
    uint64_t omitted;
};

static void ftree_emit(struct ftree *t, size_t i, struct femit *e, int depth)
{
    struct fnode *nd = &t->v[i];
    char *name = strndup(nd->name, nd->len);
    fputs("{\"name\": ", e->f);
    textesc_put_json(e->f, name ? name : "?");
    free(name);
    fprintf(e->f, ", \"total\": %" PRIu64 ", \"self\": %" PRIu64, nd->total, nd->self);
    e->left--;
    uint64_t hidden = 0;
    int first = 1;
    for (size_t c = nd->child; c; c = t->v[c].next) {
        if (t->v[c].total < e->min || !e->left || depth >= FLAME_DEPTH) {
            hidden += t->v[c].total;
            e->omitted++;
            continue;
        }
        fputs(first ? ", \"children\": [" : ", ", e->f);
        first = 0;
        ftree_emit(t, c, e, depth + 1);
    }
    fputs(first ? "" : "]", e->f);
    fprintf(e->f, ", \"hidden\": %" PRIu64 "}", hidden);
}

static void api_flame(struct ui_trace *tr, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    uint64_t max;
    if (arg_u64(arg, ctx, "max", FLAME_NODES, FLAME_NODES_MAX, &max) < 0 || max < 1) {
        reply_error(r, 400, "max: the nodes to send, 1 to 20000");
        return;
    }
    struct ftree t = {0};
    struct out o;
    if (ftree_build(&t, tr->folded, tr->folded_len) < 0 || out_open(&o) < 0) {
        free(t.v);
        reply_error(r, 500, "out of memory");
        return;
    }
    ftree_sum(&t, 0, 0);
    /* Level of detail: a node below 1/(2 max) of the whole would be less
     * than a pixel wide on any screen the page is drawn on. */
    struct femit e = {o.f, t.v[0].total / (2 * max), (size_t)max, 0};
    fputs("{\"root\": ", o.f);
    ftree_emit(&t, 0, &e, 0);
    fprintf(o.f, ",\n\"nodes\": %zu, \"omitted\": %" PRIu64 ", \"min_ns\": %" PRIu64 "}\n", (size_t)max - e.left,
            e.omitted, e.min);
    free(t.v);
    out_done(&o, r, 200);
}

/* ---- /api/timeline: the calls in a window, those long enough to see ---- */

/* The calls sent so far: at most TIMELINE_CALLS, more set when there were
 * more to send. */
struct calls {
    FILE *f;
    size_t n;
    int more;
};

/* Columns: id, thread_id, depth, ts, dur, function_id, name. */
static void call_put(struct calls *c, sqlite3_stmt *st)
{
    if (c->n == TIMELINE_CALLS) {
        c->more = 1;
        return;
    }
    fprintf(c->f, "%s\n  {\"id\": %lld, \"thread\": %lld, \"depth\": %lld, \"ts\": %lld, \"dur\": %lld, "
                  "\"function_id\": %lld, \"name\": ",
            c->n++ ? "," : "", (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1),
            (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3),
            (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5));
    textesc_put_json(c->f, (const char *)sqlite3_column_text(st, 6));
    fputc('}', c->f);
}

#define CALL_COLS "SELECT s.id, s.thread_id, s.depth, s.ts, s.dur, s.function_id, f.name, s.parent_id " \
                  "FROM slice_data s LEFT JOIN function f ON f.id = s.function_id "

/* p: from, to, min, limit. */
static int timeline_wide(sqlite3 *db, const int64_t *p, struct calls *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, CALL_COLS "WHERE s.ts < ?2 AND s.ts + s.dur > ?1 AND s.dur >= ?3 "
                                         "ORDER BY s.dur DESC, s.id LIMIT ?4",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    for (int i = 0; i < 4; i++)
        sqlite3_bind_int64(st, i + 1, p[i]);
    while (!c->more && sqlite3_step(st) == SQLITE_ROW)
        call_put(c, st);
    sqlite3_finalize(st);
    return 0;
}

static int timeline_narrow(sqlite3 *db, const int64_t *p, struct calls *c)
{
    sqlite3_stmt *threads = NULL, *last = NULL, *one = NULL, *in = NULL;
    int bad = sqlite3_prepare_v2(db, "SELECT utid FROM thread ORDER BY utid", -1, &threads, NULL) ||
              sqlite3_prepare_v2(db, "SELECT id FROM slice_data WHERE thread_id = ?1 AND ts < ?2 "
                                     "ORDER BY ts DESC LIMIT 1", -1, &last, NULL) ||
              sqlite3_prepare_v2(db, CALL_COLS "WHERE s.id = ?1", -1, &one, NULL) ||
              sqlite3_prepare_v2(db, CALL_COLS "WHERE s.thread_id = ?1 AND s.ts >= ?2 AND s.ts < ?3 "
                                               "AND s.dur >= ?4 ORDER BY s.ts LIMIT ?5", -1, &in, NULL);
    while (!bad && !c->more && sqlite3_step(threads) == SQLITE_ROW) {
        int64_t utid = sqlite3_column_int64(threads, 0);
        /* The calls open at `from`: the last to start before it, and its
         * parents, those still running then. */
        sqlite3_reset(last);
        sqlite3_bind_int64(last, 1, utid);
        sqlite3_bind_int64(last, 2, p[0]);
        int64_t id = sqlite3_step(last) == SQLITE_ROW ? sqlite3_column_int64(last, 0) : -1;
        for (int depth = 0; id >= 0 && depth < 100000 && !c->more; depth++) {
            sqlite3_reset(one);
            sqlite3_bind_int64(one, 1, id);
            if (sqlite3_step(one) != SQLITE_ROW)
                break;
            int64_t ts = sqlite3_column_int64(one, 3), dur = sqlite3_column_int64(one, 4);
            if (ts + dur > p[0] && dur >= p[2])
                call_put(c, one);
            id = sqlite3_column_type(one, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(one, 7);
        }
        sqlite3_reset(in);
        sqlite3_bind_int64(in, 1, utid);
        for (int i = 0; i < 4; i++)
            sqlite3_bind_int64(in, i + 2, p[i]);
        while (!c->more && sqlite3_step(in) == SQLITE_ROW)
            call_put(c, in);
    }
    sqlite3_finalize(threads);
    sqlite3_finalize(last);
    sqlite3_finalize(one);
    sqlite3_finalize(in);
    return bad ? -1 : 0;
}

static void api_timeline(struct ui_trace *tr, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    int64_t span = query_int(tr->db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'span_ns' AND ?1 = ?1", 0, 0);
    uint64_t from, to, px;
    if (arg_u64(arg, ctx, "from", 0, INT64_MAX, &from) < 0 ||
        arg_u64(arg, ctx, "to", span > 0 ? (uint64_t)span : 1, INT64_MAX, &to) < 0 ||
        arg_u64(arg, ctx, "px", TIMELINE_PX, TIMELINE_PX_MAX, &px) < 0 || to <= from || px < 1) {
        reply_error(r, 400, "from < to: ns since the trace's first event; px: 1 to 10000");
        return;
    }
    uint64_t min = (to - from) / px;
    struct out o;
    if (out_open(&o) < 0) {
        r->status = 500, r->body = NULL;
        return;
    }
    fprintf(o.f, "{\"from\": %" PRIu64 ", \"to\": %" PRIu64 ", \"span_ns\": %" PRId64 ", \"min_dur\": %" PRIu64 ",\n",
            from, to, span, min);
    int err = query_rows(o.f, tr->db, "threads", "SELECT utid, tid, pid, name FROM thread ORDER BY utid", NULL, 0,
                         10000);
    int64_t p[4] = {(int64_t)from, (int64_t)to, (int64_t)min, TIMELINE_CALLS + 1};
    struct calls c = {o.f, 0, 0};
    fputs(",\n\"calls\": [", o.f);
    /* A window of under 1/16 of the trace is read thread by thread from
     * the (thread, ts) index: the calls open at its start (the last call
     * to start before it and its parents: calls nest), then those that
     * start in it; a wider one by the longest calls first, the (dur)
     * index, until enough are found.  Either way the cost follows what
     * the window shows, not the trace. */
    if (!err && span > 0 && (to - from) < (uint64_t)span / 16)
        err = timeline_narrow(tr->db, p, &c);
    else if (!err)
        err = timeline_wide(tr->db, p, &c);
    fprintf(o.f, "%s],\n\"truncated\": %s,\n", c.n ? "\n" : "", c.more ? "true" : "false");
    /* What the window cannot show as calls: frames cut short (never
     * returned, or standing for frames lost with their events: placeholder
     * > 0) and the calls that fired TRACE_TRIGGER (their time, ending at
     * ts), at most 1000 each. */
    err = err ||
          query_rows(o.f, tr->db, "cut",
                     "SELECT c.id, c.thread_id AS thread, c.depth, c.ts, c.dur, c.placeholder, f.name "
                     "FROM cut_frame c LEFT JOIN function f ON f.id = c.function_id "
                     "WHERE c.ts < ?2 AND c.ts + c.dur >= ?1 ORDER BY c.ts, c.id",
                     p, 2, 1000) ||
          fputs(",\n", o.f) < 0 ||
          query_rows(o.f, tr->db, "triggers",
                     "SELECT g.id, g.thread_id AS thread, g.ts - g.took_ns AS ts, g.took_ns AS dur, f.name "
                     "FROM trigger_call g LEFT JOIN function f ON f.id = g.function_id "
                     "WHERE g.ts - g.took_ns < ?2 AND g.ts >= ?1 ORDER BY g.ts, g.id",
                     p, 2, 1000);
    fputs("}\n", o.f);
    out_done(&o, r, 200);
    if (err) {
        free(r->body);
        reply_error(r, 500, sqlite3_errmsg(tr->db));
    }
}

/* ---- /api/diff: callsight diff on two traces' reports ---- */

/* Trace name's report, as analyze wrote it, copied to a file of its own in
 * the private directory (path), so that a rebuild cannot change it under
 * diff.  0, or an HTTP status with why in err. */
static int report_copy(struct ui_traces *t, const char *name, char *path, size_t len, char *err, size_t errlen)
{
    int status = 400;
    struct ui_trace *tr = name ? ui_traces_find(t, name, &status, err, errlen) : NULL;
    if (!tr) {
        if (!name)
            snprintf(err, errlen, "a and b: the two traces, N or N/DIR (see /api/traces)");
        return status;
    }
    if (ui_trace_use(t, tr, UI_JSON) < 0) {
        snprintf(err, errlen, "%s", tr->part[UI_JSON].err);
        ui_trace_unlock(tr, UI_JSON);
        return 500;
    }
    snprintf(path, len, "%s/diff.XXXXXX", t->tmp);
    int fd = mkstemp(path);
    int bad = fd < 0 || write(fd, tr->json, tr->json_len) != (ssize_t)tr->json_len;
    if (bad)
        snprintf(err, errlen, "a copy of the report: %s", strerror(errno));
    if (fd >= 0 && close(fd) < 0)
        bad = 1;
    if (bad && fd >= 0)
        unlink(path);
    ui_trace_unlock(tr, UI_JSON);
    return bad ? 500 : 0;
}

static void api_diff(struct ui_traces *t, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    static const char *const keys[] = {"calls", "self", "incl", "p99"};
    const char *key = arg(ctx, "key") ? arg(ctx, "key") : "self";
    size_t k = 0;
    while (k < 4 && strcmp(key, keys[k]))
        k++;
    uint64_t over;
    if (k == 4 || arg_u64(arg, ctx, "fail", 0, 1000000, &over) < 0) {
        reply_error(r, 400, "key: calls, self, incl or p99; fail: a percentage, 0 to 1000000");
        return;
    }
    char pa[300], pb[300], err[300], pct[24];
    int status = report_copy(t, arg(ctx, "a"), pa, sizeof pa, err, sizeof err);
    if (status) {
        reply_error(r, status, err);
        return;
    }
    if ((status = report_copy(t, arg(ctx, "b"), pb, sizeof pb, err, sizeof err))) {
        unlink(pa);
        reply_error(r, status, err);
        return;
    }
    char *argv[10] = {NULL, "diff", pa, pb, "--key", (char *)keys[k], NULL};
    if (arg(ctx, "fail")) {
        snprintf(pct, sizeof pct, "%llu", (unsigned long long)over);
        argv[6] = "--fail-over", argv[7] = pct, argv[8] = NULL;
    }
    char *text = malloc(DIFF_TEXT);
    struct out o;
    if (!text || out_open(&o) < 0) {
        free(text);
        unlink(pa), unlink(pb);
        reply_error(r, 500, "out of memory");
        return;
    }
    int rc = ui_run(t, argv, text, DIFF_TEXT);
    unlink(pa), unlink(pb);
    /* diff names its files in its messages: ours, not the user's */
    fprintf(o.f, "{\"a\": ");
    textesc_put_json(o.f, arg(ctx, "a"));
    fprintf(o.f, ", \"b\": ");
    textesc_put_json(o.f, arg(ctx, "b"));
    fprintf(o.f, ", \"key\": \"%s\", \"status\": %d, \"text\": ", keys[k], rc);
    textesc_put_json(o.f, text);
    fputs("}\n", o.f);
    free(text);
    out_done(&o, r, rc == 0 || rc == 1 ? 200 : 500);
}

void ui_api(struct ui_traces *t, const char *what, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    memset(r, 0, sizeof *r);
    if (!strcmp(what, "traces")) {
        api_traces(t, r);
        return;
    }
    if (!strcmp(what, "diff")) {
        api_diff(t, arg, ctx, r);
        return;
    }
    static const char *const per_trace[] = {"report", "sources", "function", "flame", "timeline"};
    static const enum ui_part needs[] = {UI_JSON, UI_DB, UI_DB, UI_FOLDED, UI_DB};
    size_t k = 0;
    while (k < sizeof per_trace / sizeof per_trace[0] && strcmp(what, per_trace[k]))
        k++;
    if (k == sizeof per_trace / sizeof per_trace[0]) {
        reply_error(r, 404, "no such API: see docs/ui.md");
        return;
    }
    const char *name = arg(ctx, "t");
    char err[256];
    int status = 400;
    struct ui_trace *tr = name ? ui_traces_find(t, name, &status, err, sizeof err) : NULL;
    if (!tr) {
        reply_error(r, status, name ? err : "t: the trace, N or N/DIR (see /api/traces)");
        return;
    }
    if (ui_trace_use(t, tr, needs[k]) < 0) {
        reply_error(r, 500, tr->part[needs[k]].err);
        ui_trace_unlock(tr, needs[k]);
        return;
    }
    switch (k) {
    case 0: api_report(tr, r); break;
    case 1: api_sources(tr, r); break;
    case 2: api_function(tr, arg, ctx, r); break;
    case 3: api_flame(tr, arg, ctx, r); break;
    default: api_timeline(tr, arg, ctx, r); break;
    }
    ui_trace_unlock(tr, needs[k]);
}
