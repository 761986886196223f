/* slowcall.c - a workload for the flight recorder's tests: N fast calls of
 * work() (each calls step()), and at call number AT one that calls slow(),
 * which sleeps 50 ms.  With an argument "storm" every work() call is slow
 * (1 ms each).  Prints the counts it made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long steps, slows;
static long storm_ns = 50000000;

/* step() calls one of eight leaves, chosen by a hash of the call's
 * number, so that the events are not the one repeating pattern that
 * compresses a thousandfold on the link. */
#define LEAF(n) __attribute__((noinline)) static void leaf##n(void) { leaves[n]++; }
static long leaves[8];
LEAF(0) LEAF(1) LEAF(2) LEAF(3) LEAF(4) LEAF(5) LEAF(6) LEAF(7)
static void (*const leaf[8])(void) = {leaf0, leaf1, leaf2, leaf3, leaf4, leaf5, leaf6, leaf7};

__attribute__((noinline)) static void step(long i)
{
    steps++;
    leaf[(unsigned long)i * 2654435761u >> 13 & 7]();
}

__attribute__((noinline)) static void slow(void)
{
    struct timespec d = {storm_ns / 1000000000, storm_ns % 1000000000};
    nanosleep(&d, NULL);
    slows++;
}

__attribute__((noinline)) static void work(long i, long at, int storm)
{
    if (storm || i == at)
        slow();
    else
        step(i);
}

__attribute__((noinline)) static void run(long n, long at, int storm)
{
    for (long i = 0; i < n; i++)
        work(i, at, storm);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long at = argc > 2 ? atol(argv[2]) : n / 2;
    int storm = argc > 3 && strcmp(argv[3], "storm") == 0;
    if (storm)
        storm_ns = 1000000;
    run(n, at, storm);
    printf("work=%ld step=%ld slow=%ld\n", n, steps, slows);
    return 0;
}
