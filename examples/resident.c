/*
 * resident.c - a long-lived traced program, for the shared-ring test.
 *
 * It does a fixed amount of work, then stays attached to its ring until a
 * line (or end of file) arrives on stdin, like a daemon that outlives the
 * short programs writing the same ring beside it.  Its hash_key() shares
 * its name with examples/workload.c's but not its code or call count: an
 * analyzer that mixed up the two binaries would show it.  Exact counts:
 *   main 1, handle 1, hash_key RESIDENT_KEYS, mix RESIDENT_KEYS
 */
#include <stdio.h>

#define RESIDENT_KEYS 777

static volatile unsigned sink;

static __attribute__((noinline)) unsigned mix(unsigned v)
{
    return v * 2654435761u ^ v >> 13;
}

static __attribute__((noinline)) unsigned hash_key(unsigned k)
{
    return mix(k + 0x9e3779b9u);
}

static __attribute__((noinline)) void handle(void)
{
    for (unsigned i = 0; i < RESIDENT_KEYS; i++)
        sink += hash_key(i);
}

int main(void)
{
    char line[16];
    handle();
    printf("resident: ready\n");
    fflush(stdout);
    (void)fgets(line, sizeof line, stdin); /* stay until told (or stdin ends) */
    return 0;
}
