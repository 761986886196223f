/*
 * trace_runs.c - the runs among local trace files (see trace_runs.h): each
 * local series' first segment's header gives its run's clock anchor; the
 * files' modification times say which run is the newest.
 */
#include "trace_runs.h"
#include "trace_reader.h"
#include "lib/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void trace_runs_free(struct trace_runs *runs)
{
    free(runs->v);
    free(runs->of);
    memset(runs, 0, sizeof *runs);
}

/* The anchor of a series' first segment; 0 ok, -1 unreadable. */
static int series_anchor(struct trace_reader *r, const struct trace_series *s, uint64_t *ticks, uint64_t *ns)
{
    char msg[256];
    if (!s->nsegs || trace_reader_open(r, s->segs[0].path, msg, sizeof msg) < 0)
        return -1;
    *ticks = r->hdr.t0_ticks;
    *ns = r->hdr.t0_ns;
    trace_reader_close(r);
    return 0;
}

/* The latest modification time of a series' segments into *sec, *nsec. */
static void series_mtime(const struct trace_series *s, int64_t *sec, long *nsec)
{
    struct stat st;
    for (size_t i = 0; i < s->nsegs; i++) {
        if (stat(s->segs[i].path, &st) != 0)
            continue;
        if ((int64_t)st.st_mtim.tv_sec > *sec || ((int64_t)st.st_mtim.tv_sec == *sec && st.st_mtim.tv_nsec > *nsec)) {
            *sec = (int64_t)st.st_mtim.tv_sec;
            *nsec = st.st_mtim.tv_nsec;
        }
    }
}

static size_t run_index(struct trace_runs *runs, size_t *cap, uint64_t ticks, uint64_t ns)
{
    for (size_t i = 0; i < runs->n; i++)
        if (runs->v[i].t0_ticks == ticks && runs->v[i].t0_ns == ns)
            return i;
    if (vec_grow(&runs->v, cap, runs->n, sizeof *runs->v, 8) < 0)
        return TRACE_RUNS_NONE;
    runs->v[runs->n] = (struct trace_run){ticks, ns, UINT32_MAX, 0, 0, INT64_MIN, 0};
    return runs->n++;
}

static int later(const struct trace_run *a, const struct trace_run *b)
{
    if (a->mtime_s != b->mtime_s)
        return a->mtime_s > b->mtime_s;
    if (a->mtime_ns != b->mtime_ns)
        return a->mtime_ns > b->mtime_ns;
    return a->t0_ns > b->t0_ns;
}

/* Runs in the order they started, the series' indexes renumbered. */
static void sort_runs(struct trace_runs *runs)
{
    for (size_t i = 1; i < runs->n; i++) { /* few runs: insertion sort, with the renumbering */
        for (size_t j = i; j > 0 && runs->v[j - 1].t0_ns > runs->v[j].t0_ns; j--) {
            struct trace_run t = runs->v[j];
            runs->v[j] = runs->v[j - 1];
            runs->v[j - 1] = t;
            for (size_t k = 0; k < runs->nof; k++)
                if (runs->of[k] == j)
                    runs->of[k] = j - 1;
                else if (runs->of[k] == j - 1)
                    runs->of[k] = j;
        }
    }
    runs->newest = 0;
    for (size_t i = 1; i < runs->n; i++)
        if (later(&runs->v[i], &runs->v[runs->newest]))
            runs->newest = i;
}

int trace_runs_find(const struct trace_files *tf, struct trace_runs *runs)
{
    memset(runs, 0, sizeof *runs);
    size_t cap = 0;
    struct trace_reader *r = malloc(sizeof *r);
    runs->of = malloc((tf->nseries ? tf->nseries : 1) * sizeof *runs->of);
    if (!r || !runs->of)
        goto oom;
    runs->nof = tf->nseries;
    uint32_t *last_pid = NULL;
    for (size_t i = 0; i < tf->nseries; i++) {
        const struct trace_series *s = &tf->series[i];
        uint64_t ticks, ns;
        runs->of[i] = TRACE_RUNS_NONE;
        if (s->kind != TRACE_SERIES_LOCAL || series_anchor(r, s, &ticks, &ns) < 0)
            continue;
        size_t k = run_index(runs, &cap, ticks, ns);
        if (k == TRACE_RUNS_NONE)
            goto oom;
        uint32_t *lp = realloc(last_pid, cap * sizeof *lp);
        if (!lp)
            goto oom;
        last_pid = lp;
        struct trace_run *run = &runs->v[k];
        if (!run->nseries || last_pid[k] != s->id) /* a pid's series are next to each other */
            run->npids++;
        last_pid[k] = s->id;
        run->pid = s->id < run->pid ? s->id : run->pid;
        run->nseries++;
        series_mtime(s, &run->mtime_s, &run->mtime_ns);
        runs->of[i] = k;
    }
    free(last_pid);
    free(r);
    sort_runs(runs);
    return 0;
oom:
    free(r);
    trace_runs_free(runs);
    return -1;
}

size_t trace_runs_of_pid(const struct trace_files *tf, const struct trace_runs *runs, uint32_t pid)
{
    for (size_t i = 0; i < tf->nseries && i < runs->nof; i++)
        if (runs->of[i] != TRACE_RUNS_NONE && tf->series[i].id == pid)
            return runs->of[i];
    return TRACE_RUNS_NONE;
}

void trace_runs_keep(struct trace_files *tf, const struct trace_runs *runs, size_t keep)
{
    size_t n = 0;
    for (size_t i = 0; i < tf->nseries; i++) {
        size_t run = i < runs->nof ? runs->of[i] : TRACE_RUNS_NONE;
        if (run == TRACE_RUNS_NONE || run == keep)
            tf->series[n++] = tf->series[i];
        else
            free(tf->series[i].segs);
    }
    tf->nseries = n;
}

/* "pid 4200 (12:01:10)", or "pid 4200 and 2 forked (12:01:10)". */
static void run_words(const struct trace_run *run, char *buf, size_t len)
{
    char when[32] = "?";
    time_t t = (time_t)run->mtime_s;
    struct tm tm;
    if (run->mtime_s != INT64_MIN && localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    if (run->npids > 1)
        snprintf(buf, len, "pid %u and %u forked (%s)", run->pid, run->npids - 1, when);
    else
        snprintf(buf, len, "pid %u (%s)", run->pid, when);
}

void trace_runs_list(const struct trace_runs *runs, size_t skip, size_t max, char *buf, size_t len)
{
    size_t shown = 0, used = 0, others = 0;
    char one[96];
    buf[0] = '\0';
    for (size_t i = 0; i < runs->n; i++) {
        if (i == skip)
            continue;
        others++;
        if (shown == max)
            continue;
        run_words(&runs->v[i], one, sizeof one);
        used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", shown++ ? ", " : "", one);
        if (used >= len)
            return;
    }
    if (others > shown)
        snprintf(buf + used, len - used, " and %zu more", others - shown);
}

#define TRACE_RUNS_NAMED 8 /* runs a note names; the rest counted */

void trace_runs_note(const struct trace_runs *runs, size_t chosen, int all, char *buf, size_t len)
{
    char list[800], one[96];
    buf[0] = '\0';
    if (runs->n < 2)
        return;
    if (all) {
        trace_runs_list(runs, TRACE_RUNS_NONE, TRACE_RUNS_NAMED, list, sizeof list);
        snprintf(buf, len, "%zu runs merged into this report (--all-runs): %s; --run PID reports one", runs->n,
                 list);
        return;
    }
    run_words(&runs->v[chosen], one, sizeof one);
    trace_runs_list(runs, chosen, TRACE_RUNS_NAMED, list, sizeof list);
    snprintf(buf, len, "%zu runs in these traces (a run: one program start, with what it forked); this report is "
             "%s %s; not in it: %s; --run PID reports another, --all-runs all of them together (or remove the old "
             "trace files)", runs->n, chosen == runs->newest ? "the newest," : "the one of --run,", one, list);
}
