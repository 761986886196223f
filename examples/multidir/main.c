/*
 * main.c - callsight's multidir example: a project of several folders for
 * trace.config (docs/selection.md).  Every function is noinline and its
 * call count follows from ROUNDS:
 *
 *   main, hash_selftest           1
 *   run                           ROUNDS
 *   net_a, net_data, via_pointer  ROUNDS
 *   helper (src/net/a.c)          ROUNDS      two static functions of one
 *   helper (src/net/data.c)       2 * ROUNDS  name, in two files
 *   util_hash                     2 * ROUNDS (HASH_TWICE, a macro) + 3 (selftest)
 *   util_hash_mix, mix            ROUNDS      one name inside another (hash_mix.c)
 *   clamp (include/app.h)         ROUNDS (inline, in main.c)
 */
#include <stdio.h>

#include "app.h"

#define ROUNDS 100

static __attribute__((noinline)) int via_pointer(int x)
{
    return x ^ 0x55;
}

/* A call through a function pointer: no compiler sees its target. */
static int (*volatile indirect)(int) = via_pointer;

static __attribute__((noinline)) int run(int i)
{
    return net_a(i) + net_data(i) + HASH_TWICE(i) + util_hash_mix(i) + mix(i) + indirect(i) + clamp(i);
}

int main(void)
{
    long sum = hash_selftest();
    for (int i = 0; i < ROUNDS; i++)
        sum += run(i);
    printf("multidir: %ld\n", sum);
    return 0;
}
