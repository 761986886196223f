/*
 * live.h - the analysis of a trace directory while it is being written,
 * refreshed step by step (callsight top).
 *
 * Each refresh scans the directory for trace files (trace_files.h), reads
 * from every file only what was appended since the last refresh, in whole
 * 32-byte records (a record still being written is read next time), and
 * feeds it to analyze's own pass, driven in steps (analysis_run_begin ...),
 * so counts are analyze's.  New segments and new series are picked up as
 * they appear.  Per source (a serve connection's series, a process) it
 * keeps bytes, records and drops, in total and in the last interval; per
 * function, across sources and per source, calls, inclusive and self time
 * and the longest call, in total and in the last interval.  Memory grows
 * with series, sources and functions, never with events: between refreshes
 * a file is only an offset, and one reader's buffer serves them all.
 *
 * Series are bounded too: a series read in detail keeps the pass's state
 * for it (analysis_run: about 80 KB, most of it the pass's caches of
 * resolved addresses) for as long as top runs, where analyze keeps one at
 * a time.  So at most max_series series are read in detail, the first
 * found (in trace_files' order); the pass's state of each is made when its
 * first file has a whole header, not when its name shows up.  Series
 * found beyond the cap are summarized, not analyzed: each refresh counts
 * them, their files and the bytes in those files (stat only) afresh, and
 * keeps nothing of them, so a directory of many series costs max_series
 * of them.
 *
 * Order of use: live_init, live_prepare (optional: a finished directory),
 * live_refresh as often as wanted, live_finish
 * (ends every series: a file's partial last record is then damage, and
 * said), live_free.
 */
#ifndef CALLSIGHT_LIVE_H
#define CALLSIGHT_LIVE_H

#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "lib/u64map.h"

#define LIVE_ALL UINT32_MAX /* a row's src when it sums every source */

/* A function's row: across sources (src == LIVE_ALL) or in one. */
struct live_func {
    uint32_t src, func;                      /* analysis.src position; funcstats id */
    uint64_t calls, incl_ns, self_ns, max_ns; /* totals */
    uint64_t i_calls, i_incl_ns, i_self_ns, i_max_ns; /* in the last interval */
    uint64_t p_calls, p_incl_ns, p_self_ns;  /* totals when the interval began */
    uint64_t cur_max_ns;                     /* longest call of the interval being read */
};

/* streaming: its files grew lately; dropping: and it lost events in the
 * last interval; ended: they did not grow; idle: they did not, but serve
 * says its connection is open (live_wire); cut: its connection ended
 * abnormally (nothing after serve's gap or cut marker); reconnecting: a
 * resumable stream cut less than reconnect_s ago, whose client may be
 * retrying.  A source that goes on after a cut streams again. */
enum live_state { LIVE_STREAMING = 0, LIVE_ENDED, LIVE_CUT, LIVE_RECONNECTING, LIVE_DROPPING, LIVE_IDLE };

#define LIVE_RECONNECT_S 30 /* trace_stream's default --retry */
#define LIVE_MAX_SERIES 1024 /* series read in detail by default (top --max-series): about 80 MB */

/* The series beyond max_series at the last refresh: counted, not analyzed. */
struct live_over {
    uint64_t series, files, bytes; /* bytes: the sizes of their files */
};

/* A source, as analysis.src[i] is. */
struct live_source {
    uint64_t bytes, i_bytes;     /* bytes of records read: total, last interval */
    int have_wire;               /* i_wire is known: serve listed its connection now and before */
    uint64_t wire, i_wire;       /* bytes its connection read from the link so far; since the last refresh */
    int wire_listed, wire_before; /* serve listed it at this refresh; at the one before */
    uint64_t records, i_records;
    uint64_t dropped, i_dropped; /* analysis_source_dropped: total, last interval */
    int64_t newest_mtime;        /* seconds: its newest file's last change */
    enum live_state state;
};

struct live_series; /* private: one series' files and where reading stopped */

struct live {
    struct analysis a;
    const char *dir;
    struct live_series **series; /* the series read in detail, at most max_series */
    size_t nseries, capseries;
    size_t max_series;           /* LIVE_MAX_SERIES unless set before the first refresh */
    struct live_over over;       /* the series beyond it */
    struct u64map local_index, stream_index; /* (pid << 32 | tid), id -> series */
    struct live_func *all;       /* rows across sources, by funcstats id */
    size_t nall, capall;
    struct live_func *rows;      /* rows per source */
    size_t nrows, caprows;
    struct u64map row_index;     /* (src << 32 | func) -> rows position */
    struct live_source *srcs;    /* as a.src */
    size_t nsrcs, capsrcs;
    struct trace_reader *reader; /* the one buffer every file is read through */
    uint64_t refreshes;
    double interval_s;           /* the last interval's length */
    int64_t now;                 /* seconds, at the last refresh */
    int streaming_s;             /* a source whose newest file changed this recently streams */
    int reconnect_s;             /* a cut stream this recent may be reconnecting */
    int oom;
    char said[300];              /* the last line about a file (skipped, torn, unreadable) ... */
    uint64_t nsaid;              /* ... and how many there were: a screen shows the latest */
};

/* dir must outlive l; exes as analysis_set_exes.  0 ok, -1 out of memory. */
int live_init(struct live *l, const char *dir, const struct analysis_exe *exes, size_t nexes, FILE *diag,
              const char *prog);
/* For a directory that is complete: analyze's pre-passes (the exit clock
 * anchors, the trace's start), so that the one refresh that follows times
 * calls exactly as analyze does.  Before the first refresh.  0, or -1 with
 * a one-line reason in msg. */
int live_prepare(struct live *l, char *msg, size_t msglen);
/* Read what was appended, and close the interval of interval_s seconds.
 * 0 ok; -1 with a one-line reason in msg (the directory cannot be read,
 * out of memory). */
int live_refresh(struct live *l, double interval_s, char *msg, size_t msglen);
/* Wire bytes of stream sources, as serve counts them (top asks serve's
 * control socket after each refresh): begin forgets the last refresh's,
 * then one call per connection serve lists, by its stream id.  A source
 * has an interval's figure once its connection was listed at two refreshes
 * in a row (a resumed stream's new connection counts from 0 again). */
void live_wire_begin(struct live *l);
void live_wire(struct live *l, uint32_t stream_id, uint64_t bytes);
/* After the last live_wire: a quiet source whose connection serve listed
 * is idle, not ended. */
void live_wire_end(struct live *l);
/* End every series: threads closed, notes kept, partial records said. */
void live_finish(struct live *l);
void live_free(struct live *l);
/* "streaming", "ended", "cut", "reconnecting", "dropping" or "idle". */
const char *live_state_word(enum live_state s);

#endif
