/*
 * conn.c - one trace_stream connection (see conn.h).
 *
 * Two threads per connection, so that decompressing and writing overlap:
 * the reader (the connection's own thread) reads the socket, checks each
 * chunk and decompresses it into one of CONN_SLOTS buffers of a bounded
 * queue (chunkq.h); the writer takes them in order, decodes coded chunks
 * and does everything that touches the files, the resume claim or the lines
 * about the stream, exactly as one thread did before.  The reader ends the
 * queue when the stream ends, however it ends, and joins the writer before
 * the close line and the last marker are written, so the writer has
 * written every chunk read whole.  A writer that cannot open a file stops
 * the reader.
 *
 * Memory per connection is fixed when the handshake has been accepted: a
 * zstd decompression context, CONN_SLOTS buffers for the largest raw chunk
 * the protocol allows and one for the largest frame; for a client that
 * offered the codec also the decoder's state (70 KiB) and one more raw
 * buffer, the decoded records.  Every length read from the wire is checked
 * against those caps before anything is read into them.  A client that
 * sends summary increments also gets the totals they add up to (sums.h),
 * which grow with what it sends, within a cap per connection and a budget
 * for all connections together (--max-summary-mb).
 *
 * The codec (trace_wire.h): a little-endian client that offers it in its
 * handshake gets the 16-byte ack once, right after the handshake was
 * accepted and the decoder's memory allocated (no memory: no ack, the
 * client stays plain).  This is the only thing serve ever writes to a
 * client.  A coded chunk on a connection that was not acked is malformed.
 *
 * Lines it prints (stdout, one flushed line each, after "callsight serve: "):
 *   conn 3 from 127.0.0.1:5555[ (big-endian stream, written little-endian)]
 *   conn 3: device dropped 1234 events (cumulative)
 *   conn 3: 812345 events/s, 2000000 events, compression 7.9x, dropped 0 so far
 *   conn 3: budget of 4096 MB reached; discarding the rest of the stream
 *   conn 3: warning: skipping chunk of unknown type 99 (100 bytes); later ones silently
 *   conn 3: stream 0123456789abcdef resumed (connection 2): 2000 events lost in the gap
 *       (1500 discarded on the device while disconnected, 500 lost in flight)
 *   conn 3: 1 tracer process died without detaching (killed?); what it had not flushed is lost
 *   conn 3: free space in DIR is below 1024 MB; discarding the rest of the stream
 *   conn 3 closed (127.0.0.1:5555): 2000000 events, 1 segment, 64000080 bytes written,
 *       8123456 bytes received, dropped 0[, N events discarded (budget reached)]
 *       [, N unknown chunks skipped][, tracers waited 12.400 ms for the ring in 310 flushes]
 *       [; error: <why>|; cut: <where>][ (server stopping)]
 *   connection from 127.0.0.1:5555 closed: error: <why>   (no valid handshake: no id)
 *   connection from 127.0.0.1:5555 closed before sending a handshake
 *
 * An abnormal end (error or cut) after the handshake also leaves a
 * TRACE_MARK_STREAM_GAP marker in the file, so the analyzer reports it too;
 * for a resumable stream (one that sent a TRACE_CHUNK_RESUME) it is a
 * TRACE_MARK_STREAM_CUT, sized exactly when the stream comes back.
 *
 * The file is opened at the first chunk, not at the handshake: a resume
 * notice there (trace_stream sends one after every handshake) says whether
 * this connection continues an earlier one's series (resume.c: the
 * registry, or after a restart of serve the disk), and a new series of a
 * resumable stream starts with a TRACE_MARK_STREAM_ID naming it.
 * A silent socket is closed after --idle-timeout; the handshake must be
 * whole CONN_HANDSHAKE_MS after accept, and a chunk that has begun must
 * end at CONN_MIN_RATE after a grace (net_read_by), so a peer that
 * trickles bytes holds nothing for long.  A summary snapshot begun must
 * end within --snapshot-timeout (the writer's deadline, checked before
 * every chunk and while it waits for one), so a peer cannot hold its
 * totals by never ending one.  serve admits a connection (its
 * caps) only once its handshake is valid, and the buffers come with the
 * first chunk.  Free space is checked at most once a second (--min-free-mb).
 */
#include "conn.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h> /* SIOCOUTQ */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <time.h>

#include <zstd.h>

#include "auth.h"
#include "chunkq.h"
#include "files.h"
#include "net.h"
#include "proto.h"
#include "resume.h"
#include "sums.h"
#include "trace.h"
#include "trace_wire.h"

#define MB (1024.0 * 1024.0)

/* The whole handshake must arrive this soon after accept. */
#define CONN_HANDSHAKE_MS 10000u
/* A chunk that has begun must end within the grace plus its length at
 * this rate: a slow link is fine, a peer that trickles to hold a slot is not. */
#define CONN_GRACE_MS 10000u
#define CONN_MIN_RATE 1024u

/* Chunk buffers between reader and writer: enough for each side to work on
 * one while a third waits, so neither waits for the other in a steady stream. */
#define CONN_SLOTS 3

/*
 * Set before the writer thread starts and read-only after: fd, peer, o,
 * hello, offered, acked.  The reader's alone: dctx, frame, chunks, received,
 * end.  The writer's alone: file, codec, decoded, and raw_in to space_at.
 * Each side reads the other's only after the join.
 */
struct conn {
    int fd;
    const char *peer;
    const struct conn_opts *o;
    struct proto_hello hello;
    struct files file;
    ZSTD_DCtx *dctx;
    unsigned char *frame; /* PROTO_FRAME_CAP bytes */
    struct wire_codec *codec; /* the decoder's state, once acked */
    unsigned char *decoded; /* PROTO_RAW_CAP bytes: the writer decodes coded chunks here, once acked */
    int offered;          /* the handshake offered the codec */
    int acked;            /* the codec ack was sent: coded chunks are welcome */
    int sum_offered;      /* the client may send summary snapshots: the ack says they are welcome */
    int req_offered;      /* the client takes snapshot requests (a flight recorder) */
    int req_acked;        /* a flight recorder that takes snapshot requests, and the ack said so */
    int req_listed;       /* listed for the control socket (from its file's opening to its end) */
    uint32_t req_seq;     /* requests sent to it (under listed_lock) */
    int ctl_offered;      /* the client takes live-control requests (trace_stream --allow-control) */
    int ctl_acked;        /* ... and the ack said so; 0 again once a request could not go whole */
    int auth_offered;     /* ... and holds a key (trace_stream --auth-key): its hello follows its intro */
    int auth_acked;       /* ... and serve has one too: the ack said so, our TKAUTH answers its hello */
    struct auth_conn auth; /* the exchange (the writer's; proved is read under listed_lock) */
    uint32_t ctl_seq;     /* control requests sent to it (under listed_lock) */
    uint32_t ctl_answered; /* the seq of its last answer (under listed_lock) */
    trace_stream_ctl_answer_t ctl_last; /* that answer (under listed_lock) */
    struct sums *sums; /* their totals, once increments were acked (the writer's) */
    char writer_end[PROTO_WHY_MAX + 64]; /* the writer's reason to end the stream (rc 3) */
    uint64_t chunks;      /* chunks read whole */
    uint64_t chunks_written; /* chunks the writer took (the writer's) */
    uint64_t received;    /* bytes read from the socket */
    _Atomic uint64_t wire; /* ... the same, for the control thread (conn_wire) */
    int unlisted;         /* its reader is done: a file opened now (finish) is not listed */
    struct chunkq *q;     /* decompressed chunks, reader to writer */
    pthread_t writer;
    int writer_running;   /* writer was started: join it */
    int writer_rc;        /* 2: the writer could open no file (said); 3: a malformed chunk (writer_end) */
    uint64_t raw_in, zstd_in; /* event payload bytes before/after compression, for the ratio */
    uint64_t dropped;     /* the device's last reported cumulative count */
    uint64_t unknown;     /* chunks of unknown type skipped */
    uint64_t waited_ns, waits; /* TRACE_MARK_TRACER_WAIT records seen: ns (saturating), how many */
    double status_at;     /* when the last status line was due */
    uint64_t status_events;
    char end[PROTO_WHY_MAX + 64]; /* why the connection ended abnormally, "" if it did not */
    int opened;           /* the file exists: opened at the first chunk or at the end */
    int holds_place;      /* its first events have begun: admit.c keeps its place */
    int slot;             /* stream registry slot, -1 for a stream without identity */
    uint64_t stream_received; /* records received on the stream, all its connections */
    int stopped;          /* serve was stopping when reading ended: the stop cut it */
    uint64_t accepted_ms; /* when serve accepted it: the handshake's deadline counts from here */
    uint64_t deadline;    /* the chunk being read must be whole by then (0: none begun) */
    const struct conn_gate *gate; /* serve's say on a valid handshake, told when its events begin */
    int key_offered;      /* the handshake says a resume key follows the resume notice */
    int have_resume;      /* the first chunk was a resume notice, kept until the file opens */
    struct proto_resume resume;
    int have_key;         /* the resume key came; key_hash is its hash */
    uint64_t key_hash;
    uint64_t notices_quiet; /* drop notices not said since the last line (one per interval) */
    double notice_at;     /* when a notice was last said */
    uint64_t vanished, vanished_quiet; /* tracer-lost notices: the last count, those not said */
    double vanished_at;
};

static void vsay(const char *fmt, va_list ap)
{
    flockfile(stdout);
    fputs("callsight serve: ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    funlockfile(stdout);
}

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* ---- lines about connections without an id ------------------------------
 * Refused, evicted or handshake-less connections cost an attacker nothing,
 * so their lines are limited: at most PRE_BURST per PRE_WINDOW_MS, the rest
 * counted into one line when the window has passed. */
#define PRE_BURST 20u
#define PRE_WINDOW_MS 2000u

static pthread_mutex_t pre_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pre_window, pre_quiet;
static unsigned pre_said;

/* Start a new window if this one has passed; what it kept quiet, else 0. */
static uint64_t pre_roll(uint64_t now)
{
    uint64_t quiet = 0;
    if (now - pre_window >= PRE_WINDOW_MS) {
        quiet = pre_quiet;
        pre_quiet = 0;
        pre_said = 0;
        pre_window = now;
    }
    return quiet;
}

static void say_quiet(uint64_t quiet)
{
    if (quiet)
        say("%" PRIu64 " more line%s about refused connections or connections without a handshake "
            "not printed", quiet, quiet == 1 ? "" : "s");
}

void conn_say_flush(void)
{
    pthread_mutex_lock(&pre_lock);
    uint64_t quiet = pre_roll(net_now_ms());
    pthread_mutex_unlock(&pre_lock);
    say_quiet(quiet);
}

void conn_say_limited(const char *fmt, ...)
{
    pthread_mutex_lock(&pre_lock);
    uint64_t quiet = pre_roll(net_now_ms());
    int speak = pre_said < PRE_BURST;
    if (speak)
        pre_said++;
    else
        pre_quiet++;
    pthread_mutex_unlock(&pre_lock);
    say_quiet(quiet);
    if (!speak)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

#define say_pre conn_say_limited

/* What a failed read means: the peer went quiet past --idle-timeout, was
 * too slow to finish what it started, or an error. */
static const char *read_error(const struct conn *c, char *buf, size_t len)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        snprintf(buf, len, "idle: nothing received for %d s", c->o->idle_secs);
    else if (errno == ETIMEDOUT)
        snprintf(buf, len, "too slow: less than %u bytes/s after a grace of %u s", CONN_MIN_RATE,
                 CONN_GRACE_MS / 1000u);
    else
        return strerror(errno);
    return buf;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Bytes read from the socket so far, where the control thread can see them. */
static void count_received(struct conn *c, size_t got)
{
    c->received += got;
    atomic_store_explicit(&c->wire, c->received, memory_order_relaxed); /* a counter: no order needed */
}

/* Read exactly len bytes of `what`; on a short read say how the stream ended. 0 ok, -1 ended. */
static int read_exact(struct conn *c, void *buf, size_t len, const char *what)
{
    size_t got;
    int rc = net_read_by(c->fd, buf, len, &got, -1, &c->deadline, -1);
    count_received(c, got);
    if (rc == 0)
        return 0;
    char idle[64];
    if (rc < 0)
        snprintf(c->end, sizeof c->end, "cut: read failed in %s: %s", what, read_error(c, idle, sizeof idle));
    else
        snprintf(c->end, sizeof c->end, "cut: connection ended inside %s (%zu of %zu bytes)", what, got,
                 len);
    return -1;
}

/* ---- before the id exists: name the connection by its peer ----------- */

static int read_hello(struct conn *c)
{
    unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE];
    char why[PROTO_WHY_MAX];
    size_t got;
    uint64_t by = c->accepted_ms + CONN_HANDSHAKE_MS;
    int idle = c->o->idle_secs > 0 && c->o->idle_secs * 1000 < (int)CONN_HANDSHAKE_MS;
    int rc = net_read_by(c->fd, raw, sizeof raw, &got, idle ? c->o->idle_secs * 1000 : -1, &by, -1);
    count_received(c, got);
    if (rc == 1 && got == 0) {
        say_pre("connection from %s closed before sending a handshake", c->peer);
        return -1;
    }
    if (rc < 0 && (errno == ETIMEDOUT || (errno == EAGAIN && !idle))) {
        say_pre("connection from %s closed: error: no whole handshake within %u s (%zu of %u bytes)",
                c->peer, CONN_HANDSHAKE_MS / 1000u, got, TRACE_STREAM_HANDSHAKE_SIZE);
        return -1;
    }
    if (rc == 1) {
        say_pre("connection from %s closed: error: truncated handshake (%zu of %u bytes)", c->peer, got,
                TRACE_STREAM_HANDSHAKE_SIZE);
        return -1;
    }
    if (rc < 0) {
        char idle[64];
        say_pre("connection from %s closed: error: reading the handshake failed: %s", c->peer,
                read_error(c, idle, sizeof idle));
        return -1;
    }
    if (proto_hello_decode(raw, &c->hello, why, sizeof why)) {
        say_pre("connection from %s closed: error: %s", c->peer, why);
        return -1;
    }
    if (c->gate && c->gate->admit(c->gate->arg, why, sizeof why)) {
        char msg[PROTO_WHY_MAX + NET_NAME_MAX + 64];
        int n = snprintf(msg, sizeof msg, "callsight serve: connection from %s refused: %s\n", c->peer, why);
        (void)!send(c->fd, msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : 0, MSG_DONTWAIT | MSG_NOSIGNAL);
        say_pre("connection from %s refused: %s", c->peer, why);
        return -1;
    }
    c->offered = proto_hello_codec_offered(raw);
    c->sum_offered = proto_hello_summary_offered(raw);
    c->req_offered = proto_hello_requests_offered(raw);
    c->key_offered = proto_hello_key_offered(raw);
    c->ctl_offered = proto_hello_control_offered(raw);
    c->auth_offered = c->ctl_offered && proto_hello_auth_offered(raw);
    return 0;
}

/* ---- connections listed for serve's control socket ---------------------
 * Every connection whose file is open, by its connection id, from the
 * moment the file opens (when "conn N from" is said) until its reader ends,
 * just before the socket is closed.  The table is the only state shared
 * with the thread that answers the control socket: `callsight trigger`
 * asks the flight recorders among them for a snapshot (one non-blocking
 * 16-byte send each, under the lock, so an asker never waits on a
 * connection) and `callsight top` reads each one's wire bytes. */
#define LISTED_MAX CONN_LISTED_MAX

static pthread_mutex_t listed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t listed_cond = PTHREAD_COND_INITIALIZER; /* a control answer came, or a connection left */
static struct conn *listed[LISTED_MAX];
static uint32_t listed_ids[LISTED_MAX];

static void listed_add(struct conn *c)
{
    pthread_mutex_lock(&listed_lock);
    for (int i = 0; i < LISTED_MAX && !c->req_listed && !c->unlisted; i++)
        if (!listed[i]) {
            listed[i] = c;
            listed_ids[i] = c->file.id;
            c->req_listed = 1;
        }
    pthread_mutex_unlock(&listed_lock);
}

static void listed_remove(struct conn *c)
{
    pthread_mutex_lock(&listed_lock);
    c->unlisted = 1;
    for (int i = 0; i < LISTED_MAX && c->req_listed; i++)
        if (listed[i] == c) {
            listed[i] = NULL;
            c->req_listed = 0;
        }
    pthread_cond_broadcast(&listed_cond); /* a control request waiting on it ends */
    pthread_mutex_unlock(&listed_lock);
}

size_t conn_wire(struct conn_wire *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&listed_lock);
    for (int i = 0; i < LISTED_MAX && n < max; i++)
        if (listed[i])
            out[n++] = (struct conn_wire){listed_ids[i],
                                                 atomic_load_explicit(&listed[i]->wire, memory_order_relaxed)};
    pthread_mutex_unlock(&listed_lock);
    return n;
}

size_t conn_request_snapshot(uint32_t id, uint32_t *sent, size_t max, size_t *takers_seen)
{
    size_t n = 0;
    *takers_seen = 0;
    pthread_mutex_lock(&listed_lock);
    for (int i = 0; i < LISTED_MAX; i++) {
        if (!listed[i] || !listed[i]->req_acked || (id && listed_ids[i] != id))
            continue;
        ++*takers_seen;
        unsigned char req[TRACE_STREAM_REQUEST_SIZE];
        int queued = -1;
        /* only into an empty send queue, where 16 bytes surely go whole:
         * half a request would leave the client reading the rest as junk */
        if (ioctl(listed[i]->fd, SIOCOUTQ, &queued) != 0 || queued != 0)
            continue;
        proto_request_encode(req, ++listed[i]->req_seq);
        if (send(listed[i]->fd, req, sizeof req, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof req && n < max)
            sent[n++] = listed_ids[i];
    }
    pthread_mutex_unlock(&listed_lock);
    for (size_t k = 0; k < n; k++)
        say("conn %u: snapshot requested (callsight trigger)", (unsigned)sent[k]);
    return n;
}

/* ---- live control, relayed (docs/control.md) ---------------------------
 * `callsight ctl DIR` hands serve a request body for one connection; serve
 * sends it whole or not at all, and waits, bounded, for the client's
 * answer, which the connection's writer posts here.  The request goes only
 * into an empty send queue, which the ack made large enough for the
 * largest one, so it is never half sent but for a failing socket (then
 * control of that connection ends; the stream goes on). */
#define CTL_ANSWER_WAIT_MS (TRACE_STREAM_CTL_WAIT_MS + 2000u)

/* The connection a request is for: id's, or (id 0) the one that takes
 * control; its index, or -1 with why in res (under listed_lock). */
static int ctl_target(uint32_t id, struct conn_ctl_result *res)
{
    int found = -1, takers = 0, unproved = -1;
    for (int i = 0; i < LISTED_MAX; i++) {
        if (!listed[i] || (id && listed_ids[i] != id))
            continue;
        if (id) {
            found = i;
            break;
        }
        /* with a key, a connection that has not proved it takes nothing:
         * counted, anyone who can connect would make the one device that
         * did ambiguous ("2 connections take control") */
        if (listed[i]->ctl_acked && auth_keyed() && !listed[i]->auth.proved) {
            unproved = unproved < 0 ? i : unproved;
            continue;
        }
        if (listed[i]->ctl_acked && takers++ == 0)
            found = i;
    }
    if (!id && takers == 0 && unproved >= 0)
        return unproved; /* conn_control says it has not proved the key */
    if (id && found < 0)
        snprintf(res->why, sizeof res->why, "no connection %u is writing now (ended, or never was)", (unsigned)id);
    else if (id && !listed[found]->ctl_acked)
        snprintf(res->why, sizeof res->why, "conn %u: trace_stream did not offer control (start it with "
                 "--allow-control)", (unsigned)id);
    else if (!id && takers == 0)
        snprintf(res->why, sizeof res->why, "no connection takes control (start trace_stream with --allow-control)");
    else if (!id && takers > 1)
        snprintf(res->why, sizeof res->why, "%d connections take control: say which with --conn "
                 "(callsight ctl DIR --list)", takers);
    else
        return found;
    return -1;
}

int conn_control(uint32_t id, const unsigned char *body, size_t len, struct conn_ctl_result *res)
{
    /* one asker at a time; room for the code a keyed serve signs with */
    static unsigned char msg[TRACE_STREAM_CTL_HEAD_SIZE + TRACE_STREAM_CTL_BODY_MAX + TRACE_STREAM_AUTH_MAC];
    memset(res, 0, sizeof *res);
    if (len > TRACE_STREAM_CTL_BODY_MAX) {
        snprintf(res->why, sizeof res->why, "a request of %zu bytes (at most %u)", len, TRACE_STREAM_CTL_BODY_MAX);
        return CONN_CTL_REFUSED;
    }
    pthread_mutex_lock(&listed_lock);
    int i = ctl_target(id, res), queued = -1, rc = CONN_CTL_UNREACHABLE;
    if (i < 0)
        goto out;
    struct conn *c = listed[i];
    res->id = listed_ids[i];
    if (auth_keyed() && !c->auth.proved) {
        snprintf(res->why, sizeof res->why, "conn %u: its trace_stream has not proved serve's key (start it with "
                 "--auth-key and the same key)", (unsigned)res->id);
        goto out;
    }
    if (ioctl(c->fd, SIOCOUTQ, &queued) != 0 || queued != 0) {
        snprintf(res->why, sizeof res->why, "conn %u: its socket has not yet sent what went before; try again",
                 (unsigned)res->id);
        goto out;
    }
    uint32_t seq = ++c->ctl_seq;
    size_t mac = auth_keyed() ? TRACE_STREAM_AUTH_MAC : 0, whole = TRACE_STREAM_CTL_HEAD_SIZE + len + mac;
    memset(msg, 0, TRACE_STREAM_CTL_HEAD_SIZE);
    memcpy(msg, TRACE_STREAM_CTL_MAGIC, sizeof TRACE_STREAM_CTL_MAGIC - 1);
    wire_put_le32(msg + offsetof(trace_stream_ctl_request_t, seq), seq);
    wire_put_le32(msg + offsetof(trace_stream_ctl_request_t, len), (uint32_t)(len + mac));
    memcpy(msg + TRACE_STREAM_CTL_HEAD_SIZE, body, len);
    if (mac && auth_sign(&c->auth, msg, TRACE_STREAM_CTL_HEAD_SIZE + len, msg + TRACE_STREAM_CTL_HEAD_SIZE + len)) {
        snprintf(res->why, sizeof res->why, "conn %u: the request could not be signed (HMAC)", (unsigned)res->id);
        goto out;
    }
    ssize_t sent = send(c->fd, msg, whole, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent != (ssize_t)whole) {
        if (sent > 0)
            c->ctl_acked = 0; /* half a request: the client stops reading requests, so do we */
        snprintf(res->why, sizeof res->why, "conn %u: the request could not be sent%s", (unsigned)res->id,
                 sent > 0 ? " whole; no more control on this connection" : "");
        goto out;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += CTL_ANSWER_WAIT_MS / 1000u;
    until.tv_nsec += (long)(CTL_ANSWER_WAIT_MS % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    /* listed[i] == c while it lives: listed_remove clears it (and signals)
     * before the connection is freed */
    while (listed[i] == c && c->ctl_answered != seq)
        if (pthread_cond_timedwait(&listed_cond, &listed_lock, &until) == ETIMEDOUT)
            break;
    if (listed[i] != c) {
        snprintf(res->why, sizeof res->why, "conn %u ended before it answered", (unsigned)res->id);
        goto out;
    }
    if (c->ctl_answered != seq) {
        snprintf(res->why, sizeof res->why, "conn %u did not answer within %u ms", (unsigned)res->id,
                 CTL_ANSWER_WAIT_MS);
        goto out;
    }
    res->answer = c->ctl_last;
    rc = res->answer.status == TRACE_CTL_ANSWER_APPLIED   ? CONN_CTL_APPLIED
         : res->answer.status == TRACE_CTL_ANSWER_PENDING ? CONN_CTL_PENDING
                                                          : CONN_CTL_REFUSED;
    if (rc == CONN_CTL_REFUSED)
        snprintf(res->why, sizeof res->why, "%s", res->answer.reason);
out:
    pthread_mutex_unlock(&listed_lock);
    if (rc != CONN_CTL_UNREACHABLE)
        say("conn %u: control: %s", (unsigned)res->id,
            rc == CONN_CTL_REFUSED ? "refused" : rc == CONN_CTL_PENDING ? "written, not yet applied" : "applied");
    return rc;
}

size_t conn_ctl_list(struct conn_ctl_entry *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&listed_lock);
    for (int i = 0; i < LISTED_MAX && n < max; i++)
        if (listed[i])
            out[n++] = (struct conn_ctl_entry){listed_ids[i],
                                               !listed[i]->ctl_acked ? 0
                                               : !auth_keyed()        ? 1
                                               : listed[i]->auth.proved ? 2 : 3,
                                               listed[i]->ctl_answered != 0, listed[i]->ctl_last};
    pthread_mutex_unlock(&listed_lock);
    return n;
}

/* The key's exchange (auth.h): the device's hello answered with our
 * nonce and proof, its proof checked.  A hello to a serve without a key
 * (or a second one) is ignored: the device then refuses our requests, and
 * says so. */
static void on_auth(struct conn *c, uint32_t type, const unsigned char *raw)
{
    unsigned char msg[sizeof(trace_stream_auth_t)];
    if (!c->auth_acked)
        return;
    if (type == TRACE_CHUNK_AUTH_HELLO) {
        if (c->auth.hello)
            return;
        if (auth_hello(&c->auth, raw, msg)) {
            say("conn %u: cannot answer the device's key exchange (no random bytes or HMAC): no control for it",
                (unsigned)c->file.id);
            return;
        }
        pthread_mutex_lock(&listed_lock); /* between requests, never inside one */
        ssize_t sent = send(c->fd, msg, sizeof msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent > 0 && sent != (ssize_t)sizeof msg)
            c->ctl_acked = 0; /* half of it: the client stops reading requests, so do we */
        pthread_mutex_unlock(&listed_lock);
        return;
    }
    pthread_mutex_lock(&listed_lock);
    int ok = auth_check_proof(&c->auth, raw);
    pthread_mutex_unlock(&listed_lock);
    if (ok >= 0) /* once a connection */
        say("conn %u: %s", (unsigned)c->file.id, ok ? "the device proved the key: control is relayed to it"
                                                     : "the device did not prove the key: no control is relayed to it");
}

/* The client's answer: posted for the asker waiting on it.  The reason is
 * the device's text: kept to printable ASCII. */
static void on_ctl_answer(struct conn *c, const unsigned char *raw)
{
    trace_stream_ctl_answer_t a;
    a.seq = wire_le32(raw + offsetof(trace_stream_ctl_answer_t, seq));
    a.status = wire_le32(raw + offsetof(trace_stream_ctl_answer_t, status));
    a.gen = wire_le64(raw + offsetof(trace_stream_ctl_answer_t, gen));
    a.applied = wire_le64(raw + offsetof(trace_stream_ctl_answer_t, applied));
    a.nfuncs = wire_le32(raw + offsetof(trace_stream_ctl_answer_t, nfuncs));
    a.flags = wire_le32(raw + offsetof(trace_stream_ctl_answer_t, flags));
    size_t k = 0;
    for (const unsigned char *r = raw + offsetof(trace_stream_ctl_answer_t, reason);
         k + 1 < sizeof a.reason && r[k]; k++)
        a.reason[k] = r[k] >= 0x20 && r[k] < 0x7f ? (char)r[k] : '?';
    a.reason[k] = 0;
    pthread_mutex_lock(&listed_lock);
    c->ctl_last = a;
    c->ctl_answered = a.seq;
    pthread_cond_broadcast(&listed_cond);
    pthread_mutex_unlock(&listed_lock);
}

/*
 * The connection's files: a new series, or (prev known) the continuation of
 * its stream's series.  Opened at the first chunk, because a resume notice
 * there says which.  0, or -1 (said).
 */
static int open_file(struct conn *c, const struct resume_claim *prev)
{
    char err[FILES_ERR_MAX + 64];
    const struct conn_opts *o = c->o;
    int rc = -1;
    if (prev && prev->known) {
        rc = files_continue(&c->file, o->dir, o->seg_bytes, o->budget_bytes, &c->hello,
                                  prev->file_id, prev->next_seq, err, sizeof err);
        if (rc)
            say("connection from %s: %s; starting a new series", c->peer, err);
    }
    if (rc && files_open(&c->file, o->dir, o->seg_bytes, o->budget_bytes, &c->hello, err,
                               sizeof err)) {
        say("connection from %s closed: error: %s", c->peer, err);
        return -1;
    }
    c->opened = 1;
    if (!c->holds_place && c->gate) { /* a notice opens the file too */
        c->holds_place = 1;
        c->gate->writing(c->gate->arg);
    }
    listed_add(c); /* first: whoever reads the line below can reach it (callsight ctl, trigger) */
    say("conn %u from %s%s", (unsigned)c->file.id, c->peer,
        c->hello.swapped ? " (big-endian stream, written little-endian)" : "");
    return 0;
}

/*
 * Answer a codec offer, a summary offer or both.  Only a little-endian
 * stream is acked for the codec: the coding is defined on little-endian
 * records.  The ack fits any empty socket
 * buffer, so the send does not block; if it fails, the client is gone and
 * the next read says so.
 */
static void answer_offer(struct conn *c)
{
    uint32_t codecs = 0, features = c->sum_offered ? TRACE_ACK_SUMMARIES : 0;
    if (c->sum_offered && (c->sums = sums_new()) != NULL)
        features |= TRACE_ACK_SUMMARY_INCREMENTS; /* no memory: whole snapshots only */
    if (c->offered && !c->hello.swapped) {
        c->codec = calloc(1, sizeof *c->codec); /* its 4 MiB output buffer comes with the first chunk */
        codecs = c->codec ? TRACE_CODEC_STACK_SHUFFLE : 0; /* no memory: plain chunks */
    }
    if (c->req_offered)
        features |= TRACE_ACK_SNAPSHOT_REQUESTS;
    if (c->ctl_offered) {
        /* room for the largest request in an empty send queue (conn_control) */
        int buf = 4 * (int)(TRACE_STREAM_CTL_HEAD_SIZE + TRACE_STREAM_CTL_BODY_MAX);
        int one = 1; /* a request goes at once, not when Nagle lets it */
        if (setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf) == 0 &&
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0)
            features |= TRACE_ACK_CONTROL;
        if ((features & TRACE_ACK_CONTROL) && c->auth_offered && auth_keyed())
            features |= TRACE_ACK_AUTH;
    }
    if (!codecs && !features)
        return;
    unsigned char ack[TRACE_STREAM_ACK_SIZE];
    proto_ack_encode(ack, codecs, features);
    int sent = send(c->fd, ack, sizeof ack, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof ack;
    c->acked = sent && codecs;
    c->req_acked = sent && c->req_offered;
    c->ctl_acked = sent && (features & TRACE_ACK_CONTROL);
    c->auth_acked = sent && (features & TRACE_ACK_AUTH);
}

static void *writer_main(void *arg);

/* Handshake, admission, codec ack.  0 go on, -1 no handshake or refused (said). */
static int start(struct conn *c)
{
    if (read_hello(c))
        return -1;
    answer_offer(c);
    c->status_at = now_s();
    return 0;
}

/*
 * The buffers and the writer thread, at the first chunk: a peer that only
 * connects, or only shakes hands, costs no more than its thread.  0 go
 * on, -1 ended (c->end says why).
 */
static int start_writer(struct conn *c)
{
    c->dctx = ZSTD_createDCtx();
    c->frame = malloc(PROTO_FRAME_CAP);
    c->q = chunkq_new(CONN_SLOTS, PROTO_RAW_CAP);
    if (c->acked && !(c->decoded = malloc(PROTO_RAW_CAP)))
        c->frame = (free(c->frame), NULL);
    if (!c->dctx || !c->frame || !c->q) {
        snprintf(c->end, sizeof c->end, "error: out of memory");
        return -1;
    }
    int err = pthread_create(&c->writer, NULL, writer_main, c);
    if (err) {
        snprintf(c->end, sizeof c->end, "error: cannot start the writer thread: %s", strerror(err));
        return -1;
    }
    c->writer_running = 1;
    return 0;
}

/* ---- chunks ------------------------------------------------------------ */

static void report_news(struct conn *c, enum files_news news)
{
    if (news == FILES_DISK_LOW)
        say("conn %u: free space in %s is below %" PRIu64 " MB or %" PRIu64 " inodes; discarding the rest "
            "of the stream", (unsigned)c->file.id, c->o->dir, c->o->min_free_bytes / (1024u * 1024u),
            c->o->min_free_inodes);
    else if (news == FILES_TOTAL_REACHED)
        say("conn %u: %s holds %" PRIu64 " MB of traces, its cap (--max-total-mb); discarding the rest of the "
            "stream", (unsigned)c->file.id, c->o->dir, c->o->total_bytes / (1024u * 1024u));
    else if (news == FILES_BUDGET_REACHED)
        say("conn %u: budget of %.0f MB reached; discarding the rest of the stream",
            (unsigned)c->file.id, (double)c->file.budget / MB);
    else if (news == FILES_WRITE_FAILED)
        say("conn %u: %s; discarding the rest of the stream", (unsigned)c->file.id, c->file.error);
}

/* Tracers that waited for the ring (TRACE_SHM_WAIT_US) perturbed what they
 * measured: their TRACER_WAIT markers are summed for the close line. */
static void count_waits(struct conn *c, const unsigned char *raw, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *r = raw + i * TRACE_EVENT_SIZE;
        if (r[offsetof(trace_event_t, kind)] != TRACE_KIND_MARKER ||
            wire_le64(r + offsetof(trace_event_t, func)) != TRACE_MARK_TRACER_WAIT)
            continue;
        uint64_t ns = wire_le64(r + offsetof(trace_event_t, call_site));
        c->waited_ns = c->waited_ns > UINT64_MAX - ns ? UINT64_MAX : c->waited_ns + ns;
        c->waits++;
    }
}

static void on_events(struct conn *c, const struct proto_chunk *h, unsigned char *raw)
{
    if (c->hello.swapped)
        proto_events_swap(raw, h->raw_len);
    c->raw_in += h->raw_len;
    c->zstd_in += h->zstd_len;
    c->stream_received += h->raw_len / TRACE_EVENT_SIZE;
    count_waits(c, raw, h->raw_len / TRACE_EVENT_SIZE);
    report_news(c, files_append(&c->file, raw, h->raw_len / TRACE_EVENT_SIZE));
}

static int put_whole(void *ctx, const unsigned char *records, size_t n)
{
    struct conn *c = ctx;
    report_news(c, files_append(&c->file, records, n));
    return 0;
}

/* Summary increments, written whole.  Not among the stream's records that
 * a resume counts (trace_wire.h): a lost one is superseded, not lost.
 * 0, or 3 when malformed (writer_end says why). */
static int on_summary_increments(struct conn *c, const struct proto_chunk *h, const unsigned char *raw)
{
    char why[PROTO_WHY_MAX];
    size_t n = h->raw_len / TRACE_EVENT_SIZE;
    c->raw_in += h->raw_len;
    c->zstd_in += h->zstd_len;
    if (sums_take(c->sums, raw, n, net_now_ms(), put_whole, c, why, sizeof why) == 0)
        return 0;
    snprintf(c->writer_end, sizeof c->writer_end, "error: chunk %" PRIu64 ": %s", c->chunks_written, why);
    return 3;
}

/* Tracers that vanished: said at most once per status interval, like drop notices. */
static void say_vanished(struct conn *c)
{
    uint64_t n = c->vanished, quiet = c->vanished_quiet;
    char more[64] = "";
    if (quiet)
        snprintf(more, sizeof more, " (%" PRIu64 " more such notices since the last line)", quiet);
    c->vanished_quiet = 0;
    c->vanished_at = now_s();
    say("conn %u: %" PRIu64 " tracer process%s died without detaching (killed?); what %s had not "
        "flushed is lost%s", (unsigned)c->file.id, n, n == 1 ? "" : "es", n == 1 ? "it" : "they", more);
}

static void on_tracer_lost(struct conn *c, const unsigned char *raw)
{
    c->vanished = proto_notice_count(raw, c->hello.swapped);
    if (now_s() - c->vanished_at >= c->o->status_secs)
        say_vanished(c);
    else
        c->vanished_quiet++;
    report_news(c, files_mark(&c->file, TRACE_MARK_TRACER_VANISHED, c->vanished));
}

/* A resumed stream whose loss cannot be counted: say why, and leave an unsized gap. */
static void unsized_gap(struct conn *c, const struct proto_resume *r, const struct resume_claim *prev)
{
    unsigned id = (unsigned)c->file.id;
    if (prev->turned_away)
        say("conn %u: stream %016" PRIx64 " resumed (connection %u); a connection of it was turned away "
            "meanwhile (another address, or an old one that would not let go), so the gap's size is unknown",
            id, r->stream_id, (unsigned)r->conn_seq);
    else if (prev->known && !prev->exact)
        say("conn %u: stream %016" PRIx64 " resumed (connection %u) after a restart of serve; a connection "
            "of its series stopped writing (budget, disk or write error), so the gap's size is unknown",
            id, r->stream_id, (unsigned)r->conn_seq);
    else if (prev->known)
        say("conn %u: stream %016" PRIx64 " resumed (connection %u) claiming %" PRIu64 " events sent "
            "but %" PRIu64 " arrived; the gap's size is unknown", id, r->stream_id, (unsigned)r->conn_seq,
            r->sent, prev->received);
    else
        say("conn %u: stream %016" PRIx64 " resumed (connection %u), unknown here (serve restarted?): "
            "it sent %" PRIu64 " and discarded %" PRIu64 " events before; the gap's size is unknown",
            id, r->stream_id, (unsigned)r->conn_seq, r->sent, r->discarded);
    report_news(c, files_mark(&c->file, TRACE_MARK_STREAM_GAP, 0));
}

/* Claim the stream (resume.h), and say what the claim could not do. */
static void claim_stream(struct conn *c, struct resume_claim *cl)
{
    char host[NET_NAME_MAX];
    net_host_of(c->peer, host, sizeof host);
    struct resume_who who = {c->resume.stream_id, c->resume.start_ns, c->have_key, c->key_hash, host};
    resume_claim(&who, c->fd, cl);
    c->slot = cl->slot;
    if (cl->disk_errno)
        say("connection from %s: cannot look for stream %016" PRIx64 "'s files in %s: %s", c->peer,
            c->resume.stream_id, c->o->dir, strerror(cl->disk_errno));
    if (cl->refused) /* a series of its own, nameless, so no later claim finds it */
        say_pre("connection from %s: stream %016" PRIx64 " not resumed: %s; starting a new series", c->peer,
                c->resume.stream_id, cl->refused);
}

/*
 * The stream says who it is and what it did before this connection.  Claim
 * it, continue its series (known to the registry, or found on disk after a
 * restart), and on a reconnection count exactly what went missing:
 * everything it sent or discarded before, less what we received.  A new
 * series starts by naming its stream (and its key's hash), for a serve
 * restarted later.
 */
static int on_resume(struct conn *c)
{
    const struct proto_resume *r = &c->resume;
    struct resume_claim prev;
    claim_stream(c, &prev);
    if (open_file(c, &prev))
        return -1;
    if (prev.refused)
        return 0;
    if (c->file.seq == 0) {
        report_news(c, files_mark_at(&c->file, TRACE_MARK_STREAM_ID, r->stream_id, r->start_ns));
        if (c->have_key)
            report_news(c, files_mark(&c->file, TRACE_MARK_STREAM_KEY, c->key_hash));
        resume_index_add(r->stream_id, r->start_ns, c->file.id, c->have_key, c->key_hash);
    }
    c->stream_received = prev.received;
    if (r->conn_seq <= 1)
        return 0;
    if (!prev.known || !prev.exact || r->sent < prev.received) {
        unsized_gap(c, r, &prev);
        return 0;
    }
    uint64_t lost = r->sent + r->discarded - prev.received;
    say("conn %u: stream %016" PRIx64 " resumed (connection %u): %" PRIu64 " events lost in the gap (%"
        PRIu64 " discarded on the device while disconnected, %" PRIu64 " lost in flight)",
        (unsigned)c->file.id, r->stream_id, (unsigned)r->conn_seq, lost, r->discarded, r->sent - prev.received);
    report_news(c, files_mark(&c->file, TRACE_MARK_STREAM_RESUMED, lost));
    if (lost)
        report_news(c, files_mark(&c->file, TRACE_MARK_STREAM_GAP, lost));
    return 0;
}

/* The device's drop count, said at most once per status interval: a
 * client may send a notice per chunk, and each would be a line. */
static void say_dropped(struct conn *c)
{
    uint64_t quiet = c->notices_quiet;
    c->notices_quiet = 0;
    c->notice_at = now_s();
    if (quiet)
        say("conn %u: device dropped %" PRIu64 " events (cumulative; %" PRIu64 " more notice%s since the "
            "last such line)", (unsigned)c->file.id, c->dropped, quiet, quiet == 1 ? "" : "s");
    else
        say("conn %u: device dropped %" PRIu64 " events (cumulative)", (unsigned)c->file.id, c->dropped);
}

static void on_notice(struct conn *c, const unsigned char *raw)
{
    c->dropped = proto_notice_count(raw, c->hello.swapped);
    if (now_s() - c->notice_at >= c->o->status_secs)
        say_dropped(c);
    else
        c->notices_quiet++;
    report_news(c, files_mark(&c->file, TRACE_MARK_DEVICE_DROPPED, c->dropped));
}

static void on_unknown(struct conn *c, const struct proto_chunk *h)
{
    if (c->unknown++ != 0)
        return;
    if (c->opened)
        say("conn %u: warning: skipping chunk of unknown type %u (%u bytes); later ones silently",
            (unsigned)c->file.id, (unsigned)h->type, (unsigned)h->zstd_len);
    else
        say_pre("connection from %s: warning: skipping chunk of unknown type %u (%u bytes); later ones "
                "silently", c->peer, (unsigned)h->type, (unsigned)h->zstd_len);
}

static void maybe_status(struct conn *c)
{
    double t = now_s();
    if (c->notices_quiet && t - c->notice_at >= c->o->status_secs)
        say_dropped(c);
    if (c->vanished_quiet && t - c->vanished_at >= c->o->status_secs)
        say_vanished(c);
    if (c->o->quiet || t - c->status_at < c->o->status_secs)
        return;
    double rate = (double)(c->file.events - c->status_events) / (t - c->status_at);
    say("conn %u: %.0f events/s, %" PRIu64 " events, compression %.1fx, dropped %" PRIu64 " so far",
        (unsigned)c->file.id, rate, c->file.events,
        c->zstd_in ? (double)c->raw_in / (double)c->zstd_in : 0.0, c->dropped);
    c->status_at = t;
    c->status_events = c->file.events;
}

/* Read and check chunk n's header.  0 ok, 1 clean end of stream, -1 ended abnormally. */
static int read_chunk_header(struct conn *c, uint64_t n, struct proto_chunk *h)
{
    unsigned char raw[TRACE_STREAM_CHUNK_HEADER_SIZE];
    char why[PROTO_WHY_MAX];
    size_t got;
    int idle_ms = c->o->idle_secs > 0 ? c->o->idle_secs * 1000 : -1;
    c->deadline = 0; /* set at the chunk's first byte */
    int rc = net_read_by(c->fd, raw, sizeof raw, &got, idle_ms, &c->deadline, (int)CONN_GRACE_MS);
    count_received(c, got);
    if (rc == 1 && got == 0)
        return 1;
    if (rc < 0) {
        char idle[64];
        snprintf(c->end, sizeof c->end, "cut: read failed in chunk %" PRIu64 "'s header: %s", n,
                 read_error(c, idle, sizeof idle));
        return -1;
    }
    if (rc == 1) {
        snprintf(c->end, sizeof c->end, "cut: connection ended inside chunk %" PRIu64
                 "'s header (%zu of %u bytes)", n, got, TRACE_STREAM_CHUNK_HEADER_SIZE);
        return -1;
    }
    proto_chunk_decode(raw, c->hello.swapped, h);
    if (proto_chunk_check(h, why, sizeof why)) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": %s", n, why);
        return -1;
    }
    if (h->type == TRACE_CHUNK_SUMMARY_INCREMENTS && !c->sums) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": summary increments, but this server did "
                 "not say it takes them (%s)", n, c->sum_offered ? "no memory" : "never offered");
        return -1;
    }
    if ((h->type == TRACE_CHUNK_AUTH_HELLO || h->type == TRACE_CHUNK_AUTH_PROOF) && !c->auth_offered) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": a key exchange the handshake did not "
                 "offer", n);
        return -1;
    }
    if (h->type == TRACE_CHUNK_CONTROL_ANSWER && !c->ctl_offered) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": a control answer, but this server "
                 "sent no request (never offered)", n);
        return -1;
    }
    if (h->type == TRACE_CHUNK_EVENTS_CODED && !c->acked) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": coded events, but this server did not "
                 "ack the codec (%s)", n, c->offered ? "not for this stream" : "never offered");
        return -1;
    }
    c->deadline += (uint64_t)h->zstd_len * 1000u / CONN_MIN_RATE;
    /* A stream's first events hold its place from their first header: a
     * big first chunk on a slow link (or a loaded host) took long enough
     * for newer connections from its address to evict it mid-chunk.  A
     * notice or a resume alone holds nothing, and the chunk has a deadline. */
    if (!c->holds_place && c->gate &&
        (h->type == TRACE_CHUNK_EVENTS || h->type == TRACE_CHUNK_EVENTS_CODED ||
         h->type == TRACE_CHUNK_SUMMARY_INCREMENTS)) {
        c->holds_place = 1;
        c->gate->writing(c->gate->arg);
    }
    return 0;
}

/* Decompress a chunk of a known type into dst.  0 ok, -1 malformed (c->end says why). */
static int unpack(struct conn *c, const struct proto_chunk *h, uint64_t n, unsigned char *dst)
{
    char why[PROTO_WHY_MAX];
    if (proto_frame_decode(c->dctx, c->frame, h->zstd_len, dst, h->raw_len, why, sizeof why)) {
        snprintf(c->end, sizeof c->end, "error: chunk %" PRIu64 ": %s", n, why);
        return -1;
    }
    return 0;
}

/*
 * Reader: read and check one chunk, decompress it into a free buffer and
 * hand it to the writer (an unknown type with no payload: the writer says
 * so).  0 go on, 1 clean end of stream, -1 ended abnormally, 2 the writer
 * quit (it could open no file).
 */
static int read_chunk(struct conn *c)
{
    char what[48];
    struct proto_chunk h;
    uint64_t n = c->chunks + 1;
    int rc = read_chunk_header(c, n, &h);
    if (rc)
        return rc;
    snprintf(what, sizeof what, "chunk %" PRIu64, n);
    if (!c->writer_running && start_writer(c))
        return -1;
    if (read_exact(c, c->frame, h.zstd_len, what))
        return -1;
    c->chunks++;
    struct chunkq_item *it = chunkq_claim(c->q);
    if (!it)
        return 2;
    it->h = h;
    if (proto_chunk_known(h.type) && unpack(c, &h, n, it->buf))
        return -1;
    chunkq_put(c->q);
    return 0;
}

/*
 * Chunks before the file opens: a resume notice as the first chunk (it
 * decides where the files go) and, if the handshake offered one, the key
 * as the second.  1 taken, 0 not one of them, 3 malformed (writer_end).
 */
static int take_intro(struct conn *c, const struct proto_chunk *h, const unsigned char *raw)
{
    if (h->type == TRACE_CHUNK_RESUME && c->chunks_written == 1) {
        proto_resume_decode(raw, c->hello.swapped, &c->resume);
        c->have_resume = 1;
        return 1;
    }
    if (!c->key_offered || !c->have_resume || c->have_key)
        return 0;
    if (h->type != TRACE_CHUNK_RESUME_KEY || c->chunks_written != 2) {
        snprintf(c->writer_end, sizeof c->writer_end, "error: chunk %" PRIu64 ": type %u where the "
                 "handshake promised the resume key", c->chunks_written, (unsigned)h->type);
        return 3;
    }
    if (resume_key_hash(raw, &c->key_hash)) {
        snprintf(c->writer_end, sizeof c->writer_end, "error: cannot hash the resume key (SHA-256)");
        return 3;
    }
    c->have_key = 1;
    return 1;
}

/* Chunks that put something in the files, and so open them. */
static int writes_file(uint32_t type)
{
    return proto_chunk_has_events(type) || type == TRACE_CHUNK_NOTICE || type == TRACE_CHUNK_TRACER_LOST ||
           type == TRACE_CHUNK_SUMMARY_INCREMENTS;
}

/* Writer: act on one chunk, in the order they came.  0 go on, 2 no file
 * could be opened (said), 3 malformed (writer_end says why).  A series
 * file is created at the first chunk that writes to it, so a peer that
 * sends only a handshake and notices costs no inode. */
static int write_chunk(struct conn *c, const struct proto_chunk *h, unsigned char *raw)
{
    c->chunks_written++;
    if (h->type == TRACE_CHUNK_CONTROL_ANSWER) { /* for the asker, not the files (its markers are in the events) */
        on_ctl_answer(c, raw);
        return 0;
    }
    if (h->type == TRACE_CHUNK_AUTH_HELLO || h->type == TRACE_CHUNK_AUTH_PROOF) { /* the key's exchange */
        on_auth(c, h->type, raw);
        return 0;
    }
    if (!c->opened) {
        int rc = take_intro(c, h, raw);
        /* A client that takes control is listed (its file opened) as soon
         * as its intro is whole, so `callsight ctl` reaches it before its
         * first events: a summary stream's come only with its first merged
         * snapshot. */
        if (rc == 1 && c->ctl_offered && c->have_resume && (!c->key_offered || c->have_key) &&
            (c->have_resume ? on_resume(c) : open_file(c, NULL)))
            return 2;
        if (rc)
            return rc == 1 ? 0 : rc;
        if (!writes_file(h->type)) {
            if (!proto_chunk_known(h->type))
                on_unknown(c, h);
            return 0; /* a heartbeat, a key out of place: nothing to write yet */
        }
        if (c->have_resume ? on_resume(c) : open_file(c, NULL))
            return 2;
    }
    if (!proto_chunk_known(h->type)) {
        on_unknown(c, h);
        return 0;
    }
    if (h->type == TRACE_CHUNK_SUMMARY_INCREMENTS)
        return on_summary_increments(c, h, raw);
    if (h->type == TRACE_CHUNK_EVENTS_CODED) {
        /* Decoded here, not by the reader: measured as fast as the other split,
         * and the records are still in this core's cache for the write's copy. */
        wire_codec_decode(c->codec, raw, c->decoded, h->raw_len / TRACE_EVENT_SIZE);
        on_events(c, h, c->decoded);
    } else if (proto_chunk_has_events(h->type)) {
        on_events(c, h, raw);
    }
    else if (h->type == TRACE_CHUNK_NOTICE)
        on_notice(c, raw);
    else if (h->type == TRACE_CHUNK_TRACER_LOST)
        on_tracer_lost(c, raw);
    /* a resume notice later in a connection changes nothing */
    maybe_status(c);
    return 0;
}

/*
 * When the summary snapshot open longest must have ended (0: none is open,
 * or no deadline): a snapshot's totals are held until its END, so a peer
 * that begins one and never ends it would hold them for good.
 */
static uint64_t snapshot_deadline(const struct conn *c, struct sums_open *open)
{
    if (!c->sums || c->o->snapshot_secs <= 0 || !sums_oldest_open(c->sums, open))
        return 0;
    return open->since_ms + (uint64_t)c->o->snapshot_secs * 1000u;
}

/*
 * The writer thread: every chunk the reader puts, in order, to the files.
 * Having no file to write to, a malformed chunk, or a summary snapshot
 * open past --snapshot-timeout, it quits the queue and shuts the socket's
 * reading side, so a reader waiting for a buffer or for the peer stops too.
 * The deadline is checked before every chunk, so chunks that keep coming
 * (heartbeats) do not put it off.
 */
static void *writer_main(void *arg)
{
    struct conn *c = arg;
    struct chunkq_item *it;
    struct sums_open open = {0, 0, 0};
    int rc = 0, late = 0;
    for (;;) {
        uint64_t by = snapshot_deadline(c, &open);
        late = by && net_now_ms() >= by;
        if (late || !(it = chunkq_take_by(c->q, by, &late)))
            break;
        rc = write_chunk(c, &it->h, it->buf);
        chunkq_release(c->q);
        if (rc)
            break;
    }
    if (late) {
        snprintf(c->writer_end, sizeof c->writer_end, "error: summary snapshot %" PRIu64 " of thread %" PRIu32
                 " still open after %d s (--snapshot-timeout)", open.seq, open.tid, c->o->snapshot_secs);
        rc = 3;
    }
    if (rc) {
        c->writer_rc = rc;
        chunkq_quit(c->q);
        shutdown(c->fd, SHUT_RD);
    }
    return NULL;
}

/* ---- end --------------------------------------------------------------- */

static void finish(struct conn *c)
{
    char extra[256] = "";
    size_t len = 0;
    const struct files *f = &c->file;
    if (!c->opened) {
        int evicted = c->gate && c->gate->evicted(c->gate->arg);
        say_pre("connection from %s closed before sending events: %" PRIu64 " bytes received in %" PRIu64
                " chunk%s%s%s%s%s", c->peer, c->received, c->chunks, c->chunks == 1 ? "" : "s",
                c->end[0] ? "; " : "", c->end,
                evicted ? "; evicted: its place went to a newer connection (--max-conns, --max-per-peer)" : "",
                c->stopped ? " (server stopping)" : "");
        return;
    }
    if (c->notices_quiet)
        say_dropped(c); /* the last count, before the close line */
    if (c->vanished_quiet)
        say_vanished(c);
    /* An abnormal end loses what was in flight: say so in the trace itself.
     * A resumable stream's loss is counted exactly if it comes back. */
    if (c->end[0])
        report_news(c, c->slot >= 0 ? files_mark(&c->file, TRACE_MARK_STREAM_CUT, c->stream_received)
                                    : files_mark(&c->file, TRACE_MARK_STREAM_GAP, 0));
    files_close(&c->file);
    resume_release(c->slot, f->id, f->seq + 1, c->stream_received);
    if (f->discarded)
        len += (size_t)snprintf(extra + len, sizeof extra - len, ", %" PRIu64 " events discarded (%s)",
                                f->discarded, f->error[0] ? "write failed" : f->low_space ? "disk low"
                                : f->total_cap ? "directory cap reached" : "budget reached");
    if (c->unknown && len < sizeof extra)
        len += (size_t)snprintf(extra + len, sizeof extra - len, ", %" PRIu64 " unknown chunks skipped", c->unknown);
    if (c->waits && len < sizeof extra)
        snprintf(extra + len, sizeof extra - len, ", tracers waited %.3f ms for the ring in %" PRIu64 " flushes",
                 (double)c->waited_ns / 1e6, c->waits);
    say("conn %u closed (%s): %" PRIu64 " events, %u segment%s, %" PRIu64 " bytes written, %" PRIu64
        " bytes received, dropped %" PRIu64 "%s%s%s%s",
        (unsigned)f->id, c->peer, f->events, (unsigned)files_segments(f),
        files_segments(f) == 1 ? "" : "s", f->total_bytes, c->received, c->dropped, extra,
        c->end[0] ? "; " : "", c->end, c->stopped ? " (server stopping)" : "");
}

void conn_serve(int fd, const char *peer, const struct conn_opts *o, uint64_t accepted_ms,
                       const struct conn_gate *gate)
{
    struct conn c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    c.peer = peer;
    c.o = o;
    c.slot = -1;
    c.accepted_ms = accepted_ms;
    c.gate = gate;
    int rc = start(&c);
    if (rc < 0)
        return;
    while (rc == 0)
        rc = read_chunk(&c);
    /* Sampled here, not at the closing line: a peer that had ended before
     * the stop was not cut by it, however long the writer takes after. */
    c.stopped = atomic_load(o->stopping);
    /* The writer gets everything read so far; finish waits for it. */
    if (c.writer_running) {
        chunkq_close(c.q);
        pthread_join(c.writer, NULL);
        if (c.writer_rc)
            rc = c.writer_rc;
        if (c.writer_rc == 3)
            snprintf(c.end, sizeof c.end, "%s", c.writer_end); /* not the reader's cut that followed */
    }
    listed_remove(&c); /* the writer, which lists it, is done; the caller closes the socket after */
    if (rc != 2)
        finish(&c);
    else
        resume_abandon(c.slot);
    ZSTD_freeDCtx(c.dctx);
    chunkq_free(c.q);
    free(c.frame);
    free(c.decoded);
    free(c.codec);
    sums_free(c.sums);
}
