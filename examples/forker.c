/*
 * forker.c - a traced program that forks, for the fork-safety test.
 *
 * The parent calls leaf() PARENT_CALLS times, forks, and waits.  The child
 * calls leaf() CHILD_CALLS times and then returns normally through
 * fork_and_work() and main(), whose entries the parent recorded: the runtime
 * must neither re-emit the parent's buffered events nor record those
 * inherited exits.  Expected counts over both processes:
 *   main 1, fork_and_work 1, child_work 1, leaf PARENT_CALLS + CHILD_CALLS
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARENT_CALLS 300
#define CHILD_CALLS 200

static volatile unsigned sink;

static __attribute__((noinline)) void leaf(unsigned i)
{
    sink += i * 2654435761u;
}

static __attribute__((noinline)) void child_work(void)
{
    for (unsigned i = 0; i < CHILD_CALLS; i++)
        leaf(i);
}

static __attribute__((noinline)) int fork_and_work(void)
{
    for (unsigned i = 0; i < PARENT_CALLS; i++)
        leaf(i);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        child_work();
        return 0; /* the child returns through frames its parent entered */
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 1;
}

int main(void)
{
    int r = fork_and_work();
    if (r < 0) {
        fprintf(stderr, "forker: fork or child failed\n");
        return 1;
    }
    if (r == 1)
        printf("forker: parent done\n");
    return 0;
}
