/*
 * serve.c - `callsight serve`: receive trace_stream connections and write
 * their events to trace.stream.<id>.<seq>.bin files for `callsight analyze`.
 *
 * The command owns the listening socket and the connection threads: one
 * detached thread per connection (stream_conn.c does the protocol and the
 * files), at most MAX_CONNS at a time.  The threads share nothing but the
 * connection-id allocator in stream_file.c; the list of open sockets here is
 * only for shutting them down.
 *
 * SIGINT/SIGTERM are blocked in every thread and taken only while the main
 * thread waits in pselect(), so accepting stops cleanly: the open sockets are
 * shut down for reading, each thread writes what it has, closes its files
 * and says so, and the command exits 0.
 *
 * Output: stdout, one flushed line per event, the first saying where it
 * listens (with the real port for --port 0).  Failures of the command
 * itself go to stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands.h"
#include "net.h"
#include "stream_conn.h"
#include "stream_file.h"

#define MAX_CONNS 64
#define STATUS_SECS 2
#define MIB (1024u * 1024u)
#define MAX_MB (1u << 30) /* keeps byte counts far from overflow */

struct serve_opts {
    const char *host, *port, *out;
    long max_mb, seg_mb;
    int quiet;
};

struct job {
    int fd;
    int slot;
    char peer[NET_NAME_MAX];
};

static atomic_int stopping;
static struct stream_conn_opts conn_opts;

/* Open sockets, for shutdown only; active counts the running threads. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_freed = PTHREAD_COND_INITIALIZER;
static int slots[MAX_CONNS];
static int active;
static unsigned long served;

static void on_stop_signal(int sig)
{
    (void)sig;
    atomic_store(&stopping, 1);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight serve [--host H] [--port P] [--out DIR] [--max-mb N] [--seg-mb N] [--quiet]\n"
            "\n"
            "Receive event streams from trace_stream clients and write one series of\n"
            "trace files per connection, DIR/trace.stream.<id>.<seq>.bin, for\n"
            "`callsight analyze DIR`.  Connection ids never repeat in DIR.  Runs until\n"
            "SIGINT or SIGTERM, then closes every file cleanly and exits 0.\n"
            "\n"
            "  --host H     address to listen on (default 0.0.0.0)\n"
            "  --port P     TCP port (default 9001; 0 takes a free port)\n"
            "  --out DIR    where trace files go, created if missing (default traces)\n"
            "  --max-mb N   stop writing a connection at N MB of files, ending with a\n"
            "               budget marker; the rest of its stream is read and counted\n"
            "               (default 4096)\n"
            "  --seg-mb N   start a new segment file every N MB (default 256)\n"
            "  --quiet      no periodic status lines\n"
            "  --help       this text\n"
            "\n"
            "Prints to stdout, one line each: where it listens (first line), every\n"
            "connection opened and closed, the device's dropped-event notices, and\n"
            "every %d s per streaming connection its rate, compression and drops.\n",
            STATUS_SECS);
}

static int parse_mb(const char *opt, const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < 1 || v > (long)MAX_MB) {
        fprintf(stderr, "callsight serve: %s needs a size in MB from 1 to %u\n", opt, MAX_MB);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_port(const char *s)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!s || errno || end == s || *end || v < 0 || v > 65535) {
        fprintf(stderr, "callsight serve: --port needs a number from 0 to 65535\n");
        return -1;
    }
    return 0;
}

/* 0 run, 1 done (help printed), -1 usage error. */
static int parse_args(int argc, char **argv, struct serve_opts *o)
{
    *o = (struct serve_opts){"0.0.0.0", "9001", "traces", 4096, 256, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        } else if (!strcmp(a, "--host") && v) {
            o->host = v;
        } else if (!strcmp(a, "--port")) {
            if (parse_port(v))
                return -1;
            o->port = v;
        } else if (!strcmp(a, "--out") && v && *v) {
            o->out = v;
        } else if (!strcmp(a, "--max-mb")) {
            if (parse_mb(a, v, &o->max_mb))
                return -1;
        } else if (!strcmp(a, "--seg-mb")) {
            if (parse_mb(a, v, &o->seg_mb))
                return -1;
        } else {
            fprintf(stderr, "callsight serve: %s '%s' (try --help)\n",
                    a[0] == '-' ? (v ? "unknown option" : "missing value for") : "unexpected argument", a);
            return -1;
        }
        i++;
    }
    return 0;
}

/* ---- connection threads ------------------------------------------------ */

static void *conn_thread(void *arg)
{
    struct job *j = arg;
    stream_conn_serve(j->fd, j->peer, &conn_opts);
    pthread_mutex_lock(&slots_lock);
    slots[j->slot] = -1;
    active--;
    pthread_cond_broadcast(&slots_freed);
    pthread_mutex_unlock(&slots_lock);
    close(j->fd);
    free(j);
    return NULL;
}

/* Hand an accepted socket to a new thread, or refuse it when all slots are taken. */
static void start_conn(int fd, const char *peer)
{
    struct job *j = malloc(sizeof *j);
    pthread_attr_t attr;
    pthread_t t;
    if (!j) {
        printf("callsight serve: connection from %s refused: out of memory\n", peer);
        fflush(stdout);
        close(fd);
        return;
    }
    j->fd = fd;
    snprintf(j->peer, sizeof j->peer, "%s", peer);
    pthread_mutex_lock(&slots_lock);
    for (j->slot = 0; j->slot < MAX_CONNS && slots[j->slot] >= 0; j->slot++)
        ;
    int ok = j->slot < MAX_CONNS;
    if (ok) {
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &attr, conn_thread, j) == 0;
        pthread_attr_destroy(&attr);
    }
    if (ok) {
        slots[j->slot] = fd;
        active++;
        served++;
    }
    pthread_mutex_unlock(&slots_lock);
    if (!ok) {
        printf("callsight serve: connection from %s refused: %d connections already open\n", peer,
               MAX_CONNS);
        fflush(stdout);
        close(fd);
        free(j);
    }
}

/* ---- the command ------------------------------------------------------- */

static void accept_one(int lfd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char peer[NET_NAME_MAX];
    int fd = accept(lfd, (struct sockaddr *)&ss, &len);
    if (fd < 0) {
        if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
            fprintf(stderr, "callsight serve: accept failed: %s\n", strerror(errno));
        return;
    }
    net_addr_name((struct sockaddr *)&ss, len, peer, sizeof peer);
    start_conn(fd, peer);
}

/* Accept until SIGINT/SIGTERM; the signals are delivered only inside pselect. */
static int accept_loop(int lfd, const sigset_t *waitmask)
{
    while (!atomic_load(&stopping)) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(lfd, &rd);
        int rc = pselect(lfd + 1, &rd, NULL, NULL, NULL, waitmask);
        if (rc > 0)
            accept_one(lfd);
        else if (rc < 0 && errno != EINTR) {
            fprintf(stderr, "callsight serve: waiting for connections failed: %s\n", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Let every connection write what it has and close its files. */
static void stop_conns(void)
{
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < MAX_CONNS; i++)
        if (slots[i] >= 0)
            shutdown(slots[i], SHUT_RD);
    while (active > 0)
        pthread_cond_wait(&slots_freed, &slots_lock);
    pthread_mutex_unlock(&slots_lock);
}

/* Block SIGINT/SIGTERM everywhere (threads inherit this); *waitmask lets them in. */
static void take_signals(sigset_t *waitmask)
{
    struct sigaction sa;
    sigset_t block;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, waitmask);
    sigdelset(waitmask, SIGINT);
    sigdelset(waitmask, SIGTERM);
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o;
    char where[NET_NAME_MAX], err[STREAM_FILE_ERR_MAX + 64];
    sigset_t waitmask;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (stream_file_init_dir(o.out, err, sizeof err)) {
        fprintf(stderr, "callsight serve: %s\n", err);
        return 1;
    }
    take_signals(&waitmask);
    int lfd = net_listen(o.host, o.port, where, sizeof where, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "callsight serve: %s\n", err);
        return 1;
    }
    for (int i = 0; i < MAX_CONNS; i++)
        slots[i] = -1;
    conn_opts = (struct stream_conn_opts){o.out, (uint64_t)o.seg_mb * MIB, (uint64_t)o.max_mb * MIB,
                                          o.quiet, STATUS_SECS, &stopping};
    size_t n = strlen(o.out);
    printf("callsight serve: listening on %s, writing %s%s\n", where, o.out,
           n && o.out[n - 1] == '/' ? "" : "/");
    fflush(stdout);
    rc = accept_loop(lfd, &waitmask);
    close(lfd);
    stop_conns();
    printf("callsight serve: stopped after %lu connection%s\n", served, served == 1 ? "" : "s");
    fflush(stdout);
    return rc ? 1 : 0;
}
