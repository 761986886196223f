/*
 * diff.c - `callsight diff BASE.json NEW.json`: what changed per function
 * between two `analyze --format json` reports, and a gate for CI.
 *
 * Both reports are read whole, parsed with jansson and checked against the
 * schema;
 * functions are matched by name and source file (base name), or by address
 * when they have no name.  Rows are printed by the size of their change on
 * the key, largest first; with --fail-over PCT the exit status is 1 when
 * any function's key grew by more than PCT percent (a function new in NEW,
 * or up from 0, counts as grown without bound).  Exact call counts make a
 * gate on --key calls deterministic.  Times are not: with --min-ms MS a
 * time that grew by less than MS milliseconds does not count against the
 * gate however large its percentage (0.486 to 0.753 ms is +55% of noise).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "lib/fileopen.h"
#include "out/out_json.h"

#define PROG "callsight diff"
#define DIFF_MAX_BYTES ((size_t)1 << 30) /* a report larger than this is not ours */

enum key { KEY_CALLS, KEY_SELF, KEY_INCL, KEY_P99 };
static const char *const key_names[] = {"calls", "self", "incl", "p99"};
static const char *const key_fields[] = {"calls", "self_ns", "incl_ns", "p99_ns"};

struct row {
    char *id;      /* "name (file)" or the address */
    uint64_t v[2]; /* base, new */
    int in[2];     /* present in base, new */
};

struct table {
    struct row *rows;
    size_t n, cap;
};

struct diff_opts {
    const char *path[2];
    enum key key;
    int gate;
    double pct;
    int has_floor;    /* --min-ms given */
    double floor_ns;  /* --min-ms, in ns: growth below it does not count */
};

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight diff BASE.json NEW.json [--key calls|self|incl|p99] [--fail-over PCT]\n"
"                     [--min-ms MS]\n"
"\n"
"Compare two reports of 'callsight analyze --format json', function by\n"
"function (matched by name and source file, or by address when unnamed).\n"
"\n"
"options:\n"
"  --key K          what to compare: calls, self (self time, the default),\n"
"                   incl (inclusive time) or p99 (99th percentile call time)\n"
"  --fail-over PCT  exit 1 when any function's key grew by more than PCT\n"
"                   percent (a function new in NEW, or up from 0, counts)\n"
"  --min-ms MS      a time that grew by less than MS milliseconds does not\n"
"                   count against --fail-over, whatever its percentage (a\n"
"                   floor for noise; time keys only)\n"
"  -h, --help       print this help\n"
"\n"
"output: a summary line, then one row per function whose key changed,\n"
"largest change first:\n"
"  base new delta change function       (times in ms, calls as counts;\n"
"                                        change in %%, 'new' or 'gone')\n"
"and a row is marked REGRESSED when it is over --fail-over.\n"
"\n"
"Exit status: 0 no regression, 1 a function regressed over PCT, 2 usage\n"
"error or a report that cannot be read.\n");
}

static int parse_args(int argc, char **argv, struct diff_opts *o)
{
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        if ((!strcmp(a, "--key") || !strcmp(a, "--fail-over") || !strcmp(a, "--min-ms")) && i + 1 >= argc) {
            fprintf(stderr, PROG ": %s needs a value (try '" PROG " --help')\n", a);
            return 2;
        }
        if (!strcmp(a, "--key")) {
            const char *v = argv[++i];
            size_t k = 0;
            while (k < 4 && strcmp(v, key_names[k]))
                k++;
            if (k == 4) {
                fprintf(stderr, PROG ": --key needs calls, self, incl or p99, not '%s'\n", v);
                return 2;
            }
            o->key = (enum key)k;
        } else if (!strcmp(a, "--fail-over")) {
            const char *v = argv[++i];
            char *end;
            errno = 0;
            o->pct = strtod(v, &end);
            if (errno || end == v || *end || !(o->pct >= 0) || isinf(o->pct)) {
                fprintf(stderr, PROG ": --fail-over needs a percentage >= 0, not '%s'\n", v);
                return 2;
            }
            o->gate = 1;
        } else if (!strcmp(a, "--min-ms")) {
            const char *v = argv[++i];
            char *end;
            errno = 0;
            double ms = strtod(v, &end);
            if (errno || end == v || *end || !(ms >= 0) || isinf(ms)) {
                fprintf(stderr, PROG ": --min-ms needs milliseconds >= 0, not '%s'\n", v);
                return 2;
            }
            o->floor_ns = ms * 1e6;
            o->has_floor = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PROG ": unknown option '%s' (try '" PROG " --help')\n", a);
            return 2;
        } else if (npaths < 2) {
            o->path[npaths++] = a;
        } else {
            fprintf(stderr, PROG ": give two reports, BASE.json and NEW.json\n");
            return 2;
        }
    }
    if (npaths != 2) {
        fprintf(stderr, PROG ": give two reports, BASE.json and NEW.json (try '" PROG " --help')\n");
        return 2;
    }
    if (o->has_floor && o->key == KEY_CALLS) {
        fprintf(stderr, PROG ": --min-ms is a floor for times: use it with --key self, incl or p99, not calls\n");
        return 2;
    }
    return 0;
}

/* The whole file, NUL-terminated, in *out, opened only as a regular file
 * (a FIFO or a directory named by mistake must neither block nor read as
 * an I/O error).  0 ok; -1 with msg set (without the path). */
static int read_file(const char *path, char **out, size_t *len, char *msg, size_t msglen)
{
    char m[512];
    if (fileopen_read(path, DIFF_MAX_BYTES, out, len, m, sizeof m) == 0)
        return 0;
    size_t pl = strlen(path);
    const char *why = !strncmp(m, path, pl) && m[pl] == ':' && m[pl + 1] == ' ' ? m + pl + 2 : m;
    if (!strcmp(why, "not a regular file"))
        snprintf(msg, msglen, "not a report file: diff compares two JSON reports (callsight analyze DIR --exe BIN "
                              "--format json -o FILE)");
    else if (!strncmp(why, "larger than", 11))
        snprintf(msg, msglen, "%.400s: not a callsight report", why);
    else
        snprintf(msg, msglen, "%.450s", why);
    return -1;
}

/* The string under key, or NULL when there is none (or obj is no object). */
static const char *get_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* The whole number >= 0 under key into *v; 0 when there is none. */
static int get_count(const json_t *obj, const char *key, uint64_t *v)
{
    const json_t *n = json_object_get(obj, key);
    if (!json_is_integer(n) || json_integer_value(n) < 0)
        return 0;
    *v = (uint64_t)json_integer_value(n);
    return 1;
}

/* "name (file base name)", or the address; NULL when the row is bad. */
static char *row_id(const json_t *f)
{
    const char *name = get_str(f, "name"), *file = get_str(f, "file"), *addr = get_str(f, "addr");
    char buf[2048];
    if (name) {
        const char *base = file ? strrchr(file, '/') : NULL;
        const char *fs = file ? (base ? base + 1 : file) : NULL;
        snprintf(buf, sizeof buf, fs ? "%s (%s)" : "%s", name, fs);
    } else if (addr) {
        snprintf(buf, sizeof buf, "%s", addr);
    } else {
        return NULL;
    }
    return strdup(buf);
}

/* Add one report row to side `side` of the table.  0 ok, -1 msg set. */
static int add_row(struct table *t, const json_t *f, enum key key, int side, size_t i,
                   char *msg, size_t msglen)
{
    uint64_t v = 0;
    char *id = row_id(f);
    if (!id || !get_count(f, key_fields[key], &v)) {
        snprintf(msg, msglen, "functions[%zu]: %s", i,
                 !id ? "neither \"name\" nor \"addr\"" : "no whole number for the key");
        free(id);
        return -1;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct row *rows = realloc(t->rows, cap * sizeof *rows);
        if (!rows) {
            free(id);
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
        t->rows = rows;
        t->cap = cap;
    }
    struct row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->v[side] = v;
    r->in[side] = 1;
    return 0;
}

static int cmp_id(const void *pa, const void *pb)
{
    return strcmp(((const struct row *)pa)->id, ((const struct row *)pb)->id);
}

/* Rows of both reports sorted by id, then one row per id.  The same id
 * twice in one report (static functions in files of one base name) is
 * summed, for p99 the larger taken. */
static void merge_rows(struct table *t, enum key key)
{
    size_t out = 0;
    qsort(t->rows, t->n, sizeof *t->rows, cmp_id);
    for (size_t i = 0; i < t->n; i++) {
        struct row *r = &t->rows[i], *m = out ? &t->rows[out - 1] : NULL;
        if (!m || strcmp(m->id, r->id)) {
            t->rows[out++] = *r;
            continue;
        }
        for (int s = 0; s < 2; s++) {
            uint64_t a = m->v[s], b = r->v[s];
            m->v[s] = key == KEY_P99 ? (a > b ? a : b) : a + b;
            m->in[s] |= r->in[s];
        }
        free(r->id);
    }
    t->n = out;
}

/* Check the report's identity and add its functions.  0 ok, -1 msg set. */
static int add_report(struct table *t, const json_t *doc, enum key key, int side, char *msg,
                      size_t msglen)
{
    const char *format = get_str(doc, "format");
    const json_t *funcs = json_object_get(doc, "functions");
    uint64_t version = 0;
    if (!format || strcmp(format, OUT_JSON_FORMAT)) {
        snprintf(msg, msglen, "not a callsight report (no \"format\": \"%s\")", OUT_JSON_FORMAT);
        return -1;
    }
    if (!get_count(doc, "version", &version) || version != OUT_JSON_VERSION) {
        snprintf(msg, msglen, "report version is not %d", OUT_JSON_VERSION);
        return -1;
    }
    if (!json_is_array(funcs)) {
        snprintf(msg, msglen, "no \"functions\" array");
        return -1;
    }
    for (size_t i = 0; i < json_array_size(funcs); i++)
        if (add_row(t, json_array_get(funcs, i), key, side, i, msg, msglen) < 0)
            return -1;
    return 0;
}

/* Parse text[0..len) as one JSON document; NULL with msg set (line and column). */
static json_t *parse(const char *text, size_t len, char *msg, size_t msglen)
{
    json_error_t e;
    json_t *doc = json_loadb(text, len, 0, &e);
    if (!doc)
        snprintf(msg, msglen, "line %d column %d: %s", e.line, e.column, e.text);
    return doc;
}

/* Read, parse and add one report; 0 ok, else reported. */
static int load(struct table *t, const struct diff_opts *o, int side)
{
    char msg[512], *text = NULL;
    size_t len;
    json_t *doc = NULL;
    int rc = -1;
    if (read_file(o->path[side], &text, &len, msg, sizeof msg) == 0 &&
        (doc = parse(text, len, msg, sizeof msg))) {
        rc = add_report(t, doc, o->key, side, msg, sizeof msg);
        json_decref(doc);
    }
    free(text);
    if (rc < 0)
        fprintf(stderr, PROG ": %s: %s\n", o->path[side], msg);
    return rc;
}

static double delta(const struct row *r)
{
    return (double)r->v[1] - (double)r->v[0];
}

static int cmp_change(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    double da = fabs(delta(a)), db = fabs(delta(b));
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->id, b->id);
}

/* Over the gate's percentage, before the floor. */
static int over_pct(const struct row *r, const struct diff_opts *o)
{
    if (!o->gate || r->v[1] <= r->v[0])
        return 0;
    return r->v[0] == 0 || delta(r) * 100.0 > o->pct * (double)r->v[0];
}

/* Over the percentage but grown by less than --min-ms: noise, not counted. */
static int under_floor(const struct row *r, const struct diff_opts *o)
{
    return o->has_floor && over_pct(r, o) && delta(r) < o->floor_ns;
}

static int regressed(const struct row *r, const struct diff_opts *o)
{
    return over_pct(r, o) && !under_floor(r, o);
}

static void print_row(const struct row *r, const struct diff_opts *o)
{
    char change[32];
    if (!r->in[0])
        snprintf(change, sizeof change, "new");
    else if (!r->in[1])
        snprintf(change, sizeof change, "gone");
    else if (!r->v[0])
        snprintf(change, sizeof change, "+inf%%");
    else
        snprintf(change, sizeof change, "%+.1f%%", 100.0 * delta(r) / (double)r->v[0]);
    if (o->key == KEY_CALLS)
        printf("%12llu %12llu %+13.0f %8s  %s", (unsigned long long)r->v[0],
               (unsigned long long)r->v[1], delta(r), change, r->id);
    else
        printf("%12.3f %12.3f %+13.3f %8s  %s", (double)r->v[0] / 1e6, (double)r->v[1] / 1e6,
               delta(r) / 1e6, change, r->id);
    puts(regressed(r, o) ? "  REGRESSED" : under_floor(r, o) ? "  (under --min-ms)" : "");
}

static int report(struct table *t, const struct diff_opts *o)
{
    size_t changed = 0, worse = 0, noise = 0;
    qsort(t->rows, t->n, sizeof *t->rows, cmp_change);
    for (size_t i = 0; i < t->n; i++) {
        changed += t->rows[i].v[0] != t->rows[i].v[1] || t->rows[i].in[0] != t->rows[i].in[1];
        worse += regressed(&t->rows[i], o);
        noise += under_floor(&t->rows[i], o);
    }
    printf("diff: key=%s functions=%zu changed=%zu", key_names[o->key], t->n, changed);
    if (o->gate)
        printf(" regressed=%zu (over %g%%)", worse, o->pct);
    if (o->gate && o->has_floor)
        printf(" under_min_ms=%zu (grew less than %g ms)", noise, o->floor_ns / 1e6);
    printf("\n\n%12s %12s %13s %8s  %s\n", o->key == KEY_CALLS ? "base" : "base_ms",
           o->key == KEY_CALLS ? "new" : "new_ms", o->key == KEY_CALLS ? "delta" : "delta_ms",
           "change", "function");
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].v[0] != t->rows[i].v[1] || t->rows[i].in[0] != t->rows[i].in[1])
            print_row(&t->rows[i], o);
    return worse ? 1 : 0;
}

int cmd_diff(int argc, char **argv)
{
    struct diff_opts o = {{NULL, NULL}, KEY_SELF, 0, 0, 0, 0};
    struct table t = {NULL, 0, 0};
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (load(&t, &o, 0) < 0 || load(&t, &o, 1) < 0) {
        rc = 2;
    } else {
        merge_rows(&t, o.key);
        rc = report(&t, &o);
    }
    for (size_t i = 0; i < t.n; i++)
        free(t.rows[i].id);
    free(t.rows);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": writing the report: %s\n", strerror(errno));
        rc = 2;
    }
    return rc;
}
