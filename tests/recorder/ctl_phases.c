/*
 * ctl_phases.c - the live-control tests' workload (tests/stream/465,
 * tests/top/559): phases of 1000 calls each of f() and g(), printing
 * "phase N done" after each and waiting for a line on stdin before the
 * next (EOF ends it), while a second thread calls tick() every millisecond,
 * so a change is applied (and answered) while the main thread waits.
 * main, f and g are the counts a test checks exactly; tick and ticker are
 * whatever the waits took.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) int f(int x) { return x * 3 + 1; }
__attribute__((noinline)) int g(int x) { return x ^ 5; }
__attribute__((noinline)) void tick(void) { __asm__ volatile("" ::: "memory"); }

static volatile int done;

static void *ticker(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 1000000};
    while (!done) {
        tick();
        nanosleep(&ms, NULL);
    }
    return NULL;
}

int main(void)
{
    char line[64];
    int s = 0;
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    for (int phase = 0;; phase++) {
        for (int i = 0; i < 1000; i++)
            s += f(i) + g(i);
        printf("phase %d done\n", phase);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            break;
    }
    done = 1;
    pthread_join(t, NULL);
    return s == 42;
}
