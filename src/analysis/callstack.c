/*
 * callstack.c - per-thread shadow stack and its repairs (see callstack.h).
 * The analyzer keeps one per live thread; nothing here allocates per event
 * except when the stack first grows deeper than ever before.
 */
#include "callstack.h"

#include <stdlib.h>
#include <string.h>

/* What every event does stays free of stack frames and register saves when
 * the rare paths (growing the stack, repairs) are kept out of line. */
#if defined(__GNUC__) || defined(__clang__)
#define CALLSTACK_RARE __attribute__((noinline, cold))
#else
#define CALLSTACK_RARE
#endif

void callstack_init(struct callstack *s, size_t max_depth, const struct callstack_hooks *hooks,
                    void *ctx)
{
    memset(s, 0, sizeof *s);
    s->max_depth = max_depth ? max_depth : 1;
    s->hooks = hooks;
    s->ctx = ctx;
}

void callstack_free(struct callstack *s)
{
    free(s->frames);
    s->frames = NULL;
    s->n = s->cap = 0;
}

/* Room for one more frame, or 0 (too deep, or no memory: both are counted
 * as overflow by the caller). */
CALLSTACK_RARE static int grow(struct callstack *s)
{
    if (s->cap >= s->max_depth)
        return 0;
    size_t cap = s->cap ? s->cap * 2 : 16; /* many threads are shallow */
    if (cap > s->max_depth)
        cap = s->max_depth;
    struct callstack_frame *f = realloc(s->frames, cap * sizeof *f);
    if (!f)
        return 0;
    s->frames = f;
    s->cap = cap;
    return 1;
}

static void see_time(struct callstack *s, int64_t ts)
{
    if (!s->have_ts || ts > s->last_ts)
        s->last_ts = ts;
    s->have_ts = 1;
}

/* Fill the next frame, which there is room for, and tell the owner. */
/* func's bit in a frame's `seen` set. */
static uint64_t seen_bit(uint64_t func)
{
    return (uint64_t)1 << ((func * UINT64_C(0x9e3779b97f4a7c15)) >> 58);
}

/* func is open in frames[0..n), placeholders aside (their function is
 * unknown: a recursion hidden in a hole is not seen, and its time counts
 * as a call's of its own).  Only asked when func's bit is in the set, and
 * most often it is the caller itself (direct recursion): looked at first. */
static int open_anywhere(const struct callstack *s, uint64_t func)
{
    for (size_t i = s->n; i-- > 0;)
        if (s->frames[i].func == func && !s->frames[i].placeholder)
            return 1;
    return 0;
}

static void place(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder)
{
    uint64_t below = s->n ? s->frames[s->n - 1].seen : 0, bit = placeholder ? 0 : seen_bit(func);
    int nested = (below & bit) && open_anywhere(s, func);
    struct callstack_frame *f = &s->frames[s->n++];
    *f = (struct callstack_frame){.func = func, .start = ts, .excluded_at = s->excluded,
                                  .depth = s->depth, .placeholder = placeholder,
                                  .seen = below | bit, .nested = (uint8_t)nested};
    if (s->hooks && s->hooks->open)
        s->hooks->open(s->ctx, s, f);
}

/* A push with no room: grow, or count it as over max_depth. */
CALLSTACK_RARE static void push_full(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder)
{
    /* Once over, stay over until back under: the frames' order must not be
     * broken by a later push that happens to fit. */
    if (!s->overflow && grow(s)) {
        place(s, func, ts, placeholder);
        return;
    }
    s->overflow += placeholder ? placeholder : 1;
    if (!placeholder)
        s->c.overflow_enters++;
}

static void push(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder)
{
    s->depth += placeholder ? placeholder : 1;
    if (s->overflow || s->n == s->cap)
        push_full(s, func, ts, placeholder);
    else
        place(s, func, ts, placeholder);
}

/* Pop the top frame without a call: it ends at the latest time seen. */
static void cut_top(struct callstack *s)
{
    const struct callstack_frame *f = &s->frames[--s->n];
    if (s->hole_n > s->n)
        s->hole_n = s->n;
    if (s->hooks && s->hooks->close)
        s->hooks->close(s->ctx, f, s->last_ts, CALLSTACK_CUT, 0, 0);
}

/* No flush takes days (the longest wait a user can allow is a minute), so
 * a larger payload is hostile: it is cut to CALLSTACK_TRACER_MAX, which
 * zeroes the frames open around it.  The total runs modulo 2^64 on
 * purpose: frames use differences of it, which stay right across a wrap,
 * so no later frame is touched. */
void callstack_exclude(struct callstack *s, uint64_t ns)
{
    s->excluded += ns < CALLSTACK_TRACER_MAX ? ns : CALLSTACK_TRACER_MAX;
}

void callstack_enter(struct callstack *s, uint64_t func, int64_t ts)
{
    see_time(s, ts);
    push(s, func, ts, 0);
}

/* Pop the top frame as a completed call ending at ts. */
static void complete(struct callstack *s, int64_t ts)
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
    s->c.calls++;
    if (s->hooks && s->hooks->close)
        s->hooks->close(s->ctx, f, ts > f->start ? ts : f->start, CALLSTACK_RETURNED, incl, self);
}

/* Where func is open below the top frame: i such that frames[i - 1] is
 * it, or 0.  Not past a placeholder: below one, the order of what is open
 * is no longer known. */
static size_t open_below(const struct callstack *s, uint64_t func)
{
    size_t i = s->n - 1;
    while (i > 0 && !s->frames[i - 1].placeholder && s->frames[i - 1].func != func)
        i--;
    return i > 0 && !s->frames[i - 1].placeholder ? i : 0;
}

/* An exit that does not match the top frame, which was open before a
 * hole: the frames above its own were exited inside the hole, or, if its
 * function is not open, it was entered inside the hole.  Loss either way. */
static void exit_after_hole(struct callstack *s, uint64_t func, int64_t ts)
{
    size_t i = open_below(s, func);
    if (!i) {
        s->c.orphan_exits++;
        return;
    }
    while (s->n > i) {
        if (!s->frames[s->n - 1].placeholder)
            s->c.lost_frames++;
        cut_top(s);
    }
    complete(s, ts);
}

/* An exit that is not simply the top frame's return (see callstack_exit). */
CALLSTACK_RARE static void exit_other(struct callstack *s, uint64_t func, int64_t ts)
{
    if (s->overflow) {
        s->overflow--; /* pairs with an enter that was only counted */
        return;
    }
    if (!s->n) {
        if (s->holed)
            s->c.orphan_exits++; /* entered inside the hole */
        else
            s->c.unmatched_exits++;
        return;
    }
    struct callstack_frame *top = &s->frames[s->n - 1];
    if (top->placeholder) { /* one level of it: the frame goes with its last */
        s->c.orphan_exits++;
        if (top->placeholder > 1) {
            top->placeholder--;
            top->depth--;
        } else
            cut_top(s);
        return;
    }
    /* top->func != func here: callstack_exit took the matching exit */
    if (s->holed && s->n <= s->hole_n) {
        exit_after_hole(s, func, ts);
        return;
    }
    s->c.unmatched_exits++;
    size_t i = open_below(s, func);
    if (!i)
        return; /* not open here: ignore it */
    s->c.unclosed_enters += s->n - i;
    while (s->n > i)
        cut_top(s);
    complete(s, ts);
}

void callstack_exit(struct callstack *s, uint64_t func, int64_t ts)
{
    see_time(s, ts);
    s->depth--;
    /* The common case: the exit of the top frame, nothing over max_depth. */
    if (!s->overflow && s->n && !s->frames[s->n - 1].placeholder && s->frames[s->n - 1].func == func)
        complete(s, ts);
    else
        exit_other(s, func, ts);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void callstack_lost(struct callstack *s, uint64_t n)
{
    s->c.lost_events = sat_add(s->c.lost_events, n);
    s->unsynced = sat_add(s->unsynced, n);
}

/* Open frames after `low`, then after - low placeholders for the frames
 * entered inside the hole and still open: one by one up to CALLSTACK_RUN,
 * the outermost standing for the rest of a deeper hole, so a hole costs
 * at most CALLSTACK_RUN frames however deep it claims to be. */
static void push_placeholders(struct callstack *s, int32_t low, int32_t after)
{
    s->depth = low;
    int64_t open = (int64_t)after - (int64_t)low;
    if (open > CALLSTACK_RUN) {
        push(s, 0, s->last_ts, (uint32_t)(open - CALLSTACK_RUN + 1));
        open = CALLSTACK_RUN - 1;
    }
    for (int64_t k = 0; k < open; k++)
        push(s, 0, s->last_ts, 1);
    s->depth = after;
}

/* A resync after a stream gap: how our frames sit against the runtime's
 * depths is unknown.  Keep them all below the low mark, as frames from
 * before a hole (the exits that come will sort them out). */
static void resync_unknown_depth(struct callstack *s, int32_t low, int32_t after)
{
    s->c.lost_frames += s->overflow;
    s->overflow = 0;
    int64_t d = low;
    for (size_t i = s->n; i-- > 0;) {
        s->frames[i].depth = d;
        d -= s->frames[i].placeholder ? s->frames[i].placeholder : 1;
    }
    s->holed = 1;
    s->hole_n = s->n;
    s->depth_lost = 0;
    push_placeholders(s, low, after);
}

/* The depths of a resync are what the events lost since the one before
 * can have done: from the depth before the hole (when known) down to low,
 * then up to after, one lost event at least per level. */
static int resync_plausible(const struct callstack *s, int32_t low, int32_t after, uint64_t lost)
{
    if (after < low)
        return 0;
    uint64_t need = (uint64_t)((int64_t)after - (int64_t)low);
    if (!s->depth_lost) {
        if (s->depth < low)
            return 0;
        need += (uint64_t)(s->depth - (int64_t)low);
    }
    return need <= lost;
}

/* Frames above the low mark were exited inside the hole; a placeholder run
 * that reaches down past it keeps its levels up to it. */
static void cut_above(struct callstack *s, int32_t low)
{
    while (s->n && s->frames[s->n - 1].depth > low) {
        struct callstack_frame *top = &s->frames[s->n - 1];
        if (top->placeholder > 1 && top->depth - (int64_t)top->placeholder < low) {
            top->placeholder -= (uint32_t)(top->depth - low);
            top->depth = low;
            return;
        }
        if (!top->placeholder)
            s->c.lost_frames++;
        cut_top(s);
    }
}

void callstack_resync(struct callstack *s, int32_t low, int32_t after)
{
    uint64_t lost = s->unsynced;
    s->unsynced = 0;
    if (!resync_plausible(s, low, after, lost)) {
        s->c.bad_resyncs++;
        callstack_hole(s); /* something was lost here; what, the marker cannot say */
        return;
    }
    if (s->depth_lost) {
        resync_unknown_depth(s, low, after);
        return;
    }
    /* Enters beyond max_depth sit above the stack, at the depths just below
     * the running one; those above the low mark were exited in the hole. */
    int64_t keep = (int64_t)low - (s->depth - (int64_t)s->overflow);
    if (keep < 0)
        keep = 0;
    if ((uint64_t)keep < s->overflow) {
        s->c.lost_frames += s->overflow - (uint64_t)keep;
        s->overflow = (uint64_t)keep;
    }
    cut_above(s, low);
    push_placeholders(s, low, after);
}

void callstack_hole(struct callstack *s)
{
    s->holed = 1;
    s->depth_lost = 1;
    s->hole_n = s->n;
}

/* Empty the stack and start again from depth 0, no hole behind. */
static void clear(struct callstack *s)
{
    while (s->n)
        cut_top(s);
    s->overflow = 0;
    s->depth = 0;
    s->holed = s->depth_lost = 0;
    s->hole_n = 0;
    s->unsynced = 0;
}

void callstack_reset(struct callstack *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->frames[i].placeholder)
            continue;
        if (s->holed && i < s->hole_n)
            s->c.lost_frames++; /* its exit may have been in the hole */
        else
            s->c.unclosed_enters++;
    }
    s->c.unclosed_enters += s->overflow; /* beyond max_depth, never exited */
    clear(s);
}

void callstack_kill(struct callstack *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->c.dead_frames += !s->frames[i].placeholder;
    s->c.dead_frames += s->overflow;
    clear(s);
}
