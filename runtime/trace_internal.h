/*
 * trace_internal.h - what the parts of the runtime share: the tunables, the
 * process-wide state, the per-thread state and the functions declared ahead.
 *
 * Private to runtime/: included once, first, by trace.c, which then includes
 * the parts (trace_*.c) in order, so the runtime is one translation unit and
 * every function in it static.  The build flattens all of it, this header
 * included, into the one trace.c that users copy (build/dist/trace.c);
 * only trace.h, the public header, stays a header of its own.
 */
#ifndef TRACE_INTERNAL_H
#define TRACE_INTERNAL_H

#define _GNU_SOURCE            /* syscall(), dl_iterate_phdr(), shm_open() */
#define _FILE_OFFSET_BITS 64   /* segments past 2 GiB on 32-bit systems */

#include "trace.h"
#include "trace_shm.h"

#include <dlfcn.h> /* dlsym(RTLD_NEXT): the loader's dlopen and dlclose behind ours */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h> /* TRACE_SHM_GROUP: a ring shared with a group */
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
enum hook_path {
    HOOK_STEP = 0, /* tl_step, in TRACE_MODE's mode */
    HOOK_EVENTS,   /* tl_hook's inlined events */
    HOOK_SUMMARY,  /* tl_hook's inlined summaries */
    HOOK_STEP_EV,  /* tl_step, as events (live control: a trigger, or the mode switched) */
    HOOK_STEP_SUM  /* tl_step, as summaries (live control: the mode switched, the mono clock) */
};
static int g_hook_path;       /* enum hook_path, set once before capture starts: the tick
                               * clock and events without TRACE_TRIGGER, or summaries
                               * alone, take tl_hook's inlined paths; the rest tl_step */
static _Atomic int g_stop;    /* enum stop_reason; the first stop wins */
static int g_started;         /* setup completed: exit/fork handlers act */
static pthread_key_t g_key;   /* its destructor flushes an exiting thread */
static uint32_t g_pid;

static uint32_t g_batch = TRACE_BUF_EVENTS; /* events per flush (a small ring: fewer) */
static int g_summary;         /* TRACE_MODE=summary: aggregates, not events (2: both, to compare) */
static uint32_t g_sum_funcs = 65536u, g_sum_depth = 256u; /* TRACE_SUMMARY_FUNCS, _DEPTH */
#define CTL_DEPTH 1024u /* frames whose control decision a thread keeps; deeper ones are always recorded */
static trace_shm_control_t *g_ctl; /* TRACE_CONTROL=1: the control block (trace_control.c), else NULL */
static char g_ctl_name[64];        /* its segment's name */
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
static _Atomic uint64_t g_mod_gone; /* modules seen closed so far (trace_modules.c) */
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
static int g_ring_commit;     /* version 3, or 2 with TRACE_SHM_FEATURE_COMMIT: copies outside the
                               * lock, each batch committed */
static uint8_t g_ring_mark;   /* the batch header's mark: TRACE_SHM_BATCH_MARK in a version-2 ring */
static int g_ring_joined;     /* this process counts in `writers` */
static int g_ring_fd = -1;    /* kept open for its shared flock: proof of life */
static uintptr_t g_trig_func;  /* TRACE_TRIGGER: the function (runtime address; 0: none) */
static uint64_t g_trig_ns;     /* ... and the duration a call of it must exceed */
static _Atomic uint64_t g_trig_last_ms; /* when this process last asked for a snapshot */
static trace_shm_recorder_t *g_rec; /* the flight-recorder block, when the ring has one */
static trace_shm_recorder_t *g_rec_live; /* ... found through the control block (TRACE_CTL_HAS_RECORDER):
                                          * it may be OFF, and counts us in `aware` */
static trace_shm_losses_t *g_losses; /* the per-thread loss table, when the ring has one */
static size_t g_ring_map_len;  /* bytes mapped: header, storage (and the block) */

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
    uint64_t lost_wrap;          /* ... of them, TRACE_FULL=wrap's drops, counted in g_wrap_unsaid */
    int32_t lost_low, lost_after; /* depth extremes around them (RESYNC) */
    int fd, has_fd;              /* file mode: the current segment */
    uint32_t seq;
    uint64_t seg_used;           /* bytes in it, header included */
    uint64_t seg_events;         /* enter/exit events in it, and those its THREAD_LOST markers say were
                                  * lost (TRACE_FULL=wrap counts them all as discarded when it goes, so
                                  * a drop whose marker is removed is still counted) */
    char name[16];               /* the thread name last written out */
    char name_out[16];           /* the name the flush under way carries */
    uint32_t pid_sent;           /* stream mode: the pid its PROCESS marker gave */
    int carries_pid;             /* the flush under way carries PROCESS ... */
    int carries_announce;        /* ... and LOAD_BIAS (+ BUILD_ID) */
    int rec_announce;            /* flight recorder: its next flush says the process again (rec_say_again) */
    struct sum_table *sum;       /* TRACE_MODE=summary: the thread's aggregates */
    int sum_writing;             /* sum_snapshot is writing them: its flush's time is counted there */
    uint64_t mod_list;           /* the module list it last wrote (0: none yet) */
    uint64_t mod_gone;           /* g_mod_gone when it did (or began): the closed modules it has had */
    uint64_t rec_said_at;        /* flight recorder: the block's `overwritten` when it last wrote them */
    uintptr_t trig_func;         /* TRACE_TRIGGER: the function this thread times (runtime address; 0: none):
                                  * g_trig_func, or live control's (TRACE_CTL_TRIGGER) */
    uint64_t trig_ns;            /* ... and its limit */
    uint32_t trig_n;             /* ... calls of it open (entered here) */
    int trig_pending;            /* ... a slow call's trigger waits for its batch to be in the ring */
    uint64_t trig_at[TRIG_DEPTH]; /* ... the clock at the entry of the innermost TRIG_DEPTH */
    uintptr_t trig_stack[TRIG_STACK]; /* ... the functions entered, by depth modulo TRIG_STACK, */
    int32_t trig_depth[TRIG_STACK];   /* ... and the depth each was entered at */
    uint64_t ctl_gen;            /* TRACE_CONTROL: the generation applied (0: none) */
    int ctl_path[2];             /* ... enum hook_path for the calls it records as events [0] and as
                                  * summaries [1] (tl_paths) */
    int ctl_mode;                /* ... new calls are recorded as summaries (1) or events (0) */
    int ctl_switched;            /* ... ctl_mode has ever differed from TRACE_MODE's: ctl_sum is kept */
    uint64_t ctl_sum[CTL_DEPTH / 64u]; /* ... bit d: the call at depth d is in the mode TRACE_MODE's is not */
    int seg_summary;             /* file mode: the open segment's head says TRACE_FILE_VERSION_SUMMARY */
    uint32_t ctl_flags, ctl_buf; /* ... its TRACE_CTL_* flags, the buffer of its table */
    uint32_t ctl_depth;          /* ... frames entered since the thread began, less those returned */
    uint32_t ctl_in;             /* ... TRACE_CTL_UNDER: 1 + the depth of the open call of the function, 0: none */
    uint32_t ctl_levels;         /* ... levels below it recorded */
    uint64_t ctl_under;          /* ... the function, link-time */
    uint64_t ctl_skip[CTL_DEPTH / 64u]; /* ... bit d: the call at depth d was not recorded */
    trace_event_t *buf;          /* `own`, or file mode's larger buffer (file_buf_grow) */
    trace_event_t own[TL_HEAD + TRACE_BUF_EVENTS + TL_TAIL];
} tl_state_t;

static _Thread_local tl_state_t tl;

/* ---- declared ahead ---------------------------------------------------------
 * Functions a part calls before the part that defines them. */

static struct sum_table *sum_alloc(void); /* trace_summary.c: a new thread's table */
static void sum_tracer_time(tl_state_t *t, uint64_t ns); /* trace_summary.c: the tracer took ns */

/* Where a thread's module list goes (trace_modules.c): its file or the
 * ring, ahead of the batch.  0 ok. */
typedef int (*mod_sink_t)(tl_state_t *t, trace_event_t *ev, uint32_t count);
static int mod_flush(tl_state_t *t, mod_sink_t sink, int whole);
static uint64_t mod_list_room(void);

#endif /* TRACE_INTERNAL_H */
