/*
 * ts_internal.h - trace_stream's one private header: what its parts share.
 *
 * trace_stream.c includes it first and then its parts (ts_*.c) in order,
 * so that the program is one translation unit and everything in it stays
 * static; each part includes it as well (the guard makes that free), so a
 * part reads on its own.  Here: the feature macros and system headers, the
 * two builds (with libzstd, or -DTRACE_STREAM_NO_LIBZSTD), the formats
 * (trace.h, trace_shm.h), the constants, and the structs more than one
 * part uses: the options, the ring, the sender, and the signal flags; and
 * the declarations of what each part offers the others.
 */
#ifndef TS_INTERNAL_H
#define TS_INTERNAL_H
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: shm_open, getaddrinfo, SA_RESETHAND */
#define _DEFAULT_SOURCE    /* and flock(2), which every Unix the ring runs on has */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h> /* TCP_NODELAY: control answers go at once */
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
/* A connection made before any tracer has no handshake to send; serve
 * closes such a one after 10 s.  Past this long without a tracer it is
 * closed by us and made again when one attaches (struct sender's parked). */
#define PARK_AFTER_MS 5000u
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
    long share_gid;   /* --group: the group that may share the ring (-1: none, owner only) */
    int allow_control; /* --allow-control: the ring gets a control block the host may write */
    const char *auth_key; /* --auth-key: the key file that guards control (NULL: none) */
    const char *shm;
    const char *host;
    const char *port;
};

struct ring {
    const char *name;
    long share_gid; /* --group (-1: the ring is its owner's alone) */
    int want_ctl;   /* --allow-control: a ring we create gets a control block */
    trace_shm_header_t *hdr;
    unsigned char *data; /* capacity bytes of storage after the header */
    size_t map_len;
    uint32_t capacity;
    uint64_t tail; /* our copy; only this process writes the header's tail */
    int fd;        /* kept open: our exclusive flock tests the tracers' shared ones */
    uint64_t live_at; /* when (ms) to test the tracers' liveness next */
    uint32_t vanished; /* tracers found dead while still counted in `writers` */
    int lock_seen;     /* a tracer's shared lock was seen: tracers here use it */
    trace_shm_recorder_t *rec; /* the flight recorder's block: --flight-recorder's after the storage,
                                * or --allow-control's before the control block (NULL: none) */
    int rec_live;      /* ... the latter, after the loss table: tracers that predate it never see it */
    int recording;     /* the recorder is on: the ring keeps its most recent events (ts_recorder.c) */
    int arming;        /* turning it on: draining up to arm_at first (trace_shm.h) */
    uint64_t arm_at;   /* head when the ring was made SHIPPING for that */
    uint64_t over_at;  /* the block's `overwritten` when it was last turned on */
    trace_shm_losses_t *losses; /* the loss table after the storage (NULL: the ring has none) */
    trace_shm_control_t *ctl;   /* --allow-control: the control block at the segment's end (NULL: none) */
    int vanished_said; /* the dead tracers were reported (once) */
    uint32_t version;  /* TRACE_SHM_VERSION, or TRACE_SHM_VERSION_COMMIT (batches committed) */
    int mixed;         /* version 2 with TRACE_SHM_FEATURE_COMMIT: committed batches among plain records */
    uint64_t stuck_at; /* version 3: where an uncommitted batch was first seen at tail, */
    uint64_t stuck_ms; /* ... and when (ms); its writer's life is tested a period later */
};

struct sender {
    int sock;             /* -1 while disconnected */
    /* The server was reached, and the connection closed again by us after
     * PARK_AFTER_MS with no tracer: a handshake needs the tracer's
     * calibration, and a server closes a connection without one (serve
     * after 10 s), so a waiting client would be cut and reconnect over and
     * over.  It connects again when a tracer attaches. */
    int parked;
    const struct options *o;
    /* The main connection's ring, whose drops while no connection is up
     * the link costs (NULL: a snapshot's sender, which counts none of it). */
    const trace_shm_header_t *ring;
    /* Its loss table (NULL: none), and each slot's count (the last:
     * `other`) as this connection last had it (send_losses). */
    const trace_shm_losses_t *losses;
    uint64_t loss_sent[TRACE_SHM_LOSS_SLOTS + 1];
    uint32_t loss_tid[TRACE_SHM_LOSS_SLOTS];

    /* What a chunk goes through: drained, coded, framed. */
    unsigned char *raw;   /* CHUNK_RAW bytes drained from the ring */
    unsigned char *coded; /* CHUNK_RAW bytes: raw after the codec (NULL when not offered) */
    struct wire_codec *codec; /* its per-thread state */
    struct merger *merge; /* threads' snapshots merged per process (NULL: --summary-threads) */
    unsigned char *wire;  /* chunk header followed by the zstd frame */
    size_t wire_cap;
    int level;
#ifndef TRACE_STREAM_NO_LIBZSTD
    ZSTD_CCtx *cctx;
#endif

    /* This connection's server: what our handshake offered, what its ack
     * said, and the snapshot requests it sends; asked afresh on every
     * connection (send_handshake), read without blocking (read_server). */
    struct {
        int offered;          /* this connection's handshake offered the codec */
        int acked;            /* ... and the server's ack arrived: send coded chunks */
        int sum_ok;           /* the ack says the server takes summary snapshots */
        int sum_inc;          /* ... and increments of them (TRACE_CHUNK_SUMMARY_INCREMENTS) */
        int req_ok;           /* --flight-recorder: the ack says snapshot requests may come */
        int ctl_ok;           /* --allow-control: the ack says control requests may come */
        uint64_t hello_ms;    /* when this connection's handshake went: the ack is awaited until
                                 TRACE_ACK_WAIT_MS later */
        unsigned ack_got;     /* bytes of the ack read so far */
        unsigned char ack[TRACE_STREAM_ACK_SIZE];
        unsigned req_got;     /* bytes of the request being read */
        unsigned char req[TRACE_STREAM_REQUEST_SIZE];
        uint64_t requests;    /* whole requests read and not yet acted on */
    } peer;

    /* Live control (ts_control.c): the request being read, and the answer due. */
    struct {
        trace_shm_control_t *block; /* the ring's (NULL: none, we offer nothing) */
        unsigned char *mem;         /* the body's allocation, with room for a head before it */
        unsigned char *body;        /* TRACE_STREAM_CTL_BODY_MAX bytes, and a code's with a key */
        uint64_t *funcs;            /* TRACE_STREAM_CTL_FUNCS_MAX addresses */
        int in_body;                /* a head came: its body is being read */
        uint32_t body_len, body_got, req_seq;
        int due;                    /* an answer is owed */
        uint32_t seq, status;
        uint64_t gen, until;        /* what it applies; when to answer "pending" at the latest (ms) */
        char why[96];
        struct ring *ring;          /* the main connection's ring (NULL: a snapshot's sender) */
        int rec_req;                /* the request answered next was a flight-recorder switch */
        uint32_t rec_want;          /* a flight-recorder switch asked for and not yet made:
                                       TRACE_STREAM_CTL_RECORDER_ON or _OFF (0: none) */
    } ctl;

    /* --auth-key (ts_auth.c): this connection's side of the exchange. */
    struct {
        int offered;        /* our handshake offered it: a key, and a ring that takes control */
        int acked;          /* ... and the server's ack said it has a key: its TKAUTH comes */
        int heard, in_body; /* its TKAUTH head came; its body is being read */
        unsigned got;       /* bytes of the body read */
        int ok;             /* the server proved the key: requests with the session's code are taken */
        int proof_due;      /* our proof is owed (sent from the loops, auth_service) */
        uint32_t last_seq;  /* the last request taken: seq only grows */
        unsigned char nonce[TRACE_STREAM_AUTH_NONCE];
        unsigned char body[TRACE_STREAM_AUTH_BODY];
        unsigned char session[TRACE_STREAM_AUTH_MAC];
        unsigned char proof[TRACE_STREAM_AUTH_MAC];
    } auth;

    /* What was sent and what was not, over all connections. */
    uint64_t events;       /* records forwarded (enter, exit and markers alike) */
    uint64_t chunks;       /* event chunks sent */
    uint64_t coded_chunks; /* event chunks sent coded */
    uint64_t wire_bytes;   /* everything sent: handshake, chunks, notices */
    uint64_t discarded;    /* records taken from the ring and never sent */
    uint64_t sum_dropped;  /* summary records not sent: the server does not take them */
    uint64_t dropped_sent; /* last dropped count sent in a notice */
    int notice_due;        /* a new connection gets the count even if unchanged */
    uint64_t last_send;    /* ms of the last successful send (heartbeats) */

    /* The stream's identity and totals, for TRACE_CHUNK_RESUME. */
    struct {
        uint64_t stream_id, start_ns;
        uint32_t conn_seq;    /* connections made so far */
        uint64_t sent_before, discarded_before; /* the totals when this connection began */
        /* The stream's secret (TRACE_STREAM_FLAG_RESUME_KEY): only a server
         * shown it lets a connection continue this stream.  Never printed or
         * written anywhere but to the socket. */
        int keyed;
        unsigned char key[TRACE_STREAM_RESUME_KEY_SIZE];
    } resume;

    /* The link's outages and, on the main connection, what they cost (the
     * exit status says so). */
    struct {
        uint64_t down_since;     /* ms when the connection was lost */
        uint64_t next_try;       /* ms of the next reconnection attempt */
        int backoff_ms;
        uint64_t down_dropped;   /* the ring's dropped count when this outage began */
        uint64_t outage_dropped; /* the tracers' drops while no connection was up, earlier outages */
        uint64_t snap_lost;      /* --flight-recorder: snapshots the link refused or cut */
        int ever_up;             /* a connection was up once ("connected", then "reconnected") */
        int gave_up;             /* the link is gone for good: --retry ran out, or is 0 */
    } link;
};

/* Set by the signal handlers (ts_main.c), read by the loops. */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t snapshot_requested; /* SIGUSR1s so far, with --flight-recorder */

/*
 * What each part offers the others, in the order trace_stream.c includes
 * them; a part's other functions are its own.  All static: the program is
 * one translation unit.
 */
struct merger; /* ts_merge.c */

/* ts_args.c: 0 run, 1 done (help printed), -1 usage error (reported). */
static int parse_args(int argc, char **argv, struct options *o);

/* ts_order.c: records in the wire's byte order (trace_wire.h has the
 * byte helpers and the codec). */
static int host_is_little_endian(void);
static void event_to_le(unsigned char *p);

/* ts_ring.c: the clock, the shared header's atomics, the ring reader. */
static uint64_t now_ms(void);
static void sleep_ms(int ms);
static _Atomic uint64_t *a64(uint64_t *p);
static _Atomic uint32_t *a32(uint32_t *p);
static int ring_open(struct ring *r, int quiet, int recorder, uint32_t version);
static void ring_close(struct ring *r);
static uint32_t ring_dead_writers(struct ring *r);
static long ring_take(struct ring *r, unsigned char *buf, size_t max);
static uint64_t ring_records_left(const struct ring *r, uint64_t head);
static uint64_t ring_dropped(const trace_shm_header_t *h);
static uint64_t ring_now_ts(const trace_shm_header_t *h);

/* ts_frames.c: one zstd frame per chunk. */
static int frame_init(struct sender *s);
static void frame_free(struct sender *s);
static size_t frame_bound(size_t len);
static size_t frame_make(struct sender *s, unsigned char *dst, size_t cap, const void *src, size_t len);

/* ts_link.c: the connection, its outages, and what goes over it. */
static int net_connect(const char *host, const char *port, int quiet);
static void sender_down(struct sender *s);
static int sender_lost(struct sender *s);
static uint64_t outage_drops(const struct sender *s);
static int read_server(struct sender *s);
static int ack_pending(const struct sender *s, const struct ring *r);
static int idle_wait(struct sender *s, int ms);
static int send_handshake(struct sender *s, const trace_shm_header_t *h);
static int send_hello(struct sender *s, const trace_shm_header_t *h);
static int send_chunk(struct sender *s, uint32_t type, const void *payload, size_t len);
static int send_small(struct sender *s, uint32_t type, const void *payload, size_t len);
static int send_notice_if_changed(struct sender *s, trace_shm_header_t *h);
static int send_losses(struct sender *s);
static int heartbeat(struct sender *s);
static int maybe_reconnect(struct sender *s, const trace_shm_header_t *h);

/* ts_auth.c: the key that guards live control. */
static int auth_load(const char *path);
static void auth_new_connection(struct sender *s);
static int auth_head(struct sender *s);
static void auth_body_got(struct sender *s, size_t n);
static int auth_service(struct sender *s);
static const char *auth_request(struct sender *s, uint32_t seq, uint32_t *len);
static int random_bytes(unsigned char *buf, size_t len);

/* ts_control.c: live control's requests and answers. */
static int ctl_head(struct sender *s);
static void ctl_body_got(struct sender *s, size_t n);
static int ctl_service(struct sender *s);

/* ts_merge.c: summaries merged per process. */
static long merge_take(struct merger *m, unsigned char *raw, long n);
static int merge_hold(struct sender *s, struct merger *m, unsigned char *raw, long n);
static int merge_emit(struct sender *s, struct merger *m, int force);
static int merge_due(const struct sender *s);
static void merge_new_connection(struct merger *m);
static void merge_free(struct merger *m);

/* ts_sender.c: a sender made, keyed, closed and freed. */
static int sender_init(struct sender *s, int sock, const struct options *o);
static void resume_key_init(struct sender *s);
static void sender_close(struct sender *s);
static void sender_free(struct sender *s);

/* ts_drain.c: the drain loop and the stream's end. */
static int wait_for_tracer(struct ring *r, struct sender *s, int quiet);
static int send_records(struct sender *s, unsigned char *raw, long n);
static int drain(struct ring *r, struct sender *s);
static int reach_server_at_end(struct sender *s, const trace_shm_header_t *h);
static int report_vanished(struct ring *r, struct sender *s);
static int link_end(struct ring *r, struct sender *s);
static int end_failed(struct ring *r, struct sender *s);

/* ts_recorder.c: --flight-recorder, in place of drain(). */
static int stream_modes(struct ring *r, struct sender *s, const struct options *o);
static int recorder_lock(struct ring *r);
static void recorder_unlock(struct ring *r);

#endif /* TS_INTERNAL_H */
