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

static void part_free(struct callstack *s)
{
    if (!s->part)
        return;
    free(s->part->under);
    free(s->part->done);
    u64map_free(&s->part->dones);
    free(s->part);
    s->part = NULL;
}

void callstack_free(struct callstack *s)
{
    free(s->frames);
    s->frames = NULL;
    s->n = s->cap = 0;
    part_free(s);
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

/* A part's call of func, not nested in its frames, returned taking incl
 * (see callstack_part): added to its function's at the current under. */
CALLSTACK_RARE static void part_done_slow(struct callstack *s, uint64_t func, uint64_t incl)
{
    struct callstack_part *p = s->part;
    uint64_t key = func << 20 | p->nunder;
    uint32_t at;
    if (!u64map_get(&p->dones, key, &at)) {
        if (p->ndone == CALLSTACK_PART_MAX || func >> 44) {
            p->over = 1;
            return;
        }
        if (p->ndone == p->capdone) {
            size_t cap = p->capdone ? p->capdone * 2 : 16;
            struct callstack_done *v = realloc(p->done, cap * sizeof *v);
            if (!v) {
                p->over = 1;
                return;
            }
            p->done = v;
            p->capdone = cap;
        }
        if (u64map_put(&p->dones, key, (uint32_t)p->ndone) < 0) {
            p->over = 1;
            return;
        }
        at = (uint32_t)p->ndone;
        p->done[p->ndone++] = (struct callstack_done){func, p->nunder, 0};
    }
    p->recent[func & 63] = at + 1;
    p->done[at].incl_ns += incl;
}

void callstack_part_done(struct callstack *s, uint64_t func, uint64_t incl)
{
    struct callstack_part *p = s->part;
    uint64_t at = p->recent[func & 63];
    if (at && p->done[at - 1].func == func && p->done[at - 1].under == p->nunder)
        p->done[at - 1].incl_ns += incl;
    else
        part_done_slow(s, func, incl);
}

static void place(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder)
{
    callstack_place(s, func, ts, placeholder, s->hooks);
}

/* A push with no room: grow, or count it as over max_depth. */
CALLSTACK_RARE void callstack_push_full(struct callstack *s, uint64_t func, int64_t ts, uint32_t placeholder)
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
        callstack_push_full(s, func, ts, placeholder);
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
    callstack_enter_with(s, func, ts, s->hooks);
}

/* Pop the top frame as a completed call ending at ts. */
static void complete(struct callstack *s, int64_t ts)
{
    callstack_complete(s, ts, s->hooks);
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

/* An exit with nothing open in a part: perhaps a bottom frame's return. */
static void part_under(struct callstack *s, uint64_t func, int64_t ts)
{
    struct callstack_part *p = s->part;
    if (p->nunder == CALLSTACK_PART_MAX) {
        p->over = 1;
        return;
    }
    if (p->nunder == p->capunder) {
        size_t cap = p->capunder ? p->capunder * 2 : 16;
        struct callstack_under *v = realloc(p->under, cap * sizeof *v);
        if (!v) {
            p->over = 1;
            return;
        }
        p->under = v;
        p->capunder = cap;
    }
    p->under[p->nunder++] = (struct callstack_under){func, ts, s->excluded, p->child_ns};
    p->child_ns = 0;
}

/* An exit that is not simply the top frame's return (see callstack_exit). */
CALLSTACK_RARE void callstack_exit_other(struct callstack *s, uint64_t func, int64_t ts)
{
    if (s->overflow) {
        s->overflow--; /* pairs with an enter that was only counted */
        return;
    }
    if (!s->n && s->part && !s->part->reset && !s->holed) {
        part_under(s, func, ts);
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
    callstack_exit_with(s, func, ts, s->hooks);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void part_over(struct callstack *s)
{
    if (s->part)
        s->part->over = 1;
}

void callstack_lost(struct callstack *s, uint64_t n)
{
    part_over(s);
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
    part_over(s);
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
    part_over(s);
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
    if (s->part && !s->part->reset) { /* the bottom is cut here too */
        s->part->reset = 1;
        s->part->reset_ts = s->last_ts;
        s->part->reset_have_ts = s->have_ts;
    }
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
    part_over(s);
    for (size_t i = 0; i < s->n; i++)
        s->c.dead_frames += !s->frames[i].placeholder;
    s->c.dead_frames += s->overflow;
    clear(s);
}

/* ---- a stack in parts ---------------------------------------------------- */

int callstack_part(struct callstack *s)
{
    if (!(s->part = calloc(1, sizeof *s->part)))
        return -1;
    u64map_init(&s->part->dones);
    return 0;
}

/* Frames of dst's bottom the part's unders return: how many match, or -1
 * when one does not (dst's own matching would go another way). */
static long unders_fit(const struct callstack *dst, const struct callstack_part *p)
{
    size_t k = dst->n;
    long popped = 0;
    for (size_t i = 0; i < p->nunder && k; i++, k--, popped++) {
        const struct callstack_frame *f = &dst->frames[k - 1];
        if (f->placeholder || f->func != p->under[i].func)
            return -1;
    }
    return popped;
}

/* func is open, no placeholder, in dst's frames [0, n). */
static int open_in(const struct callstack *dst, size_t n, uint64_t func)
{
    for (size_t i = 0; i < n; i++)
        if (dst->frames[i].func == func && !dst->frames[i].placeholder)
            return 1;
    return 0;
}

int callstack_stitch_fits(const struct callstack *dst, const struct callstack *part)
{
    const struct callstack_part *p = part->part;
    if (!p || p->over || part->holed || part->overflow || part->c.overflow_enters || part->c.lost_events ||
        part->c.bad_resyncs || dst->part || dst->holed || dst->overflow || dst->depth_lost)
        return 0;
    long popped = unders_fit(dst, p);
    if (popped < 0)
        return 0;
    /* every depth the part reached fits over what was left of the bottom */
    if (dst->n + p->max_n > dst->max_depth || dst->n + part->n > dst->max_depth)
        return 0;
    return 1;
}

int callstack_part_nested(const struct callstack *dst, const struct callstack *part, uint64_t func, uint64_t under)
{
    const struct callstack_part *p = part->part;
    size_t popped = p->nunder < dst->n ? p->nunder : dst->n;
    size_t u = under < popped ? (size_t)under : popped;
    return open_in(dst, dst->n - u, func);
}

/* dst's top frame returned at u (the part's under), as complete() would. */
static void complete_under(struct callstack *dst, const struct callstack_under *u, uint64_t excluded0)
{
    struct callstack_frame *f = &dst->frames[--dst->n];
    uint64_t span = u->ts > f->start ? (uint64_t)u->ts - (uint64_t)f->start : 0;
    uint64_t tracer = excluded0 - f->excluded_at + u->excluded;
    uint64_t incl = span > tracer ? span - tracer : 0;
    uint64_t child = f->child_ns + u->child_ns;
    uint64_t self = incl > child ? incl - child : 0;
    if (dst->n)
        dst->frames[dst->n - 1].child_ns += incl;
    dst->c.calls++;
    if (dst->hooks && dst->hooks->close)
        dst->hooks->close(dst->ctx, f, u->ts > f->start ? u->ts : f->start, CALLSTACK_RETURNED, incl, self);
}

static void add_counts(struct callstack_counts *d, const struct callstack_counts *s)
{
    d->calls += s->calls;
    d->unmatched_exits += s->unmatched_exits;
    d->unclosed_enters += s->unclosed_enters;
    d->lost_events = sat_add(d->lost_events, s->lost_events);
    d->lost_frames += s->lost_frames;
    d->orphan_exits += s->orphan_exits;
    d->overflow_enters += s->overflow_enters;
    d->dead_frames += s->dead_frames;
    d->bad_resyncs += s->bad_resyncs;
}

int callstack_stitch(struct callstack *dst, struct callstack *part)
{
    struct callstack_part *p = part->part;
    uint64_t excluded0 = dst->excluded;
    size_t need = dst->n + part->n;
    while (dst->cap < need) { /* room first, so that nothing is half done */
        size_t cap = dst->cap ? dst->cap * 2 : 16;
        struct callstack_frame *f = realloc(dst->frames, (cap < need ? need : cap) * sizeof *f);
        if (!f)
            return -1;
        dst->frames = f;
        dst->cap = cap < need ? need : cap;
    }
    for (size_t i = 0; i < p->nunder; i++) {
        if (dst->n)
            complete_under(dst, &p->under[i], excluded0);
        else
            dst->c.unmatched_exits++; /* nothing open: as callstack_exit counts it */
    }
    if (p->reset) {
        if (p->reset_have_ts && (!dst->have_ts || p->reset_ts > dst->last_ts))
            dst->last_ts = p->reset_ts;
        dst->have_ts |= p->reset_have_ts;
        callstack_reset(dst);
    } else if (dst->n)
        dst->frames[dst->n - 1].child_ns += p->child_ns;
    int64_t depth0 = p->reset ? 0 : dst->depth;
    uint64_t seen = dst->n ? dst->frames[dst->n - 1].seen : 0;
    size_t bottom = dst->n;
    for (size_t i = 0; i < part->n; i++) {
        struct callstack_frame f = part->frames[i];
        f.nested |= !f.placeholder && open_in(dst, bottom, f.func); /* a recursion across the cut */
        f.excluded_at += excluded0;
        f.depth += depth0;
        seen |= f.placeholder ? 0 : callstack_seen_bit(f.func); /* of the ids as they are now */
        f.seen = seen;
        dst->frames[dst->n++] = f;
    }
    dst->depth = depth0 + part->depth;
    dst->excluded += part->excluded;
    if (part->have_ts && (!dst->have_ts || part->last_ts > dst->last_ts))
        dst->last_ts = part->last_ts;
    dst->have_ts |= part->have_ts;
    add_counts(&dst->c, &part->c);
    part->n = 0;
    part_free(part);
    return 0;
}
