/*
 * trace.c - callsight's runtime, compiled into the traced program.
 *
 * `cc -finstrument-functions` makes every instrumented function call
 * __cyg_profile_func_enter on entry and __cyg_profile_func_exit on return.
 * This file implements the two hooks and everything around them:
 *
 *   hook:  stamp the clock, append a 32-byte event to this thread's buffer
 *          (thread-local: no lock, no allocation, no I/O)
 *   flush: when the buffer is full, when its batch is TRACE_FLUSH_MS old
 *          (judged at a hook, by the clock it reads anyway), when the
 *          thread exits, at process exit
 *     file mode    append to TRACE_DIR/trace.<pid>.<tid>.<seq>.bin, one
 *                  series of segments per thread, within a per-process budget
 *     stream mode  (TRACE_SHM=/name) copy the batch into a POSIX shared-memory
 *                  ring that trace_stream (stream/) drains off the device;
 *                  the process holds a shared flock on the ring while it
 *                  lives (trace_stream's proof that it did not die), and a
 *                  ring lock left by a dead holder is taken over
 *
 * The layouts are fixed by trace.h (event, file header, marker codes) and
 * trace_shm.h (ring header).  Everything is configured once, in a
 * constructor, from the environment; the program calls nothing.
 *
 * The rules kept here (DEVELOPERS.md): the traced program never waits on us
 * for long; when a sink cannot keep up we drop and count, in-band, so loss is
 * never silent; every wait and every buffer is bounded.
 *
 * Build with one cc line, C11, libc and pthread only, and never with
 * -finstrument-functions: the hooks must not trace themselves.
 */
#define _GNU_SOURCE            /* syscall(), dl_iterate_phdr(), shm_open() */
#define _FILE_OFFSET_BITS 64   /* segments past 2 GiB on 32-bit systems */

#include "trace.h"
#include "trace_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#if defined(__linux__)
#include <sys/prctl.h> /* PR_GET_NAME: the thread's name for the trace */
#endif
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if !defined(__GNUC__)
#error "callsight's runtime needs GCC or Clang (constructor and -finstrument-functions)"
#endif

#define TR_NOINSTR __attribute__((no_instrument_function))
#define TR_COLD __attribute__((noinline, cold))
#define TR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TR_LIKELY(x) __builtin_expect(!!(x), 1)
/* The steps of a hook: inlined into each hook, whatever the compiler's size
 * heuristics say, so a hook is one function with no call on its way. */
#define TR_HOT_INLINE inline __attribute__((always_inline))

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TR_BIG_ENDIAN 1 /* files are little-endian: convert before writing */
#endif

/* ---- tunables ------------------------------------------------------------ */

/* Events per thread buffer.  64 KiB of TLS per thread: small enough for
 * threads with small stacks, large enough that a flush's cost is spread over
 * many events.  File mode flushes it when full; stream mode flushes at half
 * (g_batch) so that a flush that finds the ring's lock taken can try again
 * later while the thread keeps recording into the other half. */
#ifndef TRACE_BUF_EVENTS
#define TRACE_BUF_EVENTS 2048u
#endif

_Static_assert(TRACE_BUF_EVENTS >= 64u, "a flush should carry a real batch");

/* File mode's batch once a thread has flushed its first: 256 KiB, mapped
 * then (not in TLS, so small stacks stay fine, and a thread that never
 * fills one batch costs nothing more).  The kernel's write path costs less
 * per byte in larger writes (docs/performance.md, 2026-12-02: 64 KiB
 * pwrites took 1.5x the system time of 256 KiB ones), and a quarter of the
 * flushes means a quarter of the syscalls. */
#ifndef FILE_BUF_EVENTS
#define FILE_BUF_EVENTS (4u * TRACE_BUF_EVENTS)
#endif

_Static_assert(FILE_BUF_EVENTS >= TRACE_BUF_EVENTS, "the file-mode buffer only ever grows");

#define TL_HEAD 6u /* slots before the events: PROCESS, LOAD_BIAS, BUILD_ID, THREAD_NAME,
                    * THREAD_LOST, THREAD_RESYNC */
#define TRIG_DEPTH 16u /* TRACE_TRIGGER: recursive calls timed (deeper ones are not checked) */
#define TRIG_STACK 64u /* ... and the innermost open functions a slow call's stack carries */
#define TL_TAIL 3u /* slots after them: THREAD_EXIT, CLOCK_ANCHOR, WRAP */
#define WRAP_SEG_MIN (4u * TRACE_BUF_EVENTS * 32u) /* TRACE_FULL=wrap: a segment holds a few flushes */

#define EV_BYTES ((uint64_t)TRACE_EVENT_SIZE)
#define HDR_BYTES ((uint64_t)TRACE_FILE_HEADER_SIZE)
#define MIB ((uint64_t)1 << 20)
#define CFG_MB_MAX ((uint64_t)1 << 24) /* 16 TiB: any larger is a typo */

#define DEFAULT_DIR "./traces"
#define DEFAULT_MAX_MB 512u
#define DEFAULT_SEG_MB 64u
#define FILE_NAME_ROOM 64u     /* "/trace.<pid>.<tid>.<seq>.bin" fits */
#define FILE_MAX_TRIES 100000u /* names skipped because taken, at most */

#ifndef RING_SPINS
#define RING_SPINS 256u        /* lock attempts with a pause between ... */
#endif
#ifndef RING_YIELDS
#define RING_YIELDS 4u         /* ... then with sched_yield, then give up */
#endif
/* A flush that gave up retries after this many more events, until the
 * buffer is full; only then is the batch dropped. */
#define RING_FINAL_WAIT_NS 50000000u /* a thread's last flush waits up to 50 ms, since a
                                      * lock holder preempted on a busy machine (or under
                                      * qemu) can be off its CPU for tens of ms */
#define RING_RETRY_EVENTS(batch) ((batch) / 8u > 0u ? (batch) / 8u : 1u)
#define RING_NAP_FIRST_NS 10000u    /* a waiting flush sleeps this long first, */
#define RING_NAP_MAX_NS 1000000u    /* doubling up to this */
#define CFG_WAIT_US_MAX 60000000u   /* TRACE_SHM_WAIT_US: a minute at most */
#define TL_NOTE_SLOTS 2u            /* TRACER_TIME and TRACER_WAIT after a flush */
#define THREADS_MAX 255u            /* TRACE_THREADS: bytes of globs kept */
#define IGNORED_EAGER 64u           /* an untraced thread checks its name at each of
                                     * its first hooks (names are set early) ... */
#define IGNORED_GAP_MAX 4096u       /* ... then ever less often, down to one in this many */
#define RING_OPEN_WAIT_NS 200000000u /* for another process to set up a ring */

/* TRACE_FLUSH_MS: a partial batch this old goes out at the thread's next
 * hook, so that a viewer (callsight top) sees a quiet thread's events soon
 * at the cost of at most one small flush per period per thread; a minute at
 * most, since past that nobody is watching live. */
#define FLUSH_MS_DEFAULT 100u
#define FLUSH_MS_MAX 60000u

#define CLOCK_CALIBRATE_NS 5000000u /* ticks vs CLOCK_MONOTONIC at start */
#define HOOK_PAIRS (TRACE_BUF_EVENTS / 4u) /* enter/exit pairs per timing round */

/* ---- process-wide state -------------------------------------------------
 * Written by the constructor before capture starts (then read-only), except
 * the atomics and what the fork child handler resets in its new process. */

enum stop_reason { STOP_NONE = 0, STOP_BUDGET, STOP_WRITE, STOP_EXIT };
enum clock_mode { CLOCK_AUTO, CLOCK_TSC, CLOCK_MONO };

static _Atomic int g_capture; /* the hooks' one flag: record while 1 */
enum hook_path { HOOK_STEP = 0, HOOK_EVENTS, HOOK_SUMMARY };
static int g_hook_path;       /* enum hook_path, set once before capture starts: the tick
                               * clock and events without TRACE_TRIGGER, or summaries
                               * alone, take tl_hook's inlined paths; the rest tl_step */
static _Atomic int g_stop;    /* enum stop_reason; the first stop wins */
static int g_started;         /* setup completed: exit/fork handlers act */
static pthread_key_t g_key;   /* its destructor flushes an exiting thread */
static uint32_t g_pid;

static uint32_t g_batch = TRACE_BUF_EVENTS; /* events per flush (a small ring: fewer) */
static int g_summary;         /* TRACE_MODE=summary: aggregates, not events (2: both, to compare) */
static uint32_t g_sum_funcs = 256u, g_sum_depth = 256u; /* TRACE_SUMMARY_FUNCS, _DEPTH */
static uint64_t g_sum_every;  /* TRACE_SUMMARY_MS in clock units; 0: at exits only */
static uint64_t g_flush_every; /* TRACE_FLUSH_MS in clock units; 0: full batches only */
static unsigned g_ns_shift;   /* ticks -> ns: (d >> shift) * mult + ((d & mask) * mult >> shift) */
static uint64_t g_ns_mult;
static uint64_t g_wait_ns;    /* TRACE_SHM_WAIT_US: how long a flush may wait for the ring */
static uint32_t g_buf_max = TRACE_BUF_EVENTS; /* events a deferred flush may grow to */
static int g_ticks;           /* ts are raw ticks (TRACE_FLAG_TICKS) */
static uint64_t g_tick_hz, g_t0_ticks, g_t0_ns, g_hook_ns, g_load_bias;
static uint64_t g_build_id[2];   /* BUILD_ID payload: bytes 0-7, 8-15 (trace.h) */
static int g_have_build_id;      /* the program has one: files start with it */
static char g_threads[THREADS_MAX + 1]; /* TRACE_THREADS globs, comma-separated; "" = all */
static _Atomic int g_announce_due; /* stream mode: LOAD_BIAS (+ BUILD_ID) not yet sent */
static uint64_t g_file_head;     /* a segment's bytes before its events */
static int g_wrap;               /* TRACE_FULL=wrap: the oldest segments go, not the capture */

static char g_dir[PATH_MAX];  /* absolute TRACE_DIR */
static uint64_t g_seg_bytes;  /* TRACE_SEG_MB: one file's size limit */
static uint64_t g_budget_max; /* TRACE_MAX_MB: all files of the process */
static uint64_t g_budget_soft; /* the same less room for the stop marker */
static _Atomic uint64_t g_budget_used; /* bytes reserved, before writing */

static trace_shm_header_t *g_ring; /* stream mode when non-NULL */
static unsigned char *g_ring_data;
static uint32_t g_ring_cap;   /* our copy: the shared one is not trusted */
static int g_ring_commit;     /* version 3: copies outside the lock, each batch committed */
static int g_ring_joined;     /* this process counts in `writers` */
static int g_ring_fd = -1;    /* kept open for its shared flock: proof of life */
static uintptr_t g_trig_func;  /* TRACE_TRIGGER: the function (runtime address; 0: none) */
static uint64_t g_trig_ns;     /* ... and the duration a call of it must exceed */
static _Atomic uint64_t g_trig_last_ms; /* when this process last asked for a snapshot */
static trace_shm_recorder_t *g_rec; /* the flight-recorder block, when the ring has one */
static size_t g_ring_map_len;  /* bytes mapped: header, storage (and the block) */

/* ---- messages -------------------------------------------------------------
 * One line on stderr, "callsight: " first.  write(2), not stdio: it may run
 * inside a flush, which may run inside a signal handler. */

__attribute__((sentinel)) static void say(const char *first, ...)
{
    char line[1024];
    size_t len = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        if (len == 0)
            len = strlen(strcpy(line, "callsight: "));
        size_t n = strlen(s);
        if (n > sizeof line - 1 - len)
            n = sizeof line - 1 - len;
        memcpy(line + len, s, n);
        len += n;
    }
    va_end(ap);
    line[len++] = '\n';
    ssize_t r = write(STDERR_FILENO, line, len);
    (void)r;
}

/* Decimal text of v in buf (at least 21 bytes); returns where it starts. */
static const char *num(uint64_t v, char *buf)
{
    char *p = buf + 20;
    *p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    return p;
}

/* ---- clock ----------------------------------------------------------------
 * Raw ticks where the CPU has a cheap constant-rate counter (x86-64 invariant
 * TSC, aarch64 generic timer), else CLOCK_MONOTONIC ns.  Ticks are converted
 * by the analyzer from tick_hz and the t0 anchor in the header. */

static uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#define CLOCK_HAS_TICKS 1
static inline uint64_t clock_ticks(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* Only an invariant TSC (CPUID 0x80000007 EDX bit 8) ticks at one rate
 * across frequency changes, sleep states and cores. */
static int clock_ticks_trusted(void)
{
    uint32_t a, b, c, d;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0u));
    if (a < 0x80000007u)
        return 0;
    __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0u));
    return (int)(d >> 8 & 1u);
}

static uint64_t clock_ticks_hz(void) { return 0; /* calibrate */ }
#elif defined(__aarch64__)
#define CLOCK_HAS_TICKS 1
static inline uint64_t clock_ticks(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

/* The generic timer runs at a fixed rate by architecture. */
static int clock_ticks_trusted(void) { return 1; }

static uint64_t clock_ticks_hz(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
    return v;
}
#else
#define CLOCK_HAS_TICKS 0
static inline uint64_t clock_ticks(void) { return clock_mono_ns(); }
static int clock_ticks_trusted(void) { return 0; }
static uint64_t clock_ticks_hz(void) { return 0; }
#endif

/* The one branch is on a value fixed at start, so it predicts perfectly. */
static inline uint64_t clock_now(void)
{
    return g_ticks ? clock_ticks() : clock_mono_ns();
}

/* Ticks and CLOCK_MONOTONIC at (nearly) one instant: the tightest of a few
 * tries, the ns taken from the middle of the window. */
static void clock_pair(uint64_t *ticks, uint64_t *ns)
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
static uint64_t clock_calibrate(uint64_t t0, uint64_t n0)
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

static void clock_init(int mode)
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

/* ---- per-thread state -------------------------------------------------------
 * Lives in TLS, zero at thread start.  `gate` guards it against the one
 * other party that can touch it: a signal handler on the same thread whose
 * instrumented code runs while a hook is half done.  Such hooks are dropped
 * (counted in `reentered`, reported as a loss at the next flush). */

enum tl_gate { TL_NEW = 0, TL_OPEN, TL_BUSY, TL_DEAD, TL_IGNORED /* TRACE_THREADS: not (yet) */ };

typedef struct tl_state {
    _Atomic int gate;            /* enum tl_gate */
    _Atomic uint32_t reentered;  /* hooks dropped because the gate was busy */
    uint32_t tid;
    uint32_t n;                  /* records at buf[TL_HEAD] on: enter/exit events and ... */
    uint32_t nmarks;             /* ... this many TRACER_TIME/WAIT markers among them */
    uint32_t ntail;              /* markers right after them */
    uint32_t flush_at;           /* n at which to flush: g_batch, later if deferred */
    int32_t depth;               /* enters - exits since the first event */
    uint64_t flush_by;           /* clock at which to flush a partial batch (TRACE_FLUSH_MS);
                                  * UINT64_MAX: never */
    int32_t batch_depth;         /* depth before the first buffered event */
    uint32_t inherited;          /* frames open at fork, or when tracing began: exits not recorded */
    int32_t ig_depth;            /* TL_IGNORED: enters - exits so far */
    uint32_t ig_hooks, ig_next, ig_gap; /* TL_IGNORED: hooks seen; when to look at the name next */
    uint64_t lost;               /* events lost since the last good flush */
    int32_t lost_low, lost_after; /* depth extremes around them (RESYNC) */
    int fd, has_fd;              /* file mode: the current segment */
    uint32_t seq;
    uint64_t seg_used;           /* bytes in it, header included */
    uint64_t seg_events;         /* enter/exit events in it (TRACE_FULL=wrap counts them when it goes) */
    char name[16];               /* the thread name last written out */
    char name_out[16];           /* the name the flush under way carries */
    uint32_t pid_sent;           /* stream mode: the pid its PROCESS marker gave */
    int carries_pid;             /* the flush under way carries PROCESS ... */
    int carries_announce;        /* ... and LOAD_BIAS (+ BUILD_ID) */
    struct sum_table *sum;       /* TRACE_MODE=summary: the thread's aggregates */
    uint64_t mod_list;           /* the module list it last wrote (0: none yet) */
    uint64_t rec_said_at;        /* flight recorder: the block's `overwritten` when it last wrote them */
    uint32_t trig_n;             /* TRACE_TRIGGER: calls of its function open (entered here) */
    int trig_pending;            /* ... a slow call's trigger waits for its batch to be in the ring */
    uint64_t trig_at[TRIG_DEPTH]; /* ... the clock at the entry of the innermost TRIG_DEPTH */
    uintptr_t trig_stack[TRIG_STACK]; /* ... the functions entered, by depth modulo TRIG_STACK, */
    int32_t trig_depth[TRIG_STACK];   /* ... and the depth each was entered at */
    trace_event_t *buf;          /* `own`, or file mode's larger buffer (file_buf_grow) */
    trace_event_t own[TL_HEAD + TRACE_BUF_EVENTS + TL_TAIL];
} tl_state_t;

static _Thread_local tl_state_t tl;

static void mark_fill(trace_event_t *e, uint64_t ts, uint32_t tid, uint64_t code, uint64_t payload)
{
    memset(e, 0, sizeof *e);
    e->ts = ts;
    e->func = code;
    e->call_site = payload;
    e->tid = tid;
    e->kind = TRACE_KIND_MARKER;
}

/* A marker to go out after the buffered events, with the next flush. */
static void tl_push_mark(tl_state_t *t, uint64_t ts, uint64_t code, uint64_t payload)
{
    if (t->ntail < TL_TAIL)
        mark_fill(&t->buf[TL_HEAD + t->n + t->ntail++], ts, t->tid, code, payload);
}

/* Nanoseconds between two clock_now() readings (0 if they run backwards). */
static uint64_t clock_span_ns(uint64_t from, uint64_t to)
{
    uint64_t d = to > from ? to - from : 0;
    if (!g_ticks)
        return d;
    /* in two parts, so that d * 1e9 cannot overflow */
    return d / g_tick_hz * 1000000000u + d % g_tick_hz * 1000000000u / g_tick_hz;
}

/* The flush that began at `start` is over: say so in the thread's records,
 * at this point of its sequence (after the event whose hook flushed), so
 * the analyzer takes the time out of the frames open here
 * (TRACE_MARK_TRACER_TIME), and how much of it went on waiting for the ring
 * (TRACE_MARK_TRACER_WAIT).  Every caller leaves TL_NOTE_SLOTS free. */
static void tl_note_tracer(tl_state_t *t, uint64_t start, uint64_t waited_ns)
{
    uint64_t took = clock_span_ns(start, clock_now());
    mark_fill(&t->buf[TL_HEAD + t->n++], start, t->tid, TRACE_MARK_TRACER_TIME, took);
    t->nmarks++;
    if (waited_ns) {
        mark_fill(&t->buf[TL_HEAD + t->n++], start, t->tid, TRACE_MARK_TRACER_WAIT, waited_ns);
        t->nmarks++;
    }
}

/* The clock at which a batch begun at `now` is due out whatever its size
 * (TRACE_FLUSH_MS later); UINT64_MAX when only full batches go. */
static uint64_t tl_flush_deadline(uint64_t now)
{
    return g_flush_every && now <= UINT64_MAX - g_flush_every ? now + g_flush_every : UINT64_MAX;
}

/* The hot path proper: depth, clock, 32 bytes.  Returns nonzero when a
 * flush is due: the buffer is full, or its batch is older than
 * TRACE_FLUSH_MS.  The age costs one compare of the clock just read, so an
 * idle thread costs nothing: its next hook, whenever it comes, flushes.
 * An exit from a frame inherited across fork is not recorded, so the
 * child's trace holds only the frames it entered. */
static inline int tl_record_at(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind, int ticks)
{
    if (kind == TRACE_KIND_ENTER)
        t->depth++;
    else if (TR_UNLIKELY(t->depth == 0 && t->inherited > 0)) {
        t->inherited--;
        return 0;
    } else
        t->depth--;
    trace_event_t *e = &t->buf[TL_HEAD + t->n++];
    uint64_t now = ticks ? clock_ticks() : clock_now();
    e->ts = now;
    e->func = (uint64_t)func;
    e->call_site = (uint64_t)site;
    e->tid = t->tid;
    e->kind = kind;
    e->pad[0] = e->pad[1] = e->pad[2] = 0;
    return (t->n >= t->flush_at) | (now >= t->flush_by); /* |: no second branch */
}

/* `ticks` is a constant at every call: 1 only where g_ticks is known set
 * (tl_hook's events path), so that path reads the counter without testing
 * g_ticks again. */
static inline int tl_record(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    return tl_record_at(t, func, site, kind, 0);
}

/* First event of a thread: its tid, and the key whose destructor will flush
 * it at thread exit (key values are only set per thread, so here). */
static struct sum_table *sum_alloc(void);

/* Events per batch for this thread: file mode's larger once it has one. */
static uint32_t tl_batch(const tl_state_t *t)
{
    return t->buf != t->own ? FILE_BUF_EVENTS : g_batch;
}

static void tl_start(tl_state_t *t)
{
    int saved = errno;
    t->tid = (uint32_t)syscall(SYS_gettid);
    if (!t->buf) /* TLS starts zeroed; a forked child keeps what its parent had */
        t->buf = t->own;
    t->flush_at = tl_batch(t);
    t->flush_by = tl_flush_deadline(clock_now());
    if (g_summary && !t->sum)
        t->sum = sum_alloc();
    (void)pthread_setspecific(g_key, t);
    errno = saved;
}

/* Hooks dropped by the gate come in whole enter/exit pairs (the handler ran
 * to completion inside one hook), so the depth around them is unchanged. */
static uint64_t tl_take_reentered(tl_state_t *t)
{
    uint32_t r = atomic_exchange_explicit(&t->reentered, 0, memory_order_relaxed);
    if (r && t->lost == 0)
        t->lost_low = t->lost_after = t->batch_depth;
    t->lost += r;
    return r;
}

/* The buffered batch is lost: remember how many events and the depths the
 * analyzer needs to repair its stack (cold: walks the batch). */
static void tl_note_drop(tl_state_t *t)
{
    int32_t d = t->batch_depth, low = d;
    for (uint32_t i = 0; i < t->n; i++) {
        uint8_t kind = t->buf[TL_HEAD + i].kind;
        if (kind == TRACE_KIND_ENTER)
            d++;
        else if (kind == TRACE_KIND_EXIT && --d < low)
            low = d;
    }
    if (t->lost == 0 || low < t->lost_low)
        t->lost_low = low;
    t->lost_after = d;
    t->lost += t->n - t->nmarks;
}

/* The thread's name into t->name_out; nonzero when it is not the one last
 * written out (names are usually set after a thread's first events, so
 * every flush looks: one system call per batch, off the hot path). */
static int tl_name_changed(tl_state_t *t)
{
    memset(t->name_out, 0, sizeof t->name_out);
#if defined(__linux__)
    if (prctl(PR_GET_NAME, t->name_out, 0, 0, 0) != 0)
        return 0;
    t->name_out[sizeof t->name_out - 1] = 0;
#endif
    return t->name_out[0] && memcmp(t->name_out, t->name, sizeof t->name) != 0;
}

/* Eight name bytes as a little-endian integer (trace.h, THREAD_NAME), so
 * they read the same after any byte swapping of the field. */
static uint64_t name_bytes(const char *s)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | (unsigned char)s[i];
    return v;
}

/* Puts the head markers just before the batch.  Stream mode, where several
 * processes may share the ring: PROCESS in a thread's first flush (and its
 * first after a fork), and with it, until this process has sent them once,
 * LOAD_BIAS and BUILD_ID: the process's announcement, so every record of it
 * that follows can be told apart and symbolized against its own binary.
 * Then THREAD_NAME when the name is new, THREAD_LOST and THREAD_RESYNC when
 * something was lost since the last good flush.  Returns the index the
 * flush starts at. */
static uint32_t tl_head_marks(tl_state_t *t)
{
    uint32_t first = TL_HEAD;
    uint64_t ts = t->n ? t->buf[TL_HEAD].ts : clock_now();
    if (t->lost) {
        uint64_t depths = (uint64_t)(uint32_t)t->lost_after << 32 | (uint32_t)t->lost_low;
        mark_fill(&t->buf[TL_HEAD - 2], ts, t->tid, TRACE_MARK_THREAD_LOST, t->lost);
        mark_fill(&t->buf[TL_HEAD - 1], ts, t->tid, TRACE_MARK_THREAD_RESYNC, depths);
        first = TL_HEAD - 2;
    }
    if (tl_name_changed(t)) {
        first--;
        mark_fill(&t->buf[first], name_bytes(t->name_out + 8), t->tid, TRACE_MARK_THREAD_NAME,
                  name_bytes(t->name_out));
    }
    t->carries_announce = g_ring && atomic_load_explicit(&g_announce_due, memory_order_relaxed);
    t->carries_pid = g_ring && (t->carries_announce || t->pid_sent != g_pid);
    if (t->carries_announce && g_have_build_id)
        mark_fill(&t->buf[--first], g_build_id[1], t->tid, TRACE_MARK_BUILD_ID, g_build_id[0]);
    if (t->carries_announce)
        mark_fill(&t->buf[--first], ts, t->tid, TRACE_MARK_LOAD_BIAS, g_load_bias);
    if (t->carries_pid)
        mark_fill(&t->buf[--first], ts, t->tid, TRACE_MARK_PROCESS, g_pid);
    return first;
}

/* The head markers went out: the loss is reported, the name known, and the
 * process announced (another thread may have done it too: harmless). */
static void tl_head_sent(tl_state_t *t)
{
    if (t->carries_announce)
        atomic_store_explicit(&g_announce_due, 0, memory_order_relaxed);
    if (t->carries_pid)
        t->pid_sent = g_pid;
    t->lost = 0;
    if (t->name_out[0])
        memcpy(t->name, t->name_out, sizeof t->name);
}

/* ---- capture stop and file budget ----------------------------------------- */

static int stopped(void)
{
    return atomic_load_explicit(&g_stop, memory_order_acquire) != STOP_NONE;
}

/* Stops capture for the whole process; nonzero for the caller that stopped
 * it first, which alone writes the stop marker. */
static int stop_claim(int reason)
{
    int none = STOP_NONE;
    int won = atomic_compare_exchange_strong_explicit(&g_stop, &none, reason, memory_order_acq_rel,
                                                      memory_order_acquire);
    atomic_store_explicit(&g_capture, 0, memory_order_relaxed);
    return won;
}

/* Reserves bytes of the process budget before they are written, so that
 * concurrent threads together never pass `limit`. */
/* ---- TRACE_FULL=wrap ---------------------------------------------------------
 * The budget (TRACE_MAX_MB) holds the most recent part of the whole
 * process's trace: segments are small (a 32nd of the budget), every closed
 * one joins one queue in the order they closed, and a flush that finds the
 * budget spent removes the oldest (any thread's) until its bytes fit.  Each
 * new segment starts with TRACE_MARK_WRAP: the events removed so far, which
 * every thread's last flush repeats; readers take the largest.  The queue
 * is the only shared state, under a mutex held for a few stores and never
 * across I/O (the unlink happens after). */
#define WRAP_SEGS 4096u

typedef struct wrap_seg {
    uint32_t tid, seq;
    uint64_t bytes, events;
} wrap_seg_t;

static wrap_seg_t g_wrap_q[WRAP_SEGS];
static uint32_t g_wrap_first, g_wrap_n;
static pthread_mutex_t g_wrap_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_wrap_discarded; /* events in the segments removed */

static void file_path(char *out, uint32_t tid, uint32_t seq);

/* Remove the oldest closed segment; 0 when there is none. */
static int wrap_reclaim(void)
{
    wrap_seg_t s;
    pthread_mutex_lock(&g_wrap_lock);
    int have = g_wrap_n > 0;
    if (have) {
        s = g_wrap_q[g_wrap_first];
        g_wrap_first = (g_wrap_first + 1) % WRAP_SEGS;
        g_wrap_n--;
    }
    pthread_mutex_unlock(&g_wrap_lock);
    if (!have)
        return 0;
    char path[sizeof g_dir + FILE_NAME_ROOM];
    file_path(path, s.tid, s.seq);
    unlink(path);
    atomic_fetch_add_explicit(&g_wrap_discarded, s.events, memory_order_relaxed);
    atomic_fetch_sub_explicit(&g_budget_used, s.bytes, memory_order_relaxed);
    return 1;
}

/* A segment was closed: it may go when room is needed.  A full queue
 * makes its oldest go now. */
static void wrap_enqueue(uint32_t tid, uint32_t seq, uint64_t bytes, uint64_t events)
{
    for (;;) {
        pthread_mutex_lock(&g_wrap_lock);
        if (g_wrap_n < WRAP_SEGS) {
            g_wrap_q[(g_wrap_first + g_wrap_n++) % WRAP_SEGS] = (wrap_seg_t){tid, seq, bytes, events};
            pthread_mutex_unlock(&g_wrap_lock);
            return;
        }
        pthread_mutex_unlock(&g_wrap_lock);
        (void)wrap_reclaim();
    }
}

/* A thread's last flush says how much has gone in all so far. */
static void wrap_note(tl_state_t *t)
{
    uint64_t gone = atomic_load_explicit(&g_wrap_discarded, memory_order_relaxed);
    if (g_wrap && gone)
        tl_push_mark(t, clock_now(), TRACE_MARK_WRAP, gone);
}

/* fork: the child's files are its own, and so is its queue. */
static void wrap_fork_child(void)
{
    pthread_mutex_init(&g_wrap_lock, NULL); /* another thread may have held it at the fork */
    g_wrap_first = g_wrap_n = 0;
    atomic_store_explicit(&g_wrap_discarded, 0, memory_order_relaxed);
}

static int budget_take(uint64_t bytes, uint64_t limit)
{
    uint64_t used = atomic_load_explicit(&g_budget_used, memory_order_relaxed);
    do {
        if (bytes > limit || used > limit - bytes)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&g_budget_used, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 1;
}

/* ---- file mode -------------------------------------------------------------
 * Each thread writes its own series trace.<pid>.<tid>.<seq>.bin: an 80-byte
 * header, then its events.  A segment is never larger than TRACE_SEG_MB and
 * never overwritten; all files of the process fit in TRACE_MAX_MB. */

#define FILE_OVER_BUDGET (-1)

static void file_to_le(trace_event_t *ev, uint32_t count)
{
#ifdef TR_BIG_ENDIAN
    for (uint32_t i = 0; i < count; i++) {
        ev[i].ts = __builtin_bswap64(ev[i].ts);
        ev[i].func = __builtin_bswap64(ev[i].func);
        ev[i].call_site = __builtin_bswap64(ev[i].call_site);
        ev[i].tid = __builtin_bswap32(ev[i].tid);
    }
#else
    (void)ev;
    (void)count;
#endif
}

static void file_header(trace_file_header_t *h, uint32_t seq)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, TRACE_FILE_MAGIC, sizeof h->magic);
    h->version = g_summary ? TRACE_FILE_VERSION_SUMMARY : TRACE_FILE_VERSION;
    h->event_size = TRACE_EVENT_SIZE;
    h->header_size = TRACE_FILE_HEADER_SIZE;
    h->flags = (g_ticks ? TRACE_FLAG_TICKS : 0) |
               (atomic_load_explicit(&g_wrap_discarded, memory_order_relaxed) ? TRACE_FLAG_WRAPPED : 0);
    h->load_bias = g_load_bias;
    h->tick_hz = g_tick_hz;
    h->t0_ticks = g_t0_ticks;
    h->t0_ns = g_t0_ns;
    h->hook_ns = g_hook_ns;
    h->pid = g_pid;
    h->seq = seq;
#ifdef TR_BIG_ENDIAN
    h->version = __builtin_bswap32(h->version);
    h->event_size = __builtin_bswap32(h->event_size);
    h->header_size = __builtin_bswap32(h->header_size);
    h->flags = __builtin_bswap32(h->flags);
    h->load_bias = __builtin_bswap64(h->load_bias);
    h->tick_hz = __builtin_bswap64(h->tick_hz);
    h->t0_ticks = __builtin_bswap64(h->t0_ticks);
    h->t0_ns = __builtin_bswap64(h->t0_ns);
    h->hook_ns = __builtin_bswap64(h->hook_ns);
    h->pid = __builtin_bswap32(h->pid);
    h->seq = __builtin_bswap32(h->seq);
#endif
}

static char *file_put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* g_dir is at most sizeof g_dir - FILE_NAME_ROOM long (checked at start). */
static void file_path(char *out, uint32_t tid, uint32_t seq)
{
    char nb[21];
    char *p = file_put(out, g_dir);
    p = file_put(p, "/trace.");
    p = file_put(p, num(g_pid, nb));
    p = file_put(p, ".");
    p = file_put(p, num(tid, nb));
    p = file_put(p, ".");
    p = file_put(p, num(seq, nb));
    p = file_put(p, ".bin");
    *p = '\0';
}

/* Returns 0 or an errno.  Writes at an explicit offset, so that after a
 * failure the file can be cut back to whole records and written on. */
static int file_pwrite_all(int fd, const void *buf, uint64_t len, uint64_t off)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t w = pwrite(fd, p, (size_t)len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        len -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* A segment's first bytes: its header, then BUILD_ID when the program has
 * one, so that every file names the binary it came from.  Returns the
 * length (g_file_head). */
static uint64_t file_head(tl_state_t *t, unsigned char *out)
{
    trace_file_header_t h;
    file_header(&h, t->seq);
    memcpy(out, &h, sizeof h);
    uint64_t len = sizeof h;
    trace_event_t m;
    if (g_have_build_id) {
        mark_fill(&m, g_build_id[1], t->tid, TRACE_MARK_BUILD_ID, g_build_id[0]);
        file_to_le(&m, 1);
        memcpy(out + len, &m, sizeof m);
        len += sizeof m;
    }
    if (g_wrap) {
        mark_fill(&m, clock_now(), t->tid, TRACE_MARK_WRAP,
                  atomic_load_explicit(&g_wrap_discarded, memory_order_relaxed));
        file_to_le(&m, 1);
        memcpy(out + len, &m, sizeof m);
    }
    return g_file_head;
}

/* Creates the thread's next segment with its head.  O_EXCL: a name that
 * exists (an earlier thread with the same tid, an older run with the same
 * pid) is skipped for the next seq, never overwritten.  0 or an errno. */
static int file_open(tl_state_t *t)
{
    char path[sizeof g_dir + FILE_NAME_ROOM];
    for (uint32_t tries = 0; tries < FILE_MAX_TRIES; tries++, t->seq++) {
        file_path(path, t->tid, t->seq);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return errno;
        unsigned char head[HDR_BYTES + 2 * EV_BYTES];
        int err = file_pwrite_all(fd, head, file_head(t, head), 0);
        if (err) {
            close(fd);
            unlink(path); /* ours, and a torn header helps no reader */
            return err;
        }
        t->fd = fd;
        t->has_fd = 1;
        t->seg_used = g_file_head;
        t->seg_events = 0;
        return 0;
    }
    return EEXIST;
}

static void file_close(tl_state_t *t)
{
    if (!t->has_fd)
        return;
    close(t->fd);
    if (g_wrap)
        wrap_enqueue(t->tid, t->seq, t->seg_used, t->seg_events);
    t->has_fd = 0;
    t->seq++;
    t->seg_used = 0;
}

/* Appends events to the thread's segment, rotating at TRACE_SEG_MB, the
 * bytes (and any new head) reserved against `limit` first.  Returns 0,
 * FILE_OVER_BUDGET or an errno; a failed write leaves whole records only. */
static int file_append(tl_state_t *t, trace_event_t *ev, uint32_t count, uint64_t limit)
{
    uint64_t bytes = count * EV_BYTES;
    if (t->has_fd && t->seg_used > g_file_head && t->seg_used + bytes > g_seg_bytes)
        file_close(t);
    while (!budget_take(bytes + (t->has_fd ? 0 : g_file_head), limit)) {
        if (!g_wrap)
            return FILE_OVER_BUDGET;
        if (wrap_reclaim())
            continue;
        if (!t->has_fd || t->seg_used == g_file_head)
            return FILE_OVER_BUDGET; /* the budget is all in other threads' open segments */
        file_close(t); /* ours is the oldest left: it goes next */
    }
    if (!t->has_fd) {
        int err = file_open(t);
        if (err)
            return err;
    }
    for (uint32_t i = 0; g_wrap && i < count; i++) /* a last flush's total: as of now, after our own removals */
        if (ev[i].kind == TRACE_KIND_MARKER && ev[i].func == TRACE_MARK_WRAP)
            ev[i].call_site = atomic_load_explicit(&g_wrap_discarded, memory_order_relaxed);
    file_to_le(ev, count);
    int err = file_pwrite_all(t->fd, ev, bytes, t->seg_used);
    if (err) {
        if (ftruncate(t->fd, (off_t)t->seg_used) != 0) {
            /* nothing more to do: the marker below may still land */
        }
        return err;
    }
    t->seg_used += bytes;
    for (uint32_t i = 0; g_wrap && i < count; i++)
        t->seg_events += ev[i].kind == TRACE_KIND_ENTER || ev[i].kind == TRACE_KIND_EXIT;
    return 0;
}

/* Capture ends for the process; the thread that ends it says why, in-band.
 * The marker fits: the soft budget keeps room for a head and one event,
 * and a failed write leaves its own reservation unused. */
static void file_stop(tl_state_t *t, int reason, uint64_t code, uint64_t payload)
{
    char nb[21];
    if (!stop_claim(reason))
        return;
    int err = reason == STOP_WRITE && !t->has_fd ? (int)payload : 0;
    if (!err) {
        trace_event_t m;
        mark_fill(&m, clock_now(), t->tid, code, payload);
        err = file_append(t, &m, 1, g_budget_max);
    }
    if (reason == STOP_WRITE)
        say("writing trace files in ", g_dir, " failed: ", strerror((int)payload),
            "; capture stopped", (char *)0);
    else if (err)
        say("TRACE_MAX_MB=", num(g_budget_max / MIB, nb), " reached; capture stopped, but its marker ",
            "could not be written: ", err > 0 ? strerror(err) : "no room", (char *)0);
}

/* Once a thread in file mode has filled a batch, its batches grow to
 * FILE_BUF_EVENTS (see there); a thread whose flushes are partial (its
 * exit, TRACE_FLUSH_MS) keeps the small one.  Not with TRACE_FULL=wrap,
 * whose segments are sized in small batches, nor for summaries alone,
 * whose snapshots are small.  No memory: the TLS buffer, as before. */
static void file_buf_grow(tl_state_t *t)
{
    if (t->buf != t->own || t->n < t->flush_at || g_wrap || g_summary == 1)
        return;
    void *m = mmap(NULL, (TL_HEAD + FILE_BUF_EVENTS + TL_TAIL) * sizeof(trace_event_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        t->buf = m;
}

/* Thread exit: the larger buffer unmapped, once its last batch is out. */
static void file_buf_free(tl_state_t *t)
{
    if (t->buf && t->buf != t->own)
        munmap(t->buf, (TL_HEAD + FILE_BUF_EVENTS + TL_TAIL) * sizeof(trace_event_t));
    t->buf = t->own;
}

/* The batch is written; nothing in the buffer outlives the flush (the
 * caller starts the next batch at 0), so it may change buffers here. */
static void file_flush(tl_state_t *t)
{
    tl_take_reentered(t);
    uint32_t first = tl_head_marks(t);
    uint32_t count = TL_HEAD - first + t->n + t->ntail;
    if (count == 0)
        return;
    int r = file_append(t, &t->buf[first], count, g_budget_soft);
    file_buf_grow(t);
    if (r == 0)
        tl_head_sent(t);
    else if (r == FILE_OVER_BUDGET && g_wrap)
        tl_note_drop(t); /* the budget is all in open segments: this batch goes, counted (THREAD_LOST) */
    else if (r == FILE_OVER_BUDGET)
        file_stop(t, STOP_BUDGET, TRACE_MARK_BUDGET, g_budget_max);
    else
        file_stop(t, STOP_WRITE, TRACE_MARK_WRITE_ERROR, (uint64_t)r);
}

/* g_dir = dir made absolute, without trailing slashes; 0 if it cannot be. */
static int file_absolute(const char *dir)
{
    size_t len = 0, room = sizeof g_dir - FILE_NAME_ROOM;
    while (dir[0] == '.' && dir[1] == '/')
        dir += 2;
    if (dir[0] != '/') {
        if (!getcwd(g_dir, room)) {
            say("TRACE_DIR=", dir, ": no working directory: ", strerror(errno), "; tracing off", (char *)0);
            return 0;
        }
        len = strlen(g_dir);
        if (len > 1)
            g_dir[len++] = '/';
    }
    if (strlen(dir) >= room - len) {
        say("TRACE_DIR=", dir, ": path too long; tracing off", (char *)0);
        return 0;
    }
    strcpy(g_dir + len, dir);
    for (len = strlen(g_dir); len > 1 && g_dir[len - 1] == '/';)
        g_dir[--len] = '\0';
    return 1;
}

/* mkdir -p g_dir; NULL or why it is not a directory we can write in. */
static const char *file_make_dir(void)
{
    struct stat st;
    for (char *p = g_dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(g_dir, 0777); /* the checks below decide */
        *p = '/';
    }
    if (mkdir(g_dir, 0777) != 0 && errno != EEXIST)
        return strerror(errno);
    if (stat(g_dir, &st) != 0)
        return strerror(errno);
    if (!S_ISDIR(st.st_mode))
        return "not a directory";
    if (access(g_dir, W_OK | X_OK) != 0)
        return strerror(errno);
    return NULL;
}

/* TRACE_DIR is made absolute at start, so a later chdir cannot scatter
 * files, and created if missing.  One line on stderr when it cannot be. */
static int file_setup(const char *dir)
{
    if (!file_absolute(dir))
        return 0;
    const char *why = file_make_dir();
    if (why)
        say("TRACE_DIR=", g_dir, ": ", why, "; tracing off", (char *)0);
    return why == NULL;
}

/* ---- stream mode: the shared-memory ring -----------------------------------
 * Protocol (trace_shm.h): writers serialize on `lock` for a bounded time
 * and publish head past whole batches; in a version-2 ring they copy the
 * batch while they hold the lock, in a version-3 ring they only reserve
 * its room there (a batch header) and copy and commit it after letting the
 * lock go, so that a writer that loses its CPU mid-copy holds up nobody
 * but the reader.  The one reader, trace_stream, loads head with acquire,
 * copies, stores tail with release.  Shared fields are reached as C11
 * atomics through these casts. */

#define RING_U32(field) ((_Atomic uint32_t *)(void *)&g_ring->field)
#define RING_U64(field) ((_Atomic uint64_t *)(void *)&g_ring->field)

/* Fault the storage in at attach: a page fault inside the critical section
 * would make other writers give up and drop. */
#ifdef MAP_POPULATE
#define RING_MAP_FLAGS (MAP_SHARED | MAP_POPULATE)
#else
#define RING_MAP_FLAGS MAP_SHARED
#endif

static void ring_add_dropped(uint64_t events)
{
    /* relaxed: a counter only; it is ordered for the reader by our later
     * release of `writers` (trace_exit) */
    atomic_fetch_add_explicit(RING_U64(dropped), events, memory_order_relaxed);
}

static void ring_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
    __asm__ __volatile__("yield");
#endif
}

/* Cold: we gave up waiting for the lock.  If its holder's thread no longer
 * exists (killed inside its critical section), take the lock over from it:
 * the CAS succeeds only if nobody else did first.  The dead holder either
 * published head or not; storage past head is unpublished, so the ring is
 * consistent either way.  A holder we cannot check (EPERM) or a reused tid
 * counts as alive, and we drop as before: never worse than waiting. */
static TR_COLD int ring_lock_recover(uint32_t tid)
{
    _Atomic uint32_t *lock = RING_U32(lock);
    uint32_t holder = atomic_load_explicit(lock, memory_order_relaxed);
    if (holder == 0 || holder > (uint32_t)INT_MAX)
        return 0;
    if (kill((pid_t)holder, 0) == 0 || errno != ESRCH)
        return 0;
    /* acquire: as in ring_lock; whatever the dead holder published is seen */
    return atomic_compare_exchange_strong_explicit(lock, &holder, tid ? tid : 1u, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Bounded: a holder killed inside its critical section leaves the lock
 * taken forever, and on one core spinning would starve a live holder; so
 * spin a little, yield a little, then give up (the caller drops). */
static int ring_lock(uint32_t tid)
{
    _Atomic uint32_t *lock = RING_U32(lock);
    for (uint32_t i = 0; i < RING_SPINS + RING_YIELDS; i++) {
        uint32_t free_value = 0;
        /* acquire: pairs with the release store in ring_put that freed the
         * lock, so the previous holder's head and storage writes are seen */
        if (atomic_load_explicit(lock, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(lock, &free_value, tid ? tid : 1u, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
        if (i < RING_SPINS)
            ring_pause();
        else
            sched_yield();
    }
    return ring_lock_recover(tid);
}

/* capacity is a multiple of 32, so a wrap falls between two records. */
static void ring_copy(uint64_t pos, const void *src, uint64_t len)
{
    uint32_t off = (uint32_t)(pos % g_ring_cap);
    uint64_t first = g_ring_cap - off < len ? g_ring_cap - off : len;
    memcpy(g_ring_data + off, src, (size_t)first);
    if (len > first)
        memcpy(g_ring_data, (const unsigned char *)src + first, (size_t)(len - first));
}

#define REC_U32(field) ((_Atomic uint32_t *)(void *)&g_rec->field)
#define REC_U64(field) ((_Atomic uint64_t *)(void *)&g_rec->field)

/* Flight recorder, RECORDING, lock held: move tail over the oldest whole
 * batches until `bytes` fit (trace_shm.h).  The batch records are read from
 * shared memory, so each is checked; one that does not describe a batch
 * inside [tail, head) gives up on them all: tail = head.  The new tail. */
static uint64_t ring_overwrite(uint64_t tail, uint64_t head, uint64_t bytes)
{
    uint64_t over = 0;
    while (head - tail > g_ring_cap - bytes) {
        trace_event_t b;
        memcpy(&b, g_ring_data + tail % g_ring_cap, sizeof b);
        uint64_t recs = (uint32_t)b.call_site;
        if (b.kind != TRACE_KIND_MARKER || b.func != TRACE_MARK_BATCH || recs == 0 ||
            recs > (head - tail) / EV_BYTES) {
            over += (head - tail) / EV_BYTES; /* records, not only events: unknowable */
            tail = head;
            break;
        }
        over += b.call_site >> 32;
        tail += recs * EV_BYTES;
    }
    /* relaxed: a counter, read by the reader under the lock */
    atomic_fetch_add_explicit(REC_U64(overwritten), over, memory_order_relaxed);
    /* relaxed: only lock holders write tail while RECORDING; the next one
     * is ordered after us by our release of the lock */
    atomic_store_explicit(RING_U64(tail), tail, memory_order_relaxed);
    return tail;
}

/* ThreadSanitizer sees the threads of one process only.  In a version-3
 * ring what orders a writer's copy after an earlier writer's commit of the
 * same bytes is the reader, in another process (it acquires the commit,
 * then releases tail, which the later writer acquires), so TSan would call
 * the two a race.  Under TSan only, a writer releases a token before its
 * commit (a store TSan is told to skip) and acquires it with tail: the
 * reader's part, in a form TSan sees.  Nothing of it in other builds. */
#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif
#ifdef RING_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
static char g_tsan_reader;
#define RING_TSAN_ACQUIRE() __tsan_acquire(&g_tsan_reader)
#define RING_TSAN_RELEASE() __tsan_release(&g_tsan_reader)
#define RING_TSAN_SKIP_BEGIN() __tsan_ignore_thread_begin()
#define RING_TSAN_SKIP_END() __tsan_ignore_thread_end()
#else
#define RING_TSAN_ACQUIRE() ((void)0)
#define RING_TSAN_RELEASE() ((void)0)
#define RING_TSAN_SKIP_BEGIN() ((void)0)
#define RING_TSAN_SKIP_END() ((void)0)
#endif

/* Version 3: reserve room for a batch header and count records under the
 * lock, then copy and commit outside it (trace_shm.h).  0 when the lock
 * could not be had or there is too little room. */
static int ring_put_commit(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid)
{
    uint64_t bytes = (count + 1u) * EV_BYTES;
    if (count == 0)
        return 1; /* nothing to put; a header of no records would read as a broken ring */
    if (!ring_lock(tid))
        return 0;
    /* acquire: pairs with the reader's release store of tail, as in ring_put */
    uint64_t tail = atomic_load_explicit(RING_U64(tail), memory_order_acquire);
    RING_TSAN_ACQUIRE();
    /* relaxed: only lock holders write head */
    uint64_t head = atomic_load_explicit(RING_U64(head), memory_order_relaxed);
    uint64_t used = head - tail; /* untrusted: a broken ring reads as full */
    int fits = used <= g_ring_cap && bytes <= g_ring_cap - used;
    _Atomic uint64_t *commit = (_Atomic uint64_t *)(void *)(g_ring_data + head % g_ring_cap);
    if (fits) {
        trace_shm_batch_t b = {0, count, events, tid, 0, 0};
        memcpy((unsigned char *)commit + sizeof b.commit, (const unsigned char *)&b + sizeof b.commit,
               sizeof b - sizeof b.commit);
        /* relaxed: published by the release store of head just below */
        atomic_store_explicit(commit, ~head, memory_order_relaxed);
        /* release: pairs with the reader's acquire load of head, so the
         * header above is seen with the room it describes */
        atomic_store_explicit(RING_U64(head), head + bytes, memory_order_release);
    }
    /* release: pairs with the next writer's acquire CAS in ring_lock */
    atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
    if (!fits)
        return 0;
    ring_copy(head + EV_BYTES, ev, bytes - EV_BYTES);
    RING_TSAN_RELEASE();
    RING_TSAN_SKIP_BEGIN();
    /* release: pairs with the reader's acquire load of this commit word,
     * so the records copied above are seen once it reads the position */
    atomic_store_explicit(commit, head, memory_order_release);
    RING_TSAN_SKIP_END();
    return 1;
}

/* Copies count records (`events` of them enter/exit) into the ring in one
 * critical section; 0 when the lock could not be had or there is too
 * little room.  A flight-recorder ring gets them as one batch, and while
 * it is RECORDING there is always room: the oldest batches make it. */
static int ring_put(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid)
{
    if (g_ring_commit)
        return ring_put_commit(ev, count, events, tid);
    trace_event_t batch;
    uint64_t bytes = (count + (g_rec != NULL)) * EV_BYTES;
    if (!ring_lock(tid))
        return 0;
    /* acquire: pairs with the reader's release store of tail, so the bytes
     * it has finished copying out are free before we overwrite them */
    uint64_t tail = atomic_load_explicit(RING_U64(tail), memory_order_acquire);
    /* relaxed: only lock holders write head; ring_lock's acquire ordered us
     * after the previous holder's store */
    uint64_t head = atomic_load_explicit(RING_U64(head), memory_order_relaxed);
    uint64_t used = head - tail; /* untrusted: a broken ring reads as full */
    if (g_rec && used <= g_ring_cap && bytes <= g_ring_cap &&
        atomic_load_explicit(REC_U32(state), memory_order_relaxed) == TRACE_RECORDER_RECORDING)
        used = head - ring_overwrite(tail, head, bytes);
    int fits = used <= g_ring_cap && bytes <= g_ring_cap - used;
    if (fits && g_rec) {
        mark_fill(&batch, count ? ev[0].ts : clock_now(), tid, TRACE_MARK_BATCH,
                  (uint64_t)events << 32 | (count + 1u));
        ring_copy(head, &batch, EV_BYTES);
        head += EV_BYTES;
        bytes -= EV_BYTES;
    }
    if (fits) {
        ring_copy(head, ev, bytes);
        /* release: pairs with the reader's acquire load of head, so the
         * records copied above are visible before the new head is */
        atomic_store_explicit(RING_U64(head), head + bytes, memory_order_release);
    }
    /* release: pairs with the next writer's acquire CAS in ring_lock */
    atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
    return fits;
}

/* ring_put, and while the lock is busy or the ring full, again for up to
 * wait_ns in all: each try spins and yields for the lock (ring_lock), and
 * between tries the thread sleeps, 10 us at first, doubling to 1 ms, the
 * last sleep cut to what is left, so the bound holds to a sleep's slack.
 * *waited gets the time spent past the first try.  wait_ns is 0 (never
 * wait) unless the user chose TRACE_SHM_WAIT_US, or the flush is a thread's
 * last, which has no later one to defer to. */
static int ring_put_wait(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid,
                         uint64_t wait_ns, uint64_t *waited)
{
    *waited = 0;
    if (ring_put(ev, count, events, tid))
        return 1;
    if (wait_ns == 0)
        return 0;
    uint64_t begin = clock_mono_ns(), nap = RING_NAP_FIRST_NS;
    for (;;) {
        uint64_t spent = clock_mono_ns() - begin;
        if (spent >= wait_ns) {
            *waited = spent;
            return 0;
        }
        uint64_t d = nap < wait_ns - spent ? nap : wait_ns - spent;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
        nap = nap * 2 < RING_NAP_MAX_NS ? nap * 2 : RING_NAP_MAX_NS;
        if (ring_put(ev, count, events, tid)) {
            *waited = clock_mono_ns() - begin;
            return 1;
        }
    }
}

/* A thread's last flush lost its events: still try to get its notes (gap,
 * thread exit, clock anchor) out, since no later flush will carry them. */
static void ring_put_marks_only(tl_state_t *t)
{
    memmove(&t->buf[TL_HEAD], &t->buf[TL_HEAD + t->n], t->ntail * sizeof(trace_event_t));
    t->n = t->nmarks = 0;
    uint32_t first = tl_head_marks(t);
    if (ring_put(&t->buf[first], TL_HEAD - first + t->ntail, 0, t->tid))
        tl_head_sent(t);
}

/* Loss accounting keeps: events in the ring + `dropped` = events recorded.
 * Markers are never counted in `dropped`.  Without TRACE_SHM_WAIT_US a
 * batch that cannot go in is kept and tried again after more events, and
 * dropped when the buffer has no room left; with it, the flush waits up to
 * that long and then drops.  *waited: ns spent waiting (ring_put_wait). */
static void trig_ask(tl_state_t *t);

static int ring_flush(tl_state_t *t, int final, uint64_t *waited)
{
    uint64_t reentered = tl_take_reentered(t);
    if (reentered)
        ring_add_dropped(reentered);
    uint32_t first = tl_head_marks(t);
    uint32_t count = TL_HEAD - first + t->n + t->ntail;
    uint64_t wait = final && g_wait_ns < RING_FINAL_WAIT_NS ? RING_FINAL_WAIT_NS : g_wait_ns;
    *waited = 0;
    int put = count == 0 || ring_put_wait(&t->buf[first], count, t->n - t->nmarks, t->tid, wait, waited);
    if (final) {
        /* A signal handler's hooks the gate dropped while this last flush
         * waited: no later flush will count them. */
        uint64_t late = tl_take_reentered(t);
        if (late)
            ring_add_dropped(late);
    }
    if (put) {
        tl_head_sent(t);
        if (t->trig_pending && count) /* the slow call and its stack are in: now ask */
            trig_ask(t);
        return 1;
    }
    if (t->n == t->nmarks)
        return 1; /* no events: only notes of earlier flushes are lost */
    if (!final && g_wait_ns == 0 && t->n + TL_NOTE_SLOTS + RING_RETRY_EVENTS(g_batch) <= g_buf_max) {
        /* The lock was busy (its holder preempted, most likely) or the
         * reader is behind: keep the batch and try again a little later. */
        t->flush_at = t->n + TL_NOTE_SLOTS + RING_RETRY_EVENTS(g_batch);
        return 0;
    }
    ring_add_dropped(t->n - t->nmarks);
    tl_note_drop(t);
    t->trig_pending = 0; /* a slow call's batch that is lost asks for nothing (its loss is counted) */
    if (t->ntail)
        ring_put_marks_only(t);
    return 1;
}

/* A batch of at most a quarter of the ring leaves room for other threads'
 * batches and for the reader to be behind; a batch larger than the ring
 * could never go in at all. */
static void ring_use(void *map, uint32_t cap, size_t map_len)
{
    g_ring = map;
    g_ring_map_len = map_len;
    g_ring_data = (unsigned char *)map + TRACE_SHM_HEADER_SIZE;
    g_ring_cap = cap;
    g_batch = TRACE_BUF_EVENTS / 2u;
    if (cap / TRACE_EVENT_SIZE / 8u < g_batch)
        g_batch = cap / TRACE_EVENT_SIZE / 8u; /* >= 8: capacity >= 64 records */
    g_buf_max = 2u * g_batch;
}

/* Back to file mode after a ring that was mapped could not be joined. */
static void ring_unuse(void)
{
    munmap(g_ring, g_ring_map_len);
    g_ring = NULL;
    g_rec = NULL;
    g_ring_data = NULL;
    g_ring_cap = 0;
    g_ring_commit = 0;
    g_batch = TRACE_BUF_EVENTS;
    g_buf_max = TRACE_BUF_EVENTS;
}

static uint64_t ring_magic(void)
{
    char m[8] = TRACE_SHM_MAGIC;
    uint64_t v;
    memcpy(&v, m, sizeof v);
    return v;
}

/* We made the segment: size it, fill the header, publish the magic last. */
static const char *ring_create(int fd, uint64_t size)
{
    uint64_t cap = (size - TRACE_SHM_HEADER_SIZE) & ~(EV_BYTES - 1);
    uint64_t len = TRACE_SHM_HEADER_SIZE + cap;
    if (len > SIZE_MAX)
        return "TRACE_SHM_SIZE is too large for this machine";
    if (ftruncate(fd, (off_t)len) != 0)
        return strerror(errno);
    void *map = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, RING_MAP_FLAGS, fd, 0);
    if (map == MAP_FAILED)
        return strerror(errno);
    trace_shm_header_t *h = map; /* all zero after ftruncate */
    h->version = TRACE_SHM_VERSION; /* what every tracer and trace_stream reads; 3 is trace_stream's to offer */
    h->capacity = (uint32_t)cap;
    g_ring_commit = 0; /* so its batches are written as version 2's */
    /* release: pairs with an opener's acquire load of the magic (ring_open,
     * trace_stream): whoever sees it sees version and capacity */
    atomic_store_explicit((_Atomic uint64_t *)(void *)h->magic, ring_magic(), memory_order_release);
    ring_use(map, (uint32_t)cap, (size_t)len);
    return NULL;
}

static void ring_sleep_1ms(void)
{
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
}

/* The segment's size once it is large enough for a ring, 0 on timeout. */
static uint64_t ring_wait_size(int fd, uint64_t deadline)
{
    struct stat st;
    while (fstat(fd, &st) == 0) {
        if ((uint64_t)st.st_size >= TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY)
            return (uint64_t)st.st_size;
        if (clock_mono_ns() > deadline)
            break;
        ring_sleep_1ms();
    }
    return 0;
}

/* NULL when the header of a published ring fits a segment of `size`;
 * *cap and *version are read once (the header may change under us). */
static const char *ring_check(trace_shm_header_t *h, uint64_t size, uint64_t deadline, uint32_t *cap,
                              uint32_t *version)
{
    uint64_t magic;
    /* acquire: pairs with the creator's release store of the magic, so the
     * version and capacity read below are the ones it wrote */
    while ((magic = atomic_load_explicit((_Atomic uint64_t *)(void *)h->magic, memory_order_acquire)) == 0 &&
           clock_mono_ns() <= deadline)
        ring_sleep_1ms();
    if (magic == 0)
        return "no ring header appeared in time";
    if (magic != ring_magic())
        return "not a callsight ring (bad magic)";
    *version = h->version;
    if (*version != TRACE_SHM_VERSION_COMMIT && *version != TRACE_SHM_VERSION)
        return "unsupported ring version";
    *cap = h->capacity;
    if (*cap < TRACE_SHM_MIN_CAPACITY || *cap % TRACE_EVENT_SIZE != 0 || TRACE_SHM_HEADER_SIZE + (uint64_t)*cap > size)
        return "its capacity does not fit the segment";
    return NULL;
}

/* The flight-recorder block, if its magic is there: the creator wrote it
 * before the ring's magic, which ring_check read with acquire. */
static void ring_find_recorder(unsigned char *block)
{
    trace_shm_recorder_t *r = (trace_shm_recorder_t *)(void *)block;
    if (memcmp(r->magic, TRACE_SHM_RECORDER_MAGIC, sizeof r->magic) == 0 &&
        r->version == TRACE_SHM_RECORDER_VERSION)
        g_rec = r;
}

/* Someone else made the segment, maybe a moment ago: wait a bounded time
 * for its size and magic, check the header, then map what it describes. */
static const char *ring_open(int fd)
{
    uint64_t deadline = clock_mono_ns() + RING_OPEN_WAIT_NS;
    uint64_t size = ring_wait_size(fd, deadline);
    if (size == 0)
        return "the segment exists but is too small for a ring";
    uint32_t cap = 0, version = 0;
    trace_shm_header_t *h = mmap(NULL, sizeof *h, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return strerror(errno);
    const char *why = ring_check(h, size, deadline, &cap, &version);
    munmap(h, sizeof *h);
    if (why)
        return why;
    /* trace_stream --flight-recorder made the segment of a version-2 ring
     * longer for its block */
    size_t len = TRACE_SHM_HEADER_SIZE + (size_t)cap;
    int recorder = version == TRACE_SHM_VERSION && size >= (uint64_t)len + TRACE_SHM_RECORDER_SIZE;
    len += recorder ? TRACE_SHM_RECORDER_SIZE : 0;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, RING_MAP_FLAGS, fd, 0);
    if (map == MAP_FAILED)
        return strerror(errno);
    ring_use(map, cap, len);
    g_ring_commit = version == TRACE_SHM_VERSION_COMMIT;
    if (recorder)
        ring_find_recorder((unsigned char *)map + TRACE_SHM_HEADER_SIZE + cap);
    return NULL;
}

/* Counts us as a writer; trace_stream sends its handshake only once it sees
 * one.  The first writer's clock and bias go in the lower half, which the
 * handshake carries.  A tracer joining a ring that others already write
 * leaves it alone: its own bias and build-id go in-band (tl_head_marks),
 * and its timestamps only need the same clock, which is checked here.
 * Under the ring's lock, so two tracers attaching at once cannot both take
 * themselves for the first.  If the lock stays taken (a holder stuck in
 * its critical section) we join without it: every flush will fail and be
 * counted as dropped while it is stuck, which is the loss to report, and
 * the race it would have prevented needs two tracers starting together on
 * top of that.  NULL, or why we cannot join. */
static const char *ring_announce(void)
{
    uint32_t flags = g_ticks ? TRACE_FLAG_TICKS : 0;
    int locked = ring_lock(g_pid);
    const char *why = NULL;
    if (atomic_load_explicit(RING_U32(writers), memory_order_relaxed) == 0) {
        g_ring->flags = flags;
        g_ring->pad = 0;
        g_ring->load_bias = g_load_bias;
        g_ring->tick_hz = g_tick_hz;
        g_ring->t0_ticks = g_t0_ticks;
        g_ring->t0_ns = g_t0_ns;
        g_ring->hook_ns = g_hook_ns;
    } else if ((g_ring->flags & TRACE_FLAG_TICKS) != flags)
        why = "the processes already writing it use another clock (give them all the same TRACE_CLOCK)";
    if (!why) {
        /* release: pairs with trace_stream's acquire load of writers, so the
         * lower half above is complete when it reads it */
        atomic_fetch_add_explicit(RING_U32(writers), 1, memory_order_release);
        g_ring_joined = 1;
        atomic_store_explicit(&g_announce_due, 1, memory_order_relaxed);
    }
    if (locked) /* release: pairs with the next writer's acquire CAS in ring_lock */
        atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
    return why;
}

/* A shared flock on the segment, held until this process (and any child
 * forked with the descriptor) ends: the kernel drops it however we die, so
 * trace_stream, trying an exclusive lock now and then, learns that tracers
 * counted in `writers` are gone when no shared lock is left.  Taken before we
 * count as a writer.  trace_stream holds its exclusive lock only for an
 * instant, so a bounded number of tries suffices. */
static const char *ring_hold_liveness(int fd)
{
    uint64_t deadline = clock_mono_ns() + RING_OPEN_WAIT_NS;
    while (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || clock_mono_ns() > deadline)
            return "cannot hold a shared lock on the ring";
        ring_sleep_1ms();
    }
    return NULL;
}

/* Attaches TRACE_SHM, creating it when absent.  On failure says why once;
 * the caller falls back to files.  The segment is the client's to unlink,
 * except one we created and could not set up (it never had a magic). */
static int ring_attach(const char *name, uint64_t size)
{
    const char *why;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
        why = ring_create(fd, size);
        if (why)
            shm_unlink(name);
    } else if (errno == EEXIST) {
        fd = shm_open(name, O_RDWR, 0);
        why = fd >= 0 ? ring_open(fd) : strerror(errno);
    } else
        why = strerror(errno);
    if (!why)
        why = ring_hold_liveness(fd);
    if (!why)
        why = ring_announce();
    if (why) {
        if (g_ring)
            ring_unuse();
        if (fd >= 0)
            close(fd); /* drops our shared lock too: we never counted as a writer */
        say("TRACE_SHM=", name, ": ", why, "; writing trace files instead", (char *)0);
        return 0;
    }
    g_ring_fd = fd;
    return 1;
}

/* ---- flush and hooks ---------------------------------------------------- */

/* Sends the batch (and any tail markers) to the sink, then starts a new
 * batch.  Cold; keeps errno for the program.  After a stop, discards.
 * Unless it is the thread's last, the flush notes its own time in the
 * records that follow (tl_note_tracer), deferred or not. */
/* Where a thread's module list goes (loaded modules, below): its file or
 * the ring, ahead of the batch.  0 ok. */
typedef int (*mod_sink_t)(tl_state_t *t, trace_event_t *ev, uint32_t count);
static int mod_flush(tl_state_t *t, mod_sink_t sink, int whole);

static int mod_to_file(tl_state_t *t, trace_event_t *ev, uint32_t count)
{
    return file_append(t, ev, count, g_budget_soft) == 0 ? 0 : -1;
}

static int mod_to_ring(tl_state_t *t, trace_event_t *ev, uint32_t count)
{
    return ring_put(ev, count, 0, t->tid) ? 0 : -1;
}

static uint64_t mod_list_room(void);

/* TRACE_FULL=wrap: any segment may be the oldest left, so each must stand
 * alone: a batch that will not fit starts the next segment here, before
 * the module list and the head markers are chosen, so that it begins with
 * them (the list, the thread's name) again. */
static void wrap_rotate(tl_state_t *t)
{
    uint64_t batch = (TL_HEAD + t->n + t->ntail) * EV_BYTES + mod_list_room();
    if (!t->has_fd || t->seg_used + batch <= g_seg_bytes)
        return;
    file_close(t);
    t->mod_list = 0;
    memset(t->name, 0, sizeof t->name);
}

/* Flight recorder: a thread's module list and name, written at its first
 * flush, are overwritten like everything else, and a snapshot without them
 * names no shared object's function.  So a thread writes them again once
 * an eighth of the ring has been overwritten since it last did: any
 * snapshot then holds them for all but the oldest eighth of its records.
 * One relaxed load per flush. */
static void rec_say_again(tl_state_t *t)
{
    uint64_t over = atomic_load_explicit(REC_U64(overwritten), memory_order_relaxed);
    if (over - t->rec_said_at < g_ring_cap / EV_BYTES / 8u)
        return;
    t->rec_said_at = over;
    t->mod_list = 0;
    memset(t->name, 0, sizeof t->name);
}

static TR_COLD void tl_flush(tl_state_t *t, int final)
{
    int saved = errno;
    uint64_t start = clock_now(), waited = 0;
    if (!stopped()) {
        if (g_ring) {
            if (g_rec)
                rec_say_again(t);
            (void)mod_flush(t, mod_to_ring, 1); /* failed: due again next time */
            if (!ring_flush(t, final, &waited)) {
                tl_note_tracer(t, start, waited); /* deferred: the batch stays */
                /* tried again after RING_RETRY_EVENTS more events or a
                 * period from now, not at every hook from here on */
                t->flush_by = tl_flush_deadline(clock_now());
                errno = saved;
                return;
            }
        } else {
            if (g_wrap)
                wrap_rotate(t);
            (void)mod_flush(t, mod_to_file, 0); /* failed: the batch's own write says why */
            file_flush(t);
        }
    }
    t->flush_at = tl_batch(t);
    t->n = t->nmarks = 0;
    t->ntail = 0;
    t->batch_depth = t->depth;
    if (!final && !stopped())
        tl_note_tracer(t, start, waited);
    /* from the flush's end: a flush slower than the period (a long
     * TRACE_SHM_WAIT_US) is not followed by another at the next hook */
    t->flush_by = tl_flush_deadline(clock_now());
    errno = saved;
}

/* ---- summary mode -----------------------------------------------------------
 * TRACE_MODE=summary (trace.h, "summary snapshots"): the hooks keep, per
 * thread and function, calls, inclusive and self time, min, max and a
 * log-linear histogram, in a table of the thread's own that only its hooks
 * write (no lock).  Memory is fixed at the thread's start, one mapping:
 * TRACE_SUMMARY_FUNCS functions (calls of others are counted, not
 * attributed) and a shadow stack of TRACE_SUMMARY_DEPTH frames (deeper calls
 * are counted, their time stays in the caller).  The histograms are most of
 * it but only the pages a function's durations touch become memory.  The
 * enter hook only pushes a frame; the exit hook pops it, turns the clock's
 * difference into ns (a multiply and a shift), looks the function up and
 * adds.  Every TRACE_SUMMARY_MS, judged by the clock the exit hook reads
 * anyway, and at thread and process exit, a snapshot goes out through the
 * thread's ordinary flush; its time is taken out of every open frame, as
 * the analyzer takes a flush's out in event mode. */

#define SUM_NONE UINT32_MAX
#define SUM_BLOCKS 43u /* histogram blocks: the exact one and 42 powers of two */

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
    uint32_t mask;            /* slots - 1 */
    uint64_t over_calls, deep_calls, unmatched;
    uint64_t tracer;          /* ns the tracer took from this thread (snapshots) */
    uint64_t seq, next_at;    /* snapshots written; clock at which the next is due */
    uint32_t *slots;          /* open addressing: function + 1, 0 empty */
    sum_fn_t *fn;
    uint64_t *hist;           /* g_sum_funcs * TRACE_SUMMARY_NBUCKETS */
    sum_frame_t *frames;
} sum_table_t;

static uint64_t sum_round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

/* Where each part of a thread's table lies in its one mapping, and its
 * size (the return value). */
static uint64_t sum_layout(uint64_t *o_slots, uint64_t *o_fn, uint64_t *o_frames, uint64_t *o_hist, uint64_t *slots)
{
    *slots = 1;
    while (*slots < 2u * (uint64_t)g_sum_funcs)
        *slots <<= 1;
    uint64_t at = sum_round_up(sizeof(sum_table_t), 64);
    *o_slots = at;
    at = sum_round_up(at + *slots * sizeof(uint32_t), 64);
    *o_fn = at;
    at = sum_round_up(at + g_sum_funcs * (uint64_t)sizeof(sum_fn_t), 64);
    *o_frames = at;
    at = sum_round_up(at + g_sum_depth * (uint64_t)sizeof(sum_frame_t), 4096);
    *o_hist = at;
    return at + (uint64_t)g_sum_funcs * TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t);
}

static uint64_t sum_bytes(void)
{
    uint64_t a, b, c, d, e;
    return sum_layout(&a, &b, &c, &d, &e);
}

/* The thread's table, one mapping; NULL (said) when there is no memory. */
static struct sum_table *sum_alloc(void)
{
    uint64_t o_slots, o_fn, o_frames, o_hist, slots, size = sum_layout(&o_slots, &o_fn, &o_frames, &o_hist, &slots);
    void *m = size <= SIZE_MAX ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                               : MAP_FAILED;
    if (m == MAP_FAILED) {
        say("TRACE_MODE=summary: no memory for a thread's table (TRACE_SUMMARY_FUNCS); the thread is not "
            "traced", (char *)0);
        return NULL;
    }
    unsigned char *b = m;
    sum_table_t *s = m;
    s->mask = (uint32_t)(slots - 1);
    s->slots = (uint32_t *)(void *)(b + o_slots);
    s->fn = (sum_fn_t *)(void *)(b + o_fn);
    s->frames = (sum_frame_t *)(void *)(b + o_frames);
    s->hist = (uint64_t *)(void *)(b + o_hist);
    s->next_at = g_sum_every ? clock_now() + g_sum_every : UINT64_MAX;
    return s;
}

static uint64_t sum_bytes(void);

/* The thread's table unmapped (thread exit; fork: the parent's copy). */
static void sum_free(tl_state_t *t)
{
    if (t->sum)
        munmap(t->sum, (size_t)sum_bytes());
    t->sum = NULL;
}

/* Clock units to ns without a division (see g_ns_mult). */
static inline uint64_t sum_ns(uint64_t d)
{
    if (!g_ticks)
        return d;
    uint64_t mask = ((uint64_t)1 << g_ns_shift) - 1;
    return (d >> g_ns_shift) * g_ns_mult + (((d & mask) * g_ns_mult) >> g_ns_shift);
}

/* g_ns_mult < 2^32, so that (d & mask) * mult cannot overflow. */
static void sum_clock_init(void)
{
    g_ns_shift = 32;
    while (g_ticks && g_ns_shift > 0 && (1000000000ull << g_ns_shift) / g_tick_hz >= ((uint64_t)1 << 32))
        g_ns_shift--;
    g_ns_mult = g_ticks ? (1000000000ull << g_ns_shift) / g_tick_hz : 1;
}

/* The histogram bucket of v ns (trace.h). */
static inline uint32_t sum_bucket(uint64_t v, uint32_t *block)
{
    if (v < TRACE_SUMMARY_EXACT) {
        *block = 0;
        return (uint32_t)v;
    }
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v); /* 6..63 */
    uint32_t b = e - 5u, slot = (uint32_t)(v >> (e - 5u)) & (TRACE_SUMMARY_SUB - 1u);
    if (b >= SUM_BLOCKS) {
        *block = SUM_BLOCKS - 1u;
        return TRACE_SUMMARY_NBUCKETS - 1u;
    }
    *block = b;
    return TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * (b - 1u) + slot;
}

/* The function's place in the table, added on first sight; SUM_NONE when
 * the table is full. */
static TR_HOT_INLINE uint32_t sum_lookup(sum_table_t *s, uint64_t addr)
{
    uint32_t i = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & s->mask;
    for (;;) {
        uint32_t v = s->slots[i];
        if (!v)
            break;
        if (s->fn[v - 1].addr == addr)
            return v - 1;
        i = (i + 1) & s->mask;
    }
    if (s->nfn >= g_sum_funcs)
        return SUM_NONE;
    s->fn[s->nfn].addr = addr;
    s->fn[s->nfn].min = UINT64_MAX;
    s->slots[i] = ++s->nfn;
    return s->nfn - 1;
}

static TR_HOT_INLINE int sum_enter(tl_state_t *t, uintptr_t func, uint64_t now)
{
    sum_table_t *s = t->sum;
    if (TR_UNLIKELY(s->sp >= g_sum_depth || s->deep)) {
        s->deep++;
        return 0;
    }
    sum_frame_t *f = &s->frames[s->sp++];
    f->addr = (uint64_t)func;
    f->start = now;
    f->child = 0;
    f->tracer_at = s->tracer;
    return 0;
}

/* The call in frame f ended at now: its times added.  Nonzero when a
 * snapshot is due. */
static TR_HOT_INLINE int sum_close(sum_table_t *s, const sum_frame_t *f, uint64_t now)
{
    uint64_t ns = sum_ns(now > f->start ? now - f->start : 0), tr = s->tracer - f->tracer_at;
    ns = ns > tr ? ns - tr : 0;
    uint64_t self = ns > f->child ? ns - f->child : 0;
    if (s->sp)
        s->frames[s->sp - 1].child += ns;
    uint32_t i = sum_lookup(s, f->addr);
    if (TR_UNLIKELY(i == SUM_NONE)) {
        s->over_calls++;
    } else {
        sum_fn_t *e = &s->fn[i];
        uint32_t block, b = sum_bucket(ns, &block);
        e->calls++;
        e->incl += ns;
        e->self += self;
        e->min = ns < e->min ? ns : e->min;
        e->max = ns > e->max ? ns : e->max;
        e->blocks |= (uint64_t)1 << block;
        s->hist[(uint64_t)i * TRACE_SUMMARY_NBUCKETS + b]++;
    }
    return now >= s->next_at;
}

/* An exit that is not the top frame's: inherited (fork, TRACE_THREADS),
 * or frames skipped by longjmp, or no open call at all. */
static TR_COLD int sum_exit_odd(tl_state_t *t, uintptr_t func, uint64_t now)
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
    s->sp = k - 1;
    return sum_close(s, &s->frames[k - 1], now);
}

static TR_HOT_INLINE int sum_exit(tl_state_t *t, uintptr_t func, uint64_t now)
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
static int sum_put(tl_state_t *t, int final, uint8_t part, uint64_t ts, uint64_t func, uint64_t site)
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

static int sum_put_hist(tl_state_t *t, int final, const sum_table_t *s, uint32_t i)
{
    const uint64_t *h = &s->hist[(uint64_t)i * TRACE_SUMMARY_NBUCKETS];
    uint64_t blocks = s->fn[i].blocks;
    uint32_t held = TRACE_SUMMARY_NO_BUCKET;
    for (uint32_t b = 0; b < SUM_BLOCKS; b++) {
        if (!(blocks >> b & 1u))
            continue;
        uint32_t lo = b ? TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * (b - 1u) : 0;
        uint32_t hi = b ? lo + TRACE_SUMMARY_SUB : TRACE_SUMMARY_EXACT;
        for (uint32_t k = lo; k < hi; k++) {
            if (!h[k])
                continue;
            if (held == TRACE_SUMMARY_NO_BUCKET) {
                held = k;
                continue;
            }
            if (sum_put(t, final, TRACE_SUMMARY_BUCKETS, h[held], h[k], (uint64_t)held << 32 | k) < 0)
                return -1;
            held = TRACE_SUMMARY_NO_BUCKET;
        }
    }
    if (held == TRACE_SUMMARY_NO_BUCKET)
        return 0;
    return sum_put(t, final, TRACE_SUMMARY_BUCKETS, h[held], 0, (uint64_t)held << 32 | TRACE_SUMMARY_NO_BUCKET);
}

/* The parts of one snapshot; -1 when it had to be abandoned (sum_put). */
static int sum_put_all(tl_state_t *t, int final, sum_table_t *s, uint64_t start, uint64_t seq)
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

/* The thread's totals so far, as one snapshot (trace.h).  Its time is the
 * tracer's: added to s->tracer, so open frames do not count it.  final: a
 * trace_summary_end; at the thread's (or process's) end the caller's last
 * flush sends it. */
static TR_COLD void sum_snapshot(tl_state_t *t, int final)
{
    sum_table_t *s = t->sum;
    if (!s || stopped())
        return;
    int saved = errno;
    uint64_t start = clock_now(), mark = start;
    if (sum_put_all(t, final, s, start, ++s->seq) == 0) {
        mark = clock_now();
        if (!final)
            tl_flush(t, 0);
    }
    s->tracer += clock_span_ns(mark, clock_now()); /* the last write, too */
    s->next_at = g_sum_every ? clock_now() + g_sum_every : UINT64_MAX;
    errno = saved;
}

/* One hook's work, in either mode; the flush or snapshot it makes due. */
/* A snapshot is due, and the batch with the slow call and its stack is in
 * the ring: stop overwriting now, so that what led up to it stays however
 * late trace_stream comes for it (it turns the ring back to RECORDING when
 * it has sent it, or declines), then ask.  Without the lock the ring goes
 * on recording until the reader freezes it. */
static TR_COLD void trig_ask(tl_state_t *t)
{
    uint32_t tid = t->tid;
    t->trig_pending = 0;
    if (ring_lock(tid)) {
        atomic_store_explicit(REC_U32(state), TRACE_RECORDER_SHIPPING, memory_order_relaxed);
        /* release: pairs with the next holder's acquire CAS in ring_lock */
        atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
    }
    /* release: pairs with the reader's acquire load; the batch with the
     * slow call went in before */
    atomic_fetch_add_explicit(REC_U64(triggers), 1, memory_order_release);
}

/* ---- triggers ----------------------------------------------------------------
 * TRACE_TRIGGER=NAME>LIMIT: the enter and exit hooks of that one function
 * (one compare in every hook finds them) keep the clock of its open calls;
 * an exit that comes more than LIMIT after its entry writes
 * TRACE_MARK_TRIGGER after the exit and flushes at once, so that the call
 * is in the ring, and then, on a flight-recorder ring, asks trace_stream
 * for a snapshot.  At most one ask per TRACE_TRIGGER_GAP_MS per process: a
 * storm of slow calls costs a flush each that often, and the rest are
 * counted in the block's `held`. */

static uint64_t trig_now_ms(void)
{
    return clock_mono_ns() / 1000000u;
}

/* May this slow call ask?  One per TRACE_TRIGGER_GAP_MS, whichever thread. */
static int trig_claim(void)
{
    uint64_t now = trig_now_ms() + TRACE_TRIGGER_GAP_MS; /* + gap: 0 means never asked */
    uint64_t last = atomic_load_explicit(&g_trig_last_ms, memory_order_relaxed);
    return now - last >= TRACE_TRIGGER_GAP_MS &&
           atomic_compare_exchange_strong_explicit(&g_trig_last_ms, &last, now, memory_order_relaxed,
                                                   memory_order_relaxed);
}

/* TRACE_MARK_TRIGGER and the functions open around the slow call, into
 * the batch a flush just emptied (unless the flush was deferred: then as
 * many as the buffer has room for). */
static void trig_write(tl_state_t *t, uint64_t at, uint64_t took)
{
    uint32_t open = t->depth > 0 ? (uint32_t)t->depth : 0, keep = 0;
    uint32_t room = g_buf_max - TL_NOTE_SLOTS > t->n ? g_buf_max - TL_NOTE_SLOTS - t->n : 0;
    if (room == 0)
        return;
    /* the innermost frames whose slot still holds their own entry (a deeper
     * call, since returned, may have taken an outer frame's slot) */
    while (keep < open && keep < TRIG_STACK && keep < room - 1 &&
           t->trig_depth[(open - 1 - keep) % TRIG_STACK] == (int32_t)(open - 1 - keep) &&
           t->trig_stack[(open - 1 - keep) % TRIG_STACK] != 0)
        keep++;
    mark_fill(&t->buf[TL_HEAD + t->n++], at, t->tid, TRACE_MARK_TRIGGER, took);
    t->nmarks++;
    for (uint32_t d = open - keep; d < open; d++) {
        mark_fill(&t->buf[TL_HEAD + t->n++], d, t->tid, TRACE_MARK_TRIGGER_FRAME, t->trig_stack[d % TRIG_STACK]);
        t->nmarks++;
    }
}

/* The hook of the trigger function just recorded its event (the last in
 * the buffer, unless tl_record did not record it).  1 when it flushed. */
static TR_COLD int trig_step(tl_state_t *t, uint8_t kind)
{
    const trace_event_t *e = t->n ? &t->buf[TL_HEAD + t->n - 1] : NULL;
    if (!e || e->func != (uint64_t)g_trig_func || e->kind != kind)
        return 0;
    if (kind == TRACE_KIND_ENTER) {
        if (t->trig_n < TRIG_DEPTH)
            t->trig_at[t->trig_n] = e->ts;
        t->trig_n++;
        return 0;
    }
    if (t->trig_n == 0 || --t->trig_n >= TRIG_DEPTH)
        return 0; /* entered before tracing began, or too deep to be timed */
    uint64_t took = clock_span_ns(t->trig_at[t->trig_n], e->ts);
    if (took <= g_trig_ns)
        return 0;
    if (!trig_claim()) {
        if (g_rec) /* relaxed: a counter the reader only reports */
            atomic_fetch_add_explicit(REC_U64(held), 1, memory_order_relaxed);
        return 0;
    }
    uint64_t at = e->ts;
    tl_flush(t, 0); /* the slow call's exit goes in; then the trigger and its stack */
    trig_write(t, at, took);
    t->trig_pending = g_rec != NULL; /* asks once they are in (ring_flush): maybe this flush, maybe a later one */
    tl_flush(t, 0);
    return 1;
}

/* A summary-mode hook, its clock read: the table, and a snapshot when due.
 * always_inline: tl_hook's summary path is then one function per hook,
 * the exit's lookup and adds included, with no call unless one is due. */
static TR_HOT_INLINE void sum_step(tl_state_t *t, uintptr_t func, uint8_t kind, uint64_t now)
{
    if (kind == TRACE_KIND_ENTER ? sum_enter(t, func, now) : sum_exit(t, func, now))
        sum_snapshot(t, 0);
}

/* Every hook the inlined paths of tl_hook do not take: the mono clock,
 * TRACE_TRIGGER, TRACE_MODE=both, a new thread's first.  Out of line, so
 * that its registers and checks are not paid for on those paths. */
static __attribute__((noinline)) void tl_step(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    if (g_summary) {
        if (TR_UNLIKELY(!t->sum))
            return;
        uint64_t now = clock_now();
        sum_step(t, func, kind, now);
        if (g_summary == 1)
            return;
        uint32_t n = t->n; /* TRACE_MODE=both: the event gets the summary's clock reading */
        int full = tl_record(t, func, site, kind);
        if (t->n != n)
            t->buf[TL_HEAD + t->n - 1].ts = now;
        if (full)
            tl_flush(t, 0);
        return;
    }
    int full = tl_record(t, func, site, kind);
    if (TR_UNLIKELY(g_trig_func != 0)) {
        if (kind == TRACE_KIND_ENTER && t->depth > 0) {
            t->trig_stack[(uint32_t)(t->depth - 1) % TRIG_STACK] = func;
            t->trig_depth[(uint32_t)(t->depth - 1) % TRIG_STACK] = t->depth - 1;
        }
        if (func == g_trig_func && trig_step(t, kind))
            return;
    }
    if (full)
        tl_flush(t, 0);
}

/* TRACE_THREADS: does this thread's name match one of the globs? */
static int tl_name_selected(void)
{
    char name[17] = {0};
#if defined(__linux__)
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
        return 0;
#endif
    char globs[sizeof g_threads];
    memcpy(globs, g_threads, sizeof globs);
    for (char *g = globs, *end; g; g = end) {
        end = strchr(g, ',');
        if (end)
            *end++ = '\0';
        if (*g && fnmatch(g, name, 0) == 0)
            return 1;
    }
    return 0;
}

/* A thread TRACE_THREADS does not select (yet): its hooks only keep its
 * depth, and now and then look at its name, every hook at first (threads
 * are named as they start) and then ever less often.  Once the name
 * matches, the thread is traced from this hook on; the frames open now
 * are inherited, as across fork: their exits are not recorded, so no exit
 * is left unmatched.  Once traced, always traced.  A signal handler's
 * hooks in here come in whole pairs and leave the depth as it was. */
static TR_COLD void tl_hook_ignored(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    int32_t depth = t->ig_depth;
    if (++t->ig_hooks >= t->ig_next) {
        if (t->ig_hooks >= IGNORED_EAGER && t->ig_gap < IGNORED_GAP_MAX)
            t->ig_gap *= 2;
        t->ig_next = t->ig_hooks + t->ig_gap;
        atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (tl_name_selected()) {
            t->inherited += depth > 0 ? (uint32_t)depth : 0;
            t->depth = t->batch_depth = 0;
            atomic_store_explicit(&t->reentered, 0, memory_order_relaxed);
            tl_step(t, func, site, kind);
            atomic_signal_fence(memory_order_seq_cst);
            atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
            return;
        }
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&t->gate, TL_IGNORED, memory_order_relaxed);
    }
    depth += kind == TRACE_KIND_ENTER ? 1 : -1;
    t->ig_depth = depth > 0 ? depth : 0;
}

/* Gate closed: a new thread (start it), a hook inside a hook (drop and
 * count), a thread TRACE_THREADS does not select (yet), or a thread that
 * already flushed its exit (ignore). */
static TR_COLD void tl_hook_slow(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    int gate = atomic_load_explicit(&t->gate, memory_order_relaxed);
    if (gate == TL_BUSY)
        atomic_fetch_add_explicit(&t->reentered, 1, memory_order_relaxed);
    if (gate == TL_IGNORED) {
        tl_hook_ignored(t, func, site, kind);
        return;
    }
    if (gate != TL_NEW)
        return;
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    tl_start(t);
    if (g_threads[0] && !tl_name_selected()) {
        t->ig_depth = kind == TRACE_KIND_ENTER;
        t->ig_hooks = 0;
        t->ig_next = t->ig_gap = 1;
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&t->gate, TL_IGNORED, memory_order_relaxed);
        return;
    }
    tl_step(t, func, site, kind);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
}

/* always_inline: each of the two hooks gets its own copy, its kind a
 * constant, so the enter hook carries no exit code and the reverse. */
static TR_HOT_INLINE void tl_hook(uintptr_t func, uintptr_t site, uint8_t kind)
{
    tl_state_t *t = &tl;
    if (TR_UNLIKELY(atomic_load_explicit(&t->gate, memory_order_relaxed) != TL_OPEN)) {
        tl_hook_slow(t, func, site, kind);
        return;
    }
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    /* signal fences: a handler on this thread sees the gate closed before
     * any buffer write, and open only after the last */
    atomic_signal_fence(memory_order_seq_cst);
    /* The common paths are inlined here, whole: one value for every choice
     * made at start, the counter read directly, and no call (with its
     * saved registers) unless a flush or snapshot is due. */
    int path = g_hook_path;
    if (TR_LIKELY(path == HOOK_EVENTS)) {
        if (TR_UNLIKELY(tl_record_at(t, func, site, kind, CLOCK_HAS_TICKS)))
            tl_flush(t, 0);
    } else if (path == HOOK_SUMMARY && TR_LIKELY(t->sum != NULL))
        sum_step(t, func, kind, clock_ticks());
    else
        tl_step(t, func, site, kind);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
}

TR_NOINSTR void __cyg_profile_func_enter(void *func, void *call_site)
{
    if (atomic_load_explicit(&g_capture, memory_order_relaxed))
        tl_hook((uintptr_t)func, (uintptr_t)call_site, TRACE_KIND_ENTER);
}

TR_NOINSTR void __cyg_profile_func_exit(void *func, void *call_site)
{
    if (atomic_load_explicit(&g_capture, memory_order_relaxed))
        tl_hook((uintptr_t)func, (uintptr_t)call_site, TRACE_KIND_EXIT);
}

/* ---- configuration ---------------------------------------------------------
 * From the environment, once.  A bad value gets one line and the default. */

static int cfg_enabled(void)
{
    const char *v = getenv("TRACE_ENABLE");
    if (v && strcmp(v, "1") == 0)
        return 1;
    if (v && *v && strcmp(v, "0") != 0)
        say("TRACE_ENABLE=", v, " is not 0 or 1; tracing off", (char *)0);
    return 0;
}

static uint64_t cfg_u64(const char *name, uint64_t min, uint64_t max, uint64_t def)
{
    const char *v = getenv(name), *p = v;
    uint64_t x = 0;
    if (!v || !*v)
        return def;
    for (; *p >= '0' && *p <= '9' && x <= (UINT64_MAX - 9) / 10; p++)
        x = x * 10 + (uint64_t)(*p - '0');
    if (*p == '\0' && x >= min && x <= max)
        return x;
    char a[21], b[21], c[21];
    say(name, "=", v, " is not a whole number from ", num(min, a), " to ", num(max, b), "; using ", num(def, c),
        (char *)0);
    return def;
}

/* TRACE_THREADS=GLOB[,GLOB...]: only threads whose name matches are traced. */
/* TRACE_MODE and the summary settings; TRACE_SUMMARY_MS (0: snapshots at
 * thread and process exit only). */
static uint64_t cfg_mode(void)
{
    const char *m = getenv("TRACE_MODE");
    if (m && !strcmp(m, "summary"))
        g_summary = 1;
    else if (m && !strcmp(m, "both")) /* events and summaries, to check one against the other */
        g_summary = 2;
    else if (m && *m && strcmp(m, "events"))
        say("TRACE_MODE=", m, ": expected events, summary or both; events", (char *)0);
    g_sum_funcs = (uint32_t)cfg_u64("TRACE_SUMMARY_FUNCS", 16, 65536, 256);
    g_sum_depth = (uint32_t)cfg_u64("TRACE_SUMMARY_DEPTH", 16, 65536, 256);
    return cfg_u64("TRACE_SUMMARY_MS", 0, 3600000u, 1000u);
}

static void cfg_threads(void)
{
    const char *v = getenv("TRACE_THREADS");
    if (!v || !*v)
        return;
    if (strlen(v) > THREADS_MAX) {
        char n[21];
        say("TRACE_THREADS is longer than ", num(THREADS_MAX, n), " bytes; tracing every thread", (char *)0);
        return;
    }
    strcpy(g_threads, v);
}

/* TRACE_TRIGGER's function by name: the program's own symbol table, read
 * once from its file at start (the hooks never look anything up).  Its
 * link-time address plus the load bias, or 0. */
static uint64_t trig_symbol_in(const unsigned char *f, uint64_t size, const char *name)
{
    const ElfW(Ehdr) *eh = (const void *)f;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        eh->e_shoff > size || (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size - eh->e_shoff)
        return 0;
    const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
    for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size ||
                sh[i].sh_size > size - sh[i].sh_offset)
                continue;
            const ElfW(Shdr) *str = &sh[sh[i].sh_link];
            if (str->sh_offset > size || str->sh_size > size - str->sh_offset)
                continue;
            const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
            for (uint64_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
                if ((sym[k].st_info & 0xf) == STT_FUNC && sym[k].st_value && sym[k].st_name < str->sh_size &&
                    strncmp((const char *)f + str->sh_offset + sym[k].st_name, name,
                            str->sh_size - sym[k].st_name) == 0)
                    return (uint64_t)sym[k].st_value + g_load_bias;
        }
    return 0;
}

static uint64_t trig_symbol(const char *name)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint64_t addr = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
        void *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f != MAP_FAILED) {
            addr = trig_symbol_in(f, (uint64_t)st.st_size, name);
            munmap(f, (size_t)st.st_size);
        }
    }
    close(fd);
    return addr;
}

/* LIMIT of TRACE_TRIGGER: a number and ns, us, ms or s; 0 when it is not one. */
static uint64_t trig_limit(const char *v)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    static const struct { const char *unit; uint64_t ns; } units[] = {
        {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    for (unsigned i = 0; end != v && !errno && i < sizeof units / sizeof *units; i++)
        if (strcmp(end, units[i].unit) == 0 && n <= UINT64_MAX / units[i].ns)
            return (uint64_t)n * units[i].ns;
    return 0;
}

/* TRACE_TRIGGER=NAME>LIMIT (NAME may be a link-time address, 0x...). */
static void cfg_trigger(void)
{
    const char *v = getenv("TRACE_TRIGGER");
    if (!v || !*v)
        return;
    const char *gt = strrchr(v, '>');
    char name[256];
    if (!gt || gt == v || (size_t)(gt - v) >= sizeof name || (g_trig_ns = trig_limit(gt + 1)) == 0) {
        say("TRACE_TRIGGER=", v, " is not NAME>LIMIT (such as parse>2ms; units ns, us, ms, s); no trigger",
            (char *)0);
        return;
    }
    if (g_summary) {
        say("TRACE_TRIGGER is for event traces, not TRACE_MODE=summary; no trigger", (char *)0);
        return;
    }
    memcpy(name, v, (size_t)(gt - v));
    name[gt - v] = 0;
    uint64_t addr = 0;
    if (strncmp(name, "0x", 2) == 0) {
        char *end;
        addr = strtoull(name + 2, &end, 16);
        addr = *end || end == name + 2 || addr == 0 ? 0 : addr + g_load_bias;
    } else
        addr = trig_symbol(name);
    if (addr == 0)
        say("TRACE_TRIGGER: no function ", name, " in this program's symbols; no trigger", (char *)0);
    g_trig_func = (uintptr_t)addr;
}

/* TRACE_FULL: what a full TRACE_MAX_MB does in file mode. */
static int cfg_full(void)
{
    const char *v = getenv("TRACE_FULL");
    if (!v || !*v || strcmp(v, "stop") == 0)
        return 0;
    if (strcmp(v, "wrap") == 0)
        return 1;
    say("TRACE_FULL=", v, " is not stop or wrap; stopping when full", (char *)0);
    return 0;
}

static int cfg_clock(void)
{
    const char *v = getenv("TRACE_CLOCK");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return CLOCK_AUTO;
    if (strcmp(v, "tsc") == 0)
        return CLOCK_TSC;
    if (strcmp(v, "mono") == 0)
        return CLOCK_MONO;
    say("TRACE_CLOCK=", v, " is not auto, tsc or mono; using auto", (char *)0);
    return CLOCK_AUTO;
}

/* ---- start, thread exit, fork, process exit ------------------------------ */

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Nonzero when [vaddr, vaddr + len) lies in a loaded segment: only then is
 * a note readable in memory. */
static int build_id_mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_filesz &&
            vaddr - ph->p_vaddr <= ph->p_filesz - len)
            return 1;
    }
    return 0;
}

/* ---- loaded modules ---------------------------------------------------------
 * The list of loaded objects that each thread writes into its own records
 * (trace.h, "loaded modules").  dl_iterate_phdr's add and remove counters
 * say cheaply, at every flush, whether the set changed; only then is it
 * read again, by one thread at a time.  A flush that finds another thread
 * at the table waits for it, briefly (MOD_WAIT_NS, in the flush's tracer
 * time), so that a thread's first list comes before its first events
 * however threads start; past that it goes on without, and writes the
 * list at a later flush.  In stream mode a list goes into the ring in one
 * put, so a full ring never tears it.  The table is fixed (no malloc); a
 * path longer than MOD_PATH_MAX - 1 is cut, and the analyzer then finds
 * no file by it.
 * Each thread writes the list at its first flush and again whenever the
 * table's number moved past the one it last wrote. */

#define MOD_MAX 128u        /* modules tracked at once; more are counted, not listed */
#define MOD_PATH_MAX 256u   /* bytes of a path kept, NUL included */
#define MOD_CHUNK 32u       /* records written at a time from the stack */
#define MOD_RECS_EACH (4u + (MOD_PATH_MAX + TRACE_MODULE_BYTES - 2u) / TRACE_MODULE_BYTES) /* a module's, at most */
_Static_assert(MOD_RECS_EACH + 1u <= MOD_CHUNK, "a chunk holds LIST or LIST_END and a whole module");
#define MOD_WAIT_NS 2000000u /* a flush waits this long at most for another's list */

typedef struct mod_info {
    uint64_t id, bias, lo, hi; /* number, load bias, executable extent [lo, hi) */
    unsigned char build_id[TRACE_MODULE_BYTES];
    uint8_t build_id_len;
    uint8_t main;              /* the program itself */
    uint16_t path_len;
    char path[MOD_PATH_MAX];
} mod_info_t;

static mod_info_t g_mods[MOD_MAX], g_mods_scan[MOD_MAX];
static uint32_t g_nmods, g_nmods_scan;
static uint64_t g_mods_left_out;             /* objects beyond MOD_MAX at the last reading */
static uint64_t g_mod_next_id = 1;
static _Atomic uint64_t g_mod_list;          /* the table's number: 0 until first read */
static _Atomic unsigned long long g_mod_adds, g_mod_subs; /* the loader's counters it was read at */
static atomic_flag g_mod_busy = ATOMIC_FLAG_INIT; /* one thread reads or copies the table at a time */
static trace_event_t g_mod_recs[2u + MOD_MAX * MOD_RECS_EACH]; /* a whole list, for the ring (under g_mod_busy) */

/* The GNU build-id among the notes at p (size bytes, in memory, so in our
 * own byte order): up to `cap` bytes into out; its full length, 0 if none.
 * Names and descriptors are padded to 4 bytes, or to 8 in a segment
 * aligned to 8. */
static uint32_t build_id_in_notes(const unsigned char *p, uint64_t size, uint64_t align, unsigned char *out,
                                  uint32_t cap)
{
    uint64_t pad = align == 8 ? 7u : 3u, off = 0;
    while (size - off >= 12u) {
        uint32_t nh[3]; /* namesz, descsz, type */
        memcpy(nh, p + off, sizeof nh);
        uint64_t name = off + 12u, desc = name + (((uint64_t)nh[0] + pad) & ~pad);
        if (desc > size || nh[1] > size - desc)
            return 0;
        if (nh[2] == NT_GNU_BUILD_ID && nh[0] == 4u && memcmp(p + name, "GNU", 4) == 0 && nh[1] > 0) {
            memcpy(out, p + desc, nh[1] < cap ? nh[1] : cap);
            return nh[1];
        }
        off = desc + (((uint64_t)nh[1] + pad) & ~pad);
        if (off > size)
            return 0;
    }
    return 0;
}

/* The object's build-id from its PT_NOTE segments: its length, 0 if none. */
static uint32_t build_id_of(const struct dl_phdr_info *info, unsigned char *out, uint32_t cap)
{
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint32_t len;
        if (ph->p_type == PT_NOTE && build_id_mapped(info, ph->p_vaddr, ph->p_filesz) &&
            (len = build_id_in_notes((const unsigned char *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr),
                                     ph->p_filesz, ph->p_align, out, cap)) > 0)
            return len;
    }
    return 0;
}

/* One object into g_mods_scan: its extent, build-id and path. */
static int mod_scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    mod_info_t m;
    memset(&m, 0, sizeof m);
    m.bias = (uint64_t)info->dlpi_addr;
    m.lo = UINT64_MAX;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t lo = m.bias + ph->p_vaddr, hi = lo + ph->p_memsz;
        m.lo = lo < m.lo ? lo : m.lo;
        m.hi = hi > m.hi ? hi : m.hi;
    }
    if (m.lo >= m.hi)
        return 0; /* no code: nothing of it can be named */
    uint32_t len = build_id_of(info, m.build_id, sizeof m.build_id);
    m.build_id_len = (uint8_t)(len < TRACE_MODULE_BYTES ? len : TRACE_MODULE_BYTES);
    m.main = g_nmods_scan == 0 && g_mods_left_out == 0; /* the first is the program */
    const char *name = info->dlpi_name;
    ssize_t n = 0;
    if (m.main && (!name || !*name)) {
        n = readlink("/proc/self/exe", m.path, sizeof m.path - 1); /* cold: after a change only */
        n = n > 0 ? n : 0;
    } else if (name) {
        size_t l = strlen(name);
        n = (ssize_t)(l < sizeof m.path - 1 ? l : sizeof m.path - 1);
        memcpy(m.path, name, (size_t)n);
    }
    m.path_len = (uint16_t)n;
    if (g_nmods_scan >= MOD_MAX) {
        g_mods_left_out++;
        return 0;
    }
    g_mods_scan[g_nmods_scan++] = m;
    return 0;
}

/* The loader's add and remove counters, from its first object. */
static int mod_counters(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *c = data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1; /* a loader without them: the set is read once, at start */
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

/* A module read again keeps its number when it is the same mapping. */
static uint64_t mod_id_of(const mod_info_t *m)
{
    for (uint32_t i = 0; i < g_nmods; i++) {
        const mod_info_t *o = &g_mods[i];
        if (o->bias == m->bias && o->lo == m->lo && o->hi == m->hi && o->path_len == m->path_len &&
            memcmp(o->path, m->path, m->path_len) == 0 && o->build_id_len == m->build_id_len &&
            memcmp(o->build_id, m->build_id, m->build_id_len) == 0)
            return o->id;
    }
    return g_mod_next_id++;
}

/* Reads the set of loaded objects again if the loader's counters moved
 * since the last reading (or there was none).  Called with g_mod_busy. */
static void mod_refresh(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(mod_counters, c);
    uint64_t list = atomic_load_explicit(&g_mod_list, memory_order_relaxed);
    if (list && c[0] == atomic_load_explicit(&g_mod_adds, memory_order_relaxed) &&
        c[1] == atomic_load_explicit(&g_mod_subs, memory_order_relaxed))
        return;
    g_nmods_scan = 0;
    g_mods_left_out = 0;
    dl_iterate_phdr(mod_scan_one, NULL);
    for (uint32_t i = 0; i < g_nmods_scan; i++)
        g_mods_scan[i].id = mod_id_of(&g_mods_scan[i]);
    memcpy(g_mods, g_mods_scan, g_nmods_scan * sizeof *g_mods);
    g_nmods = g_nmods_scan;
    atomic_store_explicit(&g_mod_adds, c[0], memory_order_relaxed);
    atomic_store_explicit(&g_mod_subs, c[1], memory_order_relaxed);
    atomic_store_explicit(&g_mod_list, list + 1, memory_order_relaxed);
}

static void mod_fill(trace_event_t *e, uint32_t tid, uint8_t part, uint8_t count, uint64_t ts, uint64_t func,
                     uint64_t site)
{
    mark_fill(e, ts, tid, func, site); /* the same fields, then the kind and parts */
    e->kind = TRACE_KIND_MODULE;
    e->pad[0] = part;
    e->pad[1] = count;
}

/* Up to 24 bytes as three words, byte i at bits 8i (trace.h). */
static void mod_words(const unsigned char *b, uint32_t n, uint64_t w[3])
{
    unsigned char tmp[TRACE_MODULE_BYTES] = {0};
    memcpy(tmp, b, n);
    for (int k = 0; k < 3; k++)
        w[k] = name_bytes((const char *)tmp + 8 * k);
}

static int mod_take(void);

/* One module's records (at most MOD_RECS_EACH) into rec; how many. */
static uint32_t mod_records(const mod_info_t *m, uint32_t tid, trace_event_t *rec)
{
    uint32_t n = 0;
    uint64_t w[3];
    mod_fill(&rec[n++], tid, TRACE_MODULE_BEGIN, 0, m->id, m->bias, m->main ? TRACE_MODULE_MAIN : 0);
    mod_fill(&rec[n++], tid, TRACE_MODULE_TEXT, 0, m->id, m->lo, m->hi);
    if (m->build_id_len) {
        mod_words(m->build_id, m->build_id_len, w);
        mod_fill(&rec[n++], tid, TRACE_MODULE_BUILD_ID, m->build_id_len, w[0], w[1], w[2]);
    }
    for (uint32_t at = 0; at < m->path_len; at += TRACE_MODULE_BYTES) {
        uint32_t k = m->path_len - at < TRACE_MODULE_BYTES ? m->path_len - at : TRACE_MODULE_BYTES;
        mod_words((const unsigned char *)m->path + at, k, w);
        mod_fill(&rec[n++], tid, TRACE_MODULE_PATH, (uint8_t)k, w[0], w[1], w[2]);
    }
    mod_fill(&rec[n++], tid, TRACE_MODULE_END, 0, m->id, m->path_len, 0);
    return n;
}

static void mod_release(void)
{
    atomic_flag_clear_explicit(&g_mod_busy, memory_order_release);
}

/* The table as records into sink, a chunk at a time: each chunk is made
 * with g_mod_busy held (on entry) and written with it released, so that
 * other threads wait for a copy, never for a write.  Returns with it
 * released; 0 when the whole list went, else nonzero (the sink failed, or
 * the table changed or stayed busy meanwhile: the part written is torn,
 * and the list is due again). */
static int mod_write(tl_state_t *t, mod_sink_t sink, uint64_t list)
{
    trace_event_t rec[MOD_CHUNK];
    uint64_t now = clock_now();
    uint32_t n = 0, i = 0, nmods = g_nmods;
    mod_fill(&rec[n++], t->tid, TRACE_MODULE_LIST, 0, now, list, nmods);
    for (;;) {
        while (i < nmods && n + MOD_RECS_EACH <= MOD_CHUNK)
            n += mod_records(&g_mods[i++], t->tid, rec + n);
        int last = i == nmods && n < MOD_CHUNK;
        if (last)
            mod_fill(&rec[n++], t->tid, TRACE_MODULE_LIST_END, 0, now, list, g_mods_left_out);
        mod_release();
        if (sink(t, rec, n) || last)
            return !last;
        n = 0;
        if (!mod_take())
            return -1;
        if (atomic_load_explicit(&g_mod_list, memory_order_relaxed) != list) {
            mod_release();
            return -1;
        }
    }
}

/* g_mod_busy, waiting for it (yielding) for at most MOD_WAIT_NS: its
 * holder reads the loader's list or copies a chunk of it.  0 if not had. */
static int mod_take(void)
{
    uint64_t begin = 0;
    while (atomic_flag_test_and_set_explicit(&g_mod_busy, memory_order_acquire)) {
        uint64_t now = clock_mono_ns();
        if (!begin)
            begin = now;
        else if (now - begin > MOD_WAIT_NS)
            return 0;
        sched_yield();
    }
    return 1;
}

/* The ring's way: the whole list in one put, made and put with
 * g_mod_busy held (a put is a copy under the ring's lock), so that a full
 * ring never tears it: it goes whole, or at a later flush.  Returns with
 * g_mod_busy released; 0 when it went. */
static int mod_write_whole(tl_state_t *t, mod_sink_t sink, uint64_t list)
{
    uint64_t now = clock_now();
    uint32_t n = 0;
    mod_fill(&g_mod_recs[n++], t->tid, TRACE_MODULE_LIST, 0, now, list, g_nmods);
    for (uint32_t i = 0; i < g_nmods; i++)
        n += mod_records(&g_mods[i], t->tid, g_mod_recs + n);
    mod_fill(&g_mod_recs[n++], t->tid, TRACE_MODULE_LIST_END, 0, now, list, g_mods_left_out);
    int rc = sink(t, g_mod_recs, n);
    mod_release();
    return rc;
}

/* At a flush, before its batch: the thread's list when the set changed
 * since it last wrote one (whole: in one sink call, for the ring; else a
 * chunk at a time).  0 when none was due or it went; nonzero when the
 * sink failed (it is due again at the next flush). */
/* Bytes a whole module list can take (TRACE_FULL=wrap keeps room for one). */
static uint64_t mod_list_room(void)
{
    return sizeof g_mod_recs;
}

static int mod_flush(tl_state_t *t, mod_sink_t sink, int whole)
{
    if (!mod_take())
        return 0; /* another thread has had the table too long: this one looks next time */
    mod_refresh();
    uint64_t list = atomic_load_explicit(&g_mod_list, memory_order_relaxed);
    if (list == t->mod_list) {
        mod_release();
        return 0;
    }
    int rc = whole ? mod_write_whole(t, sink, list) : mod_write(t, sink, list); /* both release it */
    if (rc == 0)
        t->mod_list = list;
    return rc;
}

/* The first entry is the program itself: its load bias, and its build-id
 * from a PT_NOTE segment (cold: once, at start). */
static int main_program(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    unsigned char id[16] = {0};
    g_load_bias = (uint64_t)info->dlpi_addr;
    g_have_build_id = build_id_of(info, id, sizeof id) > 0;
    g_build_id[0] = name_bytes((const char *)id);
    g_build_id[1] = name_bytes((const char *)id + 8);
    return 1;
}

/* Cost of the recording path, timed into this thread's (unused) buffer;
 * the best of a few rounds, in ns per hook.  The analyzer may subtract it. */
static uint64_t hook_measure(void)
{
    tl_state_t *t = &tl;
    uint64_t best = UINT64_MAX;
    t->buf = t->own; /* before this thread's first hook (tl_start) */
    for (int round = 0; round < 5; round++) {
        uint64_t start = clock_mono_ns();
        for (uint32_t i = 0; i < HOOK_PAIRS; i++) {
            (void)tl_record(t, 0x1000u, i, TRACE_KIND_ENTER);
            (void)tl_record(t, 0x1000u, i, TRACE_KIND_EXIT);
        }
        uint64_t took = clock_mono_ns() - start;
        best = took < best ? took : best;
        t->n = 0;
    }
    t->depth = 0;
    return (best + HOOK_PAIRS) / (2u * HOOK_PAIRS);
}

/* pthread key destructor: the thread's last flush, ending with THREAD_EXIT
 * so that a later thread reusing the tid starts from an empty stack. */
static void tl_thread_exit(void *arg)
{
    tl_state_t *t = &tl;
    int saved = errno;
    (void)arg;
    if (atomic_load_explicit(&t->gate, memory_order_relaxed) != TL_OPEN)
        return;
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (!stopped()) {
        sum_snapshot(t, TRACE_SUMMARY_THREAD_EXIT); /* summary mode: its totals, before its exit marker */
        tl_push_mark(t, clock_now(), TRACE_MARK_THREAD_EXIT, 0);
        wrap_note(t);
        tl_flush(t, 1);
    }
    file_close(t);
    sum_free(t);
    file_buf_free(t);
    atomic_store_explicit(&t->gate, TL_DEAD, memory_order_relaxed);
    errno = saved;
}

/* The child of fork is a new traced process with one thread: new pid, new
 * files, fresh budget; the parent's buffered events are the parent's to
 * write; frames open at the fork are inherited, their exits not recorded. */
static void trace_fork_child(void)
{
    tl_state_t *t = &tl;
    if (!g_started)
        return;
    g_pid = (uint32_t)getpid();
    atomic_store_explicit(&g_budget_used, 0, memory_order_relaxed);
    int budget = STOP_BUDGET; /* the budget is per process: start again */
    if (atomic_compare_exchange_strong(&g_stop, &budget, STOP_NONE))
        atomic_store_explicit(&g_capture, 1, memory_order_relaxed);
    if (t->has_fd)
        close(t->fd);
    t->has_fd = 0;
    t->seq = 0;
    t->seg_used = 0;
    wrap_fork_child();
    t->n = t->nmarks = t->ntail = 0;
    t->flush_at = tl_batch(t);
    t->flush_by = tl_flush_deadline(clock_now());
    t->lost = 0;
    memset(t->name, 0, sizeof t->name); /* the child's files need it again */
    t->mod_list = 0;                     /* and its module list */
    atomic_flag_clear(&g_mod_busy);      /* another thread of the parent may have had it */
    atomic_store_explicit(&t->reentered, 0, memory_order_relaxed);
    t->inherited += t->depth > 0 ? (uint32_t)t->depth : 0;
    t->depth = t->batch_depth = 0;
    if (t->sum) { /* the parent's totals are the parent's: start empty */
        t->inherited += t->sum->sp;
        sum_free(t);
        t->sum = sum_alloc();
    }
    if (t->tid)
        t->tid = (uint32_t)syscall(SYS_gettid);
    if (g_ring_joined && !stopped()) {
        atomic_fetch_add_explicit(RING_U32(writers), 1, memory_order_release); /* as in ring_announce */
        atomic_store_explicit(&g_announce_due, 1, memory_order_relaxed); /* a new process */
    } else
        g_ring_joined = 0;
}

/* atexit: flush the exiting thread with a clock anchor (ticks and ns at one
 * instant, for an exact tick rate), then stop capture and leave the ring.
 * Other threads' unflushed events end here. */
static void trace_exit(void)
{
    tl_state_t *t = &tl;
    int saved = errno;
    if (!g_started)
        return;
    int gate = atomic_load_explicit(&t->gate, memory_order_relaxed);
    if (gate != TL_BUSY) { /* not from inside a hook; DEAD: the last thread
                            * after pthread_exit, still due the anchor */
        atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (gate == TL_NEW)
            tl_start(t);
        sum_snapshot(t, TRACE_SUMMARY_PROCESS_EXIT);
        if (!stopped() && g_ticks) {
            uint64_t ticks, ns;
            clock_pair(&ticks, &ns);
            tl_push_mark(t, ticks, TRACE_MARK_CLOCK_ANCHOR, ns);
        }
        if (!stopped())
            wrap_note(t);
        tl_flush(t, 1);
        file_close(t);
        atomic_store_explicit(&t->gate, TL_DEAD, memory_order_relaxed);
    }
    (void)stop_claim(STOP_EXIT);
    if (g_ring_joined) {
        g_ring_joined = 0;
        /* release: pairs with trace_stream's acquire load of writers; all
         * this process put in the ring is visible once it sees us gone */
        atomic_fetch_sub_explicit(RING_U32(writers), 1, memory_order_release);
    }
    errno = saved;
}

static void trace_setup(void)
{
    uint64_t max_mb = cfg_u64("TRACE_MAX_MB", 1, CFG_MB_MAX, DEFAULT_MAX_MB);
    uint64_t seg_mb = cfg_u64("TRACE_SEG_MB", 1, CFG_MB_MAX, DEFAULT_SEG_MB);
    uint64_t shm_size = cfg_u64("TRACE_SHM_SIZE", TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY,
                                (uint64_t)TRACE_SHM_HEADER_SIZE + (UINT32_MAX & ~(TRACE_EVENT_SIZE - 1)),
                                TRACE_SHM_DEFAULT_SIZE);
    g_wait_ns = cfg_u64("TRACE_SHM_WAIT_US", 0, CFG_WAIT_US_MAX, 0) * 1000u;
    uint64_t flush_ms = cfg_u64("TRACE_FLUSH_MS", 0, FLUSH_MS_MAX, FLUSH_MS_DEFAULT);
    uint64_t sum_ms = cfg_mode();
    cfg_threads();
    int clock_mode = cfg_clock();
    const char *dir = getenv("TRACE_DIR");
    const char *shm = getenv("TRACE_SHM");

    dl_iterate_phdr(main_program, NULL);
    cfg_trigger();
    g_wrap = cfg_full();
    g_file_head = HDR_BYTES + (g_have_build_id ? EV_BYTES : 0) + (g_wrap ? EV_BYTES : 0);
    g_budget_max = max_mb * MIB;
    g_budget_soft = g_budget_max - g_file_head - EV_BYTES; /* room to say "stopped" */
    g_seg_bytes = seg_mb * MIB;
    if (g_wrap && g_seg_bytes > g_budget_max / 32u) /* many segments: each goes as a small part */
        g_seg_bytes = g_budget_max / 32u > WRAP_SEG_MIN ? g_budget_max / 32u : WRAP_SEG_MIN;
    g_pid = (uint32_t)getpid();
    clock_init(clock_mode);
    sum_clock_init();
    g_sum_every = sum_ms * (g_ticks ? g_tick_hz / 1000u : 1000000u);
    g_flush_every = flush_ms * (g_ticks ? g_tick_hz / 1000u : 1000000u);
    g_hook_ns = hook_measure();
    if (pthread_key_create(&g_key, tl_thread_exit) != 0) {
        say("cannot create a thread key; tracing off", (char *)0);
        return;
    }
    if (!(shm && *shm && ring_attach(shm, shm_size)) && !file_setup(dir && *dir ? dir : DEFAULT_DIR))
        return;
    if (pthread_atfork(NULL, NULL, trace_fork_child) != 0 || atexit(trace_exit) != 0)
        say("cannot register the fork and exit handlers; traces may end early", (char *)0);
    g_started = 1;
    if (g_ticks)
        g_hook_path = g_summary == 1 ? HOOK_SUMMARY : !g_summary && !g_trig_func ? HOOK_EVENTS : HOOK_STEP;
    atomic_store_explicit(&g_capture, 1, memory_order_release);
}

/* Priority 101: before the program's own constructors, so they are traced. */
__attribute__((constructor(101))) static void trace_start(void)
{
    int saved = errno;
    if (cfg_enabled())
        trace_setup();
    errno = saved;
}
