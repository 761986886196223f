/*
 * runstat.c - run one command and record what it cost, for bench/run.sh.
 *
 *   runstat OUTFILE CMD [ARG...]
 *
 * Runs CMD as a child (its stdin, stdout and stderr are ours), waits for it
 * with wait4() and writes one line to OUTFILE:
 *
 *   wall_ns=W user_us=U sys_us=S maxrss_kb=R status=X
 *
 * user/sys are the child's CPU time and maxrss its peak resident set, all
 * from the kernel's rusage of that child (the child's own children are not
 * counted unless it waited for them).  /usr/bin/time is not on a fresh
 * Debian, hence this.  SIGINT and SIGTERM sent to runstat are passed on to
 * the child, so a harness can stop a server through it.  Exits with the
 * child's status (128 + signal when it was killed).
 */
#define _DEFAULT_SOURCE /* wait4 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long tv_us(struct timeval tv)
{
    return (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: runstat OUTFILE CMD [ARG...]\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("runstat: fork");
        return 1;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "runstat: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            perror("runstat: wait4");
            return 1;
        }
    long long wall = now_ns() - t0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        fprintf(stderr, "runstat: cannot write %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    fprintf(f, "wall_ns=%lld user_us=%lld sys_us=%lld maxrss_kb=%ld status=%d\n", wall, tv_us(ru.ru_utime),
            tv_us(ru.ru_stime), ru.ru_maxrss, code);
    fclose(f);
    return code;
}
