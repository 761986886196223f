/* libloop.c - a workload for the flight recorder's tests: calls w_outer()
 * of the instrumented shared library tests/modules/libw.c N times (each
 * makes 100 calls of w_inner), so the ring is overwritten many times over
 * while the library's functions are what runs. */
#include <stdio.h>
#include <stdlib.h>

int w_outer(int n);

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, s = 0;
    for (long i = 0; i < n; i++)
        s += w_outer(100);
    printf("w_outer=%ld sum=%ld\n", n, s);
    return 0;
}
