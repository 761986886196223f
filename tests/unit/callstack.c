/*
 * callstack.c - unit test of the shadow-stack matcher (src/analysis/callstack.c):
 * nesting and self time, unmatched exits, longjmp-style unwinding, the
 * THREAD_LOST/RESYNC repair with exact loss counts, stream gaps (holes of
 * unknown shape) and dead processes, THREAD_EXIT reset (tid reuse), and the
 * depth cap; which frames are recursive (nested).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callstack.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

struct call {
    uint64_t func, incl, self;
    int nested;
};
static struct call calls[64];
static size_t ncalls;

/* Opens and closes seen, and the times of cuts, for the hook tests. */
static size_t nopen, nclose, ncut;
static int64_t cut_ts[64];
static int nesting_ok = 1;
static int64_t depth_now;

static void on_open(void *ctx, struct callstack *st, struct callstack_frame *f)
{
    (void)ctx;
    nopen++;
    depth_now++;
    if (f != &st->frames[st->n - 1])
        nesting_ok = 0;
    f->tag.node = (uint32_t)st->n; /* closes must come back in stack order */
}

static void on_close(void *ctx, const struct callstack_frame *f, int64_t ts,
                     enum callstack_end how, uint64_t incl, uint64_t self)
{
    (void)ctx;
    nclose++;
    if ((int64_t)f->tag.node != depth_now--)
        nesting_ok = 0;
    if (how == CALLSTACK_CUT) {
        if (ncut < 64)
            cut_ts[ncut] = ts;
        ncut++;
        return;
    }
    if (ncalls < 64)
        calls[ncalls++] = (struct call){f->func, incl, self, f->nested};
}

static const struct callstack_hooks hooks = {on_open, on_close};

static int call_is(size_t i, uint64_t func, uint64_t incl, uint64_t self)
{
    if (i >= ncalls)
        return 0;
    if (calls[i].func != func || calls[i].incl != incl || calls[i].self != self)
        printf("# call %zu: func %llu incl %llu self %llu\n", i, (unsigned long long)calls[i].func,
               (unsigned long long)calls[i].incl, (unsigned long long)calls[i].self);
    return calls[i].func == func && calls[i].incl == incl && calls[i].self == self;
}

static struct callstack s;
static void fresh(size_t max_depth)
{
    callstack_free(&s);
    callstack_init(&s, max_depth, &hooks, NULL);
    ncalls = nopen = nclose = ncut = 0;
    depth_now = 0;
}

static int counts_are(uint64_t calls_, uint64_t unmatched, uint64_t unclosed, uint64_t lost,
                      uint64_t lost_frames, uint64_t orphans)
{
    const struct callstack_counts *c = &s.c;
    int good = c->calls == calls_ && c->unmatched_exits == unmatched &&
               c->unclosed_enters == unclosed && c->lost_events == lost &&
               c->lost_frames == lost_frames && c->orphan_exits == orphans;
    if (!good)
        printf("# calls %llu unmatched %llu unclosed %llu lost %llu lost_frames %llu orphans %llu\n",
               (unsigned long long)c->calls, (unsigned long long)c->unmatched_exits,
               (unsigned long long)c->unclosed_enters, (unsigned long long)c->lost_events,
               (unsigned long long)c->lost_frames, (unsigned long long)c->orphan_exits);
    return good;
}

enum { A = 1, B, C, D, E, X };

/* play SCRIPT: feeds the matcher a run of events written one to a word, so
 * each case reads as its trace: +F<ts> enters function F (A..E, X) at ts,
 * -F<ts> exits it, L<n> loses n events, R<low>,<after> resyncs, T<ns>
 * excludes tracer time, H is a stream gap, K the process dying, Z a reset. */
static void play(const char *script)
{
    for (const char *p = script; *p;) {
        char op = *p++;
        uint64_t f = 0;
        if ((op == '+' || op == '-') && *p) {
            f = *p == 'X' ? X : (uint64_t)(*p - 'A' + A);
            p++;
        }
        char *end;
        long long n = strtoll(p, &end, 10), m = 0;
        if (*end == ',')
            m = strtoll(end + 1, &end, 10);
        switch (op) {
        case '+': callstack_enter(&s, f, n); break;
        case '-': callstack_exit(&s, f, n); break;
        case 'L': callstack_lost(&s, (uint64_t)n); break;
        case 'R': callstack_resync(&s, (int32_t)n, (int32_t)m); break;
        case 'T': callstack_exclude(&s, (uint64_t)n); break;
        case 'H': callstack_hole(&s); break;
        case 'K': callstack_kill(&s); break;
        case 'Z': callstack_reset(&s); break;
        default: printf("# play: bad step '%c' in \"%s\"\n", op, script); break;
        }
        for (p = end; *p == ' '; p++)
            ;
    }
}

int main(void)
{
    printf("1..49\n");

    /* A(0..100) { B(10..40) { C(20..30) } B(50..70) } */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 +C20 -C30 -B40 +B50 -B70 -A100");
    ok(ncalls == 4 && call_is(0, C, 10, 10) && call_is(1, B, 30, 20) && call_is(2, B, 20, 20),
       "nesting: inner calls complete first with incl and self");
    ok(call_is(3, A, 100, 50), "self time = incl minus direct children's incl");
    callstack_reset(&s);
    ok(counts_are(4, 0, 0, 0, 0, 0), "balanced trace: no unmatched, no unclosed");

    /* Recursion: A { A { A } } */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +A1 +A2 -A5 -A7 -A10");
    ok(ncalls == 3 && call_is(0, A, 3, 3) && call_is(1, A, 6, 3) && call_is(2, A, 10, 4),
       "recursion: each level timed on its own");

    /* Unmatched exits. */
    fresh(CALLSTACK_MAX_DEPTH);
    callstack_exit(&s, X, 5);
    ok(counts_are(0, 1, 0, 0, 0, 0) && ncalls == 0, "exit on an empty stack: unmatched, ignored");
    play("+A10 -X15 -A20");
    ok(counts_are(1, 2, 0, 0, 0, 0) && call_is(0, A, 10, 10),
       "exit of a function not open: unmatched, ignored; the open call still completes");

    /* longjmp past B and C: the exit of A unwinds them. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 +C20 -A50 Z");
    ok(counts_are(1, 1, 2, 0, 0, 0) && call_is(0, A, 50, 50),
       "exit found deeper: one unmatched, the 2 frames above unclosed, A completes");

    /* A hole: A B C open (depths 1 2 3); the thread lost 5 events: exit C,
     * exit B (low = 1), enter D, enter E, exit E (after = 2). */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 +C20 L5 R1,2");
    ok(s.n == 2 && s.frames[0].func == A && !s.frames[0].placeholder && s.frames[1].placeholder,
       "resync: popped to the low mark, one placeholder for D");
    play("+E60 -E65 -D70 " /* D's exit pops the placeholder */
         "-A100 Z");
    ok(counts_are(2, 0, 0, 5, 2, 1),
       "resync: 5 lost, 2 frames cut short, 1 orphaned exit, nothing unmatched or unclosed");
    ok(ncalls == 2 && call_is(0, E, 5, 5) && call_is(1, A, 100, 100),
       "resync: calls after the hole timed; lost frames are not calls");

    /* An orphaned exit is a loss even when its function matches nothing. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 L3 R1,3 " /* two frames entered in the hole stay open */
         "-X10 -X11 -A20 Z");
    ok(counts_are(1, 0, 0, 3, 0, 2) && call_is(0, A, 20, 20),
       "two placeholders: two orphaned exits, then A matches");

    /* Placeholders left at the end are losses, not unclosed enters. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 L4 R0,2 Z");
    ok(counts_are(0, 0, 0, 4, 1, 0), "hole to depth 0: A cut short; open placeholders not unclosed");

    /* An unmatched exit does not search below a placeholder. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 L1 R1,2 +B10 -A20");
    ok(counts_are(0, 1, 0, 1, 0, 0) && s.n == 3, "exit of A above a placeholder: unmatched, ignored");

    /* Depth follows the runtime's count even after an ignored exit. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("-X0 " /* depth -1 */
         "+A5 " /* depth 0 */
         "+B6 " /* depth 1 */
         "L2 R0,0"); /* exit B lost, then some enter+exit: low 0 */
    ok(s.n == 1 && s.frames[0].func == A && s.c.lost_frames == 1,
       "resync depths are the runtime's: after an ignored exit only B is above depth 0");
    callstack_exit(&s, A, 9);
    ok(call_is(0, A, 4, 4), "then A matches");

    /* Resync with nothing lost below: the low mark at the current depth. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 L2 R1,1 " /* enter + exit of something inside A */
         "-A10 Z");
    ok(counts_are(1, 0, 0, 2, 0, 0) && call_is(0, A, 10, 10), "hole above the stack: nothing to repair");

    /* THREAD_EXIT: the tid is reused by a new thread with an empty stack. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B1 Z");
    ok(counts_are(0, 0, 2, 0, 0, 0) && s.n == 0 && s.depth == 0, "thread exit: 2 frames unclosed, stack empty");
    play("+C10 -C12");
    ok(counts_are(1, 0, 2, 0, 0, 0) && call_is(0, C, 2, 2), "reused tid: new thread matches from scratch");
    play("+D20 L1 R0,0");
    ok(s.n == 0 && s.c.lost_frames == 1, "reused tid: resync depths count from the new thread's start");

    /* The depth cap: enters beyond it are counted, not timed. */
    fresh(4);
    for (int i = 0; i < 6; i++)
        callstack_enter(&s, (uint64_t)A + (uint64_t)i, i);
    ok(s.n == 4 && s.c.overflow_enters == 2, "cap 4: 6 enters, 4 on the stack, 2 over");
    for (int i = 5; i >= 0; i--)
        callstack_exit(&s, (uint64_t)A + (uint64_t)i, 100 - i);
    ok(counts_are(4, 0, 0, 0, 0, 0) && call_is(0, A + 3, 94, 94) && s.n == 0,
       "cap 4: the 2 extra exits pair with the extra enters; 4 calls timed");
    fresh(4);
    for (int i = 0; i < 6; i++)
        callstack_enter(&s, (uint64_t)A + (uint64_t)i, i);
    callstack_reset(&s);
    ok(s.c.unclosed_enters == 6, "cap 4: all 6 open enters unclosed at the end");

    /* Deeper than the first allocation: the stack grows, every frame kept. */
    fresh(CALLSTACK_MAX_DEPTH);
    int deep_ok = 1;
    for (int i = 0; i < 1000; i++)
        callstack_enter(&s, 1000 + (uint64_t)i, i);
    deep_ok &= s.n == 1000 && s.cap >= 1000 && s.overflow == 0 && nopen == 1000;
    for (int i = 999; i >= 0; i--)
        callstack_exit(&s, 1000 + (uint64_t)i, 2000 - i);
    /* entered at i, exited at 2000 - i: the innermost took 2 ns, the next 4 */
    deep_ok &= call_is(0, 1999, 2, 2) && call_is(1, 1998, 4, 2);
    ok(deep_ok && counts_are(1000, 0, 0, 0, 0, 0) && s.n == 0 && nesting_ok,
       "1000 frames deep: the stack grows past its first block, all 1000 calls match");
    fresh(4);
    for (int i = 0; i < 6; i++)
        callstack_enter(&s, (uint64_t)A + (uint64_t)i, i);
    play("L7 R2,2");
    ok(s.n == 2 && s.overflow == 0 && s.c.lost_frames == 4, "cap 4: a hole down to depth 2 cuts 2 stacked and 2 extra frames");

    /* The hooks: every open closed once, in stack order; cuts at the
     * latest time seen. */
    fresh(CALLSTACK_MAX_DEPTH);
    nesting_ok = 1;
    play("+A0 +B10 +C20 -A50"); /* C and B cut at 50, A returns */
    ok(nopen == 3 && nclose == 3 && ncut == 2 && cut_ts[0] == 50 && cut_ts[1] == 50 && nesting_ok,
       "hooks: an unmatched exit cuts the frames above at its time, top first");
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 L4 R1,3"); /* B cut; two placeholders open at 10 */
    ok(nopen == 4 && ncut == 1 && cut_ts[0] == 10 && s.frames[2].start == 10 && nesting_ok,
       "hooks: resync cuts lost frames and opens placeholders at the latest time");
    play("-X30 +C40 Z");
    ok(nopen == 5 && nclose == 5 && ncut == 5 && cut_ts[4] == 40 && nesting_ok,
       "hooks: orphan exit and reset cut what is open; every open closed once");
    fresh(2);
    for (int i = 0; i < 4; i++)
        callstack_enter(&s, (uint64_t)A + (uint64_t)i, i);
    for (int i = 3; i >= 0; i--)
        callstack_exit(&s, (uint64_t)A + (uint64_t)i, 10 - i);
    ok(nopen == 2 && nclose == 2 && ncalls == 2 && nesting_ok,
       "hooks: frames beyond the cap are neither opened nor closed");

    /* A stream gap (a hole of unknown shape): A B C open before it. */
    fresh(CALLSTACK_MAX_DEPTH);
    nesting_ok = 1;
    play("+A0 +B10 +C20 H -X30"); /* entered inside the hole */
    ok(counts_are(0, 0, 0, 0, 0, 1) && s.n == 3, "gap: an exit of a call entered in it is an orphan");
    play("+D40 -D45 -A100"); /* C and B exited in the hole */
    ok(counts_are(2, 0, 0, 0, 2, 1) && call_is(0, D, 5, 5) && call_is(1, A, 100, 100),
       "gap: calls after it timed; an exit deeper before it cuts the frames above as lost");
    play("-X110 Z");
    ok(counts_are(2, 0, 0, 0, 2, 2) && nesting_ok, "gap: on an empty stack, exits are orphans too");

    /* After the gap, frames entered after it keep the usual rules. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 H +B10 +C20 -B30"); /* C above B: a real unmatched exit */
    ok(counts_are(1, 1, 1, 0, 0, 0) && s.n == 1, "gap: frames entered after it unwind as before");
    callstack_reset(&s);
    ok(counts_are(1, 1, 1, 0, 1, 0) && !s.holed,
       "gap: a frame from before it still open at the end is a lost frame; reset clears the hole");

    /* A resync after a gap: the depths no longer match, frames stay below the low mark. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B5 H L3 R4,5");
    ok(s.n == 3 && s.frames[2].placeholder && s.frames[1].depth == 4 && s.depth == 5,
       "gap then resync: frames kept under the low mark, one placeholder on top");
    play("-X10 " /* the placeholder */
         "-A20"); /* B's exit was lost */
    ok(counts_are(1, 0, 0, 3, 1, 1) && call_is(0, A, 20, 20), "gap then resync: losses, nothing unmatched");

    /* The process died: open frames are dead, not unclosed. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B5 L1 R2,3 K");
    ok(counts_are(0, 0, 0, 1, 0, 0) && s.c.dead_frames == 2 && s.n == 0,
       "kill: 2 open frames dead, the placeholder not counted, nothing unclosed");
    callstack_reset(&s);
    ok(s.c.unclosed_enters == 0 && s.c.dead_frames == 2, "kill: a reset after it finds nothing open");

    /* Tracer time: A(0..100) { B(10..40) [flush 5 at 20] } [flush 7 at 50]
     * C(60..90) { [flush 2] }: taken out of every frame open then. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 T5 -B40 T7 +C60 T2 -C90 -A100");
    ok(ncalls == 3 && call_is(0, B, 25, 25) && call_is(1, C, 28, 28),
       "tracer time: out of the callees open when it happened, not of those entered after");
    ok(call_is(2, A, 86, 33), "tracer time: out of the caller's incl and self too");
    fresh(CALLSTACK_MAX_DEPTH);
    callstack_enter(&s, A, 0);
    callstack_exclude(&s, UINT64_MAX - 1);
    play("T10 -A100 +B200 T5 -B300");
    ok(ncalls == 2 && call_is(0, A, 0, 0) && call_is(1, B, 95, 95),
       "tracer time beyond the call (untrusted input): that call is 0, later ones untouched");

    /* Resync depths the loss cannot explain (hostile): counted, taken as a
     * hole of unknown shape, nothing pushed. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 L2 R0,5"); /* down 1 and up 5: 6 events, only 2 lost */
    ok(s.c.bad_resyncs == 1 && s.n == 1 && s.depth_lost && nopen == 1,
       "resync beyond what 2 lost events can do: counted, a hole, no placeholders");
    callstack_exit(&s, X, 10);
    ok(counts_are(0, 0, 0, 2, 0, 1), "after a bad resync: an exit not open is orphaned, not unmatched");
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 R2,2"); /* no loss said: the low mark cannot be above the depth */
    ok(s.c.bad_resyncs == 1 && s.n == 1, "resync with a low mark above the depth: counted");

    /* A deep hole costs a count, not a frame per level: 2^31 - 1 levels,
     * the outermost placeholder standing for all but CALLSTACK_RUN - 1. */
    fresh(CALLSTACK_MAX_DEPTH);
    callstack_enter(&s, A, 0);
    callstack_lost(&s, (uint64_t)1 << 32);
    callstack_resync(&s, 1, INT32_MAX);
    ok(s.c.bad_resyncs == 0 && s.n == 1 + CALLSTACK_RUN && s.frames[1].placeholder == INT32_MAX - CALLSTACK_RUN &&
       s.frames[1].depth == INT32_MAX - CALLSTACK_RUN + 1 && s.depth == INT32_MAX,
       "deep resync: CALLSTACK_RUN frames, the outermost one standing for the rest");
    play("+B10 -B20");
    for (int k = 0; k < CALLSTACK_RUN + 2; k++)
        callstack_exit(&s, X, 30);
    ok(counts_are(1, 0, 0, (uint64_t)1 << 32, 0, CALLSTACK_RUN + 2) && s.n == 2 &&
       s.frames[1].placeholder == INT32_MAX - CALLSTACK_RUN - 3, "deep resync: exits take its levels one by one");
    callstack_lost(&s, (uint64_t)1 << 32);
    callstack_resync(&s, 1, 1); /* the hole went down to A's level: the run is gone */
    ok(s.n == 1 && s.c.bad_resyncs == 0 && s.depth == 1 && nopen == nclose + 1,
       "deep resync: a later hole down to its bottom cuts the run whole");
    fresh(CALLSTACK_MAX_DEPTH);
    play("L1000 R0,500 L1000 R300,310"); /* down 200 inside the run, up 10 */
    ok(s.c.bad_resyncs == 0 && s.frames[0].placeholder == 300 && s.frames[0].depth == 300 &&
       s.n == 11 && s.depth == 310, "a hole inside a run keeps its levels below the low mark");

    /* Recursion, direct and through others: only the outermost A is not
     * nested; B and C never are. */
    fresh(CALLSTACK_MAX_DEPTH);
    play("+A0 +B10 +A20 +C30 +A40 -A50 -C60 -A70 -B80 -A100");
    ok(ncalls == 5 && calls[0].nested && !calls[1].nested && calls[2].nested && !calls[3].nested &&
       !calls[4].nested && call_is(4, A, 100, 30), "nested: the inner A frames, not the outermost, not B or C");

    /* 300 distinct functions open at once: their hashes collide in the
     * 64-bit set, and the walk that settles a collision says none is
     * nested; the 151st again is. */
    fresh(CALLSTACK_MAX_DEPTH);
    for (uint64_t f = 100; f < 400; f++)
        callstack_enter(&s, f, (int64_t)f);
    callstack_enter(&s, 250, 400);
    int none = 1;
    for (size_t i = 0; i < 300; i++)
        none &= !s.frames[i].nested;
    ok(none && s.n == 301 && s.frames[300].nested, "300 distinct functions: none nested; one open again is");

    callstack_free(&s);
    return 0;
}
