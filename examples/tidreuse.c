/*
 * tidreuse.c - threads that exit and are replaced by threads with the same
 * kernel tid, for the tid-reuse test.
 *
 * GENERATIONS times: start a thread that calls leaf() LEAF_CALLS times, join
 * it, and then, where allowed (root in a fresh pid namespace, see the test),
 * set /proc/sys/kernel/ns_last_pid so the next thread gets the same tid.
 * Expected counts: main 1, run_generation GENERATIONS, thread_main
 * GENERATIONS, leaf GENERATIONS * LEAF_CALLS.  It prints how many
 * generations reused the previous thread's tid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GENERATIONS 6
#define LEAF_CALLS 1000

static volatile unsigned sink;

static __attribute__((noinline)) void leaf(unsigned i)
{
    sink += i;
}

static __attribute__((noinline)) void *thread_main(void *arg)
{
    long *tid = arg;
    *tid = (long)syscall(SYS_gettid);
    for (unsigned i = 0; i < LEAF_CALLS; i++)
        leaf(i);
    return NULL;
}

/* pthread_join returns once the thread has cleared its tid word, which is
 * before the kernel has released the tid; until it has, the next thread
 * cannot get it (a busy machine showed it).  Wait for that, up to a second.
 * Not instrumented, so the expected counts stay as above. */
static __attribute__((no_instrument_function)) void wait_tid_released(long tid)
{
    for (int i = 0; i < 1000; i++) {
        if (syscall(SYS_tgkill, (long)getpid(), tid, 0) != 0 && errno == ESRCH)
            return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* Ask the kernel to hand out `tid` next; fails harmlessly when not allowed. */
static void want_next_tid(long tid)
{
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (!f)
        return;
    fprintf(f, "%ld", tid - 1);
    fclose(f);
}

static __attribute__((noinline)) long run_generation(long want)
{
    pthread_t t;
    long tid = 0;
    if (want > 0)
        want_next_tid(want);
    if (pthread_create(&t, NULL, thread_main, &tid) != 0)
        return -1;
    pthread_join(t, NULL);
    wait_tid_released(tid);
    return tid;
}

int main(void)
{
    long prev = 0;
    int reused = 0;
    for (int g = 0; g < GENERATIONS; g++) {
        long tid = run_generation(prev);
        if (tid < 0)
            return 1;
        reused += (tid == prev);
        prev = tid;
    }
    printf("tidreuse: generations=%d reused=%d\n", GENERATIONS, reused);
    return 0;
}
