/*
 * top_view.c - callsight top's frame as lines (see top_view.h): a header,
 * one line per source, then the functions sorted by the chosen column.
 * cmd/top.c prints the lines (--once) or draws them with ncurses.
 */
#include "top_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "analysis/naming.h"
#include "read/elf_buildid.h"
#include "report.h"

static const char *const sort_words[TOP_SORTS] = {"self/int", "self", "calls", "calls/s", "incl", "max"};

const char *top_view_sort_word(enum top_sort s)
{
    return s < TOP_SORTS ? sort_words[s] : "?";
}

void top_view_init(struct top_view *v, struct live *l, const struct analysis_exe *exes, size_t nexes)
{
    memset(v, 0, sizeof *v);
    v->l = l;
    v->exes = exes;
    v->nexes = nexes;
    v->source = -1;
    v->max_rows = 20;
}

void top_view_free(struct top_view *v)
{
    if (v->names)
        symbols_free(v->names, v->nnamed);
    free(v->names);
    memset(v, 0, sizeof *v);
}

/* ---- names ------------------------------------------------------------- */

/* The --exe a function of binary bin is named from (analysis/naming.h,
 * without the build-id check analyze makes first, and without looking for
 * shared objects' own files); NULL: none (a shared object without its own
 * --exe, a binary whose build-id no --exe has, the "[other]" row, no --exe
 * at all).  A binary that recorded no build-id (an older runtime) is named
 * from the first --exe, on trust, as analyze names it. */
static const char *exe_for(const struct top_view *v, uint32_t bin)
{
    struct naming n = {v->exes, v->nexes, NULL, NULL, 0};
    char *owned;
    int oom = 0;
    return naming_file(&n, &v->l->a, bin, &owned, NULL, 0, &oom);
}

/* A program among functions [from, to) whose build-id no --exe has: said
 * once, since its functions show by address where analyze would refuse the
 * --exe given (it was rebuilt since, or is another program). */
static void say_foreign(struct top_view *v, size_t from, size_t to, char *msg, size_t msglen)
{
    const struct analysis *a = &v->l->a;
    const struct funcstats *fs = &a->funcs;
    char hex[33];
    for (size_t i = from; i < to && !v->said_foreign && v->nexes; i++) {
        uint32_t bin = fs->v[i].bin;
        if (bin == FUNCSTATS_OTHER_BIN || bin >= a->nbins)
            continue;
        const struct analysis_bin *b = &a->bins[bin];
        if (b->module || !b->have_build_id || b->exe_matches)
            continue;
        elf_buildid_hex(b->build_id, hex);
        snprintf(msg, msglen, "the traced program's build-id %.16s... is no --exe's: its functions by address",
                 hex);
        v->said_foreign = 1;
    }
}

/* Functions [from, to) of file exe, looked up in one libdw pass. */
static int name_from(struct top_view *v, const char *exe, size_t from, size_t to, char *msg, size_t msglen)
{
    const struct funcstats *fs = &v->l->a.funcs;
    size_t n = 0;
    uint64_t *addrs = malloc((to - from) * sizeof *addrs);
    uint32_t *ids = malloc((to - from) * sizeof *ids);
    struct symbol *syms = calloc(to - from, sizeof *syms);
    int rc = !addrs || !ids || !syms ? -1 : 0;
    for (size_t i = from; !rc && i < to; i++)
        if (exe_for(v, fs->v[i].bin) == exe) {
            ids[n] = (uint32_t)i;
            addrs[n++] = fs->v[i].addr;
        }
    char why[256];
    struct naming nm = {v->exes, v->nexes, NULL, NULL, 0};
    if (!rc && n && naming_lookup(&nm, exe, addrs, n, syms, why, sizeof why) < 0) {
        if (!v->names_failed)
            snprintf(msg, msglen, "--exe %s: %s; functions shown by address", exe, why);
        v->names_failed = 1;
    } else
        for (size_t k = 0; !rc && k < n; k++)
            v->names[ids[k]] = syms[k]; /* the strings move over */
    free(addrs);
    free(ids);
    free(syms);
    return rc;
}

int top_view_names(struct top_view *v, char *msg, size_t msglen)
{
    const struct funcstats *fs = &v->l->a.funcs;
    size_t from = v->nnamed, to = fs->n;
    msg[0] = 0;
    if (to <= from)
        return 0;
    if (to > v->capnames) {
        struct symbol *p = realloc(v->names, to * sizeof *p);
        if (!p)
            return -1;
        v->names = p;
        v->capnames = to;
    }
    memset(v->names + from, 0, (to - from) * sizeof *v->names);
    v->nnamed = to;
    for (size_t e = 0; e < v->nexes; e++) {
        int first = 1; /* one pass per distinct file */
        for (size_t c = 0; c < e; c++)
            first &= strcmp(v->exes[c].path, v->exes[e].path) != 0;
        if (first && name_from(v, v->exes[e].path, from, to, msg, msglen) < 0)
            return -1;
    }
    if (fs->other != UINT32_MAX && fs->other >= from && !(v->names[fs->other].name = strdup("[other]")))
        return -1;
    if (!msg[0])
        say_foreign(v, from, to, msg, msglen);
    return 0;
}

/* ---- the frame ------------------------------------------------------------ */

static void source_label(const struct analysis_source *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s %u", analysis_source_word(s), s->id);
}

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0.0;
}

/* The series beyond --max-series: never off the frame, since their events
 * are in none of its counts. */
static void over_line(const struct live *l, void (*line)(void *, const char *), void *ctx)
{
    char buf[256];
    if (!l->over.series)
        return;
    snprintf(buf, sizeof buf,
             "    + %llu series not analyzed, beyond --max-series %zu (raise it to see them): %llu file%s, %llu bytes",
             (unsigned long long)l->over.series, l->max_series, (unsigned long long)l->over.files,
             l->over.files == 1 ? "" : "s", (unsigned long long)l->over.bytes);
    line(ctx, buf);
}

static void source_lines(struct top_view *v, void (*line)(void *, const char *), void *ctx)
{
    const struct live *l = v->l;
    char buf[256], label[48];
    char wire[32];
    snprintf(buf, sizeof buf, "%3s %-14s %-12s %12s %12s %10s %8s %5s", "#", "source", "state", "events/s",
             "wire B/s", "dropped", "drop/int", "ctl");
    line(ctx, buf);
    /* ended sources (not the chosen one) beyond the room left give way,
     * the earliest first: the latest ended are the ones kept */
    size_t ended = 0, hide, hidden = 0;
    for (size_t i = 0; i < l->nsrcs; i++)
        ended += l->srcs[i].state == LIVE_ENDED && (long)i != v->source;
    size_t active = l->nsrcs - ended;
    size_t ended_room = !v->max_sources ? ended : v->max_sources > active ? v->max_sources - active : 0;
    hide = ended > ended_room ? ended - ended_room : 0;
    if (!l->nsrcs)
        line(ctx, "    (no trace files here yet: serve's --out, or a TRACE_DIR)");
    for (size_t i = 0; i < l->nsrcs; i++) {
        const struct live_source *s = &l->srcs[i];
        if (hidden < hide && s->state == LIVE_ENDED && (long)i != v->source) {
            hidden++;
            continue;
        }
        source_label(&l->a.src[i], label, sizeof label);
        if (s->have_wire)
            snprintf(wire, sizeof wire, "%.0f", per_s(s->i_wire, l->interval_s));
        else
            snprintf(wire, sizeof wire, "-"); /* not streaming through a serve that says it */
        /* live control: the latest generation its threads applied (its
         * setting is in analyze's notes and ctl --list), "-" for none */
        const struct analysis_source *as = &l->a.src[i];
        uint64_t gen = 0;
        for (uint32_t k = 0; k < as->nctl; k++)
            gen = as->ctl[k].gen > gen ? as->ctl[k].gen : gen;
        char ctl[24] = "-";
        if (gen)
            snprintf(ctl, sizeof ctl, "%llu%s", (unsigned long long)gen, as->ctl_more ? "+" : "");
        snprintf(buf, sizeof buf, "%c%2zu %-14s %-12s %12.0f %12s %10llu %8llu %5s", (long)i == v->source ? '>' : ' ',
                 i + 1, label, live_state_word(s->state), per_s(s->i_records, l->interval_s), wire,
                 (unsigned long long)s->dropped, (unsigned long long)s->i_dropped, ctl);
        line(ctx, buf);
    }
    if (hidden) {
        snprintf(buf, sizeof buf, "    ... and %zu ended source%s, not shown for room (--once shows all)", hidden,
                 hidden == 1 ? "" : "s");
        line(ctx, buf);
    }
    over_line(l, line, ctx);
}

/* A row and the value it is sorted by. */
struct ranked {
    const struct live_func *f;
    uint64_t key;
};

static uint64_t sort_key(const struct live_func *f, enum top_sort s)
{
    switch (s) {
    case TOP_SORT_SELF: return f->self_ns;
    case TOP_SORT_CALLS: return f->calls;
    case TOP_SORT_RATE: return f->i_calls;
    case TOP_SORT_INCL: return f->incl_ns;
    case TOP_SORT_MAX: return f->max_ns;
    default: return f->i_self_ns;
    }
}

/* Largest first; then by total self time, then by function id, so frames
 * are reproducible. */
static int cmp_ranked(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? 1 : -1;
    if (a->f->self_ns != b->f->self_ns)
        return a->f->self_ns < b->f->self_ns ? 1 : -1;
    return a->f->func < b->f->func ? -1 : a->f->func > b->f->func;
}

/* The rows of the chosen view that have calls, sorted; NULL when out of
 * memory (*n 0 and a non-NULL result when there are none). */
static struct ranked *ranked_rows(const struct top_view *v, size_t *n)
{
    const struct live *l = v->l;
    const struct live_func *rows = v->source < 0 ? l->all : l->rows;
    size_t nrows = v->source < 0 ? l->nall : l->nrows;
    struct ranked *r = malloc((nrows ? nrows : 1) * sizeof *r);
    *n = 0;
    if (!r)
        return NULL;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].calls && (v->source < 0 || rows[i].src == (uint32_t)v->source))
            r[(*n)++] = (struct ranked){&rows[i], sort_key(&rows[i], v->sort)};
    qsort(r, *n, sizeof *r, cmp_ranked);
    return r;
}

int top_view_first(const struct top_view *v, uint64_t *addr, uint64_t build_id[2], char *name, size_t len)
{
    size_t n;
    struct ranked *r = ranked_rows(v, &n);
    int rc = -1;
    if (r && n) {
        const struct funcstats_entry *e = &v->l->a.funcs.v[r[0].f->func];
        const struct analysis *a = &v->l->a;
        const struct analysis_bin *b = e->bin < a->nbins ? &a->bins[e->bin] : NULL;
        if (b && !b->module) {
            *addr = e->addr;
            build_id[0] = b->have_build_id ? b->build_id[0] : 0;
            build_id[1] = b->have_build_id ? b->build_id[1] : 0;
            report_label_short(r[0].f->func < v->nnamed ? &v->names[r[0].f->func] : NULL,
                               (unsigned long long)e->addr, name, len);
            rc = 0;
        }
    }
    free(r);
    return rc;
}

/* The function columns, left to right; `drop` orders which go first on a
 * screen too narrow for them all and a name (0: always shown). */
enum top_col { COL_CALLS, COL_RATE, COL_SELF, COL_INCL, COL_SELF_INT, COL_MAX, COL_P99, TOP_COLS };
static const struct {
    const char *head;
    int w, drop;
} cols[TOP_COLS] = {
    {"calls", 12, 0}, {"calls/s", 10, 4}, {"self_ms", 12, 0}, {"incl_ms", 12, 2},
    {"self_ms/int", 12, 0}, {"max_us", 11, 3}, {"p99_us", 11, 1},
};
#define TOP_NAME_ROOM 32 /* columns kept for "name (file:line)" before numbers go */

/* Which columns this frame shows: all, or as many as leave the name room. */
static unsigned shown_cols(const struct top_view *v)
{
    unsigned shown = (1u << TOP_COLS) - 1;
    size_t need = TOP_NAME_ROOM + 1;
    for (int c = 0; c < TOP_COLS; c++)
        need += (size_t)cols[c].w + 1;
    for (int d = 1; v->width && need > v->width && d < TOP_COLS; d++)
        for (int c = 0; c < TOP_COLS; c++)
            if (cols[c].drop == d) {
                shown &= ~(1u << c);
                need -= (size_t)cols[c].w + 1;
            }
    return shown;
}

static void func_line(const struct top_view *v, unsigned shown, const struct live_func *f, char *buf,
                      size_t len)
{
    const struct funcstats_entry *e = &v->l->a.funcs.v[f->func];
    char label[1024], cell[TOP_COLS][32];
    size_t at = 0;
    report_label_short(f->func < v->nnamed ? &v->names[f->func] : NULL, (unsigned long long)e->addr, label,
                       sizeof label);
    /* a summary row a full device table lacks (funcstats.h): a lower bound,
     * as the report marks it; analysis_finish has not run yet, so asked here */
    int lower = e->lower_bound || e->sum_full < v->l->a.summary_full_tables;
    snprintf(cell[COL_CALLS], sizeof cell[0], "%s%llu", lower ? ">=" : "", (unsigned long long)f->calls);
    snprintf(cell[COL_RATE], sizeof cell[0], "%.0f", per_s(f->i_calls, v->l->interval_s));
    snprintf(cell[COL_SELF], sizeof cell[0], "%.3f", (double)f->self_ns / 1e6);
    snprintf(cell[COL_INCL], sizeof cell[0], "%.3f", (double)f->incl_ns / 1e6);
    snprintf(cell[COL_SELF_INT], sizeof cell[0], "%.3f", (double)f->i_self_ns / 1e6);
    snprintf(cell[COL_MAX], sizeof cell[0], "%.3f", (double)f->max_ns / 1e3);
    if (v->source < 0) /* the function table's histogram is across sources */
        snprintf(cell[COL_P99], sizeof cell[0], "%.3f", (double)hist_percentile(&e->lat, 99) / 1e3);
    else
        snprintf(cell[COL_P99], sizeof cell[0], "-");
    for (int c = 0; c < TOP_COLS && at < len; c++)
        if (shown & 1u << c)
            at += (size_t)snprintf(buf + at, len - at, "%s%*s", at ? " " : "", cols[c].w, cell[c]);
    /* a name wider than the room left loses its middle, not its end: the
     * method and file:line that tell two rows apart stay on the screen */
    if (v->width && v->width > at + 2)
        report_elide(label, v->width - at - 2);
    if (at < len)
        snprintf(buf + at, len - at, "  %s", label);
}

static void func_head(unsigned shown, char *buf, size_t len)
{
    size_t at = 0;
    for (int c = 0; c < TOP_COLS && at < len; c++)
        if (shown & 1u << c)
            at += (size_t)snprintf(buf + at, len - at, "%s%*s", at ? " " : "", cols[c].w, cols[c].head);
    if (at < len)
        snprintf(buf + at, len - at, "  function (file:line)");
}

int top_view_frame(struct top_view *v, const char *title, void (*line)(void *ctx, const char *text), void *ctx)
{
    char buf[1400], which[64] = "every source";
    size_t n;
    if (v->source >= (long)v->l->nsrcs)
        v->source = -1;
    if (v->source >= 0)
        source_label(&v->l->a.src[v->source], which, sizeof which);
    /* calls as well as events: a summary trace has calls and no events */
    snprintf(buf, sizeof buf, "%s  refresh %llu  interval %.2f s  events %llu  calls %llu  functions %zu", title,
             (unsigned long long)v->l->refreshes, v->l->interval_s, (unsigned long long)v->l->a.events,
             (unsigned long long)v->l->a.calls_selected, v->l->a.funcs.n);
    line(ctx, buf);
    source_lines(v, line, ctx);
    snprintf(buf, sizeof buf, "functions of %s, by %s:", which, top_view_sort_word(v->sort));
    line(ctx, "");
    line(ctx, buf);
    unsigned shown = shown_cols(v);
    func_head(shown, buf, sizeof buf);
    line(ctx, buf);
    struct ranked *r = ranked_rows(v, &n);
    if (!r)
        return -1;
    for (size_t i = 0; i < n && (!v->max_rows || i < v->max_rows); i++) {
        func_line(v, shown, r[i].f, buf, sizeof buf);
        line(ctx, buf);
    }
    free(r);
    return 0;
}
