/*
 * trace_stream.c - callsight's on-device streaming client.
 *
 *   traced process --(POSIX shm ring)--> trace_stream --(zstd, TCP)--> callsight serve
 *
 * trace_stream starts before the traced program.  It creates the shared
 * memory ring named on its command line (or maps it, if the tracer was
 * first), connects to `callsight serve`, waits for a tracer to attach, and
 * then forwards everything the tracer writes: it drains the ring in chunks
 * without ever taking the ring's lock, compresses each chunk into one zstd
 * frame and sends it.  It makes version-2 rings, which every tracer
 * reads, unless --ring-version 3 asks for the newer kind (trace_shm.h:
 * writers copy outside the lock and commit each batch, so one that loses
 * its CPU mid-copy holds up no other; tracers that predate it refuse it);
 * it reads both.  It exits once every tracer has detached (several
 * processes may share one ring: its header counts them) and the ring is
 * empty, and removes the ring: the client owns the ring's lifetime.
 *
 * Faults.  Every tracer holds a shared flock on the ring for its lifetime;
 * when an exclusive one succeeds while `writers` > 0, the tracers counted
 * there died without detaching: drain, say so (chunk TRACER_LOST), exit 3.
 * When the server is not there (refused at start, or gone: cut) the client
 * stops taking from the ring, which keeps what the tracers write for the
 * next connection (once it is full they drop new events, counted in its
 * header, as on a slow link), and connects again with a doubling backoff
 * for up to --retry seconds; after every handshake a RESUME chunk names
 * the stream and carries its totals, so serve counts the gap exactly (only
 * a chunk in flight at the cut can be in it).  Events lost to the link
 * (left in the ring, a chunk the cut broke, the tracers' drops while no
 * connection was up) make the exit status 4.
 *
 * The traced process never does I/O and never waits for this client; when
 * the ring is full the tracer drops events and counts them in the ring
 * header.  trace_stream forwards that count as a notice chunk whenever it
 * changes, so loss always reaches the host.
 *
 * The ring and the wire protocol are defined in trace_shm.h, the event
 * record in trace.h; both must sit beside this file.  It stands alone:
 *
 *   cc -O2 -o trace_stream trace_stream.c -lzstd
 *
 * On a device without libzstd, -DTRACE_STREAM_NO_LIBZSTD (and no -lzstd)
 * builds a client that sends the same zstd frames made of raw, uncompressed
 * blocks (RFC 8878), which every zstd decoder accepts: serve needs no
 * change, the link carries about 8x the bytes (docs/devices.md).
 *
 * Codec.  Built with libzstd, it offers the server the "stack + shuffle"
 * coding of event chunks (TRACE_CHUNK_EVENTS_CODED, specified in
 * trace_shm.h): a handshake flag, answered by a 16-byte ack from servers
 * that decode it.  It never waits for the ack: it looks for it (without
 * blocking) before each chunk and codes every chunk after it arrived, about
 * 4x fewer bytes on the wire and less compression CPU per event, since zstd
 * runs much faster on the coded records.  An older server never acks, and
 * the stream stays plain.  --codec none turns the offer off.
 *
 * Flight recorder.  With --flight-recorder the ring gets a block after its
 * storage and the tracers overwrite its oldest whole batches instead of
 * dropping new ones; nothing but heartbeats is sent until a trigger
 * (SIGUSR1, a TRACE_TRIGGER call that was slow, a tracer that died, a
 * request the server passes down from `callsight trigger`), and
 * then the ring's contents go as one snapshot on a connection of their
 * own (see "flight recorder" below).
 *
 * Summaries.  With TRACE_MODE=summary the tracer writes per-thread
 * snapshots of per-function totals into the ring; unless --summary-threads,
 * this client merges each process's threads into one snapshot every
 * --summary-ms, sent as increments to a server that takes them, so a busy
 * program costs a few KB/s on the link (see "summaries, merged per
 * process" below).
 *
 * The wire is little-endian; the ring is in the device's own byte order, so
 * a big-endian device converts every record before sending (and before
 * coding).  On a 32-bit target the 64-bit atomics of the ring header must
 * be lock-free (they are shared between processes); the program checks
 * this at start.
 */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: shm_open, getaddrinfo, SA_RESETHAND */
#define _DEFAULT_SOURCE    /* and flock(2), which every Unix the ring runs on has */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* getrandom() where the C library has it (glibc 2.25, musl 1.1.20);
 * elsewhere, or with -DTRACE_STREAM_NO_GETRANDOM, /dev/urandom only. */
#if defined(__has_include) && !defined(TRACE_STREAM_NO_GETRANDOM)
#if __has_include(<sys/random.h>)
#include <sys/random.h>
#ifdef GRND_NONBLOCK
#define HAVE_GETRANDOM 1
#endif
#endif
#endif

#ifndef TRACE_STREAM_NO_LIBZSTD
#include <zstd.h>
#define LEVEL_MIN ZSTD_minCLevel()
#define LEVEL_MAX ZSTD_maxCLevel()
#define FRAME_LEVEL_NOTE ""
#define CODEC_DEFAULT 1 /* coded records compress ~4x better: offer the codec */
#define CODEC_NOTE ""
#else
/* Raw blocks do not compress: coding would only cost CPU. */
#define CODEC_DEFAULT 0
#define CODEC_NOTE ";\n              built without libzstd: always none (raw blocks do not shrink)"
#define LEVEL_MIN (-131072) /* libzstd's range, accepted and ignored */
#define LEVEL_MAX 22
#define FRAME_LEVEL_NOTE ";\n              ignored: built without libzstd, chunks go uncompressed"
#endif

#include "trace.h"
#include "trace_shm.h"
#include "trace_wire.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* SIGPIPE is ignored anyway */
#endif

/*
 * Raw bytes per chunk.  1 MiB is large enough for zstd to find the
 * repetition in function addresses and call sites, and small enough that a
 * chunk leaves the device within milliseconds on a slow link.
 */
#define CHUNK_RAW (1u << 20)
_Static_assert(CHUNK_RAW <= TRACE_STREAM_MAX_RAW, "chunk within the server's limit");
_Static_assert(CHUNK_RAW % TRACE_EVENT_SIZE == 0, "chunk holds whole records");

/*
 * Default zstd level: 1.  Measured with libzstd 1.5.4 on an x86-64 server,
 * on 1 MiB chunks of events recorded from examples/workload (26 threads,
 * per-thread batches interleaved as they reach the ring; tick and ns
 * timestamps gave the same picture):
 *
 *   level 1: 8.8x smaller, 370-520 MB/s, 0.57 MiB of compressor state
 *   level 3: 9.6x smaller, 300-480 MB/s, 1.27 MiB of compressor state
 *
 * Level 3 saves 9% of the wire bytes for roughly 10% more CPU (the machine
 * was noisy) and twice the memory.  On a device CPU and memory are what the
 * traced program competes for, while a link that cannot carry 1/9 of the raw
 * event rate is rare; where it is the bottleneck, --level 3 is the knob.
 */
#define DEFAULT_LEVEL 1

/* How long an existing ring may take to show its size and magic. */
#define ATTACH_WAIT_MS 2000
/* Idle sleeps: start short so a burst is picked up quickly, back off to this. */
#define IDLE_MIN_MS 1
#define IDLE_MAX_MS 8
/* How often to test whether the tracers counted in `writers` still live. */
#define LIVENESS_MS 200
/* Reconnecting: the first retry after this, doubling up to the maximum. */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define DEFAULT_RETRY_S 30
/* After this long without sending, repeat the resume notice: a heartbeat,
 * so a server's --idle-timeout above it never cuts a healthy quiet stream. */
#define DEFAULT_HEARTBEAT_S 5
#define HEARTBEAT_MAX_S 3600
#define DEFAULT_SUMMARY_MS 1000
#define RETRY_MAX_S 86400

/* Exit status when tracers vanished without detaching (all else sent). */
#define EXIT_TRACER_LOST 3
/* Exit status when events were lost because the server refused or the
 * connection was cut: it wins over EXIT_TRACER_LOST, whose promise
 * (everything the tracers put in the ring was sent) it breaks; an error (1)
 * wins over both. */
#define EXIT_LINK_LOST 4
/* While no connection is up, how often to look at signals and the tracers. */
#define LINK_WAIT_MS 10
#define DEFAULT_MAX_TRIGGERS 10
#define MAX_TRIGGERS_MAX 3600 /* one a second */
#define AFTER_MAX_MS 3600000
#define RECORDER_LOCK_TRIES 1000 /* ~1 s of 1 ms naps for the ring's lock */

struct options {
    int level;
    int codec;    /* offer TRACE_CHUNK_EVENTS_CODED (--codec stack|none) */
    int quiet;
    long retry_s; /* how long to keep reconnecting; 0: give up at once */
    long heartbeat_s; /* resend the resume notice after this long quiet */
    int summary_threads; /* --summary-threads: send each thread's snapshots as they are */
    long summary_ms;  /* --summary-ms: how often merged snapshots go */
    int recorder;     /* --flight-recorder */
    int ring_version; /* --ring-version: of a ring we create (a recorder's is 2) */
    long after_ms;    /* --after: keep shipping this long after a trigger */
    long max_triggers; /* --max-triggers: snapshots per hour at most */
    const char *shm;
    const char *host;
    const char *port;
};

struct ring {
    const char *name;
    trace_shm_header_t *hdr;
    unsigned char *data; /* capacity bytes of storage after the header */
    size_t map_len;
    uint32_t capacity;
    uint64_t tail; /* our copy; only this process writes the header's tail */
    int fd;        /* kept open: our exclusive flock tests the tracers' shared ones */
    uint64_t live_at; /* when (ms) to test the tracers' liveness next */
    uint32_t vanished; /* tracers found dead while still counted in `writers` */
    int lock_seen;     /* a tracer's shared lock was seen: tracers here use it */
    trace_shm_recorder_t *rec; /* --flight-recorder: the block after the storage */
    int vanished_said; /* the dead tracers were reported (once) */
    uint32_t version;  /* TRACE_SHM_VERSION, or TRACE_SHM_VERSION_COMMIT (batches committed) */
    uint64_t stuck_at; /* version 3: where an uncommitted batch was first seen at tail, */
    uint64_t stuck_ms; /* ... and when (ms); its writer's life is tested a period later */
};

struct sender {
    int sock;             /* -1 while disconnected */
    int level;
    const struct options *o;
#ifndef TRACE_STREAM_NO_LIBZSTD
    ZSTD_CCtx *cctx;
#endif
    unsigned char *raw;  /* CHUNK_RAW bytes drained from the ring */
    unsigned char *coded; /* CHUNK_RAW bytes: raw after the codec (NULL when not offered) */
    struct codec *codec;  /* its per-thread state */
    int offered;          /* this connection's handshake offered the codec */
    int acked;            /* ... and the server's ack arrived: send coded chunks */
    int sum_ok;           /* the ack says the server takes summary snapshots */
    int sum_inc;          /* ... and increments of them (TRACE_CHUNK_SUMMARY_INCREMENTS) */
    uint64_t hello_ms;    /* when this connection's handshake went: the ack is awaited until
                             TRACE_ACK_WAIT_MS later */
    uint64_t sum_dropped; /* summary records not sent: the server does not take them */
    struct merger *merge; /* threads' snapshots merged per process (NULL: --summary-threads) */
    unsigned ack_got;     /* bytes of the ack read so far */
    unsigned char ack[TRACE_STREAM_ACK_SIZE];
    int req_ok;           /* --flight-recorder: the ack says snapshot requests may come */
    unsigned req_got;     /* bytes of the request being read */
    unsigned char req[TRACE_STREAM_REQUEST_SIZE];
    uint64_t requests;    /* whole requests read and not yet acted on */
    uint64_t coded_chunks; /* event chunks sent coded */
    unsigned char *wire; /* chunk header followed by the zstd frame */
    size_t wire_cap;
    uint64_t events;      /* records forwarded (enter, exit and markers alike) */
    uint64_t chunks;      /* event chunks sent */
    uint64_t wire_bytes;  /* everything sent: handshake, chunks, notices */
    uint64_t dropped_sent; /* last dropped count sent in a notice */
    int notice_due;       /* a new connection gets the count even if unchanged */
    /* The stream's identity and totals, for TRACE_CHUNK_RESUME. */
    uint64_t stream_id, start_ns;
    uint32_t conn_seq;    /* connections made so far */
    uint64_t discarded;   /* records taken from the ring and never sent */
    uint64_t sent_before, discarded_before; /* the totals when this connection began */
    uint64_t last_send;   /* ms of the last successful send */
    uint64_t down_since;  /* ms when the connection was lost */
    uint64_t next_try;    /* ms of the next reconnection attempt */
    int backoff_ms;
    /* The main connection's: what the link cost (the exit status says so). */
    const trace_shm_header_t *ring; /* its ring (NULL: a snapshot's sender, which counts none of it) */
    uint64_t down_dropped;   /* the ring's dropped count when this outage began */
    uint64_t outage_dropped; /* the tracers' drops while no connection was up, earlier outages */
    uint64_t snap_lost;      /* --flight-recorder: snapshots the link refused or cut */
    int ever_up;          /* a connection was up once ("connected", then "reconnected") */
    int gave_up;          /* the link is gone for good: --retry ran out, or is 0 */
    /* The stream's secret (TRACE_STREAM_FLAG_RESUME_KEY): only a server
     * shown it lets a connection continue this stream.  Never printed or
     * written anywhere but to the socket. */
    int keyed;
    unsigned char key[TRACE_STREAM_RESUME_KEY_SIZE];
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t snapshot_requested; /* SIGUSR1s so far, with --flight-recorder */

static void on_snapshot_signal(int sig)
{
    (void)sig;
    snapshot_requested = snapshot_requested + 1; /* counted: one coming while we look is not lost */
}

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* ---- small helpers ------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: trace_stream [--level N] [--codec stack|none] [--retry SECONDS]\n"
            "                    [--heartbeat SECONDS] [--summary-ms MS] [--summary-threads]\n"
            "                    [--flight-recorder [--after MS] [--max-triggers N]]\n"
            "                    [--ring-version 2|3] [--quiet] SHM HOST PORT\n"
            "\n"
            "Forward the events of a callsight-traced program from the shared-memory\n"
            "ring SHM (e.g. /callsight0) to `callsight serve` at HOST:PORT.\n"
            "Start it first, then run the program with TRACE_SHM=SHM.  It creates\n"
            "the ring (TRACE_SHM_SIZE bytes, default 16 MiB) unless the tracer did,\n"
            "exits once every tracer has detached and the ring is drained, and then\n"
            "removes the ring.  Several programs may share the ring (same TRACE_SHM);\n"
            "a daemon that stays attached keeps it open for programs that come and go.\n"
            "SIGINT/SIGTERM: send what is in the ring, then exit (without a connection:\n"
            "at once, saying what is lost).\n"
            "\n"
            "  --level N   zstd compression level (default %d)%s\n"
            "  --codec C   stack (default%s): offer the server the stack+shuffle coding\n"
            "              of event chunks, about 4x fewer bytes and less CPU; servers\n"
            "              that do not know it never answer, and chunks stay plain.\n"
            "              none: plain chunks only%s\n"
            "  --retry S   when the server refuses the first connection or goes away,\n"
            "              keep connecting for S seconds (default %d; 0: exit at once);\n"
            "              meanwhile the ring keeps what the tracers write, for the next\n"
            "              connection (once it is full they drop new events, counted)\n"
            "  --heartbeat S  when nothing was sent for S seconds, send a small notice\n"
            "              so the server's --idle-timeout (keep it above S) does not\n"
            "              cut a quiet stream (default %d)\n"
            "  --summary-ms MS  TRACE_MODE=summary: send each process's threads merged\n"
            "              into one snapshot every MS ms (default %d), a few KB/s\n"
            "              however many threads it has\n"
            "  --summary-threads  send each thread's own snapshots instead (the\n"
            "              report keeps threads apart; many more bytes on the wire)\n"
            "  --flight-recorder  keep only the most recent events in the ring (the\n"
            "              tracers overwrite the oldest whole batches, counted) and send\n"
            "              nothing but heartbeats until a trigger: SIGUSR1, a slow call\n"
            "              (TRACE_TRIGGER=NAME>LIMIT in the program's environment), a\n"
            "              tracer that dies, or `callsight trigger` on the host (through\n"
            "              serve).  Then the ring's contents go as one snapshot\n"
            "              on a connection of its own (its own series in serve's\n"
            "              directory), and recording resumes.  Start it before the program\n"
            "  --after MS  after a trigger, also send what comes in the next MS ms\n"
            "              (default 0)\n"
            "  --max-triggers N  at most N snapshots per hour (default %d); further\n"
            "              triggers are counted and reported\n"
            "  --ring-version V  the kind of ring to create: 2 (default: every tracer\n"
            "              writes it) or 3 (a writer that loses its CPU in the middle\n"
            "              of a copy holds up no other: fewer drops with many threads;\n"
            "              tracers built before version 3 refuse it and write files);\n"
            "              a ring a tracer made is read as it is\n"
            "  --quiet     print only errors and the final summary\n"
            "  --help      this text\n"
            "\n"
            "The summary counts forwarded records (enter, exit and marker events)\n"
            "and the events the tracer dropped because the ring was full.\n"
            "Exit status: 0 done, 1 error (also: the server could not be reached, and\n"
            "nothing was lost), 2 usage, %d tracers died without detaching (everything\n"
            "they had put in the ring was still sent), %d events were lost because the\n"
            "server refused or the connection was cut (what the ring still held when\n"
            "--retry ran out or a signal came, a chunk the cut broke, the tracers' drops\n"
            "while no connection was up, a snapshot that could not be sent); %d wins\n"
            "over %d, and 1 over both.\n",
            DEFAULT_LEVEL, FRAME_LEVEL_NOTE, CODEC_DEFAULT ? "" : " with libzstd", CODEC_NOTE, DEFAULT_RETRY_S, DEFAULT_HEARTBEAT_S, DEFAULT_SUMMARY_MS,
            DEFAULT_MAX_TRIGGERS, EXIT_TRACER_LOST, EXIT_LINK_LOST, EXIT_LINK_LOST, EXIT_TRACER_LOST);
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Rewrite one native-order record in place as little-endian. */
static void event_to_le(unsigned char *p)
{
    trace_event_t ev;
    memcpy(&ev, p, sizeof ev);
    put_le64(p + offsetof(trace_event_t, ts), ev.ts);
    put_le64(p + offsetof(trace_event_t, func), ev.func);
    put_le64(p + offsetof(trace_event_t, call_site), ev.call_site);
    put_le32(p + offsetof(trace_event_t, tid), ev.tid);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static _Atomic uint64_t *a64(uint64_t *p) { return (_Atomic uint64_t *)p; }
static _Atomic uint32_t *a32(uint32_t *p) { return (_Atomic uint32_t *)p; }

/* The magic is published last, with release; read it as one 8-byte word. */
static int magic_ok(trace_shm_header_t *h)
{
    uint64_t word = atomic_load_explicit(a64((uint64_t *)(void *)h->magic), memory_order_acquire);
    char want[8] = {0};
    memcpy(want, TRACE_SHM_MAGIC, sizeof TRACE_SHM_MAGIC - 1);
    return memcmp(&word, want, 8) == 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* 0 run, 1 done (help printed), -1 usage error (reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    const char *pos[3];
    int npos = 0;
    o->level = DEFAULT_LEVEL;
    o->codec = CODEC_DEFAULT;
    o->quiet = 0;
    o->retry_s = DEFAULT_RETRY_S;
    o->heartbeat_s = DEFAULT_HEARTBEAT_S;
    o->summary_threads = 0;
    o->summary_ms = DEFAULT_SUMMARY_MS;
    o->recorder = 0;
    o->after_ms = 0;
    o->max_triggers = DEFAULT_MAX_TRIGGERS;
    o->ring_version = TRACE_SHM_VERSION; /* 3 only when asked: older tracers refuse it */
    int recorder_opts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--summary-threads")) {
            o->summary_threads = 1;
        } else if (!strcmp(a, "--flight-recorder")) {
            o->recorder = 1;
        } else if (!strcmp(a, "--after")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 0, AFTER_MAX_MS, &o->after_ms)) {
                fprintf(stderr, "trace_stream: --after needs milliseconds from 0 to %d\n", AFTER_MAX_MS);
                return -1;
            }
            recorder_opts = 1;
            i++;
        } else if (!strcmp(a, "--max-triggers")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 1, MAX_TRIGGERS_MAX, &o->max_triggers)) {
                fprintf(stderr, "trace_stream: --max-triggers needs a count from 1 to %d\n", MAX_TRIGGERS_MAX);
                return -1;
            }
            recorder_opts = 1;
            i++;
        } else if (!strcmp(a, "--summary-ms")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 10, 3600000, &o->summary_ms)) {
                fprintf(stderr, "trace_stream: --summary-ms needs milliseconds from 10 to 3600000\n");
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--ring-version")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], TRACE_SHM_VERSION, TRACE_SHM_VERSION_COMMIT, &v)) {
                fprintf(stderr, "trace_stream: --ring-version needs %u or %u\n", TRACE_SHM_VERSION,
                        TRACE_SHM_VERSION_COMMIT);
                return -1;
            }
            o->ring_version = (int)v;
            i++;
        } else if (!strcmp(a, "--level")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], LEVEL_MIN, LEVEL_MAX, &v)) {
                fprintf(stderr, "trace_stream: --level needs a number from %d to %d\n", LEVEL_MIN,
                        LEVEL_MAX);
                return -1;
            }
            o->level = (int)v;
            i++;
        } else if (!strcmp(a, "--codec")) {
            if (i + 1 >= argc || (strcmp(argv[i + 1], "stack") && strcmp(argv[i + 1], "none"))) {
                fprintf(stderr, "trace_stream: --codec needs 'stack' or 'none'\n");
                return -1;
            }
            o->codec = CODEC_DEFAULT && !strcmp(argv[i + 1], "stack");
            i++;
        } else if (!strcmp(a, "--retry")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 0, RETRY_MAX_S, &v)) {
                fprintf(stderr, "trace_stream: --retry needs seconds from 0 to %d\n", RETRY_MAX_S);
                return -1;
            }
            o->retry_s = v;
            i++;
        } else if (!strcmp(a, "--heartbeat")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 1, HEARTBEAT_MAX_S, &v)) {
                fprintf(stderr, "trace_stream: --heartbeat needs seconds from 1 to %d\n", HEARTBEAT_MAX_S);
                return -1;
            }
            o->heartbeat_s = v;
            i++;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "trace_stream: unknown option '%s' (try --help)\n", a);
            return -1;
        } else if (npos < 3) {
            pos[npos++] = a;
        } else {
            fprintf(stderr, "trace_stream: too many arguments (try --help)\n");
            return -1;
        }
    }
    if (npos != 3) {
        usage(stderr);
        return -1;
    }
    if (recorder_opts && !o->recorder) {
        fprintf(stderr, "trace_stream: --after and --max-triggers go with --flight-recorder\n");
        return -1;
    }
    o->shm = pos[0];
    o->host = pos[1];
    o->port = pos[2];
    return 0;
}

/* ---- the ring ----------------------------------------------------------- */

/* Storage bytes for a ring we create: TRACE_SHM_SIZE minus the header, in whole records. */
static int ring_capacity_from_env(uint32_t *cap)
{
    const char *s = getenv("TRACE_SHM_SIZE");
    uint64_t size = TRACE_SHM_DEFAULT_SIZE;
    if (s && *s) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-') {
            fprintf(stderr, "trace_stream: TRACE_SHM_SIZE='%s' is not a byte count\n", s);
            return -1;
        }
        size = v;
    }
    uint64_t c = size > TRACE_SHM_HEADER_SIZE ? (size - TRACE_SHM_HEADER_SIZE) / 32 * 32 : 0;
    /* capacity is a u32; a 32-bit target also bounds the mapping by size_t and off_t. */
    uint64_t max = (uint64_t)UINT32_MAX / 32 * 32;
    uint64_t sys = sizeof(off_t) < 8 || sizeof(size_t) < 8 ? (uint64_t)INT32_MAX : UINT64_MAX;
    if (sys - TRACE_SHM_HEADER_SIZE < max)
        max = (sys - TRACE_SHM_HEADER_SIZE) / 32 * 32;
    if (c < TRACE_SHM_MIN_CAPACITY || c > max) {
        fprintf(stderr,
                "trace_stream: TRACE_SHM_SIZE=%" PRIu64 " gives a ring of %" PRIu64
                " bytes; it must hold %u to %" PRIu64 " bytes after the %u-byte header\n",
                size, c, TRACE_SHM_MIN_CAPACITY, max, TRACE_SHM_HEADER_SIZE);
        return -1;
    }
    *cap = (uint32_t)c;
    return 0;
}

static int ring_map(struct ring *r, int fd, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "trace_stream: cannot map ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    r->hdr = p;
    r->data = (unsigned char *)p + TRACE_SHM_HEADER_SIZE;
    r->map_len = len;
    return 0;
}

/* --flight-recorder: the block after the storage, RECORDING from the
 * start; its magic goes before the ring's, so a tracer that sees the ring
 * sees the block. */
static void ring_init_recorder(struct ring *r)
{
    trace_shm_recorder_t *b = (trace_shm_recorder_t *)(void *)(r->data + r->hdr->capacity);
    b->version = TRACE_SHM_RECORDER_VERSION;
    b->state = TRACE_RECORDER_RECORDING;
    memcpy(b->magic, TRACE_SHM_RECORDER_MAGIC, sizeof b->magic);
    r->rec = b;
}

/* Create the ring; 1 if it exists already, -1 on error.  A recorder's is
 * version 2: its writers move tail over whole batches under the lock. */
static int ring_create(struct ring *r, uint32_t cap, int recorder, uint32_t version)
{
    int fd = shm_open(r->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST)
        return 1;
    if (fd < 0) {
        fprintf(stderr, "trace_stream: cannot create ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    size_t len = (size_t)TRACE_SHM_HEADER_SIZE + cap + (recorder ? TRACE_SHM_RECORDER_SIZE : 0);
    if (ftruncate(fd, (off_t)len) != 0) {
        fprintf(stderr, "trace_stream: cannot size ring %s to %zu bytes: %s\n", r->name, len,
                strerror(errno));
        close(fd);
        shm_unlink(r->name);
        return -1;
    }
    int rc = ring_map(r, fd, len);
    if (rc) {
        close(fd);
        shm_unlink(r->name);
        return -1;
    }
    r->fd = fd;
    /* ftruncate zero-filled everything: counters, lock and the tracer's half. */
    trace_shm_header_t *h = r->hdr;
    h->version = recorder ? TRACE_SHM_VERSION : version;
    h->capacity = cap;
    if (recorder)
        ring_init_recorder(r);
    char magic[8] = {0};
    memcpy(magic, TRACE_SHM_MAGIC, sizeof TRACE_SHM_MAGIC - 1);
    uint64_t word;
    memcpy(&word, magic, 8);
    atomic_store_explicit(a64((uint64_t *)(void *)h->magic), word, memory_order_release);
    r->capacity = cap;
    r->version = h->version;
    r->tail = 0;
    return 0;
}

static const char *ring_header_problem(const trace_shm_header_t *h, uint64_t seg_size)
{
    if (h->version != TRACE_SHM_VERSION_COMMIT && h->version != TRACE_SHM_VERSION)
        return "unsupported ring version";
    if (h->capacity < TRACE_SHM_MIN_CAPACITY || h->capacity % 32)
        return "capacity is not a multiple of 32 of at least the minimum";
    if ((uint64_t)TRACE_SHM_HEADER_SIZE + h->capacity > seg_size)
        return "capacity runs past the end of the segment";
    return NULL;
}

/* Map a ring someone else created; wait (bounded) until it is initialised. */
static int ring_attach(struct ring *r)
{
    int fd = shm_open(r->name, O_RDWR, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1; /* gone again: the caller retries creating it */
        fprintf(stderr, "trace_stream: cannot open ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    struct stat st;
    int waited = 0;
    for (;;) {
        if (fstat(fd, &st) != 0) {
            fprintf(stderr, "trace_stream: cannot stat ring %s: %s\n", r->name, strerror(errno));
            close(fd);
            return -1;
        }
        if ((uint64_t)st.st_size >= TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY)
            break;
        if (waited++ >= ATTACH_WAIT_MS) {
            fprintf(stderr, "trace_stream: %s exists but is too small to be a ring (%jd bytes)\n",
                    r->name, (intmax_t)st.st_size);
            close(fd);
            return -1;
        }
        sleep_ms(1);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        fprintf(stderr, "trace_stream: ring %s is too large to map here\n", r->name);
        close(fd);
        return -1;
    }
    int rc = ring_map(r, fd, (size_t)st.st_size);
    if (rc) {
        close(fd);
        return -1;
    }
    while (!magic_ok(r->hdr)) {
        if (waited++ >= ATTACH_WAIT_MS) {
            fprintf(stderr, "trace_stream: %s is not a callsight ring (no TKSHM magic)\n", r->name);
            munmap(r->hdr, r->map_len);
            close(fd);
            return -1;
        }
        sleep_ms(1);
    }
    const char *why = ring_header_problem(r->hdr, (uint64_t)st.st_size);
    if (why) {
        fprintf(stderr, "trace_stream: broken ring %s: %s\n", r->name, why);
        munmap(r->hdr, r->map_len);
        close(fd);
        return -1;
    }
    r->fd = fd;
    r->capacity = r->hdr->capacity;
    r->version = r->hdr->version;
    r->tail = atomic_load_explicit(a64(&r->hdr->tail), memory_order_acquire);
    return 0;
}

/* Create the ring, or map the one a tracer created first. */
static int ring_open(struct ring *r, int quiet, int recorder, uint32_t version)
{
    uint32_t cap;
    if (ring_capacity_from_env(&cap))
        return -1;
    /* Creator and tracer may race, and a ring may vanish between our two calls. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int rc = ring_create(r, cap, recorder, version);
        if (rc == 1 && recorder) {
            fprintf(stderr, "trace_stream: ring %s exists already; a flight recorder needs a ring of its "
                            "own: start trace_stream before the program, or remove the segment\n", r->name);
            return -1;
        }
        if (rc == 0) {
            if (!quiet)
                fprintf(stderr, "trace_stream: created ring %s (%" PRIu32 " bytes, version %" PRIu32 ")\n",
                        r->name, cap, r->version);
            return 0;
        }
        if (rc < 0)
            return -1;
        rc = ring_attach(r);
        if (rc == 0) {
            if (!quiet)
                fprintf(stderr, "trace_stream: attached to ring %s (%" PRIu32 " bytes, version %" PRIu32 ")\n",
                        r->name, r->capacity, r->version);
            return 0;
        }
        if (rc < 0)
            return -1;
    }
    fprintf(stderr, "trace_stream: ring %s keeps appearing and vanishing\n", r->name);
    return -1;
}

static void ring_close(struct ring *r)
{
    munmap(r->hdr, r->map_len);
    close(r->fd);
    shm_unlink(r->name);
}

/*
 * Every tracer holds a shared flock on the segment for its lifetime (the
 * kernel drops it however the process ends) and takes it before it counts
 * itself in `writers`.  So while we hold the exclusive lock no tracer is
 * alive, and any `writers` left are tracers that died without detaching.
 * Tested every LIVENESS_MS while writers > 0; the lock is let go at once,
 * so a tracer attaching meanwhile waits an instant at most.  Tracers of
 * other agents (the reference implementation) hold no such lock, so death
 * is concluded only once a shared lock has been seen on this ring: a live
 * callsight tracer shows it at our first look.  Returns the number of dead
 * tracers still counted (0: all is well, or we cannot tell).
 */
static uint32_t ring_dead_writers(struct ring *r)
{
    uint64_t t = now_ms();
    if (t < r->live_at)
        return 0;
    r->live_at = t + LIVENESS_MS;
    if (atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire) == 0)
        return 0;
    if (flock(r->fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            r->lock_seen = 1;
        return 0; /* a tracer lives (or we were interrupted: look again later) */
    }
    /* acquire: a tracer that detached normally decremented with release
     * before its shared lock went; what is left is the dead ones' */
    uint32_t dead = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
    flock(r->fd, LOCK_UN);
    return r->lock_seen ? dead : 0;
}

/* len bytes of storage from ring position pos (len <= capacity). */
static void ring_copy_out(const struct ring *r, uint64_t pos, unsigned char *buf, size_t len)
{
    size_t off = (size_t)(pos % r->capacity);
    size_t first = r->capacity - off < len ? r->capacity - off : len;
    memcpy(buf, r->data + off, first);
    memcpy(buf + first, r->data, len - first);
}

/*
 * Version 3: the batch header at pos (< head, both checked by the caller).
 * 1 committed, 0 still being copied, -1 broken (reported): a commit word
 * that is neither, or records that run past head.
 */
static int batch_at(const struct ring *r, uint64_t pos, uint64_t head, trace_shm_batch_t *b)
{
    _Atomic uint64_t *commit = (_Atomic uint64_t *)(void *)(r->data + pos % r->capacity);
    /* acquire: pairs with the writer's release store of the commit word,
     * so its records are seen once the word says done */
    b->commit = atomic_load_explicit(commit, memory_order_acquire);
    /* the rest was written before head covered it (our acquire load of head) */
    memcpy((unsigned char *)b + sizeof b->commit, (unsigned char *)commit + sizeof b->commit,
           sizeof *b - sizeof b->commit);
    if ((b->commit == pos || b->commit == ~pos) && b->records >= 1 &&
        b->records <= (head - pos) / TRACE_EVENT_SIZE - 1)
        return b->commit == pos;
    fprintf(stderr,
            "trace_stream: broken ring %s: the batch header at %" PRIu64 " (head %" PRIu64
            ") says commit %" PRIu64 ", %" PRIu32 " records\n",
            r->name, pos, head, b->commit, b->records);
    return -1;
}

/* Whether a tracer still lives, after an exclusive flock of the segment
 * succeeded or not (ring_dead_writers): 0 none does; 1 one does or we
 * cannot tell. */
static int ring_tracer_alive(struct ring *r)
{
    if (flock(r->fd, LOCK_EX | LOCK_NB) != 0)
        return 1;
    flock(r->fd, LOCK_UN);
    return !r->lock_seen; /* tracers that hold no lock: unknowable */
}

/*
 * Version 3: the batch at tail has stayed uncommitted.  Its writer is
 * waited for while it may live: tested a LIVENESS_MS after the batch was
 * first seen there, and every LIVENESS_MS after that.  A tid that is gone
 * (ESRCH), or no tracer alive at all, means nobody will commit it: 1, skip
 * it.  A tid we cannot test (EPERM, reused) counts as alive.
 */
static int batch_abandoned(struct ring *r, const trace_shm_batch_t *b)
{
    uint64_t t = now_ms();
    if (r->stuck_at != r->tail) {
        r->stuck_at = r->tail;
        r->stuck_ms = t;
        return 0;
    }
    if (t - r->stuck_ms < LIVENESS_MS)
        return 0;
    r->stuck_ms = t;
    if (r->vanished || !ring_tracer_alive(r))
        return 1;
    /* the tid is untrusted: 0 or a negative pid would signal a group */
    if (b->tid == 0 || b->tid > (uint32_t)INT_MAX)
        return 1;
    return kill((pid_t)b->tid, 0) != 0 && errno == ESRCH;
}

/* Version 3: a batch nobody will commit: its events count as dropped (in
 * the ring header's count, which the notices carry), and tail passes it. */
static void batch_skip(struct ring *r, const trace_shm_batch_t *b)
{
    fprintf(stderr,
            "trace_stream: ring %s: a tracer thread (tid %" PRIu32 ") died in the middle of a batch; "
            "its %" PRIu32 " events count as dropped\n",
            r->name, b->tid, b->events);
    /* relaxed: a counter, as the writers' own adds */
    atomic_fetch_add_explicit(a64(&r->hdr->dropped), b->events, memory_order_relaxed);
    r->tail += ((uint64_t)b->records + 1u) * TRACE_EVENT_SIZE;
}

/*
 * Version 3: the records of the committed batches from tail on, without
 * their headers, as many whole batches as fit in max; stops at one still
 * being copied (or skips it: batch_abandoned).  Bytes copied, -1 broken.
 */
static long ring_take_batches(struct ring *r, unsigned char *buf, size_t max, uint64_t head)
{
    size_t n = 0;
    uint64_t tail0 = r->tail;
    while (r->tail < head) {
        trace_shm_batch_t b;
        int done = batch_at(r, r->tail, head, &b);
        if (done < 0)
            return -1;
        if (!done) {
            if (!batch_abandoned(r, &b))
                break;
            batch_skip(r, &b);
            continue;
        }
        size_t len = (size_t)b.records * TRACE_EVENT_SIZE;
        if (len > max - n) {
            if (len <= max)
                break; /* the next take */
            fprintf(stderr, "trace_stream: broken ring %s: a batch of %" PRIu32 " records, more than a chunk\n",
                    r->name, b.records);
            return -1;
        }
        ring_copy_out(r, r->tail + TRACE_EVENT_SIZE, buf + n, len);
        n += len;
        r->tail += len + TRACE_EVENT_SIZE;
    }
    /* release: pairs with a writer's acquire load of tail, so our copies
     * are done before it reuses the room */
    if (r->tail != tail0)
        atomic_store_explicit(a64(&r->hdr->tail), r->tail, memory_order_release);
    return (long)n;
}

/* Version 3: records (not headers) in [tail, head), as the headers say;
 * 0 for a ring whose headers do not add up. */
static uint64_t ring_records_left(const struct ring *r, uint64_t head)
{
    uint64_t pos = r->tail, records = 0;
    while (pos < head) {
        uint32_t n; /* not the commit word, which a writer may be storing */
        memcpy(&n, r->data + pos % r->capacity + offsetof(trace_shm_batch_t, records), sizeof n);
        if (n < 1 || n > (head - pos) / TRACE_EVENT_SIZE - 1)
            return 0;
        records += n;
        pos += ((uint64_t)n + 1u) * TRACE_EVENT_SIZE;
    }
    return records;
}

/*
 * Copy up to `max` bytes of records from [tail, head) into buf and hand the
 * space back to the writers.  Returns the bytes copied, or -1 for a broken
 * ring.
 */
static long ring_take(struct ring *r, unsigned char *buf, size_t max)
{
    trace_shm_header_t *h = r->hdr;
    if (!magic_ok(h) || h->version != r->version || h->capacity != r->capacity) {
        fprintf(stderr, "trace_stream: broken ring %s: its header changed under us\n", r->name);
        return -1;
    }
    uint64_t head = atomic_load_explicit(a64(&h->head), memory_order_acquire);
    uint64_t used = head - r->tail;
    if (head < r->tail || used > r->capacity || head % TRACE_EVENT_SIZE || r->tail % TRACE_EVENT_SIZE) {
        fprintf(stderr,
                "trace_stream: broken ring %s: head %" PRIu64 ", tail %" PRIu64 ", capacity %" PRIu32
                "\n",
                r->name, head, r->tail, r->capacity);
        return -1;
    }
    if (r->version == TRACE_SHM_VERSION_COMMIT)
        return ring_take_batches(r, buf, max, head);
    size_t n = used < max ? (size_t)used : max;
    ring_copy_out(r, r->tail, buf, n);
    r->tail += n;
    atomic_store_explicit(a64(&h->tail), r->tail, memory_order_release);
    return (long)n;
}

/* ---- the connection ----------------------------------------------------- */

/*
 * Retrying a server on this host while nothing listens on its port, a
 * connect can pick that very port as its own and open a connection to
 * itself (TCP simultaneous open): everything sent would come back to us
 * and count as sent.  Such a socket is no server; errno is set to
 * ECONNREFUSED, as if nobody listened.
 */
static int self_connected(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    errno = 0;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 || getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
        return 0;
    if (ml != pl || memcmp(&me, &peer, ml) != 0)
        return 0;
    errno = ECONNREFUSED;
    return 1;
}

static int net_connect(const char *host, const char *port, int quiet)
{
    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        if (!quiet)
            fprintf(stderr, "trace_stream: cannot resolve %s port %s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 || self_connected(fd)) {
            err = errno ? errno : ECONNREFUSED;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0 && !quiet)
        fprintf(stderr, "trace_stream: cannot connect to %s:%s: %s\n", host, port, strerror(err));
    return fd;
}

static void report_send_error(int err)
{
    if (err == EPIPE || err == ECONNRESET)
        fprintf(stderr, "trace_stream: the server closed the connection\n");
    else
        fprintf(stderr, "trace_stream: sending to the server failed: %s\n", strerror(err));
}

/* 0 sent, -1 the connection failed (reported). */
static int send_all(struct sender *s, const unsigned char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(s->sock, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            report_send_error(n < 0 ? errno : EPIPE);
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        s->wire_bytes += (uint64_t)n;
    }
    s->last_send = now_ms();
    return 0;
}

static uint64_t ring_dropped(const trace_shm_header_t *h)
{
    return atomic_load_explicit(a64((uint64_t *)&h->dropped), memory_order_relaxed);
}

/* No connection from now on: the outage's clock and the tracers' drops start. */
static void sender_down(struct sender *s)
{
    s->down_since = now_ms();
    s->backoff_ms = BACKOFF_MIN_MS;
    s->next_try = s->down_since + BACKOFF_MIN_MS;
    if (s->ring)
        s->down_dropped = ring_dropped(s->ring);
}

/* The tracers' drops while no connection was up, this outage included. */
static uint64_t outage_drops(const struct sender *s)
{
    uint64_t d = s->outage_dropped;
    if (s->sock < 0 && s->ring)
        d += ring_dropped(s->ring) - s->down_dropped;
    return d;
}

/*
 * The connection is gone (already reported).  With --retry 0 that ends the
 * program (-1); otherwise we stop taking from the ring, which keeps what the
 * tracers write for the next connection (full, they drop new events and
 * count them), and try to reconnect with a doubling backoff (0).
 */
static int sender_lost(struct sender *s)
{
    close(s->sock);
    s->sock = -1;
    sender_down(s);
    if (s->o->retry_s == 0) {
        s->gave_up = 1;
        return -1;
    }
    fprintf(stderr, "trace_stream: reconnecting for up to %ld s; meanwhile the ring keeps what the tracers "
                    "write (once it is full they drop new events, counted)\n", s->o->retry_s);
    return 0;
}

static uint32_t get_le32(const unsigned char *c)
{
    return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

/* The ack is whole: a known magic, and our codec and summaries among its bits. */
static void ack_check(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_ACK_MAGIC, sizeof TRACE_STREAM_ACK_MAGIC - 1);
    uint32_t codecs = get_le32(s->ack + offsetof(trace_stream_ack_t, codecs));
    uint32_t features = get_le32(s->ack + offsetof(trace_stream_ack_t, features));
    if (memcmp(s->ack, magic, 8) != 0) {
        fprintf(stderr, "trace_stream: the server answered the handshake with something else than "
                        "an ack; sending plain chunks\n");
        return;
    }
    s->acked = s->offered && (codecs & TRACE_CODEC_STACK_SHUFFLE) != 0;
    s->sum_ok = (features & TRACE_ACK_SUMMARIES) != 0;
    s->sum_inc = s->sum_ok && (features & TRACE_ACK_SUMMARY_INCREMENTS) != 0;
    s->req_ok = s->o->recorder && (features & TRACE_ACK_SNAPSHOT_REQUESTS) != 0;
    if (s->acked && !s->o->quiet)
        fprintf(stderr, "trace_stream: the server decodes coded chunks; sending them from now on\n");
}

/* Still waiting for the server to say whether it takes summary snapshots:
 * the ring is held back meanwhile, so that none is dropped for not knowing,
 * but never past half full, so that the tracers drop nothing for our
 * waiting (what summaries then find no answer are counted as dropped). */
static int ack_pending(const struct sender *s, const struct ring *r)
{
    if (s->sock < 0 || s->ack_got >= TRACE_STREAM_ACK_SIZE || now_ms() - s->hello_ms >= TRACE_ACK_WAIT_MS)
        return 0;
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    return head - r->tail < r->capacity / 2;
}

/* An older server does not take summary records: leave them out of the
 * chunk (counted, and carried in the dropped count of the notices). */
static long drop_summaries(struct sender *s, unsigned char *raw, long n)
{
    long out = 0;
    for (long off = 0; off < n; off += TRACE_EVENT_SIZE) {
        if (raw[off + offsetof(trace_event_t, kind)] == TRACE_KIND_SUMMARY) {
            s->sum_dropped++;
            continue;
        }
        if (out != off)
            memmove(raw + out, raw + off, TRACE_EVENT_SIZE);
        out += TRACE_EVENT_SIZE;
    }
    return out;
}

/* A whole snapshot request came (after an ack that allows them); anything
 * else ends our reading of requests, never the stream. */
static void request_check(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_REQUEST_MAGIC, sizeof TRACE_STREAM_REQUEST_MAGIC - 1);
    s->req_got = 0;
    if (memcmp(s->req, magic, sizeof magic) == 0) {
        s->requests++;
        return;
    }
    s->req_ok = 0;
    fprintf(stderr, "trace_stream: the server sent something else than a snapshot request; "
                    "no more requests are taken on this connection\n");
}

/*
 * Read what the server sent, never blocking: the codec ack while one is
 * due, then snapshot requests if it allowed them; anything else a server
 * sends is ignored.  0, or 1 when the server closed the connection or it
 * failed (reported).  Bounded, so that a server that floods us cannot keep
 * us from the ring.
 */
static int read_server(struct sender *s)
{
    for (int round = 0; round < 16; round++) {
        unsigned char junk[256];
        int want_ack = s->ack_got < TRACE_STREAM_ACK_SIZE, want_req = !want_ack && s->req_ok;
        unsigned char *dst = want_ack ? s->ack + s->ack_got : want_req ? s->req + s->req_got : junk;
        size_t len = want_ack ? TRACE_STREAM_ACK_SIZE - s->ack_got
                              : want_req ? TRACE_STREAM_REQUEST_SIZE - s->req_got : sizeof junk;
        ssize_t n = recv(s->sock, dst, len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            report_send_error(n == 0 ? EPIPE : errno);
            return 1;
        }
        if (want_ack && (s->ack_got += (unsigned)n) == TRACE_STREAM_ACK_SIZE)
            ack_check(s);
        if (want_req && (s->req_got += (unsigned)n) == TRACE_STREAM_REQUEST_SIZE)
            request_check(s);
    }
    return 0;
}

/*
 * Sleep up to ms, waking early when the server sends something: the codec
 * ack, or the end of the connection.  0, or -1 when the connection is gone
 * and may not be retried.
 */
static int idle_wait(struct sender *s, int ms)
{
    if (s->sock < 0) {
        sleep_ms(ms);
        return 0;
    }
    struct pollfd p = {s->sock, POLLIN, 0};
    int rc = poll(&p, 1, ms);
    if (rc <= 0)
        return 0; /* timeout, or a signal: the caller looks at its flags */
    return read_server(s) ? sender_lost(s) : 0;
}

static int maybe_reconnect(struct sender *s, const trace_shm_header_t *h);
struct merger;
static void merge_new_connection(struct merger *m);

/*
 * A tracer has been here once its `writers` increment is visible (acquire:
 * it wrote the header's lower half before), or once head moved: a tracer
 * can come and go between two looks.  1 when attached, 0 when stopped by a
 * signal first, -1 when the server went away for good.
 */
static int wait_for_tracer(struct ring *r, struct sender *s, int quiet)
{
    trace_shm_header_t *h = r->hdr;
    uint64_t head0 = atomic_load_explicit(a64(&h->head), memory_order_acquire);
    if (head0 != r->tail)
        return 1;
    if (!quiet)
        fprintf(stderr, "trace_stream: waiting for a tracer on %s\n", r->name);
    for (;;) {
        if (atomic_load_explicit(a32(&h->writers), memory_order_acquire) > 0)
            return 1;
        if (atomic_load_explicit(a64(&h->head), memory_order_acquire) != head0)
            return 1;
        if (stop_requested)
            return 0;
        if (maybe_reconnect(s, NULL) || idle_wait(s, 5))
            return -1;
    }
}

static int send_handshake(struct sender *s, const trace_shm_header_t *h)
{
    unsigned char hs[TRACE_STREAM_HANDSHAKE_SIZE] = {0};
    memcpy(hs + offsetof(trace_stream_handshake_t, magic), TRACE_STREAM_MAGIC, 8);
    put_le32(hs + offsetof(trace_stream_handshake_t, version), TRACE_STREAM_VERSION);
    put_le32(hs + offsetof(trace_stream_handshake_t, event_size), TRACE_EVENT_SIZE);
    uint32_t flags = h->flags & ~(TRACE_FLAG_BIGENDIAN | TRACE_STREAM_FLAG_CODEC_OFFER | TRACE_STREAM_FLAG_SUMMARY_OFFER |
                                  TRACE_STREAM_FLAG_REQUEST_OFFER | TRACE_STREAM_FLAG_RESUME_KEY);
    /* A new connection: whether it may carry coded chunks and summary
     * snapshots is asked afresh. */
    s->offered = s->codec != NULL;
    s->acked = s->sum_ok = s->sum_inc = s->req_ok = 0;
    s->ack_got = s->req_got = 0;
    if (s->merge)
        merge_new_connection(s->merge);
    s->hello_ms = now_ms();
    flags |= TRACE_STREAM_FLAG_SUMMARY_OFFER | (s->offered ? TRACE_STREAM_FLAG_CODEC_OFFER : 0) |
             (s->o->recorder ? TRACE_STREAM_FLAG_REQUEST_OFFER : 0) | (s->keyed ? TRACE_STREAM_FLAG_RESUME_KEY : 0);
    put_le32(hs + offsetof(trace_stream_handshake_t, flags), flags);
    put_le64(hs + offsetof(trace_stream_handshake_t, load_bias), h->load_bias);
    put_le64(hs + offsetof(trace_stream_handshake_t, tick_hz), h->tick_hz);
    put_le64(hs + offsetof(trace_stream_handshake_t, t0_ticks), h->t0_ticks);
    put_le64(hs + offsetof(trace_stream_handshake_t, t0_ns), h->t0_ns);
    put_le64(hs + offsetof(trace_stream_handshake_t, hook_ns), h->hook_ns);
    return send_all(s, hs, sizeof hs);
}

/* ---- the codec ----------------------------------------------------------
 * TRACE_CHUNK_EVENTS_CODED, as trace_shm.h specifies it: per thread, a
 * timestamp delta and a shadow call stack predicting func and call_site,
 * then byte planes.  (callsight serve decodes it with src/serve/stream_codec.c;
 * its tests check the two agree on every bit.)  Speed: the planes are
 * written in tiles of CODEC_TILE records, each tile one 64-bit field at a
 * time as 8x8 byte transpositions, so 8 write streams are live rather than
 * 32 that, for a 1 MiB chunk, would all fall into one cache set.
 */
#define CODEC_SLOTS TRACE_CODEC_THREAD_SLOTS
#define CODEC_DEPTH TRACE_CODEC_STACK_DEPTH
#define CODEC_TILE 256u
_Static_assert(CODEC_DEPTH <= 64, "one valid bit per stack entry in a u64");

struct codec_slot {
    uint32_t gen;   /* the chunk this state belongs to; any other: empty */
    uint32_t tid;
    uint32_t depth; /* modulo 2^32, as the format says */
    uint64_t ts, enter_func;
    uint64_t valid; /* bit k: stack entry k written since the reset; else it reads as 0 */
    uint64_t func[CODEC_DEPTH], site[CODEC_DEPTH];
};

struct codec {
    uint32_t gen; /* this chunk's generation; 0 is never one */
    struct codec_slot slot[CODEC_SLOTS];
    uint64_t w[CODEC_TILE][4]; /* one tile's coded records: ts, func, call_site, the rest */
};

/* Byte by byte so they mean the same on any host; compilers make each one load or store. */
static inline uint64_t codec_load(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline void codec_store(unsigned char *p, uint64_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    p[4] = (unsigned char)(v >> 32);
    p[5] = (unsigned char)(v >> 40);
    p[6] = (unsigned char)(v >> 48);
    p[7] = (unsigned char)(v >> 56);
}

static inline struct codec_slot *codec_slot_of(struct codec *c, uint32_t tid)
{
    struct codec_slot *s = &c->slot[tid & (CODEC_SLOTS - 1)];
    if (s->gen != c->gen || s->tid != tid) {
        s->gen = c->gen;
        s->tid = tid;
        s->depth = 0;
        s->ts = 0;
        s->enter_func = 0;
        s->valid = 0;
    }
    return s;
}

/* One record's words (ts, func, call_site, tid | kind << 32 | pad << 40), in place. */
static inline void codec_record(struct codec *c, uint64_t w[4])
{
    struct codec_slot *s = codec_slot_of(c, (uint32_t)w[3]);
    unsigned kind = (unsigned)(w[3] >> 32) & 0xffu;
    uint32_t k = (s->depth - 1u) & (CODEC_DEPTH - 1); /* the top */
    uint64_t keep = 0 - ((s->valid >> k) & 1u);
    uint64_t ts = w[0];
    w[0] = ts - s->ts;
    s->ts = ts;
    if (kind == TRACE_KIND_ENTER) {
        uint64_t func = w[1], site = w[2];
        w[1] = func ^ s->enter_func;
        w[2] = site - (s->func[k] & keep);
        k = s->depth & (CODEC_DEPTH - 1);
        s->func[k] = func;
        s->site[k] = site;
        s->valid |= (uint64_t)1 << k;
        s->depth++;
        s->enter_func = func;
    } else if (kind == TRACE_KIND_EXIT) {
        w[1] ^= s->func[k] & keep;
        w[2] ^= s->site[k] & keep;
        s->depth--;
    }
}

/* The transposition's exchange: bits of x under mask << shift trade places with y's under mask. */
#define CODEC_SWAP(x, y, shift, mask)                                                                  \
    do {                                                                                               \
        uint64_t t_ = (((x) >> (shift)) ^ (y)) & (mask);                                               \
        (x) ^= t_ << (shift);                                                                          \
        (y) ^= t_;                                                                                     \
    } while (0)

/* 8 consecutive records' field j (coded) to planes 8j .. 8j+7 at record i: an
 * 8x8 byte transposition (4x4, 2x2, 1x1 block swaps) on locals, so it stays
 * in registers. */
static inline void codec_block(uint64_t (*w)[4], unsigned j, unsigned char *o, size_t n)
{
    uint64_t a0 = w[0][j], a1 = w[1][j], a2 = w[2][j], a3 = w[3][j];
    uint64_t a4 = w[4][j], a5 = w[5][j], a6 = w[6][j], a7 = w[7][j];
    const uint64_t m32 = 0x00000000ffffffffu, m16 = 0x0000ffff0000ffffu, m8 = 0x00ff00ff00ff00ffu;
    CODEC_SWAP(a0, a4, 32, m32);
    CODEC_SWAP(a1, a5, 32, m32);
    CODEC_SWAP(a2, a6, 32, m32);
    CODEC_SWAP(a3, a7, 32, m32);
    CODEC_SWAP(a0, a2, 16, m16);
    CODEC_SWAP(a1, a3, 16, m16);
    CODEC_SWAP(a4, a6, 16, m16);
    CODEC_SWAP(a5, a7, 16, m16);
    CODEC_SWAP(a0, a1, 8, m8);
    CODEC_SWAP(a2, a3, 8, m8);
    CODEC_SWAP(a4, a5, 8, m8);
    CODEC_SWAP(a6, a7, 8, m8);
    codec_store(o, a0);
    codec_store(o + n, a1);
    codec_store(o + 2 * n, a2);
    codec_store(o + 3 * n, a3);
    codec_store(o + 4 * n, a4);
    codec_store(o + 5 * n, a5);
    codec_store(o + 6 * n, a6);
    codec_store(o + 7 * n, a7);
}

static void codec_load_record(const unsigned char *p, uint64_t w[4])
{
    for (unsigned j = 0; j < 4; j++)
        w[j] = codec_load(p + 8 * j);
}

/* Code n little-endian records from in into out (n * 32 bytes each). */
static void codec_encode(struct codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    size_t full = n - n % 8, i;
    if (++c->gen == 0) { /* a new chunk: every slot is stale */
        for (unsigned k = 0; k < CODEC_SLOTS; k++)
            c->slot[k].gen = 0;
        c->gen = 1;
    }
    for (i = 0; i < full; i += CODEC_TILE) {
        size_t m = full - i < CODEC_TILE ? full - i : CODEC_TILE;
        for (size_t t = 0; t < m; t++) {
            codec_load_record(in + (i + t) * TRACE_EVENT_SIZE, c->w[t]);
            codec_record(c, c->w[t]);
        }
        for (unsigned j = 0; j < 4; j++)
            for (size_t t = 0; t < m; t += 8)
                codec_block(c->w + t, j, out + 8 * j * n + i + t, n);
    }
    for (i = full; i < n; i++) { /* the last n % 8 records, byte by byte */
        uint64_t w[4];
        codec_load_record(in + i * TRACE_EVENT_SIZE, w);
        codec_record(c, w);
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            out[k * n + i] = (unsigned char)(w[k / 8] >> (8 * (k % 8)));
    }
}

/* ---- zstd frames ----------------------------------------------------------
 * One frame per chunk: compressed by libzstd, or, built with
 * -DTRACE_STREAM_NO_LIBZSTD, stored in raw blocks (RFC 8878 section 3.1):
 *
 *   magic 28 B5 2F FD | descriptor A0: single segment, 4-byte content size |
 *   content size (LE32) | blocks: 3-byte LE header (bit 0 last, bits 1-2
 *   type 0 = raw, bits 3-23 size <= 128 KiB) then the bytes as they are
 *
 * No checksum and no dictionary.  A single-segment frame's window is its
 * content size, so a decoder needs no more memory than the chunk itself.
 */
#ifndef TRACE_STREAM_NO_LIBZSTD
static int frame_init(struct sender *s)
{
    s->cctx = ZSTD_createCCtx();
    return s->cctx ? 0 : -1;
}

static void frame_free(struct sender *s) { ZSTD_freeCCtx(s->cctx); }

static size_t frame_bound(size_t len) { return ZSTD_compressBound(len); }

/* The frame's length in dst, 0 on failure (reported). */
static size_t frame_make(struct sender *s, unsigned char *dst, size_t cap, const void *src, size_t len)
{
    size_t z = ZSTD_compressCCtx(s->cctx, dst, cap, src, len, s->level);
    if (ZSTD_isError(z)) {
        fprintf(stderr, "trace_stream: zstd compression failed: %s\n", ZSTD_getErrorName(z));
        return 0;
    }
    return z;
}
#else
#define FRAME_MAGIC 0xFD2FB528u
#define FRAME_DESCRIPTOR 0xA0u /* FCS flag 2 (4 bytes), single segment */
#define FRAME_HEAD 9u          /* magic, descriptor, content size */
#define FRAME_BLOCK_MAX ((size_t)128 * 1024)
#define FRAME_BLOCK_HEAD 3u

static int frame_init(struct sender *s)
{
    (void)s;
    return 0;
}

static void frame_free(struct sender *s) { (void)s; }

/* At least one block, even for no bytes. */
static size_t frame_bound(size_t len)
{
    size_t blocks = len ? (len + FRAME_BLOCK_MAX - 1) / FRAME_BLOCK_MAX : 1;
    return FRAME_HEAD + blocks * FRAME_BLOCK_HEAD + len;
}

static void frame_le(unsigned char *p, uint32_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static size_t frame_make(struct sender *s, unsigned char *dst, size_t cap, const void *src, size_t len)
{
    const unsigned char *in = src;
    size_t at = FRAME_HEAD, done = 0;
    (void)s;
    if (len > UINT32_MAX || frame_bound(len) > cap) {
        fprintf(stderr, "trace_stream: a chunk of %zu bytes does not fit a frame\n", len);
        return 0;
    }
    frame_le(dst, FRAME_MAGIC, 4);
    dst[4] = FRAME_DESCRIPTOR;
    frame_le(dst + 5, (uint32_t)len, 4);
    do {
        size_t n = len - done < FRAME_BLOCK_MAX ? len - done : FRAME_BLOCK_MAX;
        uint32_t last = done + n == len;
        frame_le(dst + at, (uint32_t)n << 3 | 0u << 1 | last, FRAME_BLOCK_HEAD);
        if (n)
            memcpy(dst + at + FRAME_BLOCK_HEAD, in + done, n);
        at += FRAME_BLOCK_HEAD + n;
        done += n;
    } while (done < len);
    return at;
}
#endif

/*
 * Compress `len` bytes of payload into one frame and send it as a chunk.
 * 0 sent, 1 the connection is lost (reported; the caller decides), -1 a
 * compression failure.
 */
static int send_chunk(struct sender *s, uint32_t type, const void *payload, size_t len)
{
    unsigned char *frame = s->wire + TRACE_STREAM_CHUNK_HEADER_SIZE;
    size_t z = frame_make(s, frame, s->wire_cap - TRACE_STREAM_CHUNK_HEADER_SIZE, payload, len);
    if (z == 0)
        return -1;
    put_le32(s->wire + offsetof(trace_stream_chunk_header_t, type), type);
    put_le32(s->wire + offsetof(trace_stream_chunk_header_t, raw_len), (uint32_t)len);
    put_le32(s->wire + offsetof(trace_stream_chunk_header_t, zstd_len), (uint32_t)z);
    return send_all(s, s->wire, TRACE_STREAM_CHUNK_HEADER_SIZE + z) ? 1 : 0;
}

/* A small chunk (notice, resume, tracer lost): 0 sent or lost-and-retrying, -1 fatal. */
static int send_small(struct sender *s, uint32_t type, const void *payload, size_t len)
{
    if (s->sock < 0)
        return 0;
    int rc = send_chunk(s, type, payload, len);
    if (rc == 1)
        return sender_lost(s);
    return rc;
}

static int send_notice_if_changed(struct sender *s, trace_shm_header_t *h)
{
    uint64_t dropped = atomic_load_explicit(a64(&h->dropped), memory_order_relaxed) + s->sum_dropped;
    if (s->sock < 0 || (dropped == s->dropped_sent && !(s->notice_due && dropped)))
        return 0;
    unsigned char payload[8];
    put_le64(payload, dropped);
    s->notice_due = 0;
    if (send_small(s, TRACE_CHUNK_NOTICE, payload, sizeof payload))
        return -1;
    if (s->sock >= 0)
        s->dropped_sent = dropped;
    return 0;
}

/*
 * Handshake, then who we are and what we did before this connection
 * (TRACE_CHUNK_RESUME), on every connection: the first one tells the server
 * the stream's identity, later ones let it count exactly what went missing.
 */
static int send_resume(struct sender *s)
{
    unsigned char p[TRACE_STREAM_RESUME_SIZE] = {0};
    put_le64(p + offsetof(trace_stream_resume_t, stream_id), s->stream_id);
    put_le64(p + offsetof(trace_stream_resume_t, start_ns), s->start_ns);
    put_le32(p + offsetof(trace_stream_resume_t, conn_seq), s->conn_seq);
    put_le64(p + offsetof(trace_stream_resume_t, sent), s->sent_before);
    put_le64(p + offsetof(trace_stream_resume_t, discarded), s->discarded_before);
    return send_small(s, TRACE_CHUNK_RESUME, p, sizeof p);
}

/* The handshake offered the key: it follows the connection's first resume
 * notice at once (the server reads it as the second chunk), and only that
 * one: heartbeats repeat the notice, never the key. */
static int send_hello(struct sender *s, const trace_shm_header_t *h)
{
    if (send_handshake(s, h))
        return sender_lost(s);
    s->conn_seq++;
    s->sent_before = s->events;
    s->discarded_before = s->discarded;
    s->notice_due = s->conn_seq > 1;
    if (send_resume(s))
        return -1;
    if (!s->keyed || s->sock < 0)
        return 0;
    return send_small(s, TRACE_CHUNK_RESUME_KEY, s->key, sizeof s->key);
}

/* A quiet stream repeats its resume notice (servers ignore it after the first). */
static int heartbeat(struct sender *s)
{
    if (s->sock < 0 || now_ms() - s->last_send < (uint64_t)s->o->heartbeat_s * 1000u)
        return 0;
    return send_resume(s);
}

/*
 * While disconnected: try again when the backoff has passed.  With h, a new
 * connection gets its handshake at once; without (no tracer yet, so no
 * calibration to send) the caller sends it later.  0 (connected or not
 * yet), -1 when --retry has run out.
 */
static int maybe_reconnect(struct sender *s, const trace_shm_header_t *h)
{
    if (s->sock >= 0)
        return 0;
    uint64_t t = now_ms();
    if (t - s->down_since >= (uint64_t)s->o->retry_s * 1000u) {
        s->gave_up = 1; /* the caller's end says what it cost */
        return -1;
    }
    if (t < s->next_try)
        return 0;
    s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
    s->next_try = t + (uint64_t)s->backoff_ms;
    int sock = net_connect(s->o->host, s->o->port, 1);
    if (sock < 0)
        return 0;
    uint64_t dropped = outage_drops(s); /* while still down: this outage's drops count */
    s->outage_dropped = dropped;
    s->sock = sock;
    int again = s->ever_up;
    s->ever_up = 1;
    if (h && send_hello(s, h))
        return -1;
    if (s->sock >= 0)
        fprintf(stderr, "trace_stream: %sconnected to %s:%s (connection %" PRIu32 "); lost to the link so far: %"
                        PRIu64 " events discarded, %" PRIu64 " dropped by the tracers while disconnected\n",
                again ? "re" : "", s->o->host, s->o->port, (uint32_t)(s->conn_seq + (h ? 0u : 1u)), s->discarded,
                dropped);
    return 0;
}

/* ---- summaries, merged per process --------------------------------------
 *
 * The wire's budget.  A thread's summary snapshot (trace.h) holds every
 * function it called, with its histogram: the demo's 26 busy threads send
 * about 57 KB/s at one snapshot a second each, where a device's link has a
 * few.  So, unless --summary-threads, the client merges: it takes every
 * thread's snapshots off the ring, keeps each thread's last whole one, and
 * adds what a new one gained to its process's merged table; every
 * --summary-ms it sends, for each process that gained anything, one
 * snapshot of that table under the tid TRACE_SUMMARY_MERGED_TID | pid,
 * named "N threads".  That is an ordinary cumulative snapshot, so serve and
 * analyze need nothing new, a lost one still costs resolution only, and the
 * merged table only grows, as a reader checks.  A thread's snapshot that
 * does not hold its last one (a count went down) is damaged and skipped,
 * as the analyzer would skip it.  Only threads announced by a PROCESS
 * marker (each thread's first flush) are merged, from their start, so no
 * thread is ever half merged and half sent as it is; the merge runs on
 * every take, connected or not, so a cut loses events but no merged count.
 * To a server that acks TRACE_ACK_SUMMARY_INCREMENTS the merged snapshot
 * goes as increments (trace_shm.h), only what changed since it was last
 * sent on this connection.
 *
 * Bounded: at most MERGE_MAX_THREADS live threads and MERGE_MAX_PROCS
 * processes are merged (the snapshots of any more go out as they are, and
 * the analyzer adds them alongside), and what is held stays under
 * MERGE_MAX_HELD: the calls of a function that finds no room, or of a
 * thread whose snapshot no longer fits, are counted in the merged
 * snapshot's "beyond the table" count, so they are reported, never lost
 * in silence.  A process that exited is reclaimed once its last merged
 * snapshot went and a table is full.  Nothing read from the ring is
 * trusted: counts saturate.
 */
#define MERGE_MAX_THREADS 4096u
#define MERGE_MAX_PROCS 64u
#define MERGE_MAX_HELD ((size_t)64 << 20)
#define MERGE_SNAP_FUNCS 65536u      /* in one thread's snapshot */
#define MERGE_SNAP_BUCKETS (1u << 20)
#define MERGE_NO_SLOT UINT32_MAX

struct mfn {       /* a function in a thread's snapshot */
    uint64_t addr, calls, incl, self, min, max;
    uint32_t b0, nb;   /* its buckets: b[b0 .. b0 + nb) */
    uint32_t slot;     /* its place in the process's merged table */
};

struct mbucket {
    uint32_t index;
    uint64_t count;
};

struct msnap {
    struct mfn *fn;
    struct mbucket *b;
    uint32_t nfn, capfn, nb, capb;
    uint64_t seq, said, calls; /* calls: of all its functions */
    uint64_t over, deep, unmatched, tracer, end_ts;
    int have_times;
};

struct mthread {
    uint32_t tid, proc;  /* proc: index in merger.p */
    int reading;         /* between a BEGIN and its END */
    int have_last;
    int spilled;         /* no room: only its calls are counted now */
    struct msnap pend, last;
};

struct mtotal {    /* a function of a process, all its threads' calls */
    uint64_t addr, calls, incl, self, min, max;
    uint64_t *hist;    /* TRACE_SUMMARY_NBUCKETS counts */
    uint64_t sent_calls, sent_incl, sent_self; /* as last sent on this connection */
    uint64_t *sent;    /* ... and its histogram (increments only; NULL until then) */
};

struct mproc {
    uint32_t pid, threads; /* threads: ever merged into it */
    struct mtotal *fn;
    uint32_t nfn, capfn;
    uint64_t over, deep, unmatched, tracer, end_ts, seq;
    int dirty;         /* gained since its last merged snapshot went */
    int exited;        /* a thread's snapshot came from the process's exit (trace.h) */
    int used;          /* the slot holds a process (a free one is reused) */
};

struct merger {
    struct mthread *t;
    uint32_t nt, capt, last_hit;
    struct mproc p[MERGE_MAX_PROCS];
    uint32_t np;
    size_t held;
    uint64_t next_ms;  /* when merged snapshots go next */
    uint64_t merged, damaged, sent; /* thread snapshots merged, skipped; merged ones sent */
    int seen;          /* summary records came: this is a summary stream */
    uint64_t inc_sent; /* increment records sent (not among the stream's records) */
    unsigned char *out; /* CHUNK_RAW bytes of merged records being built */
    size_t out_len;
    unsigned char *inc; /* CHUNK_RAW bytes of increments being built (NULL until needed) */
    size_t inc_len;
};

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Untrusted counts from the ring: saturate, so that totals only grow. */
static uint64_t merge_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Does the budget have room for `more` bytes? */
static int merge_budget(const struct merger *m, size_t more)
{
    return m->held <= MERGE_MAX_HELD && more <= MERGE_MAX_HELD - m->held;
}

/* Room for one more of n items of `size` in *v, on the budget: 0 or -1. */
static int merge_room(struct merger *m, void **v, uint32_t *cap, uint32_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : 32;
    size_t more = (size_t)(c - *cap) * size;
    if (!merge_budget(m, more))
        return -1;
    void *p = realloc(*v, (size_t)c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    m->held += more;
    return 0;
}

static void msnap_free(struct merger *m, struct msnap *s)
{
    m->held -= (size_t)s->capfn * sizeof *s->fn + (size_t)s->capb * sizeof *s->b;
    free(s->fn);
    free(s->b);
    memset(s, 0, sizeof *s);
}

static void msnap_clear(struct msnap *s)
{
    s->nfn = s->nb = 0;
    s->seq = s->said = s->calls = 0;
    s->over = s->deep = s->unmatched = s->tracer = s->end_ts = 0;
    s->have_times = 0;
}

static void merge_forget(struct merger *m, uint32_t tid);

/* Free the processes that exited and whose last merged snapshot went, and
 * their threads (those killed at the exit never said so): done only when
 * a table is full, since a process's other threads may still write a
 * snapshot while its exit handlers run. */
static void merge_reclaim(struct merger *m)
{
    for (uint32_t i = 0; i < m->np; i++) {
        struct mproc *p = &m->p[i];
        if (!p->used || !p->exited || p->dirty)
            continue;
        for (uint32_t k = 0; k < m->nt;)
            if (m->t[k].proc == i)
                merge_forget(m, m->t[k].tid); /* moves the last thread into k */
            else
                k++;
        for (uint32_t k = 0; k < p->nfn; k++) {
            m->held -= TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t) * (p->fn[k].sent ? 2 : 1);
            free(p->fn[k].hist);
            free(p->fn[k].sent);
        }
        m->held -= (size_t)p->capfn * sizeof *p->fn;
        free(p->fn);
        memset(p, 0, sizeof *p);
    }
}

/* The live process of pid, added on first sight (a pid whose process
 * exited is a new one); MERGE_MAX_PROCS when there is no slot. */
static uint32_t merge_proc(struct merger *m, uint32_t pid)
{
    for (uint32_t i = 0; i < m->np; i++)
        if (m->p[i].used && m->p[i].pid == pid && !m->p[i].exited)
            return i;
    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < MERGE_MAX_PROCS; i++) {
            if (i < m->np && m->p[i].used)
                continue;
            memset(&m->p[i], 0, sizeof m->p[i]);
            m->p[i].pid = pid;
            m->p[i].used = 1;
            m->np = i >= m->np ? i + 1 : m->np;
            return i;
        }
        merge_reclaim(m);
    }
    return MERGE_MAX_PROCS;
}

/* The thread of tid; with add, added (in process pid) if there is room. */
static struct mthread *merge_thread(struct merger *m, uint32_t tid, int add, uint32_t pid)
{
    if (m->last_hit < m->nt && m->t[m->last_hit].tid == tid)
        return &m->t[m->last_hit];
    for (uint32_t i = 0; i < m->nt; i++)
        if (m->t[i].tid == tid)
            return &m->t[m->last_hit = i];
    if (!add || (tid & TRACE_SUMMARY_MERGED_TID))
        return NULL;
    if (m->nt == MERGE_MAX_THREADS)
        merge_reclaim(m);
    uint32_t proc = m->nt < MERGE_MAX_THREADS ? merge_proc(m, pid) : MERGE_MAX_PROCS;
    if (proc == MERGE_MAX_PROCS || merge_room(m, (void **)&m->t, &m->capt, m->nt, sizeof *m->t) < 0)
        return NULL;
    struct mthread *t = &m->t[m->nt];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->proc = proc;
    m->last_hit = m->nt++;
    return t;
}

/* The thread is gone (its exit): its calls stay in its process's table. */
static void merge_forget(struct merger *m, uint32_t tid)
{
    struct mthread *t = merge_thread(m, tid, 0, 0);
    if (!t)
        return;
    msnap_free(m, &t->pend);
    msnap_free(m, &t->last);
    *t = m->t[--m->nt];
    m->last_hit = 0;
}

/* No room for the thread's snapshots: from now on only its totals count. */
static void merge_spill(struct merger *m, struct mthread *t)
{
    struct msnap pend = t->pend, last = t->last;
    msnap_free(m, &t->pend);
    msnap_free(m, &t->last);
    pend.fn = last.fn = NULL;
    pend.b = last.b = NULL;
    pend.capfn = pend.capb = last.capfn = last.capb = 0;
    pend.nb = last.nb = last.nfn = 0; /* pend.nfn still counts its FUNC parts */
    t->pend = pend;
    t->last = last;
    t->spilled = 1;
}

/* The function's place in the process's table, added when new; MERGE_NO_SLOT
 * when there is no room. */
static uint32_t merge_slot(struct merger *m, struct mproc *p, uint64_t addr)
{
    for (uint32_t i = 0; i < p->nfn; i++)
        if (p->fn[i].addr == addr)
            return i;
    uint64_t *hist = NULL;
    size_t hist_bytes = TRACE_SUMMARY_NBUCKETS * sizeof *hist;
    size_t grow = p->nfn < p->capfn ? 0 : (size_t)(p->capfn ? p->capfn : 32) * sizeof *p->fn;
    if (grow > MERGE_MAX_HELD || !merge_budget(m, hist_bytes + grow) ||
        !(hist = calloc(TRACE_SUMMARY_NBUCKETS, sizeof *hist)))
        return MERGE_NO_SLOT;
    if (merge_room(m, (void **)&p->fn, &p->capfn, p->nfn, sizeof *p->fn) < 0) {
        free(hist);
        return MERGE_NO_SLOT;
    }
    m->held += hist_bytes;
    p->fn[p->nfn] = (struct mtotal){addr, 0, 0, 0, UINT64_MAX, 0, hist, 0, 0, 0, NULL};
    return p->nfn++;
}

/* One part of a thread's snapshot: 0 taken, 1 damaged. */
static int merge_part(struct merger *m, struct mthread *t, unsigned part, uint64_t ts, uint64_t func,
                      uint64_t site)
{
    struct msnap *s = &t->pend;
    if (part == TRACE_SUMMARY_FUNC) {
        if (s->nfn >= s->said || s->nfn >= MERGE_SNAP_FUNCS || (s->nfn && !s->have_times))
            return 1;
        s->calls = merge_sat(s->calls, site);
        s->have_times = 0;
        if (t->spilled || merge_room(m, (void **)&s->fn, &s->capfn, s->nfn, sizeof *s->fn) < 0) {
            if (!t->spilled)
                merge_spill(m, t);
            s->nfn++;
            return 0;
        }
        s->fn[s->nfn++] = (struct mfn){func, site, ts, 0, 0, 0, s->nb, 0, MERGE_NO_SLOT};
        return 0;
    }
    if (part == TRACE_SUMMARY_TIMES) {
        if (!s->nfn || s->have_times)
            return 1;
        s->have_times = 1;
        if (!t->spilled)
            s->fn[s->nfn - 1].self = ts, s->fn[s->nfn - 1].min = func, s->fn[s->nfn - 1].max = site;
        return 0;
    }
    if (part == TRACE_SUMMARY_BUCKETS) {
        if (!s->nfn || !s->have_times)
            return 1;
        uint64_t idx[2] = {site >> 32, site & 0xffffffffu}, n[2] = {ts, func};
        for (int k = 0; k < 2 && !t->spilled; k++) {
            if (k == 1 && idx[1] == TRACE_SUMMARY_NO_BUCKET)
                break;
            struct mfn *f = &s->fn[s->nfn - 1];
            if (idx[k] >= TRACE_SUMMARY_NBUCKETS || s->nb >= MERGE_SNAP_BUCKETS ||
                (f->nb && s->b[s->nb - 1].index >= idx[k]))
                return 1;
            if (!n[k])
                continue;
            if (merge_room(m, (void **)&s->b, &s->capb, s->nb, sizeof *s->b) < 0) {
                merge_spill(m, t);
                break;
            }
            s->b[s->nb++] = (struct mbucket){(uint32_t)idx[k], n[k]};
            f->nb++;
        }
        return 0;
    }
    if (part == TRACE_SUMMARY_META) {
        s->over = ts, s->deep = func, s->unmatched = site;
        return 0;
    }
    return 1;
}

/* Does the new snapshot hold all of the last one, function by function
 * (the device's table only grows, in order) and bucket by bucket? */
static int merge_holds(const struct msnap *l, const struct msnap *e)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < l->nfn && j < e->nfn; i++) {
        const struct mfn *a = &l->fn[i], *b = &e->fn[j];
        if (a->addr != b->addr)
            continue;
        if (a->calls < b->calls || a->incl < b->incl || a->self < b->self || a->min > b->min || a->max < b->max)
            return 0;
        for (uint32_t x = 0, y = 0; y < b->nb; y++) {
            while (x < a->nb && l->b[a->b0 + x].index < e->b[b->b0 + y].index)
                x++;
            if (x == a->nb || l->b[a->b0 + x].index != e->b[b->b0 + y].index ||
                l->b[a->b0 + x].count < e->b[b->b0 + y].count)
                return 0;
        }
        j++;
    }
    return j == e->nfn;
}

/* One function's gain since the last snapshot, into its process's table. */
static void merge_add_fn(struct merger *m, struct mproc *p, const struct msnap *s, struct mfn *f,
                         const struct msnap *e, const struct mfn *was)
{
    f->slot = was ? was->slot : merge_slot(m, p, f->addr);
    uint64_t calls = f->calls - (was ? was->calls : 0);
    if (f->slot == MERGE_NO_SLOT) {
        p->over = merge_sat(p->over, calls);
        return;
    }
    struct mtotal *d = &p->fn[f->slot];
    d->calls = merge_sat(d->calls, calls);
    d->incl = merge_sat(d->incl, f->incl - (was ? was->incl : 0));
    d->self = merge_sat(d->self, f->self - (was ? was->self : 0));
    d->min = f->min < d->min ? f->min : d->min;
    d->max = f->max > d->max ? f->max : d->max;
    for (uint32_t k = 0, y = 0; k < f->nb; k++) {
        const struct mbucket *b = &s->b[f->b0 + k];
        uint64_t before = 0;
        while (was && y < was->nb && e->b[was->b0 + y].index < b->index)
            y++;
        if (was && y < was->nb && e->b[was->b0 + y].index == b->index)
            before = e->b[was->b0 + y].count;
        d->hist[b->index] = merge_sat(d->hist[b->index], b->count - before);
    }
}

/* END of a thread's snapshot: what it gained goes into its process's table. */
static int merge_finish(struct merger *m, struct mthread *t, uint64_t ts, uint64_t seq, uint64_t tracer,
                        unsigned ends)
{
    struct msnap *s = &t->pend, *e = &t->last;
    struct mproc *p = &m->p[t->proc];
    if (seq != s->seq || s->nfn != s->said || (s->nfn && !s->have_times))
        return 1;
    if (t->have_last && s->seq == 1)
        t->have_last = 0; /* a new table under the same tid (exec) */
    int have = t->have_last;
    if (have && (s->seq <= e->seq || s->calls < e->calls || s->over < e->over || s->deep < e->deep ||
                 s->unmatched < e->unmatched || tracer < e->tracer || (!t->spilled && !merge_holds(s, e))))
        return 1;
    if (!have && !t->spilled)
        p->threads++;
    if (t->spilled) {
        p->over = merge_sat(p->over, s->calls - (have ? e->calls : 0));
    } else {
        for (uint32_t i = 0, j = 0; i < s->nfn; i++) {
            const struct mfn *was = have && j < e->nfn && e->fn[j].addr == s->fn[i].addr ? &e->fn[j++] : NULL;
            merge_add_fn(m, p, s, &s->fn[i], e, was);
        }
    }
    p->over = merge_sat(p->over, s->over - (have ? e->over : 0));
    p->deep = merge_sat(p->deep, s->deep - (have ? e->deep : 0));
    p->unmatched = merge_sat(p->unmatched, s->unmatched - (have ? e->unmatched : 0));
    p->tracer = merge_sat(p->tracer, tracer - (have ? e->tracer : 0));
    p->end_ts = ts > p->end_ts ? ts : p->end_ts;
    p->dirty = 1;
    p->exited |= ends == (TRACE_SUMMARY_ENDS | TRACE_SUMMARY_PROCESS_EXIT);
    s->tracer = tracer;
    s->end_ts = ts;
    struct msnap x = *e;
    *e = *s;
    *s = x;
    msnap_clear(s);
    t->have_last = 1;
    m->merged++;
    return 0;
}

/* A summary record of a thread being merged. */
static void merge_record(struct merger *m, struct mthread *t, const unsigned char *r)
{
    uint64_t ts = get_le64(r), func = get_le64(r + 8), site = get_le64(r + 16);
    unsigned part = r[offsetof(trace_event_t, pad)];
    if (part == TRACE_SUMMARY_BEGIN) {
        m->damaged += (uint64_t)t->reading; /* the one before never ended */
        msnap_clear(&t->pend);
        t->pend.seq = func;
        t->pend.said = site;
        t->reading = 1;
        return;
    }
    if (!t->reading)
        return;
    unsigned ends = r[offsetof(trace_event_t, pad) + 1];
    int bad = part == TRACE_SUMMARY_END ? merge_finish(m, t, ts, func, site, ends)
                                        : merge_part(m, t, part, ts, func, site);
    if (bad || part == TRACE_SUMMARY_END) {
        m->damaged += (uint64_t)bad;
        t->reading = 0;
        msnap_clear(&t->pend);
    }
}

/*
 * Take the summary records of merged threads out of n bytes of records
 * (little-endian), noting which process each thread is in and which exit;
 * the rest stays, in order.  The new length.
 */
static long merge_take(struct merger *m, unsigned char *raw, long n)
{
    long w = 0;
    for (long off = 0; off < n; off += TRACE_EVENT_SIZE) {
        const unsigned char *r = raw + off;
        unsigned kind = r[offsetof(trace_event_t, kind)];
        if (kind == TRACE_KIND_MARKER || kind == TRACE_KIND_SUMMARY) { /* enter and exit pass untouched */
            uint32_t tid = get_le32(r + offsetof(trace_event_t, tid));
            uint64_t code = get_le64(r + 8), payload = get_le64(r + 16);
            if (kind == TRACE_KIND_MARKER && code == TRACE_MARK_PROCESS && payload <= UINT32_MAX) {
                merge_forget(m, tid); /* a new thread, or one forked: it starts again */
                merge_thread(m, tid, 1, (uint32_t)payload);
            } else if (kind == TRACE_KIND_MARKER && code == TRACE_MARK_THREAD_EXIT) {
                merge_forget(m, tid);
            } else if (kind == TRACE_KIND_SUMMARY) {
                struct mthread *t = merge_thread(m, tid, 0, 0); /* merged from its start, or never */
                if (t) {
                    m->seen = 1;
                    merge_record(m, t, r);
                    continue;
                }
            }
        }
        if (w != off)
            memmove(raw + w, r, TRACE_EVENT_SIZE);
        w += TRACE_EVENT_SIZE;
    }
    return w;
}

/* Which end the merged snapshot is (END's pad[1], trace.h): the process's
 * exit once a thread's snapshot from it came, else periodic. */
static unsigned char merge_end_flag(const struct mproc *p)
{
    return (unsigned char)(TRACE_SUMMARY_ENDS | (p->exited ? TRACE_SUMMARY_PROCESS_EXIT : TRACE_SUMMARY_PERIODIC));
}

/* A merged record into buf at *len (little-endian, as the wire). */
static void merge_put_at(unsigned char *buf, size_t *len, uint32_t tid, unsigned kind, unsigned part, uint64_t ts,
                         uint64_t func, uint64_t site)
{
    unsigned char *r = buf + *len;
    memset(r, 0, TRACE_EVENT_SIZE);
    put_le64(r, ts);
    put_le64(r + 8, func);
    put_le64(r + 16, site);
    put_le32(r + offsetof(trace_event_t, tid), tid);
    r[offsetof(trace_event_t, kind)] = (unsigned char)kind;
    r[offsetof(trace_event_t, pad)] = (unsigned char)part;
    *len += TRACE_EVENT_SIZE;
}

static void merge_put(struct merger *m, uint32_t tid, unsigned kind, unsigned part, uint64_t ts, uint64_t func,
                      uint64_t site)
{
    merge_put_at(m->out, &m->out_len, tid, kind, part, ts, func, site);
}

static int send_records(struct sender *s, unsigned char *raw, long n);

/* A new connection: increments start again from zero (trace_shm.h). */
static void merge_new_connection(struct merger *m)
{
    for (uint32_t i = 0; i < m->np; i++) {
        m->p[i].dirty |= m->p[i].seq > 0; /* what the last connection got may not have arrived */
        for (uint32_t k = 0; k < m->p[i].nfn; k++) {
            struct mtotal *d = &m->p[i].fn[k];
            d->sent_calls = d->sent_incl = d->sent_self = 0;
            if (d->sent)
                memset(d->sent, 0, TRACE_SUMMARY_NBUCKETS * sizeof *d->sent);
        }
    }
}

/* The increments built so far as one chunk, in planes. */
static int merge_inc_flush(struct sender *s, struct merger *m)
{
    size_t n = m->inc_len / TRACE_EVENT_SIZE;
    long held = (long)m->out_len; /* the markers first: they bind the merged tid to its process */
    m->inc_len = m->out_len = 0;
    if (held && send_records(s, m->out, held))
        return -1;
    if (!n || s->sock < 0)
        return 0; /* a cut: the processes are due again, whole, on the next connection */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < TRACE_EVENT_SIZE; k++)
            s->raw[k * n + i] = m->inc[i * TRACE_EVENT_SIZE + k];
    /* Not counted among the stream's records (sent, discarded, resume): a
     * lost increment is superseded, not lost; serve does not count them either. */
    int rc = send_chunk(s, TRACE_CHUNK_SUMMARY_INCREMENTS, s->raw, n * TRACE_EVENT_SIZE);
    if (rc < 0)
        return -1;
    if (rc == 1)
        return sender_lost(s);
    m->inc_sent += n;
    s->chunks++;
    return 0;
}

static int merge_inc(struct sender *s, struct merger *m, uint32_t tid, unsigned part, uint64_t ts, uint64_t func,
                     uint64_t site)
{
    if (m->inc_len + TRACE_EVENT_SIZE > CHUNK_RAW && merge_inc_flush(s, m))
        return -1;
    merge_put_at(m->inc, &m->inc_len, tid, TRACE_KIND_SUMMARY, part, ts, func, site);
    return 0;
}

/* A function's buckets that gained since it was last sent, as increments. */
static int merge_inc_buckets(struct sender *s, struct merger *m, uint32_t tid, struct mtotal *d)
{
    uint32_t held = TRACE_SUMMARY_NO_BUCKET;
    for (uint32_t k = 0; k <= TRACE_SUMMARY_NBUCKETS; k++) {
        int last = k == TRACE_SUMMARY_NBUCKETS;
        if (!last && d->hist[k] == d->sent[k])
            continue;
        if (!last && held == TRACE_SUMMARY_NO_BUCKET) {
            held = k;
            continue;
        }
        if (held == TRACE_SUMMARY_NO_BUCKET)
            break;
        uint64_t a = d->hist[held] - d->sent[held], b = last ? 0 : d->hist[k] - d->sent[k];
        uint64_t pair = (uint64_t)held << 32 | (last ? TRACE_SUMMARY_NO_BUCKET : k);
        if (merge_inc(s, m, tid, TRACE_SUMMARY_BUCKETS, a, b, pair))
            return -1;
        held = TRACE_SUMMARY_NO_BUCKET;
    }
    memcpy(d->sent, d->hist, TRACE_SUMMARY_NBUCKETS * sizeof *d->sent);
    return 0;
}

/* Room to remember what was sent of each function; 0, or -1 (then whole
 * snapshots go instead). */
static int merge_inc_room(struct merger *m, struct mproc *p)
{
    size_t bytes = TRACE_SUMMARY_NBUCKETS * sizeof(uint64_t);
    if (!m->inc && !(m->inc = malloc(CHUNK_RAW)))
        return -1;
    for (uint32_t i = 0; i < p->nfn; i++) {
        struct mtotal *d = &p->fn[i];
        if (d->sent)
            continue;
        if (!merge_budget(m, bytes) || !(d->sent = calloc(TRACE_SUMMARY_NBUCKETS, sizeof *d->sent)))
            return -1;
        m->held += bytes;
    }
    return 0;
}

/* One process's merged table as increments since it was last sent on this
 * connection (TRACE_CHUNK_SUMMARY_INCREMENTS): what changed only.  -1 fatal. */
static int merge_emit_inc(struct sender *s, struct merger *m, struct mproc *p, uint32_t tid, uint64_t seq)
{
    uint64_t listed = 0;
    for (uint32_t i = 0; i < p->nfn; i++)
        listed += p->fn[i].calls != p->fn[i].sent_calls;
    if (merge_inc(s, m, tid, TRACE_SUMMARY_BEGIN, p->end_ts, seq, listed))
        return -1;
    for (uint32_t i = 0; i < p->nfn; i++) {
        struct mtotal *d = &p->fn[i];
        if (d->calls == d->sent_calls)
            continue;
        if (merge_inc(s, m, tid, TRACE_SUMMARY_FUNC, d->incl - d->sent_incl, d->addr, d->calls - d->sent_calls) ||
            merge_inc(s, m, tid, TRACE_SUMMARY_TIMES, d->self - d->sent_self, d->min, d->max) ||
            merge_inc_buckets(s, m, tid, d))
            return -1;
        d->sent_calls = d->calls, d->sent_incl = d->incl, d->sent_self = d->self;
    }
    if (merge_inc(s, m, tid, TRACE_SUMMARY_META, p->over, p->deep, p->unmatched) ||
        merge_inc(s, m, tid, TRACE_SUMMARY_END, p->end_ts, seq, p->tracer))
        return -1;
    m->inc[m->inc_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = merge_end_flag(p);
    return 0;
}

/* "26 threads" as a THREAD_NAME marker's two words (trace.h). */
static void merge_name(uint32_t threads, uint64_t *lo, uint64_t *hi)
{
    char name[16] = {0};
    snprintf(name, sizeof name, "%" PRIu32 " threads", threads);
    *lo = *hi = 0;
    for (int i = 7; i >= 0; i--) {
        *lo = *lo << 8 | (unsigned char)name[i];
        *hi = *hi << 8 | (unsigned char)name[8 + i];
    }
}


/* Room for k more records in m->out, sending what it holds if need be. */
static int merge_out_room(struct sender *s, struct merger *m, size_t k)
{
    if (m->out_len + k * TRACE_EVENT_SIZE <= CHUNK_RAW)
        return 0;
    long n = (long)m->out_len;
    m->out_len = 0;
    return send_records(s, m->out, n);
}

/* One process's merged table as a snapshot (trace.h's parts, in order). */
static int merge_emit_proc(struct sender *s, struct merger *m, struct mproc *p)
{
    uint32_t tid = TRACE_SUMMARY_MERGED_TID | (p->pid & ~TRACE_SUMMARY_MERGED_TID);
    uint64_t lo, hi, ts = p->end_ts, seq = ++p->seq, nfn = 0;
    for (uint32_t i = 0; i < p->nfn; i++)
        nfn += p->fn[i].calls > 0;
    merge_name(p->threads, &lo, &hi);
    if (merge_out_room(s, m, 3))
        return -1;
    if (p->pid)
        merge_put(m, tid, TRACE_KIND_MARKER, 0, ts, TRACE_MARK_PROCESS, p->pid);
    merge_put(m, tid, TRACE_KIND_MARKER, 0, hi, TRACE_MARK_THREAD_NAME, lo);
    if (s->sum_inc && merge_inc_room(m, p) == 0) {
        p->dirty = 0;
        m->sent++;
        return merge_emit_inc(s, m, p, tid, seq);
    }
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_BEGIN, ts, seq, nfn);
    for (uint32_t i = 0; i < p->nfn; i++) {
        const struct mtotal *d = &p->fn[i];
        if (!d->calls)
            continue;
        if (merge_out_room(s, m, 2))
            return -1;
        merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_FUNC, d->incl, d->addr, d->calls);
        merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_TIMES, d->self, d->min, d->max);
        uint32_t held = TRACE_SUMMARY_NO_BUCKET;
        for (uint32_t k = 0; k <= TRACE_SUMMARY_NBUCKETS; k++) {
            if (k < TRACE_SUMMARY_NBUCKETS && !d->hist[k])
                continue;
            if (k < TRACE_SUMMARY_NBUCKETS && held == TRACE_SUMMARY_NO_BUCKET) {
                held = k;
                continue;
            }
            if (held == TRACE_SUMMARY_NO_BUCKET)
                break;
            if (merge_out_room(s, m, 1))
                return -1;
            uint32_t b = k < TRACE_SUMMARY_NBUCKETS ? k : TRACE_SUMMARY_NO_BUCKET;
            merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_BUCKETS, d->hist[held],
                      b == TRACE_SUMMARY_NO_BUCKET ? 0 : d->hist[b], (uint64_t)held << 32 | b);
            held = TRACE_SUMMARY_NO_BUCKET;
        }
    }
    if (merge_out_room(s, m, 2))
        return -1;
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_META, p->over, p->deep, p->unmatched);
    merge_put(m, tid, TRACE_KIND_SUMMARY, TRACE_SUMMARY_END, ts, seq, p->tracer);
    m->out[m->out_len - TRACE_EVENT_SIZE + offsetof(trace_event_t, pad) + 1] = merge_end_flag(p);
    p->dirty = 0;
    m->sent++;
    return 0;
}

/* Every process that gained something since its last merged snapshot:
 * each --summary-ms, and at the end (force).  Only while connected: a
 * process's table is kept, so the next one sent holds it all.  0 or -1. */
static int merge_emit(struct sender *s, struct merger *m, int force)
{
    uint64_t now = now_ms();
    if (s->sock < 0 || (!force && now < m->next_ms && m->out_len < CHUNK_RAW / 2))
        return 0;
    m->next_ms = now + (uint64_t)s->o->summary_ms;
    for (uint32_t i = 0; i < m->np && s->sum_ok; i++)
        if (m->p[i].used && m->p[i].dirty && merge_emit_proc(s, m, &m->p[i]) < 0)
            return -1;
    long n = (long)m->out_len;
    m->out_len = 0;
    int rc = n ? send_records(s, m->out, n) : 0;
    if (rc == 0)
        rc = merge_inc_flush(s, m);
    for (uint32_t i = 0; i < m->np && s->sock < 0; i++)
        m->p[i].dirty |= m->p[i].seq > 0; /* cut on the way: send it all again */
    return rc;
}

/* In a summary stream the ring carries little but markers (each thread's
 * flush says how long it took), in batches of a record or two: sent one
 * chunk each, their headers and frames would cost more than the merged
 * snapshots.  They wait in m->out for the next merged snapshot instead
 * (order per thread kept), at most --summary-ms.  0, or -1 fatal. */
static int merge_hold(struct sender *s, struct merger *m, unsigned char *raw, long n)
{
    if (m->out_len + (size_t)n > CHUNK_RAW / 2) { /* full: what waits goes first, in order */
        long held = (long)m->out_len;
        m->out_len = 0;
        if (send_records(s, m->out, held))
            return -1;
        if ((size_t)n > CHUNK_RAW / 2)
            return send_records(s, raw, n);
    }
    memcpy(m->out + m->out_len, raw, (size_t)n);
    m->out_len += (size_t)n;
    return 0;
}

/* Something is still to be sent: a process that gained (to a server
 * that takes them), or held records. */
static int merge_due(const struct sender *s)
{
    const struct merger *m = s->merge;
    for (uint32_t i = 0; i < m->np && s->sum_ok; i++)
        if (m->p[i].used && m->p[i].dirty)
            return 1;
    return m->out_len > 0;
}

static void merge_free(struct merger *m)
{
    while (m->nt)
        merge_forget(m, m->t[0].tid);
    free(m->t);
    for (uint32_t i = 0; i < m->np; i++) {
        for (uint32_t k = 0; k < m->p[i].nfn; k++) {
            free(m->p[i].fn[k].hist);
            free(m->p[i].fn[k].sent);
        }
        free(m->p[i].fn);
    }
    free(m->out);
    free(m->inc);
    memset(m, 0, sizeof *m);
}

/* n bytes of little-endian records as one chunk, coded once the server
 * acked the codec.  0 sent (or the connection was lost: counted as
 * discarded, reconnecting), -1 fatal. */
static int send_records(struct sender *s, unsigned char *raw, long n)
{
    uint64_t records = (uint64_t)n / TRACE_EVENT_SIZE;
    int rc;
    if (s->sock < 0) {
        s->discarded += records;
        return 0;
    }
    if (s->acked) {
        codec_encode(s->codec, raw, s->coded, (size_t)records);
        rc = send_chunk(s, TRACE_CHUNK_EVENTS_CODED, s->coded, (size_t)n);
        s->coded_chunks += rc == 0;
    } else {
        rc = send_chunk(s, TRACE_CHUNK_EVENTS, raw, (size_t)n);
    }
    if (rc < 0)
        return -1;
    if (rc == 1) {
        s->discarded += records; /* some of it may have left: the server's count decides */
        return sender_lost(s);
    }
    s->events += records;
    s->chunks++;
    return 0;
}

/* The server surely does not take summaries: it said so, or did not
 * answer in time. */
static int sum_refused(const struct sender *s)
{
    return s->sock >= 0 && !s->sum_ok &&
           (s->ack_got >= TRACE_STREAM_ACK_SIZE || now_ms() - s->hello_ms >= TRACE_ACK_WAIT_MS);
}

/*
 * Take one chunk's worth from the ring and send it; 1 if there was nothing.
 * Only while a connection is up: without one the ring keeps what it holds
 * for the next (the tracers drop new events, counted, once it is full),
 * and before each take the socket is read, so that a server that has gone
 * (its end arrived while we were busy or stopped) leaves the chunk in the
 * ring rather than lost in flight.
 */
static int forward_chunk(struct ring *r, struct sender *s)
{
    if (s->sock < 0)
        return 1;
    if (read_server(s))
        return sender_lost(s);
    long n = ring_take(r, s->raw, CHUNK_RAW);
    if (n < 0)
        return -1;
    if (n == 0)
        return 1;
    if (!host_is_little_endian())
        for (long off = 0; off < n; off += TRACE_EVENT_SIZE)
            event_to_le(s->raw + off);
    if (s->merge) { /* even while disconnected: the merged tables outlive a cut */
        long before = n;
        n = merge_take(s->merge, s->raw, n);
        if (sum_refused(s))
            s->sum_dropped += (uint64_t)(before - n) / TRACE_EVENT_SIZE;
    }
    if (!s->sum_ok)
        n = drop_summaries(s, s->raw, n);
    if (n == 0)
        return 0; /* only summary records: none taken by this server, or all merged */
    if (s->merge && s->merge->seen && s->sum_ok)
        return merge_hold(s, s->merge, s->raw, n); /* a summary stream's markers ride with the next snapshot */
    return send_records(s, s->raw, n);
}

/* Version 3: a batch at tail is still being copied (ring_take stopped
 * there), so the ring is not empty yet; its writer commits it or is found
 * gone (batch_abandoned).  Stopping, we wait for it a LIVENESS_MS at most. */
static int ring_pending(const struct ring *r, uint64_t stop_ms)
{
    return r->version == TRACE_SHM_VERSION_COMMIT &&
           atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire) != r->tail &&
           (stop_ms == 0 || now_ms() - stop_ms < LIVENESS_MS);
}

/*
 * Forward until the tracer has detached and the ring is empty, or, after
 * SIGINT/SIGTERM, until what the ring held at that moment is sent, or until
 * the tracers are found dead and what they left is sent.  The tracer
 * publishes its last head before it decrements `writers` (both release), so
 * reading writers == 0 (acquire) and then an empty ring means nothing more
 * comes.
 */
static int drain(struct ring *r, struct sender *s)
{
    int idle_ms = IDLE_MIN_MS, stopping = 0;
    uint64_t stop_at = 0, stop_ms = 0;
    for (;;) {
        if (stop_requested && !stopping) {
            stopping = 1;
            stop_ms = now_ms();
            stop_at = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
        }
        if (stopping && r->tail >= stop_at)
            return 0; /* sent what the ring held when we were asked to stop */
        if (maybe_reconnect(s, r->hdr))
            return -1;
        if (s->sock < 0) { /* the ring keeps it all for the next connection */
            if (stopping)
                return 0; /* the caller says what stays behind */
            if (!r->vanished)
                r->vanished = ring_dead_writers(r);
            sleep_ms(LINK_WAIT_MS);
            continue;
        }
        if (ack_pending(s, r)) { /* whether summaries may go: see TRACE_STREAM_FLAG_SUMMARY_OFFER */
            if (idle_wait(s, 5))
                return -1;
            continue;
        }
        uint32_t writers = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
        if (!r->vanished)
            r->vanished = ring_dead_writers(r);
        int rc = forward_chunk(r, s);
        if (rc < 0 || send_notice_if_changed(s, r->hdr) || (s->merge && merge_emit(s, s->merge, 0)))
            return -1;
        if (rc == 0) {
            idle_ms = IDLE_MIN_MS;
            continue;
        }
        if ((writers == 0 || stopping || r->vanished) && !ring_pending(r, stop_ms))
            return 0;
        if (heartbeat(s) || idle_wait(s, idle_ms))
            return -1;
        idle_ms = idle_ms * 2 > IDLE_MAX_MS ? IDLE_MAX_MS : idle_ms * 2;
    }
}

/*
 * The ring is drained but the server is away: what was discarded must still
 * reach it (in the resume notice), so keep trying within --retry.  0
 * connected; -1 not (--retry ran out, or SIGINT/SIGTERM: link_end says
 * what it cost), or a fatal error.
 */
static int reach_server_at_end(struct sender *s, const trace_shm_header_t *h)
{
    while (s->sock < 0 && !stop_requested) {
        if (maybe_reconnect(s, h))
            return -1;
        if (s->sock < 0)
            sleep_ms(LINK_WAIT_MS);
    }
    return s->sock < 0 ? -1 : 0;
}

static int report_vanished(struct ring *r, struct sender *s);

/*
 * The stream ends without a connection: --retry ran out (or is 0), or
 * SIGINT/SIGTERM came while none was up.  Say what the link cost: what the
 * ring still holds (never sent), records taken and not sent whole, and the
 * tracers' drops while no connection was up; a flight recorder's ring is
 * its recording, never owed, so only its failed snapshots count.  The exit
 * status: EXIT_LINK_LOST when anything was lost, else 1 when the server
 * could not be reached, 0 when a stop found nothing owed.  --retry 0 keeps
 * its single line when nothing was lost.
 */
static int link_end(struct ring *r, struct sender *s)
{
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    uint64_t left = r->rec || head < r->tail || head - r->tail > r->capacity ? 0
                    : r->version == TRACE_SHM_VERSION_COMMIT ? ring_records_left(r, head)
                                                      : (head - r->tail) / TRACE_EVENT_SIZE;
    uint64_t dropped = r->rec ? 0 : outage_drops(s), lost = left + s->discarded + dropped;
    char why[160];
    if (r->vanished)
        report_vanished(r, s); /* says it; there is no connection to tell */
    if (!s->gave_up)
        snprintf(why, sizeof why, "stopped while disconnected");
    else if (s->o->retry_s)
        snprintf(why, sizeof why, "gave up reconnecting to %s:%s after %ld s", s->o->host, s->o->port,
                 s->o->retry_s);
    else
        snprintf(why, sizeof why, "not reconnecting (--retry 0)");
    if (lost || s->snap_lost || s->o->retry_s || !s->gave_up)
        fprintf(stderr, "trace_stream: %s; %" PRIu64 " events lost: %" PRIu64 " left in the ring, %" PRIu64
                        " discarded, %" PRIu64 " dropped by the tracers while disconnected%s\n",
                why, lost, left, s->discarded, dropped, s->snap_lost ? "; snapshots failed" : "");
    return lost || s->snap_lost ? EXIT_LINK_LOST : s->gave_up ? 1 : 0;
}

/* A step of the end failed: without a connection that is link_end's to say, else an error. */
static int end_failed(struct ring *r, struct sender *s)
{
    return s->sock < 0 && (s->gave_up || stop_requested) ? link_end(r, s) : 1;
}

/* ---- program ------------------------------------------------------------ */

/* len random bytes: getrandom() (never waiting for the kernel's pool: a
 * device at boot must not hang here), else /dev/urandom.  0, or -1 when
 * neither gives them.  Unbuffered reads, so no copy of a secret stays in a
 * stdio buffer. */
static int random_bytes(unsigned char *buf, size_t len)
{
    size_t got = 0;
#ifdef HAVE_GETRANDOM
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, GRND_NONBLOCK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* ENOSYS (an old kernel), EAGAIN (pool not ready yet) */
        got += (size_t)n;
    }
    if (got == len)
        return 0;
    got = 0;
#endif
    int fd = open("/dev/urandom", O_RDONLY);
    while (fd >= 0 && got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    return got == len ? 0 : -1;
}

/* The stream's secret, chosen once for all its connections; without a
 * random source the flag is not offered, and a server then lets only the
 * same address take over the stream (trace_shm.h). */
static void resume_key_init(struct sender *s)
{
    s->keyed = random_bytes(s->key, sizeof s->key) == 0;
    if (!s->keyed)
        fprintf(stderr, "trace_stream: no random source (getrandom, /dev/urandom): no resume key is "
                        "offered, so serve lets only this address take over the stream\n");
}

/* A random stream id: getrandom or /dev/urandom, else the clock and pid mixed. */
static uint64_t random_id(void)
{
    uint64_t id = 0;
    unsigned char b[sizeof id];
    if (random_bytes(b, sizeof b) == 0)
        memcpy(&id, b, sizeof id);
    if (id == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
        id = id * 0x9e3779b97f4a7c15u + 1;
    }
    return id;
}

static int sender_init(struct sender *s, int sock, const struct options *o)
{
    struct timespec ts;
    memset(s, 0, sizeof *s);
    s->sock = sock;
    s->level = o->level;
    s->o = o;
    s->stream_id = random_id();
    clock_gettime(CLOCK_REALTIME, &ts);
    s->start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    s->raw = malloc(CHUNK_RAW);
    s->wire_cap = TRACE_STREAM_CHUNK_HEADER_SIZE + frame_bound(CHUNK_RAW);
    s->wire = malloc(s->wire_cap);
    if (o->codec) {
        s->codec = calloc(1, sizeof *s->codec);
        s->coded = malloc(CHUNK_RAW);
    }
    if (!o->summary_threads && (s->merge = calloc(1, sizeof *s->merge)) != NULL &&
        !(s->merge->out = malloc(CHUNK_RAW))) {
        free(s->merge);
        s->merge = NULL;
    }
    if (frame_init(s) < 0 || !s->raw || !s->wire || (o->codec && (!s->codec || !s->coded)) ||
        (!o->summary_threads && !s->merge)) {
        fprintf(stderr, "trace_stream: out of memory\n");
        return -1;
    }
    return 0;
}

/*
 * End the connection so that the server sees an orderly end, never a reset:
 * closing a socket that still holds unread bytes (the codec ack, if it came
 * after our last look) makes the kernel send RST, and serve would record a
 * cut stream.  So: no more from us (FIN), then read and discard until the
 * server closes too, for at most CLOSE_WAIT_MS.
 */
#define CLOSE_WAIT_MS 2000
static void sender_close(struct sender *s)
{
    if (s->sock < 0)
        return;
    if (shutdown(s->sock, SHUT_WR) == 0) {
        uint64_t until = now_ms() + CLOSE_WAIT_MS;
        for (uint64_t t = now_ms(); t < until; t = now_ms()) {
            struct pollfd p = {s->sock, POLLIN, 0};
            unsigned char junk[256];
            if (poll(&p, 1, (int)(until - t)) <= 0)
                break; /* timed out, or a signal: close anyway */
            ssize_t n = recv(s->sock, junk, sizeof junk, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                break; /* the server's end, or an error */
        }
    }
    close(s->sock);
    s->sock = -1;
}

static void sender_free(struct sender *s)
{
    volatile unsigned char *k = s->key; /* volatile: a store the compiler may not drop */
    for (size_t i = 0; i < sizeof s->key; i++)
        k[i] = 0;
    frame_free(s);
    free(s->raw);
    free(s->wire);
    free(s->coded);
    free(s->codec);
    if (s->merge)
        merge_free(s->merge);
    free(s->merge);
    sender_close(s);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* No SA_RESTART, so a blocking connect or send notices; a second signal kills. */
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* --flight-recorder: SIGUSR1 asks for a snapshot (without it, SIGUSR1 ends
 * the program as it always has). */
static void install_snapshot_signal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_snapshot_signal;
    sigaction(SIGUSR1, &sa, NULL);
}

/* Tell the server that tracers died, and say so; the exit status is EXIT_TRACER_LOST. */
static int report_vanished(struct ring *r, struct sender *s)
{
    if (r->vanished_said++)
        return 0;
    unsigned char payload[8];
    put_le64(payload, r->vanished);
    if (send_small(s, TRACE_CHUNK_TRACER_LOST, payload, sizeof payload))
        return -1;
    fprintf(stderr, "trace_stream: %" PRIu32 " tracer process%s died without detaching (killed?); "
                    "sent what %s had put in the ring, the rest of %s events is lost\n",
            r->vanished, r->vanished == 1 ? "" : "es", r->vanished == 1 ? "it" : "they",
            r->vanished == 1 ? "its" : "their");
    return 0;
}

/* ---- flight recorder ----------------------------------------------------
 *
 * --flight-recorder (trace_shm.h, "flight recorder"): the ring is created
 * with its block, RECORDING, so the tracers keep overwriting its oldest
 * whole batches and this client reads nothing; the connection carries
 * heartbeats and drop notices only (and brings snapshot requests, if the
 * server's ack allowed them).  On a trigger (SIGUSR1, the block's
 * `triggers` moving, a tracer found dead, a request) it takes the ring's lock, turns
 * it to SHIPPING (from then on the ring is an ordinary one, and tail a
 * batch boundary, so nothing it ships can be torn or overwritten), and
 * sends [tail, head of that moment) - plus what comes in --after ms - on a
 * connection of its own: serve makes every connection its own series, so a
 * snapshot is one on any serve, old or new, and a snapshot cut short shows
 * as a cut connection.  Its first records (tid 0) say which snapshot, why,
 * and how many events were overwritten since the last one (SNAPSHOT,
 * WRAP).  It takes whole batches only, so that it can hand the ring back
 * RECORDING with its tail on a batch boundary.
 */
struct recorder {
    uint64_t triggers_seen;    /* the block's `triggers` when last looked at */
    uint64_t overwritten_sent; /* the block's `overwritten` at the last snapshot */
    uint32_t taken;            /* snapshots sent (or tried) */
    uint64_t skipped;          /* triggers over --max-triggers */
    uint64_t skipped_sent, held_sent; /* as last carried in-band */
    int skipped_said;          /* ... at least once on this connection (the first says "a recorder's") */
    uint64_t failed;           /* snapshots that could not be sent whole */
    uint64_t asks;             /* what the last look found: 1, or the tracers' asks since the one before */
    sig_atomic_t signals_seen; /* SIGUSR1s acted on (or declined) */
    int thaw_due;              /* the ring must go back to RECORDING; the lock was busy so far */
    uint64_t *times;           /* when the last --max-triggers snapshots were taken (ms) */
    int aligned;               /* our tail is a batch boundary */
};

static int recorder_init(struct recorder *rc, const struct options *o)
{
    memset(rc, 0, sizeof *rc);
    rc->aligned = 1;
    rc->times = calloc((size_t)o->max_triggers, sizeof *rc->times);
    return rc->times ? 0 : -1;
}

/* The ring's lock, as the tracers take it (trace_shm.h), but we may wait:
 * we are not the workload.  A holder that died is taken over.  0 or -1. */
static int recorder_lock(struct ring *r)
{
    _Atomic uint32_t *lock = a32(&r->hdr->lock);
    uint32_t me = (uint32_t)getpid();
    for (int i = 0; i < RECORDER_LOCK_TRIES; i++) {
        uint32_t v = 0;
        /* acquire: pairs with the tracers' release of the lock, so their
         * head, tail and storage writes are seen */
        if (atomic_compare_exchange_strong_explicit(lock, &v, me, memory_order_acquire, memory_order_relaxed))
            return 0;
        if (v && v <= (uint32_t)INT_MAX && kill((pid_t)v, 0) != 0 && errno == ESRCH &&
            atomic_compare_exchange_strong_explicit(lock, &v, me, memory_order_acquire, memory_order_relaxed))
            return 0;
        sleep_ms(1);
    }
    return -1;
}

static void recorder_unlock(struct ring *r)
{
    /* release: pairs with the next holder's acquire CAS */
    atomic_store_explicit(a32(&r->hdr->lock), 0, memory_order_release);
}

/* Turn the ring SHIPPING: *end = head then; r->tail = tail then (a batch
 * boundary); *over = events overwritten so far.  -1 if the lock stays busy. */
static int recorder_freeze(struct ring *r, uint64_t *end, uint64_t *over)
{
    if (recorder_lock(r))
        return -1;
    atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_SHIPPING, memory_order_relaxed);
    *end = atomic_load_explicit(a64(&r->hdr->head), memory_order_relaxed);
    r->tail = atomic_load_explicit(a64(&r->hdr->tail), memory_order_relaxed);
    *over = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
    recorder_unlock(r);
    return 0;
}

/* Back to RECORDING.  Our tail must be a batch boundary for the tracers to
 * walk on from; if it is not (records that are not batches came), what is
 * left is given up, and counted as discarded.  The records given up. */
static uint64_t recorder_thaw(struct ring *r, struct recorder *rc)
{
    uint64_t gone = 0;
    rc->thaw_due = 1;
    if (recorder_lock(r))
        return 0; /* still SHIPPING: an ordinary ring, nothing lost; record() tries again */
    rc->thaw_due = 0;
    if (!rc->aligned) {
        uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_relaxed);
        gone = (head - r->tail) / TRACE_EVENT_SIZE;
        r->tail = head;
        atomic_store_explicit(a64(&r->hdr->tail), head, memory_order_relaxed);
        rc->aligned = 1;
    }
    atomic_store_explicit(a32(&r->rec->state), TRACE_RECORDER_RECORDING, memory_order_relaxed);
    recorder_unlock(r);
    return gone;
}

/* How many bytes from our tail are whole batches, at most max (while
 * SHIPPING).  A record that is not a batch's start, or a batch larger
 * than max, ends the alignment until the ring is empty again. */
static size_t recorder_whole(struct ring *r, struct recorder *rc, size_t max)
{
    uint64_t head = atomic_load_explicit(a64(&r->hdr->head), memory_order_acquire);
    if (head == r->tail)
        rc->aligned = 1;
    if (!rc->aligned || head < r->tail || head - r->tail > r->capacity)
        return max; /* ring_take reports a broken ring */
    uint64_t pos = r->tail;
    while (pos < head) {
        trace_event_t b;
        memcpy(&b, r->data + pos % r->capacity, sizeof b);
        uint64_t bytes = (uint64_t)(uint32_t)b.call_site * TRACE_EVENT_SIZE;
        if (b.kind != TRACE_KIND_MARKER || b.func != TRACE_MARK_BATCH || bytes == 0 || bytes > head - pos ||
            (pos == r->tail && bytes > max)) {
            if (pos == r->tail)
                rc->aligned = 0;
            return pos == r->tail ? max : (size_t)(pos - r->tail);
        }
        if (pos + bytes - r->tail > max)
            break;
        pos += bytes;
    }
    return (size_t)(pos - r->tail);
}

/* A trace-time stamp for now: the tracer's clock, by its calibration. */
static uint64_t recorder_now_ts(const trace_shm_header_t *h)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (!(h->flags & TRACE_FLAG_TICKS) || h->tick_hz == 0 || ns < h->t0_ns)
        return ns;
    uint64_t d = ns - h->t0_ns;
    return h->t0_ticks + d / 1000000000u * h->tick_hz + d % 1000000000u * h->tick_hz / 1000000000u;
}

static void recorder_mark(unsigned char *p, uint64_t ts, uint64_t code, uint64_t payload)
{
    memset(p, 0, TRACE_EVENT_SIZE);
    put_le64(p + offsetof(trace_event_t, ts), ts);
    put_le64(p + offsetof(trace_event_t, func), code);
    put_le64(p + offsetof(trace_event_t, call_site), payload);
    p[offsetof(trace_event_t, kind)] = TRACE_KIND_MARKER;
}

/* May a snapshot be taken now?  At most --max-triggers in any hour. */
static int recorder_allowed(struct recorder *rc, const struct options *o)
{
    uint64_t t = now_ms();
    uint32_t slot = rc->taken % (uint32_t)o->max_triggers;
    if (rc->taken >= (uint32_t)o->max_triggers && t - rc->times[slot] < 3600000u)
        return 0;
    rc->times[slot] = t;
    return 1;
}

static const char *const cause_name[] = {"", "SIGUSR1", "a slow call (TRACE_TRIGGER)", "a tracer died",
                                         "callsight trigger"};

/* Ship from our tail: until `end` is passed, then for the --after window.
 * 0 sent whole, 1 the snapshot's connection failed (said), -1 fatal. */
static int recorder_ship(struct ring *r, struct recorder *rc, struct sender *main, struct sender *snap,
                         uint64_t end, uint64_t until_ms)
{
    for (;;) {
        if (r->tail >= end && (now_ms() >= until_ms || stop_requested))
            return 0;
        if (maybe_reconnect(main, r->hdr) || heartbeat(main))
            return -1;
        size_t max = recorder_whole(r, rc, CHUNK_RAW);
        long n = max ? ring_take(r, snap->raw, max) : 0;
        if (n < 0)
            return -1;
        if (n == 0 && r->tail < end)
            end = r->tail; /* cannot happen with a sound ring: never spin on it */
        if (n == 0) {
            if (r->tail >= end && idle_wait(snap, 2) < 0)
                return 1;
            continue;
        }
        if (!host_is_little_endian())
            for (long off = 0; off < n; off += TRACE_EVENT_SIZE)
                event_to_le(snap->raw + off);
        if (snap->ack_got < TRACE_STREAM_ACK_SIZE && read_server(snap))
            return 1;
        if (send_records(snap, snap->raw, n) || snap->sock < 0)
            return 1;
    }
}

/* One snapshot, on its own connection. 0, or -1 fatal. */
static int recorder_snapshot(struct ring *r, struct recorder *rc, struct sender *main, struct sender *snap,
                             unsigned cause)
{
    const struct options *o = main->o;
    uint64_t ts = recorder_now_ts(r->hdr), end, over, t0 = now_ms();
    if (recorder_freeze(r, &end, &over)) {
        fprintf(stderr, "trace_stream: snapshot (%s) not taken: the ring's lock stays taken\n", cause_name[cause]);
        rc->failed++;
        rc->thaw_due = 1; /* a tracer that asked may have frozen it */
        return 0;
    }
    rc->taken++;
    unsigned char head[2 * TRACE_EVENT_SIZE];
    uint64_t wrapped = over - rc->overwritten_sent;
    recorder_mark(head, ts, TRACE_MARK_SNAPSHOT, cause | (uint64_t)(rc->taken & 0xffffffu) << 8);
    recorder_mark(head + TRACE_EVENT_SIZE, ts, TRACE_MARK_WRAP, wrapped);
    rc->overwritten_sent = over;
    uint64_t records = (end - r->tail) / TRACE_EVENT_SIZE;
    int rc_ship = 1;
    snap->sock = net_connect(o->host, o->port, 1);
    if (snap->sock >= 0 && send_handshake(snap, r->hdr) == 0 && send_records(snap, head, sizeof head) == 0 &&
        snap->sock >= 0) {
        uint64_t sent0 = snap->events; /* the two records above */
        rc_ship = recorder_ship(r, rc, main, snap, end, t0 + (uint64_t)o->after_ms);
        if (rc_ship < 0)
            return -1;
        /* No drop notice here: the device's count is the main connection's
         * (it would be counted twice); each thread's losses are in its own
         * records (THREAD_LOST), and analyze knows they are among it. */
        if (rc_ship == 0 && !o->quiet)
            fprintf(stderr, "trace_stream: snapshot %" PRIu32 " (%s): %" PRIu64 " records of the ring, %" PRIu64
                            " in all, %" PRIu64 " events overwritten before it\n",
                    rc->taken, cause_name[cause], records, snap->events - sent0, wrapped);
    }
    if (rc_ship) {
        rc->failed++;
        main->snap_lost++; /* the link refused or cut it: events lost, the exit status says so */
        fprintf(stderr, "trace_stream: snapshot %" PRIu32 " (%s) could not be sent whole to %s:%s\n", rc->taken,
                cause_name[cause], o->host, o->port);
        if (r->tail < end) { /* give the rest up: the ring is the tracers' again */
            snap->discarded += (end - r->tail) / TRACE_EVENT_SIZE;
            r->tail = end;
            rc->aligned = 1; /* head at the freeze: the end of a put, so of a batch */
            atomic_store_explicit(a64(&r->hdr->tail), end, memory_order_release);
        }
    }
    sender_close(snap);
    snap->discarded += recorder_thaw(r, rc);
    return 0;
}

/* The block's counts of triggers not taken, in-band (tid 0) when they
 * change: over --max-triggers here, and slow calls the tracers held back. */
static int recorder_send_skipped(struct ring *r, struct recorder *rc, struct sender *s)
{
    uint64_t held = atomic_load_explicit(a64(&r->rec->held), memory_order_relaxed);
    if (s->sock < 0 || (rc->skipped_said && held == rc->held_sent && rc->skipped == rc->skipped_sent))
        return 0;
    unsigned char m[TRACE_EVENT_SIZE];
    uint64_t lo = rc->skipped < UINT32_MAX ? rc->skipped : UINT32_MAX, hi = held < UINT32_MAX ? held : UINT32_MAX;
    recorder_mark(m, recorder_now_ts(r->hdr), TRACE_MARK_TRIGGERS_SKIPPED, hi << 32 | lo);
    if (send_records(s, m, sizeof m))
        return -1;
    rc->skipped_sent = rc->skipped;
    rc->held_sent = held;
    rc->skipped_said = s->sock >= 0;
    return 0;
}

/* What wakes the recorder: 0 nothing, else an enum trace_snapshot_cause. */
static unsigned recorder_cause(struct ring *r, struct recorder *rc, struct sender *s, int *death_done)
{
    /* acquire: pairs with the tracer's release increment, made after the
     * batch with the slow call went in */
    uint64_t trig = atomic_load_explicit(a64(&r->rec->triggers), memory_order_acquire);
    unsigned cause = 0;
    rc->asks = 1;
    if (snapshot_requested != rc->signals_seen) {
        rc->signals_seen = snapshot_requested;
        cause = TRACE_SNAPSHOT_SIGNAL;
    } else if (s->requests) {
        s->requests--;
        cause = TRACE_SNAPSHOT_REQUEST;
    } else if (trig != rc->triggers_seen) {
        cause = TRACE_SNAPSHOT_CALL; /* every ask since the last look: one snapshot */
        rc->asks = trig - rc->triggers_seen;
        rc->triggers_seen = trig;
    } else if (r->vanished && !*death_done)
        cause = TRACE_SNAPSHOT_DEATH;
    *death_done |= cause == TRACE_SNAPSHOT_DEATH;
    return cause;
}

/* The recorder's loop, in place of drain(): until the tracers have
 * detached or died, or SIGINT/SIGTERM.  0, or -1 fatal. */
static int record(struct ring *r, struct sender *s, struct recorder *rc, struct sender *snap)
{
    const struct options *o = s->o;
    int death_done = 0;
    rc->triggers_seen = atomic_load_explicit(a64(&r->rec->triggers), memory_order_acquire);
    while (!stop_requested) {
        if (maybe_reconnect(s, r->hdr) || heartbeat(s) || send_notice_if_changed(s, r->hdr))
            return -1;
        uint32_t writers = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
        if (!r->vanished)
            r->vanished = ring_dead_writers(r);
        unsigned cause = recorder_cause(r, rc, s, &death_done);
        if (cause && recorder_allowed(rc, o)) {
            /* a slow call that asks while this one ships gets the next */
            if (recorder_snapshot(r, rc, s, snap, cause))
                return -1;
            continue;
        }
        if (cause) {
            rc->skipped += rc->asks;
            rc->thaw_due = 1; /* a tracer that asked froze it */
        }
        if (rc->thaw_due)
            snap->discarded += recorder_thaw(r, rc);
        if (recorder_send_skipped(r, rc, s))
            return -1;
        if (r->vanished || writers == 0)
            return 0;
        if (idle_wait(s, 5))
            return -1;
    }
    return 0;
}

static void recorder_report(const struct ring *r, const struct recorder *rc, const struct sender *snap)
{
    uint64_t over = atomic_load_explicit(a64(&r->rec->overwritten), memory_order_relaxed);
    uint64_t held = atomic_load_explicit(a64(&r->rec->held), memory_order_relaxed);
    fprintf(stderr, "trace_stream: flight recorder: %" PRIu32 " snapshot%s (%" PRIu64 " failed), %" PRIu64
                    " events overwritten, %" PRIu64 " records discarded; triggers not taken: %" PRIu64
                    " over --max-triggers, %" PRIu64 " slow calls within %u ms of another\n",
            rc->taken, rc->taken == 1 ? "" : "s", rc->failed, over, snap->discarded, rc->skipped, held,
            TRACE_TRIGGER_GAP_MS);
}

/* --flight-recorder, in place of drain(): 0, or -1 (the link is gone for good, or fatal). */
static int stream_recorder(struct ring *r, struct sender *s, const struct options *o)
{
    struct recorder rc;
    struct sender snap = {.sock = -1};
    struct options so = *o;
    so.summary_threads = 1; /* a snapshot is what the ring held, as it was */
    so.retry_s = 0;         /* a snapshot's connection is not resumed: a cut shows as one */
    so.recorder = 0;        /* and takes no requests: the main connection does */
    int bad = recorder_init(&rc, o) || sender_init(&snap, -1, &so);
    bad = bad || record(r, s, &rc, &snap) || reach_server_at_end(s, r->hdr);
    if (!bad)
        recorder_report(r, &rc, &snap);
    free(rc.times);
    sender_free(&snap);
    return bad ? -1 : 0;
}

/* What the link cost a stream that ended connected; "" when nothing. */
static void link_summary(const struct sender *s, char *extra, size_t len)
{
    uint64_t dropped = outage_drops(s);
    extra[0] = 0;
    if (s->conn_seq > 1 || s->discarded || dropped)
        snprintf(extra, len, ", %" PRIu32 " connections, lost to the link: %" PRIu64 " discarded, %" PRIu64
                 " dropped by the tracers while disconnected", s->conn_seq, s->discarded, dropped);
}

/* The last lines of a stream that ended connected, and its exit status. */
static int stream_report(const struct ring *r, const struct sender *s, const struct options *o)
{
    char extra[192];
    if (s->codec && !o->quiet)
        fprintf(stderr, "trace_stream: %" PRIu64 " of %" PRIu64 " event chunks coded\n", s->coded_chunks,
                s->chunks);
    link_summary(s, extra, sizeof extra);
    if (s->merge && s->merge->merged && !o->quiet)
        fprintf(stderr, "trace_stream: merged %" PRIu64 " thread snapshots into %" PRIu64
                        " per-process ones (%" PRIu64 " increment records)\n",
                s->merge->merged, s->merge->sent, s->merge->inc_sent);
    if (s->merge && s->merge->damaged)
        fprintf(stderr, "trace_stream: %" PRIu64 " thread snapshots were torn or damaged and not merged (each "
                        "later whole one still holds every count before it)\n", s->merge->damaged);
    if (s->sum_dropped)
        fprintf(stderr, "trace_stream: the server does not take summary snapshots (it predates them, or "
                        "did not answer within %u ms): %" PRIu64 " summary records not sent, counted as "
                        "dropped\n", TRACE_ACK_WAIT_MS, s->sum_dropped);
    fprintf(stderr,
            "trace_stream: forwarded %" PRIu64 " events in %" PRIu64 " chunks (%" PRIu64
            " bytes on the wire), dropped %" PRIu64 "%s\n",
            s->events, s->chunks, s->wire_bytes, s->dropped_sent, extra);
    if (s->discarded || outage_drops(s) || s->snap_lost)
        return EXIT_LINK_LOST;
    return r->vanished ? EXIT_TRACER_LOST : 0;
}

/* Everything after the ring is ours; the first connection may not be up
 * yet.  0, 1 error, EXIT_TRACER_LOST or EXIT_LINK_LOST. */
static int stream(struct ring *r, struct sender *s, const struct options *o)
{
    int rc = wait_for_tracer(r, s, o->quiet);
    if (rc <= 0) {
        if (rc == 0 && s->sock >= 0)
            fprintf(stderr, "trace_stream: stopped before a tracer attached; nothing sent\n");
        return rc < 0 || s->sock < 0 ? end_failed(r, s) : 0;
    }
    /* A first look at the tracers' liveness locks now, while the one that
     * just attached surely holds its own (see ring_dead_writers). */
    r->vanished = ring_dead_writers(r);
    if (s->sock >= 0 && send_hello(s, r->hdr))
        return end_failed(r, s);
    if (!o->quiet)
        fprintf(stderr, "trace_stream: tracer attached; %s%s:%s%s\n",
                r->rec ? "recording, snapshots go to " : s->sock >= 0 ? "streaming to " : "the ring keeps its events until ",
                o->host, o->port, s->sock >= 0 || r->rec ? "" : " answers");
    if (r->rec ? stream_recorder(r, s, o) : drain(r, s) || reach_server_at_end(s, r->hdr))
        return end_failed(r, s);
    /* The last merged snapshots, on a connection that is up (a cut on the
     * way marks them due again, and the next connection gets them whole). */
    for (int tries = 0; s->merge && tries < 3; tries++) {
        while (ack_pending(s, r)) /* a new connection: whether it takes them */
            if (idle_wait(s, 5))
                return end_failed(r, s);
        if (merge_emit(s, s->merge, 1) || reach_server_at_end(s, r->hdr))
            return end_failed(r, s);
        if (!merge_due(s))
            break;
    }
    /* A final look, so a drop counted after the last chunk is still reported. */
    if (send_notice_if_changed(s, r->hdr) || (r->vanished && report_vanished(r, s)))
        return end_failed(r, s);
    if (s->sock < 0 && reach_server_at_end(s, r->hdr))
        return end_failed(r, s);
    return stream_report(r, s, o);
}

/*
 * The first connection: up, or refused (nobody listening yet, or the
 * server turned us away).  Refused, trace_stream keeps trying within
 * --retry as after a cut, and the ring keeps what the tracers write
 * meanwhile; --retry 0 ends it at once, as it always has.
 */
static int start(struct ring *r, struct sender *s)
{
    s->ring = r->hdr;
    resume_key_init(s); /* the main connection's only: a snapshot's sends no resume notice */
    s->ever_up = s->sock >= 0;
    if (s->sock >= 0)
        return stream(r, s, s->o);
    sender_down(s);
    if (s->o->retry_s == 0) {
        s->gave_up = 1;
        return link_end(r, s);
    }
    fprintf(stderr, "trace_stream: retrying for up to %ld s; meanwhile the ring keeps what the tracers write "
                    "(once it is full they drop new events, counted)\n", s->o->retry_s);
    return stream(r, s, s->o);
}

int main(int argc, char **argv)
{
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    install_signals();
    if (o.recorder)
        install_snapshot_signal();
    struct ring r = {.name = o.shm, .fd = -1, .stuck_at = UINT64_MAX};
    if (!atomic_is_lock_free((_Atomic uint64_t *)&r.tail)) {
        fprintf(stderr, "trace_stream: this target has no lock-free 64-bit atomics; the ring "
                        "cannot be shared between processes\n");
        return 1;
    }
    if (ring_open(&r, o.quiet, o.recorder, (uint32_t)o.ring_version))
        return 1;
    int status = 1;
    struct sender s;
    int sock = net_connect(o.host, o.port, 0);
    if (sock >= 0 && !o.quiet)
        fprintf(stderr, "trace_stream: connected to %s:%s\n", o.host, o.port);
    if (sender_init(&s, sock, &o) == 0)
        status = start(&r, &s);
    sender_free(&s);
    ring_close(&r);
    return status;
}
