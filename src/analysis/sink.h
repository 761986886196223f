/*
 * sink.h - what the analysis pass feeds its consumers ("sinks").
 *
 * The pass (analysis.c) reads events once and turns them into frames on
 * per-thread shadow stacks (callstack.h).  Every sink sees the same four
 * kinds of news, in the order they happen within a thread:
 *
 *   thread   a thread was first seen, or its name changed
 *   open     a frame was pushed; its tag says whether it is in scope (the
 *            thread and function filters) and selected (in scope, and it
 *            started inside the time window).  A sink may set tag.node.
 *   close    the frame left the stack: returned (a completed call, with
 *            inclusive and self time) or cut (no call; see callstack.h)
 *   instant  a loss or capture note, on a thread or (t == NULL) its source;
 *            only those on selected threads and inside the time window
 *   loss     the same losses as numbers, beside their instant (same rule):
 *            a thread lost n events, its source's device has dropped n in
 *            all so far, or a stream gap lost n (0: how many is unknown)
 *   tracer   the tracer had a selected thread from ts for ns nanoseconds
 *            (a flush; already taken out of the open frames' times)
 *   summary  a summary trace's snapshot of a selected thread, in the
 *            window, gained these calls of a function since the one before
 *            (no frames exist in such traces); max_ns is the thread's
 *            longest call of it so far
 *
 * The function table, the calling-context tree, the call-site table and
 * the Perfetto and Chrome timelines are sinks; each keeps what it needs and nothing
 * that grows with the number of events.
 */
#ifndef CALLSIGHT_SINK_H
#define CALLSIGHT_SINK_H

#include <stdint.h>

#include "callstack.h"

struct analysis_thread;

enum sink_loss {
    SINK_LOSS_THREAD, /* TRACE_MARK_THREAD_LOST: t lost n events here */
    SINK_LOSS_DEVICE, /* TRACE_MARK_DEVICE_DROPPED: the device's total so far (t NULL) */
    SINK_LOSS_GAP     /* TRACE_MARK_STREAM_GAP: n records lost, 0 unknown (t NULL) */
};

struct sink {
    void *ctx;
    void (*thread)(void *ctx, const struct analysis_thread *t);
    void (*open)(void *ctx, const struct analysis_thread *t, const struct callstack *s,
                 struct callstack_frame *f);
    void (*close)(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                  int64_t ts, enum callstack_end how, uint64_t incl_ns, uint64_t self_ns);
    void (*instant)(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts,
                    const char *what);
    void (*loss)(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts, enum sink_loss what,
                 uint64_t n);
    void (*tracer)(void *ctx, const struct analysis_thread *t, int64_t ts, uint64_t ns);
    void (*summary)(void *ctx, const struct analysis_thread *t, uint32_t func, uint64_t calls, uint64_t incl_ns,
                    uint64_t self_ns, uint64_t max_ns);
};

#endif
