/*
 * jobs.c - the pass over several threads, merged back into one pass' result
 * (see jobs.h for what is guaranteed and when a job is read again).
 *
 * Merging is in two steps: check (read only: whether the job is exactly
 * what one pass would have added, and where each of its sources,
 * processes, binaries, threads and functions goes in the caller's
 * analysis), then apply.  So a job that cannot be merged leaves nothing
 * behind, and its series are simply read again.
 */
#include "jobs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/vec.h"

struct job {
    struct analysis a;
    struct cctree tree;
    struct callsites sites;
    int have_tree, have_sites, started;
    const struct trace_series *series;
    size_t n;
    FILE *diag;    /* its diagnostics, kept until it is merged */
    char *diag_text;
    size_t diag_len;
    pthread_t th;
    /* A part of one series (analysis.h): its run, and its cuts. */
    struct analysis_run *run;
    struct analysis_cut from, to;
    int have_to;
};

/* Where each of a job's things goes in the caller's analysis. */
struct maps {
    uint32_t *src, *proc, *bin, *thread, *func, *node;
    size_t new_bins, new_funcs, new_nodes;
};

/* ---- splitting and starting --------------------------------------------- */

static uint64_t series_bytes(const struct trace_series *s)
{
    uint64_t n = 1; /* an unreadable series still costs an open */
    struct stat st;
    for (size_t i = 0; i < s->nsegs; i++)
        if (stat(s->segs[i].path, &st) == 0 && st.st_size > 0)
            n += (uint64_t)st.st_size;
    return n;
}

/* Contiguous runs of about total/njobs bytes, each at least one series. */
static void split(const struct trace_files *tf, struct job *jobs, size_t njobs)
{
    uint64_t total = 0, sum = 0;
    for (size_t i = 0; i < tf->nseries; i++)
        total += series_bytes(&tf->series[i]);
    size_t next = 0;
    for (size_t j = 0; j < njobs; j++) {
        size_t left = njobs - j - 1; /* each later job keeps one series at least */
        jobs[j].series = &tf->series[next];
        do
            sum += series_bytes(&tf->series[next++]);
        while (next < tf->nseries - left && sum < total / njobs * (j + 1));
        jobs[j].n = (size_t)(&tf->series[next] - jobs[j].series);
    }
    jobs[njobs - 1].n += tf->nseries - next;
}

/* The pre-passed state of a, copied into the job's own analysis. */
static int clone_prepared(struct analysis *d, const struct analysis *a)
{
    d->exes = a->exes;
    d->nexes = a->nexes;
    if (analysis_set_filter(d, &a->filter) < 0 || vec_grow(&d->src, &d->capsrc, 0, sizeof *d->src, a->nsrc + 1) < 0 ||
        vec_grow(&d->procs, &d->capprocs, 0, sizeof *d->procs, a->nprocs + 1) < 0 ||
        vec_grow(&d->bins, &d->capbins, 0, sizeof *d->bins, a->nbins + 1) < 0)
        return -1;
    for (size_t i = 0; i < a->nsrc; i++) {
        d->src[i] = a->src[i];
        if (u64map_put(&d->src_index, (uint64_t)a->src[i].kind << 32 | a->src[i].id, (uint32_t)i) < 0)
            return -1;
    }
    for (size_t i = 0; i < a->nprocs; i++) {
        d->procs[i] = a->procs[i];
        if (u64map_put(&d->proc_index, (uint64_t)a->procs[i].src << 32 | a->procs[i].pid, (uint32_t)i) < 0)
            return -1;
    }
    memcpy(d->bins, a->bins, a->nbins * sizeof *d->bins);
    d->nsrc = a->nsrc;
    d->nprocs = a->nprocs;
    d->nbins = a->nbins;
    d->interval_ns = a->interval_ns;
    d->keep_tracer_time = a->keep_tracer_time;
    d->max_threads = a->max_threads;
    d->max_depth = a->max_depth;
    d->modules.per_list = a->modules.per_list;
    d->modules.max_bytes = a->modules.max_bytes;
    d->funcs.max = a->funcs.max;
    d->have_start = a->have_start;
    d->start_ns = a->start_ns;
    timeline_init(&d->timeline, a->start_ns, a->interval_ns);
    return 0;
}

static int job_init(struct job *j, const struct analysis *a, const struct cctree *tree, int sites)
{
    j->diag = a->diag ? open_memstream(&j->diag_text, &j->diag_len) : NULL;
    analysis_init(&j->a, j->diag, a->prog);
    if ((a->diag && !j->diag) || clone_prepared(&j->a, a) < 0)
        return -1;
    if (tree) {
        j->have_tree = 1;
        if (cctree_init(&j->tree, tree->max_nodes) < 0)
            return -1;
        j->tree.merge_threads = tree->merge_threads;
        if (analysis_add_sink(&j->a, cctree_sink(&j->tree)) < 0)
            return -1;
    }
    if (sites) {
        callsites_init(&j->sites, &j->a.funcs);
        j->have_sites = 1;
        if (analysis_add_sink(&j->a, callsites_sink(&j->sites)) < 0)
            return -1;
    }
    return 0;
}

static void job_free(struct job *j)
{
    analysis_free(&j->a);
    if (j->have_tree)
        cctree_free(&j->tree);
    if (j->have_sites)
        callsites_free(&j->sites);
    if (j->diag)
        fclose(j->diag);
    free(j->diag_text);
}

static void *job_main(void *arg)
{
    struct job *j = arg;
    for (size_t i = 0; i < j->n; i++)
        analysis_run_series(&j->a, &j->series[i]);
    return NULL;
}

/* ---- check: where things go, and whether the job is one pass' ---------- */

static int find_bin(const struct analysis *a, const struct analysis_bin *b, uint32_t *at)
{
    for (size_t i = 1; i < a->nbins; i++) {
        const struct analysis_bin *x = &a->bins[i];
        if (b->have_build_id ? x->build_id[0] == b->build_id[0] && x->build_id[1] == b->build_id[1]
                             : !x->have_build_id && x->path && b->path && !strcmp(x->path, b->path)) {
            *at = (uint32_t)i;
            return 1;
        }
    }
    return 0;
}

/* A source whose markers the pass reads back later (loss and snapshot
 * state, the wrap note): a job that continues it cannot have known them. */
static int source_has_history(const struct analysis_source *s)
{
    return s->gaps || s->cuts || s->resumes || s->capture_count[TRACE_MARK_WRAP] || s->have_device ||
           s->have_skipped || s->snapshot || s->snapshot_cause || s->rec_on || s->rec_off;
}

static int map_sources(const struct analysis *a, const struct analysis *j, struct maps *m)
{
    size_t added = 0;
    for (size_t i = 0; i < j->nsrc; i++) {
        uint32_t at;
        if (!u64map_get(&a->src_index, (uint64_t)j->src[i].kind << 32 | j->src[i].id, &at))
            at = (uint32_t)(a->nsrc + added++);
        else if (j->src[i].records && source_has_history(&a->src[at]))
            return -1;
        m->src[i] = at;
    }
    return 0;
}

static int map_procs(const struct analysis *a, const struct analysis *j, struct maps *m)
{
    size_t added = 0;
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct analysis_process *p = &j->procs[i];
        uint32_t at;
        if (!u64map_get(&a->proc_index, (uint64_t)m->src[p->src] << 32 | p->pid, &at))
            at = (uint32_t)(a->nprocs + added++);
        else if ((p->bias_read && a->procs[at].have_bias) || (p->bin_read && a->procs[at].bin_set))
            return -1; /* it used what an earlier job had set otherwise */
        m->proc[i] = at;
    }
    return 0;
}

static int map_bins(const struct analysis *a, const struct analysis *j, struct maps *m)
{
    m->bin[0] = 0;
    for (size_t i = 1; i < j->nbins; i++)
        if (!find_bin(a, &j->bins[i], &m->bin[i]))
            m->bin[i] = (uint32_t)(a->nbins + m->new_bins++);
    return a->nbins + m->new_bins <= ANALYSIS_MAX_BINS ? 0 : -1;
}

static int map_threads(const struct analysis *a, const struct analysis *j, struct maps *m)
{
    if (a->nthreads + j->nthreads > a->max_threads)
        return -1;
    for (size_t i = 0; i < j->nthreads; i++) {
        uint32_t at;
        if (u64map_get(&a->thread_index, (uint64_t)m->src[j->threads[i].src] << 32 | j->threads[i].tid, &at))
            return -1; /* the thread continues across the cut */
        m->thread[i] = (uint32_t)(a->nthreads + i);
    }
    return 0;
}

static int map_funcs(const struct analysis *a, const struct analysis *j, struct maps *m)
{
    for (size_t i = 0; i < j->funcs.n; i++) {
        const struct funcstats_entry *e = &j->funcs.v[i];
        if (!addrindex_find(&a->funcs.index, m->bin[e->bin], e->addr, &m->func[i]))
            m->func[i] = (uint32_t)(a->funcs.n + m->new_funcs++);
    }
    return a->funcs.n + m->new_funcs <= a->funcs.max ? 0 : -1;
}

/* A node's key in the caller's tree. */
static uint32_t node_key(const struct cctree_node *n, const struct maps *m)
{
    if (n->kind == CCTREE_THREAD)
        return m->thread[n->key];
    return n->kind == CCTREE_FUNC ? m->func[n->key] : n->key;
}

static int map_nodes(const struct cctree *t, const struct cctree *jt, struct maps *m)
{
    if (jt->n >= jt->max_nodes || jt->v[1].calls || jt->overflow)
        return -1; /* the job's tree was full: the caller's would be too */
    m->node[0] = 0;
    m->node[1] = 1;
    for (size_t i = 2; i < jt->n; i++) {
        const struct cctree_node *n = &jt->v[i];
        uint32_t parent = m->node[n->parent];
        if (parent >= t->n || !u64map_get(&t->index, (uint64_t)parent << 32 | node_key(n, m), &m->node[i]))
            m->node[i] = (uint32_t)(t->n + m->new_nodes++);
    }
    return t->n + m->new_nodes <= t->max_nodes ? 0 : -1;
}

static int mergeable(const struct analysis *a, const struct cctree *tree, const struct job *j, struct maps *m)
{
    const struct analysis *ja = &j->a;
    if (!j->started || ja->oom || ja->funcs.oom || ja->summary_records || ja->records_over || ja->bins_over ||
        ja->modules_cut_list || ja->modules_cut_bytes ||
        ja->funcs.other != UINT32_MAX || (j->have_tree && j->tree.oom) || (j->have_sites && j->sites.oom))
        return 0;
    /* a trigger one pass would only count takes no frames, so makes no functions */
    if (a->ntriggers + ja->ntriggers > ANALYSIS_MAX_TRIGGERS)
        return 0;
    m->src = calloc(ja->nsrc + 1, sizeof *m->src);
    m->proc = calloc(ja->nprocs + 1, sizeof *m->proc);
    m->bin = calloc(ja->nbins + 1, sizeof *m->bin);
    m->thread = calloc(ja->nthreads + 1, sizeof *m->thread);
    m->func = calloc(ja->funcs.n + 1, sizeof *m->func);
    m->node = calloc(j->have_tree ? j->tree.n : 1, sizeof *m->node);
    if (!m->src || !m->proc || !m->bin || !m->thread || !m->func || !m->node)
        return 0;
    return map_sources(a, ja, m) == 0 && map_procs(a, ja, m) == 0 && map_bins(a, ja, m) == 0 &&
           map_threads(a, ja, m) == 0 && map_funcs(a, ja, m) == 0 &&
           (!j->have_tree || map_nodes(tree, &j->tree, m) == 0);
}

static void maps_free(struct maps *m)
{
    free(m->src);
    free(m->proc);
    free(m->bin);
    free(m->thread);
    free(m->func);
    free(m->node);
    memset(m, 0, sizeof *m);
}

/* ---- apply ---------------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* A job's (or a part's) row of a function added into the run's. */
static int entry_add(struct funcstats_entry *d, const struct funcstats_entry *s)
{
    d->calls = sat_add(d->calls, s->calls);
    d->incl_ns = sat_add(d->incl_ns, s->incl_ns);
    d->self_ns = sat_add(d->self_ns, s->self_ns);
    d->lat_ns = sat_add(d->lat_ns, s->lat_ns);
    return hist_merge(&d->lat, &s->lat);
}

/* The capture markers' counts and payloads, as on_capture_marker keeps them. */
static void merge_capture(struct analysis_source *d, const struct analysis_source *s)
{
    for (unsigned c = 1; c < ANALYSIS_CAPTURE_CODES; c++) {
        if (!s->capture_count[c])
            continue;
        if (c == TRACE_MARK_WRAP && d->kind == ANALYSIS_SOURCE_PID)
            d->capture_payload[c] = s->capture_payload[c] > d->capture_payload[c] ? s->capture_payload[c]
                                                                                   : d->capture_payload[c];
        else if (c == TRACE_MARK_WRAP)
            d->capture_payload[c] = sat_add(d->capture_payload[c], s->capture_payload[c]);
        else if (!d->capture_count[c])
            d->capture_payload[c] = s->capture_payload[c];
        d->capture_count[c] += s->capture_count[c];
    }
}

/* A source the caller has: the job's records come after its own. */
static void merge_source(struct analysis *a, struct analysis_source *d, struct analysis_source *s)
{
    merge_capture(d, s);
    if (s->have_device) {
        d->have_device = 1;
        d->device_dropped = s->device_dropped;
    }
    d->thread_lost = sat_add(d->thread_lost, s->thread_lost);
    d->others_lost = sat_add(d->others_lost, s->others_lost);
    d->gaps += s->gaps;
    d->gap_events = sat_add(d->gap_events, s->gap_events);
    d->gaps_unknown += s->gaps_unknown;
    d->cuts += s->cuts;
    d->resumes += s->resumes;
    if (s->loss_at) {
        d->loss_at = d->records + s->loss_at;
        d->loss_mark = s->loss_mark;
    }
    d->records += s->records;
    d->vanished = sat_add(d->vanished, s->vanished);
    d->dead_frames += s->dead_frames;
    d->exit_anchors += s->exit_anchors;
    d->exit_claimed |= s->exit_claimed;
    d->open_at_end += s->open_at_end;
    d->modlists_damaged += s->modlists_damaged;
    d->outside_modules += s->outside_modules;
    d->modules_left_out = s->modules_left_out > d->modules_left_out ? s->modules_left_out : d->modules_left_out;
    d->tracer_ns = sat_add(d->tracer_ns, s->tracer_ns);
    d->tracer_flushes += s->tracer_flushes;
    d->waited_ns = sat_add(d->waited_ns, s->waited_ns);
    d->waits += s->waits;
    if (s->snapshot || s->snapshot_cause) {
        d->snapshot = s->snapshot;
        d->snapshot_cause = s->snapshot_cause;
    }
    if (s->rec_on && !d->rec_on)
        d->rec_on_ns = s->rec_on_ns;
    if (s->rec_off)
        d->rec_off_ns = s->rec_off_ns;
    d->rec_on += s->rec_on;
    d->rec_off += s->rec_off;
    d->rec_over = sat_add(d->rec_over, s->rec_over);
    if (s->have_skipped) {
        d->have_skipped = 1;
        d->skipped_over = s->skipped_over;
        d->skipped_held = s->skipped_held;
    }
    d->ctl_more += s->ctl_more;
    for (uint32_t i = 0; i < s->nctl; i++) {
        uint32_t k = 0;
        while (k < d->nctl && d->ctl[k].gen != s->ctl[i].gen)
            k++;
        if (k == d->nctl && k == ANALYSIS_CTL_GENS) {
            d->ctl_more += s->ctl[i].threads;
            continue;
        }
        if (k == d->nctl) {
            d->ctl[d->nctl++] = s->ctl[i];
            continue;
        }
        d->ctl[k].threads += s->ctl[i].threads;
        d->ctl[k].left_out += s->ctl[i].left_out;
        d->ctl[k].switched += s->ctl[i].switched;
        d->ctl[k].mode = s->ctl[i].mode ? s->ctl[i].mode : d->ctl[k].mode;
        d->ctl[k].ns = s->ctl[i].ns < d->ctl[k].ns ? s->ctl[i].ns : d->ctl[k].ns;
    }
    for (size_t i = 0; i < s->nnotes; i++) {
        if (vec_grow(&d->notes, &d->capnotes, d->nnotes, sizeof *d->notes, 16) < 0) {
            a->oom = 1;
            return;
        }
        d->notes[d->nnotes++] = s->notes[i];
        s->notes[i] = NULL;
    }
}

static int apply_sources(struct analysis *a, struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->nsrc; i++) {
        struct analysis_source *s = &j->src[i];
        if (m->src[i] == a->nsrc) { /* new: as the job made it, before its records */
            if (vec_grow(&a->src, &a->capsrc, a->nsrc, sizeof *a->src, 16) < 0 ||
                u64map_put(&a->src_index, (uint64_t)s->kind << 32 | s->id, (uint32_t)a->nsrc) < 0)
                return -1;
            struct analysis_source *d = &a->src[a->nsrc++];
            memset(d, 0, sizeof *d);
            d->kind = s->kind;
            d->id = s->id;
            d->have_anchor = s->have_anchor;
            d->anchor_ticks = s->anchor_ticks;
            d->anchor_ns = s->anchor_ns;
            d->proc = m->proc[s->proc];
        }
        merge_source(a, &a->src[m->src[i]], s);
    }
    return 0;
}

static void merge_proc(struct analysis *a, struct analysis_process *d, const struct analysis_process *s,
                       const struct maps *m)
{
    if (!d->events && s->events)
        a->src[d->src].procs_with_events++;
    d->events += s->events;
    d->announced |= s->announced;
    if (s->have_bias) {
        d->have_bias = 1;
        d->bias = s->bias;
    }
    if (s->bin_set) {
        d->build_id_mixed |= s->build_id_mixed || (d->bin != 0 && d->bin != m->bin[s->bin_first]);
        d->bin = m->bin[s->bin];
        if (!d->bin_set)
            d->bin_first = m->bin[s->bin_first];
        d->bin_set = 1;
    }
    d->bias_read |= s->bias_read;
    d->bin_read |= s->bin_read;
    d->listed |= s->listed;
    d->unlisted += s->unlisted;
}

static int apply_procs(struct analysis *a, const struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->nprocs; i++) {
        const struct analysis_process *s = &j->procs[i];
        if (m->proc[i] == a->nprocs) {
            if (vec_grow(&a->procs, &a->capprocs, a->nprocs, sizeof *a->procs, 16) < 0 ||
                u64map_put(&a->proc_index, (uint64_t)m->src[s->src] << 32 | s->pid, (uint32_t)a->nprocs) < 0)
                return -1;
            memset(&a->procs[a->nprocs], 0, sizeof *a->procs);
            a->procs[a->nprocs].src = m->src[s->src];
            a->procs[a->nprocs++].pid = s->pid;
        }
        merge_proc(a, &a->procs[m->proc[i]], s, m);
    }
    return 0;
}

static int apply_bins(struct analysis *a, struct analysis *j, const struct maps *m)
{
    for (size_t i = 1; i < j->nbins; i++) {
        struct analysis_bin *s = &j->bins[i];
        if (m->bin[i] == a->nbins) {
            if (vec_grow(&a->bins, &a->capbins, a->nbins, sizeof *a->bins, 16) < 0)
                return -1;
            a->bins[a->nbins] = *s;
            a->bins[a->nbins++].proc = m->proc[s->proc];
            s->path = NULL;
            continue;
        }
        struct analysis_bin *d = &a->bins[m->bin[i]];
        d->module |= s->module;
        if (!d->have_load && s->have_load) { /* the earlier series' first, as one job finds it */
            d->load_bias = s->load_bias;
            d->have_load = 1;
        }
        if (!d->id_len && s->id_len) {
            memcpy(d->id_bytes, s->id_bytes, s->id_len);
            d->id_len = s->id_len;
        }
        if (!d->path) {
            d->path = s->path;
            s->path = NULL;
        }
    }
    return 0;
}

static int apply_threads(struct analysis *a, const struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->nthreads; i++) {
        struct analysis_thread t = j->threads[i];
        if (vec_grow(&a->threads, &a->capthreads, a->nthreads, sizeof *a->threads, 16) < 0 ||
            u64map_put(&a->thread_index, (uint64_t)m->src[t.src] << 32 | t.tid, (uint32_t)a->nthreads) < 0)
            return -1;
        t.index = (uint32_t)a->nthreads;
        t.src = m->src[t.src];
        t.proc = m->proc[t.proc];
        a->threads[a->nthreads++] = t;
    }
    a->threads_with_events += j->threads_with_events;
    return 0;
}

static int apply_funcs(struct analysis *a, const struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->funcs.n; i++) {
        const struct funcstats_entry *s = &j->funcs.v[i];
        uint32_t id;
        if (funcstats_id(&a->funcs, m->bin[s->bin], s->addr, &id) < 0 || id != m->func[i])
            return -1;
        if (entry_add(&a->funcs.v[id], s) < 0)
            return -1;
    }
    return 0;
}

static void apply_triggers(struct analysis *a, const struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->ntriggers; i++) {
        if (a->ntriggers == ANALYSIS_MAX_TRIGGERS) {
            a->triggers_more++;
            continue;
        }
        struct analysis_trigger *g = &a->triggers[a->ntriggers++];
        *g = j->triggers[i];
        g->thread = m->thread[g->thread];
        g->call = m->func[g->call];
        for (uint32_t k = 0; k < g->nframes; k++)
            if (g->frames[k] != UINT32_MAX)
                g->frames[k] = m->func[g->frames[k]];
    }
    a->triggers_more += j->triggers_more;
    a->triggers_unselected += j->triggers_unselected;
}

static void apply_totals(struct analysis *a, const struct analysis *j)
{
    if (j->events) {
        a->first_ns = !a->events || j->first_ns < a->first_ns ? j->first_ns : a->first_ns;
        a->last_ns = !a->events || j->last_ns > a->last_ns ? j->last_ns : a->last_ns;
    }
    a->events += j->events;
    a->unmatched_exits += j->unmatched_exits;
    a->unclosed_enters += j->unclosed_enters;
    a->calls += j->calls;
    a->calls_selected += j->calls_selected;
    a->records += j->records;
    a->bad_kinds += j->bad_kinds;
    a->files_read += j->files_read;
    a->files_bad += j->files_bad;
}

static int apply_tree(struct cctree *t, const struct cctree *jt, const struct maps *m)
{
    for (size_t i = 2; i < jt->n; i++) {
        const struct cctree_node *n = &jt->v[i];
        uint32_t parent = m->node[n->parent], key = node_key(n, m), id;
        uint64_t k = (uint64_t)parent << 32 | key;
        if (!u64map_get(&t->index, k, &id)) {
            if (vec_grow(&t->v, &t->cap, t->n, sizeof *t->v, 256) < 0)
                return -1;
            id = (uint32_t)t->n++;
            t->v[id] = (struct cctree_node){parent, key, CCTREE_NONE, t->v[parent].first_child, n->kind, 0, 0, 0, 0};
            t->v[parent].first_child = id;
            if (u64map_put(&t->index, k, id) < 0)
                return -1;
        }
        if (id != m->node[i])
            return -1;
        t->v[id].calls += n->calls;
        t->v[id].incl_ns += n->incl_ns;
        t->v[id].self_ns += n->self_ns;
        t->v[id].cut += n->cut;
    }
    return 0;
}

static int apply_sites(struct callsites *c, const struct callsites *jc, const struct maps *m)
{
    for (size_t i = 0; i < jc->nrows; i++) {
        const struct callsites_row *r = &jc->rows[i];
        if (callsites_add(c, m->bin[jc->sites.bin[r->site]], jc->sites.addr[r->site], m->func[r->func], r->inlined,
                          r->calls, r->incl_ns, r->self_ns) < 0)
            return -1;
    }
    return 0;
}

/* Everything of the job into a (mergeable said where); -1: out of memory. */
static int apply(struct analysis *a, struct cctree *tree, struct callsites *sites, struct job *j,
                 const struct maps *m)
{
    if (apply_sources(a, &j->a, m) < 0 || apply_procs(a, &j->a, m) < 0 || apply_bins(a, &j->a, m) < 0 ||
        apply_threads(a, &j->a, m) < 0 || apply_funcs(a, &j->a, m) < 0)
        return -1;
    apply_triggers(a, &j->a, m);
    apply_totals(a, &j->a);
    if (tree && apply_tree(tree, &j->tree, m) < 0)
        return -1;
    return sites ? apply_sites(sites, &j->sites, m) : 0;
}

/* ---- one series in parts ------------------------------------------------ */

static void *part_main(void *arg)
{
    struct job *j = arg;
    analysis_run_range(j->run, &j->from, j->have_to ? &j->to : NULL);
    return NULL;
}

/* What the part's analysis holds is what the run reading on from its cut
 * would have added (the run's own check, analysis_part_check, does the
 * rest); where its threads go: the run's own, or new ones after them. */
static int part_mergeable(const struct analysis *a, const struct job *j, struct maps *m)
{
    const struct analysis *ja = &j->a;
    size_t added = 0;
    if (!j->started || ja->oom || ja->funcs.oom || ja->summary_records || ja->records_over || ja->bins_over ||
        ja->modules_cut_list || ja->modules_cut_bytes || ja->funcs.other != UINT32_MAX || ja->ntriggers ||
        ja->triggers_more || ja->triggers_unselected || ja->nsrc != a->nsrc || ja->nprocs > a->nprocs ||
        ja->nbins > a->nbins || ja->mode_switches)
        return 0;
    m->thread = calloc(ja->nthreads + 1, sizeof *m->thread);
    m->func = calloc(ja->funcs.n + 1, sizeof *m->func);
    if (!m->thread || !m->func)
        return 0;
    for (size_t i = 0; i < ja->nthreads; i++)
        if (!u64map_get(&a->thread_index, (uint64_t)ja->threads[i].src << 32 | ja->threads[i].tid, &m->thread[i]))
            m->thread[i] = (uint32_t)(a->nthreads + added++);
    return a->nthreads + added <= a->max_threads;
}

static int apply_part_threads(struct analysis *a, const struct analysis *j, const struct maps *m)
{
    for (size_t i = 0; i < j->nthreads; i++) {
        const struct analysis_thread *s = &j->threads[i];
        if (m->thread[i] == a->nthreads) { /* new: as the part made it */
            struct analysis_thread t = *s;
            if (vec_grow(&a->threads, &a->capthreads, a->nthreads, sizeof *a->threads, 16) < 0 ||
                u64map_put(&a->thread_index, (uint64_t)t.src << 32 | t.tid, (uint32_t)a->nthreads) < 0)
                return -1;
            t.index = (uint32_t)a->nthreads;
            a->threads[a->nthreads++] = t;
            a->threads_with_events += (uint64_t)(t.has_events != 0);
            continue;
        }
        struct analysis_thread *d = &a->threads[m->thread[i]];
        if (s->events) {
            d->first_ns = !d->events || s->first_ns < d->first_ns ? s->first_ns : d->first_ns;
            d->last_ns = !d->events || s->last_ns > d->last_ns ? s->last_ns : d->last_ns;
        }
        d->events += s->events;
        if (s->has_events && !d->has_events) {
            d->has_events = 1;
            a->threads_with_events++;
        }
        d->calls += s->calls;
        d->self_ns = sat_add(d->self_ns, s->self_ns);
        if (s->name[0])
            memcpy(d->name, s->name, sizeof d->name);
    }
    return 0;
}

/* The part's functions where analysis_part_check found them (new ones
 * made in the order the part first saw them, as the run would have). */
static int apply_part_funcs(struct analysis *a, const struct analysis *j, const struct analysis_part_func *f,
                            struct maps *m)
{
    for (size_t i = 0; i < j->funcs.n; i++) {
        const struct funcstats_entry *s = &j->funcs.v[i];
        uint32_t id = f[i].id;
        if (!f[i].have && funcstats_id(&a->funcs, f[i].bin, f[i].addr, &id) < 0)
            return -1;
        m->func[i] = id;
        if (entry_add(&a->funcs.v[id], s) < 0)
            return -1;
    }
    return 0;
}

/* Part j after the run read everything before its cut: merged, else read. */
static void finish_part(struct analysis *a, struct analysis_run *run, struct job *j, struct analysis_jobs_stats *st)
{
    struct maps m;
    struct analysis_part_func *f = calloc(j->a.funcs.n + 1, sizeof *f);
    memset(&m, 0, sizeof m);
    if (f && j->run && part_mergeable(a, j, &m) && analysis_part_check(run, j->run, f)) {
        if (j->diag && fflush(j->diag) == 0 && j->diag_len)
            fwrite(j->diag_text, 1, j->diag_len, a->diag);
        m.src = calloc(j->a.nsrc + 1, sizeof *m.src);
        for (size_t i = 0; m.src && i < j->a.nsrc; i++)
            m.src[i] = (uint32_t)i; /* the same sources, cloned */
        if (!m.src || apply_sources(a, &j->a, &m) < 0 || apply_part_threads(a, &j->a, &m) < 0 ||
            apply_part_funcs(a, &j->a, f, &m) < 0)
            a->oom = 1;
        else {
            apply_totals(a, &j->a);
            if (analysis_part_apply(run, j->run, f, m.func, m.thread) == 0 && analysis_part_stopped(j->run))
                analysis_run_range(run, analysis_part_stopped(j->run), j->have_to ? &j->to : NULL);
        }
        st->merged++;
    } else {
        analysis_run_range(run, &j->from, j->have_to ? &j->to : NULL);
        st->reread++;
    }
    free(f);
    maps_free(&m);
    analysis_part_free(j->run);
    job_free(j);
}

/* One series, cut into parts of about equal records, one per job. */
static void run_parts(struct analysis *a, const struct trace_series *s, size_t njobs, struct analysis_jobs_stats *st)
{
    struct analysis_cut cuts[ANALYSIS_MAX_JOBS];
    size_t n = analysis_series_cuts(s, njobs, cuts);
    struct analysis_run *run = analysis_run_begin(a, s);
    struct job *jobs = n && run ? calloc(n, sizeof *jobs) : NULL;
    if (!run)
        return;
    if (!jobs) {
        analysis_run_range(run, NULL, NULL);
        analysis_run_end(run);
        return;
    }
    st->jobs = n + 1;
    for (size_t k = 0; k < n; k++) {
        struct job *j = &jobs[k];
        j->from = cuts[k];
        j->have_to = k + 1 < n;
        if (j->have_to)
            j->to = cuts[k + 1];
        j->started = job_init(j, a, NULL, 0) == 0 && (j->run = analysis_part_begin(&j->a, s)) &&
                     pthread_create(&j->th, NULL, part_main, j) == 0;
    }
    analysis_run_range(run, NULL, &cuts[0]);
    for (size_t k = 0; k < n; k++)
        if (jobs[k].started)
            pthread_join(jobs[k].th, NULL);
    for (size_t k = 0; k < n; k++)
        finish_part(a, run, &jobs[k], st);
    analysis_run_end(run);
    free(jobs);
}

/* ---- the whole -------------------------------------------------------- */

static void run_serial(struct analysis *a, const struct trace_series *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        analysis_run_series(a, &s[i]);
}

/* Job j after the ones before it: merged, else read again. */
static void finish_job(struct analysis *a, struct cctree *tree, struct callsites *sites, struct job *j,
                       struct analysis_jobs_stats *st)
{
    struct maps m;
    memset(&m, 0, sizeof m);
    if (mergeable(a, tree, j, &m)) {
        if (j->diag && fflush(j->diag) == 0 && j->diag_len)
            fwrite(j->diag_text, 1, j->diag_len, a->diag);
        if (apply(a, tree, sites, j, &m) < 0)
            a->oom = 1;
        st->merged++;
    } else {
        run_serial(a, j->series, j->n);
        st->reread++;
    }
    maps_free(&m);
    job_free(j);
}

/* What the clone copies is all the pre-passes make; anything else (a
 * caller that ran series before) is run in one pass. */
static int prepared_only(const struct analysis *a)
{
    return a->nthreads == 0 && a->funcs.n == 0 && a->nprocs == a->nsrc && a->nbins <= 1 && a->records == 0;
}

void analysis_jobs_run(struct analysis *a, const struct trace_files *tf, size_t njobs, struct cctree *tree,
                       struct callsites *sites, struct analysis_jobs_stats *st)
{
    struct job *jobs = NULL;
    memset(st, 0, sizeof *st);
    st->jobs = 1;
    /* One series and only the function table to fill: its parts at once. */
    if (njobs > 1 && tf->nseries == 1 && !tree && !sites && a->nsinks == 1 && !a->filtering && prepared_only(a)) {
        run_parts(a, &tf->series[0], njobs < ANALYSIS_MAX_JOBS ? njobs : ANALYSIS_MAX_JOBS, st);
        return;
    }
    njobs = njobs < tf->nseries ? njobs : tf->nseries;
    njobs = njobs < ANALYSIS_MAX_JOBS ? njobs : ANALYSIS_MAX_JOBS;
    if (njobs <= 1 || !prepared_only(a) || !(jobs = calloc(njobs, sizeof *jobs))) {
        run_serial(a, tf->series, tf->nseries);
        return;
    }
    split(tf, jobs, njobs);
    st->jobs = njobs;
    for (size_t k = 1; k < njobs; k++)
        jobs[k].started = job_init(&jobs[k], a, tree, sites != NULL) == 0 &&
                          pthread_create(&jobs[k].th, NULL, job_main, &jobs[k]) == 0;
    run_serial(a, jobs[0].series, jobs[0].n);
    for (size_t k = 1; k < njobs; k++)
        if (jobs[k].started)
            pthread_join(jobs[k].th, NULL);
    for (size_t k = 1; k < njobs; k++)
        finish_job(a, tree, sites, &jobs[k], st);
    free(jobs);
}
