/*
 * trace_clock.c - the clock every event is stamped with.
 *
 * Raw ticks where the CPU has a cheap constant-rate counter (x86-64 invariant
 * TSC, aarch64 generic timer), else CLOCK_MONOTONIC ns.  Ticks are converted
 * by the analyzer from tick_hz and the t0 anchor in the header.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR static uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#define CLOCK_HAS_TICKS 1
TR_NOINSTR static inline uint64_t clock_ticks(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* Only an invariant TSC (CPUID 0x80000007 EDX bit 8) ticks at one rate
 * across frequency changes, sleep states and cores. */
TR_NOINSTR static int clock_ticks_trusted(void)
{
    uint32_t a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0u));
    if (a < 0x80000007u)
        return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0u));
    return (int)(d >> 8 & 1u);
}

TR_NOINSTR static uint64_t clock_ticks_hz(void) { return 0; /* calibrate */ }
#elif defined(__aarch64__)
#define CLOCK_HAS_TICKS 1
TR_NOINSTR static inline uint64_t clock_ticks(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

/* The generic timer runs at a fixed rate by architecture. */
TR_NOINSTR static int clock_ticks_trusted(void) { return 1; }

TR_NOINSTR static uint64_t clock_ticks_hz(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
    return v;
}
#else
#define CLOCK_HAS_TICKS 0
TR_NOINSTR static inline uint64_t clock_ticks(void) { return clock_mono_ns(); }
TR_NOINSTR static int clock_ticks_trusted(void) { return 0; }
TR_NOINSTR static uint64_t clock_ticks_hz(void) { return 0; }
#endif

/* The one branch is on a value fixed at start, so it predicts perfectly. */
TR_NOINSTR static inline uint64_t clock_now(void)
{
    return g_ticks ? clock_ticks() : clock_mono_ns();
}

/* Ticks and CLOCK_MONOTONIC at (nearly) one instant: the tightest of a few
 * tries, the ns taken from the middle of the window. */
TR_NOINSTR static void clock_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = clock_mono_ns(), t = clock_ticks(), b = clock_mono_ns();
        if (b - a < best) {
            best = b - a;
            *ticks = t;
            *ns = a + (b - a) / 2;
        }
    }
}

/* Tick rate over a short sleep.  Only a first estimate: with the exit anchor
 * the analyzer measures the rate across the whole run. */
TR_NOINSTR static uint64_t clock_calibrate(uint64_t t0, uint64_t n0)
{
    struct timespec d = {0, CLOCK_CALIBRATE_NS};
    uint64_t t1, n1;
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    clock_pair(&t1, &n1);
    if (n1 <= n0 || t1 <= t0)
        return 0;
    return (uint64_t)((double)(t1 - t0) * 1e9 / (double)(n1 - n0) + 0.5);
}

TR_NOINSTR static void clock_init(int mode)
{
    if (mode == CLOCK_TSC && !CLOCK_HAS_TICKS)
        say("TRACE_CLOCK=tsc: no tick counter on this machine; using mono", (char *)0);
    if (CLOCK_HAS_TICKS && (mode == CLOCK_TSC || (mode == CLOCK_AUTO && clock_ticks_trusted()))) {
        g_tick_hz = clock_ticks_hz();
        clock_pair(&g_t0_ticks, &g_t0_ns);
        if (g_tick_hz == 0)
            g_tick_hz = clock_calibrate(g_t0_ticks, g_t0_ns);
        g_ticks = g_tick_hz != 0;
        if (g_ticks)
            return;
    }
    g_tick_hz = 0;
    g_t0_ns = g_t0_ticks = clock_mono_ns();
}

