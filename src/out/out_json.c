/*
 * out_json.c - the JSON report (see out_json.h).  Written by hand, field by
 * field, in a fixed order, so that the output is stable and diffable.
 */
#include "out_json.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"
#include "advice.h"
#include "notes.h"
#include "report.h"
#include "trace_shm.h" /* TRACE_CTL_*: what a live-control generation set */

/* A string from a device, as JSON (textesc.h). */
static void json_str(FILE *out, const char *s)
{
    textesc_put_json(out, s);
}

static void json_u64(FILE *out, const char *key, uint64_t v, const char *after)
{
    fprintf(out, "\"%s\": %llu%s", key, (unsigned long long)v, after);
}

static void write_summary(FILE *out, const struct analysis *a)
{
    fputs("  \"summary\": {", out);
    json_u64(out, "events", a->events, ", ");
    json_u64(out, "threads", a->threads_with_events, ", ");
    json_u64(out, "functions", a->funcs.n, ", ");
    json_u64(out, "span_ns", analysis_span(a), ", ");
    json_u64(out, "unmatched_exits", a->unmatched_exits, ", ");
    json_u64(out, "unclosed_enters", a->unclosed_enters, ", ");
    json_u64(out, "dropped", analysis_dropped(a), ", ");
    json_u64(out, "calls", a->calls, ", ");
    json_u64(out, "calls_selected", a->calls_selected, "},\n");
}

static void write_filter(FILE *out, const struct analysis *a)
{
    const struct analysis_filter *f = &a->filter;
    fputs("  \"filter\": ", out);
    if (!a->filtering) {
        fputs("null,\n", out);
        return;
    }
    fputs("{\"thread\": ", out);
    json_str(out, f->thread);
    fputs(", \"since_ns\": ", out);
    f->has_since ? fprintf(out, "%lld", (long long)f->since_ns) : fputs("null", out);
    fputs(", \"until_ns\": ", out);
    f->has_until ? fprintf(out, "%lld", (long long)f->until_ns) : fputs("null", out);
    fputs(", \"function\": ", out);
    json_str(out, f->nfuncs ? f->function : NULL);
    fputs("},\n", out);
}

struct note_list {
    FILE *out;
    int n;
};

static void write_note(void *ctx, const char *note)
{
    struct note_list *l = ctx;
    fputs(l->n++ ? ",\n    " : "\n    ", l->out);
    json_str(l->out, note);
}

/* How a source's dropped count was made, and what else it lost. */
static void write_source_losses(FILE *out, const struct analysis_source *s)
{
    fputs("\"device_dropped\": ", out);
    s->have_device ? fprintf(out, "%llu, ", (unsigned long long)s->device_dropped)
                   : fputs("null, ", out);
    /* The counters in the order the format has them, as a table: one line
     * a field, not one call a field. */
    static const struct {
        const char *key;
        size_t off;
    } field[] = {
        {"thread_lost", offsetof(struct analysis_source, thread_lost)},
        {"others_lost", offsetof(struct analysis_source, others_lost)},
        {"gap_events", offsetof(struct analysis_source, gap_events)},
        {"gaps", offsetof(struct analysis_source, gaps)},
        {"gaps_unknown", offsetof(struct analysis_source, gaps_unknown)},
        {"cuts", offsetof(struct analysis_source, cuts)},
        {"resumes", offsetof(struct analysis_source, resumes)},
        {"tracers_vanished", offsetof(struct analysis_source, vanished)},
        {"dead_frames", offsetof(struct analysis_source, dead_frames)},
        {"tracer_ns", offsetof(struct analysis_source, tracer_ns)},
        {"tracer_flushes", offsetof(struct analysis_source, tracer_flushes)},
        {"waited_ns", offsetof(struct analysis_source, waited_ns)},
        {"waits", offsetof(struct analysis_source, waits)},
    };
    size_t n = sizeof field / sizeof field[0];
    for (size_t i = 0; i < n; i++)
        json_u64(out, field[i].key, *(const uint64_t *)(const void *)((const char *)s + field[i].off),
                 i + 1 < n ? ", " : "}");
}

static void write_sources(FILE *out, const struct analysis *a)
{
    fputs("  \"sources\": [", out);
    for (size_t i = 0; i < a->nsrc; i++) {
        const struct analysis_source *s = &a->src[i];
        fprintf(out, "%s\n    {\"kind\": \"%s\", \"id\": %u, ", i ? "," : "",
                analysis_source_word(s), s->id);
        json_u64(out, "dropped", analysis_source_dropped(s), ", ");
        if (s->rec_on) { /* only then: every other source's keys stay as they were */
            json_u64(out, "recorder_on", s->rec_on, ", ");
            json_u64(out, "recorder_overwritten", s->rec_over, ", ");
        }
        if (analysis_source_cut_at_end(s)) /* only then, as recorder_on */
            fputs("\"cut_at_end\": true, ", out);
        write_source_losses(out, s);
    }
    fputs(a->nsrc ? "\n  ],\n" : "],\n", out);
}

static void write_threads(FILE *out, const struct analysis *a)
{
    int n = 0;
    fputs("  \"threads\": [", out);
    for (size_t i = 0; i < a->nthreads; i++) {
        const struct analysis_thread *t = &a->threads[i];
        if (!t->has_events && !t->lost) /* a thread whose every event was lost is still one */
            continue;
        const struct analysis_source *s = &a->src[t->src];
        const struct analysis_process *p = &a->procs[t->proc];
        fprintf(out, "%s\n    {\"source\": \"%s\", \"source_id\": %u, \"tid\": %u, \"pid\": ",
                n++ ? "," : "", analysis_source_word(s), s->id, t->tid);
        p->announced || s->kind == ANALYSIS_SOURCE_PID ? fprintf(out, "%u", p->pid) : fputs("null", out);
        fputs(", \"name\": ", out);
        json_str(out, t->name[0] ? t->name : NULL);
        fprintf(out, ", \"lost\": %llu, ", (unsigned long long)t->lost);
        json_u64(out, "events", t->events, ", ");
        json_u64(out, "calls", t->calls, ", ");
        json_u64(out, "self_ns", t->self_ns, ", ");
        json_u64(out, "span_ns", t->events && t->last_ns > t->first_ns ? (uint64_t)(t->last_ns - t->first_ns) : 0, "}");
    }
    fputs(n ? "\n  ],\n" : "],\n", out);
}

/* The base name of the --exe a binary is named from. */
static const char *binary_name(const struct analysis *a, uint32_t bin)
{
    if (bin == FUNCSTATS_OTHER_BIN)
        return NULL; /* the [other] row: functions beyond --max-funcs, of any binary */
    if (bin < a->nbins && a->bins[bin].module && a->bins[bin].path) {
        const char *slash = strrchr(a->bins[bin].path, '/');
        return slash ? slash + 1 : a->bins[bin].path;
    }
    uint32_t exe = bin < a->nbins ? a->bins[bin].exe : 0;
    if (exe >= a->nexes)
        return NULL;
    const char *slash = strrchr(a->exes[exe].path, '/');
    return slash ? slash + 1 : a->exes[exe].path;
}

static void write_row(FILE *out, const struct out_view *v, uint32_t id)
{
    const struct funcstats_entry *e = &v->a->funcs.v[id];
    const struct symbol *sym = v->funcs ? &v->funcs[id] : NULL;
    fputs("    {\"name\": ", out);
    json_str(out, sym ? sym->name : NULL);
    fputs(", \"file\": ", out);
    json_str(out, sym ? sym->file : NULL);
    sym && sym->line ? fprintf(out, ", \"line\": %lu", sym->line) : fputs(", \"line\": null", out);
    fprintf(out, ", \"addr\": \"0x%llx\", \"binary\": ", (unsigned long long)e->addr);
    json_str(out, binary_name(v->a, e->bin));
    fputs(", ", out);
    json_u64(out, "calls", e->calls, ", ");
    json_u64(out, "incl_ns", e->incl_ns, ", ");
    json_u64(out, "self_ns", e->self_ns, ", ");
    json_u64(out, "min_ns", e->lat.n ? e->lat.min : 0, ", ");
    json_u64(out, "mean_ns", funcstats_mean(e), ", ");
    json_u64(out, "p50_ns", hist_percentile(&e->lat, 50), ", ");
    json_u64(out, "p90_ns", hist_percentile(&e->lat, 90), ", ");
    json_u64(out, "p99_ns", hist_percentile(&e->lat, 99), ", ");
    json_u64(out, "max_ns", e->lat.n ? e->lat.max : 0, e->lower_bound ? ", " : "}");
    if (e->lower_bound) /* only when so: older readers see the rows they knew */
        fputs("\"lower_bound\": true}", out);
}

static int write_functions(FILE *out, const struct out_view *v)
{
    const struct funcstats *fs = &v->a->funcs;
    struct report_opts ro = {0};
    if (v->report)
        ro = *v->report;
    ro.top = 0;
    ro.only_called = v->a->filtering;
    size_t rows;
    uint32_t *order = report_rows(fs, v->funcs, &ro, &rows);
    int n = 0;
    if (!order)
        return -1;
    fputs("  \"functions\": [", out);
    for (size_t i = 0; i < rows; i++) {
        fputs(n++ ? ",\n" : "\n", out);
        write_row(out, v, order[i]);
    }
    fputs(n ? "\n  ],\n" : "],\n", out);
    free(order);
    return 0;
}

/* Slow calls that fired TRACE_TRIGGER, with their stacks (outermost
 * first, the call last; null for a frame entered before the trace). */
static void write_triggers(FILE *out, const struct out_view *v)
{
    const struct analysis *a = v->a;
    int64_t t0 = a->have_start ? a->start_ns : a->first_ns;
    fputs("  \"triggers\": [", out);
    for (size_t i = 0; i < a->ntriggers; i++) {
        const struct analysis_trigger *g = &a->triggers[i];
        const struct analysis_thread *t = &a->threads[g->thread];
        fprintf(out, "%s\n    {\"source\": \"%s\", \"source_id\": %u, \"tid\": %u, \"at_ns\": %lld, ",
                i ? "," : "", analysis_source_word(&a->src[t->src]), a->src[t->src].id, t->tid,
                (long long)(g->ns - t0));
        json_u64(out, "took_ns", g->took_ns, ", ");
        json_u64(out, "outer_frames_unknown", g->outer, ", \"stack\": [");
        for (uint32_t k = 0; k <= g->nframes; k++) {
            uint32_t id = k < g->nframes ? g->frames[k] : g->call;
            fputs(k ? ", " : "", out);
            json_str(out, id != UINT32_MAX && v->funcs ? v->funcs[id].name : NULL);
        }
        fputs("]}", out);
    }
    fputs(a->ntriggers ? "\n  ],\n" : "],\n", out);
}

/* Live control's generations (docs/control.md), per source: when each
 * began (its first thread), what it set, how many threads applied it and
 * how many its thread globs left out or it switched to another mode. */
static void write_control(FILE *out, const struct analysis *a)
{
    static const struct { uint32_t flag; const char *word; } set[] = {
        {TRACE_CTL_PAUSED, "paused"}, {TRACE_CTL_OFF, "off"}, {TRACE_CTL_ONLY, "only"},
        {TRACE_CTL_UNDER, "under"}, {TRACE_CTL_THREADS, "threads"}, {TRACE_CTL_TRIGGER, "trigger"},
        {TRACE_CTL_MODE, "mode"}};
    int64_t t0 = a->have_start ? a->start_ns : a->first_ns;
    size_t n = 0;
    fputs("  \"control\": [", out);
    for (size_t i = 0; i < a->nsrc; i++)
        for (uint32_t k = 0; k < a->src[i].nctl; k++) {
            const struct analysis_ctl *c = &a->src[i].ctl[k];
            fprintf(out, "%s\n    {\"source\": \"%s\", \"source_id\": %u, \"generation\": %llu, \"at_ns\": %lld, "
                    "\"set\": [", n++ ? "," : "", analysis_source_word(&a->src[i]), a->src[i].id,
                    (unsigned long long)c->gen, (long long)(c->ns - t0));
            int w = 0;
            for (size_t f = 0; f < sizeof set / sizeof set[0]; f++)
                if ((c->flags | (c->mode ? TRACE_CTL_MODE : 0u)) & set[f].flag)
                    fprintf(out, "%s\"%s\"", w++ ? ", " : "", set[f].word);
            fprintf(out, "], \"%s\": %u, \"mode\": %s, \"threads_applied\": %u, \"threads_left_out\": %u, "
                    "\"threads_switched\": %u}", c->flags & TRACE_CTL_UNDER ? "depth" : "functions", c->nfuncs,
                    c->mode == TRACE_CTL_MODE_SUMMARY ? "\"summary\"" : c->mode ? "\"events\"" : "null", c->threads,
                    c->left_out, c->switched);
        }
    fputs(n ? "\n  ],\n" : "],\n", out);
}

/* Summary traces: each interval's functions, in the order of the table's
 * ids (stable for one input); null for event traces. */
static void write_intervals(FILE *out, const struct out_view *v)
{
    const struct analysis *a = v->a;
    const struct timeline *tl = &a->timeline;
    fputs("  \"intervals\": ", out);
    if (!a->summary_threads && !a->summary_outside && !a->summary_damaged) {
        fputs("null\n", out);
        return;
    }
    fprintf(out, "{\"width_ns\": %llu, \"dropped\": %llu, \"series\": [", (unsigned long long)tl->width_ns,
            (unsigned long long)tl->dropped);
    for (size_t i = 0; i < tl->n; i++) {
        const struct timeline_entry *e = &tl->e[i];
        const struct symbol *sym = v->funcs ? &v->funcs[e->id] : NULL;
        if (!i || e->interval != tl->e[i - 1].interval)
            fprintf(out, "%s\n    {\"from_ns\": %llu, \"functions\": [", i ? "]}," : "",
                    (unsigned long long)(e->interval * tl->width_ns));
        else
            fputs(", ", out);
        fputs("{\"name\": ", out);
        json_str(out, sym ? sym->name : NULL);
        fprintf(out, ", \"addr\": \"0x%llx\", ", (unsigned long long)a->funcs.v[e->id].addr);
        json_u64(out, "calls", e->calls, ", ");
        json_u64(out, "incl_ns", e->incl_ns, ", ");
        json_u64(out, "self_ns", e->self_ns, "}");
    }
    fputs(tl->n ? "]}\n  ]}\n" : "]}\n", out);
}

int out_json_write(FILE *out, const struct out_view *v)
{
    const struct analysis *a = v->a;
    struct note_list notes = {out, 0};
    fprintf(out, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"title\": ", OUT_JSON_FORMAT,
            OUT_JSON_VERSION);
    json_str(out, v->title);
    fputs(",\n", out);
    write_summary(out, a);
    write_filter(out, a);
    fputs("  \"notes\": [", out);
    notes_each(a, write_note, &notes);
    (void)advice_each(v, write_note, &notes);
    fputs(notes.n ? "\n  ],\n" : "],\n", out);
    write_sources(out, a);
    write_threads(out, a);
    int rc = write_functions(out, v);
    write_triggers(out, v);
    write_control(out, a);
    write_intervals(out, v);
    fputs("}\n", out);
    return rc;
}
