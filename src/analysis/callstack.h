/*
 * callstack.h - one thread's shadow stack: enter/exit events in, completed
 * calls out.
 *
 * An enter pushes a frame; the matching exit pops it and yields a completed
 * call with its inclusive time (exit - enter) and self time (inclusive minus
 * the inclusive time of the calls completed directly inside it).  Function
 * ids are opaque 64-bit values chosen by the caller.
 *
 * Imperfect input is repaired and counted, never trusted:
 *   - an exit that does not match the top frame is an unmatched exit: when
 *     its function is open deeper in the stack, the frames above it are
 *     closed as unclosed enters and it completes normally (a longjmp or an
 *     exception went past them); otherwise it is ignored;
 *   - callstack_lost/callstack_resync repair a hole where the runtime lost
 *     events: the frames above the hole's lowest depth are dropped (their
 *     exits were lost: "lost frames", neither calls nor unclosed), and the
 *     frames entered inside the hole are pushed as placeholders of unknown
 *     function; an exit that pops a placeholder is an orphaned exit, a loss;
 *     a resync is checked against the events lost since the one before
 *     (THREAD_LOST): going from the depth before the hole down to `low` and
 *     up to `after` takes that many events at least, so depths the loss
 *     cannot explain are hostile or damaged: such a resync is counted
 *     (bad_resyncs) and taken as a hole of unknown shape.  A hole that did
 *     leave many frames open costs one frame, not one per level: beyond
 *     CALLSTACK_RUN placeholders the outermost stands for the rest;
 *   - callstack_hole marks a hole whose shape is unknown (a stream gap: the
 *     records of every thread were lost there): the frames open before it
 *     may have been exited inside it, and calls entered inside it may be
 *     exited after it.  Until they are popped, an exit that does not match
 *     a frame entered after the hole is never an unmatched exit: if its
 *     function is open before the hole it completes there and the frames
 *     above are lost frames, else it is an orphaned exit;
 *   - callstack_reset (thread exit, end of the data) counts what is still
 *     open as unclosed enters (placeholders excepted; frames from before a
 *     hole are lost frames) and empties the stack; callstack_kill counts
 *     them as dead frames instead (the process was killed);
 *   - beyond max_depth frames, enters and their exits are counted, not timed.
 *
 * The tracer's own time (TRACE_MARK_TRACER_TIME: the thread was flushing
 * its buffer) is taken out of every frame open when it happened:
 * callstack_exclude adds it to the thread's running total, each frame
 * remembers the total at its enter, and a completed call's inclusive time
 * is its span less what the total grew by meanwhile.  Self time follows,
 * since the children's inclusive times are net too.
 *
 * A frame knows whether its function was already open below it (`nested`:
 * a recursive call, direct or through others), so an owner can count a
 * function's inclusive time once, over its outermost frames, the time
 * spent under it, as perf's --children and uftrace do: fib(30)'s frames
 * would otherwise add up to many times the time anything spent in fib.
 * The check costs a bit test per enter: each frame carries a 64-bit set
 * of hashes of what is open below, and only a hit walks the stack.
 *
 * The owner watches frames come and go through two hooks: `open` when a
 * frame is pushed (it may fill the frame's tag: what the owner wants to
 * carry with the call, e.g. its call site and calling-context node), and
 * `close` when it leaves the stack, either returned (a completed call, with
 * its inclusive and self time) or cut (unclosed, lost in a hole, or a
 * placeholder popped by an orphaned exit).  Every open is matched by exactly
 * one close, in stack order, so a timeline built from them nests strictly.
 * A cut frame closes at the thread's latest timestamp seen, which never goes
 * backwards.
 *
 * Depths in the resync marker are relative to the thread's first event;
 * the stack keeps that same running depth (enter +1, exit -1, whatever the
 * matching made of the event), so the two correspond even after unmatched
 * exits.
 */
#ifndef CALLSIGHT_CALLSTACK_H
#define CALLSIGHT_CALLSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "lib/u64map.h"

#define CALLSTACK_MAX_DEPTH ((size_t)1 << 16) /* frames kept per thread by default; deeper ones are counted */
#define CALLSTACK_RUN 64 /* placeholders a resync pushes one by one; more share one frame */
#define CALLSTACK_TRACER_MAX ((uint64_t)1 << 48) /* ns one TRACER_TIME may exclude (3 days) */

/* Carried with a frame for its owner; set by the open hook, zero before. */
struct callstack_tag {
    uint64_t site;    /* link-time return address in the caller ... */
    uint32_t site_bin; /* ... of this binary (analysis.bins) */
    uint32_t node;    /* the owner's calling-context node */
    uint8_t target;   /* one of the owner's --function targets */
    uint8_t in_scope; /* inside the owner's thread and function filters */
    uint8_t selected; /* in scope and inside the time window: it counts */
    uint8_t site_inlined; /* the enter ran in code inlined into the caller's function:
                           * site is then that function's own return address, not
                           * where it called; site_caller is the frame below's func */
    uint64_t site_caller;
};

struct callstack_frame {
    uint64_t func;
    int64_t start;      /* ns */
    uint64_t child_ns;  /* inclusive time of completed direct children */
    uint64_t excluded_at; /* the stack's `excluded` when it was pushed */
    int64_t depth;      /* running depth after this enter */
    uint64_t seen;      /* a bit per function open here and below (a hash of func) */
    uint32_t placeholder; /* entered inside a hole, function unknown: how many levels
                          * it stands for (1, or more for a deep hole), 0: not one */
    uint8_t nested;     /* func was already open below this frame (recursion) */
    struct callstack_tag tag;
};

struct callstack_counts {
    uint64_t calls;           /* completed calls yielded */
    uint64_t unmatched_exits; /* exits that did not match the top frame */
    uint64_t unclosed_enters; /* frames never exited */
    uint64_t lost_events;     /* sum of the runtime's THREAD_LOST counts */
    uint64_t lost_frames;     /* open frames whose exits fell in a hole */
    uint64_t orphan_exits;    /* exits of frames entered inside a hole */
    uint64_t overflow_enters; /* enters beyond max_depth (not timed) */
    uint64_t dead_frames;     /* open frames cut by their process dying */
    uint64_t bad_resyncs;     /* resyncs with depths the lost events cannot reach */
};

enum callstack_end {
    CALLSTACK_RETURNED, /* its exit matched: a completed call */
    CALLSTACK_CUT       /* left without its own exit: no call */
};

/* A stack whose bottom is not known yet (callstack_part): a part of a
 * series read on its own (jobs.c), to be put on top of the stack the parts
 * before it left (callstack_stitch), which gives what one stack reading
 * both parts in turn gives.  An exit with nothing open below it may be the
 * return of a frame of the bottom: kept, in order, with what its frame
 * needs for its times.  A call not nested in the part's own frames may be
 * nested in the bottom's (a recursion across the cut), and its inclusive
 * time then counts in an outer call's: its `nested` is decided at the
 * stitch, so the part keeps the inclusive time of such calls by function
 * and by how many bottom frames had returned when they were made.  A
 * reset (thread exit) cuts the bottom: it is kept too, and the part knows
 * everything after it.  Beyond CALLSTACK_PART_MAX of either, or after what
 * a part cannot know (a hole, a loss, a resync, a depth beyond the cap,
 * its process killed), it is `over`: it cannot be stitched. */
#define CALLSTACK_PART_MAX 65536u /* < 2^20: a key of dones */

struct callstack_under {
    uint64_t func;
    int64_t ts;
    uint64_t excluded; /* the part's `excluded` then */
    uint64_t child_ns; /* inclusive time of its children the part completed */
};

struct callstack_done {
    uint64_t func;
    uint64_t under;    /* unders before them */
    uint64_t incl_ns;  /* the inclusive time of those calls, none nested in the part */
};

struct callstack_part {
    struct callstack_under *under;
    size_t nunder, capunder;
    uint64_t child_ns;  /* completed at the bottom since the last under */
    struct callstack_done *done;
    size_t ndone, capdone;
    struct u64map dones;   /* func << 20 | under -> position in done */
    uint64_t recent[64];   /* position + 1 in done of a func at the current under, direct-mapped */
    size_t max_n;          /* the most frames the part held at once */
    int reset;             /* reset here, after nunder unders: ... */
    int64_t reset_ts;      /* ... at the part's latest time then, if reset_have_ts */
    int reset_have_ts;
    int over;
};

struct callstack;

struct callstack_hooks {
    /* f was pushed and is the top of s (placeholders too); may be NULL. */
    void (*open)(void *ctx, struct callstack *s, struct callstack_frame *f);
    /* f left the stack at ts; incl and self are 0 for a cut frame. */
    void (*close)(void *ctx, const struct callstack_frame *f, int64_t ts, enum callstack_end how,
                  uint64_t incl_ns, uint64_t self_ns);
};

struct callstack {
    struct callstack_frame *frames;
    size_t n, cap, max_depth;
    int64_t depth;     /* running depth, as the runtime counts it */
    uint64_t overflow; /* open enters not on the stack (beyond max_depth) */
    int64_t last_ts;   /* latest enter/exit time seen: where cuts happen */
    uint64_t excluded; /* tracer time on this thread so far, ns (modulo 2^64) */
    int have_ts;
    int holed;         /* a hole of unknown shape (stream gap) was passed */
    int depth_lost;    /* ... so the running depth no longer matches the runtime's */
    size_t hole_n;     /* frames below this index were open before the hole */
    uint64_t unsynced; /* events lost (THREAD_LOST) since the last resync */
    struct callstack_counts c;
    const struct callstack_hooks *hooks; /* NULL: just count */
    void *ctx;
    struct callstack_part *part; /* its bottom not known yet (NULL: known) */
};

void callstack_init(struct callstack *s, size_t max_depth, const struct callstack_hooks *hooks,
                    void *ctx);
void callstack_free(struct callstack *s);
void callstack_enter(struct callstack *s, uint64_t func, int64_t ts);
void callstack_exit(struct callstack *s, uint64_t func, int64_t ts);
/* TRACE_MARK_THREAD_LOST: the thread lost n events here. */
void callstack_lost(struct callstack *s, uint64_t n);
/* TRACE_MARK_THREAD_RESYNC: depth went down to low inside the hole, and is
 * after at its end.  Checked against the events lost since the last
 * resync (see above). */
void callstack_resync(struct callstack *s, int32_t low, int32_t after);
/* TRACE_MARK_TRACER_TIME: the tracer had the thread for ns nanoseconds
 * here; the frames open now do not count it. */
void callstack_exclude(struct callstack *s, uint64_t ns);
/* A hole of unknown shape (a stream gap): any of the open frames may have
 * been exited inside it, and frames may have been entered inside it. */
void callstack_hole(struct callstack *s);
/* Thread exit (TRACE_MARK_THREAD_EXIT) or end of data: open frames are
 * unclosed (those from before a hole: lost frames); a reused tid starts
 * again from depth 0. */
void callstack_reset(struct callstack *s);
/* The thread's process died (killed): open frames are cut, counted as
 * dead_frames, and the stack starts again from depth 0. */
void callstack_kill(struct callstack *s);
/* Read what follows with the bottom unknown (see callstack_part): on an
 * empty stack, before any event.  0 ok, -1 out of memory. */
int callstack_part(struct callstack *s);
/* Whether part (after dst's events, its function ids in dst's numbering:
 * UINT64_MAX for one dst cannot have open) can go on top of dst, giving
 * exactly what one stack reading both gives; read only. */
int callstack_stitch_fits(const struct callstack *dst, const struct callstack *part);
/* Whether calls of func a part made after `under` unders, not nested in
 * its own frames, are nested in dst's bottom (their inclusive time is
 * then not the function's: funcstats.h). */
int callstack_part_nested(const struct callstack *dst, const struct callstack *part, uint64_t func, uint64_t under);
/* Put it there (it must fit): the bottom's frames the part returned are
 * completed through dst's hooks, its own frames pushed, its counts added.
 * part is left empty, without its part.  0 ok, -1 out of memory (dst as
 * it was). */
int callstack_stitch(struct callstack *dst, struct callstack *part);

/* ---- the common enter and exit, inline ----------------------------------
 * What every enter and exit does, here so that an owner whose hooks are a
 * `static const` struct can pass them as a constant: the compiler then
 * calls them directly, and may inline them, instead of through s->hooks
 * (the analyzer's cost per record: docs/performance.md).  h must be
 * s->hooks; callstack_enter and callstack_exit are these with s->hooks.
 * The rest of each path (a push with no room, an exit that is not the top
 * frame's return, a part's bookkeeping) stays out of line in callstack.c. */
#if defined(__GNUC__) || defined(__clang__)
#define CALLSTACK_HOT inline __attribute__((always_inline)) /* a plain inline one may be kept out of line */
#else
#define CALLSTACK_HOT inline
#endif
void callstack_push_full(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder);
void callstack_exit_other(struct callstack *s, uint64_t func, int64_t ts);
void callstack_part_done(struct callstack *s, uint64_t func, uint64_t incl);

static CALLSTACK_HOT void callstack_see_time(struct callstack *s, int64_t ts)
{
    if (!s->have_ts || ts > s->last_ts)
        s->last_ts = ts;
    s->have_ts = 1;
}

/* func's bit in a frame's `seen` set. */
static CALLSTACK_HOT uint64_t callstack_seen_bit(uint64_t func)
{
    return (uint64_t)1 << ((func * UINT64_C(0x9e3779b97f4a7c15)) >> 58);
}

/* func is open in frames[0..n), placeholders aside (their function is
 * unknown: a recursion hidden in a hole is not seen, and its time counts
 * as a call's of its own).  Only asked when func's bit is in the set, and
 * most often it is the caller itself (direct recursion): looked at first. */
static CALLSTACK_HOT int callstack_open_anywhere(const struct callstack *s, uint64_t func)
{
    for (size_t i = s->n; i-- > 0;)
        if (s->frames[i].func == func && !s->frames[i].placeholder)
            return 1;
    return 0;
}

/* Fill the next frame, which there is room for, and tell the owner. */
static CALLSTACK_HOT void callstack_place(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder,
                                          const struct callstack_hooks *h)
{
    uint64_t below = s->n ? s->frames[s->n - 1].seen : 0, bit = placeholder ? 0 : callstack_seen_bit(func);
    int nested = (below & bit) && callstack_open_anywhere(s, func);
    if (s->part && s->n + 1 > s->part->max_n)
        s->part->max_n = s->n + 1;
    struct callstack_frame *f = &s->frames[s->n++];
    /* field by field: a compound literal zeroes the whole frame first with
     * `rep stos`, which was half of this function's time (docs/performance.md) */
    f->func = func;
    f->start = ts;
    f->child_ns = 0;
    f->excluded_at = s->excluded;
    f->depth = s->depth;
    f->seen = below | bit;
    f->placeholder = placeholder;
    f->nested = (uint8_t)nested;
    f->tag.site = 0;
    f->tag.site_bin = 0;
    f->tag.node = 0;
    f->tag.target = f->tag.in_scope = f->tag.selected = f->tag.site_inlined = 0;
    f->tag.site_caller = 0;
    if (h && h->open)
        h->open(s->ctx, s, f);
}

/* Pop the top frame as a completed call ending at ts. */
static CALLSTACK_HOT void callstack_complete(struct callstack *s, int64_t ts, const struct callstack_hooks *h)
{
    struct callstack_frame *f = &s->frames[--s->n];
    if (s->hole_n > s->n)
        s->hole_n = s->n;
    uint64_t span = ts > f->start ? (uint64_t)ts - (uint64_t)f->start : 0;
    uint64_t tracer = s->excluded - f->excluded_at;
    uint64_t incl = span > tracer ? span - tracer : 0;
    uint64_t self = incl > f->child_ns ? incl - f->child_ns : 0;
    if (s->n)
        s->frames[s->n - 1].child_ns += incl;
    else if (s->part)
        s->part->child_ns += incl;
    if (s->part && !s->part->reset && !f->nested && !f->placeholder)
        callstack_part_done(s, f->func, incl);
    s->c.calls++;
    if (h && h->close)
        h->close(s->ctx, f, ts > f->start ? ts : f->start, CALLSTACK_RETURNED, incl, self);
}

static CALLSTACK_HOT void callstack_enter_with(struct callstack *s, uint64_t func, int64_t ts,
                                               const struct callstack_hooks *h)
{
    callstack_see_time(s, ts);
    s->depth++;
    if (s->overflow || s->n == s->cap)
        callstack_push_full(s, func, ts, 0);
    else
        callstack_place(s, func, ts, 0, h);
}

static CALLSTACK_HOT void callstack_exit_with(struct callstack *s, uint64_t func, int64_t ts,
                                              const struct callstack_hooks *h)
{
    callstack_see_time(s, ts);
    s->depth--;
    /* The common case: the exit of the top frame, nothing over max_depth. */
    if (!s->overflow && s->n && !s->frames[s->n - 1].placeholder && s->frames[s->n - 1].func == func)
        callstack_complete(s, ts, h);
    else
        callstack_exit_other(s, func, ts);
}

#endif
