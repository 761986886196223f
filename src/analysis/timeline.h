/*
 * timeline.h - calls and time per function per interval, for summary
 * traces (TRACE_MODE=summary): what each thread did between two of its
 * snapshots, put in the interval its later snapshot ended in, so that a
 * long run can be seen over time (analyze --format json, "intervals").
 *
 * Bounded: at most TIMELINE_MAX_ENTRIES (interval, function) pairs are
 * held.  When a run has more, neighbouring intervals are merged two by two
 * (the width doubles) until half the room is free again, so a long run
 * keeps its whole length at a coarser grain; the width says which.  Only
 * if merging cannot help (more distinct functions than the room) are
 * entries dropped from then on, and counted.  Totals never depend on the timeline.
 */
#ifndef CALLSIGHT_TIMELINE_H
#define CALLSIGHT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#define TIMELINE_MAX_ENTRIES ((size_t)1 << 20) /* 40 MiB */

struct timeline_entry {
    uint64_t interval;  /* from the start, in widths */
    uint32_t id;        /* the function (analysis' funcstats id) */
    uint64_t calls, incl_ns, self_ns;
};

struct timeline {
    int64_t start_ns;   /* where interval 0 begins */
    uint64_t width_ns;
    struct timeline_entry *e;
    size_t n, cap;
    uint64_t dropped;   /* entries that found no room, even merged */
    int full;           /* merging could not make room: drop the rest */
    int oom;
};

/* width_ns > 0: the interval asked for; start_ns: the run's start. */
void timeline_init(struct timeline *tl, int64_t start_ns, uint64_t width_ns);
void timeline_free(struct timeline *tl);
/* Calls of a function in the interval that holds end_ns (one before the
 * start counts in the first). */
void timeline_add(struct timeline *tl, int64_t end_ns, uint32_t id, uint64_t calls, uint64_t incl_ns,
                  uint64_t self_ns);
/* Sorted by interval then function, each pair once: call before reading. */
void timeline_finish(struct timeline *tl);

#endif
