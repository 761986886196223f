/*
 * funcstats.h - the per-function aggregate: calls, inclusive and self time,
 * and a latency histogram of inclusive time per call.
 *
 * Functions are keyed by their binary (analysis.h: one per build-id) and
 * link-time address (runtime address minus the process's load bias), so
 * one function traced in several processes of a PIE is one row, and two
 * programs traced into one ring keep their functions apart.  Each gets a dense index, which is what the matcher carries in
 * its frames, so a completed call costs no lookup.  Memory grows with the
 * number of distinct functions only, and they are capped (max, by default
 * FUNCSTATS_MAX): a function first seen beyond the cap is counted in one
 * more row, "[other]" (bin FUNCSTATS_OTHER_BIN), so totals stay exact.
 */
#ifndef CALLSIGHT_FUNCSTATS_H
#define CALLSIGHT_FUNCSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "read/addrindex.h"

#define FUNCSTATS_MAX ((size_t)1 << 18) /* distinct functions kept by default: about 320 MB of rows */
#define FUNCSTATS_OTHER_BIN UINT32_MAX  /* the "[other]" row's bin (address 0) */

/* A completed call's bookkeeping is inlined whole into the analyzer's
 * loop: as a plain inline function the compiler keeps it out of line. */
#if defined(__GNUC__) || defined(__clang__)
#define FUNCSTATS_HOT inline __attribute__((always_inline))
#else
#define FUNCSTATS_HOT inline
#endif

struct funcstats_entry {
    uint64_t addr;    /* link-time address */
    uint32_t bin;     /* the binary it is in (analysis.bins) */
    uint64_t calls;   /* completed calls */
    uint64_t incl_ns; /* time under the function: its outermost calls' inclusive times */
    uint64_t self_ns; /* sum of self times */
    uint64_t lat_ns;  /* sum of every call's inclusive time (recursive calls each
                       * count theirs): lat_ns / calls is the mean latency */
    struct hist lat;  /* inclusive time per call */
    /* Summary mode: in how many full device tables (ones that counted calls
     * they could not attribute) the function has a place; and whether its
     * row is a lower bound (analysis_finish: a full table lacks it, or a
     * snapshot's FUNC said so, trace.h's TRACE_SUMMARY_FUNC_LOWER). */
    uint32_t sum_full;
    int lower_bound;
};

struct funcstats {
    struct funcstats_entry *v;
    size_t n, cap;
    struct addrindex index; /* (bin, addr) -> position in v */
    int oom;             /* a histogram could not grow: report, don't guess */
    size_t max;          /* distinct functions kept (funcstats_init: FUNCSTATS_MAX) */
    uint32_t other;      /* the "[other]" row, UINT32_MAX until needed */
};

void funcstats_init(struct funcstats *fs);
void funcstats_free(struct funcstats *fs);
/* The dense index of (bin, addr), added on first sight; beyond max, the
 * "[other]" row's.  0 ok, -1 out of memory. */
int funcstats_id(struct funcstats *fs, uint32_t bin, uint64_t addr, uint32_t *id);
/* One completed call of function id, which took incl_ns (its latency);
 * nested: the function was open below it (callstack.h), so that time is
 * already inside an outer call's and is not added to incl_ns again. */
static FUNCSTATS_HOT void funcstats_add_call(struct funcstats *fs, uint32_t id, uint64_t incl_ns, uint64_t self_ns,
                                             int nested);
/* A summary snapshot's totals for function id (its histogram goes to
 * fs->v[id].lat bucket by bucket, hist_add_bucket). */
void funcstats_add_summary(struct funcstats *fs, uint32_t id, uint64_t calls, uint64_t incl_ns, uint64_t self_ns);
/* The same two on one entry of a table of the caller's (per-thread totals
 * kept beside this one add up the same way); add_call: -1 when the
 * histogram could not grow (the call is counted, its latency not). */
static FUNCSTATS_HOT int funcstats_entry_add_call(struct funcstats_entry *e, uint64_t incl_ns, uint64_t self_ns,
                                                  int nested);
void funcstats_entry_add_summary(struct funcstats_entry *e, uint64_t calls, uint64_t incl_ns, uint64_t self_ns);
/* Indexes ordered by self time descending (then calls, binary, address);
 * malloc'ed, fs->n long, NULL when out of memory. */
uint32_t *funcstats_by_self(const struct funcstats *fs);
/* The orders a table may be sorted in, largest first (FUNCSTATS_BY_NAME
 * is the caller's: names are not known here). */
enum funcstats_key { FUNCSTATS_BY_SELF, FUNCSTATS_BY_CALLS, FUNCSTATS_BY_INCL, FUNCSTATS_BY_MEAN,
                     FUNCSTATS_BY_MAX, FUNCSTATS_BY_P99, FUNCSTATS_BY_NAME };
/* The same as funcstats_by_self, by key (ties: self, calls, binary,
 * address); FUNCSTATS_BY_NAME gives self order. */
uint32_t *funcstats_by(const struct funcstats *fs, enum funcstats_key key);
/* A function's mean inclusive time per call (lat_ns / calls, to the nearest
 * ns, halves up), 0 without calls. */
uint64_t funcstats_mean(const struct funcstats_entry *e);

/* The two of every completed call, inline: the analyzer's every exit
 * comes here (docs/performance.md, issue 33). */
static inline uint64_t funcstats_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static FUNCSTATS_HOT int funcstats_entry_add_call(struct funcstats_entry *e, uint64_t incl_ns, uint64_t self_ns,
                                                  int nested)
{
    e->calls++;
    if (!nested)
        e->incl_ns = funcstats_sat_add(e->incl_ns, incl_ns);
    e->self_ns = funcstats_sat_add(e->self_ns, self_ns);
    e->lat_ns = funcstats_sat_add(e->lat_ns, incl_ns);
    return hist_add(&e->lat, incl_ns);
}

static FUNCSTATS_HOT void funcstats_add_call(struct funcstats *fs, uint32_t id, uint64_t incl_ns, uint64_t self_ns,
                                             int nested)
{
    if (funcstats_entry_add_call(&fs->v[id], incl_ns, self_ns, nested) < 0)
        fs->oom = 1;
}

#endif
