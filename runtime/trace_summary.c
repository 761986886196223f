/*
 * trace_summary.c - summary mode: per-function aggregates kept by the hooks.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* TRACE_MODE=summary (trace.h, "summary snapshots"): the hooks keep, per
 * thread and function, calls, inclusive and self time, min, max and a
 * log-linear histogram, in a table of the thread's own that only its hooks
 * write (no lock).  Memory is fixed at the thread's start, one mapping
 * reserved with MAP_NORESERVE: TRACE_SUMMARY_FUNCS functions (default 65536,
 * so that real programs fit; calls of others are counted, not attributed,
 * and the analyzer marks the rows they may touch as lower bounds) and a
 * shadow stack of TRACE_SUMMARY_DEPTH frames (deeper calls are counted,
 * their time stays in the caller).  Only the pages the thread touches
 * become memory: its functions' entries, a hash that starts small and
 * doubles, and the groups of histogram buckets its durations fall in
 * (sum_hist_at): about 0.2 MiB for 900 functions and 7.3 MiB for 20,000
 * functions of tens of ns (test runtime/120's); at most 11 KiB more for a
 * function whose calls spread over every bucket.  No increments
 * or table swaps: the snapshot format stays cumulative, so every reader
 * of it stays as it is (docs/runtime.md says why).  The
 * enter hook only pushes a frame (and counts it open, see sum_open_at);
 * the exit hook pops it, turns the clock's
 * difference into ns (a multiply and a shift), looks the function up and
 * adds.  Every TRACE_SUMMARY_MS, judged by the clock the exit hook reads
 * anyway, and at thread and process exit, a snapshot goes out through the
 * thread's ordinary flush; its time is taken out of every open frame, as
 * the analyzer takes a flush's out in event mode. */

#define SUM_NONE UINT32_MAX
#define SUM_BLOCKS TRACE_SUMMARY_BLOCKS /* histogram blocks: the exact one and 42 powers of two */
#define SUM_SLOTS_MIN 1024u            /* the hash's first size; it doubles at half full */
#define SUM_OPEN_BITS 9u               /* the filter of open functions: 512 counters */

typedef struct sum_fn {
    uint64_t addr, calls, incl, self, min, max;
    uint64_t blocks; /* bit b: histogram block b has a count (what a snapshot visits) */
} sum_fn_t;

typedef struct sum_frame {
    uint64_t addr, start; /* the function, and the clock at its entry */
    uint64_t child;       /* ns of its completed callees, for its self time */
    uint64_t tracer_at;   /* the thread's tracer ns at its entry */
} sum_frame_t;

typedef struct sum_table {
    uint32_t nfn, sp, deep;   /* functions in the table; frames open; calls open beyond them */
    uint32_t mask;            /* slots in use - 1 (grows to max_slots - 1) */
    uint32_t cap, max_slots;  /* functions it can hold (TRACE_SUMMARY_FUNCS, or less: sum_alloc) */
    uint64_t bytes;           /* the mapping's size */
    uint64_t over_calls, deep_calls, unmatched;
    uint64_t tracer;          /* ns the tracer took from this thread (snapshots) */
    uint64_t seq, next_at;    /* snapshots written; clock at which the next is due */
    uint32_t open[1u << SUM_OPEN_BITS]; /* open frames per hash of their function (sum_open_at) */
    uint32_t *slots;          /* open addressing: function + 1, 0 empty */
    sum_fn_t *fn;
    uint64_t *hist;           /* cap * TRACE_SUMMARY_NBUCKETS, in groups of 32 (sum_hist_at) */
    sum_frame_t *frames;
} sum_table_t;

TR_NOINSTR static uint64_t sum_round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

/* Where each part of a table of cap functions lies in its one mapping, and
 * its size (the return value). */
TR_NOINSTR static uint64_t sum_layout(uint32_t cap, uint64_t *o_slots, uint64_t *o_fn, uint64_t *o_frames, uint64_t *o_hist,
                           uint64_t *slots)
{
    *slots = SUM_SLOTS_MIN;
    while (*slots < 2u * (uint64_t)cap)
        *slots <<= 1;
    uint64_t at = sum_round_up(sizeof(sum_table_t), 64);
    *o_slots = at;
    at = sum_round_up(at + *slots * sizeof(uint32_t), 64);
    *o_fn = at;
    at = sum_round_up(at + cap * (uint64_t)sizeof(sum_fn_t), 64);
    *o_frames = at;
    at = sum_round_up(at + g_sum_depth * (uint64_t)sizeof(sum_frame_t), 4096);
    *o_hist = at;
    return at + (uint64_t)cap * TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t);
}

/* The histograms are laid out by group of 32 buckets, not by function:
 * buckets 0-31 of every function, then 32-63 of every function, then
 * 64-95 (block 1), and so on, 44 groups.  A function's durations touch a
 * few neighbouring groups, and a program's functions mostly the same few,
 * so the pages touched are about 256 bytes per function and group used,
 * where a layout by function would touch a page or two of each function's
 * 11 KiB. */
_Static_assert(TRACE_SUMMARY_EXACT % 32u == 0 && TRACE_SUMMARY_SUB == 32u, "buckets in groups of 32");

TR_NOINSTR static TR_HOT_INLINE uint64_t *sum_hist_at(const sum_table_t *s, uint32_t i, uint32_t b)
{
    return &s->hist[((uint64_t)(b >> 5) * s->cap + i) * 32u + (b & 31u)];
}

/* A mapping of size bytes whose pages cost memory only once touched. */
TR_NOINSTR static void *sum_map(uint64_t size)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
    flags |= MAP_NORESERVE; /* reserved address space, not committed memory */
#endif
    return size <= SIZE_MAX ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, flags, -1, 0) : MAP_FAILED;
}

/* The thread's table, one mapping of TRACE_SUMMARY_FUNCS functions, or, if
 * the address space will not hold that, of half as many, and so on (said
 * once a process); NULL (said) when there is no memory at all. */
TR_NOINSTR static struct sum_table *sum_alloc(void)
{
    static atomic_int said_smaller;
    uint32_t cap = g_sum_funcs;
    uint64_t o_slots, o_fn, o_frames, o_hist, slots, size = 0;
    void *m = MAP_FAILED;
    for (; cap >= 16u; cap /= 2u) {
        size = sum_layout(cap, &o_slots, &o_fn, &o_frames, &o_hist, &slots);
        if ((m = sum_map(size)) != MAP_FAILED)
            break;
    }
    if (m == MAP_FAILED) {
        say("TRACE_MODE=summary: no memory for a thread's table (TRACE_SUMMARY_FUNCS); the thread is not "
            "traced", (char *)0);
        return NULL;
    }
    if (cap < g_sum_funcs && !atomic_exchange_explicit(&said_smaller, 1, memory_order_relaxed)) {
        char a[21], b[21];
        say("TRACE_MODE=summary: no room to reserve a thread's table of TRACE_SUMMARY_FUNCS=", num(g_sum_funcs, a),
            " functions; it holds ", num(cap, b),
            ", other threads' may hold fewer (calls beyond a table are counted, and the rows they may touch "
            "marked as lower bounds)", (char *)0);
    }
    unsigned char *b = m;
    sum_table_t *s = m;
    s->cap = cap;
    s->bytes = size;
    s->max_slots = (uint32_t)slots;
    s->mask = SUM_SLOTS_MIN - 1u;
    s->slots = (uint32_t *)(void *)(b + o_slots);
    s->fn = (sum_fn_t *)(void *)(b + o_fn);
    s->frames = (sum_frame_t *)(void *)(b + o_frames);
    s->hist = (uint64_t *)(void *)(b + o_hist);
    s->next_at = g_sum_every ? clock_now() + g_sum_every : UINT64_MAX;
    return s;
}

/* The thread's table unmapped (thread exit; fork: the parent's copy). */
TR_NOINSTR static void sum_free(tl_state_t *t)
{
    if (t->sum)
        munmap(t->sum, (size_t)t->sum->bytes);
    t->sum = NULL;
}

/* Clock units to ns without a division (see g_ns_mult). */
TR_NOINSTR static inline uint64_t sum_ns(uint64_t d)
{
    if (!g_ticks)
        return d;
    uint64_t mask = ((uint64_t)1 << g_ns_shift) - 1;
    return (d >> g_ns_shift) * g_ns_mult + (((d & mask) * g_ns_mult) >> g_ns_shift);
}

/* g_ns_mult < 2^32, so that (d & mask) * mult cannot overflow. */
TR_NOINSTR static void sum_clock_init(void)
{
    g_ns_shift = 32;
    while (g_ticks && g_ns_shift > 0 && (1000000000ull << g_ns_shift) / g_tick_hz >= ((uint64_t)1 << 32))
        g_ns_shift--;
    g_ns_mult = g_ticks ? (1000000000ull << g_ns_shift) / g_tick_hz : 1;
}

TR_NOINSTR static TR_HOT_INLINE uint32_t sum_slot_of(uint64_t addr, uint32_t mask)
{
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

/* The hash at half full: twice as many slots, every function put back from
 * s->fn (which holds their addresses), within the mapping, so no memory is
 * asked for; a dozen times at most in a thread's life, each O(functions). */
TR_NOINSTR static TR_COLD void sum_grow(sum_table_t *s)
{
    s->mask = s->mask * 2u + 1u;
    memset(s->slots, 0, ((size_t)s->mask + 1u) * sizeof *s->slots);
    for (uint32_t k = 0; k < s->nfn; k++) {
        uint32_t i = sum_slot_of(s->fn[k].addr, s->mask);
        while (s->slots[i])
            i = (i + 1) & s->mask;
        s->slots[i] = k + 1;
    }
}

/* The function's place in the table, added on first sight; SUM_NONE when
 * the table is full. */
TR_NOINSTR static TR_HOT_INLINE uint32_t sum_lookup(sum_table_t *s, uint64_t addr)
{
    uint32_t i = sum_slot_of(addr, s->mask);
    for (;;) {
        uint32_t v = s->slots[i];
        if (!v)
            break;
        if (s->fn[v - 1].addr == addr)
            return v - 1;
        i = (i + 1) & s->mask;
    }
    if (s->nfn >= s->cap)
        return SUM_NONE;
    if (TR_UNLIKELY(2u * (uint64_t)(s->nfn + 1u) > (uint64_t)s->mask + 1u && s->mask + 1u < s->max_slots)) {
        sum_grow(s);
        i = sum_slot_of(addr, s->mask);
        while (s->slots[i])
            i = (i + 1) & s->mask;
    }
    s->fn[s->nfn].addr = addr;
    s->fn[s->nfn].min = UINT64_MAX;
    s->slots[i] = ++s->nfn;
    return s->nfn - 1;
}

/* Inclusive time is counted once per outermost frame of a function, as
 * the analyzer does in event mode: a call made inside another call of the
 * same function (recursion, direct or not) adds its calls, self time, min,
 * max and histogram, but not its inclusive time, which its outer frame
 * already holds.  Knowing that at the exit without a look down the stack
 * on every call: a counter per hash of the function, raised at entry and
 * lowered at exit; a counter left at zero means no other frame of the
 * function is open (the common case, one compare), anything else means
 * maybe (recursion, or another open function with the same hash), and
 * only then are the open frames searched. */
TR_NOINSTR static TR_HOT_INLINE uint32_t *sum_open_at(sum_table_t *s, uint64_t addr)
{
    return &s->open[(addr * 0x9e3779b97f4a7c15ull) >> (64u - SUM_OPEN_BITS)];
}

/* Whether a frame of addr is open below the frame just closed (frames 0
 * to sp - 1): its inclusive time then belongs to that outer frame. */
TR_NOINSTR static TR_HOT_INLINE int sum_nested(sum_table_t *s, uint64_t addr)
{
    uint32_t *c = sum_open_at(s, addr);
    if (TR_LIKELY(--*c == 0))
        return 0;
    for (uint32_t k = s->sp; k > 0; k--)
        if (s->frames[k - 1].addr == addr)
            return 1;
    return 0;
}

TR_NOINSTR static TR_HOT_INLINE int sum_enter(tl_state_t *t, uintptr_t func, uint64_t now)
{
    sum_table_t *s = t->sum;
    if (TR_UNLIKELY(s->sp >= g_sum_depth || s->deep)) {
        s->deep++;
        return 0;
    }
    ++*sum_open_at(s, (uint64_t)func);
    sum_frame_t *f = &s->frames[s->sp++];
    f->addr = (uint64_t)func;
    f->start = now;
    f->child = 0;
    f->tracer_at = s->tracer;
    return 0;
}

/* The call in frame f ended at now: its times added.  Nonzero when a
 * snapshot is due. */
TR_NOINSTR static TR_HOT_INLINE int sum_close(sum_table_t *s, const sum_frame_t *f, uint64_t now)
{
    uint64_t ns = sum_ns(now > f->start ? now - f->start : 0), tr = s->tracer - f->tracer_at;
    ns = ns > tr ? ns - tr : 0;
    uint64_t self = ns > f->child ? ns - f->child : 0;
    int nested = sum_nested(s, f->addr);
    if (s->sp)
        s->frames[s->sp - 1].child += ns;
    uint32_t i = sum_lookup(s, f->addr);
    if (TR_UNLIKELY(i == SUM_NONE)) {
        s->over_calls++;
    } else {
        sum_fn_t *e = &s->fn[i];
        uint32_t block, b = trace_summary_bucket(ns, &block);
        e->calls++;
        e->incl += nested ? 0 : ns;
        e->self += self;
        e->min = ns < e->min ? ns : e->min;
        e->max = ns > e->max ? ns : e->max;
        e->blocks |= (uint64_t)1 << block;
        (*sum_hist_at(s, i, b))++;
    }
    return now >= s->next_at;
}

/* An exit that is not the top frame's: inherited (fork, TRACE_THREADS),
 * or frames skipped by longjmp, or no open call at all. */
TR_NOINSTR static TR_COLD int sum_exit_odd(tl_state_t *t, uintptr_t func, uint64_t now)
{
    sum_table_t *s = t->sum;
    if (s->sp == 0) {
        if (t->inherited > 0)
            t->inherited--;
        else
            s->unmatched++;
        return 0;
    }
    uint32_t k = s->sp;
    while (k > 0 && s->frames[k - 1].addr != (uint64_t)func)
        k--;
    if (k == 0) {
        s->unmatched++;
        return 0;
    }
    s->unmatched += s->sp - k; /* abandoned by a longjmp: never closed */
    for (uint32_t j = k; j < s->sp; j++)
        --*sum_open_at(s, s->frames[j].addr);
    s->sp = k - 1;
    return sum_close(s, &s->frames[k - 1], now);
}

TR_NOINSTR static TR_HOT_INLINE int sum_exit(tl_state_t *t, uintptr_t func, uint64_t now)
{
    sum_table_t *s = t->sum;
    if (TR_UNLIKELY(s->deep)) {
        s->deep--;
        s->deep_calls++;
        return 0;
    }
    if (TR_UNLIKELY(s->sp == 0 || s->frames[s->sp - 1].addr != (uint64_t)func))
        return sum_exit_odd(t, func, now);
    s->sp--;
    return sum_close(s, &s->frames[s->sp], now);
}

/* One record of a snapshot into the batch, which goes out when it holds a
 * batch's worth.  0, or -1 when it could not go out (the ring was busy and
 * the flush was deferred): the snapshot is then abandoned, torn, and what
 * of it is staged goes out later and is ignored by the reader; the next
 * snapshot, cumulative, loses nothing. */
TR_NOINSTR static int sum_put(tl_state_t *t, int final, uint8_t part, uint64_t ts, uint64_t func, uint64_t site)
{
    uint8_t end = (uint8_t)(part == TRACE_SUMMARY_END ? TRACE_SUMMARY_ENDS | (unsigned)final : 0);
    final = final != 0;
    if (t->n + TL_NOTE_SLOTS >= g_batch) {
        tl_flush(t, final);
        if (t->n + TL_NOTE_SLOTS >= g_batch)
            return -1;
    }
    trace_event_t *e = &t->buf[TL_HEAD + t->n++];
    memset(e, 0, sizeof *e);
    e->ts = ts;
    e->func = func;
    e->call_site = site;
    e->tid = t->tid;
    e->kind = TRACE_KIND_SUMMARY;
    e->pad[0] = part;
    e->pad[1] = end;
    return 0;
}

TR_NOINSTR static int sum_put_hist(tl_state_t *t, int final, const sum_table_t *s, uint32_t i)
{
    uint64_t blocks = s->fn[i].blocks;
    uint32_t held = TRACE_SUMMARY_NO_BUCKET;
    uint64_t held_n = 0;
    for (uint32_t b = 0; b < SUM_BLOCKS; b++) {
        if (!(blocks >> b & 1u))
            continue;
        uint32_t lo = b ? TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * (b - 1u) : 0;
        uint32_t hi = b ? lo + TRACE_SUMMARY_SUB : TRACE_SUMMARY_EXACT;
        for (uint32_t k = lo; k < hi; k++) {
            uint64_t n = *sum_hist_at(s, i, k);
            if (!n)
                continue;
            if (held == TRACE_SUMMARY_NO_BUCKET) {
                held = k;
                held_n = n;
                continue;
            }
            if (sum_put(t, final, TRACE_SUMMARY_BUCKETS, held_n, n, (uint64_t)held << 32 | k) < 0)
                return -1;
            held = TRACE_SUMMARY_NO_BUCKET;
        }
    }
    if (held == TRACE_SUMMARY_NO_BUCKET)
        return 0;
    return sum_put(t, final, TRACE_SUMMARY_BUCKETS, held_n, 0, (uint64_t)held << 32 | TRACE_SUMMARY_NO_BUCKET);
}

/* The parts of one snapshot; -1 when it had to be abandoned (sum_put). */
TR_NOINSTR static int sum_put_all(tl_state_t *t, int final, sum_table_t *s, uint64_t start, uint64_t seq)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nfn; i++)
        n += s->fn[i].calls > 0;
    if (sum_put(t, final, TRACE_SUMMARY_BEGIN, start, seq, n) < 0)
        return -1;
    for (uint32_t i = 0; i < s->nfn; i++) {
        const sum_fn_t *e = &s->fn[i];
        if (!e->calls)
            continue;
        if (sum_put(t, final, TRACE_SUMMARY_FUNC, e->incl, e->addr, e->calls) < 0 ||
            sum_put(t, final, TRACE_SUMMARY_TIMES, e->self, e->min, e->max) < 0 || sum_put_hist(t, final, s, i) < 0)
            return -1;
    }
    if (sum_put(t, final, TRACE_SUMMARY_META, s->over_calls, s->deep_calls, s->unmatched) < 0)
        return -1;
    uint64_t end = clock_now();
    s->tracer += clock_span_ns(start, end);
    return sum_put(t, final, TRACE_SUMMARY_END, end, seq, s->tracer);
}

/* A flush outside a snapshot took ns of this thread's time: its open
 * frames do not count it, as analyze takes the same ns (the flush's
 * TRACE_MARK_TRACER_TIME) out of the events' open frames. */
TR_NOINSTR static void sum_tracer_time(tl_state_t *t, uint64_t ns)
{
    t->sum->tracer += ns;
}

/* The thread's totals so far, as one snapshot (trace.h).  Its time is the
 * tracer's: added to s->tracer, so open frames do not count it.  final: a
 * trace_summary_end; at the thread's (or process's) end the caller's last
 * flush sends it. */
TR_NOINSTR static TR_COLD void sum_snapshot(tl_state_t *t, int final)
{
    sum_table_t *s = t->sum;
    if (!s || stopped())
        return;
    int saved = errno;
    uint64_t start = clock_now(), mark = start;
    if (sum_put_all(t, final, s, start, ++s->seq) == 0) {
        mark = clock_now();
        t->sum_writing = 1;
        if (!final)
            tl_flush(t, 0);
        t->sum_writing = 0;
    }
    s->tracer += clock_span_ns(mark, clock_now()); /* the last write, too */
    s->next_at = g_sum_every ? clock_now() + g_sum_every : UINT64_MAX;
    errno = saved;
}

