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
 *   - callstack_reset (thread exit, end of the data) counts what is still
 *     open as unclosed enters (placeholders excepted) and empties the stack;
 *   - beyond max_depth frames, enters and their exits are counted, not timed.
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

#define CALLSTACK_MAX_DEPTH ((size_t)1 << 20)

struct callstack_frame {
    uint64_t func;
    int64_t start;      /* ns */
    uint64_t child_ns;  /* inclusive time of completed direct children */
    int64_t depth;      /* running depth after this enter */
    int placeholder;    /* entered inside a hole: function unknown */
};

struct callstack_counts {
    uint64_t calls;           /* completed calls yielded */
    uint64_t unmatched_exits; /* exits that did not match the top frame */
    uint64_t unclosed_enters; /* frames never exited */
    uint64_t lost_events;     /* sum of the runtime's THREAD_LOST counts */
    uint64_t lost_frames;     /* open frames whose exits fell in a hole */
    uint64_t orphan_exits;    /* exits of frames entered inside a hole */
    uint64_t overflow_enters; /* enters beyond max_depth (not timed) */
};

/* Called for every completed call. */
typedef void (*callstack_sink)(void *ctx, uint64_t func, uint64_t incl_ns, uint64_t self_ns);

struct callstack {
    struct callstack_frame *frames;
    size_t n, cap, max_depth;
    int64_t depth;     /* running depth, as the runtime counts it */
    uint64_t overflow; /* open enters not on the stack (beyond max_depth) */
    struct callstack_counts c;
    callstack_sink sink;
    void *ctx;
};

void callstack_init(struct callstack *s, size_t max_depth, callstack_sink sink, void *ctx);
void callstack_free(struct callstack *s);
void callstack_enter(struct callstack *s, uint64_t func, int64_t ts);
void callstack_exit(struct callstack *s, uint64_t func, int64_t ts);
/* TRACE_MARK_THREAD_LOST: the thread lost n events here. */
void callstack_lost(struct callstack *s, uint64_t n);
/* TRACE_MARK_THREAD_RESYNC: depth went down to low inside the hole, and is
 * after at its end. */
void callstack_resync(struct callstack *s, int32_t low, int32_t after);
/* Thread exit (TRACE_MARK_THREAD_EXIT) or end of data: open frames are
 * unclosed; a reused tid starts again from depth 0. */
void callstack_reset(struct callstack *s);

#endif
