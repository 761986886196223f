/*
 * snapshot_victim.c - test helper for tests/runtime/117-summary-file.t and
 * tests/runtime/118-summary-stream.t: a program to kill with SIGKILL in summary
 * mode.  It makes exactly 10000 calls of work(), prints "done", then calls
 * tick() every 5 ms for ever, so that the exit hooks keep taking snapshots
 * (TRACE_SUMMARY_MS) until it is killed: the last whole snapshot must hold
 * all 10000 calls of work().  Built by make (check-build), with
 * -finstrument-functions and the runtime, into $(BUILD)/tests/tools/.
 */
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

static __attribute__((noinline)) void work(int i)
{
    sink += i;
}

static __attribute__((noinline)) void tick(void)
{
    usleep(5000);
}

int main(void)
{
    for (int i = 0; i < 10000; i++)
        work(i);
    printf("done\n");
    fflush(stdout);
    for (;;)
        tick();
}
