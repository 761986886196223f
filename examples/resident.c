/*
 * resident.c - a long-lived traced program, for the shared-ring test.
 *
 * It does a fixed amount of work, then stays attached to its ring until a
 * line (or end of file) arrives on stdin, like a daemon that outlives the
 * short programs writing the same ring beside it.  Its hash_key() shares
 * its name with examples/workload.c's but not its code or call count: an
 * analyzer that mixed up the two binaries would show it.  Exact counts:
 *   main 1, handle 1, hash_key RESIDENT_KEYS, mix RESIDENT_KEYS
 *
 *   resident [SETTLE_MS]
 * With SETTLE_MS, after the work it sleeps that long and then calls
 * settle() once (settle 1 more), before it says ready: the runtime flushes
 * a partial batch only from a hook, so this is the one hook that comes
 * after a TRACE_FLUSH_MS shorter than SETTLE_MS has passed (test 155).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static __attribute__((noinline)) void settle(void)
{
    sink++;
}

int main(int argc, char **argv)
{
    char line[16];
    handle();
    if (argc > 1) {
        long ms = atol(argv[1]);
        struct timespec d = {ms / 1000, ms % 1000 * 1000000L};
        while (nanosleep(&d, &d) != 0 && errno == EINTR)
            ; /* a signal: sleep the rest, so the hook really comes after */
        settle();
    }
    printf("resident: ready\n");
    fflush(stdout);
    (void)fgets(line, sizeof line, stdin); /* stay until told (or stdin ends) */
    return 0;
}
