/*
 * serve.c - `callsight serve`: receive trace_stream connections and write
 * their events to trace.stream.<id>.<seq>.bin files for `callsight analyze`.
 *
 * The command owns the listening socket and the connection threads: one
 * thread per connection (stream_conn.c does the protocol and the files,
 * with a writer thread of its own that it joins), at most --max-conns at a
 * time.  Every thread is joined: an ended one when the next connection
 * comes, the rest at shutdown, so none outlives the command.  The threads
 * share nothing but the connection-id allocator in stream_file.c and the
 * stream registry (stream_registry.c, for reconnecting clients); the table
 * of slots here is only for shutting sockets down and joining threads.
 * Before a connection gets a thread it must pass --allow and the
 * --min-free-mb floor.
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
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "commands.h"
#include "serve/control.h"
#include "serve/net.h"
#include "serve/stream_conn.h"
#include "serve/stream_file.h"

#define MAX_CONNS 1024      /* --max-conns at most; the slot table's size */
#define DEFAULT_CONNS 64
#define DEFAULT_MIN_FREE_MB 1024
#define IDLE_MAX_S 86400
#define STATUS_SECS 2
#define MIB (1024u * 1024u)
#define MAX_MB (1u << 30) /* keeps byte counts far from overflow */

struct serve_opts {
    const char *host, *port, *out;
    long max_mb, seg_mb;
    int quiet;
    long max_conns, idle_secs, min_free_mb;
    const char *allow; /* NULL: anyone */
};

struct job {
    int fd;
    int slot;
    char peer[NET_NAME_MAX];
};

static atomic_int stopping;
static struct stream_conn_opts conn_opts;

/* A connection thread's place, for shutting its socket down and joining it. */
struct slot {
    int fd;           /* the connection's socket; -1 once its thread is done with it */
    int ended;        /* the thread has ended (or is ending) and is not joined yet */
    pthread_t thread;
};

/* Open sockets and threads to join; active counts the running threads. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_freed = PTHREAD_COND_INITIALIZER;
static struct slot slots[MAX_CONNS];
static int active;
static unsigned long served;
static int max_conns = DEFAULT_CONNS;
static struct net_allow allow;
static const char *out_dir;
static uint64_t min_free_bytes;

static void on_stop_signal(int sig)
{
    (void)sig;
    atomic_store(&stopping, 1);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight serve [--host H] [--port P] [--out DIR] [--max-mb N] [--seg-mb N]\n"
            "                       [--max-conns N] [--idle-timeout S] [--min-free-mb N]\n"
            "                       [--allow CIDR[,CIDR...]] [--quiet]\n"
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
            "  --max-conns N       at most N connections at once; more are told so and\n"
            "                      closed (default %d, at most %d)\n"
            "  --idle-timeout S    close a connection that sends nothing for S seconds\n"
            "                      (default 0: never)\n"
            "  --min-free-mb N     stop writing (with a marker) and refuse connections\n"
            "                      while DIR's filesystem has less than N MB free\n"
            "                      (default %d; 0: no floor)\n"
            "  --allow CIDRS       only these IPv4/IPv6 prefixes may connect, e.g.\n"
            "                      10.0.0.0/8,192.168.1.7 (default: anyone; binding a\n"
            "                      non-loopback address without it prints a warning)\n"
            "  --quiet      no periodic status lines\n"
            "  --help       this text\n"
            "\n"
            "Prints to stdout, one line each: where it listens (first line), the\n"
            "limits in force (second line), every connection opened and closed, the device's dropped-event notices, and\n"
            "every %d s per streaming connection its rate, compression and drops.\n"
            "\n"
            "`callsight trigger DIR` asks it, through DIR/%s, to have the flight\n"
            "recorders among its connections (trace_stream --flight-recorder) take a\n"
            "snapshot now.\n",
            DEFAULT_CONNS, MAX_CONNS, DEFAULT_MIN_FREE_MB, STATUS_SECS, CONTROL_SOCKET_NAME);
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

static int parse_count(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "callsight serve: %s needs a number from %ld to %ld\n", opt, lo, hi);
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
    *o = (struct serve_opts){"0.0.0.0", "9001", "traces", 4096, 256, 0, DEFAULT_CONNS, 0,
                             DEFAULT_MIN_FREE_MB, NULL};
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
        } else if (!strcmp(a, "--max-conns")) {
            if (parse_count(a, v, 1, MAX_CONNS, &o->max_conns))
                return -1;
        } else if (!strcmp(a, "--idle-timeout")) {
            if (parse_count(a, v, 0, IDLE_MAX_S, &o->idle_secs))
                return -1;
        } else if (!strcmp(a, "--min-free-mb")) {
            if (parse_count(a, v, 0, (long)MAX_MB, &o->min_free_mb))
                return -1;
        } else if (!strcmp(a, "--allow") && v) {
            char err[128];
            if (net_allow_parse(v, &allow, err, sizeof err)) {
                fprintf(stderr, "callsight serve: %s\n", err);
                return -1;
            }
            o->allow = v;
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
    slots[j->slot].fd = -1;
    slots[j->slot].ended = 1;
    active--;
    pthread_cond_broadcast(&slots_freed);
    pthread_mutex_unlock(&slots_lock);
    close(j->fd);
    free(j);
    return NULL;
}

/*
 * Tell a refused peer why (best effort: trace_stream never reads, but a
 * person with nc does), then close.  Never blocks: the socket is fresh.
 */
static void refuse(int fd, const char *msg, int len)
{
    if (len > 0)
        (void)!send(fd, msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
    close(fd);
}

/* 1 when the out directory's filesystem is below --min-free-mb. */
static int disk_low(void)
{
    struct statvfs sv;
    if (min_free_bytes == 0 || statvfs(out_dir, &sv) != 0)
        return 0;
    return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize < min_free_bytes;
}

/* Join the threads that have ended (slots_lock held: they take it no more). */
static void reap_ended(void)
{
    for (int i = 0; i < MAX_CONNS; i++)
        if (slots[i].ended) {
            pthread_join(slots[i].thread, NULL);
            slots[i].ended = 0;
        }
}

/* Hand an accepted socket to a new thread, or refuse it when all slots are taken. */
static void start_conn(int fd, const char *peer)
{
    struct job *j = malloc(sizeof *j);
    if (!j) {
        printf("callsight serve: connection from %s refused: out of memory\n", peer);
        fflush(stdout);
        close(fd);
        return;
    }
    j->fd = fd;
    snprintf(j->peer, sizeof j->peer, "%s", peer);
    pthread_mutex_lock(&slots_lock);
    reap_ended();
    for (j->slot = 0; j->slot < max_conns && slots[j->slot].fd >= 0; j->slot++)
        ;
    int ok = j->slot < max_conns && pthread_create(&slots[j->slot].thread, NULL, conn_thread, j) == 0;
    if (ok) {
        slots[j->slot].fd = fd;
        active++;
        served++;
    }
    pthread_mutex_unlock(&slots_lock);
    if (!ok) {
        char msg[128];
        int n = snprintf(msg, sizeof msg, "callsight serve: connection from %s refused: %d connections already open\n",
                         peer, max_conns);
        fputs(msg, stdout);
        fflush(stdout);
        refuse(fd, msg, n);
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
    if (!net_allow_match(&allow, (struct sockaddr *)&ss)) {
        printf("callsight serve: connection from %s refused: not in --allow\n", peer);
        fflush(stdout);
        close(fd);
        return;
    }
    if (disk_low()) {
        char msg[NET_NAME_MAX + 160];
        int n = snprintf(msg, sizeof msg, "callsight serve: connection from %s refused: less than %lu MB "
                         "free in %s\n", peer, (unsigned long)(min_free_bytes >> 20), out_dir);
        fputs(msg, stdout);
        fflush(stdout);
        refuse(fd, msg, n);
        return;
    }
    start_conn(fd, peer);
}

/* Accept until SIGINT/SIGTERM; the signals are delivered only inside pselect. */
/* Connections, and (cfd >= 0) requests on the control socket: one at a
 * time, each bounded (control.c), so a slow asker delays accepting by a
 * second at most. */
static int accept_loop(int lfd, int cfd, const sigset_t *waitmask)
{
    while (!atomic_load(&stopping)) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(lfd, &rd);
        if (cfd >= 0)
            FD_SET(cfd, &rd);
        int rc = pselect((lfd > cfd ? lfd : cfd) + 1, &rd, NULL, NULL, NULL, waitmask);
        if (rc > 0 && FD_ISSET(lfd, &rd))
            accept_one(lfd);
        if (rc > 0 && cfd >= 0 && FD_ISSET(cfd, &rd))
            control_serve_one(cfd);
        else if (rc < 0 && errno != EINTR) {
            fprintf(stderr, "callsight serve: waiting for connections failed: %s\n", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/*
 * Stopping: connections the kernel completed but we had not accepted yet
 * have sent data their clients count as sent.  Take them too (bounded by
 * the backlog), so stop_conns writes what they sent like everyone else's.
 */
static void accept_backlog(int lfd)
{
    int fl = fcntl(lfd, F_GETFL);
    if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) != 0)
        return;
    for (int i = 0; i < MAX_CONNS; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        char peer[NET_NAME_MAX];
        int fd = accept(lfd, (struct sockaddr *)&ss, &len);
        if (fd < 0)
            return;
        net_addr_name((struct sockaddr *)&ss, len, peer, sizeof peer);
        if (net_allow_match(&allow, (struct sockaddr *)&ss))
            start_conn(fd, peer);
        else
            close(fd);
    }
}

/* Let every connection write what it has and close its files. */
static void stop_conns(void)
{
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < MAX_CONNS; i++)
        if (slots[i].fd >= 0)
            shutdown(slots[i].fd, SHUT_RD);
    while (active > 0)
        pthread_cond_wait(&slots_freed, &slots_lock);
    reap_ended();
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
        slots[i] = (struct slot){.fd = -1};
    max_conns = (int)o.max_conns;
    out_dir = o.out;
    min_free_bytes = (uint64_t)o.min_free_mb * MIB;
    conn_opts = (struct stream_conn_opts){o.out, (uint64_t)o.seg_mb * MIB, (uint64_t)o.max_mb * MIB,
                                          o.quiet, STATUS_SECS, &stopping, (int)o.idle_secs,
                                          min_free_bytes};
    size_t n = strlen(o.out);
    printf("callsight serve: listening on %s, writing %s%s\n", where, o.out,
           n && o.out[n - 1] == '/' ? "" : "/");
    char idle[32] = "off", floor[32] = "off";
    if (o.idle_secs)
        snprintf(idle, sizeof idle, "%ld s", o.idle_secs);
    if (o.min_free_mb)
        snprintf(floor, sizeof floor, "%ld MB", o.min_free_mb);
    printf("callsight serve: limits: %ld MB of files per connection in %ld MB segments, at most %ld "
           "connections, idle timeout %s, free-space floor %s\n",
           o.max_mb, o.seg_mb, o.max_conns, idle, floor);
    if (!o.allow && !net_bound_loopback(lfd))
        printf("callsight serve: warning: listening on %s without --allow: anyone who can reach it may "
               "send data\n", where);
    int cfd = control_listen(o.out, err, sizeof err);
    if (cfd < 0)
        printf("callsight serve: warning: no control socket (%s): `callsight trigger` cannot reach this "
               "serve\n", err);
    fflush(stdout);
    rc = accept_loop(lfd, cfd, &waitmask);
    control_close(cfd, o.out);
    accept_backlog(lfd);
    close(lfd);
    stop_conns();
    printf("callsight serve: stopped after %lu connection%s\n", served, served == 1 ? "" : "s");
    fflush(stdout);
    return rc ? 1 : 0;
}
