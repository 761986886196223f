/*
 * topfollow.c - measures how fast `callsight top` reads a growing trace
 * directory: the CPU time of its refreshes (analysis/live.h) while a
 * finished trace directory is replayed into a fresh one, piece by piece.
 *
 *   topfollow SRC_DIR WORK_DIR [--exe BIN] [--piece-events N]
 *             [--expect-events N] [--seed S]
 *
 * SRC_DIR holds trace files already written (serve's --out, or a local
 * TRACE_DIR).  WORK_DIR must not exist; it is created, and the caller
 * removes it.  Each step appends the next piece of SRC_DIR's bytes to
 * WORK_DIR, as its writer would have: the series one after the other, each
 * segment's file created when its first byte is written and finished before
 * the next one exists (writers rotate after their last write).  A piece is
 * N events' worth of bytes (default 1 M, 0.1 s of a 10 M events/s stream)
 * times a factor from 0.5 to 1.5, cut at any byte, not at record
 * boundaries: a real writer's last record is often torn when top looks, and
 * a header may be half written.  Then live_refresh reads what was appended,
 * as top's each interval does.  Only the refreshes (and the final
 * live_finish) are timed, by the thread's CPU clock and the wall clock; the
 * copying is not, since in real use another process (serve) writes.
 *
 * Why replay instead of following a live stream: the refresh's cost is the
 * figure that says whether top keeps up, and a live 10 M events/s stream on
 * a small machine would measure the CPUs' contention instead (trace_stream
 * and serve need most of them).  The pieces are fixed by the seed, so runs
 * read the same bytes in the same steps.
 *
 * With --expect-events (analyze's events= for SRC_DIR) it fails, exit 1,
 * unless live read exactly that many events: so the figure also shows that
 * reading in torn pieces lost and doubled nothing.
 *
 * Output, one line:
 *   topfollow events=E records=R bytes=B pieces=P refresh_cpu_ns=C
 *       refresh_wall_ns=W finish_cpu_ns=F slowest_refresh_cpu_ns=S
 *       slowest_refresh_events=SE min_refresh_rate=M maxrss_kb=K
 * min_refresh_rate is the lowest events per CPU second of one refresh
 * (refreshes that read under a tenth of a piece are not judged: the first
 * ones may find only a header).
 *
 * C11 + POSIX; links callsight's host objects (bench/bench.mk).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/live.h"
#include "read/elf_buildid.h"
#include "read/trace_files.h"

#define PROG "topfollow"
#define COPY_BUF (1u << 20)

struct options {
    const char *src, *work, *exe;
    uint64_t piece_events;
    uint64_t expect_events;
    int have_expect;
    uint64_t seed;
};

/* Where the replay stands: the segment being copied, its two files. */
struct replay {
    struct trace_files tf;
    const char *work;
    size_t series, seg;
    int in, out; /* -1: the segment's files are not open */
    unsigned char *buf;
    uint64_t bytes; /* copied so far */
    int done;
};

/* Only main's level exits; here that is every error: a bench that cannot
 * replay or refresh has no figure to give. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* xorshift64*: the pieces' sizes, the same for every run with one seed. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint64_t parse_u64(const char *name, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        die("%s %s: not a count", name, v);
    return n;
}

static void parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->piece_events = 1000000;
    o->seed = 17;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--", 2)) {
            if (i + 1 >= argc)
                die("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--exe"))
                o->exe = v;
            else if (!strcmp(a, "--piece-events"))
                o->piece_events = parse_u64(a, v);
            else if (!strcmp(a, "--expect-events")) {
                o->expect_events = parse_u64(a, v);
                o->have_expect = 1;
            } else if (!strcmp(a, "--seed"))
                o->seed = parse_u64(a, v) | 1; /* xorshift must not start at 0 */
            else
                die("unknown option %s", a);
        } else if (!o->src)
            o->src = a;
        else if (!o->work)
            o->work = a;
        else
            die("one source and one work directory (%s?)", a);
    }
    if (!o->src || !o->work || !o->piece_events)
        die("usage: topfollow SRC_DIR WORK_DIR [--exe BIN] [--piece-events N] [--expect-events N] [--seed S]");
}

/* ---- the writer's side: append the next piece -------------------------- */

static void replay_open(struct replay *r)
{
    const struct trace_segment *g = &r->tf.series[r->series].segs[r->seg];
    const char *base = strrchr(g->path, '/');
    char path[4096];
    base = base ? base + 1 : g->path;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", r->work, base) >= sizeof path)
        die("%s/%s: path too long", r->work, base);
    if ((r->in = open(g->path, O_RDONLY)) < 0)
        die("%s: %s", g->path, strerror(errno));
    if ((r->out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0)
        die("%s: %s", path, strerror(errno));
}

/* The segment is copied whole: close it, move to the next (or end). */
static void replay_next(struct replay *r)
{
    close(r->in);
    if (close(r->out) < 0)
        die("close: %s", strerror(errno));
    r->in = r->out = -1;
    if (++r->seg == r->tf.series[r->series].nsegs) {
        r->seg = 0;
        r->series++;
    }
    r->done = r->series == r->tf.nseries;
}

/* Append up to n more bytes; fewer only at the end of everything. */
static void replay_piece(struct replay *r, uint64_t n)
{
    while (n && !r->done) {
        if (r->in < 0)
            replay_open(r);
        size_t want = n < COPY_BUF ? (size_t)n : COPY_BUF;
        ssize_t got = read(r->in, r->buf, want);
        if (got < 0)
            die("read: %s", strerror(errno));
        if (got == 0) {
            replay_next(r);
            continue;
        }
        if (write(r->out, r->buf, (size_t)got) != got)
            die("write: %s", strerror(errno));
        n -= (uint64_t)got;
        r->bytes += (uint64_t)got;
    }
}

/* ---- top's side: refresh, timed ------------------------------------------ */

struct totals {
    uint64_t pieces;
    int64_t cpu_ns, wall_ns, finish_cpu_ns;
    int64_t slowest_cpu_ns;
    uint64_t slowest_events;
    double min_rate;
};

static void refresh_timed(struct live *l, struct totals *t, double interval_s, uint64_t judge_from)
{
    char msg[600];
    uint64_t before = l->a.events;
    int64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    int rc = live_refresh(l, interval_s, msg, sizeof msg);
    int64_t c = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0, w = now_ns(CLOCK_MONOTONIC) - w0;
    if (rc < 0)
        die("refresh: %s", msg);
    uint64_t ev = l->a.events - before;
    t->pieces++;
    t->cpu_ns += c;
    t->wall_ns += w;
    if (c > t->slowest_cpu_ns) {
        t->slowest_cpu_ns = c;
        t->slowest_events = ev;
    }
    if (ev >= judge_from && c > 0) {
        double rate = (double)ev / ((double)c / 1e9);
        if (t->min_rate == 0 || rate < t->min_rate)
            t->min_rate = rate;
    }
}

static void set_exe(struct analysis_exe *e, const char *path)
{
    struct elf_buildid b;
    char msg[512];
    e->path = path;
    if (elf_buildid_read(path, &b, msg, sizeof msg) < 0)
        b.len = 0; /* as top: functions then go by the first --exe without a check */
    e->have_build_id = b.len > 0;
    elf_buildid_words(&b, e->build_id);
}

int main(int argc, char **argv)
{
    struct options o;
    struct replay r = {.in = -1, .out = -1};
    struct analysis_exe exe = {0};
    struct live l;
    struct totals t = {0};
    char msg[600] = "";
    parse_args(argc, argv, &o);

    trace_files_init(&r.tf);
    if (trace_files_add(&r.tf, o.src, msg, sizeof msg) <= 0)
        die("%s: %s", o.src, msg[0] ? msg : "no trace files");
    if (trace_files_group(&r.tf) < 0)
        die("out of memory");
    if (mkdir(o.work, 0755) < 0)
        die("%s: %s", o.work, strerror(errno));
    r.work = o.work;
    if (!(r.buf = malloc(COPY_BUF)))
        die("out of memory");
    if (o.exe)
        set_exe(&exe, o.exe);
    /* Diagnostics to stderr as top --once has them: a torn record must only
     * ever be said at the end, and then by live_finish. */
    if (live_init(&l, o.work, &exe, o.exe ? 1 : 0, stderr, PROG) < 0)
        die("out of memory");

    uint64_t piece = o.piece_events * TRACE_EVENT_SIZE, seed = o.seed;
    double interval_s = (double)o.piece_events / 10e6; /* what the piece is at 10 M events/s */
    while (!r.done) {
        /* 0.5x to 1.5x the piece, to the byte */
        replay_piece(&r, piece / 2 + next_rand(&seed) % (piece + 1));
        refresh_timed(&l, &t, interval_s, o.piece_events / 10);
    }
    int64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    live_finish(&l);
    t.finish_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t events = l.a.events, records = l.a.records;
    printf(PROG " events=%" PRIu64 " records=%" PRIu64 " bytes=%" PRIu64 " pieces=%" PRIu64
                " refresh_cpu_ns=%" PRId64 " refresh_wall_ns=%" PRId64 " finish_cpu_ns=%" PRId64
                " slowest_refresh_cpu_ns=%" PRId64 " slowest_refresh_events=%" PRIu64
                " min_refresh_rate=%.0f maxrss_kb=%ld\n",
           events, records, r.bytes, t.pieces, t.cpu_ns, t.wall_ns, t.finish_cpu_ns, t.slowest_cpu_ns,
           t.slowest_events, t.min_rate, ru.ru_maxrss);
    live_free(&l);
    trace_files_free(&r.tf);
    free(r.buf);
    if (o.have_expect && events != o.expect_events) {
        fprintf(stderr, PROG ": FAILED: top's refreshes read %" PRIu64 " events, analyze %" PRIu64 "\n", events,
                o.expect_events);
        return 1;
    }
    return 0;
}
