/*
 * analysis.h - the analyzer's one streaming pass: series of trace files in,
 * frames and notes out to sinks (sink.h), loss accounting kept.
 *
 * Sources are what produced the files: a process (local file mode, one
 * series per thread) or a serve connection (one series, all threads
 * interleaved).  Threads are keyed by (source, tid) and demultiplexed from
 * each series into their own shadow stacks (callstack.h).  A source's
 * threads belong to its one default process unless they name another
 * (TRACE_MARK_PROCESS: several processes wrote one ring); each process
 * has its load bias and binary, binaries are told apart by build-id, and
 * each is matched to one of the --exe files given, so functions are keyed
 * by (binary, link-time address) and named from their own binary.  The
 * frames go to every sink: always the function table (funcstats.h), plus
 * what the outputs asked for (calling-context tree, call sites, timeline).
 * Markers become capture notes, loss counts, thread names and instants.
 * The tracer's own time (TRACE_MARK_TRACER_TIME: a thread flushing its
 * buffer) is taken out of the frames open on that thread when it happened,
 * unless keep_tracer_time is set, and summed either way; the time spent
 * waiting for the ring under TRACE_SHM_WAIT_US (TRACE_MARK_TRACER_WAIT) is
 * summed too.  Memory is bounded by threads x depth of the series being
 * read, plus sources, distinct threads and distinct functions, and what the
 * sinks keep; threads, depth and functions are capped (max_threads,
 * max_depth, funcs.max): records of threads beyond the cap are counted, not
 * analyzed; frames beyond the depth are counted, not timed; functions beyond
 * theirs go to one "[other]" row.  Records of unknown kind are counted.
 *
 * Summary traces (TRACE_MODE=summary) have no frames: each whole snapshot
 * of a thread, minus its previous one, goes into the function table and
 * into the per-interval series (timeline.h); snapshots held are bounded by
 * one budget (summary.h).
 *
 * Filters select which frames count (their tag.selected): threads by tid or
 * name, a time window measured from the trace's first event, and the
 * subtrees of some functions.  In summary traces the window selects the
 * intervals that end inside it, measured from the traced program's start.  Matching always runs on everything, so the
 * header counts and notes describe all input whatever is selected.
 *
 * Order of use: analysis_init, analysis_set_filter and analysis_add_sink
 * (optional), analysis_prepare (cheap pre-passes: exit clock anchors from
 * the tails of the last segments, and the trace's start from the first
 * records of each series), analysis_run_series for each series; then the outputs read
 * the structure (out/notes.h words the header and notes).
 *
 * A series may also be read in steps, as its files grow (callsight top):
 * analysis_run_begin, then for each segment analysis_run_segment once and
 * analysis_run_read whenever it has grown, then analysis_run_end.  It is
 * the same pass, so the counts are analyze's; only the exit clock anchors
 * of the pre-pass are missing (times use each file's own calibration).
 */
#ifndef CALLSIGHT_ANALYSIS_H
#define CALLSIGHT_ANALYSIS_H

#include <stdint.h>
#include <stdio.h>

#include "funcstats.h"
#include "lib/strmap.h"
#include "lib/u64map.h"
#include "read/modlist.h"
#include "read/trace_files.h"
#include "read/trace_reader.h"
#include "sink.h"
#include "summary.h"
#include "timeline.h"

#define ANALYSIS_ANCHOR_TAIL (64u * 1024u) /* bytes of tail searched per series */
#define ANALYSIS_MAX_SINKS 8
#define ANALYSIS_NAME_MAX 16               /* bytes of a thread name */
#define ANALYSIS_CAPTURE_CODES 6           /* capture-stop and wrap markers: 1..5 */
#define ANALYSIS_MAX_EXES 16               /* binaries given (--exe), at most */
#define ANALYSIS_MAX_BINS 4096             /* distinct build-ids kept; damaged input may hold more */
#define ANALYSIS_MAX_TRIGGERS 16           /* slow calls (TRACE_MARK_TRIGGER) kept with their stacks */
#define ANALYSIS_TRIGGER_DEPTH 64          /* frames kept of each, innermost */
#define ANALYSIS_MAX_THREADS 65536u        /* distinct threads kept by default (--max-threads) */
#define ANALYSIS_MAX_MODULES 1024u         /* modules kept of a thread's list by default (--max-modules) */
#define ANALYSIS_MAX_MODULES_MB 64u        /* MiB module lists may hold at once by default (--max-modules-mb) */

enum analysis_source_kind { ANALYSIS_SOURCE_PID = 0, ANALYSIS_SOURCE_STREAM = 1 };

#define ANALYSIS_CTL_GENS 32 /* live-control generations a source keeps apart */

struct analysis_source {
    enum analysis_source_kind kind;
    uint32_t id;
    int have_anchor;
    uint64_t anchor_ticks, anchor_ns;
    int have_device;
    uint64_t device_dropped; /* last TRACE_MARK_DEVICE_DROPPED payload */
    uint64_t thread_lost;    /* what its threads lost, each by the ring's loss table
                              * (TRACE_MARK_THREAD_DROPPED) or else its THREAD_LOST
                              * markers, plus others_lost */
    uint64_t others_lost;    /* the loss table's threads without a slot, beyond their markers */
    uint64_t capture_count[ANALYSIS_CAPTURE_CODES];
    uint64_t capture_payload[ANALYSIS_CAPTURE_CODES]; /* first one; wrap: the sum */
    /* Stream losses serve recorded (see docs/analysis.md for the rules). */
    uint64_t gaps;            /* TRACE_MARK_STREAM_GAP markers */
    uint64_t gap_events;      /* records lost in gaps of known size */
    uint64_t gaps_unknown;    /* gaps of unknown size: 19 with payload 0, a cut never resumed */
    uint64_t cuts, resumes;   /* TRACE_MARK_STREAM_CUT, TRACE_MARK_STREAM_RESUMED */
    uint64_t records;         /* every record read of it */
    uint64_t loss_at;         /* records read of it up to its last STREAM_GAP or STREAM_CUT,
                               * that one included (0: none): equal to records when the
                               * source ends with one, i.e. its connection was cut */
    uint32_t loss_mark;       /* ... and which it was: TRACE_MARK_STREAM_GAP or _CUT */
    uint64_t vanished;        /* tracer processes that vanished (TRACE_MARK_TRACER_VANISHED) */
    uint64_t dead_frames;     /* open frames cut at the end because tracers vanished */
    uint64_t exit_anchors;    /* TRACE_MARK_CLOCK_ANCHOR: its process exited (file mode: it ran atexit) */
    int exit_claimed;         /* a file of it says its writer records its exit (TRACE_FLAG_EXIT_RECORD) */
    uint64_t open_at_end;     /* frames still open when its threads' data ended */
    uint64_t modlists_damaged; /* module lists not used: torn or malformed */
    uint64_t outside_modules; /* addresses looked up in no module of their thread's list */
    uint64_t shared_modules;  /* summary rows at an address two modules held in turn */
    uint64_t modules_left_out; /* modules the runtime's table could not list (most in a list) */
    uint64_t tracer_ns, tracer_flushes; /* TRACER_TIME: ns (saturating) and how many */
    uint64_t waited_ns, waits;          /* TRACER_WAIT: ns (saturating) and how many */
    uint32_t proc;            /* its default process (analysis.procs) */
    uint32_t procs_with_events; /* its processes that had enter/exit records */
    uint32_t snapshot;        /* a flight-recorder snapshot: its number (TRACE_MARK_SNAPSHOT), 0: not one */
    uint32_t snapshot_cause;  /* enum trace_snapshot_cause */
    uint64_t skipped_over, skipped_held; /* TRACE_MARK_TRIGGERS_SKIPPED: last counts */
    int have_skipped;         /* ... seen: a flight recorder's main connection (it has the device's drops) */
    uint32_t rec_on, rec_off; /* TRACE_MARK_RECORDER: live control turned the device's flight recorder on, off */
    uint64_t rec_over;        /* ... events it overwrote while on (each off says) */
    int64_t rec_on_ns, rec_off_ns; /* ... the first on, the last off */
    struct analysis_ctl {     /* live control (TRACE_MARK_CONTROL): each generation applied */
        uint64_t gen;
        int64_t ns;           /* when its first thread applied it */
        uint32_t flags, nfuncs; /* its TRACE_CTL_* flags and functions */
        uint32_t threads;     /* threads that applied it */
        uint32_t left_out;    /* ... of them, those its thread globs left out */
        uint32_t mode;        /* the mode it switched threads to (TRACE_MARK_MODE: 1 events, 2 summary), 0 none */
        uint32_t switched;    /* threads it switched */
    } ctl[ANALYSIS_CTL_GENS];
    uint32_t nctl;            /* generations in ctl[] */
    uint64_t ctl_more;        /* applications of generations beyond them */
    char **notes; /* thread and series notes, in the order found */
    size_t nnotes, capnotes;
};

/* A binary given to analyze (--exe): where it is and its build-id. */
struct analysis_exe {
    const char *path;
    int have_build_id;
    uint64_t build_id[2]; /* its first 16 bytes, packed as TRACE_MARK_BUILD_ID */
};

/* A traced binary: one per distinct build-id recorded, in order of first
 * sight.  Binary 0 stands for processes that recorded none (older runtimes,
 * programs linked without one); it is named from the first --exe. */
struct analysis_bin {
    int have_build_id;
    uint64_t build_id[2];
    uint32_t exe;      /* the --exe it is named from (analysis.exes) */
    int exe_matches;   /* that --exe has this build-id */
    uint32_t proc;     /* the first process that ran it, for messages */
    int module;        /* a shared object (named in a module list), not a program */
    char *path;        /* the path a module list gave it first, NULL if none */
    unsigned char id_bytes[TRACE_MODULE_BYTES]; /* a module's build-id as its list gave it ... */
    unsigned id_len;   /* ... this many bytes (0: none) */
    int have_load;     /* a module list gave its load bias: ... */
    uint64_t load_bias; /* ... the first one, in series order (another process may load it elsewhere) */
};

/* A traced process.  A source's default process stands for all of it when
 * no thread names its process (local files, streams of one process from
 * older runtimes); its pid is the source's id in file mode, 0 in a stream. */
struct analysis_process {
    uint32_t src;       /* position in analysis.src */
    uint32_t pid;
    int announced;      /* named by TRACE_MARK_PROCESS */
    int have_bias;      /* TRACE_MARK_LOAD_BIAS seen; else the file header's */
    uint64_t bias;
    uint32_t bin;       /* position in analysis.bins (0: no build-id) */
    int build_id_mixed; /* it recorded two different build-ids */
    uint64_t events;    /* its enter/exit records */
    int listed;         /* a thread of it gave a module list */
    uint64_t unlisted;  /* function addresses looked up in threads without a list */
    /* summary traces: its threads with snapshots, those whose last one says
     * which end it was, those that ended with an exit, and whether the
     * process's own exit wrote one (none: it ended without exiting) */
    uint32_t sum_threads, sum_marked, sum_final;
    int sum_exited;
    /* For a pass in parts (jobs.h): the bias or binary was used before this
     * analysis saw a marker set them (an earlier part may have), and the
     * first binary a marker set. */
    int bias_read, bin_read, bin_set;
    uint32_t bin_first;
};

struct analysis_thread {
    uint32_t index;                    /* position in analysis.threads */
    uint32_t src;                      /* position in analysis.src */
    uint32_t proc;                     /* position in analysis.procs */
    uint32_t tid;
    char name[ANALYSIS_NAME_MAX + 1];  /* "" until the runtime names it */
    int has_events;                    /* had enter/exit records */
    uint64_t lost;                     /* events it lost on the device (its thread_lost share) */
    int selected;                      /* matches the thread filter */
    unsigned modules_cut;              /* a list of it was cut: 1 by --max-modules, 2 by --max-modules-mb */
    /* For analyze --threads: its enter/exit records, the calls of it in
     * the table (selected ones) and their self time, and its first and
     * last event's time (ns; meaningful when events > 0). */
    uint64_t events, calls, self_ns;
    int64_t first_ns, last_ns;
};

/* A call that took longer than TRACE_TRIGGER's limit, with its stack then. */
struct analysis_trigger {
    uint32_t thread;    /* analysis.threads */
    int64_t ns;         /* its exit */
    uint64_t took_ns;   /* as the runtime measured it */
    uint32_t call;      /* the slow call's function (funcstats id) */
    uint32_t nframes;   /* its callers: frames[0] outermost ... (funcstats ids; UINT32_MAX: unknown) */
    uint32_t frames[ANALYSIS_TRIGGER_DEPTH];
    uint64_t outer;     /* callers further out, not kept (or not known) */
    int from_runtime;   /* the frames are the runtime's (TRACE_MARK_TRIGGER_FRAME), not the trace's */
};

struct analysis_filter {
    const char *thread;      /* NULL: every thread; all digits: a tid; else a name */
    int has_since, has_until;
    int64_t since_ns, until_ns;  /* from the trace's first event */
    const char *function;    /* --function as given, for the record */
    const uint64_t *funcs;   /* link-time addresses of --function targets */
    const uint32_t *func_exe; /* the --exe each was found in (NULL: all 0) */
    size_t nfuncs;           /* 0: no function filter */
};

struct analysis {
    struct funcstats funcs;
    struct analysis_source *src;
    size_t nsrc, capsrc;
    struct u64map src_index;      /* (kind << 32 | id) -> src position */
    struct analysis_thread *threads;
    size_t nthreads, capthreads;
    struct u64map thread_index;   /* (src position << 32 | tid) -> thread */
    struct analysis_process *procs;
    size_t nprocs, capprocs;
    struct u64map proc_index;     /* (src position << 32 | pid) -> process */
    struct u64map snap_procs;     /* flight-recorder snapshots: (src << 32 | tid) -> its process (pre-pass) */
    struct analysis_bin *bins;    /* bins[0]: no build-id */
    size_t nbins, capbins;
    const struct analysis_exe *exes;
    size_t nexes;
    int bins_over;                /* build-ids beyond ANALYSIS_MAX_BINS were taken as none */
    struct u64map bin_ids;        /* a build-id's key -> its first bin (see bins_index) */
    struct strmap bin_paths;      /* a path -> the first bin without a build-id of it */
    size_t bins_indexed;          /* bins[0..bins_indexed) are in them */
    uint64_t threads_with_events;
    uint64_t events;              /* enter + exit records */
    int64_t first_ns, last_ns;    /* over enter/exit records */
    uint64_t unmatched_exits, unclosed_enters;
    uint64_t calls, calls_selected; /* completed calls: all, and selected */
    /* TRACE_MODE=summary: threads with a snapshot used, the snapshots used
     * and damaged (torn, not parseable, or not holding the one before),
     * and what those snapshots say the device could not attribute */
    uint64_t summary_threads, summary_snapshots, summary_damaged;
    uint64_t summary_over, summary_deep, summary_unmatched, summary_tracer_ns;
    uint64_t summary_outside;     /* whole snapshots not selected (thread, window) */
    uint64_t summary_records;     /* kind-4 records read */
    uint64_t mode_switches;       /* TRACE_MARK_MODE: threads live control switched between events and
                                   * summaries (a trace may then hold both, each call counted once) */
    uint64_t summary_merged;      /* of the threads, series trace_stream merged (TRACE_SUMMARY_MERGED_TID) */
    uint64_t summary_full_tables; /* device tables that filled up (each counted once, at its first overflow) */
    uint64_t summary_lower_rows;  /* rows that are lower bounds (analysis_finish) */
    int64_t summary_first_ns, summary_last_ns; /* the intervals read: from, to */
    struct summary_budget summary_budget;
    struct timeline timeline;     /* per interval of interval_ns (default 1 s) */
    uint64_t interval_ns;
    int keep_tracer_time;         /* count flushes in the frames they interrupted */
    /* Caps (analysis_init sets the defaults; raise them before the pass):
     * what is beyond them is counted, and the notes say so. */
    size_t max_threads;           /* distinct threads (ANALYSIS_MAX_THREADS) */
    size_t max_depth;             /* frames kept per thread (CALLSTACK_MAX_DEPTH) */
    uint64_t records_over;        /* records of threads beyond max_threads: counted only */
    struct modlist_budget modules; /* per_list (ANALYSIS_MAX_MODULES), max_bytes (ANALYSIS_MAX_MODULES_MB) */
    uint64_t modules_cut_list, modules_cut_list_threads;   /* modules of lists beyond per_list, threads */
    uint64_t modules_cut_bytes, modules_cut_bytes_threads; /* ... beyond max_bytes, threads */
    uint64_t modules_cut_addrs;   /* function addresses in no module kept of a cut list */
    uint64_t records;             /* every record read */
    uint64_t bad_kinds;           /* ... of a kind trace.h does not define: skipped */
    uint64_t unnamed_program;     /* set after naming: the program's functions, all without a name ... */
    const char *unnamed_exe;      /* ... from this --exe (stripped?); NULL when some were named */
    const char *runs_note;        /* set by the caller: which of several file-mode runs this is; NULL: one */
    size_t files_read, files_bad;
    struct analysis_filter filter;
    int filtering;                /* any filter set */
    struct u64map targets;        /* --function addresses -> mask of the exes */
    int have_start;
    int64_t start_ns;             /* the trace's first event (pre-pass) */
    struct analysis_trigger triggers[ANALYSIS_MAX_TRIGGERS]; /* the first ones */
    size_t ntriggers;
    uint64_t triggers_more;       /* beyond them: counted */
    uint64_t triggers_unselected; /* slow calls --thread, --since, --until or --function left out */
    struct sink sinks[ANALYSIS_MAX_SINKS];
    size_t nsinks;
    int oom;
    FILE *diag;       /* one line per unreadable or damaged file */
    const char *prog; /* prefix for those lines */
};

void analysis_init(struct analysis *a, FILE *diag, const char *prog);
void analysis_free(struct analysis *a);
/* The binaries to name functions from (at most ANALYSIS_MAX_EXES, at
 * least one; they must outlive the analysis).  Before the pass. */
void analysis_set_exes(struct analysis *a, const struct analysis_exe *exes, size_t n);
/* Select what counts; the strings must outlive the analysis.  0 ok, -1 oom. */
int analysis_set_filter(struct analysis *a, const struct analysis_filter *f);
/* Feed another sink.  0 ok, -1 when there are too many. */
int analysis_add_sink(struct analysis *a, struct sink s);
/* The pre-passes: exit clock anchors, and the trace's start (for a time
 * window, and the intervals of summary traces: set interval_ns before). */
void analysis_prepare(struct analysis *a, const struct trace_files *tf);
/* Read one series from start to end. */
void analysis_run_series(struct analysis *a, const struct trace_series *s);
/* One series read in steps.  begin: NULL when out of memory (a->oom set);
 * s must stay valid (its kind, id and tid) until end. */
struct analysis_run;
struct analysis_run *analysis_run_begin(struct analysis *a, const struct trace_series *s);
/* A segment of it just opened, r at its first record: 0 ok, -1 out of
 * memory.  Segments come in order of seq. */
int analysis_run_segment(struct analysis_run *run, const struct trace_segment *seg, struct trace_reader *r);
/* Every whole record r has now (more may be read after the file grew):
 * END, TRUNCATED (a partial record is left in r: still being written, or
 * damage, as the caller knows) or IOERR.  The caller reports those. */
enum trace_reader_status analysis_run_read(struct analysis_run *run, const struct trace_segment *seg,
                                           struct trace_reader *r);
/* The series' source (position in a->src): 1 once its first segment opened. */
int analysis_run_source(const struct analysis_run *run, size_t *src);
/* Its threads closed (what is open counts as unclosed), notes kept, freed. */
void analysis_run_end(struct analysis_run *run);
/*
 * One series in parts at once (jobs.c: analyze --jobs on one series).  A
 * cut is a record boundary strictly inside a segment; the parts between
 * cuts are read by runs of their own, each after the first begun with
 * analysis_part_begin in an analysis of its own (jobs.c clones it):
 * nothing before its cut is known, so its threads' stacks have an unknown
 * bottom (callstack_part) and its functions are kept by thread and runtime
 * address (bin ANALYSIS_PART_BIN | its thread's index).  Then, in order,
 * analysis_part_check tells whether the part is exactly what the run
 * reading on from its cut would have done, given the run's state there
 * (read only), and
 * resolves its functions as the run would have; jobs.c merges the part's
 * analysis into the run's, and analysis_part_apply puts its threads onto
 * the run's.  A part that is not is read again by the run
 * (analysis_run_range), so the result is one pass' whatever happens.
 */
#define ANALYSIS_PART_BIN 0x80000000u

struct analysis_cut {
    size_t seg;   /* the segment (trace_series.segs) */
    uint64_t off; /* byte offset of a record in it, header included */
};

/* What a part's function (its analysis' funcs.v[i]) is in the run's. */
struct analysis_part_func {
    uint32_t bin;     /* its binary and link-time address */
    uint64_t addr;
    uint32_t proc;    /* the process it was resolved in */
    int have;         /* the run's analysis has it: ... */
    uint32_t id;      /* ... as this */
    unsigned count;   /* what resolving it counts, per record (analysis.c) */
    uint64_t records; /* the part's records of it */
};

/* Up to parts - 1 cuts of about equal records, in order; how many (0: the
 * series is too small, or a segment cannot be opened). */
size_t analysis_series_cuts(const struct trace_series *s, size_t parts, struct analysis_cut *cuts);
/* The run's series from cut `from` (NULL: its start) to `to` (NULL: its end). */
void analysis_run_range(struct analysis_run *run, const struct analysis_cut *from, const struct analysis_cut *to);
struct analysis_run *analysis_part_begin(struct analysis *a, const struct trace_series *s);
/* f: part->a->funcs.n entries, filled.  1: it can be applied. */
int analysis_part_check(struct analysis_run *run, struct analysis_run *part, struct analysis_part_func *f);
/* After jobs.c merged the part's analysis into run's: func and thread map
 * the part's function ids and thread indexes to the run's.  0 ok, -1 out of
 * memory (a->oom set). */
int analysis_part_apply(struct analysis_run *run, struct analysis_run *part, const struct analysis_part_func *f,
                        const uint32_t *func, const uint32_t *thread);
/* Where the part stopped, before what it cannot carry over (module lists,
 * process markers, losses, gaps, triggers, summaries, a segment it cannot
 * open): the run reads on from there after applying it.  NULL: it read to
 * its end.  A cut at offset 0 is a segment's start, not opened before. */
const struct analysis_cut *analysis_part_stopped(const struct analysis_run *part);
/* Its threads and stacks freed, nothing counted. */
void analysis_part_free(struct analysis_run *part);
/* After the last series: what is kept in pieces is put in order. */
void analysis_finish(struct analysis *a);
/* A note for source src ("pid 500: ..." comes first); after the pass too.
 * Out of memory is remembered in a->oom. */
void analysis_note(struct analysis *a, size_t src, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sum over sources of max(device-reported drops, threads' lost events)
 * plus the records lost in stream gaps of known size. */
uint64_t analysis_dropped(const struct analysis *a);
uint64_t analysis_source_dropped(const struct analysis_source *s);
/* 1 when the source's last record is serve's gap or cut marker: its
 * connection was cut and nothing followed (a resumed stream goes on past
 * its cut, and is not). */
int analysis_source_cut_at_end(const struct analysis_source *s);
/* "pid" or "stream". */
const char *analysis_source_word(const struct analysis_source *s);
/* "thread 8" or "thread 8 (name)". */
void analysis_thread_label(const struct analysis_thread *t, char *buf, size_t len);
/* Span of the enter/exit records in ns (0 when fewer than two); of a
 * summary trace, from the start of its first interval used to the end of
 * its last. */
uint64_t analysis_span(const struct analysis *a);

#endif
