/* wrap16.c - a workload for TRACE_FULL=wrap: 16 threads each call tick()
 * ITERS times (each calls tock()), then last() once; the main thread joins
 * them and calls last() too.  Prints the counts it made. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic long lasts;
static long iters = 200000;

__attribute__((noinline)) static void tock(long *n) { ++*n; }
__attribute__((noinline)) static void tick(long *n) { tock(n); }
__attribute__((noinline)) static void last(void) { lasts++; }

static void *worker(void *arg)
{
    long n = 0;
    (void)arg;
    for (long i = 0; i < iters; i++)
        tick(&n);
    last();
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[16];
    if (argc > 1)
        iters = atol(argv[1]);
    for (int i = 0; i < 16; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 16; i++)
        pthread_join(t[i], NULL);
    last();
    printf("tick=%ld last=%ld\n", 16 * iters, (long)lasts);
    return 0;
}
