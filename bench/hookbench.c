/*
 * hookbench.c - the call-heavy program that bench/run.sh traces.
 *
 * One non-inlined function, work(), does a fixed ~10-50 ns of arithmetic
 * (a dependency chain the compiler cannot fold) and is called from a tight
 * loop by one or more threads.  Everything else in this file is marked
 * no_instrument_function, so under -finstrument-functions the only events
 * are work()'s enter and exit: events = 2 * calls, exactly.
 *
 * The same source is built three ways (bench/bench.mk): plain (no
 * instrumentation: the untraced baseline), with -finstrument-functions and
 * callsight's runtime (tracing compiled in; TRACE_ENABLE decides), and with
 * -pg for uftrace record.
 *
 *   hookbench [--light] [--threads T] [--calls N]
 *       each thread makes N calls as fast as it can; prints one line
 *   hookbench [--light] [--threads T] --seconds S [--rate EPS]
 *       each thread calls for S seconds, paced so that all threads together
 *       make EPS events per second (2 per call), or unpaced without --rate;
 *       pacing is in 1 ms slots with absolute sleeps, so an idle producer
 *       leaves its core to others
 *   --light calls tick(), which does nothing, instead of work(): for a
 *       producer whose cost is almost all hooks
 *   --ctl-off N  (traced with TRACE_CONTROL=1) before the threads start,
 *       write a live-control setting into this process's own block that
 *       turns N functions off, none of them work(): every hook then probes
 *       a table of N (the hook cost of live control, rows H8/H9)
 *
 * Output, one line (times are CLOCK_MONOTONIC, per thread around its loop):
 *   hookbench threads=T calls=C events=E wall_ns=W thread_ns=S cpu_ns=U user_ns=US sys_ns=SY
 *             ns_per_call=X behind_slots=B
 * wall_ns is from the start barrier to the last thread's end; thread_ns is
 * the sum over threads of each one's loop time, cpu_ns the same for the
 * CPU time the threads got (CLOCK_THREAD_CPUTIME_ID: thread_ns - cpu_ns is
 * time spent waiting for a CPU); user_ns and sys_ns split the threads' CPU
 * time into user and kernel (getrusage RUSAGE_THREAD, so file mode's
 * writes show apart from the hooks); behind_slots counts pacing slots that
 * began late (the producer could not keep its rate).
 *
 * C11 + POSIX threads (and Linux's RUSAGE_THREAD); callsight's trace_shm.h
 * for --ctl-off only (the block's layout and its one writer).
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "trace_shm.h"

#define NOI __attribute__((no_instrument_function))
#define MAX_THREADS 256
#define SLOT_NS 1000000ull /* pacing slot: 1 ms */
#define WORK_ROUNDS 12     /* ~5 cycles each: ~60 cycles per call */

struct opts {
    int threads;
    uint64_t calls;   /* per thread, fixed-count mode */
    double seconds;   /* > 0: timed mode */
    double rate;      /* events/s over all threads; 0 = unpaced */
    long ctl_off;     /* --ctl-off: functions to turn off (-1: none, no block touched) */
};

struct worker {
    pthread_t thread;
    const struct opts *o;
    pthread_barrier_t *start;
    uint64_t calls, begin_ns, end_ns, cpu_ns, user_ns, sys_ns, behind;
    uint64_t sink;
};

/* The traced function: the only one with hooks.  noinline so each call is
 * a real call; the asm keeps the chain from being folded or vectorized. */
__attribute__((noinline)) uint64_t work(uint64_t x)
{
    for (int i = 0; i < WORK_ROUNDS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 29;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

/* The light function, for the streaming-capacity producer (--light): a call
 * that costs next to nothing, so the hooks are nearly all a call costs. */
__attribute__((noinline)) uint64_t tick(uint64_t x)
{
    __asm__ __volatile__("" : "+r"(x));
    return x + 1;
}

static int g_light;
#define CALL(x) (g_light ? tick(x) : work(x))

NOI static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOI static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's user and system CPU time so far (the kernel's split, in its
 * accounting's resolution: read over a whole run, not per call). */
NOI static void thread_user_sys_ns(uint64_t *user, uint64_t *sys)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    getrusage(RUSAGE_THREAD, &ru);
    *user = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
    *sys = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

NOI static void sleep_until(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

NOI static void run_fixed(struct worker *w)
{
    uint64_t x = (uint64_t)(uintptr_t)w;
    for (uint64_t i = 0; i < w->o->calls; i++)
        x = CALL(x);
    w->calls = w->o->calls;
    w->sink = x;
}

/* Unpaced for S seconds: the clock is read every 1024 calls. */
NOI static void run_unpaced(struct worker *w, uint64_t until)
{
    uint64_t x = (uint64_t)(uintptr_t)w, n = 0;
    do {
        for (int i = 0; i < 1024; i++)
            x = CALL(x);
        n += 1024;
    } while (now_ns() < until);
    w->calls = n;
    w->sink = x;
}

/* Paced: a fixed number of calls per 1 ms slot, then sleep to the next
 * slot's start.  The fraction carried over keeps the mean rate exact. */
NOI static void run_paced(struct worker *w, uint64_t start, uint64_t until)
{
    double per_slot = w->o->rate / 2.0 / w->o->threads * (double)SLOT_NS / 1e9, carry = 0;
    uint64_t x = (uint64_t)(uintptr_t)w, n = 0;
    for (uint64_t slot = start; slot < until; slot += SLOT_NS) {
        carry += per_slot;
        uint64_t k = (uint64_t)carry;
        carry -= (double)k;
        for (uint64_t i = 0; i < k; i++)
            x = CALL(x);
        n += k;
        uint64_t t = now_ns();
        if (t < slot + SLOT_NS)
            sleep_until(slot + SLOT_NS);
        else if (t > slot + 2 * SLOT_NS)
            w->behind++;
    }
    w->calls = n;
    w->sink = x;
}

NOI static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(w->start);
    uint64_t user0, sys0, user1, sys1;
    thread_user_sys_ns(&user0, &sys0);
    uint64_t cpu0 = thread_cpu_ns();
    w->begin_ns = now_ns();
    uint64_t until = w->begin_ns + (uint64_t)(w->o->seconds * 1e9);
    if (w->o->seconds <= 0)
        run_fixed(w);
    else if (w->o->rate > 0)
        run_paced(w, w->begin_ns, until);
    else
        run_unpaced(w, until);
    w->end_ns = now_ns();
    w->cpu_ns = thread_cpu_ns() - cpu0;
    thread_user_sys_ns(&user1, &sys1);
    w->user_ns = user1 - user0;
    w->sys_ns = sys1 - sys0;
    return NULL;
}

/* --ctl-off N: N link-time addresses spread like a program's functions
 * (16 bytes apart, from 1 MiB up: no work() among them, which sits far
 * lower in a small PIE), as one setting with TRACE_CTL_OFF. */
NOI static int ctl_off(long n)
{
    static uint64_t addrs[TRACE_CTL_FUNCS_MAX];
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/callsight-ctl-%lu-%lu", (unsigned long)geteuid(), (unsigned long)getpid());
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        fprintf(stderr, "hookbench: --ctl-off: %s: %s (run it with TRACE_CONTROL=1)\n", path, strerror(errno));
        return -1;
    }
    trace_shm_control_t *c = mmap(NULL, TRACE_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c == MAP_FAILED)
        return -1;
    for (long i = 0; i < n; i++)
        addrs[i] = 0x100000u + 16u * (uint64_t)i;
    uint64_t gen;
    const char *why = n ? trace_ctl_publish(c, TRACE_CTL_OFF, NULL, addrs, (uint32_t)n, 0, 0, NULL, NULL, 0, 0, &gen) : NULL;
    munmap(c, TRACE_CTL_SIZE);
    if (why)
        fprintf(stderr, "hookbench: --ctl-off %ld: %s\n", n, why);
    return why ? -1 : 0;
}

NOI static int parse(int argc, char **argv, struct opts *o)
{
    o->threads = 1;
    o->calls = 1000000;
    o->seconds = 0;
    o->rate = 0;
    o->ctl_off = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--light")) {
            g_light = 1;
            continue;
        }
        if (!v)
            return -1;
        if (!strcmp(a, "--threads"))
            o->threads = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--calls"))
            o->calls = strtoull(v, &end, 10);
        else if (!strcmp(a, "--seconds"))
            o->seconds = strtod(v, &end);
        else if (!strcmp(a, "--rate"))
            o->rate = strtod(v, &end);
        else if (!strcmp(a, "--ctl-off"))
            o->ctl_off = strtol(v, &end, 10);
        else
            return -1;
        if (!end || *end)
            return -1;
        i++;
    }
    if (o->threads < 1 || o->threads > MAX_THREADS || o->seconds < 0 || o->rate < 0 ||
        (o->rate > 0 && o->seconds <= 0) || o->ctl_off > (long)TRACE_CTL_FUNCS_MAX)
        return -1;
    return 0;
}

NOI int main(int argc, char **argv)
{
    static struct worker ws[MAX_THREADS];
    struct opts o;
    pthread_barrier_t start;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: hookbench [--light] [--threads T] [--calls N | --seconds S [--rate EVENTS_PER_S]] [--ctl-off N]\n");
        return 2;
    }
    if (o.ctl_off >= 0 && ctl_off(o.ctl_off))
        return 1;
    pthread_barrier_init(&start, NULL, (unsigned)o.threads + 1);
    for (int i = 0; i < o.threads; i++) {
        ws[i].o = &o;
        ws[i].start = &start;
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            fprintf(stderr, "hookbench: cannot create thread %d\n", i);
            return 1;
        }
    }
    uint64_t t0 = now_ns();
    pthread_barrier_wait(&start);
    uint64_t calls = 0, thread_ns = 0, cpu_ns = 0, user_ns = 0, sys_ns = 0, behind = 0, last = t0, sink = 0;
    for (int i = 0; i < o.threads; i++) {
        pthread_join(ws[i].thread, NULL);
        calls += ws[i].calls;
        thread_ns += ws[i].end_ns - ws[i].begin_ns;
        cpu_ns += ws[i].cpu_ns;
        user_ns += ws[i].user_ns;
        sys_ns += ws[i].sys_ns;
        behind += ws[i].behind;
        last = ws[i].end_ns > last ? ws[i].end_ns : last;
        sink ^= ws[i].sink;
    }
    printf("hookbench threads=%d calls=%" PRIu64 " events=%" PRIu64 " wall_ns=%" PRIu64
           " thread_ns=%" PRIu64 " cpu_ns=%" PRIu64 " user_ns=%" PRIu64 " sys_ns=%" PRIu64
           " ns_per_call=%.2f behind_slots=%" PRIu64 " sink=%" PRIu64 "\n",
           o.threads, calls, 2 * calls, last - t0, thread_ns, cpu_ns, user_ns, sys_ns,
           calls ? (double)thread_ns / (double)calls : 0.0, behind, sink & 0xff);
    return 0;
}
