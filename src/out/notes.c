/*
 * notes.c - header line and capture notes (see notes.h): the words for
 * what the analysis counted, which keeps only the counts.
 */
#include "notes.h"

#include <stdarg.h>
#include <string.h>

#include "lib/textesc.h"
#include "read/elf_buildid.h"
#include "trace.h"
#include "trace_shm.h"

#define NOTES_MAX_PROCS 8 /* processes named in a stream's note; the rest counted */

struct emit {
    void (*fn)(void *ctx, const char *note);
    void *ctx;
    const struct analysis *a;
    const struct analysis_source *s;
};

static void emit(const struct emit *e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "%s %u: ", analysis_source_word(e->s), e->s->id);
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    e->fn(e->ctx, buf);
}

static void capture_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    unsigned long long p[ANALYSIS_CAPTURE_CODES];
    for (int i = 0; i < ANALYSIS_CAPTURE_CODES; i++)
        p[i] = s->capture_payload[i];
    if (s->capture_count[TRACE_MARK_BUDGET])
        emit(e, "capture stopped: byte budget %llu reached", p[TRACE_MARK_BUDGET]);
    if (s->capture_count[TRACE_MARK_DISK_FLOOR])
        emit(e, "capture stopped: free disk below the floor of %llu bytes",
             p[TRACE_MARK_DISK_FLOOR]);
    if (s->capture_count[TRACE_MARK_WRITE_ERROR])
        emit(e, "capture stopped: write error: %s (errno %llu)",
             p[TRACE_MARK_WRITE_ERROR] <= 4095 ? strerror((int)p[TRACE_MARK_WRITE_ERROR])
                                               : "unknown error",
             p[TRACE_MARK_WRITE_ERROR]);
    if (s->capture_count[TRACE_MARK_EVENT_LIMIT])
        emit(e, "capture stopped: event limit %llu reached", p[TRACE_MARK_EVENT_LIMIT]);
    static const char *const cause[] = {"unknown", "SIGUSR1", "a slow call (TRACE_TRIGGER)",
                                        "a tracer that died", "callsight trigger"};
    if (s->snapshot)
        emit(e, "flight-recorder snapshot %u, taken for %s: what the ring held then%s; %llu older "
             "events were overwritten before it", (unsigned)s->snapshot,
             cause[s->snapshot_cause < 5 ? s->snapshot_cause : 0],
             s->snapshot_cause == TRACE_SNAPSHOT_CALL ? " (see trigger: below)" : "", p[TRACE_MARK_WRAP]);
    else if (s->capture_count[TRACE_MARK_WRAP] && s->kind == ANALYSIS_SOURCE_PID && p[TRACE_MARK_WRAP])
        emit(e, "TRACE_FULL=wrap: %llu older events were discarded to stay within TRACE_MAX_MB; the "
             "trace kept spans %.3f s up to the end of the run", p[TRACE_MARK_WRAP], (double)analysis_span(e->a) / 1e9);
    else if (s->capture_count[TRACE_MARK_WRAP] && s->kind != ANALYSIS_SOURCE_PID)
        emit(e, "flight recorder wrapped: %llu older events discarded", p[TRACE_MARK_WRAP]);
    if (s->rec_on)
        emit(e, "flight recorder turned on %u time%s by live control (first at %.3f s%s): what the device "
             "recorded then came only as snapshots (series of their own); %llu events were overwritten on the "
             "device before they were shipped.  A hole made on purpose, not loss: calls open across it are "
             "truncated", (unsigned)s->rec_on, s->rec_on == 1 ? "" : "s", (double)(s->rec_on_ns - e->a->start_ns) / 1e9,
             s->rec_off ? "" : ", still on at the end", (unsigned long long)s->rec_over);
    if (s->have_skipped && (s->skipped_over || s->skipped_held))
        emit(e, "flight recorder: triggers that took no snapshot: %llu over trace_stream's "
             "--max-triggers, %llu slow calls within %u ms of one that did",
             (unsigned long long)s->skipped_over, (unsigned long long)s->skipped_held, TRACE_TRIGGER_GAP_MS);
}

/* Live control: each generation applied, in order, in words. */
static void control_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    uint64_t last = 0;
    for (uint32_t k = 0; k < s->nctl; k++) {
        const struct analysis_ctl *c = NULL;
        for (uint32_t i = 0; i < s->nctl; i++) /* the next generation after last */
            if (s->ctl[i].gen > last && (!c || s->ctl[i].gen < c->gen))
                c = &s->ctl[i];
        if (!c)
            break;
        last = c->gen;
        char what[96];
        if (c->flags & TRACE_CTL_UNDER && c->nfuncs >= 0xffffu)
            snprintf(what, sizeof what, "only calls under 1 function (all levels)");
        else if (c->flags & TRACE_CTL_UNDER)
            snprintf(what, sizeof what, "only calls under 1 function (at most %u level%s below it)", c->nfuncs,
                     c->nfuncs == 1 ? "" : "s");
        else if (c->flags & TRACE_CTL_OFF)
            snprintf(what, sizeof what, "all but %u function%s", c->nfuncs, c->nfuncs == 1 ? "" : "s");
        else if (c->flags & TRACE_CTL_ONLY)
            snprintf(what, sizeof what, "only %u function%s", c->nfuncs, c->nfuncs == 1 ? "" : "s");
        else
            snprintf(what, sizeof what, "everything");
        char out[96] = "";
        if (c->flags & TRACE_CTL_THREADS)
            snprintf(out, sizeof out, ", threads by name (%u left out)", c->left_out);
        if (c->flags & TRACE_CTL_TRIGGER) /* its own rule, in place of TRACE_TRIGGER's */
            snprintf(out + strlen(out), sizeof out - strlen(out), ", a trigger set live");
        if (c->mode) /* calls open then stay in their mode */
            snprintf(out + strlen(out), sizeof out - strlen(out), ", %u thread%s switched to %s", c->switched,
                     c->switched == 1 ? "" : "s", c->mode == TRACE_CTL_MODE_SUMMARY ? "summaries" : "events");
        emit(e, "live control: generation %llu from %.3f s: %s%s%s%s, applied by %u thread%s (calls open then "
             "kept their enter's decision)", (unsigned long long)c->gen,
             (double)(c->ns - e->a->start_ns) / 1e9, c->flags & TRACE_CTL_PAUSED ? "paused (" : "recording ", what,
             c->flags & TRACE_CTL_PAUSED ? " when resumed)" : "", out, c->threads, c->threads == 1 ? "" : "s");
    }
    if (s->ctl_more)
        emit(e, "live control: %llu more applications of generations beyond the first %u",
             (unsigned long long)s->ctl_more, ANALYSIS_CTL_GENS);
}

static void loss_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    if (s->gap_events)
        emit(e, "stream gap: %llu events lost in transit", (unsigned long long)s->gap_events);
    if (s->gaps_unknown)
        emit(e, "stream gap: %llu gap(s) of unknown size: events lost in transit, count unknown",
             (unsigned long long)s->gaps_unknown);
    if (s->resumes)
        emit(e, "stream resumed %llu time(s) after its connection was cut",
             (unsigned long long)s->resumes);
    if (s->vanished)
        emit(e, "%llu tracer process(es) vanished (killed?); their open calls were cut "
             "(%llu open frames)", (unsigned long long)s->vanished,
             (unsigned long long)s->dead_frames);
    if (s->have_device)
        emit(e, "device dropped %llu events", (unsigned long long)s->device_dropped);
    /* A thread says what it lost at the head of its next flush that gets
     * in; a thread whose later flushes never got in (it ended, or the ring
     * stayed full until it did) could not say. */
    if (s->have_device && s->device_dropped > s->thread_lost)
        emit(e, "%llu of the device's dropped events are not attributed to a thread (no later "
             "flush of the thread that lost them reached the ring)",
             (unsigned long long)(s->device_dropped - s->thread_lost));
    for (size_t i = 0; i < s->nnotes; i++)
        e->fn(e->ctx, s->notes[i]);
}

/* File mode: a process with calls still open at the end of its data and no
 * clock anchor, which a runtime that says so (TRACE_FLAG_EXIT_RECORD)
 * writes at exit (atexit), was ended by a signal (or _exit): its threads' last buffers never reached the files.
 * Not when its capture stopped (no anchor then either: the stop is said). */
static void exit_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    if (s->kind != ANALYSIS_SOURCE_PID || !s->exit_claimed || s->exit_anchors || !s->open_at_end || s->snapshot)
        return;
    for (int c = TRACE_MARK_BUDGET; c <= TRACE_MARK_EVENT_LIMIT; c++)
        if (s->capture_count[c])
            return;
    emit(e, "ended without a clean exit (killed by a signal? the runtime's exit record is missing, %llu calls were "
         "still open): the events after each thread's last flush (its last batch: up to 2048 events or "
         "TRACE_FLUSH_MS, 100 ms by default) were lost; let the program exit (return from main or call exit(), e.g. on a flag its SIGTERM "
         "handler sets) to keep them", (unsigned long long)s->open_at_end);
}

/* What process p ran: its --exe's file name, or its build-id. */
static void process_binary(const struct analysis *a, const struct analysis_process *p, char *buf,
                           size_t len)
{
    const struct analysis_bin *b = &a->bins[p->bin];
    char hex[33];
    if (b->have_build_id && !b->exe_matches) {
        elf_buildid_hex(b->build_id, hex);
        snprintf(buf, len, "build-id %.16s...", hex);
        return;
    }
    const char *path = b->exe < a->nexes ? a->exes[b->exe].path : "?";
    const char *base = strrchr(path, '/');
    snprintf(buf, len, "%s", base ? base + 1 : path);
}

/* Several processes wrote one ring: say which, and what each ran. */
static void process_notes(const struct emit *e, size_t src)
{
    const struct analysis *a = e->a;
    size_t n = e->s->procs_with_events, shown = 0;
    char list[400] = "", bin[64];
    if (n < 2)
        return;
    for (size_t i = 0; i < a->nprocs && shown < NOTES_MAX_PROCS; i++) {
        const struct analysis_process *p = &a->procs[i];
        if (p->src != src || !p->events)
            continue;
        size_t used = strlen(list);
        process_binary(a, p, bin, sizeof bin);
        if (p->announced)
            snprintf(list + used, sizeof list - used, "%spid %u (%s)", shown ? ", " : "", p->pid, bin);
        else
            snprintf(list + used, sizeof list - used, "%sunannounced (%s)", shown ? ", " : "", bin);
        shown++;
    }
    if (n > shown)
        emit(e, "%zu processes: %s and %zu more", n, list, n - shown);
    else
        emit(e, "%zu processes: %s", n, list);
}

/* The tracer's own time, and the waits a user opted into: both perturb
 * the program being measured, so both are said. */
static void tracer_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    if (s->tracer_flushes)
        emit(e, "tracer time %s: %.3f ms in %llu flushes",
             e->a->keep_tracer_time ? "counted in function times (--keep-tracer-time)"
                                    : "excluded from function times",
             (double)s->tracer_ns / 1e6, (unsigned long long)s->tracer_flushes);
    if (s->waits)
        emit(e, "tracers waited %.3f ms for the ring in %llu flushes (TRACE_SHM_WAIT_US)",
             (double)s->waited_ns / 1e6, (unsigned long long)s->waits);
}

/* Module lists (trace.h, "loaded modules") that could not be used, and
 * addresses none of them held: named as the program's, perhaps wrongly. */
static void module_notes(const struct emit *e)
{
    const struct analysis_source *s = e->s;
    if (s->modlists_damaged)
        emit(e, "%llu module list%s damaged and not used; each thread kept the list before",
             (unsigned long long)s->modlists_damaged, s->modlists_damaged == 1 ? " was" : "s were");
    if (s->outside_modules)
        emit(e, "%llu function addresses were in no module of their thread's list (a module opened and "
             "closed again between two flushes of the thread?): they are named as the program's",
             (unsigned long long)s->outside_modules);
    if (s->shared_modules)
        emit(e, "%llu summary rows are of an address that two modules held in turn: the device's table "
             "adds their calls up, so they are shown by address (event mode names each)",
             (unsigned long long)s->shared_modules);
    if (s->modules_left_out)
        emit(e, "the runtime's table of modules was full: %llu loaded modules are in no list, and their "
             "functions are named as the program's", (unsigned long long)s->modules_left_out);
    uint64_t unlisted = 0;
    for (size_t i = 0; i < e->a->nprocs; i++)
        if (e->a->procs[i].src == (uint32_t)(e->s - e->a->src) && e->a->procs[i].listed)
            unlisted += e->a->procs[i].unlisted;
    if (unlisted && e->s->snapshot)
        emit(e, "%llu function addresses come before their thread's first module list in the snapshot "
             "(the oldest part of the ring; threads write the list again as it is overwritten): they are "
             "named as the program's", (unsigned long long)unlisted);
    else if (unlisted)
        emit(e, "%llu function addresses are from threads that wrote no module list (their flushes found "
             "the list busy for too long?): they are named as the program's", (unsigned long long)unlisted);
}

/* TRACE_MODE=summary: what the numbers are, and what the device could not
 * attribute. */
static void summary_notes(const struct analysis *a, void (*fn)(void *ctx, const char *note), void *ctx)
{
    char buf[512];
    if (!a->summary_threads && !a->summary_damaged && !a->summary_outside)
        return;
    if (a->filter.has_since || a->filter.has_until)
        snprintf(buf, sizeof buf, "summary mode: %llu snapshots from %llu threads end inside the window (%llu "
                 "more are not selected); calls and times are exact for those intervals, min and max within one histogram "
                 "bucket (1/32), percentiles estimates (within 1.6%%)",
                 (unsigned long long)a->summary_snapshots, (unsigned long long)a->summary_threads,
                 (unsigned long long)a->summary_outside);
    else
        snprintf(buf, sizeof buf, "summary mode: %llu snapshots from %llu threads; calls, times, min and max are "
                 "exact, percentiles are estimates from the device's histograms (within 1.6%%)",
                 (unsigned long long)(a->summary_snapshots + a->summary_outside),
                 (unsigned long long)a->threads_with_events);
    fn(ctx, buf);
    if (a->summary_merged) {
        snprintf(buf, sizeof buf, "summary mode: %llu of those are a process's threads merged on the device by "
                 "trace_stream (named \"N threads\"; trace_stream --summary-threads keeps them apart)",
                 (unsigned long long)a->summary_merged);
        fn(ctx, buf);
    }
    for (size_t i = 0; i < a->nprocs; i++) {
        const struct analysis_process *p = &a->procs[i];
        if (!p->sum_threads || p->sum_marked < p->sum_threads || p->sum_exited || p->sum_final == p->sum_threads)
            continue;
        snprintf(buf, sizeof buf, "summary mode: %s %u ended without an exit (killed?): the counts are those of "
                 "each thread's last snapshot, taken every TRACE_SUMMARY_MS", p->announced ? "pid" :
                 analysis_source_word(&a->src[p->src]), p->announced ? p->pid : a->src[p->src].id);
        fn(ctx, buf);
    }
    if (a->summary_budget.refused) {
        snprintf(buf, sizeof buf, "summary mode: %llu snapshots not read: the threads' snapshots held at once "
                 "reached analyze's cap (%zu MiB)", (unsigned long long)a->summary_budget.refused,
                 SUMMARY_MAX_HELD >> 20);
        fn(ctx, buf);
    }
    if (a->timeline.dropped) {
        snprintf(buf, sizeof buf, "summary mode: %llu entries of the interval series were dropped (more distinct "
                 "functions than its room); the totals hold them", (unsigned long long)a->timeline.dropped);
        fn(ctx, buf);
    }
    if (a->summary_damaged) {
        snprintf(buf, sizeof buf, "summary mode: %llu snapshots were torn or damaged and not used (each later "
                 "whole snapshot still holds every count before it)", (unsigned long long)a->summary_damaged);
        fn(ctx, buf);
    }
    if (a->summary_over) {
        char rows[96] = "no row shown misses any";
        if (a->summary_lower_rows)
            snprintf(rows, sizeof rows, "the %llu rows that may miss some are lower bounds (>=)",
                     (unsigned long long)a->summary_lower_rows);
        snprintf(buf, sizeof buf, "summary mode: %llu calls of functions beyond the device's table "
                 "(TRACE_SUMMARY_FUNCS) were counted but not attributed; %s; a larger TRACE_SUMMARY_FUNCS (up to "
                 "65536, the default) attributes them%s", (unsigned long long)a->summary_over, rows,
                 a->summary_merged ? "; in a series trace_stream merged, its merge's "
                                     "own limit counts here too (an older trace_stream's: a few thousand functions), "
                                     "which a newer trace_stream or --summary-threads lifts" : "");
        fn(ctx, buf);
    }
    if (a->summary_deep) {
        snprintf(buf, sizeof buf, "summary mode: %llu calls deeper than the device's shadow stack "
                 "(TRACE_SUMMARY_DEPTH) were not timed; their time is in their callers'",
                 (unsigned long long)a->summary_deep);
        fn(ctx, buf);
    }
    if (a->summary_unmatched) {
        snprintf(buf, sizeof buf, "summary mode: %llu exits matched no open call (longjmp?)",
                 (unsigned long long)a->summary_unmatched);
        fn(ctx, buf);
    }
    if (a->summary_tracer_ns) {
        snprintf(buf, sizeof buf, "summary mode: tracer time excluded from function times: %.3f ms of snapshots",
                 (double)a->summary_tracer_ns / 1e6);
        fn(ctx, buf);
    }
}

/* What analyze's own caps left out or what the files held that is no
 * record: counted, so that nothing is lost silently. */
static void limit_notes(const struct analysis *a, void (*fn)(void *ctx, const char *note), void *ctx)
{
    char buf[512];
    if (a->records_over) {
        snprintf(buf, sizeof buf, "analyze kept %zu threads (--max-threads): %llu records of further threads were "
                 "counted, not analyzed (their calls are in no row)", a->max_threads,
                 (unsigned long long)a->records_over);
        fn(ctx, buf);
    }
    if (a->funcs.other != UINT32_MAX) {
        snprintf(buf, sizeof buf, "analyze kept %zu functions (--max-funcs): the calls of further functions "
                 "are counted in the [other] row (%llu calls)", a->funcs.max,
                 (unsigned long long)a->funcs.v[a->funcs.other].calls);
        fn(ctx, buf);
    }
    if (a->modules_cut_list) {
        snprintf(buf, sizeof buf, "analyze kept %zu modules of a thread's module list (--max-modules): %llu modules "
                 "in the lists of %llu thread(s) were not kept; addresses in them are named as the program's (raw addresses "
                 "or offsets)", a->modules.per_list, (unsigned long long)a->modules_cut_list,
                 (unsigned long long)a->modules_cut_list_threads);
        fn(ctx, buf);
    }
    if (a->modules_cut_bytes) {
        snprintf(buf, sizeof buf, "module lists held at once reached analyze's cap of %zu MiB (--max-modules-mb): "
                 "%llu modules in the lists of %llu thread(s) were not kept; addresses in them are named as the "
                 "program's (raw addresses or offsets)", a->modules.max_bytes >> 20, (unsigned long long)a->modules_cut_bytes,
                 (unsigned long long)a->modules_cut_bytes_threads);
        fn(ctx, buf);
    }
    if (a->modules_cut_addrs) {
        snprintf(buf, sizeof buf, "%llu function addresses were in no module kept of a module list cut by a cap: they "
                 "are named as the program's", (unsigned long long)a->modules_cut_addrs);
        fn(ctx, buf);
    }
    if (a->unnamed_exe) {
        char exe[300];
        textesc(exe, sizeof exe, a->unnamed_exe, TEXTESC_TERMINAL);
        snprintf(buf, sizeof buf, "none of the program's %llu functions has a name in --exe %s: it has no symbols "
                 "(stripped?); give the binary as built, before strip", (unsigned long long)a->unnamed_program, exe);
        fn(ctx, buf);
    }
    if (a->bad_kinds) {
        snprintf(buf, sizeof buf, "%llu of %llu records are of no kind trace.h defines (damaged, or not written "
                 "by callsight?): skipped", (unsigned long long)a->bad_kinds, (unsigned long long)a->records);
        fn(ctx, buf);
    }
}

void notes_each(const struct analysis *a, void (*fn)(void *ctx, const char *note), void *ctx)
{
    if (a->runs_note) /* first: it says what the rest is about */
        fn(ctx, a->runs_note);
    for (size_t i = 0; i < a->nsrc; i++) {
        struct emit e = {fn, ctx, a, &a->src[i]};
        process_notes(&e, i);
        capture_notes(&e);
        exit_notes(&e);
        control_notes(&e);
        loss_notes(&e);
        tracer_notes(&e);
        module_notes(&e);
    }
    summary_notes(a, fn, ctx);
    limit_notes(a, fn, ctx);
}

/* A note may quote a module path or a server a device named: escaped, so
 * that it is one line and drives no terminal. */
static void print_note(void *ctx, const char *note)
{
    fputs("note: ", ctx);
    textesc_put(ctx, note);
    fputc('\n', ctx);
}

void notes_write_text(const struct analysis *a, FILE *out)
{
    fprintf(out,
            "events=%llu threads=%llu functions=%llu span=%.6fs unmatched_exits=%llu "
            "unclosed_enters=%llu dropped=%llu\n",
            (unsigned long long)a->events, (unsigned long long)a->threads_with_events,
            (unsigned long long)a->funcs.n, (double)analysis_span(a) / 1e9,
            (unsigned long long)a->unmatched_exits, (unsigned long long)a->unclosed_enters,
            (unsigned long long)analysis_dropped(a));
    notes_each(a, print_note, out);
}

/* A filter that selected nothing says what there is to select: the
 * threads by name (the first NOTES_MAX_THREADS) or the span. */
#define NOTES_MAX_THREADS 12
static void filter_misses(const struct analysis *a, FILE *out)
{
    const struct analysis_filter *f = &a->filter;
    if (a->calls_selected || !a->calls)
        return;
    size_t selected = 0, with = 0, shown = 0;
    for (size_t i = 0; i < a->nthreads; i++) {
        selected += a->threads[i].selected && a->threads[i].has_events;
        with += a->threads[i].has_events != 0;
    }
    if (f->thread && !selected) {
        fputs("note: --thread ", out);
        textesc_put(out, f->thread);
        fprintf(out, " is none of the %zu threads with calls:", with);
        for (size_t i = 0; i < a->nthreads && shown < NOTES_MAX_THREADS; i++) {
            const struct analysis_thread *t = &a->threads[i];
            if (!t->has_events)
                continue;
            fprintf(out, "%s %u", shown++ ? "," : "", t->tid);
            if (t->name[0]) {
                fputs(" (", out);
                textesc_put(out, t->name);
                fputc(')', out);
            }
        }
        if (with > shown)
            fprintf(out, " and %zu more", with - shown);
        fputs(" (a tid or a name, as given)\n", out);
    }
    double span = (double)analysis_span(a) / 1e9;
    if (f->has_since && (double)f->since_ns / 1e9 >= span)
        fprintf(out, "note: --since %.6fs is at or past the end of the trace: it spans %.6f s from its first event\n",
                (double)f->since_ns / 1e9, span);
}

void notes_write_filter(const struct analysis *a, FILE *out)
{
    const struct analysis_filter *f = &a->filter;
    if (!a->filtering)
        return;
    fputs("filter:", out);
    if (f->thread) {
        fputs(" thread=", out);
        textesc_put(out, f->thread);
    }
    if (f->has_since)
        fprintf(out, " since=%.6fs", (double)f->since_ns / 1e9);
    if (f->has_until)
        fprintf(out, " until=%.6fs", (double)f->until_ns / 1e9);
    if (f->nfuncs) {
        fputs(" function=", out);
        textesc_put(out, f->function ? f->function : "?");
    }
    fprintf(out, ": %llu of %llu calls selected\n", (unsigned long long)a->calls_selected,
            (unsigned long long)a->calls);
    filter_misses(a, out);
}
