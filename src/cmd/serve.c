/*
 * serve.c - `callsight serve`: receive trace_stream connections and write
 * their events to trace.stream.<id>.<seq>.bin files for `callsight analyze`.
 *
 * The command reads the options, prepares the directory and the listening
 * socket, and hands them to serve/: admit.c accepts connections within the
 * caps and runs a thread per connection (conn.c: the protocol and the
 * files), every one joined before the command ends.
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
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "commands.h"
#include "serve/admit.h"
#include "serve/auth.h"
#include "serve/conn.h"
#include "serve/control.h"
#include "serve/files.h"
#include "serve/net.h"
#include "serve/resume.h"
#include "serve/sums.h"

#define MAX_CONNS ADMIT_MAX_CONNS
#define DEFAULT_CONNS 64
#define DEFAULT_PER_PEER 16
#define DEFAULT_IDLE_S 300
#define DEFAULT_TOTAL_MB 65536
#define DEFAULT_FREE_INODES 1000
#define DEFAULT_MIN_FREE_MB 1024
#define DEFAULT_SNAPSHOT_S 60
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
    long max_per_peer, max_total_mb, min_free_inodes;
    long max_summary_mb, snapshot_secs;
};

static atomic_int stopping;
static struct conn_opts conn_opts;

static struct net_allow allow;
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
            "                       [--max-conns N] [--max-per-peer N] [--idle-timeout S]\n"
            "                       [--max-total-mb N] [--min-free-mb N] [--min-free-inodes N]\n"
            "                       [--max-summary-mb N] [--snapshot-timeout S]\n"
            "                       [--allow CIDR[,CIDR...]] [--auth-key FILE] [--quiet]\n"
            "\n"
            "Receive event streams from trace_stream clients and write one series of\n"
            "trace files per connection, DIR/trace.stream.<id>.<seq>.bin, for\n"
            "`callsight analyze DIR`.  Connection ids never repeat in DIR.  Runs until\n"
            "SIGINT or SIGTERM, then closes every file cleanly and exits 0.\n"
            "\n"
            "  --host H     address to listen on (default 0.0.0.0)\n"
            "  --port P     TCP port (default 9001; 0 takes a free port)\n"
            "  --out DIR    where trace files go, created if missing (default traces);\n"
            "               it must be your own, and nobody else may write it\n"
            "  --max-mb N   stop writing a connection at N MB of files, ending with a\n"
            "               budget marker; the rest of its stream is read and counted\n"
            "               (default 4096)\n"
            "  --seg-mb N   start a new segment file every N MB (default 256)\n"
            "  --max-conns N       at most N streaming connections at once; more are told\n"
            "                      so and closed (default %d, at most %d).  As many again\n"
            "                      may be shaking hands (10 s at most); when they are\n"
            "                      full, the one that has waited longest makes room, and\n"
            "                      one admitted that has written nothing yet gives its\n"
            "                      place up to a newcomer\n"
            "  --max-per-peer N    at most N connections from one address (IPv6: one /64),\n"
            "                      streaming or not (default %d)\n"
            "  --idle-timeout S    close a connection that sends nothing for S seconds;\n"
            "                      trace_stream's heartbeats keep a quiet one open\n"
            "                      (default %d; 0: never).  A chunk that has begun must\n"
            "                      arrive at 1 KiB/s or more after 10 s\n"
            "  --max-total-mb N    stop writing (with a budget marker) once DIR's trace\n"
            "                      files, all connections' and those already there,\n"
            "                      reach N MB; refuse connections meanwhile\n"
            "                      (default %d; 0: no cap)\n"
            "  --min-free-mb N     stop writing (with a marker) and refuse connections\n"
            "                      while DIR's filesystem has less than N MB free\n"
            "                      (default %d; 0: no floor)\n"
            "  --min-free-inodes N ... or fewer than N free inodes (default %d; 0: none)\n"
            "  --max-summary-mb N  the totals serve keeps to rebuild summary snapshots\n"
            "                      sent as increments, all connections' together, stay\n"
            "                      within N MB (default %u; one connection's within %u);\n"
            "                      a connection that needs more is closed, saying so\n"
            "  --snapshot-timeout S  close a connection whose summary snapshot stays\n"
            "                      open (begun, not ended) for S seconds, freeing its\n"
            "                      totals (default %d; 0: never)\n"
            "  --allow CIDRS       only these IPv4/IPv6 prefixes may connect, e.g.\n"
            "                      10.0.0.0/8,192.168.1.7 (default: anyone; binding a\n"
            "                      non-loopback address without it prints a warning)\n"
            "  --auth-key FILE     relay live control (callsight ctl DIR) only to devices\n"
            "                      that prove they hold this key (trace_stream --auth-key\n"
            "                      with the same file), each request signed for its\n"
            "                      connection; the key never crosses the link.  An\n"
            "                      owner-only regular file of 32 to 4096 bytes, e.g.\n"
            "                      head -c 32 /dev/urandom > key; chmod 600 key\n",
            DEFAULT_CONNS, MAX_CONNS, DEFAULT_PER_PEER, DEFAULT_IDLE_S, DEFAULT_TOTAL_MB, DEFAULT_MIN_FREE_MB,
            DEFAULT_FREE_INODES, SUMS_DEFAULT_BUDGET_MB, (unsigned)(SUMS_MAX_BYTES >> 20), DEFAULT_SNAPSHOT_S);
    /* two strings: C11 promises compilers only 4095 bytes in one */
    fprintf(out,
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
            STATUS_SECS, CONTROL_SOCKET_NAME);
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
    *o = (struct serve_opts){"0.0.0.0", "9001", "traces", 4096, 256, 0, DEFAULT_CONNS, DEFAULT_IDLE_S,
                             DEFAULT_MIN_FREE_MB, NULL, DEFAULT_PER_PEER, DEFAULT_TOTAL_MB,
                             DEFAULT_FREE_INODES, SUMS_DEFAULT_BUDGET_MB, DEFAULT_SNAPSHOT_S};
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
        } else if (!strcmp(a, "--max-total-mb")) {
            if (parse_count(a, v, 0, (long)MAX_MB * 64, &o->max_total_mb))
                return -1;
        } else if (!strcmp(a, "--min-free-inodes")) {
            if (parse_count(a, v, 0, 1L << 40, &o->min_free_inodes))
                return -1;
        } else if (!strcmp(a, "--max-per-peer")) {
            if (parse_count(a, v, 1, MAX_CONNS, &o->max_per_peer))
                return -1;
        } else if (!strcmp(a, "--idle-timeout")) {
            if (parse_count(a, v, 0, IDLE_MAX_S, &o->idle_secs))
                return -1;
        } else if (!strcmp(a, "--max-summary-mb")) {
            if (parse_mb(a, v, &o->max_summary_mb))
                return -1;
        } else if (!strcmp(a, "--snapshot-timeout")) {
            if (parse_count(a, v, 0, IDLE_MAX_S, &o->snapshot_secs))
                return -1;
        } else if (!strcmp(a, "--min-free-mb")) {
            if (parse_count(a, v, 0, (long)MAX_MB, &o->min_free_mb))
                return -1;
        } else if (!strcmp(a, "--auth-key") && v) {
            char err[512];
            if (auth_load(v, err, sizeof err)) {
                fprintf(stderr, "callsight serve: %s\n", err);
                return -1;
            }
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

/* Say so at startup when a floor or the cap already stops every write,
 * or always will. */
static void warn_floors(const struct serve_opts *o)
{
    struct statvfs sv;
    uint64_t used = files_dir_bytes();
    if (o->max_total_mb && used >= (uint64_t)o->max_total_mb * MIB)
        printf("callsight serve: warning: %s already holds %" PRIu64 " MB of traces, at --max-total-mb %ld: "
               "nothing will be written until some are moved away\n", o->out, used >> 20, o->max_total_mb);
    if (statvfs(o->out, &sv) != 0)
        return;
    uint64_t size = (uint64_t)sv.f_blocks * (uint64_t)sv.f_frsize;
    uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    if (min_free_bytes && size < min_free_bytes)
        printf("callsight serve: warning: the filesystem of %s holds %" PRIu64 " MB in all, less than "
               "--min-free-mb %ld: nothing will ever be written (lower it, or 0 for no floor)\n", o->out,
               size >> 20, o->min_free_mb);
    else if (min_free_bytes && avail < min_free_bytes)
        printf("callsight serve: warning: %s has %" PRIu64 " MB free, below --min-free-mb %ld: connections are "
               "refused until space is freed\n", o->out, avail >> 20, o->min_free_mb);
    if (o->min_free_inodes && sv.f_files && (uint64_t)sv.f_files < (uint64_t)o->min_free_inodes)
        printf("callsight serve: warning: the filesystem of %s has %" PRIu64 " inodes in all, fewer than "
               "--min-free-inodes %ld: no file will ever be made\n", o->out, (uint64_t)sv.f_files,
               o->min_free_inodes);
}

/* A socket per connection and its files: as many descriptors as allowed. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
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
    char where[NET_NAME_MAX], err[FILES_ERR_MAX + 64];
    sigset_t waitmask;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    uint64_t left_out = 0;
    if (files_init_dir(o.out, err, sizeof err)) {
        fprintf(stderr, "callsight serve: %s\n", err);
        return 1;
    }
    if (resume_index_build(files_dir_fd(), &left_out)) {
        fprintf(stderr, "callsight serve: cannot read %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    take_signals(&waitmask);
    raise_fd_limit();
    int lfd = net_listen(o.host, o.port, where, sizeof where, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "callsight serve: %s\n", err);
        return 1;
    }
    min_free_bytes = (uint64_t)o.min_free_mb * MIB;
    conn_opts = (struct conn_opts){o.out, (uint64_t)o.seg_mb * MIB, (uint64_t)o.max_mb * MIB,
                                   o.quiet, STATUS_SECS, &stopping, (int)o.idle_secs,
                                   min_free_bytes, (uint64_t)o.min_free_inodes,
                                   (uint64_t)o.max_total_mb * MIB, (int)o.snapshot_secs};
    sums_set_budget((size_t)o.max_summary_mb * MIB);
    files_set_limits(conn_opts.total_bytes, min_free_bytes, (uint64_t)o.min_free_inodes);
    struct admit_opts ao = {(int)o.max_conns, (int)o.max_per_peer, &allow, o.out, &conn_opts};
    admit_init(&ao);
    size_t n = strlen(o.out);
    printf("callsight serve: listening on %s, writing %s%s\n", where, o.out,
           n && o.out[n - 1] == '/' ? "" : "/");
    char idle[32] = "off", floor[32] = "off", inodes[32] = "off", total[32] = "none", open[32] = "off";
    if (o.idle_secs)
        snprintf(idle, sizeof idle, "%ld s", o.idle_secs);
    if (o.snapshot_secs)
        snprintf(open, sizeof open, "%ld s", o.snapshot_secs);
    if (o.min_free_mb)
        snprintf(floor, sizeof floor, "%ld MB", o.min_free_mb);
    if (o.min_free_inodes)
        snprintf(inodes, sizeof inodes, "%ld inodes", o.min_free_inodes);
    if (o.max_total_mb)
        snprintf(total, sizeof total, "%ld MB", o.max_total_mb);
    printf("callsight serve: limits: %ld MB of files per connection in %ld MB segments, %s in all, at most "
           "%ld connections (%ld per address), idle timeout %s, free-space floor %s and %s, summary totals "
           "%ld MB in all, snapshot timeout %s\n",
           o.max_mb, o.seg_mb, total, o.max_conns, o.max_per_peer, idle, floor, inodes, o.max_summary_mb, open);
    warn_floors(&o);
    if (left_out)
        printf("callsight serve: warning: %" PRIu64 " series in %s are too many to index; their streams "
               "start new series if they reconnect\n", left_out, o.out);
    if (!o.allow && !net_bound_loopback(lfd))
        printf("callsight serve: warning: listening on %s without --allow: anyone who can reach it may "
               "send data\n", where);
    int cfd = control_listen(o.out, err, sizeof err);
    if (cfd < 0)
        printf("callsight serve: warning: no control socket (%s): `callsight trigger` cannot reach this "
               "serve\n", err);
    fflush(stdout);
    rc = admit_loop(lfd, cfd, &waitmask);
    if (rc)
        fprintf(stderr, "callsight serve: waiting for connections failed: %s\n", strerror(errno));
    control_close(cfd, o.out);
    admit_backlog(lfd);
    close(lfd);
    admit_stop();
    conn_say_flush();
    uint64_t capped = sums_refused_all();
    if (capped)
        printf("callsight serve: %" PRIu64 " connection%s closed at the summary totals' cap of %ld MB for all "
               "connections (--max-summary-mb)\n", capped, capped == 1 ? " was" : "s were", o.max_summary_mb);
    struct admit_counts k;
    admit_counts(&k);
    printf("callsight serve: stopped after %lu connection%s", k.served, k.served == 1 ? "" : "s");
    if (k.evicted || k.refused)
        printf(" (%lu more refused; %lu closed to make room before sending events)", k.refused, k.evicted);
    printf("\n");
    fflush(stdout);
    return rc ? 1 : 0;
}
