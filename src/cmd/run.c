/*
 * run.c - `callsight run [options] -- PROGRAM ARGS...`: trace a program and
 * print its report in one step.
 *
 * The manual steps, done for the user and in the same way: a fresh trace
 * directory, TRACE_ENABLE and TRACE_DIR (or, with --stream, the whole device
 * pipeline on 127.0.0.1: `callsight serve`, trace_stream on a shm ring,
 * TRACE_SHM), the program run as given, then `callsight analyze DIR --exe
 * PROGRAM` with the analyze options given.  Each of those is started as its
 * own process, as a user would start it, so the report is the one the
 * manual steps give; no command's code is called from here.
 *
 * Lifetimes: the program stays in our process group, so a Ctrl-C at the
 * terminal reaches it as it would without us; we only note the signal,
 * forward it when it was sent to us alone, and go on to stop the pipeline
 * and report what was traced.  serve and trace_stream get process groups of
 * their own (a Ctrl-C must not cut them before they have drained) and die
 * with us (PR_SET_PDEATHSIG) if we are killed.  --timeout sends SIGTERM,
 * then SIGKILL RUN_KILL_AFTER_S later.  Every process, the shm segment and
 * nothing else is left: run makes no temporary files.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"

#define PROG "callsight run"
#define RUN_KILL_AFTER_S 3      /* --timeout: SIGTERM, then SIGKILL this much later */
#define RUN_START_S 10          /* serve's port, the ring's creation */
#define RUN_DRAIN_S 30          /* trace_stream's own exit after the program's */
#define RUN_STOP_S 10           /* serve's exit after SIGINT */
#define RUN_MAX_ANALYZE_ARGS 64
#define RUN_MAX_STREAM_ARGS 32  /* trace_stream's own options: --flight-recorder, --stream-opt ... */

extern char **environ;

struct run_opts {
    const char *dir;            /* the trace directory */
    const char *trace_stream;   /* the client's path (default: beside us, else PATH) */
    int stream;
    int summary;                /* --summary: TRACE_MODE=summary */
    const char *trigger;        /* --trigger NAME>LIMIT: TRACE_TRIGGER */
    int recorder;               /* --flight-recorder given */
    char *ts_args[RUN_MAX_STREAM_ARGS]; /* trace_stream's options, in order */
    int nts;
    double timeout_s;           /* 0: none */
    char *analyze[RUN_MAX_ANALYZE_ARGS];
    int nanalyze;
    char **argv;                /* the program and its arguments */
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
}

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight run [--dir DIR] [--stream] [--summary] [--trigger NAME>LIMIT]\n"
"                     [--flight-recorder [--after MS] [--max-triggers N]]\n"
"                     [--stream-opt OPT] [--timeout S] [analyze options] -- PROGRAM [ARGS...]\n"
"\n"
"Trace PROGRAM and print its report: the steps of the quick start in one.\n"
"DIR is emptied of earlier traces (saying so), PROGRAM runs with\n"
"TRACE_ENABLE=1 and TRACE_DIR=DIR (other TRACE_* settings of yours are\n"
"kept), and then `callsight analyze DIR --exe PROGRAM` reports, with the\n"
"analyze options given here (--top, --format, -o, --thread, ...).\n"
"\n"
"options:\n"
"  --dir DIR       the trace directory (default: $TRACE_DIR, else traces)\n"
"  --stream        the device pipeline on this machine: callsight serve on\n"
"                  127.0.0.1 writing DIR, trace_stream draining a shm ring,\n"
"                  PROGRAM with TRACE_SHM; serve's lines are shown\n"
"  --trace-stream PATH  the client to run (default: the trace_stream beside\n"
"                  callsight, else from PATH)\n"
"  --summary       PROGRAM with TRACE_MODE=summary: per-function totals and\n"
"                  histograms instead of events (a few KB/s; no call tree)\n"
"  --trigger NAME>LIMIT  PROGRAM with TRACE_TRIGGER=NAME>LIMIT: a call of\n"
"                  NAME longer than LIMIT (ns, us, ms, s) is reported with its\n"
"                  stack; with --flight-recorder it also takes a snapshot\n"
"  --triggered-only  the report holds only the calls that fired the trigger\n"
"                  (analyze's --trigger)\n"
"  --flight-recorder  trace_stream keeps only the most recent events and sends\n"
"                  them when a trigger fires (implies --stream); --after MS and\n"
"                  --max-triggers N go to it as well\n"
"  --stream-opt OPT  give trace_stream the option OPT (--NAME or --NAME=VALUE,\n"
"                  e.g. --stream-opt --summary-threads, --stream-opt --level=1);\n"
"                  repeat for more (implies --stream)\n"
"  --timeout S     SIGTERM to PROGRAM after S seconds, SIGKILL %d s later;\n"
"                  the report of what it wrote follows (a program killed by\n"
"                  a signal loses the events still in its buffers: up to\n"
"                  2048 per thread in file mode)\n"
"  -h, --help      print this help\n"
"\n"
"PROGRAM's output is its own; run's lines go to stderr.  A Ctrl-C stops\n"
"PROGRAM as it would without run; what was traced is still reported.\n"
"\n"
"Exit status: PROGRAM's own when it fails (128+N when signal N killed it),\n"
"127 when it cannot be started, else analyze's (0 done, 1 error); 2 usage.\n",
            RUN_KILL_AFTER_S);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_analyze(struct run_opts *o, char *arg)
{
    if (o->nanalyze >= RUN_MAX_ANALYZE_ARGS) {
        fprintf(stderr, PROG ": more than %d analyze arguments\n", RUN_MAX_ANALYZE_ARGS);
        return -1;
    }
    o->analyze[o->nanalyze++] = arg;
    return 0;
}

/* An option for trace_stream (checked by trace_stream), and its value. */
static int add_stream_opt(struct run_opts *o, const char *name, const char *value)
{
    if (o->nts + 2 > RUN_MAX_STREAM_ARGS) {
        fprintf(stderr, PROG ": more than %d trace_stream arguments\n", RUN_MAX_STREAM_ARGS);
        return -1;
    }
    o->ts_args[o->nts++] = (char *)name;
    if (value)
        o->ts_args[o->nts++] = (char *)value;
    return 0;
}

/* NAME>LIMIT with both parts there; the runtime checks the rest and says. */
static int valid_trigger(const char *v)
{
    const char *gt = strchr(v, '>');
    return gt && gt > v && gt[1];
}

/* -1 usage error (said), 0 run, 1 help printed. */
static int parse_args(int argc, char **argv, struct run_opts *o)
{
    int i = 1;
    o->dir = getenv("TRACE_DIR") && *getenv("TRACE_DIR") ? getenv("TRACE_DIR") : "traces";
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--stream")) {
            o->stream = 1;
        } else if (!strcmp(a, "--summary")) {
            o->summary = 1;
        } else if (!strcmp(a, "--trigger")) {
            if (!v || !valid_trigger(v)) {
                fprintf(stderr, PROG ": --trigger needs NAME>LIMIT, e.g. 'parse>2ms' (--triggered-only is analyze's "
                                     "--trigger)\n");
                return -1;
            }
            o->trigger = argv[++i];
        } else if (!strcmp(a, "--triggered-only")) {
            if (add_analyze(o, "--trigger") < 0)
                return -1;
        } else if (!strcmp(a, "--flight-recorder")) {
            o->recorder = o->stream = 1;
            if (add_stream_opt(o, a, NULL) < 0)
                return -1;
        } else if (!strcmp(a, "--after") || !strcmp(a, "--max-triggers")) {
            if (!v) {
                fprintf(stderr, PROG ": %s needs a value (try '" PROG " --help')\n", a);
                return -1;
            }
            if (add_stream_opt(o, a, argv[++i]) < 0)
                return -1;
        } else if (!strcmp(a, "--stream-opt")) {
            if (!v || strncmp(v, "--", 2) || !v[2] || v[2] == '=') {
                fprintf(stderr, PROG ": --stream-opt needs one of trace_stream's options, --NAME or --NAME=VALUE, "
                                     "not '%s'\n", v ? v : "");
                return -1;
            }
            const char *eq = strchr(v, '=');
            if (eq)
                *(char *)eq = '\0'; /* our own argv: --NAME=VALUE as two arguments */
            o->stream = 1;
            if (add_stream_opt(o, v, eq ? eq + 1 : NULL) < 0)
                return -1;
            i++;
        } else if (v && !strcmp(a, "--dir")) {
            o->dir = argv[++i];
        } else if (v && !strcmp(a, "--trace-stream")) {
            o->trace_stream = argv[++i];
        } else if (v && !strcmp(a, "--timeout")) {
            o->timeout_s = strtod(v, &end);
            if (*end || !(o->timeout_s > 0) || o->timeout_s > 86400.0 * 365) {
                fprintf(stderr, PROG ": --timeout needs seconds above 0, not '%s'\n", v);
                return -1;
            }
            i++;
        } else if (add_analyze(o, argv[i]) < 0) { /* analyze's, checked by analyze */
            return -1;
        }
    }
    if (o->recorder && !o->trigger && !getenv("TRACE_TRIGGER"))
        fprintf(stderr, PROG ": --flight-recorder without --trigger: only a tracer that dies, SIGUSR1 to trace_stream or "
                             "`callsight trigger` takes a snapshot\n");
    for (int k = 0; k < o->nts && !o->recorder; k++)
        if (!strcmp(o->ts_args[k], "--after") || !strcmp(o->ts_args[k], "--max-triggers")) {
            fprintf(stderr, PROG ": %s goes with --flight-recorder\n", o->ts_args[k]);
            return -1;
        }
    if (i >= argc - 1) {
        fprintf(stderr, PROG ": give the program after -- (try '" PROG " --help')\n");
        return -1;
    }
    o->argv = argv + i + 1;
    return 0;
}

/* PROGRAM as execvp would find it, into out.  0, or -1 (said). */
static int find_program(const char *name, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        if (access(out, X_OK) == 0)
            return 0;
        fprintf(stderr, PROG ": %s: %s\n", name, strerror(errno));
        return -1;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
        struct stat st;
        if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
        p += n + (p[n] == ':');
    }
    fprintf(stderr, PROG ": %s: not found in PATH\n", name);
    return -1;
}

/* The trace directory made, checked writable, and emptied of earlier
 * traces (trace.*.bin: file mode's and serve's).  0, or -1 (said). */
static int fresh_dir(const char *dir)
{
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s", dir);
    for (char *p = probe + 1; *p; p++) { /* its parents first, as mkdir -p */
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(probe, 0755); /* the last mkdir and the probe below decide */
        *p = '/';
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, PROG ": %s: cannot make the trace directory: %s\n", dir, strerror(errno));
        return -1;
    }
    snprintf(probe, sizeof probe, "%s/.callsight-run-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        fprintf(stderr, PROG ": %s: the trace directory is not writable: %s\n", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    DIR *d = opendir(dir);
    unsigned removed = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        char path[PATH_MAX];
        struct stat st;
        if (strncmp(e->d_name, "trace.", 6) || n < 10 || strcmp(e->d_name + n - 4, ".bin"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && unlink(path) == 0)
            removed++;
    }
    if (d)
        closedir(d);
    if (removed)
        fprintf(stderr, PROG ": removed %u earlier trace file%s from %s/\n", removed, removed == 1 ? "" : "s", dir);
    return 0;
}

/* fork and exec argv with env changes (NAME=VALUE set, NAME unset;
 * NULL-terminated);
 * own_group: a process group of its own, and death with us; out_fd >= 0:
 * its stdout and stderr.  The pid, or -1 (said; errno of exec reported
 * through a close-on-exec pipe, so a program that cannot start is told
 * apart from one that fails). */
static pid_t spawn(char *const *argv, char *const *env_add, int own_group, int out_fd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        if (own_group) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
        }
        if (out_fd >= 0) {
            dup2(out_fd, 1);
            dup2(out_fd, 2);
        }
        for (size_t i = 0; env_add && env_add[i]; i++) /* NAME=VALUE set, NAME unset */
            (void)(strchr(env_add[i], '=') ? putenv(env_add[i]) : unsetenv(env_add[i]));
        execvp(argv[0], argv);
        int e = errno;
        if (write(p[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(p[1]);
    int e = 0;
    ssize_t n = pid > 0 ? read(p[0], &e, sizeof e) : 0;
    close(p[0]);
    if (pid < 0 || n == (ssize_t)sizeof e) {
        fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(pid < 0 ? errno : e));
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* The connections serve has said it opened and closed, counted from the
 * lines passed on, so that it is stopped only once each closed by itself:
 * a stop before that would mark a whole stream "(server stopping)". */
static struct {
    char line[64]; /* the start of the line being read: enough to tell */
    size_t len;
    unsigned opened, closed;
} serve_said;

static void count_serve_line(void)
{
    static const char conn[] = "callsight serve: conn ";
    const char *s = serve_said.line;
    if (strncmp(s, conn, sizeof conn - 1) != 0 || !isdigit((unsigned char)s[sizeof conn - 1]))
        return;
    s += sizeof conn - 1;
    while (isdigit((unsigned char)*s))
        s++;
    if (strncmp(s, " from ", 6) == 0)
        serve_said.opened++;
    else if (strncmp(s, " closed ", 8) == 0)
        serve_said.closed++;
}

static void scan_serve_output(const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            serve_said.line[serve_said.len] = '\0';
            count_serve_line();
            serve_said.len = 0;
        } else if (serve_said.len < sizeof serve_said.line - 1) {
            serve_said.line[serve_said.len++] = buf[i];
        }
    }
}

/* serve's lines, as they come, on our stderr.  serve_fd < 0: none. */
static void pass_serve_lines(int serve_fd, int wait_ms)
{
    struct pollfd pf = {serve_fd, POLLIN, 0};
    if (serve_fd < 0) {
        if (wait_ms > 0)
            poll(NULL, 0, wait_ms);
        return;
    }
    if (poll(&pf, 1, wait_ms) > 0) {
        char buf[4096];
        ssize_t n = read(serve_fd, buf, sizeof buf);
        if (n <= 0)
            return;
        scan_serve_output(buf, (size_t)n);
        if (write(2, buf, (size_t)n) < 0)
            return;
    }
}

/* Wait for pid up to limit_s (< 0: for ever), passing serve's lines on.
 * 1 and *status when it ended; 0 when the time is up. */
static int wait_for(pid_t pid, double limit_s, int serve_fd, int *status)
{
    double end = now_s() + limit_s;
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD))
            return 1;
        if (limit_s >= 0 && now_s() >= end)
            return 0;
        pass_serve_lines(serve_fd, 50);
    }
}

/* Stop pid: sig, then SIGKILL after grace_s; reaped. */
static void stop(pid_t pid, int sig, double grace_s, int serve_fd)
{
    int status;
    if (pid <= 0)
        return;
    kill(pid, sig);
    if (!wait_for(pid, grace_s, serve_fd, &status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

/* Run the program to its end, with --timeout and forwarded signals.  Its
 * wait status. */
static int run_program(const struct run_opts *o, pid_t pid, int serve_fd)
{
    double start = now_s(), term_at = o->timeout_s > 0 ? start + o->timeout_s : -1, kill_at = -1;
    int status = 0, forwarded = 0;
    /* When we are the terminal's foreground group, its Ctrl-C reached the
     * program as well as us: the first is not sent again. */
    int from_tty = isatty(0) && tcgetpgrp(0) == getpgrp();
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        double t = now_s();
        if (term_at > 0 && t >= term_at) {
            fprintf(stderr, PROG ": --timeout %g s reached: SIGTERM to %s (pid %ld)\n", o->timeout_s, o->argv[0],
                    (long)pid);
            kill(pid, SIGTERM);
            term_at = -1;
            kill_at = t + RUN_KILL_AFTER_S;
        } else if (kill_at > 0 && t >= kill_at) {
            fprintf(stderr, PROG ": %s still running %d s after SIGTERM: SIGKILL\n", o->argv[0], RUN_KILL_AFTER_S);
            kill(pid, SIGKILL);
            kill_at = -1;
        }
        if (got_signal && forwarded < 2) {
            /* A kill aimed at us alone did not reach it: pass it on; a
             * second signal is a SIGKILL. */
            int tty_sent = from_tty && !forwarded && got_signal == SIGINT;
            if (!tty_sent)
                kill(pid, forwarded ? SIGKILL : got_signal);
            forwarded++;
            got_signal = 0;
        }
        pass_serve_lines(serve_fd, 50);
    }
    double took = now_s() - start;
    if (WIFEXITED(status))
        fprintf(stderr, PROG ": %s exited with status %d after %.2f s\n", o->argv[0], WEXITSTATUS(status), took);
    else if (WIFSIGNALED(status))
        fprintf(stderr, PROG ": %s was killed by signal %d (%s) after %.2f s; the report covers what was traced\n",
                o->argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)), took);
    return status;
}

/* The path of the callsight binary running now, and of trace_stream. */
static int find_tools(const struct run_opts *o, char *self, size_t slen, char *ts, size_t tslen)
{
    ssize_t n = readlink("/proc/self/exe", self, slen - 1);
    if (n <= 0) {
        fprintf(stderr, PROG ": /proc/self/exe: %s\n", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    if (!o->stream)
        return 0;
    if (o->trace_stream)
        return find_program(o->trace_stream, ts, tslen);
    char *slash = strrchr(self, '/');
    snprintf(ts, tslen, "%.*s/trace_stream", (int)(slash - self), self);
    return access(ts, X_OK) == 0 ? 0 : find_program("trace_stream", ts, tslen);
}

struct pipeline {
    pid_t serve, client;
    int serve_fd;              /* serve's output, read as it comes */
    char shm[64], port[16];
};

/* serve's first line: "callsight serve: listening on 127.0.0.1:PORT, ...". */
static int read_port(struct pipeline *p)
{
    char line[512];
    size_t n = 0;
    double end = now_s() + RUN_START_S;
    while (n < sizeof line - 1 && now_s() < end) {
        struct pollfd pf = {p->serve_fd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t r = read(p->serve_fd, line + n, 1); /* one byte: nothing after the line is taken */
        if (r <= 0)
            break;
        if (line[n++] == '\n')
            break;
    }
    line[n] = '\0';
    const char *at = strstr(line, "127.0.0.1:");
    if (!at || sscanf(at + 10, "%15[0-9]", p->port) != 1) {
        fprintf(stderr, PROG ": serve did not start: %s\n", n ? line : "no output");
        return -1;
    }
    fputs(line, stderr);
    return 0;
}

/* Room in /dev/shm for the ring: a ring that does not fit ends in SIGBUS
 * at the first write, which no one would recognise. */
static int check_shm_room(void)
{
    const char *s = getenv("TRACE_SHM_SIZE");
    unsigned long long want = s ? strtoull(s, NULL, 10) : 16ull << 20;
    struct statvfs v;
    if (statvfs("/dev/shm", &v) != 0)
        return 0; /* not Linux-like: trace_stream will say */
    unsigned long long room = (unsigned long long)v.f_bavail * v.f_frsize;
    if (room >= want)
        return 0;
    fprintf(stderr, PROG ": /dev/shm has %llu KiB free and the ring needs %llu KiB (TRACE_SHM_SIZE): free some, "
                    "set a smaller TRACE_SHM_SIZE, or give the container more (--shm-size)\n", room >> 10, want >> 10);
    return -1;
}

/* The ring's name, unpredictable: another local user who could guess it
 * could make the segment first and read or forge our events (trace_stream
 * refuses a ring not its own, but the run would then fail).  64 random bits
 * after the pid: "/callsight-run-<pid>-<16 hex>", well under NAME_MAX. */
static int ring_name(char *buf, size_t size)
{
    unsigned char r[8];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, PROG ": no random bytes for the ring's name: %s\n", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    int len = snprintf(buf, size, "/callsight-run-%ld-", (long)getpid());
    for (size_t i = 0; i < sizeof r && len >= 0 && (size_t)len + 2 < size; i++)
        len += snprintf(buf + len, size - (size_t)len, "%02x", r[i]);
    return 0;
}

static int start_pipeline(const struct run_opts *o, const char *self, const char *ts, struct pipeline *p)
{
    int fds[2];
    if (check_shm_room() < 0 || pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    char *serve_argv[] = {(char *)self, "serve", "--host", "127.0.0.1", "--port", "0", "--out", (char *)o->dir,
                          "--quiet", NULL};
    p->serve = spawn(serve_argv, NULL, 1, fds[1]);
    close(fds[1]);
    p->serve_fd = fds[0];
    if (p->serve < 0 || read_port(p) < 0)
        return -1;
    if (ring_name(p->shm, sizeof p->shm) < 0)
        return -1;
    char *ts_argv[RUN_MAX_STREAM_ARGS + 5];
    int n = 0;
    ts_argv[n++] = (char *)ts;
    for (int k = 0; k < o->nts; k++)
        ts_argv[n++] = o->ts_args[k];
    ts_argv[n++] = p->shm;
    ts_argv[n++] = "127.0.0.1";
    ts_argv[n++] = p->port;
    ts_argv[n] = NULL;
    if ((p->client = spawn(ts_argv, NULL, 1, -1)) < 0)
        return -1;
    char path[96];
    snprintf(path, sizeof path, "/dev/shm%s", p->shm);
    for (double end = now_s() + RUN_START_S; access(path, F_OK) != 0; pass_serve_lines(p->serve_fd, 20)) {
        int status;
        if (waitpid(p->client, &status, WNOHANG) == p->client || now_s() > end) {
            fprintf(stderr, PROG ": trace_stream did not create the ring %s\n", p->shm);
            if (waitpid(p->client, &status, WNOHANG) == p->client)
                p->client = 0;
            return -1;
        }
    }
    return 0;
}

/* After the program: trace_stream drains and exits by itself (SIGINT after
 * RUN_DRAIN_S: send the rest and exit), then serve closes its files. */
static void stop_pipeline(struct pipeline *p)
{
    int status;
    if (p->client > 0 && !wait_for(p->client, RUN_DRAIN_S, p->serve_fd, &status)) {
        fprintf(stderr, PROG ": trace_stream still draining after %d s: SIGINT\n", RUN_DRAIN_S);
        stop(p->client, SIGINT, RUN_STOP_S, p->serve_fd);
    }
    if (p->serve > 0) {
        /* trace_stream has gone: its connection's line is due (bounded) */
        for (double end = now_s() + RUN_STOP_S; serve_said.closed < serve_said.opened && now_s() < end;)
            pass_serve_lines(p->serve_fd, 50);
        stop(p->serve, SIGINT, RUN_STOP_S, p->serve_fd);
        while (p->serve_fd >= 0) { /* what serve said last */
            char buf[4096];
            ssize_t n = read(p->serve_fd, buf, sizeof buf);
            if (n <= 0 || write(2, buf, (size_t)n) < 0)
                break;
        }
    }
    if (p->serve_fd >= 0)
        close(p->serve_fd);
    if (p->shm[0])
        shm_unlink(p->shm); /* trace_stream removes it; this is for when it could not */
}

/* How many trace files the run left in dir. */
static unsigned count_traces(const char *dir)
{
    unsigned n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += !strncmp(e->d_name, "trace.", 6) && len >= 10 && !strcmp(e->d_name + len - 4, ".bin");
    }
    if (d)
        closedir(d);
    return n;
}

/* callsight analyze DIR --exe PROGRAM [options]: its exit status. */
static int analyze(const struct run_opts *o, const char *self, const char *program)
{
    char *argv[RUN_MAX_ANALYZE_ARGS + 8];
    int n = 0;
    argv[n++] = (char *)self;
    argv[n++] = "analyze";
    argv[n++] = (char *)o->dir;
    argv[n++] = "--exe";
    argv[n++] = (char *)program;
    for (int i = 0; i < o->nanalyze; i++)
        argv[n++] = o->analyze[i];
    argv[n] = NULL;
    pid_t pid = spawn(argv, NULL, 0, -1);
    int status = 0;
    if (pid < 0)
        return 1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a wait returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    char program[PATH_MAX], self[PATH_MAX], ts[PATH_MAX], env_dir[PATH_MAX + 16], env_shm[96], abs[PATH_MAX];
    if (find_program(o.argv[0], program, sizeof program) < 0)
        return 127;
    if (find_tools(&o, self, sizeof self, ts, sizeof ts) < 0 || fresh_dir(o.dir) < 0)
        return 1;
    catch_signals();
    struct pipeline p = {0, 0, -1, "", ""};
    if (o.stream && start_pipeline(&o, self, ts, &p) < 0) {
        stop(p.client, SIGINT, RUN_STOP_S, p.serve_fd);
        p.client = 0;
        stop_pipeline(&p);
        return 1;
    }
    snprintf(env_dir, sizeof env_dir, "TRACE_DIR=%s", realpath(o.dir, abs) ? abs : o.dir);
    snprintf(env_shm, sizeof env_shm, "TRACE_SHM=%s", p.shm);
    char env_trigger[PATH_MAX];
    snprintf(env_trigger, sizeof env_trigger, "TRACE_TRIGGER=%s", o.trigger ? o.trigger : "");
    char *env[6] = {"TRACE_ENABLE=1", o.stream ? env_shm : env_dir, o.stream ? "TRACE_DIR" : "TRACE_SHM", NULL};
    int ne = 3;
    if (o.summary)
        env[ne++] = "TRACE_MODE=summary";
    if (o.trigger)
        env[ne++] = env_trigger;
    char extra[PATH_MAX + 64] = "";
    if (o.summary || o.trigger || o.recorder)
        snprintf(extra, sizeof extra, "%s%s%s%s", o.summary ? "; summaries (TRACE_MODE=summary)" : "",
                 o.trigger ? "; trigger " : "", o.trigger ? o.trigger : "", o.recorder ? "; flight recorder" : "");
    if (o.stream)
        fprintf(stderr, PROG ": tracing %s (stream mode: shm ring %s, trace_stream, serve on 127.0.0.1%s)\n",
                o.argv[0], p.shm, extra);
    else
        fprintf(stderr, PROG ": tracing %s (file mode%s)\n", o.argv[0], extra);
    pid_t pid = spawn(o.argv, env, 0, -1);
    int status = pid > 0 ? run_program(&o, pid, p.serve_fd) : -1;
    if (o.stream)
        stop_pipeline(&p);
    if (pid < 0)
        return 127;
    if (!count_traces(o.dir))
        fprintf(stderr, PROG ": %s wrote no traces: %s (callsight doctor --exe %s checks the binary)\n", o.argv[0],
                WIFSIGNALED(status) ? "a program killed by a signal loses what was still in its buffers, or it "
                                      "has no hooks"
                                    : "is it built with -finstrument-functions and linked with callsight's runtime?",
                o.argv[0]);
    int arc = analyze(&o, self, program);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status) ? WEXITSTATUS(status) : arc;
}
