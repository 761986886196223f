/*
 * analysis.c - the analyzer's streaming pass (see analysis.h).
 *
 * Each series is read once, file after file through trace_reader's fixed
 * buffer.  Enter/exit records go to their thread's callstack, whose frames
 * are tagged here (call site, filters) and handed to every sink; markers go
 * to the source's notes and loss counters, name threads, and become
 * instants.  When a series ends its threads are closed (what is still open
 * counts as unclosed), their notes are kept as text, and their stacks are
 * freed.
 */
#include "analysis.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "callstack.h"
#include "lib/strmap.h"
#include "lib/vec.h"
#include "read/modlist.h"
#include "read/trace_reader.h"
#include "trace_shm.h" /* TRACE_CTL_MODE_*: what a live mode switch switched to */
#include "summary.h"
#include "trace.h"

/* A thread of the series being read: its stack, and its place in the
 * analysis' thread table.  Allocated one by one: the stack's hooks keep a
 * pointer to it. */
/* A thread_mod's bin for the program itself: its addresses are the
 * process's, named as without lists (its BUILD_ID marker may come after
 * the list, and frames opened before the list close after it). */
#define BIN_PROGRAM UINT32_MAX

/* A module of a thread's list: where its code is, and its binary. */
struct thread_mod {
    uint64_t lo, hi, bias;
    uint32_t bin;
    int retired; /* gone in this list, kept from the one before (see take_modlist) */
    uint64_t until; /* closed: the thread's records after this time are not its (0: loaded) */
};

/* A thread's modules by lo, shared: by the threads whose lists are the
 * same and by their process (proc_mods), so that a list costs its room
 * once however many threads and processes hold it.  Charged to the
 * analysis' module budget while it lives. */
struct modset {
    size_t refs, n;
    int cut;               /* modules of its list were not kept (a cap) */
    struct thread_mod v[];
};

/* A process's latest module list in a series (a thread's). */
struct proc_mods {
    uint32_t proc;
    struct modset *mods;
    size_t last;
    struct modset *timed; /* that thread's whole list, when it has closed modules */
};

struct thread {
    struct analysis_run *run;
    uint32_t tid;
    uint32_t index;  /* in analysis.threads */
    uint32_t proc;   /* its process, as analysis.threads[index].proc */
    int has_events;  /* had enter/exit records in this series */
    uint64_t in_fn;  /* open frames of --function targets */
    struct summary_thread *sum; /* TRACE_MODE=summary: its snapshots */
    uint64_t sum_bias;          /* its process's load bias, for them */
    int64_t sum_t0;             /* its program's start: where its first interval begins */
    int64_t sum_end;            /* where its last snapshot ended */
    int sum_used;               /* a snapshot of it was counted */
    struct modlist *mlist;      /* its module list being read, once one began */
    struct modset *mods;        /* its last whole list; none (or empty): its process's, else the program's bias */
    size_t mod_last;            /* ... the one an address was last found in */
    struct modset *timed;       /* that list whole, when it has closed modules: mods is its part for now */
    uint64_t mods_until;        /* ... until a record later than this (UINT64_MAX: for good) */
    int mlist_counted;          /* counted in the series' mlists_open */
    uint64_t dropped;           /* the ring's loss table's count for it (TRACE_MARK_THREAD_DROPPED) ... */
    int have_dropped;           /* ... once one came: its loss, in place of its THREAD_LOST counts */
    uint32_t last_exit;         /* the function of its latest exit (TRACE_MARK_TRIGGER's call) */
    int have_exit;              /* ... and whether it has one (a part's: -1, not known yet) */
    int exit_selected;          /* that call was selected (--thread, --since, --function) */
    int part_by_exit;           /* a part's (analysis_part_begin): made by an exit marker */
    struct callstack cs;
};

#define RES_SLOTS 1024u /* per cache of resolved addresses (a power of two) */

/* What resolving a function's address counted: see addr_in. */
enum addr_count { COUNT_NONE, COUNT_OUTSIDE, COUNT_UNLISTED, COUNT_CUT };

/* The state of the series being read. */
/* What an enter/exit's addresses resolved to (see analysis_run's gen). */
struct run_caches {
    struct res_slot {        /* (thread, runtime function address) -> function id */
        const struct thread *t;
        uint64_t addr, gen;
        uint32_t id;
        uint32_t count;      /* what addr_in counted for it: enum addr_count */
    } res[RES_SLOTS];
    struct site_slot {       /* (thread, runtime call site) -> its binary and link-time address */
        const struct thread *t;
        uint64_t addr, gen, site;
        uint32_t bin;
    } sites[RES_SLOTS];
};

struct analysis_run {
    struct analysis *a;
    const struct trace_series *s;
    size_t src;              /* position in a->src, valid once have_src */
    int have_src;
    struct thread **threads; /* live threads of this series */
    size_t nthreads, capthreads;
    struct u64map tids;      /* tid -> position in threads */
    struct thread *by_tid[256]; /* cache: the last thread seen of each tid % 256 */
    uint64_t others_dropped; /* the loss table's `other`: threads it had no slot for (tid 0) ... */
    int have_others;         /* ... once said */
    uint64_t untabled_lost;  /* THREAD_LOST counts of threads the table did not name */
    struct thread *row_t;    /* the thread of the records not counted yet (count_flush) ... */
    uint64_t row_n;          /* ... how many ... */
    int64_t row_first, row_last; /* ... and their earliest and latest ns */
    uint64_t site;           /* link-time call site of the enter being pushed ... */
    uint32_t site_bin;       /* ... in this binary */
    uint64_t file_bias;      /* the segment's header load bias */
    int truncated_start;     /* it begins after older records were discarded (wrap, snapshot) */
    struct analysis_trigger *trigger; /* the last trigger kept, while its frames may follow */
    uint32_t trigger_tid;
    const char *path;        /* the segment being read, for messages */
    struct proc_mods *pmods; /* each process's latest list in this series, for threads */
    size_t npmods, cappmods; /* without one of their own (trace_stream's merged series) */
    struct u64map pmod_index; /* process -> its position in pmods */
    size_t mlists_open;      /* threads in the middle of a module list */
    int wrapped;
    uint64_t segs_missing;
    int have_seq;
    uint32_t prev_seq;
    int holed;               /* a stream hole was passed: new threads start holed */
    int cut_pending;         /* a stream cut not yet closed by a resume */
    int vanished;            /* tracer processes vanished: open frames die at the end */
    const trace_event_t *batch; /* the batch being read, and its source's records before it */
    uint64_t batch_base;
    struct func_slot {       /* (bin, link-time address) -> function id, direct-mapped */
        uint64_t addr;
        uint32_t bin, id;
        int used;
    } funcs[256];
    /* What an enter/exit's addresses resolve to on its thread, so that most
     * records skip the module search, the bias and the function table.  A
     * slot holds while gen is the run's: anything that can change an
     * answer (a module list, a process's bias, binary or threads, the
     * segment's header bias) starts a new generation. */
    uint64_t gen;
    struct run_caches *cache; /* made at a read's first call, freed at its end */
    uint64_t left;           /* records a range may still read (UINT64_MAX: to the end) */
    /* A part of a series (analysis_part_begin): what came before it is not
     * known, so functions are kept by thread and runtime address
     * (ANALYSIS_PART_BIN), each with its records; at what it cannot
     * carry over (part_ok) it stops, and the run reads on from there. */
    int part, part_stopped, have_part_bias;
    struct analysis_cut stop; /* where it stopped, unread (part_stopped) */
    uint64_t seg_bad;        /* records of unknown kind in it so far, said at its end */
    size_t seg;              /* the segment being read (trace_series.segs) ... */
    uint64_t seg_off;        /* ... and where its next batch begins */
    uint64_t part_bias;      /* its segments' header load bias */
    uint64_t *part_recs;     /* records of each function id */
    size_t npart_recs, cappart_recs;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* The frame hooks, the function table's sink and what they call run on
 * every enter and exit: inlined into on_call_event (callstack_enter_with),
 * which is big enough that the compiler would otherwise keep them out of
 * line. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE inline __attribute__((always_inline))
#else
#define HOT_INLINE inline
#endif

/* The function table's sink, which also counts each thread's calls. */
static HOT_INLINE void table_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                                   int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct analysis *a = ctx;
    (void)ts;
    if (how != CALLSTACK_RETURNED || !f->tag.selected)
        return;
    funcstats_add_call(&a->funcs, (uint32_t)f->func, incl, self, f->nested);
    struct analysis_thread *at = &a->threads[t->index];
    at->calls++;
    at->self_ns = sat_add(at->self_ns, self);
}

void analysis_init(struct analysis *a, FILE *diag, const char *prog)
{
    memset(a, 0, sizeof *a);
    funcstats_init(&a->funcs);
    a->diag = diag;
    a->prog = prog;
    a->sinks[a->nsinks++] = (struct sink){.ctx = a, .close = table_close};
    a->interval_ns = 1000000000;
    a->max_threads = ANALYSIS_MAX_THREADS;
    a->max_depth = CALLSTACK_MAX_DEPTH;
    a->modules.per_list = ANALYSIS_MAX_MODULES;
    a->modules.max_bytes = (size_t)ANALYSIS_MAX_MODULES_MB << 20;
}

void analysis_free(struct analysis *a)
{
    for (size_t i = 0; i < a->nsrc; i++) {
        for (size_t j = 0; j < a->src[i].nnotes; j++)
            free(a->src[i].notes[j]);
        free(a->src[i].notes);
    }
    free(a->src);
    free(a->threads);
    free(a->procs);
    for (size_t i = 0; i < a->nbins; i++)
        free(a->bins[i].path);
    free(a->bins);
    u64map_free(&a->proc_index);
    u64map_free(&a->snap_procs);
    u64map_free(&a->bin_ids);
    strmap_free(&a->bin_paths);
    u64map_free(&a->src_index);
    u64map_free(&a->thread_index);
    u64map_free(&a->targets);
    funcstats_free(&a->funcs);
    timeline_free(&a->timeline);
}

void analysis_set_exes(struct analysis *a, const struct analysis_exe *exes, size_t n)
{
    a->exes = exes;
    a->nexes = n < ANALYSIS_MAX_EXES ? n : ANALYSIS_MAX_EXES;
}

/* Targets map each address to the set of --exe files it was found in: the
 * same address in another binary is another function. */
int analysis_set_filter(struct analysis *a, const struct analysis_filter *f)
{
    a->filter = *f;
    a->filtering = f->thread || f->has_since || f->has_until || f->nfuncs;
    for (size_t i = 0; i < f->nfuncs; i++) {
        uint32_t exe = f->func_exe ? f->func_exe[i] : 0, mask = 0;
        (void)u64map_get(&a->targets, f->funcs[i], &mask);
        if (exe >= ANALYSIS_MAX_EXES || u64map_put(&a->targets, f->funcs[i], mask | 1u << exe) < 0)
            return -1;
    }
    return 0;
}

int analysis_add_sink(struct analysis *a, struct sink s)
{
    if (a->nsinks == ANALYSIS_MAX_SINKS)
        return -1;
    a->sinks[a->nsinks++] = s;
    return 0;
}

static void diag(struct analysis *a, const char *path, const char *fmt, ...)
{
    va_list ap;
    if (!a->diag)
        return;
    fprintf(a->diag, "%s: %s: ", a->prog, path);
    va_start(ap, fmt);
    vfprintf(a->diag, fmt, ap);
    va_end(ap);
    fputc('\n', a->diag);
}

/* ---- sources and threads ------------------------------------------------ */

static long bin_new(struct analysis *a, int have, const uint64_t id[2], uint32_t proc);

/* A build-id's key in bin_ids: both words, mixed. */
static uint64_t bin_key(const uint64_t id[2])
{
    return id[0] ^ (id[1] * 0x9e3779b97f4a7c15u + (id[1] >> 29));
}

/* The bins not in the indexes yet go in (those bin_new made, and those a
 * pass in parts appended, jobs.c): the first of each build-id, or of each
 * path among the bins without one.  Their paths are set by then (a path's
 * bin gets it as it is made) and never freed or changed while a lives, so
 * bin_paths may borrow them.  0, -1 oom. */
static int bins_index(struct analysis *a)
{
    for (; a->bins_indexed < a->nbins; a->bins_indexed++) {
        const struct analysis_bin *b = &a->bins[a->bins_indexed];
        uint32_t at;
        uint64_t key = bin_key(b->build_id);
        if (a->bins_indexed == 0)
            continue;
        if (b->have_build_id && !u64map_get(&a->bin_ids, key, &at) &&
            u64map_put(&a->bin_ids, key, (uint32_t)a->bins_indexed) < 0)
            return -1;
        if (!b->have_build_id && b->path && !strmap_get(&a->bin_paths, b->path, &at) &&
            strmap_put(&a->bin_paths, b->path, (uint32_t)a->bins_indexed) < 0)
            return -1;
    }
    return 0;
}

/* The binary with this build-id (have == 0: binary 0), created on first
 * sight and matched to an --exe then: the one with the same build-id, else
 * the first (the check in analyze refuses that unless --force).  -1 oom.
 * By the index; two build-ids of one key (crafted) are told apart by a
 * walk, as many as ANALYSIS_MAX_BINS. */
static long bin_of(struct analysis *a, int have, const uint64_t id[2], uint32_t proc)
{
    uint32_t at;
    if (!have)
        return a->nbins ? 0 : bin_new(a, have, id, proc);
    if (bins_index(a) < 0)
        return -1;
    if (!u64map_get(&a->bin_ids, bin_key(id), &at))
        return bin_new(a, have, id, proc);
    if (a->bins[at].build_id[0] == id[0] && a->bins[at].build_id[1] == id[1])
        return (long)at;
    for (size_t i = 1; i < a->nbins; i++)
        if (a->bins[i].have_build_id && a->bins[i].build_id[0] == id[0] && a->bins[i].build_id[1] == id[1])
            return (long)i;
    return bin_new(a, have, id, proc);
}

/* A new binary (see bin_of); 0 when there are too many already, -1 oom. */
static long bin_new(struct analysis *a, int have, const uint64_t id[2], uint32_t proc)
{
    if (a->nbins >= ANALYSIS_MAX_BINS) {
        a->bins_over = 1; /* no real trace has this many programs: the rest count as unknown */
        return 0;
    }
    if (vec_grow(&a->bins, &a->capbins, a->nbins, sizeof *a->bins, 16) < 0)
        return -1;
    struct analysis_bin *b = &a->bins[a->nbins];
    memset(b, 0, sizeof *b);
    b->have_build_id = have;
    b->proc = proc;
    if (have) {
        b->build_id[0] = id[0];
        b->build_id[1] = id[1];
    }
    for (size_t e = 0; have && e < a->nexes; e++)
        if (a->exes[e].have_build_id && a->exes[e].build_id[0] == id[0] &&
            a->exes[e].build_id[1] == id[1]) {
            b->exe = (uint32_t)e;
            b->exe_matches = 1;
            break;
        }
    return (long)a->nbins++;
}

/* Process pid of source src, created on first sight; -1 oom. */
static long process_of(struct analysis *a, size_t src, uint32_t pid)
{
    uint64_t key = (uint64_t)src << 32 | pid;
    uint32_t pos;
    static const uint64_t none[2];
    if (u64map_get(&a->proc_index, key, &pos))
        return pos;
    if ((a->nbins == 0 && bin_of(a, 0, none, 0) < 0) ||
        vec_grow(&a->procs, &a->capprocs, a->nprocs, sizeof *a->procs, 16) < 0 ||
        u64map_put(&a->proc_index, key, (uint32_t)a->nprocs) < 0)
        return -1;
    struct analysis_process *p = &a->procs[a->nprocs];
    memset(p, 0, sizeof *p);
    p->src = (uint32_t)src;
    p->pid = pid;
    return (long)a->nprocs++;
}

/* The source's position, created on first sight with its default process;
 * -1 out of memory. */
static long source_of(struct analysis *a, enum analysis_source_kind kind, uint32_t id)
{
    uint64_t key = (uint64_t)kind << 32 | id;
    uint32_t pos;
    if (u64map_get(&a->src_index, key, &pos))
        return pos;
    if (vec_grow(&a->src, &a->capsrc, a->nsrc, sizeof *a->src, 16) < 0)
        return -1;
    long proc = process_of(a, a->nsrc, kind == ANALYSIS_SOURCE_PID ? id : 0);
    if (proc < 0 || u64map_put(&a->src_index, key, (uint32_t)a->nsrc) < 0)
        return -1;
    memset(&a->src[a->nsrc], 0, sizeof a->src[a->nsrc]);
    a->src[a->nsrc].kind = kind;
    a->src[a->nsrc].id = id;
    a->src[a->nsrc].proc = (uint32_t)proc;
    return (long)a->nsrc++;
}

/* The source a series belongs to; loose files say it in their header. */
static long source_of_series(struct analysis *a, const struct trace_series *s,
                             const struct trace_reader *r)
{
    switch (s->kind) {
    case TRACE_SERIES_LOCAL:
        return source_of(a, ANALYSIS_SOURCE_PID, s->id);
    case TRACE_SERIES_STREAM:
        return source_of(a, ANALYSIS_SOURCE_STREAM, s->id);
    default:
        return source_of(a, ANALYSIS_SOURCE_PID, r->hdr.pid);
    }
}

const char *analysis_source_word(const struct analysis_source *src)
{
    return src->kind == ANALYSIS_SOURCE_STREAM ? "stream" : "pid";
}

void analysis_thread_label(const struct analysis_thread *t, char *buf, size_t len)
{
    if (t->name[0])
        snprintf(buf, len, "thread %u (%s)", t->tid, t->name);
    else
        snprintf(buf, len, "thread %u", t->tid);
}

static int thread_matches(const struct analysis *a, const struct analysis_thread *t)
{
    const char *want = a->filter.thread;
    if (!want)
        return 1;
    if (want[strspn(want, "0123456789")] == 0)
        return strtoul(want, NULL, 10) == t->tid;
    return fnmatch(want, t->name, 0) == 0; /* a glob, as TRACE_THREADS takes: worker-* */
}

static void tell_thread(struct analysis *a, const struct analysis_thread *t)
{
    for (size_t i = 0; i < a->nsinks; i++)
        if (a->sinks[i].thread)
            a->sinks[i].thread(a->sinks[i].ctx, t);
}

/* The analysis-wide thread (src, tid), created on first sight; -1 oom, -2
 * when max_threads exist already. */
static long thread_index(struct analysis *a, size_t src, uint32_t tid)
{
    uint64_t key = (uint64_t)src << 32 | tid;
    uint32_t pos;
    if (u64map_get(&a->thread_index, key, &pos))
        return pos;
    if (a->nthreads >= a->max_threads)
        return -2; /* beyond --max-threads: counted by the caller */
    if (vec_grow(&a->threads, &a->capthreads, a->nthreads, sizeof *a->threads, 16) < 0 ||
        u64map_put(&a->thread_index, key, (uint32_t)a->nthreads) < 0)
        return -1;
    struct analysis_thread *t = &a->threads[a->nthreads];
    memset(t, 0, sizeof *t);
    t->index = (uint32_t)a->nthreads;
    t->src = (uint32_t)src;
    t->proc = a->src[src].proc;
    if (a->snap_procs.count && u64map_get(&a->snap_procs, key, &pos)) /* placed by the pre-pass */
        t->proc = pos;
    t->tid = tid;
    t->selected = thread_matches(a, t);
    tell_thread(a, t);
    return (long)a->nthreads++;
}

/* TRACE_MARK_THREAD_NAME: up to 16 bytes, 0-7 in call_site and 8-15 in
 * ts, byte i at bits 8i of each; unprintable bytes become '?'. */
static void set_thread_name(struct analysis *a, struct analysis_thread *t, const trace_event_t *ev)
{
    char name[ANALYSIS_NAME_MAX + 1];
    size_t n = 0;
    for (; n < ANALYSIS_NAME_MAX; n++) {
        uint64_t word = n < 8 ? ev->call_site : ev->ts;
        unsigned char c = (unsigned char)(word >> (8 * (n % 8)));
        if (!c)
            break;
        name[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    name[n] = 0;
    if (!strcmp(name, t->name))
        return;
    memcpy(t->name, name, n + 1);
    t->selected = thread_matches(a, t);
    tell_thread(a, t);
}

void analysis_note(struct analysis *a, size_t src, const char *fmt, ...)
{
    struct analysis_source *s = &a->src[src];
    char buf[512];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "%s %u: ", analysis_source_word(s), s->id);
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (vec_grow(&s->notes, &s->capnotes, s->nnotes, sizeof *s->notes, 16) < 0 ||
        !(s->notes[s->nnotes] = strdup(buf)))
        a->oom = 1;
    else
        s->nnotes++;
}

/* ---- pre-passes --------------------------------------------------------- */

/* Search one series' last segments, newest first, for the last exit clock
 * anchor within ANALYSIS_ANCHOR_TAIL bytes of records. */
static void find_series_anchor(struct analysis *a, const struct trace_series *s,
                               struct trace_reader *r)
{
    uint64_t budget = ANALYSIS_ANCHOR_TAIL;
    char msg[128];
    for (size_t i = s->nsegs; i-- > 0 && budget >= TRACE_EVENT_SIZE;) {
        if (trace_reader_open(r, s->segs[i].path, msg, sizeof msg) < 0)
            continue; /* the main pass reports it */
        long src = source_of_series(a, s, r);
        int ticks = r->ticks;
        uint64_t body = (r->file_size - r->hdr.header_size) / TRACE_EVENT_SIZE * TRACE_EVENT_SIZE;
        int found = 0;
        uint64_t ticks_at = 0, ns_at = 0;
        trace_event_t ev;
        if (src >= 0 && ticks && trace_reader_seek_tail(r, budget) == 0)
            while (trace_reader_next(r, &ev) == TRACE_READER_EVENT)
                if (ev.kind == TRACE_KIND_MARKER && ev.func == TRACE_MARK_CLOCK_ANCHOR) {
                    found = 1;
                    ticks_at = ev.ts;
                    ns_at = ev.call_site;
                }
        trace_reader_close(r);
        if (src < 0) {
            a->oom = 1;
            return;
        }
        if (!ticks)
            return; /* ns timestamps need no anchor */
        if (found) {
            struct analysis_source *so = &a->src[src];
            if (!so->have_anchor || ticks_at > so->anchor_ticks) {
                so->have_anchor = 1;
                so->anchor_ticks = ticks_at;
                so->anchor_ns = ns_at;
            }
            return;
        }
        budget -= body < budget ? body : budget;
    }
}

static void find_anchors(struct analysis *a, const struct trace_files *tf, struct trace_reader *r)
{
    /* Sources in series order, so that notes come out in that order. */
    for (size_t i = 0; i < tf->nseries; i++) {
        const struct trace_series *s = &tf->series[i];
        if (s->kind != TRACE_SERIES_LOOSE &&
            source_of(a, s->kind == TRACE_SERIES_STREAM ? ANALYSIS_SOURCE_STREAM : ANALYSIS_SOURCE_PID,
                      s->id) < 0)
            a->oom = 1;
    }
    /* A process writes its anchor when it exits, most likely from its main
     * thread (tid == pid): look there first, elsewhere only if needed. */
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < tf->nseries; i++) {
            const struct trace_series *s = &tf->series[i];
            int main_first = s->kind != TRACE_SERIES_LOCAL || s->tid == s->id;
            if (round == 0 ? !main_first : main_first)
                continue;
            uint32_t pos;
            if (s->kind == TRACE_SERIES_LOCAL && u64map_get(&a->src_index, s->id, &pos) &&
                a->src[pos].have_anchor)
                continue;
            find_series_anchor(a, s, r);
        }
}

/* Open the first readable segment of s with its source's clock anchor. */
static int open_first(struct analysis *a, const struct trace_series *s, struct trace_reader *r)
{
    char msg[128];
    for (size_t i = 0; i < s->nsegs; i++) {
        if (trace_reader_open(r, s->segs[i].path, msg, sizeof msg) < 0)
            continue;
        long src = source_of_series(a, s, r);
        if (src >= 0 && a->src[src].have_anchor)
            trace_reader_set_anchor(r, a->src[src].anchor_ticks, a->src[src].anchor_ns);
        return 0;
    }
    return -1;
}

/* The trace's start: the earliest first enter/exit record of any series,
 * which is where the main pass' span starts too (records of one series
 * are in time order); of a summary trace (its header says so, even when
 * live control has its first records events), the earliest program start
 * (its header's clock pair), where its threads' first intervals begin. */
static void find_start(struct analysis *a, const struct trace_files *tf, struct trace_reader *r)
{
    for (size_t i = 0; i < tf->nseries; i++) {
        trace_event_t ev;
        if (open_first(a, &tf->series[i], r) < 0)
            continue;
        while (trace_reader_next(r, &ev) == TRACE_READER_EVENT)
            if (ev.kind == TRACE_KIND_ENTER || ev.kind == TRACE_KIND_EXIT || ev.kind == TRACE_KIND_SUMMARY) {
                /* a series live control switched to summaries and back may
                 * hold events before its first snapshot: its header says so */
                int sum = ev.kind == TRACE_KIND_SUMMARY || r->hdr.version == TRACE_FILE_VERSION_SUMMARY;
                int64_t ns = trace_reader_ns(r, sum ? r->hdr.t0_ticks : ev.ts);
                if (!a->have_start || ns < a->start_ns)
                    a->start_ns = ns;
                a->have_start = 1;
                break;
            }
        trace_reader_close(r);
    }
}

/* One marker of a snapshot's, for snapshot_procs: PROCESS places the
 * thread; LOAD_BIAS and BUILD_ID describe its process, as the pass will
 * take them.  The number of the process it named (PROCESS), else -1. */
static long snapshot_marker(struct analysis *a, size_t src, const trace_event_t *ev)
{
    uint64_t key = (uint64_t)src << 32 | ev->tid;
    uint32_t p;
    if (ev->func == TRACE_MARK_PROCESS && ev->call_site <= UINT32_MAX) {
        long np = process_of(a, src, (uint32_t)ev->call_site);
        if (np < 0 || (!u64map_get(&a->snap_procs, key, &p) && u64map_put(&a->snap_procs, key, (uint32_t)np) < 0)) {
            a->oom = 1;
            return -1;
        }
        a->procs[np].announced = 1;
        return np;
    }
    if (!u64map_get(&a->snap_procs, key, &p))
        return -1;
    struct analysis_process *pr = &a->procs[p];
    if (ev->func == TRACE_MARK_LOAD_BIAS && !pr->have_bias) {
        pr->have_bias = 1;
        pr->bias = ev->call_site;
    } else if (ev->func == TRACE_MARK_BUILD_ID && !pr->bin_set) {
        const uint64_t id[2] = {ev->call_site, ev->ts};
        long bin = bin_of(a, 1, id, p);
        if (bin < 0) {
            a->oom = 1;
            return -1;
        }
        pr->bin = pr->bin_first = (uint32_t)bin;
        pr->bin_set = 1;
    }
    return -1;
}

/*
 * A flight-recorder snapshot (its first record TRACE_MARK_SNAPSHOT) is the
 * ring's newest part: a thread's PROCESS marker and its process's
 * announcement may come after its first records, or not at all (they were
 * overwritten).  Records before them went to the stream's default process,
 * so one process was reported as two ("unannounced" and its pid) and its
 * functions in two rows.  So each snapshot is read once ahead: every
 * thread that names its process anywhere in it belongs to that process
 * from its first record, the process described as its markers say; and
 * when the snapshot names only one process, the threads that name none
 * are taken for its too.
 */
static void snapshot_procs(struct analysis *a, const struct trace_files *tf, struct trace_reader *r)
{
    char msg[128];
    for (size_t i = 0; i < tf->nseries && !a->oom; i++) {
        const struct trace_series *s = &tf->series[i];
        trace_event_t ev;
        uint32_t src;
        if (s->kind != TRACE_SERIES_STREAM || !u64map_get(&a->src_index, (uint64_t)ANALYSIS_SOURCE_STREAM << 32 | s->id, &src))
            continue;
        long only = -1;
        int several = 0, is_snapshot = 0;
        for (size_t g = 0; g < s->nsegs; g++) {
            if (trace_reader_open(r, s->segs[g].path, msg, sizeof msg) < 0)
                continue; /* the pass reports it */
            while (trace_reader_next(r, &ev) == TRACE_READER_EVENT) {
                if (!is_snapshot && !(is_snapshot = ev.kind == TRACE_KIND_MARKER && ev.func == TRACE_MARK_SNAPSHOT && !ev.tid))
                    break;
                if (ev.kind != TRACE_KIND_MARKER || !ev.tid)
                    continue;
                long p = snapshot_marker(a, src, &ev);
                several |= p >= 0 && only >= 0 && p != only;
                only = p >= 0 ? p : only;
            }
            trace_reader_close(r);
            if (!is_snapshot)
                break;
        }
        if (only >= 0 && !several)
            a->src[src].proc = (uint32_t)only;
    }
}

void analysis_prepare(struct analysis *a, const struct trace_files *tf)
{
    struct trace_reader *r = malloc(sizeof *r);
    if (!r) {
        a->oom = 1;
        return;
    }
    find_anchors(a, tf, r);
    find_start(a, tf, r);
    snapshot_procs(a, tf, r);
    free(r);
    timeline_init(&a->timeline, a->start_ns, a->interval_ns);
}

/* ---- frames: tags and sinks --------------------------------------------- */

static int64_t add_ns(int64_t base, int64_t d)
{
    if (d > 0 && base > INT64_MAX - d)
        return INT64_MAX;
    return base + d;
}

static inline int in_window(const struct analysis *a, int64_t ts)
{
    const struct analysis_filter *f = &a->filter;
    if (f->has_since && ts < add_ns(a->start_ns, f->since_ns))
        return 0;
    return !f->has_until || ts <= add_ns(a->start_ns, f->until_ns);
}

/* GCC's hook in a function inlined into another passes the return
 * address of the function it was inlined into (__builtin_return_address(0)
 * there): the caller's own call site, one frame further out, not the line
 * that called it.  So an enter whose site is the one of the frame below
 * it, by a function other than that frame's (recursion at one call site
 * has equal sites too), was called from code inlined there: its true
 * caller is the frame below, the line is not in the trace. */
static void inlined_site(const struct callstack *cs, struct callstack_frame *f)
{
    f->tag.site_inlined = 0;
    if (cs->n < 2 || f != &cs->frames[cs->n - 1])
        return;
    const struct callstack_frame *below = &cs->frames[cs->n - 2];
    if (below->placeholder || below->func == f->func || below->tag.site != f->tag.site ||
        below->tag.site_bin != f->tag.site_bin)
        return;
    f->tag.site_inlined = 1;
    f->tag.site_caller = below->func;
}

static HOT_INLINE void frame_open(void *ctx, struct callstack *cs, struct callstack_frame *f)
{
    struct thread *t = ctx;
    struct analysis *a = t->run->a;
    const struct analysis_thread *at = &a->threads[t->index];
    uint32_t v;
    if (!f->placeholder && a->nsinks > 1) { /* call sites: for the sinks (call_site) */
        f->tag.site = t->run->site;
        f->tag.site_bin = t->run->site_bin;
        inlined_site(cs, f);
    }
    if (!a->filtering) /* no target (place left 0), no window: as its thread */
        f->tag.in_scope = f->tag.selected = !!at->selected;
    else {
        if (!f->placeholder) {
            const struct funcstats_entry *e = &a->funcs.v[f->func];
            f->tag.target = a->filter.nfuncs && e->bin < a->nbins && u64map_get(&a->targets, e->addr, &v) &&
                            (v >> a->bins[e->bin].exe & 1u);
        }
        t->in_fn += f->tag.target;
        f->tag.in_scope = at->selected && (!a->filter.nfuncs || t->in_fn);
        f->tag.selected = f->tag.in_scope && in_window(a, f->start);
    }
    for (size_t i = 1; i < a->nsinks; i++) /* sinks[0], the function table, has no open */
        if (a->sinks[i].open)
            a->sinks[i].open(a->sinks[i].ctx, at, cs, f);
}

static HOT_INLINE void frame_close(void *ctx, const struct callstack_frame *f, int64_t ts,
                                   enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct thread *t = ctx;
    struct analysis *a = t->run->a;
    t->in_fn -= f->tag.target;
    if (how == CALLSTACK_RETURNED) {
        t->exit_selected = f->tag.selected; /* the last closed by an exit is the one it ends */
        a->calls++;
        a->calls_selected += f->tag.selected;
    }
    /* sinks[0] is the function table (analysis_init): called directly, the
     * one sink of every call's path with the default report */
    table_close(a, &a->threads[t->index], f, ts, how, incl, self);
    for (size_t i = 1; i < a->nsinks; i++)
        if (a->sinks[i].close)
            a->sinks[i].close(a->sinks[i].ctx, &a->threads[t->index], f, ts, how, incl, self);
}

static const struct callstack_hooks frame_hooks = {frame_open, frame_close};

static void instant(struct analysis_run *run, const struct analysis_thread *t, int64_t ts,
                    const char *fmt, ...)
{
    struct analysis *a = run->a;
    char what[256];
    va_list ap;
    if ((t && !t->selected) || !in_window(a, ts))
        return;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < a->nsinks; i++)
        if (a->sinks[i].instant)
            a->sinks[i].instant(a->sinks[i].ctx, t, (uint32_t)run->src, ts, what);
}

/* The loss beside its instant, as a number (sink.h), under the same rule. */
static void loss(struct analysis_run *run, const struct analysis_thread *t, int64_t ts, enum sink_loss what,
                 uint64_t n)
{
    struct analysis *a = run->a;
    if ((t && !t->selected) || !in_window(a, ts))
        return;
    for (size_t i = 0; i < a->nsinks; i++)
        if (a->sinks[i].loss)
            a->sinks[i].loss(a->sinks[i].ctx, t, (uint32_t)run->src, ts, what, n);
}

/* ---- the main pass ------------------------------------------------------ */

/* The thread of tid in this series from the map, created if `create`;
 * NULL if absent, out of memory (a->oom set) or beyond max_threads (its
 * record counted in a->records_over). */
static struct thread *thread_find(struct analysis_run *run, uint32_t tid, int create)
{
    uint32_t pos;
    if (u64map_get(&run->tids, tid, &pos))
        return run->by_tid[tid & 255] = run->threads[pos];
    if (!create)
        return NULL;
    long gi = thread_index(run->a, run->src, tid);
    if (gi == -2) {
        run->a->records_over++;
        return NULL;
    }
    struct thread *t = malloc(sizeof *t);
    if (gi < 0 || !t || vec_grow(&run->threads, &run->capthreads, run->nthreads, sizeof *run->threads, 16) < 0 ||
        u64map_put(&run->tids, tid, (uint32_t)run->nthreads) < 0) {
        free(t);
        run->a->oom = 1;
        return NULL;
    }
    t->run = run;
    t->tid = tid;
    t->index = (uint32_t)gi;
    t->proc = run->a->threads[gi].proc;
    t->has_events = 0;
    t->in_fn = 0;
    t->sum = NULL;
    t->sum_bias = 0;
    t->sum_t0 = t->sum_end = 0;
    t->sum_used = 0;
    t->mlist = NULL;
    t->mods = NULL;
    t->mod_last = 0;
    t->timed = NULL;
    t->mods_until = UINT64_MAX;
    t->mlist_counted = 0;
    t->dropped = 0;
    t->have_dropped = 0;
    t->part_by_exit = 0;
    t->last_exit = 0;
    t->have_exit = run->part ? -1 : 0; /* a part's: not known until an exit or an exit marker */
    t->exit_selected = 0;
    callstack_init(&t->cs, run->a->max_depth, &frame_hooks, t);
    if (run->holed)
        callstack_hole(&t->cs); /* it may have started inside the hole */
    if (run->part && callstack_part(&t->cs) < 0)
        run->a->oom = 1;
    run->threads[run->nthreads++] = t;
    return run->by_tid[tid & 255] = t;
}

/* The thread of tid: every record asks, so a direct-mapped cache answers
 * first (threads live until the series ends, so its pointers stay good). */
static inline struct thread *thread_of(struct analysis_run *run, uint32_t tid, int create)
{
    struct thread *t = run->by_tid[tid & 255];
    return t && t->tid == tid ? t : thread_find(run, tid, create);
}

static int32_t low_half(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static const char *const capture_what[ANALYSIS_CAPTURE_CODES] = {
    NULL, "capture stopped: byte budget reached", "capture stopped: free disk below the floor",
    "capture stopped: write error", "capture stopped: event limit reached",
    "flight recorder wrapped"};

static void on_capture_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    uint64_t code = ev->func, payload = ev->call_site;
    struct thread *t = ev->tid ? thread_of(run, ev->tid, 1) : NULL;
    /* WRAP: a snapshot's says what went before it (they add up); a file's
     * (TRACE_FULL=wrap) the process's total so far (the largest is it) */
    if (code == TRACE_MARK_WRAP && src->kind == ANALYSIS_SOURCE_PID)
        src->capture_payload[code] = payload > src->capture_payload[code] ? payload : src->capture_payload[code];
    else if (code == TRACE_MARK_WRAP || !src->capture_count[code])
        src->capture_payload[code] =
            code == TRACE_MARK_WRAP ? sat_add(src->capture_payload[code], payload) : payload;
    src->capture_count[code]++;
    instant(run, t ? &run->a->threads[t->index] : NULL, ns, "%s (%llu)", capture_what[code],
            (unsigned long long)payload);
}

static int func_id(struct analysis_run *run, uint32_t bin, uint64_t addr, uint32_t *id);
static uint32_t addr_in(struct thread *t, uint32_t bin, uint64_t bias, uint64_t addr, uint64_t *off);
static int keep_proc_list(struct analysis_run *run, const struct thread *t);

/* A function's gained buckets into its histogram.  Each bucket's calls lie
 * in its range and, the snapshots being cumulative, within the min and max
 * so far; so the interval holding a function's extreme gives it exactly,
 * and a window's extremes are off by at most one bucket's width. */
static void summary_hist(struct analysis *a, uint32_t id, const struct summary_thread *st,
                         const struct summary_delta *d)
{
    size_t at = 0;
    for (size_t k = 0; k < d->fn->nb; k++) {
        const struct summary_bucket *b = &st->done.b[d->fn->b0 + k];
        uint64_t n = summary_delta_bucket(st, d, k, &at), lo, hi;
        if (!n)
            continue;
        hist_bucket_range(b->index, &lo, &hi);
        if (b->index == TRACE_SUMMARY_NBUCKETS - 1)
            hi = UINT64_MAX; /* the device's last bucket takes every larger value */
        lo = lo > d->fn->min_ns ? lo : d->fn->min_ns;
        hi = hi < d->fn->max_ns ? hi : d->fn->max_ns;
        if (hist_add_bucket(&a->funcs.v[id].lat, b->index, n, lo < hi ? lo : hi, hi) < 0)
            a->oom = 1;
    }
}

/* What the device could not attribute, gained since the snapshot before. */
static void summary_meta(struct analysis *a, const struct summary_thread *st)
{
    const struct summary_snap *s = &st->done, *e = st->have_prev ? &st->prev : NULL;
    a->summary_over = sat_add(a->summary_over, s->over_calls - (e ? e->over_calls : 0));
    a->summary_deep = sat_add(a->summary_deep, s->deep_calls - (e ? e->deep_calls : 0));
    a->summary_unmatched = sat_add(a->summary_unmatched, s->unmatched - (e ? e->unmatched : 0));
    a->summary_tracer_ns = sat_add(a->summary_tracer_ns, s->tracer_ns - (e ? e->tracer_ns : 0));
}

/* The thread has calls: counted once, and its process's build-id checked as
 * for events (all input, as the header says); and once more if they count. */
static void summary_thread_seen(struct analysis *a, struct thread *t, int used)
{
    struct analysis_thread *at = &a->threads[t->index];
    struct analysis_process *p = &a->procs[t->proc];
    if (!at->has_events) {
        at->has_events = 1;
        a->threads_with_events++;
        a->summary_merged += (t->tid & TRACE_SUMMARY_MERGED_TID) != 0;
        if (!p->events++)
            a->src[p->src].procs_with_events++;
    }
    if (used && !t->sum_used) {
        t->sum_used = 1;
        a->summary_threads++;
    }
}

static struct proc_mods *proc_mods_of(struct analysis_run *run, uint32_t proc, int create);

/* Two modules of the thread's list with closed ones (t->timed) held addr:
 * a summary row there adds up the calls of both. */
static int addr_shared(struct thread *t, uint64_t addr)
{
    const struct modset *all = t->timed;
    struct proc_mods *pm;
    if ((!t->mods || !t->mods->n) && (pm = proc_mods_of(t->run, t->proc, 0))) /* as addr_listed */
        all = pm->timed;
    size_t n = 0;
    for (size_t i = 0; all && i < all->n && n < 2; i++)
        n += all->v[i].lo <= addr && addr < all->v[i].hi;
    return n >= 2;
}

/* A whole snapshot was just read, ending at end_ns: what the thread did
 * since the one before goes into the function table and the timeline when
 * the thread is selected and the interval ends inside the window; the
 * header's totals count it either way. */
static void summary_take(struct analysis_run *run, struct thread *t, int64_t end_ns)
{
    struct analysis *a = run->a;
    struct summary_thread *st = t->sum;
    int64_t begin = st->have_prev && t->sum_end > t->sum_t0 ? t->sum_end : t->sum_t0;
    int used = a->threads[t->index].selected && in_window(a, end_ns);
    t->sum_end = end_ns;
    const struct summary_snap *s = &st->done;
    uint32_t bin = a->procs[t->proc].bin, id;
    uint64_t off;
    size_t j = 0;
    /* The table filled up now (it counts calls beyond it for the first
     * time): it never changes again, so which functions it holds is known. */
    int full = s->over_calls && !(st->have_prev && st->prev.over_calls);
    a->summary_full_tables += (uint64_t)full;
    /* A merged snapshot counting calls beyond a table but not saying it
     * marks its rows (an older trace_stream or serve): any row may be low. */
    int suspect = (t->tid & TRACE_SUMMARY_MERGED_TID) && s->over_calls &&
                  !(s->meta_flags & TRACE_SUMMARY_META_LOWER_SAID);
    for (size_t i = 0; i < s->nfn && !a->oom; i++) {
        struct summary_delta d;
        summary_delta(st, i, &j, &d);
        a->calls = sat_add(a->calls, d.calls);
        if (!d.calls && !full && !suspect && !(d.fn->flags & TRACE_SUMMARY_FUNC_LOWER))
            continue;
        uint32_t in = bin;
        off = d.fn->addr - t->sum_bias;
        if (addr_shared(t, d.fn->addr))
            a->src[run->src].shared_modules++;
        else
            in = addr_in(t, bin, t->sum_bias, d.fn->addr, &off);
        if (func_id(run, in, off, &id) < 0) { /* all input: the header counts it */
            a->oom = 1;
            break;
        }
        a->funcs.v[id].sum_full += (uint32_t)full;
        a->funcs.v[id].lower_bound |= (d.fn->flags & TRACE_SUMMARY_FUNC_LOWER) != 0 || suspect;
        if (!d.calls)
            continue;
        if (!used)
            continue;
        funcstats_add_summary(&a->funcs, id, d.calls, d.incl_ns, d.self_ns);
        a->threads[t->index].calls = sat_add(a->threads[t->index].calls, d.calls);
        a->threads[t->index].self_ns = sat_add(a->threads[t->index].self_ns, d.self_ns);
        summary_hist(a, id, st, &d);
        for (size_t k = 0; k < a->nsinks; k++)
            if (a->sinks[k].summary)
                a->sinks[k].summary(a->sinks[k].ctx, &a->threads[t->index], id, d.calls, d.incl_ns, d.self_ns,
                                    d.fn->max_ns);
        timeline_add(&a->timeline, end_ns, id, d.calls, d.incl_ns, d.self_ns);
        a->calls_selected = sat_add(a->calls_selected, d.calls);
    }
    summary_thread_seen(a, t, used);
    if (!a->summary_snapshots && !a->summary_outside)
        a->summary_first_ns = a->summary_last_ns = begin;
    a->summary_first_ns = begin < a->summary_first_ns ? begin : a->summary_first_ns;
    a->summary_last_ns = end_ns > a->summary_last_ns ? end_ns : a->summary_last_ns;
    summary_meta(a, st); /* the notes describe all input, as for events */
    if (!used) {
        a->summary_outside++;
        return;
    }
    a->summary_snapshots++;
}

/* The thread's snapshots are done with (its exit: a later thread may reuse
 * the tid; the end of the series): count what was damaged, free the rest. */
static void summary_end(struct analysis_run *run, struct thread *t)
{
    struct summary_thread *st = t->sum;
    if (!st)
        return;
    run->a->summary_damaged += st->damaged + (uint64_t)st->reading;
    if (st->have_done) { /* how the thread ended, as its last snapshot says */
        struct analysis_process *p = &run->a->procs[t->proc];
        unsigned ends = st->done.ends, end = ends & ~TRACE_SUMMARY_ENDS;
        p->sum_threads++;
        p->sum_marked += (ends & TRACE_SUMMARY_ENDS) != 0;
        p->sum_final += (ends & TRACE_SUMMARY_ENDS) && end != TRACE_SUMMARY_PERIODIC;
        p->sum_exited |= (ends & TRACE_SUMMARY_ENDS) && end == TRACE_SUMMARY_PROCESS_EXIT;
    }
    summary_free(st);
    t->sum_used = 0;
}

static void on_summary(struct analysis_run *run, const struct trace_reader *r, const trace_event_t *ev, int64_t ns)
{
    struct analysis *a = run->a;
    struct thread *t = thread_of(run, ev->tid, 1);
    a->summary_records++;
    if (!t) {
        return;
    }
    if (!t->sum) {
        if (!(t->sum = malloc(sizeof *t->sum))) {
            a->oom = 1;
            return;
        }
        summary_init(t->sum, &a->summary_budget);
    }
    struct analysis_process *p = &a->procs[t->proc];
    t->sum_bias = p->have_bias ? p->bias : r->hdr.load_bias;
    t->sum_t0 = trace_reader_ns(r, r->hdr.t0_ticks);
    int got = summary_record(t->sum, ev);
    if (got < 0)
        a->oom = 1;
    else if (got)
        summary_take(run, t, ns);
}

/* trace_stream's copy of the ring's loss table: cumulative, so the
 * largest count is the latest (one that goes down is not believed). */
static void on_thread_dropped(struct analysis_run *run, const trace_event_t *ev)
{
    uint64_t n = ev->call_site;
    if (ev->tid == 0) {
        run->others_dropped = n > run->others_dropped ? n : run->others_dropped;
        run->have_others = 1;
        return;
    }
    struct thread *t = thread_of(run, ev->tid, 1);
    if (!t)
        return;
    t->dropped = n > t->dropped ? n : t->dropped;
    t->have_dropped = 1;
}

static void on_thread_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis *a = run->a;
    struct thread *t = thread_of(run, ev->tid, ev->func != TRACE_MARK_THREAD_EXIT);
    if (!t && run->part && ev->func == TRACE_MARK_THREAD_EXIT && (t = thread_of(run, ev->tid, 1))) {
        t->part_by_exit = 1; /* the thread may be of the parts before */
        t->have_exit = 0;    /* as forget_exit would have made it there */
    }
    if (!t)
        return;
    switch (ev->func) {
    case TRACE_MARK_THREAD_LOST: /* counted in src->thread_lost when the thread closes */
        callstack_lost(&t->cs, ev->call_site);
        instant(run, &a->threads[t->index], ns, "%llu events lost",
                (unsigned long long)ev->call_site);
        loss(run, &a->threads[t->index], ns, SINK_LOSS_THREAD, ev->call_site);
        break;
    case TRACE_MARK_THREAD_RESYNC:
        callstack_resync(&t->cs, low_half(ev->call_site), low_half(ev->call_site >> 32));
        break;
    case TRACE_MARK_THREAD_EXIT:
        callstack_reset(&t->cs);
        summary_end(run, t);
        break;
    case TRACE_MARK_THREAD_NAME:
        set_thread_name(a, &a->threads[t->index], ev);
        break;
    }
}

/* The thread was in the tracer (flushing), or waiting for the ring. */
static void on_tracer_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis *a = run->a;
    struct analysis_source *src = &a->src[run->src];
    struct thread *t = thread_of(run, ev->tid, 1);
    if (!t)
        return;
    if (ev->func == TRACE_MARK_TRACER_WAIT) {
        src->waited_ns = sat_add(src->waited_ns, ev->call_site);
        src->waits++;
        return;
    }
    src->tracer_ns = sat_add(src->tracer_ns, ev->call_site);
    src->tracer_flushes++;
    if (!a->keep_tracer_time)
        callstack_exclude(&t->cs, ev->call_site);
    const struct analysis_thread *at = &a->threads[t->index];
    if (!at->selected || !in_window(a, ns))
        return;
    for (size_t i = 0; i < a->nsinks; i++)
        if (a->sinks[i].tracer)
            a->sinks[i].tracer(a->sinks[i].ctx, at, ns, ev->call_site);
}

/* Records of every thread of the stream were lost here. */
static void stream_hole(struct analysis_run *run)
{
    run->holed = 1;
    for (size_t i = 0; i < run->nthreads; i++) {
        struct summary_thread *st = run->threads[i]->sum;
        callstack_hole(&run->threads[i]->cs);
        if (st && st->reading) { /* a part of it may be in the hole: not used */
            st->damaged++;
            st->reading = 0;
        }
    }
}

/* A cut that no resume closed right after it: a gap of unknown size. */
static void settle_cut(struct analysis_run *run)
{
    if (!run->cut_pending)
        return;
    run->cut_pending = 0;
    run->a->src[run->src].gaps_unknown++;
    stream_hole(run);
}

static void forget_exit(struct analysis_run *run, uint32_t tid)
{
    struct thread *t = thread_of(run, tid, 0);
    if (t)
        t->have_exit = 0;
}

/* TRACE_MARK_TRIGGER: the thread's latest exit was a slow call; keep it
 * with the frames open around it (the first ANALYSIS_MAX_TRIGGERS). */
static void on_trigger(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis *a = run->a;
    struct thread *t = thread_of(run, ev->tid, 1);
    run->trigger = NULL; /* frames that follow belong to this trigger or to none */
    if (!t || !t->have_exit)
        return;
    if (!t->exit_selected) { /* a trigger follows the selection, as every row does */
        a->triggers_unselected++;
        return;
    }
    instant(run, &a->threads[t->index], ns, "trigger: a call took %.3f ms", (double)ev->call_site / 1e6);
    if (a->ntriggers == ANALYSIS_MAX_TRIGGERS) {
        a->triggers_more++;
        return;
    }
    struct analysis_trigger *g = &a->triggers[a->ntriggers++];
    memset(g, 0, sizeof *g);
    g->thread = t->index;
    g->ns = ns;
    g->took_ns = ev->call_site;
    g->call = t->last_exit;
    size_t keep = t->cs.n < ANALYSIS_TRIGGER_DEPTH ? t->cs.n : ANALYSIS_TRIGGER_DEPTH;
    g->outer = t->cs.n - keep + (t->cs.holed ? 1 : 0); /* a hole: callers before it are unknown */
    for (size_t i = t->cs.n - keep; i < t->cs.n; i++) {
        const struct callstack_frame *f = &t->cs.frames[i];
        g->frames[g->nframes++] = f->placeholder ? UINT32_MAX : (uint32_t)f->func;
    }
    /* the trace's own stack is whole: the runtime's list cannot add to it */
    run->trigger = !t->cs.holed && !t->cs.overflow && g->outer == 0 ? NULL : g;
    run->trigger_tid = ev->tid;
}

/* TRACE_MARK_TRIGGER_FRAME: the runtime's own list of the callers, whole
 * even when the trace lost their entries; it replaces the trace's when
 * that has a hole (a snapshot's or a wrap's start, a loss). */
static void on_trigger_frame(struct analysis_run *run, const trace_event_t *ev)
{
    struct analysis_trigger *g = run->trigger;
    struct thread *t = thread_of(run, ev->tid, 1);
    if (!g || !t || ev->tid != run->trigger_tid)
        return;
    if (!g->from_runtime) { /* the outermost kept: its depth (ts) says how many are further out */
        g->from_runtime = 1;
        g->nframes = 0;
        g->outer = ev->ts < UINT32_MAX ? ev->ts : 0;
    }
    struct analysis_process *p = &run->a->procs[t->proc];
    uint64_t off;
    p->bias_read |= !p->have_bias;
    p->bin_read |= !p->bin_set;
    uint32_t id, bin = addr_in(t, p->bin, p->have_bias ? p->bias : run->file_bias, ev->call_site, &off);
    if (func_id(run, bin, off, &id) < 0) {
        run->a->oom = 1;
        return;
    }
    if (g->nframes == ANALYSIS_TRIGGER_DEPTH) { /* keep the innermost */
        memmove(g->frames, g->frames + 1, (ANALYSIS_TRIGGER_DEPTH - 1) * sizeof *g->frames);
        g->nframes--;
        g->outer++;
    }
    g->frames[g->nframes++] = id;
}

/* Markers trace_stream --flight-recorder writes (tid 0): a snapshot
 * begins (every thread may begin inside a call: its exits before any entry
 * are truncated, not unmatched), and triggers it did not take. */
static void on_recorder_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    uint64_t p = ev->call_site;
    if (ev->func == TRACE_MARK_TRIGGERS_SKIPPED) {
        src->have_skipped = 1;
        src->skipped_over = (uint32_t)p;
        src->skipped_held = p >> 32;
        return;
    }
    src->snapshot = (uint32_t)(p >> 8 & 0xffffffu);
    src->snapshot_cause = (uint32_t)(p & 0xffu);
    stream_hole(run);
    run->truncated_start = 1;
    instant(run, NULL, ns, "flight-recorder snapshot %u", (unsigned)src->snapshot);
}

/* TRACE_MARK_RECORDER (tid 0, trace_stream): live control turned the
 * device's flight recorder on or off.  What came between went as
 * snapshots, so the series has a hole made on purpose: the calls open
 * across it are truncated, never unmatched, and nothing of it is loss. */
static void on_recorder_switch(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    uint64_t p = ev->call_site;
    if ((p & 0xffu) == TRACE_RECORDER_MARK_ON) {
        if (!src->rec_on++)
            src->rec_on_ns = ns;
        instant(run, NULL, ns, "flight recorder on (live control): events go as snapshots");
    } else if ((p & 0xffu) == TRACE_RECORDER_MARK_OFF) {
        src->rec_off++;
        src->rec_off_ns = ns;
        src->rec_over = sat_add(src->rec_over, p >> 8);
        stream_hole(run);
        instant(run, NULL, ns, "flight recorder off (live control): %llu events overwritten while on",
                (unsigned long long)(p >> 8));
    }
}

/* Markers serve writes: gaps, cuts, resumes, vanished tracers. */
static void on_stream_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    unsigned long long payload = ev->call_site;
    if (ev->func == TRACE_MARK_STREAM_GAP || ev->func == TRACE_MARK_STREAM_CUT) { /* ev is in the batch */
        src->loss_at = run->batch_base + (uint64_t)(ev - run->batch) + 1;
        src->loss_mark = (uint32_t)ev->func;
    }
    switch (ev->func) {
    case TRACE_MARK_STREAM_GAP:
        src->gaps++;
        src->gap_events = sat_add(src->gap_events, payload);
        src->gaps_unknown += payload == 0;
        stream_hole(run);
        loss(run, NULL, ns, SINK_LOSS_GAP, payload);
        if (payload)
            instant(run, NULL, ns, "stream gap: %llu events lost", payload);
        else
            instant(run, NULL, ns, "stream gap: events lost, count unknown");
        break;
    case TRACE_MARK_STREAM_CUT:
        src->cuts++;
        run->cut_pending = 1; /* sized by a resume right after it, if any */
        instant(run, NULL, ns, "stream cut after %llu records", payload);
        break;
    case TRACE_MARK_STREAM_RESUMED:
        src->resumes++;
        run->cut_pending = 0; /* its loss, if any, comes in the gap marker next */
        instant(run, NULL, ns, "stream resumed: %llu events lost", payload);
        break;
    case TRACE_MARK_TRACER_VANISHED:
        src->vanished = sat_add(src->vanished, payload);
        run->vanished = 1;
        instant(run, NULL, ns, "%llu tracer process(es) vanished", payload);
        break;
    }
}

/* The markers that say which process a thread is in and what it runs:
 * TRACE_MARK_PROCESS binds the thread to its process, LOAD_BIAS and
 * BUILD_ID describe the thread's process (the default one for threads
 * that never said). */
static void on_process_marker(struct analysis_run *run, const trace_event_t *ev)
{
    struct analysis *a = run->a;
    struct thread *t = thread_of(run, ev->tid, 1);
    if (!t)
        return;
    struct analysis_thread *at = &a->threads[t->index];
    run->gen++; /* a process's bias, binary or threads change */
    if (ev->func == TRACE_MARK_PROCESS) {
        long p = ev->call_site <= UINT32_MAX ? process_of(a, run->src, (uint32_t)ev->call_site) : -1;
        if (p < 0) {
            a->oom |= ev->call_site <= UINT32_MAX; /* a pid that big is noise: skip it */
            return;
        }
        at->proc = t->proc = (uint32_t)p;
        a->procs[p].announced = 1;
        if (t->mods && t->mods->n && keep_proc_list(run, t) < 0) /* its list came first (stream mode) */
            a->oom = 1;
        return;
    }
    struct analysis_process *p = &a->procs[at->proc];
    if (ev->func == TRACE_MARK_LOAD_BIAS) {
        p->have_bias = 1;
        p->bias = ev->call_site;
        return;
    }
    const uint64_t id[2] = {ev->call_site, ev->ts};
    long bin = bin_of(a, 1, id, at->proc);
    if (bin < 0) {
        a->oom = 1;
        return;
    }
    p->build_id_mixed |= p->bin != 0 && p->bin != (uint32_t)bin;
    p->bin = (uint32_t)bin;
    if (!p->bin_set)
        p->bin_first = (uint32_t)bin;
    p->bin_set = 1;
}

/* ---- module lists ------------------------------------------------------- */

/* The binary of a listed shared object: by its build-id, else by its
 * path.  -1: neither (it cannot be named: its addresses stay the
 * program's), -2 out of memory.  (The program's own entry is not looked
 * up: its addresses are the process's, BIN_PROGRAM.) */
static long bin_of_module(struct analysis *a, const struct modlist_entry *e, uint32_t proc)
{
    uint64_t id[2] = {0, 0};
    long bin = -1;
    for (unsigned i = 0; i < 16 && i < e->build_id_len; i++)
        id[i / 8] |= (uint64_t)e->build_id[i] << (8 * (i % 8));
    if (e->build_id_len)
        bin = bin_of(a, 1, id, proc);
    else if (e->path[0]) {
        uint32_t at;
        if (bins_index(a) < 0)
            return -2;
        bin = strmap_get(&a->bin_paths, e->path, &at) ? (long)at : bin_new(a, 0, id, proc);
    }
    if (bin < 0)
        return bin == -1 && (e->build_id_len || e->path[0]) ? -2 : -1;
    struct analysis_bin *b = &a->bins[bin];
    if (bin == 0)
        return -1; /* too many binaries: the rest are not told apart */
    b->module = 1;
    if (!b->have_load) {
        b->load_bias = e->bias;
        b->have_load = 1;
    }
    if (!b->id_len && e->build_id_len) {
        memcpy(b->id_bytes, e->build_id, e->build_id_len);
        b->id_len = e->build_id_len;
    }
    if (!b->path && e->path[0] && !(b->path = strdup(e->path)))
        return -2;
    return bin;
}

/* ---- a thread's modules: shared sets, charged to the module budget ---- */

static size_t modset_bytes(size_t n)
{
    return sizeof(struct modset) + n * sizeof(struct thread_mod);
}

/* Modules a new set can hold within the budget (SIZE_MAX: any number). */
static size_t modset_room(const struct analysis *a)
{
    const struct modlist_budget *b = &a->modules;
    if (b->held > b->max_bytes || b->max_bytes - b->held < modset_bytes(0))
        return 0;
    return (b->max_bytes - b->held - modset_bytes(0)) / sizeof(struct thread_mod);
}

/* A set of m[0..n), charged; NULL out of memory. */
static struct modset *modset_new(struct analysis *a, const struct thread_mod *m, size_t n, int cut)
{
    struct modset *s = malloc(modset_bytes(n));
    if (!s)
        return NULL;
    s->refs = 1;
    s->n = n;
    s->cut = cut;
    if (n)
        memcpy(s->v, m, n * sizeof *m);
    a->modules.held += modset_bytes(n);
    return s;
}

static struct modset *modset_get(struct modset *s)
{
    if (s)
        s->refs++;
    return s;
}

static void modset_put(struct analysis *a, struct modset *s)
{
    if (!s || --s->refs)
        return;
    size_t bytes = modset_bytes(s->n);
    a->modules.held -= bytes < a->modules.held ? bytes : a->modules.held;
    free(s);
}

static int modset_same(const struct modset *s, const struct thread_mod *m, size_t n, int cut)
{
    if (!s || s->n != n || s->cut != cut)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s->v[i].lo != m[i].lo || s->v[i].hi != m[i].hi || s->v[i].bias != m[i].bias ||
            s->v[i].bin != m[i].bin || s->v[i].retired != m[i].retired || s->v[i].until != m[i].until)
            return 0;
    return 1;
}

static int mod_by_lo(const void *pa, const void *pb)
{
    const struct thread_mod *x = pa, *y = pb;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The process's latest list in the series, NULL if none; create: made. */
static struct proc_mods *proc_mods_of(struct analysis_run *run, uint32_t proc, int create)
{
    uint32_t at;
    if (u64map_get(&run->pmod_index, proc, &at))
        return &run->pmods[at];
    if (!create || vec_grow(&run->pmods, &run->cappmods, run->npmods, sizeof *run->pmods, 16) < 0 ||
        u64map_put(&run->pmod_index, proc, (uint32_t)run->npmods) < 0)
        return NULL;
    run->pmods[run->npmods] = (struct proc_mods){proc, NULL, 0, NULL};
    return &run->pmods[run->npmods++];
}

/*
 * The list is written at a flush, before the batch of events recorded
 * since the last one: a module closed in between is not in it, though
 * events of the batch are in it.  So the modules of the thread's list
 * before that are gone now stay, retired, for this list's records, unless
 * a new one took their place (then the new one has the address); a module
 * retired once is dropped at the next list.  m[0..k) are the new ones by
 * lo, with room for room more after them; the new count.  An old module is
 * looked up among the new ones by a binary search over their lo and the
 * greatest hi up to each (top[]), so a list costs n log n, not n * m.
 * Those beyond room are counted in *over.
 */
static size_t keep_retired(const struct thread *t, struct thread_mod *m, size_t k, size_t room,
                           uint64_t *top, uint64_t *over)
{
    const struct modset *old = t->mods;
    size_t fresh = k;
    for (size_t j = 0; j < fresh; j++)
        top[j] = j && top[j - 1] > m[j].hi ? top[j - 1] : m[j].hi;
    for (size_t i = 0; old && i < old->n; i++) {
        const struct thread_mod *o = &old->v[i];
        if (o->retired)
            continue;
        size_t lo = 0, hi = fresh; /* the new ones that begin below o's end: [0, lo) */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m[mid].lo < o->hi)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && top[lo - 1] > o->lo)
            continue; /* still there, or overlapped by a new one */
        if (k - fresh == room) {
            (*over)++;
            continue;
        }
        m[k] = *o;
        m[k++].retired = 1;
    }
    return k;
}

/* What the budget has no room for goes: the retired modules first, then
 * those at the highest addresses.  The new count. */
static size_t fit_budget(struct thread_mod *m, size_t k, size_t room, uint64_t *over)
{
    if (k <= room)
        return k;
    *over += k - room;
    size_t j = 0;
    for (size_t i = 0; i < k && j < room; i++)
        if (!m[i].retired)
            m[j++] = m[i];
    for (size_t i = 0; i < k && j < room; i++)
        if (m[i].retired)
            m[j++] = m[i];
    qsort(m, j, sizeof *m, mod_by_lo);
    return j;
}

/* The analysis counts a list cut by a cap, and the thread once per cap. */
static void count_cut(struct analysis *a, struct thread *t, uint64_t list, uint64_t bytes)
{
    struct analysis_thread *at = &a->threads[t->index];
    a->modules_cut_list += list;
    a->modules_cut_bytes += bytes;
    if (list && !(at->modules_cut & 1))
        a->modules_cut_list_threads++;
    if (bytes && !(at->modules_cut & 2))
        a->modules_cut_bytes_threads++;
    at->modules_cut |= (list ? 1u : 0u) | (bytes ? 2u : 0u);
}

/* The thread's modules become set (a reference it holds). */
static void thread_mods_set(struct analysis_run *run, struct thread *t, struct modset *set)
{
    modset_put(run->a, t->mods);
    t->mods = set;
    t->mod_last = 0;
    run->gen++; /* the thread's (and its process's) modules change */
}

/* Of a list with closed modules (until set), the part in force for records
 * at time ts on, in place; its new count, and in *next the time after
 * which another part is.  A closed module covers its addresses up to its
 * time: over a loaded one there, and over a later-closed one (which has
 * them once it has gone).  m[0..k) by lo on entry and on return. */
static size_t mods_at(struct thread_mod *m, size_t k, uint64_t ts, uint64_t *next)
{
    size_t j = 0, ntimed = 0;
    for (size_t i = 0; i < k; i++)
        if (!m[i].until || m[i].until >= ts)
            m[j++] = m[i];
    k = j;
    /* the closed ones first, by time: each keeps its range if no earlier one took it */
    for (size_t i = 0; i < k; i++)
        if (m[i].until) {
            struct thread_mod x = m[i];
            memmove(&m[ntimed + 1], &m[ntimed], (i - ntimed) * sizeof *m);
            m[ntimed++] = x;
        }
    for (size_t i = 1; i < ntimed; i++)
        for (size_t h = i; h > 0 && m[h].until < m[h - 1].until; h--) {
            struct thread_mod x = m[h];
            m[h] = m[h - 1];
            m[h - 1] = x;
        }
    size_t kept = 0;
    *next = UINT64_MAX;
    for (size_t i = 0; i < k; i++) {
        int taken = 0;
        for (size_t h = 0; h < kept && h < ntimed && !taken; h++)
            taken = m[h].until && m[h].lo < m[i].hi && m[i].lo < m[h].hi;
        if (taken)
            continue;
        if (m[i].until && m[i].until < *next)
            *next = m[i].until;
        m[kept++] = m[i];
    }
    qsort(m, kept, sizeof *m, mod_by_lo);
    return kept;
}

/* A new list with closed modules is kept whole (charged, t->timed), and
 * m[0..*k) becomes its first part; one without them ends the last such. */
static int keep_timed(struct analysis *a, struct thread *t, struct thread_mod *m, size_t *k, int cut)
{
    int timed = 0;
    for (size_t i = 0; i < *k && !timed; i++)
        timed = m[i].until != 0;
    modset_put(a, t->timed);
    t->timed = NULL;
    t->mods_until = UINT64_MAX;
    if (!timed)
        return 0;
    if (!(t->timed = modset_new(a, m, *k, cut)))
        return -1;
    *k = mods_at(m, *k, 0, &t->mods_until);
    return 0;
}

/* A record later than the part of the thread's list in force: the part
 * for its time takes over. */
static void mods_advance(struct analysis_run *run, struct thread *t, uint64_t ts)
{
    const struct modset *all = t->timed;
    struct thread_mod *m = malloc((all->n + 1) * sizeof *m);
    if (!m) {
        run->a->oom = 1;
        t->mods_until = UINT64_MAX;
        return;
    }
    memcpy(m, all->v, all->n * sizeof *m);
    size_t k = mods_at(m, all->n, ts, &t->mods_until);
    struct modset *set = modset_new(run->a, m, k, all->cut);
    free(m);
    if (!set) {
        run->a->oom = 1;
        t->mods_until = UINT64_MAX;
        return;
    }
    thread_mods_set(run, t, set);
}

/* A whole list becomes the thread's: its modules by address, within the
 * caps: a list's first a->modules.per_list modules (the reader kept no
 * more; its retired ones fill what room is left), and what the module
 * budget has room for.  The same list as its process's latest or its own
 * last is shared, not held again. */
static void take_modlist(struct analysis_run *run, struct thread *t)
{
    struct analysis *a = run->a;
    size_t n, k = 0, old = t->mods ? t->mods->n : 0;
    uint64_t cut_list = t->mlist->cut_list, cut_bytes = t->mlist->cut_bytes;
    struct modlist_entry *e = modlist_take(t->mlist, &n);
    struct thread_mod *m = malloc((n + old + 1) * sizeof *m);
    uint64_t *top = malloc((n + 1) * sizeof *top);
    for (size_t i = 0; m && top && i < n; i++) {
        long bin = e[i].main ? 0 : bin_of_module(a, &e[i], t->proc);
        if (bin == -2) {
            free(m);
            m = NULL;
        } else if (bin >= 0)
            m[k++] = (struct thread_mod){e[i].lo, e[i].hi, e[i].bias, e[i].main ? BIN_PROGRAM : (uint32_t)bin, 0,
                                         e[i].main ? 0 : e[i].gone_at};
    }
    modlist_entries_free(e, n);
    if (!m || !top) {
        free(m);
        free(top);
        a->oom = 1;
        return;
    }
    qsort(m, k, sizeof *m, mod_by_lo);
    size_t per = a->modules.per_list > k ? a->modules.per_list - k : 0;
    k = keep_retired(t, m, k, per, top, &cut_list);
    free(top);
    qsort(m, k, sizeof *m, mod_by_lo);
    if (keep_timed(a, t, m, &k, cut_list || cut_bytes) < 0) {
        free(m);
        a->oom = 1;
        return;
    }
    struct proc_mods *pm = proc_mods_of(run, t->proc, 0);
    struct modset *set = NULL;
    int cut = cut_list || cut_bytes;
    if (pm && modset_same(pm->mods, m, k, cut))
        set = modset_get(pm->mods);
    else if (modset_same(t->mods, m, k, cut))
        set = modset_get(t->mods);
    else {
        k = fit_budget(m, k, modset_room(a), &cut_bytes);
        set = modset_new(a, m, k, cut_list || cut_bytes);
    }
    free(m);
    if (!set) {
        a->oom = 1;
        return;
    }
    if (cut_list || cut_bytes)
        count_cut(a, t, cut_list, cut_bytes);
    thread_mods_set(run, t, set);
    a->procs[t->proc].listed = 1;
    if (t->mlist->left_out > a->src[run->src].modules_left_out)
        a->src[run->src].modules_left_out = t->mlist->left_out;
    if (keep_proc_list(run, t) < 0)
        a->oom = 1;
}

/* The thread's list becomes its process's latest in the series (shared,
 * so a thread that names process after process costs no copies).  0, -1
 * oom. */
static int keep_proc_list(struct analysis_run *run, const struct thread *t)
{
    struct proc_mods *pm = proc_mods_of(run, t->proc, 1);
    run->gen++; /* threads without a list of their own use this one */
    if (!pm)
        return -1;
    struct modset *was = pm->mods;
    pm->mods = modset_get(t->mods);
    modset_put(run->a, pm->timed);
    pm->timed = modset_get(t->timed);
    pm->last = 0;
    modset_put(run->a, was);
    return 0;
}

static void modlist_step_done(struct analysis_run *run, struct thread *t, enum modlist_step st)
{
    struct analysis *a = run->a;
    if (st == MODLIST_OOM)
        a->oom = 1;
    else if (st == MODLIST_DAMAGED) {
        a->src[run->src].modlists_damaged++;
        diag(a, run->path, "thread %u: %s; its earlier module list stays in force", t->tid, t->mlist->why);
    } else if (st == MODLIST_DONE)
        take_modlist(run, t);
    int open = t->mlist->reading;
    if (open != t->mlist_counted) {
        run->mlists_open += open ? 1 : (size_t)-1;
        t->mlist_counted = open;
    }
}

static void on_module(struct analysis_run *run, const trace_event_t *ev)
{
    struct thread *t = thread_of(run, ev->tid, 1);
    if (!t) {
        return;
    }
    if (!t->mlist) {
        if (!(t->mlist = malloc(sizeof *t->mlist))) {
            run->a->oom = 1;
            return;
        }
        modlist_init(t->mlist, &run->a->modules);
    }
    modlist_step_done(run, t, modlist_feed(t->mlist, ev));
}

/* An event or summary record: a list that thread was in the middle of is torn. */
static void module_interrupt(struct analysis_run *run, const trace_event_t *ev)
{
    if (ev->kind == TRACE_KIND_MARKER)
        return; /* a segment's head (BUILD_ID) may come between a list's chunks */
    struct thread *t = thread_of(run, ev->tid, 0);
    if (t && t->mlist && t->mlist->reading)
        modlist_step_done(run, t, modlist_interrupt(t->mlist));
}

/* The thread's listed module that holds addr: 1, its binary and the
 * link-time address there; 0 when it has no list or none holds addr (*cut:
 * the list it looked in was cut by a cap). */
static int addr_listed(struct thread *t, uint64_t addr, uint32_t *bin, uint64_t *off, int *cut)
{
    const struct modset *set = t->mods;
    size_t *last = &t->mod_last;
    struct proc_mods *pm;
    if ((!set || !set->n) && (pm = proc_mods_of(t->run, t->proc, 0))) { /* none of its own: its process's */
        set = pm->mods;
        last = &pm->last;
    }
    *cut = set && set->cut;
    if (!set || !set->n)
        return 0;
    const struct thread_mod *mods = set->v;
    size_t n = set->n;
    const struct thread_mod *m = &mods[*last];
    if (addr < m->lo || addr >= m->hi) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (mods[mid].hi <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || addr < mods[lo].lo)
            return 0;
        *last = lo;
        m = &mods[lo];
    }
    *bin = m->bin;
    *off = addr - m->bias;
    return 1;
}

/* Where a function's address is: in its listed module, else (no list, or
 * in none of it: *count says which to count) the program's bin at
 * addr - bias, as before module lists existed. */
static uint32_t addr_place(struct thread *t, uint32_t bin, uint64_t bias, uint64_t addr, uint64_t *off,
                           enum addr_count *count)
{
    uint32_t b = 0;
    int cut;
    *count = COUNT_NONE;
    if (addr_listed(t, addr, &b, off, &cut) && b != BIN_PROGRAM)
        return b;
    if (b != BIN_PROGRAM)
        *count = cut ? COUNT_CUT : t->mods && t->mods->n ? COUNT_OUTSIDE : COUNT_UNLISTED;
    *off = addr - bias;
    return bin;
}

static void addr_count(struct thread *t, enum addr_count count)
{
    if (count == COUNT_OUTSIDE)
        t->run->a->src[t->run->src].outside_modules++;
    else if (count == COUNT_UNLISTED)
        t->run->a->procs[t->proc].unlisted++;
    else if (count == COUNT_CUT)
        t->run->a->modules_cut_addrs++;
}

/* addr_place, counted. */
static uint32_t addr_in(struct thread *t, uint32_t bin, uint64_t bias, uint64_t addr, uint64_t *off)
{
    enum addr_count count;
    uint32_t b = addr_place(t, bin, bias, addr, off, &count);
    addr_count(t, count);
    return b;
}

/* A call site's: the same, uncounted (it may lie in code nobody listed). */
static uint32_t site_in(struct thread *t, uint32_t bin, uint64_t bias, uint64_t addr, uint64_t *off)
{
    uint32_t b;
    int cut;
    if (addr_listed(t, addr, &b, off, &cut) && b != BIN_PROGRAM)
        return b;
    *off = addr - bias;
    return bin;
}

/* A thread applied a live-control generation here (trace.h): kept per
 * source, the first time and how many threads, for the notes; an instant
 * on the thread for the timelines.  Its calls need nothing: the runtime
 * keeps each call's enter and exit together across it. */
static void on_control(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    struct thread *t = ev->tid ? thread_of(run, ev->tid, 1) : NULL;
    uint32_t flags = ev->pad[0] & ~TRACE_CTL_MARK_LEFT_OUT, nfuncs = ev->pad[1] | (uint32_t)ev->pad[2] << 8;
    uint32_t i = 0;
    while (i < src->nctl && src->ctl[i].gen != ev->call_site)
        i++;
    if (i == src->nctl) {
        if (i == ANALYSIS_CTL_GENS) {
            src->ctl_more++;
            return;
        }
        src->ctl[src->nctl++] = (struct analysis_ctl){ev->call_site, ns, flags, nfuncs, 0, 0, 0, 0};
    }
    struct analysis_ctl *c = &src->ctl[i];
    c->threads++;
    c->left_out += (ev->pad[0] & TRACE_CTL_MARK_LEFT_OUT) != 0;
    c->ns = ns < c->ns ? ns : c->ns;
    instant(run, t ? &run->a->threads[t->index] : NULL, ns, "live control: generation %llu",
            (unsigned long long)ev->call_site);
}

/* Live control switched the thread's mode (trace.h): its calls from here
 * on are events or in its summary snapshots, each counted once, so the
 * trace may hold both.  Said with its generation's note. */
static void on_mode(struct analysis_run *run, const trace_event_t *ev)
{
    struct analysis_source *src = &run->a->src[run->src];
    uint64_t gen = ev->call_site >> 8;
    uint32_t mode = (uint32_t)(ev->call_site & 0xffu);
    if (mode != TRACE_CTL_MODE_EVENTS && mode != TRACE_CTL_MODE_SUMMARY)
        return;
    run->a->mode_switches++;
    for (uint32_t i = 0; i < src->nctl; i++)
        if (src->ctl[i].gen == gen) {
            src->ctl[i].mode = mode;
            src->ctl[i].switched++;
        }
}

/* Markers whose effect a part can carry over to the parts before it;
 * at any other it stops (see analysis_run.part). */
static int part_ok(const trace_event_t *ev)
{
    if (ev->kind == TRACE_KIND_ENTER || ev->kind == TRACE_KIND_EXIT)
        return 1;
    if (ev->kind != TRACE_KIND_MARKER) /* unknown kinds too: their count is said once per segment */
        return ev->kind == TRACE_KIND_HWC;
    switch (ev->func) {
    case TRACE_MARK_THREAD_NAME:
        return (ev->call_site & 0xffu) != 0; /* an empty name is no change in a part */
    case TRACE_MARK_THREAD_EXIT:
    case TRACE_MARK_TRACER_TIME:
    case TRACE_MARK_TRACER_WAIT:
    case TRACE_MARK_DEVICE_DROPPED:
    case TRACE_MARK_CLOCK_ANCHOR:
        return 1;
    case TRACE_MARK_THREAD_LOST:
    case TRACE_MARK_THREAD_RESYNC:
    case TRACE_MARK_THREAD_DROPPED:
    case TRACE_MARK_PROCESS:
    case TRACE_MARK_LOAD_BIAS:
    case TRACE_MARK_BUILD_ID:
    case TRACE_MARK_STREAM_GAP:
    case TRACE_MARK_STREAM_CUT:
    case TRACE_MARK_STREAM_RESUMED:
    case TRACE_MARK_TRACER_VANISHED:
    case TRACE_MARK_TRIGGER:
    case TRACE_MARK_TRIGGER_FRAME:
    case TRACE_MARK_SNAPSHOT:
    case TRACE_MARK_TRIGGERS_SKIPPED:
    case TRACE_MARK_CONTROL:
    case TRACE_MARK_MODE:
        return 0;
    default:
        return 1; /* capture markers, and codes the pass ignores */
    }
}

static void on_marker(struct analysis_run *run, const trace_event_t *ev, int64_t ns)
{
    struct analysis_source *src = &run->a->src[run->src];
    uint64_t code = ev->func, payload = ev->call_site;

    if (code != TRACE_MARK_STREAM_RESUMED)
        settle_cut(run);
    if (code >= TRACE_MARK_BUDGET && code <= TRACE_MARK_WRAP) {
        on_capture_marker(run, ev, ns);
        return;
    }
    switch (code) {
    case TRACE_MARK_THREAD_LOST:
    case TRACE_MARK_THREAD_RESYNC:
    case TRACE_MARK_THREAD_EXIT:
    case TRACE_MARK_THREAD_NAME:
        if (code != TRACE_MARK_THREAD_NAME && ev->tid) /* its latest exit may be in the hole */
            forget_exit(run, ev->tid);
        on_thread_marker(run, ev, ns);
        break;
    case TRACE_MARK_PROCESS:
    case TRACE_MARK_LOAD_BIAS:
    case TRACE_MARK_BUILD_ID:
        on_process_marker(run, ev);
        break;
    case TRACE_MARK_TRACER_TIME:
    case TRACE_MARK_TRACER_WAIT:
        on_tracer_marker(run, ev, ns);
        break;
    case TRACE_MARK_THREAD_DROPPED:
        on_thread_dropped(run, ev);
        break;
    case TRACE_MARK_DEVICE_DROPPED:
        src->have_device = 1;
        src->device_dropped = payload;
        instant(run, NULL, ns, "device dropped %llu events in all", (unsigned long long)payload);
        loss(run, NULL, ns, SINK_LOSS_DEVICE, payload);
        break;
    case TRACE_MARK_STREAM_GAP:
    case TRACE_MARK_STREAM_CUT:
    case TRACE_MARK_STREAM_RESUMED:
    case TRACE_MARK_TRACER_VANISHED:
        on_stream_marker(run, ev, ns);
        break;
    case TRACE_MARK_TRIGGER:
        on_trigger(run, ev, ns);
        break;
    case TRACE_MARK_TRIGGER_FRAME:
        on_trigger_frame(run, ev);
        break;
    case TRACE_MARK_SNAPSHOT:
    case TRACE_MARK_TRIGGERS_SKIPPED:
        on_recorder_marker(run, ev, ns);
        break;
    case TRACE_MARK_CONTROL:
        on_control(run, ev, ns);
        break;
    case TRACE_MARK_MODE:
        on_mode(run, ev);
        break;
    case TRACE_MARK_RECORDER:
        on_recorder_switch(run, ev, ns);
        break;
    case TRACE_MARK_CLOCK_ANCHOR: /* its rate was the pre-pass'; here it says the process exited */
        src->exit_anchors++;
        break;
    default:
        break; /* unknown */
    }
}

/* funcstats_id through a small cache: every event names a function, and a
 * program's hot functions are few. */
static int func_id(struct analysis_run *run, uint32_t bin, uint64_t addr, uint32_t *id)
{
    struct func_slot *c = &run->funcs[(addr >> 2 ^ bin) & 255];
    if (c->used && c->addr == addr && c->bin == bin) {
        *id = c->id;
        return 0;
    }
    if (funcstats_id(&run->a->funcs, bin, addr, id) < 0)
        return -1;
    *c = (struct func_slot){addr, bin, *id, 1};
    return 0;
}

static size_t res_slot(const struct thread *t, uint64_t addr)
{
    return (size_t)((((addr >> 2) ^ (uint64_t)t->tid << 7) * 0x9e3779b97f4a7c15u) >> 54) & (RES_SLOTS - 1);
}

/* An enter/exit's function, through the run's cache (see res_slot); its
 * counts are made on every record, hit or miss, as addr_in makes them. */
static HOT_INLINE int call_func(struct analysis_run *run, struct thread *t, const struct trace_reader *r,
                                uint64_t addr, uint32_t *id)
{
    if (!run->cache && !(run->cache = calloc(1, sizeof *run->cache)))
        return -1;
    struct res_slot *c = &run->cache->res[res_slot(t, addr)];
    if (c->gen == run->gen && c->t == t && c->addr == addr) {
        if (c->count != COUNT_NONE)
            addr_count(t, (enum addr_count)c->count);
        *id = c->id;
        return 0;
    }
    struct analysis_process *p = &run->a->procs[t->proc];
    enum addr_count count;
    p->bias_read |= !p->have_bias;
    p->bin_read |= !p->bin_set;
    uint64_t off;
    uint32_t bin = addr_place(t, p->bin, p->have_bias ? p->bias : r->hdr.load_bias, addr, &off, &count);
    addr_count(t, count);
    if (func_id(run, bin, off, id) < 0)
        return -1;
    *c = (struct res_slot){t, addr, run->gen, *id, count};
    return 0;
}

/* A part's function: by thread and runtime address, each with its records
 * (analysis_part_check resolves them as call_func would have). */
static int part_func(struct analysis_run *run, struct thread *t, uint64_t addr, uint32_t *id)
{
    if (!run->cache && !(run->cache = calloc(1, sizeof *run->cache)))
        return -1;
    struct res_slot *c = &run->cache->res[res_slot(t, addr)];
    if (c->gen != run->gen || c->t != t || c->addr != addr) {
        if (funcstats_id(&run->a->funcs, ANALYSIS_PART_BIN | t->index, addr, id) < 0)
            return -1;
        for (; run->npart_recs <= *id; run->npart_recs++) {
            if (vec_grow(&run->part_recs, &run->cappart_recs, run->npart_recs, sizeof *run->part_recs, 256) < 0)
                return -1;
            run->part_recs[run->npart_recs] = 0;
        }
        *c = (struct res_slot){t, addr, run->gen, *id, COUNT_NONE};
    }
    *id = c->id;
    run->part_recs[*id]++;
    return 0;
}

/* An enter's call site, through the run's other cache. */
static void call_site(struct analysis_run *run, struct thread *t, const struct trace_reader *r, uint64_t addr)
{
    struct site_slot *c = &run->cache->sites[res_slot(t, addr)]; /* made by call_func */
    if (c->gen != run->gen || c->t != t || c->addr != addr) {
        struct analysis_process *p = &run->a->procs[t->proc];
        uint64_t site;
        p->bias_read |= !p->have_bias;
        p->bin_read |= !p->bin_set;
        uint32_t bin = site_in(t, p->bin, p->have_bias ? p->bias : r->hdr.load_bias, addr, &site);
        *c = (struct site_slot){t, addr, run->gen, site, bin};
    }
    run->site = c->site;
    run->site_bin = c->bin;
}

/* An enter/exit's counts (events, first and last ns) in the analysis, its
 * process and its thread: a row of records of one thread is counted once
 * it ends, at the next record of another thread, at any other kind of
 * record and at the end of read_events (count_flush), which saves the
 * three tables' look-ups on every record; nothing reads these counts in
 * between (summary_thread_seen does, at a summary record). */
static void count_flush(struct analysis_run *run)
{
    struct thread *t = run->row_t;
    if (!t)
        return;
    run->row_t = NULL;
    struct analysis *a = run->a;
    uint64_t n = run->row_n;
    int64_t lo = run->row_first, hi = run->row_last;
    if (!a->events || lo < a->first_ns)
        a->first_ns = lo;
    if (!a->events || hi > a->last_ns)
        a->last_ns = hi;
    a->events += n;
    struct analysis_process *p = &a->procs[t->proc];
    if (!p->events)
        a->src[p->src].procs_with_events++;
    p->events += n;
    struct analysis_thread *at = &a->threads[t->index];
    if (!t->has_events) {
        t->has_events = 1;
        a->threads_with_events += !at->has_events;
        at->has_events = 1;
    }
    if (!at->events || lo < at->first_ns)
        at->first_ns = lo;
    if (!at->events || hi > at->last_ns)
        at->last_ns = hi;
    at->events += n;
}

static inline void count_row(struct analysis_run *run, struct thread *t, int64_t ns)
{
    if (run->row_t != t) {
        count_flush(run);
        run->row_t = t;
        run->row_n = 0;
        run->row_first = run->row_last = ns;
    }
    run->row_n++;
    if (ns < run->row_first)
        run->row_first = ns;
    if (ns > run->row_last)
        run->row_last = ns;
}

/* A record without a thread (or whose function could not be had): the
 * analysis' counts alone, at once. */
static void count_alone(struct analysis *a, int64_t ns)
{
    a->events++;
    if (a->events == 1 || ns < a->first_ns)
        a->first_ns = ns;
    if (a->events == 1 || ns > a->last_ns)
        a->last_ns = ns;
}

static HOT_INLINE void on_call_event(struct analysis_run *run, const struct trace_reader *r,
                                     const trace_event_t *ev, int64_t ns)
{
    struct analysis *a = run->a;
    uint32_t id;
    struct thread *t;

    settle_cut(run);
    if (!(t = thread_of(run, ev->tid, 1))) {
        count_alone(a, ns);
        return;
    }
    if (ev->ts > t->mods_until) /* a closed module's time passed */
        mods_advance(run, t, ev->ts);
    if ((run->part ? part_func(run, t, ev->func, &id) : call_func(run, t, r, ev->func, &id)) < 0) {
        count_alone(a, ns);
        a->oom = 1;
        return;
    }
    count_row(run, t, ns);
    if (ev->kind == TRACE_KIND_ENTER) {
        if (a->nsinks > 1) /* only the sinks read call sites, not the function table (nor a part: jobs.c) */
            call_site(run, t, r, ev->call_site);
        callstack_enter_with(&t->cs, id, ns, &frame_hooks); /* the hooks as a constant: called directly */
    } else {
        callstack_exit_with(&t->cs, id, ns, &frame_hooks);
        t->last_exit = id;
        t->have_exit = 1;
    }
}

/* A run of enter/exit records from ev[0] (one at least), the loop's common
 * case: on_call_event inlined here pays its prologue once per run rather
 * than once per record.  It stops before a record of another kind (or
 * when a module list opens, which every record must then see); returns
 * how many it took.  part_ok holds for every enter and exit. */
static size_t on_call_events(struct analysis_run *run, const struct trace_reader *r, const trace_event_t *ev,
                             const int64_t *ns, size_t n)
{
    size_t i = 0;
    do
        on_call_event(run, r, &ev[i], ns[i]);
    while (++i < n && ev[i].kind <= TRACE_KIND_EXIT && !run->mlists_open);
    return i;
}

/* A part stops before the record `left` records before the end of the
 * batch just counted: the run reads on from there. */
static void part_stop(struct analysis_run *run, size_t left)
{
    run->part_stopped = 1;
    run->stop = (struct analysis_cut){run->seg, run->seg_off - (uint64_t)left * TRACE_EVENT_SIZE};
    run->a->records -= left;
    run->a->src[run->src].records -= left;
}

/* Every whole record the reader has now (a range's: up to its end).  A
 * partial last record is left unread (the caller says whether it is damage
 * or a record still being written); unknown kinds are counted and said
 * once per call, or, for a range, once the segment's end is read. */
static enum trace_reader_status read_events(struct analysis_run *run, const struct trace_segment *seg,
                                            struct trace_reader *r)
{
    struct trace_reader_batch b;
    enum trace_reader_status st = TRACE_READER_END;
    uint64_t bad = 0;
    run->file_bias = r->hdr.load_bias;
    run->gen++; /* another segment: another header bias */
    while (run->left && !run->part_stopped && (st = trace_reader_next_batch(r, &b)) == TRACE_READER_EVENT) {
        struct analysis_source *src = &run->a->src[run->src];
        if (b.n > run->left)
            b.n = (size_t)run->left;
        if (run->left != UINT64_MAX)
            run->left -= b.n;
        run->seg_off += (uint64_t)b.n * TRACE_EVENT_SIZE;
        run->a->records += b.n;
        run->batch = b.ev;
        run->batch_base = src->records;
        src->records += b.n;
        for (size_t i = 0; i < b.n; i++) {
            const trace_event_t *ev = &b.ev[i];
            if (ev->kind <= TRACE_KIND_EXIT && !run->mlists_open) { /* the common case, first */
                i += on_call_events(run, r, ev, &b.ns[i], b.n - i) - 1;
                continue;
            }
            if (run->part && !part_ok(ev)) {
                part_stop(run, b.n - i);
                break;
            }
            count_flush(run); /* what follows may read the counts */
            if (ev->kind == TRACE_KIND_MODULE) {
                on_module(run, ev);
                continue;
            }
            if (run->mlists_open)
                module_interrupt(run, ev);
            if (ev->kind == TRACE_KIND_ENTER || ev->kind == TRACE_KIND_EXIT)
                on_call_event(run, r, ev, b.ns[i]);
            else if (ev->kind == TRACE_KIND_MARKER)
                on_marker(run, ev, b.ns[i]);
            else if (ev->kind == TRACE_KIND_SUMMARY)
                on_summary(run, r, ev, b.ns[i]);
            else if (ev->kind != TRACE_KIND_HWC)
                bad++; /* no kind trace.h defines: damaged, or not ours */
        }
    }
    count_flush(run);
    run->a->bad_kinds += bad;
    run->seg_bad += bad;
    if (!run->left || run->part_stopped)
        return TRACE_READER_END; /* the range ends here, not the file: said when the segment is read */
    if (run->seg_bad)
        diag(run->a, seg->path, "%llu records of unknown kind skipped", (unsigned long long)run->seg_bad);
    run->seg_bad = 0;
    return st;
}

enum trace_reader_status analysis_run_read(struct analysis_run *run, const struct trace_segment *seg,
                                           struct trace_reader *r)
{
    run->path = seg->path;
    enum trace_reader_status st = read_events(run, seg, r);
    /* The caches are worth their 72 KB only while records come: top holds
     * a run per series between its refreshes (up to --max-series). */
    free(run->cache);
    run->cache = NULL;
    return st;
}

/* The segment, opened; continued: the part before this one's opened it
 * (a cut inside it), which counted it and its place in the series. */
static int run_segment(struct analysis_run *run, const struct trace_segment *seg, struct trace_reader *r,
                       int continued);

int analysis_run_segment(struct analysis_run *run, const struct trace_segment *seg, struct trace_reader *r)
{
    return run_segment(run, seg, r, 0);
}

static int run_segment(struct analysis_run *run, const struct trace_segment *seg, struct trace_reader *r,
                       int continued)
{
    struct analysis *a = run->a;
    if (!run->have_src) {
        long src = source_of_series(a, run->s, r);
        if (src < 0) {
            a->oom = 1;
            return -1;
        }
        run->src = (size_t)src;
        run->have_src = 1;
    }
    const struct analysis_source *src = &a->src[run->src];
    if (src->have_anchor)
        trace_reader_set_anchor(r, src->anchor_ticks, src->anchor_ns);
    if (continued) {
        run->wrapped |= !!(r->hdr.flags & TRACE_FLAG_WRAPPED);
        run->have_seq = 1;
        run->prev_seq = seg->seq;
        return 0;
    }
    /* Earlier segments were removed (the flag, or the series starts past
     * seq 0): its threads' first exits may be of calls entered in them */
    if (!run->have_seq && ((r->hdr.flags & TRACE_FLAG_WRAPPED) || seg->seq > 0)) {
        stream_hole(run);
        run->truncated_start = 1;
    }
    run->wrapped |= !!(r->hdr.flags & TRACE_FLAG_WRAPPED);
    if (r->hdr.flags & TRACE_FLAG_EXIT_RECORD)
        a->src[run->src].exit_claimed = 1;
    if (run->have_seq && seg->seq > run->prev_seq + 1)
        run->segs_missing += seg->seq - run->prev_seq - 1;
    run->have_seq = 1;
    run->prev_seq = seg->seq;
    a->files_read++;
    return 0;
}

/* The segment's records from byte offset `from` (0: its first) to `to`
 * (0: its end), both record boundaries of a cut. */
static void read_segment(struct analysis_run *run, const struct trace_segment *seg,
                         struct trace_reader *r, uint64_t from, uint64_t to)
{
    struct analysis *a = run->a;
    char msg[128];
    int opened = trace_reader_open(r, seg->path, msg, sizeof msg) == 0;
    run->seg = (size_t)(seg - run->s->segs);
    if (run->part && (!opened || (run->have_part_bias && run->part_bias != r->hdr.load_bias))) {
        run->part_stopped = 1; /* the run reads it, and says what there is to say */
        run->stop = (struct analysis_cut){run->seg, from};
        if (opened)
            trace_reader_close(r);
        return;
    }
    if (!opened) {
        diag(a, seg->path, "%s; skipped", msg);
        a->files_bad++;
        return;
    }
    run->part_bias = r->hdr.load_bias;
    run->have_part_bias = 1;
    if (run_segment(run, seg, r, from != 0) < 0) {
        trace_reader_close(r);
        return;
    }
    if (from && trace_reader_seek(r, from) < 0) { /* the file changed since it was cut */
        if (run->part) {
            run->part_stopped = 1;
            run->stop = (struct analysis_cut){run->seg, from};
        } else
            diag(a, seg->path, "cannot continue at byte %llu: rest of file skipped", (unsigned long long)from);
        trace_reader_close(r);
        return;
    }
    run->seg_off = from ? from : r->hdr.header_size;
    run->left = to > from && to > r->hdr.header_size ? (to - (from ? from : r->hdr.header_size)) / TRACE_EVENT_SIZE
                                                    : UINT64_MAX;
    enum trace_reader_status st = analysis_run_read(run, seg, r);
    if (st == TRACE_READER_TRUNCATED)
        diag(a, seg->path, "truncated: partial last record (%zu bytes) ignored", r->trailing);
    else if (st == TRACE_READER_IOERR)
        diag(a, seg->path, "read error: %s; rest of file skipped", strerror(r->err));
    trace_reader_close(r);
}

static void close_thread(struct analysis_run *run, struct thread *t)
{
    struct analysis *a = run->a;
    char label[64];
    if (run->vanished)
        callstack_kill(&t->cs);
    callstack_reset(&t->cs);
    summary_end(run, t);
    free(t->sum);
    const struct callstack_counts *c = &t->cs.c;
    analysis_thread_label(&a->threads[t->index], label, sizeof label);
    a->unmatched_exits += c->unmatched_exits;
    a->unclosed_enters += c->unclosed_enters;
    a->src[run->src].open_at_end += c->unclosed_enters;
    a->src[run->src].dead_frames += c->dead_frames;
    /* The loss table's count covers the events its markers count, and
     * more (those of flushes that never got in): one or the other. */
    uint64_t lost = t->have_dropped ? t->dropped : c->lost_events;
    if (!t->have_dropped)
        run->untabled_lost = sat_add(run->untabled_lost, c->lost_events);
    a->src[run->src].thread_lost = sat_add(a->src[run->src].thread_lost, lost);
    a->threads[t->index].lost = sat_add(a->threads[t->index].lost, lost);
    if (lost)
        analysis_note(a, run->src,
                 "%s lost %llu events (%llu open frames cut short, %llu orphaned exits)", label,
                 (unsigned long long)lost, (unsigned long long)c->lost_frames,
                 (unsigned long long)c->orphan_exits);
    else if (run->truncated_start && !a->src[run->src].gaps && c->orphan_exits)
        analysis_note(a, run->src, "%s: %llu calls truncated: entered before the oldest record kept, "
                 "their exits are not counted", label, (unsigned long long)c->orphan_exits);
    else if (c->lost_frames || c->orphan_exits)
        analysis_note(a, run->src, "%s: at stream gaps %llu open frames cut short, %llu orphaned exits",
                 label, (unsigned long long)c->lost_frames, (unsigned long long)c->orphan_exits);
    if (c->overflow_enters)
        analysis_note(a, run->src, "%s: call depth beyond %zu frames: %llu calls not timed", label,
                 t->cs.max_depth, (unsigned long long)c->overflow_enters);
    if (c->bad_resyncs)
        analysis_note(a, run->src, "%s: %llu resync markers claimed depths its lost events cannot reach "
                 "(damaged or hostile): taken as holes of unknown shape", label, (unsigned long long)c->bad_resyncs);
    if (t->mlist)
        modlist_free(t->mlist);
    run->mlists_open -= (size_t)t->mlist_counted;
    free(t->mlist);
    modset_put(run->a, t->mods);
    modset_put(run->a, t->timed);
    callstack_free(&t->cs);
    free(t);
}

static void series_label(const struct trace_series *s, char *buf, size_t len)
{
    if (s->kind == TRACE_SERIES_LOCAL)
        snprintf(buf, len, "thread %u: ", s->tid);
    else
        buf[0] = 0;
}

static void series_notes(struct analysis_run *run)
{
    char label[32];
    series_label(run->s, label, sizeof label);
    if (run->wrapped && !run->a->src[run->src].capture_count[TRACE_MARK_WRAP]) /* else the source's note says it */
        analysis_note(run->a, run->src, "%sflight recorder discarded earlier trace segments", label);
    if (run->segs_missing)
        analysis_note(run->a, run->src, "%s%llu trace segments missing", label,
                 (unsigned long long)run->segs_missing);
}

struct analysis_run *analysis_run_begin(struct analysis *a, const struct trace_series *s)
{
    struct analysis_run *run = calloc(1, sizeof *run);
    if (!run) {
        a->oom = 1;
        return NULL;
    }
    run->a = a;
    run->s = s;
    run->left = UINT64_MAX;
    return run;
}

/* The loss table's `other`: the threads it had no slot for.  Those of
 * them whose markers got in said their part, counted with them (and any
 * tracer that predates the table said its part the same way); the rest is
 * theirs together, so that nothing is counted twice. */
static void others_lost(struct analysis_run *run)
{
    struct analysis_source *src = &run->a->src[run->src];
    if (!run->have_others)
        return;
    if (run->others_dropped <= run->untabled_lost)
        return;
    uint64_t rest = run->others_dropped - run->untabled_lost;
    src->others_lost = sat_add(src->others_lost, rest);
    src->thread_lost = sat_add(src->thread_lost, rest);
    analysis_note(run->a, run->src, "threads the ring's loss table had no slot for lost %llu events",
                  (unsigned long long)rest);
}

void analysis_run_end(struct analysis_run *run)
{
    if (!run)
        return;
    if (run->have_src) {
        settle_cut(run);
        series_notes(run);
    }
    for (size_t i = 0; i < run->nthreads; i++)
        close_thread(run, run->threads[i]);
    if (run->have_src)
        others_lost(run);
    free(run->threads);
    u64map_free(&run->tids);
    for (size_t i = 0; i < run->npmods; i++) {
        modset_put(run->a, run->pmods[i].mods);
        modset_put(run->a, run->pmods[i].timed);
    }
    free(run->pmods);
    u64map_free(&run->pmod_index);
    free(run->cache);
    free(run);
}

int analysis_run_source(const struct analysis_run *run, size_t *src)
{
    *src = run->src;
    return run->have_src;
}

void analysis_run_series(struct analysis *a, const struct trace_series *s)
{
    struct trace_reader *r = malloc(sizeof *r);
    struct analysis_run *run = r ? analysis_run_begin(a, s) : NULL;
    if (!run) {
        a->oom = 1;
        free(r);
        return;
    }
    for (size_t i = 0; i < s->nsegs; i++)
        read_segment(run, &s->segs[i], r, 0, 0);
    free(r);
    analysis_run_end(run);
}

/* ---- a series in parts (jobs.c) ------------------------------------------ */

size_t analysis_series_cuts(const struct trace_series *s, size_t parts, struct analysis_cut *cuts)
{
    struct trace_reader *r = malloc(sizeof *r);
    uint64_t *recs = calloc(s->nsegs + 1, sizeof *recs), *hdr = calloc(s->nsegs + 1, sizeof *hdr), total = 0;
    size_t n = 0;
    char msg[128];
    for (size_t i = 0; r && recs && hdr && i < s->nsegs; i++) {
        if (trace_reader_open(r, s->segs[i].path, msg, sizeof msg) < 0)
            goto out; /* one pass says why */
        hdr[i] = r->hdr.header_size;
        recs[i] = (r->file_size - r->hdr.header_size) / TRACE_EVENT_SIZE;
        total += recs[i];
        trace_reader_close(r);
    }
    for (size_t k = 1; r && recs && hdr && k < parts; k++) {
        uint64_t want = total / parts * k, at = 0;
        size_t i = 0;
        while (i < s->nsegs && at + recs[i] <= want)
            at += recs[i++];
        if (i == s->nsegs)
            break;
        uint64_t rec = want - at; /* strictly inside the segment: the part before opened it */
        rec = rec ? rec : 1;
        if (rec >= recs[i])
            continue;
        struct analysis_cut c = {i, hdr[i] + rec * TRACE_EVENT_SIZE};
        if (n && (c.seg < cuts[n - 1].seg || (c.seg == cuts[n - 1].seg && c.off <= cuts[n - 1].off)))
            continue;
        cuts[n++] = c;
    }
out:
    free(r);
    free(recs);
    free(hdr);
    return n;
}

void analysis_run_range(struct analysis_run *run, const struct analysis_cut *from, const struct analysis_cut *to)
{
    const struct trace_series *s = run->s;
    struct trace_reader *r = malloc(sizeof *r);
    if (!r) {
        run->a->oom = 1;
        return;
    }
    for (size_t i = from ? from->seg : 0; i < s->nsegs && (!to || i <= to->seg) && !run->part_stopped; i++)
        read_segment(run, &s->segs[i], r, from && i == from->seg ? from->off : 0, to && i == to->seg ? to->off : 0);
    free(r);
}

struct analysis_run *analysis_part_begin(struct analysis *a, const struct trace_series *s)
{
    struct analysis_run *run = analysis_run_begin(a, s);
    if (run)
        run->part = 1;
    return run;
}

void analysis_part_free(struct analysis_run *part)
{
    if (!part)
        return;
    for (size_t i = 0; i < part->nthreads; i++) {
        struct thread *t = part->threads[i];
        summary_end(part, t);
        free(t->sum);
        if (t->mlist)
            modlist_free(t->mlist);
        free(t->mlist);
        modset_put(part->a, t->mods);
        modset_put(part->a, t->timed);
        callstack_free(&t->cs);
        free(t);
    }
    part->nthreads = 0;
    part->have_src = 0; /* no notes: nothing of it is counted */
    free(part->part_recs);
    analysis_run_end(part);
}

/* The thread of the run a part's thread continues, or NULL: a new one. */
static struct thread *part_continues(struct analysis_run *run, const struct thread *pt)
{
    uint32_t pos;
    return u64map_get(&run->tids, pt->tid, &pos) ? run->threads[pos] : NULL;
}

/* A part's function id as the stacks carry it through the check: the
 * run's id, or one no frame of the run can hold (a function new to it). */
static uint64_t part_id(const struct analysis_part_func *f, uint64_t id)
{
    return f[id].have ? f[id].id : (uint64_t)1 << 63 | id;
}

static void part_map_stack(struct callstack *cs, const struct analysis_part_func *f, const uint32_t *func)
{
    for (size_t i = 0; i < cs->n; i++)
        cs->frames[i].func = func ? func[cs->frames[i].func] : part_id(f, cs->frames[i].func);
    for (size_t i = 0; cs->part && i < cs->part->nunder; i++)
        cs->part->under[i].func = func ? func[cs->part->under[i].func] : part_id(f, cs->part->under[i].func);
    for (size_t i = 0; cs->part && i < cs->part->ndone; i++)
        cs->part->done[i].func = func ? func[cs->part->done[i].func] : part_id(f, cs->part->done[i].func);
}

/* Each of the part's functions as call_func would have resolved it at the
 * cut, on the run's state there (the part changed none of it). */
static int part_resolve(struct analysis_run *run, const struct analysis_run *part, struct analysis_part_func *f)
{
    const struct analysis *pa = part->a;
    struct analysis *a = run->a;
    for (size_t i = 0; i < pa->funcs.n; i++) {
        const struct funcstats_entry *e = &pa->funcs.v[i];
        uint32_t ti = e->bin & ~ANALYSIS_PART_BIN;
        if (!(e->bin & ANALYSIS_PART_BIN) || ti >= pa->nthreads)
            return -1;
        uint32_t tid = pa->threads[ti].tid, pos;
        struct thread fresh, *t = u64map_get(&run->tids, tid, &pos) ? run->threads[pos] : NULL;
        if (!t) { /* as thread_find would make it */
            memset(&fresh, 0, sizeof fresh);
            fresh.run = run;
            fresh.tid = tid;
            fresh.proc = a->src[run->src].proc;
            fresh.mods_until = UINT64_MAX;
            t = &fresh;
        }
        if (t->mods_until != UINT64_MAX || t->mlist_counted)
            return -1;
        const struct analysis_process *p = &a->procs[t->proc];
        enum addr_count count;
        uint64_t off;
        uint32_t bin = addr_place(t, p->bin, p->have_bias ? p->bias : run->file_bias, e->addr, &off, &count);
        f[i] = (struct analysis_part_func){bin, off, t->proc, 0, 0, (unsigned)count,
                                           i < part->npart_recs ? part->part_recs[i] : 0};
        f[i].have = addrindex_find(&a->funcs.index, bin, off, &f[i].id);
    }
    return 0;
}

const struct analysis_cut *analysis_part_stopped(const struct analysis_run *part)
{
    return part->part_stopped ? &part->stop : NULL;
}

int analysis_part_check(struct analysis_run *run, struct analysis_run *part, struct analysis_part_func *f)
{
    if (part->holed || part->cut_pending || run->seg_bad || part->vanished || part->mlists_open || !part->have_src ||
        run->holed || run->cut_pending || run->vanished || run->mlists_open || !run->have_src ||
        part->src != run->src || (part->have_part_bias && part->part_bias != run->file_bias) ||
        part_resolve(run, part, f) < 0)
        return 0;
    struct callstack empty;
    callstack_init(&empty, run->a->max_depth, NULL, NULL);
    for (size_t i = 0; i < part->nthreads; i++) {
        struct thread *pt = part->threads[i], *t = part_continues(run, pt);
        if (pt->sum || pt->mlist || pt->have_dropped || (!t && pt->part_by_exit))
            return 0;
        part_map_stack(&pt->cs, f, NULL);
        if (!callstack_stitch_fits(t ? &t->cs : &empty, &pt->cs))
            return 0;
    }
    return 1;
}

static void part_counts(struct analysis_run *run, const struct analysis_part_func *f, size_t n)
{
    struct analysis *a = run->a;
    for (size_t i = 0; i < n; i++) {
        struct analysis_process *p = &a->procs[f[i].proc];
        if (!f[i].records)
            continue;
        p->bias_read |= !p->have_bias;
        p->bin_read |= !p->bin_set;
        if (f[i].count == COUNT_OUTSIDE)
            a->src[run->src].outside_modules += f[i].records;
        else if (f[i].count == COUNT_UNLISTED)
            p->unlisted += f[i].records;
        else if (f[i].count == COUNT_CUT)
            a->modules_cut_addrs += f[i].records;
    }
}

/* A thread of the part, its stack stitched onto t's (NULL: it is new and
 * joins the run). */
static int part_thread(struct analysis_run *run, struct thread *pt, struct thread *t, const uint32_t *func,
                       const uint32_t *thread)
{
    struct analysis *a = run->a;
    struct analysis_process *p;
    uint64_t events = pt->run->a->threads[pt->index].events;
    if (!t) {
        pt->run = run;
        pt->index = thread[pt->index];
        pt->proc = a->threads[pt->index].proc;
        struct callstack cs;
        callstack_init(&cs, a->max_depth, &frame_hooks, pt);
        if (vec_grow(&run->threads, &run->capthreads, run->nthreads, sizeof *run->threads, 16) < 0 ||
            u64map_put(&run->tids, pt->tid, (uint32_t)run->nthreads) < 0 || callstack_stitch(&cs, &pt->cs) < 0) {
            callstack_free(&cs);
            return -1;
        }
        callstack_free(&pt->cs);
        pt->cs = cs;
        pt->last_exit = pt->have_exit == 1 ? func[pt->last_exit] : 0;
        pt->have_exit = pt->have_exit == 1;
        run->threads[run->nthreads++] = pt;
        t = pt;
    } else {
        if (callstack_stitch(&t->cs, &pt->cs) < 0)
            return -1;
        t->has_events |= pt->has_events;
        if (pt->have_exit >= 0) { /* the part's exits or exit marker say it */
            t->last_exit = pt->have_exit ? func[pt->last_exit] : t->last_exit;
            t->have_exit = pt->have_exit;
        }
        t->exit_selected |= pt->exit_selected;
    }
    p = &a->procs[t->proc];
    if (events && !p->events)
        a->src[p->src].procs_with_events++;
    p->events += events;
    return 0;
}

int analysis_part_apply(struct analysis_run *run, struct analysis_run *part, const struct analysis_part_func *f,
                        const uint32_t *func, const uint32_t *thread)
{
    part_counts(run, f, part->a->funcs.n);
    for (size_t i = 0; i < part->nthreads; i++) {
        struct thread *pt = part->threads[i], *t = part_continues(run, pt);
        for (size_t k = 0; k < pt->cs.n; k++) /* back from the check's ids: those new to the run have theirs now */
            pt->cs.frames[k].func = pt->cs.frames[k].func >> 63 ? func[pt->cs.frames[k].func & ~((uint64_t)1 << 63)]
                                                                 : pt->cs.frames[k].func;
        for (size_t k = 0; pt->cs.part && k < pt->cs.part->nunder; k++) {
            struct callstack_under *u = &pt->cs.part->under[k];
            u->func = u->func >> 63 ? func[u->func & ~((uint64_t)1 << 63)] : u->func;
        }
        /* calls nested in the bottom: their time is already in an outer one's */
        for (size_t k = 0; t && pt->cs.part && k < pt->cs.part->ndone; k++) {
            const struct callstack_done *d = &pt->cs.part->done[k];
            if (!(d->func >> 63) && callstack_part_nested(&t->cs, &pt->cs, d->func, d->under))
                run->a->funcs.v[d->func].incl_ns -= d->incl_ns;
        }
        if (part_thread(run, pt, t, func, thread) < 0) {
            run->a->oom = 1;
            return -1;
        }
        if (!t)
            part->threads[i] = NULL; /* the run's now */
    }
    size_t k = 0;
    for (size_t i = 0; i < part->nthreads; i++)
        if (part->threads[i])
            part->threads[k++] = part->threads[i];
    part->nthreads = k;
    run->wrapped |= part->wrapped;
    run->segs_missing += part->segs_missing;
    run->prev_seq = part->prev_seq;
    run->file_bias = part->file_bias;
    run->gen++;
    return 0;
}

/* ---- totals ------------------------------------------------------------- */

int analysis_source_cut_at_end(const struct analysis_source *s)
{
    return s->loss_at && s->loss_at == s->records;
}

uint64_t analysis_source_dropped(const struct analysis_source *s)
{
    /* The same lost events counted two ways: never add them. */
    uint64_t ring = s->have_device && s->device_dropped > s->thread_lost ? s->device_dropped
                                                                         : s->thread_lost;
    /* Gaps lose records the device had put in its ring and taken out
     * again: never the ones it dropped, which never got in.  Add them. */
    return sat_add(ring, s->gap_events);
}

uint64_t analysis_dropped(const struct analysis *a)
{
    uint64_t total = 0;
    int recorder = 0; /* a flight recorder's main connection is here: it has the device's count */
    for (size_t i = 0; i < a->nsrc; i++)
        recorder |= a->src[i].have_skipped;
    for (size_t i = 0; i < a->nsrc; i++) {
        const struct analysis_source *s = &a->src[i];
        /* a snapshot's threads' losses are among the device's drops then */
        total = sat_add(total, recorder && s->snapshot && !s->have_device ? s->gap_events
                                                                          : analysis_source_dropped(s));
    }
    return total;
}

void analysis_finish(struct analysis *a)
{
    /* A function missing from a table that filled up may have had calls
     * there that only the table's "beyond" count holds: its row is low. */
    a->summary_lower_rows = 0;
    for (size_t i = 0; i < a->funcs.n; i++) {
        struct funcstats_entry *e = &a->funcs.v[i];
        e->lower_bound |= e->sum_full < a->summary_full_tables;
        a->summary_lower_rows += e->lower_bound && e->calls;
    }
    timeline_finish(&a->timeline);
    a->oom |= a->timeline.oom;
}

uint64_t analysis_span(const struct analysis *a)
{
    if (a->events && a->mode_switches && a->summary_snapshots) { /* live control switched: both, one clock */
        int64_t lo = a->first_ns < a->summary_first_ns ? a->first_ns : a->summary_first_ns;
        int64_t hi = a->last_ns > a->summary_last_ns ? a->last_ns : a->summary_last_ns;
        return hi > lo ? (uint64_t)hi - (uint64_t)lo : 0;
    }
    if (!a->events && (a->summary_snapshots || a->summary_outside))
        return a->summary_last_ns > a->summary_first_ns
                   ? (uint64_t)a->summary_last_ns - (uint64_t)a->summary_first_ns
                   : 0;
    return a->events && a->last_ns > a->first_ns ? (uint64_t)a->last_ns - (uint64_t)a->first_ns
                                                 : 0;
}
