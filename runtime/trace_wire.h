/*
 * trace_wire.h - the stream wire protocol: trace_stream -> callsight serve.
 *
 *   traced process --(POSIX shm ring, trace_shm.h)--> trace_stream --(TCP, here)--> callsight serve
 *
 * The wire protocol (trace_stream -> serve, little-endian): one 64-byte
 * handshake, then chunks of a 12-byte header and one zstd frame each.  The
 * only bytes a server ever sends back are the 16-byte ack, once, and only
 * to a client whose handshake offered something (see below), and after it,
 * to a flight recorder that offered to take them, 16-byte snapshot
 * requests, and to a client that offered control, control requests.
 *
 * Below the layouts, as static inline functions, the one implementation
 * of what every party computes on them: little-endian fields, and the
 * event codec.  Needs only <stdint.h> and trace.h; C11.
 * TRACE_STREAM_VERSION is bumped on any layout change.  The traced program
 * never includes this: its runtime speaks only the ring.
 */
#ifndef CALLSIGHT_TRACE_WIRE_H
#define CALLSIGHT_TRACE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h" /* the event record the codec works on */

/* ---- wire protocol ----------------------------------------------------- */

#define TRACE_STREAM_MAGIC "TKSTREAM" /* exactly 8 chars, no NUL */
#define TRACE_STREAM_VERSION 2u
#define TRACE_STREAM_HANDSHAKE_SIZE 64u
#define TRACE_STREAM_CHUNK_HEADER_SIZE 12u
/* Largest raw_len a client sends and a server accepts (one chunk). */
#define TRACE_STREAM_MAX_RAW (4u * 1024u * 1024u)

typedef struct trace_stream_handshake {
    char magic[8];        /* "TKSTREAM" */
    uint32_t version;     /* TRACE_STREAM_VERSION; > 0xffff means byte-swapped */
    uint32_t event_size;  /* TRACE_EVENT_SIZE */
    uint32_t flags;       /* TRACE_FLAG_* of the tracer's timestamps */
    uint32_t pad;         /* zero */
    uint64_t load_bias;   /* as in the ring header */
    uint64_t tick_hz;
    uint64_t t0_ticks;
    uint64_t t0_ns;
    uint64_t hook_ns;
} trace_stream_handshake_t;

_Static_assert(sizeof(trace_stream_handshake_t) == TRACE_STREAM_HANDSHAKE_SIZE, "handshake is 64 bytes");
_Static_assert(offsetof(trace_stream_handshake_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_stream_handshake_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_stream_handshake_t, event_size) == 12, "event_size at 12");
_Static_assert(offsetof(trace_stream_handshake_t, flags) == 16, "flags at 16");
_Static_assert(offsetof(trace_stream_handshake_t, pad) == 20, "pad at 20");
_Static_assert(offsetof(trace_stream_handshake_t, load_bias) == 24, "load_bias at 24");
_Static_assert(offsetof(trace_stream_handshake_t, tick_hz) == 32, "tick_hz at 32");
_Static_assert(offsetof(trace_stream_handshake_t, t0_ticks) == 40, "t0_ticks at 40");
_Static_assert(offsetof(trace_stream_handshake_t, t0_ns) == 48, "t0_ns at 48");
_Static_assert(offsetof(trace_stream_handshake_t, hook_ns) == 56, "hook_ns at 56");

/*
 * Handshake flag, outside the TRACE_FLAG_* range of the tracer's own flags:
 * the client can send TRACE_CHUNK_EVENTS_CODED and reads the socket for a
 * trace_stream_ack_t.  A server never copies it into a file header.  An
 * older server ignores it and never acks, so the client stays on plain
 * TRACE_CHUNK_EVENTS chunks; an older client never sets it, so a server
 * writes nothing to it.
 */
#define TRACE_STREAM_FLAG_CODEC_OFFER 0x100u

/*
 * Handshake flag: the client may carry summary snapshots (records of kind
 * TRACE_KIND_SUMMARY, trace.h) and reads the socket for a trace_stream_ack_t
 * whose `features` has TRACE_ACK_SUMMARIES.  It holds the ring back for at
 * most TRACE_ACK_WAIT_MS after the handshake waiting for that answer (a
 * thread's one snapshot may be all there is of it), and never past half
 * full; without the bit by then (an older server, which sends no ack or
 * one with features 0) it sends no summary records, counts them as dropped
 * in its notices, and says so.  An older client never sets the flag and a server sends it
 * nothing new.
 */
#define TRACE_STREAM_FLAG_SUMMARY_OFFER 0x200u
#define TRACE_ACK_WAIT_MS 2000u

/*
 * Handshake flag: the client is a flight recorder (trace_stream
 * --flight-recorder, its main connection) and takes snapshot requests from
 * the host: it reads the socket for a trace_stream_ack_t and, if the ack's
 * features has TRACE_ACK_SNAPSHOT_REQUESTS, for trace_stream_request_t
 * messages after it, each asking for one snapshot (`callsight trigger`).
 * A server that predates it never sets the bit and sends no request; a
 * client that predates it never sets the flag and gets none.
 */
#define TRACE_STREAM_FLAG_REQUEST_OFFER 0x400u

/*
 * Handshake flag: right after the first TRACE_CHUNK_RESUME of every
 * connection the client sends a TRACE_CHUNK_RESUME_KEY, the stream's
 * secret: 16 random bytes chosen when the stream starts, the same on every
 * connection of it, never written to a file.  A server that knows the flag
 * ties the stream to the key: a later connection continues the stream's
 * series, or takes over a live connection of it, only with the same key
 * (a forged resume gets a series of its own).  Such a server reads the key
 * as the connection's second chunk before it decides where the files go; a
 * connection that offered the flag and sends anything else there is
 * malformed.  A server that predates the flag skips the key as an unknown
 * chunk; a client that predates it sends none, and a server then lets only
 * the same peer address take over a live connection of that stream.
 */
#define TRACE_STREAM_FLAG_RESUME_KEY 0x800u

/*
 * Handshake flag: the client takes live-control requests (trace_stream
 * --allow-control, whose ring has a control block, trace_shm.h; see
 * docs/control.md): it reads the socket for a trace_stream_ack_t and, if
 * the ack's features has TRACE_ACK_CONTROL, for trace_stream_ctl_request_t
 * after it (among snapshot requests, told apart by their magic), and
 * answers each with a TRACE_CHUNK_CONTROL_ANSWER.  A server that predates
 * it never sets the bit, sends no request and gets no answer; a client
 * that predates it never sets the flag and gets none.
 */
#define TRACE_STREAM_FLAG_CONTROL_OFFER 0x1000u

/*
 * Handshake flag, with TRACE_STREAM_FLAG_CONTROL_OFFER: the client holds a
 * pre-shared key (trace_stream --auth-key) and takes control only from a
 * server that proves it has the same key (docs/control.md,
 * "Authentication").  Right after its intro chunks (the resume notice and,
 * if offered, the resume key) it sends TRACE_CHUNK_AUTH_HELLO, its nonce.
 * A server with the key acks with TRACE_ACK_AUTH and answers the hello
 * with a trace_stream_auth_t (magic TKAUTH, among requests): its nonce and
 * its proof; the client checks it and sends TRACE_CHUNK_AUTH_PROOF, its
 * own.  From then on every control request carries, after its body, the
 * HMAC-SHA-256 of its head and body under the session key; the client
 * refuses any other.  The key never crosses the wire.  A server that
 * predates the flag (or has no key) sends no TKAUTH, and the client then
 * refuses every control request it sends; a server with a key relays
 * control only to clients that proved it.
 */
#define TRACE_STREAM_FLAG_AUTH_OFFER 0x2000u

/*
 * The server's answer to TRACE_STREAM_FLAG_CODEC_OFFER and
 * TRACE_STREAM_FLAG_SUMMARY_OFFER (either or both), sent once right after
 * it has read and accepted the handshake, little-endian.  The client
 * never waits for it: it polls its socket (non-blocking) before each events
 * chunk and sends TRACE_CHUNK_EVENTS_CODED only from the chunk after the ack
 * arrived whole.
 */
#define TRACE_STREAM_ACK_MAGIC "TKACK" /* 5 chars, NUL-padded to 8 */
#define TRACE_STREAM_ACK_SIZE 16u
#define TRACE_CODEC_STACK_SHUFFLE 0x1u /* codecs bit: TRACE_CHUNK_EVENTS_CODED as below */

#define TRACE_ACK_SUMMARIES 0x1u /* features bit: the server writes summary records */
#define TRACE_ACK_SUMMARY_INCREMENTS 0x2u /* features bit: ... and takes TRACE_CHUNK_SUMMARY_INCREMENTS */
#define TRACE_ACK_SNAPSHOT_REQUESTS 0x4u  /* features bit: the server may send trace_stream_request_t */
#define TRACE_ACK_CONTROL 0x8u            /* features bit: the server may send trace_stream_ctl_request_t */
#define TRACE_ACK_AUTH 0x10u              /* features bit: the server has the key, a trace_stream_auth_t follows
                                             the client's hello (TRACE_STREAM_FLAG_AUTH_OFFER) */

typedef struct trace_stream_ack {
    char magic[8];     /* "TKACK\0\0\0" */
    uint32_t codecs;   /* TRACE_CODEC_* the server decodes (0 when the codec was not offered);
                          a client uses only bits it knows */
    uint32_t features; /* TRACE_ACK_* (zero from servers that predate them) */
} trace_stream_ack_t;

_Static_assert(sizeof(trace_stream_ack_t) == TRACE_STREAM_ACK_SIZE, "ack is 16 bytes");
_Static_assert(offsetof(trace_stream_ack_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_stream_ack_t, codecs) == 8, "codecs at 8");
_Static_assert(offsetof(trace_stream_ack_t, features) == 12, "features at 12");

/*
 * Server to client, after an ack with TRACE_ACK_SNAPSHOT_REQUESTS: take a
 * flight-recorder snapshot now (cause TRACE_SNAPSHOT_REQUEST).  The client
 * bounds them like any trigger (--max-triggers); bytes that are not a
 * request end its reading of requests, never the stream.
 */
#define TRACE_STREAM_REQUEST_MAGIC "TKSNAP" /* 6 chars, NUL-padded to 8 */
#define TRACE_STREAM_REQUEST_SIZE 16u

typedef struct trace_stream_request {
    char magic[8];   /* "TKSNAP\0\0" */
    uint32_t seq;    /* the server's count of requests on this connection: 1, 2, ... */
    uint32_t pad;    /* zero */
} trace_stream_request_t;

_Static_assert(sizeof(trace_stream_request_t) == TRACE_STREAM_REQUEST_SIZE, "request is 16 bytes");
_Static_assert(offsetof(trace_stream_request_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_stream_request_t, seq) == 8, "seq at 8");
_Static_assert(offsetof(trace_stream_request_t, pad) == 12, "pad at 12");

/*
 * Server to client, after an ack with TRACE_ACK_CONTROL: a whole new
 * live-control setting (docs/control.md) for the client's ring.  The
 * 16-byte head (its size that of a snapshot request, so a reader takes 16
 * bytes and looks at the magic), then `len` bytes of body: a
 * trace_stream_ctl_body_t and its nfuncs link-time addresses (u64 each) of
 * the program build_id names, then threads_len bytes of thread globs (no
 * NUL), len = 48 + 8 * nfuncs + threads_len exactly.  With
 * TRACE_STREAM_CTL_TRIGGER in flags, 16 more bytes come right after the
 * 48, before the addresses: the trigger's function (link-time, of the
 * program build_id names; 0: no trigger at all) and its limit in ns
 * (nonzero with a function), u64 each; a trace_stream that predates the
 * flag refuses the request ("flags this trace_stream does not know").
 * With TRACE_STREAM_CTL_RECORDER, 8 bytes after those (below).  A body that
 * is not that (wire_ctl_parse) is refused whole: nothing changes; a head
 * that is not a request, or a len above TRACE_STREAM_CTL_BODY_MAX, ends the
 * client's reading of requests, never the stream.
 */
#define TRACE_STREAM_CTL_MAGIC "TKCTL" /* 5 chars, NUL-padded to 8 */
#define TRACE_STREAM_CTL_HEAD_SIZE 16u
#define TRACE_STREAM_CTL_FIXED 48u
#define TRACE_STREAM_CTL_THREADS_MAX 255u /* bytes of thread globs, as trace_shm.h's TRACE_CTL_THREADS_MAX */
#define TRACE_STREAM_CTL_FUNCS_MAX 4096u /* as trace_shm.h's TRACE_CTL_FUNCS_MAX */
#define TRACE_STREAM_CTL_TRIGGER_SIZE 16u
#define TRACE_STREAM_CTL_RECORDER_SIZE 8u
#define TRACE_STREAM_CTL_BODY_MAX \
    (TRACE_STREAM_CTL_FIXED + TRACE_STREAM_CTL_TRIGGER_SIZE + TRACE_STREAM_CTL_RECORDER_SIZE + \
     8u * TRACE_STREAM_CTL_FUNCS_MAX + TRACE_STREAM_CTL_THREADS_MAX)
#define TRACE_STREAM_CTL_KEEP 0x1u  /* what: the functions stay as set (pause, resume); nfuncs 0 */
#define TRACE_STREAM_CTL_FLAGS 0xffu /* the flags a request may carry (trace_shm.h TRACE_CTL_*, and RECORDER) */
/* The ring's flight recorder on or off (trace_shm.h), a change of its own:
 * with TRACE_STREAM_CTL_KEEP and no other flag, nfuncs 0, no threads; the
 * 8 bytes after the 48 are `recorder` (u32: 1 on, 2 off) and zero (u32).
 * Not a setting: the generation stays.  In an answer's flags: the
 * recorder is on (the ring keeps only its most recent events). */
#define TRACE_STREAM_CTL_RECORDER 0x80u
#define TRACE_STREAM_CTL_RECORDER_ON 1u
#define TRACE_STREAM_CTL_RECORDER_OFF 2u
#define TRACE_STREAM_CTL_TRIGGER 0x20u /* = TRACE_CTL_TRIGGER: the 16 bytes of a trigger follow the 48 */
#define TRACE_STREAM_CTL_MODE 0x40u    /* = TRACE_CTL_MODE: `mode` is 1 events or 2 summary */
#define TRACE_STREAM_CTL_THREADS 0x10u /* = TRACE_CTL_THREADS: set exactly when threads_len > 0 */
#define TRACE_STREAM_CTL_UNDER 0x8u /* = TRACE_CTL_UNDER: only calls under `under`, `depth` levels */

typedef struct trace_stream_ctl_request {
    char magic[8]; /* "TKCTL\0\0\0" */
    uint32_t seq;  /* the server's count of control requests on this connection: 1, 2, ... */
    uint32_t len;  /* bytes of body that follow */
} trace_stream_ctl_request_t;

typedef struct trace_stream_ctl_body {
    uint32_t flags;       /* TRACE_CTL_*: paused, off, only, under */
    uint32_t nfuncs;      /* addresses after this, at most TRACE_STREAM_CTL_FUNCS_MAX */
    uint32_t what;        /* TRACE_STREAM_CTL_KEEP or 0 */
    uint32_t depth;       /* under: levels below it recorded (0xffffffff: all); else zero */
    uint64_t build_id[2]; /* the program the addresses are of, bytes 0-15 (zero: any) */
    uint64_t under;       /* under: the function, link-time; else zero */
    uint32_t threads_len; /* bytes of thread globs after the addresses (0: every thread) */
    uint32_t mode;        /* with TRACE_STREAM_CTL_MODE: 1 events, 2 summary; else zero */
} trace_stream_ctl_body_t;

_Static_assert(sizeof(trace_stream_ctl_request_t) == TRACE_STREAM_CTL_HEAD_SIZE, "control head is 16 bytes");
_Static_assert(TRACE_STREAM_CTL_HEAD_SIZE == TRACE_STREAM_REQUEST_SIZE, "read as a snapshot request is");
_Static_assert(offsetof(trace_stream_ctl_request_t, seq) == 8, "seq at 8");
_Static_assert(offsetof(trace_stream_ctl_request_t, len) == 12, "len at 12");
_Static_assert(sizeof(trace_stream_ctl_body_t) == TRACE_STREAM_CTL_FIXED, "control body head is 48 bytes");
_Static_assert(offsetof(trace_stream_ctl_body_t, threads_len) == 40, "threads_len at 40");
_Static_assert(offsetof(trace_stream_ctl_body_t, depth) == 12, "depth at 12");
_Static_assert(offsetof(trace_stream_ctl_body_t, under) == 32, "under at 32");
_Static_assert(offsetof(trace_stream_ctl_body_t, nfuncs) == 4, "nfuncs at 4");
_Static_assert(offsetof(trace_stream_ctl_body_t, what) == 8, "what at 8");
_Static_assert(offsetof(trace_stream_ctl_body_t, build_id) == 16, "build_id at 16");

/*
 * Authentication (TRACE_STREAM_FLAG_AUTH_OFFER).  Each proof is the
 * HMAC-SHA-256, under the pre-shared key, of a 16-byte label, the client's
 * nonce and the server's (wire_auth_input); the session key is the same
 * with its own label.  Labels keep a proof of one side from passing for the
 * other's, fresh nonces on both sides keep one connection's proofs and
 * requests from being replayed on another.  A request's MAC is the
 * HMAC-SHA-256, under the session key, of its 16-byte head (len counting
 * the MAC) and its body; its seq only grows, so none is replayed within a
 * connection either.
 */
#define TRACE_STREAM_AUTH_MAGIC "TKAUTH" /* 6 chars, NUL-padded to 8 */
#define TRACE_STREAM_AUTH_NONCE 32u
#define TRACE_STREAM_AUTH_MAC 32u
#define TRACE_STREAM_AUTH_BODY (TRACE_STREAM_AUTH_NONCE + TRACE_STREAM_AUTH_MAC)
#define TRACE_STREAM_AUTH_LABEL 16u
#define TRACE_STREAM_AUTH_INPUT (TRACE_STREAM_AUTH_LABEL + 2u * TRACE_STREAM_AUTH_NONCE)
#define TRACE_AUTH_LABEL_SERVER "callsight-server" /* 16 chars each */
#define TRACE_AUTH_LABEL_CLIENT "callsight-client"
#define TRACE_AUTH_LABEL_SESSION "callsight-sessio"
#define TRACE_STREAM_AUTH_KEY_MIN 32u   /* bytes of a key file, at least */
#define TRACE_STREAM_AUTH_KEY_MAX 4096u /* ... and at most */

typedef struct trace_stream_auth {
    char magic[8];   /* "TKAUTH\0\0" */
    uint32_t seq;    /* zero */
    uint32_t len;    /* TRACE_STREAM_AUTH_BODY */
    unsigned char nonce[TRACE_STREAM_AUTH_NONCE]; /* the server's, random */
    unsigned char proof[TRACE_STREAM_AUTH_MAC];   /* HMAC(key, LABEL_SERVER, client nonce, server nonce) */
} trace_stream_auth_t;

_Static_assert(sizeof(trace_stream_auth_t) == TRACE_STREAM_REQUEST_SIZE + TRACE_STREAM_AUTH_BODY, "auth is 80 bytes");
_Static_assert(offsetof(trace_stream_auth_t, len) == 12, "len at 12, as a control request's");
_Static_assert(offsetof(trace_stream_auth_t, nonce) == 16, "nonce at 16");
_Static_assert(offsetof(trace_stream_auth_t, proof) == 48, "proof at 48");
_Static_assert(sizeof TRACE_AUTH_LABEL_SERVER - 1 == TRACE_STREAM_AUTH_LABEL &&
                   sizeof TRACE_AUTH_LABEL_CLIENT - 1 == TRACE_STREAM_AUTH_LABEL &&
                   sizeof TRACE_AUTH_LABEL_SESSION - 1 == TRACE_STREAM_AUTH_LABEL,
               "labels are 16 bytes");

/* The bytes a proof or the session key is the HMAC of. */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline void wire_auth_input(unsigned char out[TRACE_STREAM_AUTH_INPUT], const char *label,
                                   const unsigned char client[TRACE_STREAM_AUTH_NONCE],
                                   const unsigned char server[TRACE_STREAM_AUTH_NONCE])
{
    for (unsigned i = 0; i < TRACE_STREAM_AUTH_LABEL; i++)
        out[i] = (unsigned char)label[i];
    for (unsigned i = 0; i < TRACE_STREAM_AUTH_NONCE; i++) {
        out[TRACE_STREAM_AUTH_LABEL + i] = client[i];
        out[TRACE_STREAM_AUTH_LABEL + TRACE_STREAM_AUTH_NONCE + i] = server[i];
    }
}

/*
 * TRACE_CHUNK_CONTROL_ANSWER's payload (raw_len 128): what became of
 * control request seq.  Sent once the ring's threads applied it, or
 * TRACE_STREAM_CTL_WAIT_MS after it was written if none has (pending: a
 * thread applies it at its next hook), or at once when refused, with the
 * reason (NUL-terminated, printable ASCII).
 */
#define TRACE_STREAM_CTL_ANSWER_SIZE 128u
#define TRACE_STREAM_CTL_WAIT_MS 1000u
#define TRACE_CTL_ANSWER_APPLIED 0u
#define TRACE_CTL_ANSWER_REFUSED 1u
#define TRACE_CTL_ANSWER_PENDING 2u

typedef struct trace_stream_ctl_answer {
    uint32_t seq;      /* the request's */
    uint32_t status;   /* TRACE_CTL_ANSWER_* */
    uint64_t gen;      /* the generation written (0: refused) */
    uint64_t applied;  /* the highest generation a thread had applied when this was sent */
    uint32_t nfuncs;   /* functions in the setting now applied (under: its depth) */
    uint32_t flags;    /* its TRACE_CTL_* flags */
    char reason[96];   /* why refused; empty otherwise */
} trace_stream_ctl_answer_t;

_Static_assert(sizeof(trace_stream_ctl_answer_t) == TRACE_STREAM_CTL_ANSWER_SIZE, "answer is 128 bytes");
_Static_assert(offsetof(trace_stream_ctl_answer_t, gen) == 8, "gen at 8");
_Static_assert(offsetof(trace_stream_ctl_answer_t, applied) == 16, "applied at 16");
_Static_assert(offsetof(trace_stream_ctl_answer_t, nfuncs) == 24, "nfuncs at 24");
_Static_assert(offsetof(trace_stream_ctl_answer_t, reason) == 32, "reason at 32");

enum trace_chunk_type {
    TRACE_CHUNK_EVENTS = 0, /* raw_len bytes of event records (multiple of 32) */
    TRACE_CHUNK_NOTICE = 1, /* u64: the device's cumulative dropped-event count */
    /*
     * trace_stream_resume_t: who this stream is and what it has done so far.
     * Sent right after every handshake, so a server can tell a reconnecting
     * client's connection from a new one and, comparing with what it received
     * on the stream's earlier connections, count exactly what was lost in
     * between.  Servers that predate it skip it (unknown type).  A client
     * repeats it, unchanged, as a heartbeat when it has sent nothing for a
     * while; a server ignores all but a connection's first.
     */
    TRACE_CHUNK_RESUME = 2,
    /*
     * u64: how many tracer processes vanished without detaching (killed):
     * they still count in the ring's `writers` but none holds the ring's
     * liveness lock any more.  Whatever they had not flushed is lost, count
     * unknown.  The client sends it once, after draining the ring, and ends.
     */
    TRACE_CHUNK_TRACER_LOST = 3,
    /*
     * Event records in the "stack + shuffle" coding below: raw_len (after
     * zstd) is still 32 bytes per record, a multiple of 32.  Sent only after
     * the server's ack; a server that did not ack treats it as malformed.
     */
    TRACE_CHUNK_EVENTS_CODED = 4,
    /*
     * Summary snapshots as increments (below): raw_len (after zstd) is 32
     * bytes per record, a multiple of 32.  Sent only after an ack whose
     * features has TRACE_ACK_SUMMARY_INCREMENTS; a server that did not say
     * so treats it as malformed.
     */
    TRACE_CHUNK_SUMMARY_INCREMENTS = 5,
    /*
     * trace_stream_resume_key_t (raw_len 16): the stream's secret, right
     * after a connection's first TRACE_CHUNK_RESUME when the handshake had
     * TRACE_STREAM_FLAG_RESUME_KEY; never repeated with heartbeats.
     */
    TRACE_CHUNK_RESUME_KEY = 6,
    /*
     * trace_stream_ctl_answer_t (raw_len 128): the client's answer to a
     * control request; sent only after an ack with TRACE_ACK_CONTROL, so a
     * server that did not say so treats it as malformed.
     */
    TRACE_CHUNK_CONTROL_ANSWER = 7,
    /*
     * The client's nonce (raw_len 32, TRACE_STREAM_FLAG_AUTH_OFFER), once,
     * right after its intro chunks; a server that predates it skips it.
     */
    TRACE_CHUNK_AUTH_HELLO = 8,
    /*
     * The client's proof (raw_len 32): HMAC(key, LABEL_CLIENT, client
     * nonce, server nonce), once, after the server's trace_stream_auth_t
     * checked out; sent only to a server whose ack had TRACE_ACK_AUTH.
     */
    TRACE_CHUNK_AUTH_PROOF = 9
};

/*
 * TRACE_CHUNK_SUMMARY_INCREMENTS.  A cumulative snapshot (trace.h) resends
 * every count each time; on the wire, where one connection delivers in
 * order or not at all, a snapshot can instead say what changed since the
 * same tid's previous snapshot on this connection.  The server keeps each
 * tid's totals and writes every snapshot whole, as trace.h defines it, so
 * files and readers see ordinary snapshots.  The payload, once its bytes
 * are put back from planes (byte k of record i was sent at offset
 * k * n + i, as step 2 of the codec below), is n little-endian records of
 * kind TRACE_KIND_SUMMARY, with trace.h's parts, except that:
 *
 *   BEGIN    call_site = the functions listed in this increment
 *   FUNC     a function that changed: ts = inclusive ns gained, call_site
 *            = calls gained (func: its address, as always); one not
 *            listed is unchanged; a new one is added after the others
 *   TIMES    ts = self ns gained; func, call_site = min and max (whole)
 *   BUCKETS  counts gained, for the buckets that gained (indices rising)
 *   META, END  as in trace.h (whole values)
 *
 * State starts empty with each connection (a client starts its increments
 * from zero on every new connection), and a snapshot may span chunks.
 * These records are not among the stream's that a resume counts (sent,
 * discarded, received): one lost in a cut is superseded by the next
 * connection's first snapshot, which holds everything.  A
 * server bounds what it keeps per connection and closes one whose
 * increments are malformed or exceed that.
 */

/*
 * TRACE_CHUNK_EVENTS_CODED: a reversible per-chunk coding of n records that
 * makes them far more compressible (zstd finds runs of small numbers that
 * plain records hide).  Every chunk starts from empty state, so each decodes
 * alone.  Records are taken as little-endian fields (big-endian devices
 * convert first).
 *
 * 1. Record by record, in order, each record r becomes a coded record c.
 *    tid and kind select per-thread state, so c keeps bytes 24-31 (tid,
 *    kind, pad) exactly as they are.  The state is a table of
 *    TRACE_CODEC_THREAD_SLOTS slots indexed by tid % TRACE_CODEC_THREAD_SLOTS;
 *    a slot last used by another tid, or not yet used in this chunk, is
 *    first reset to all zero (ts, enter_func, depth, every stack entry).
 *    A slot holds: ts, enter_func, a u32 depth (modulo 2^32) and a stack of
 *    TRACE_CODEC_STACK_DEPTH (func, call_site) pairs, a circle: the top is
 *    entry (depth - 1) % TRACE_CODEC_STACK_DEPTH, all arithmetic u64 modulo
 *    2^64.
 *      c.ts = r.ts - ts;  then ts = r.ts                       (every kind)
 *      kind 0, enter:  c.func = r.func ^ enter_func
 *                      c.call_site = r.call_site - top.func
 *                      then depth += 1, top = (r.func, r.call_site),
 *                      enter_func = r.func
 *      kind 1, exit:   c.func = r.func ^ top.func
 *                      c.call_site = r.call_site ^ top.call_site
 *                      then depth -= 1
 *      other kinds:    c.func = r.func, c.call_site = r.call_site
 *    (An exit's func and call_site are nearly always the top's: they code
 *    as 0.  An enter's call_site lies in its caller, the top's func.)
 * 2. Byte transposition: byte k of coded record i goes to k * n + i, so the
 *    payload is 32 planes of n bytes each (the low timestamp bytes, then
 *    the next, ...).
 * Decoding inverts 2, then 1 record by record; any payload of a multiple
 * of 32 bytes decodes to some records (the coding is a bijection), so a
 * decoder needs no check beyond the length.
 */
#define TRACE_CODEC_THREAD_SLOTS 64u
#define TRACE_CODEC_STACK_DEPTH 64u
_Static_assert((TRACE_CODEC_THREAD_SLOTS & (TRACE_CODEC_THREAD_SLOTS - 1)) == 0, "slots: a power of 2");
_Static_assert((TRACE_CODEC_STACK_DEPTH & (TRACE_CODEC_STACK_DEPTH - 1)) == 0, "depth: a power of 2");

/*
 * Payload of TRACE_CHUNK_RESUME, little-endian like everything on the wire.
 * Counts are event records (enter, exit and markers alike) the client took
 * from the ring since the stream began, before this connection:
 *   sent       records in event chunks that were handed whole to the socket
 *   discarded  records taken from the ring but never sent whole: in a chunk
 *              whose sending failed (the link was cut), or held back by the
 *              client (a summary stream's) when it went; while no
 *              connection is up a client takes nothing (the ring keeps it)
 * The server received at most `sent` of them on the earlier connections, so
 * records lost = sent + discarded - received there, exactly.
 */
typedef struct trace_stream_resume {
    uint64_t stream_id; /* random, fixed for the life of one trace_stream */
    uint64_t start_ns;  /* CLOCK_REALTIME ns when that trace_stream started */
    uint32_t conn_seq;  /* 1 for the first connection, then 2, 3, ... */
    uint32_t pad;       /* zero */
    uint64_t sent;      /* records sent before this connection */
    uint64_t discarded; /* records taken but not sent before this connection */
} trace_stream_resume_t;

#define TRACE_STREAM_RESUME_SIZE 40u
_Static_assert(sizeof(trace_stream_resume_t) == TRACE_STREAM_RESUME_SIZE, "resume notice is 40 bytes");
_Static_assert(offsetof(trace_stream_resume_t, stream_id) == 0, "stream_id at 0");
_Static_assert(offsetof(trace_stream_resume_t, start_ns) == 8, "start_ns at 8");
_Static_assert(offsetof(trace_stream_resume_t, conn_seq) == 16, "conn_seq at 16");
_Static_assert(offsetof(trace_stream_resume_t, pad) == 20, "pad at 20");
_Static_assert(offsetof(trace_stream_resume_t, sent) == 24, "sent at 24");
_Static_assert(offsetof(trace_stream_resume_t, discarded) == 32, "discarded at 32");

/* Payload of TRACE_CHUNK_RESUME_KEY: see TRACE_STREAM_FLAG_RESUME_KEY. */
typedef struct trace_stream_resume_key {
    unsigned char key[16]; /* random bytes (getrandom or /dev/urandom), fixed for one trace_stream */
} trace_stream_resume_key_t;

#define TRACE_STREAM_RESUME_KEY_SIZE 16u
_Static_assert(sizeof(trace_stream_resume_key_t) == TRACE_STREAM_RESUME_KEY_SIZE, "resume key is 16 bytes");
_Static_assert(offsetof(trace_stream_resume_key_t, key) == 0, "key at 0");

typedef struct trace_stream_chunk_header {
    uint32_t type;     /* enum trace_chunk_type; unknown types are skipped */
    uint32_t raw_len;  /* bytes after decompression, <= TRACE_STREAM_MAX_RAW */
    uint32_t zstd_len; /* bytes of the one zstd frame that follows */
} trace_stream_chunk_header_t;

_Static_assert(sizeof(trace_stream_chunk_header_t) == TRACE_STREAM_CHUNK_HEADER_SIZE, "chunk header is 12 bytes");
_Static_assert(offsetof(trace_stream_chunk_header_t, type) == 0, "type at 0");
_Static_assert(offsetof(trace_stream_chunk_header_t, raw_len) == 4, "raw_len at 4");
_Static_assert(offsetof(trace_stream_chunk_header_t, zstd_len) == 8, "zstd_len at 8");

/* ---- little-endian fields ----------------------------------------------
 * Everything on the wire, and in trace files, is little-endian.  These
 * read and write one field at any address, byte by byte, so that they mean
 * the same on every host (gcc and clang make each one load or store).  The
 * _be readers are for a big-endian agent's own order (its handshake's
 * version does not fit in 16 bits) and for trace files written on such a
 * device.
 */
static inline uint16_t wire_le16(const unsigned char *p) { return (uint16_t)((unsigned)p[0] | (unsigned)p[1] << 8); }

static inline uint32_t wire_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t wire_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline uint32_t wire_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t wire_be64(const unsigned char *p) { return (uint64_t)wire_be32(p) << 32 | wire_be32(p + 4); }

static inline void wire_put_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void wire_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static inline void wire_put_le64(unsigned char *p, uint64_t v)
{
    wire_put_le32(p, (uint32_t)v);
    wire_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* ---- the codec: TRACE_CHUNK_EVENTS_CODED --------------------------------
 * The one implementation of the coding specified above: trace_stream
 * encodes with it on the device, serve decodes, and the tests, fuzzers and
 * benchmarks run exactly this.  Usage:
 *
 *   struct wire_codec *c = calloc(1, sizeof *c);  (zeroed; about 67 KiB)
 *   wire_codec_encode(c, records, coded, n);      (or wire_codec_decode)
 *
 * in and out hold n * TRACE_EVENT_SIZE bytes each and do not overlap;
 * records are little-endian fields (wire_le64).  Each call is one chunk,
 * from empty state.  Decoding cannot fail: state is bounded by the table
 * and nothing from the input is an index unmasked.
 *
 * Speed matters on both ends.  The prediction step is a few integer
 * operations per record on a direct-mapped table: nothing to clear per
 * chunk (a generation number marks earlier chunks' slots stale, and a bit
 * per stack entry stands in for zeroing the stack).  The planes are
 * written in tiles of WIRE_CODEC_TILE records, one 64-bit field at a time
 * as 8x8 byte transpositions: 8 write streams live rather than 32, which
 * for a 1 MiB chunk (n a power of 2) would all fall into one cache set and
 * evict each other (5x slower).  A tile's words (8 KiB) are the call's own
 * locals, which stores to out cannot alias: kept in the state instead,
 * they ran 10% slower.
 */
#define WIRE_CODEC_TILE 256u
_Static_assert(TRACE_CODEC_STACK_DEPTH <= 64, "one valid bit per stack entry in a u64");
_Static_assert(TRACE_EVENT_SIZE == 32, "a record is 4 words");
_Static_assert(WIRE_CODEC_TILE % 8 == 0, "whole transposition blocks per tile");

struct wire_codec_slot {
    uint32_t gen;   /* the chunk this state belongs to; any other: empty */
    uint32_t tid;
    uint32_t depth; /* modulo 2^32, as the format says */
    uint64_t ts, enter_func;
    uint64_t valid; /* bit k: stack entry k written since the reset; else it reads as 0 */
    uint64_t func[TRACE_CODEC_STACK_DEPTH], site[TRACE_CODEC_STACK_DEPTH];
};

struct wire_codec {
    uint32_t gen; /* this chunk's generation; 0 is never one */
    struct wire_codec_slot slot[TRACE_CODEC_THREAD_SLOTS];
};

/* A new chunk: every slot is stale. */
static inline void wire_codec_begin(struct wire_codec *c)
{
    if (++c->gen == 0) {
        for (unsigned k = 0; k < TRACE_CODEC_THREAD_SLOTS; k++)
            c->slot[k].gen = 0;
        c->gen = 1;
    }
}

static inline struct wire_codec_slot *wire_codec_slot_of(struct wire_codec *c, uint32_t tid)
{
    struct wire_codec_slot *s = &c->slot[tid & (TRACE_CODEC_THREAD_SLOTS - 1)];
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

/* The top of s's stack: its index, and all ones when written since the reset (else it reads as 0). */
static inline uint32_t wire_codec_top(const struct wire_codec_slot *s, uint64_t *keep)
{
    uint32_t k = (s->depth - 1u) & (TRACE_CODEC_STACK_DEPTH - 1);
    *keep = 0 - ((s->valid >> k) & 1u);
    return k;
}

static inline void wire_codec_push(struct wire_codec_slot *s, uint64_t func, uint64_t site)
{
    uint32_t k = s->depth & (TRACE_CODEC_STACK_DEPTH - 1);
    s->func[k] = func;
    s->site[k] = site;
    s->valid |= (uint64_t)1 << k;
    s->depth++;
    s->enter_func = func;
}

/* One record's words (ts, func, call_site, tid | kind << 32 | pad << 40), coded in place. */
static inline void wire_codec_encode_record(struct wire_codec *c, uint64_t w[4])
{
    struct wire_codec_slot *s = wire_codec_slot_of(c, (uint32_t)w[3]);
    unsigned kind = (unsigned)(w[3] >> 32) & 0xffu;
    uint64_t keep;
    uint32_t k = wire_codec_top(s, &keep);
    uint64_t ts = w[0];
    w[0] = ts - s->ts;
    s->ts = ts;
    if (kind == TRACE_KIND_ENTER) {
        uint64_t func = w[1], site = w[2];
        w[1] = func ^ s->enter_func;
        w[2] = site - (s->func[k] & keep);
        wire_codec_push(s, func, site);
    } else if (kind == TRACE_KIND_EXIT) {
        w[1] ^= s->func[k] & keep;
        w[2] ^= s->site[k] & keep;
        s->depth--;
    }
}

/* Its inverse: one coded record's words back to the record's, in place. */
static inline void wire_codec_decode_record(struct wire_codec *c, uint64_t w[4])
{
    struct wire_codec_slot *s = wire_codec_slot_of(c, (uint32_t)w[3]);
    unsigned kind = (unsigned)(w[3] >> 32) & 0xffu;
    uint64_t keep;
    uint32_t k = wire_codec_top(s, &keep);
    w[0] += s->ts;
    s->ts = w[0];
    if (kind == TRACE_KIND_ENTER) {
        w[1] ^= s->enter_func;
        w[2] += s->func[k] & keep;
        wire_codec_push(s, w[1], w[2]);
    } else if (kind == TRACE_KIND_EXIT) {
        w[1] ^= s->func[k] & keep;
        w[2] ^= s->site[k] & keep;
        s->depth--;
    }
}

/* The transposition's exchange: bits of x under mask << shift trade places with y's under mask. */
#define WIRE_CODEC_SWAP(x, y, shift, mask)                                                             \
    do {                                                                                               \
        uint64_t t_ = (((x) >> (shift)) ^ (y)) & (mask);                                               \
        (x) ^= t_ << (shift);                                                                          \
        (y) ^= t_;                                                                                     \
    } while (0)

/*
 * a_r's byte b becomes a_b's byte r, for 8 words a0..a7 (its own inverse):
 * swap 4x4, then 2x2, then 1x1 blocks.  A macro over the caller's locals,
 * not a function over an array, so that the compiler keeps all 8 words in
 * registers.
 */
#define WIRE_CODEC_TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7)                                          \
    do {                                                                                               \
        const uint64_t m32_ = UINT64_C(0x00000000ffffffff), m16_ = UINT64_C(0x0000ffff0000ffff);       \
        const uint64_t m8_ = UINT64_C(0x00ff00ff00ff00ff);                                             \
        WIRE_CODEC_SWAP(a0, a4, 32, m32_);                                                             \
        WIRE_CODEC_SWAP(a1, a5, 32, m32_);                                                             \
        WIRE_CODEC_SWAP(a2, a6, 32, m32_);                                                             \
        WIRE_CODEC_SWAP(a3, a7, 32, m32_);                                                             \
        WIRE_CODEC_SWAP(a0, a2, 16, m16_);                                                             \
        WIRE_CODEC_SWAP(a1, a3, 16, m16_);                                                             \
        WIRE_CODEC_SWAP(a4, a6, 16, m16_);                                                             \
        WIRE_CODEC_SWAP(a5, a7, 16, m16_);                                                             \
        WIRE_CODEC_SWAP(a0, a1, 8, m8_);                                                               \
        WIRE_CODEC_SWAP(a2, a3, 8, m8_);                                                               \
        WIRE_CODEC_SWAP(a4, a5, 8, m8_);                                                               \
        WIRE_CODEC_SWAP(a6, a7, 8, m8_);                                                               \
    } while (0)

/* 8 consecutive records' field j (coded words) to planes 8j .. 8j+7 at o (record i of n). */
static inline void wire_codec_block_to_planes(uint64_t (*w)[4], unsigned j, unsigned char *o, size_t n)
{
    uint64_t a0 = w[0][j], a1 = w[1][j], a2 = w[2][j], a3 = w[3][j];
    uint64_t a4 = w[4][j], a5 = w[5][j], a6 = w[6][j], a7 = w[7][j];
    WIRE_CODEC_TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7);
    wire_put_le64(o, a0);
    wire_put_le64(o + n, a1);
    wire_put_le64(o + 2 * n, a2);
    wire_put_le64(o + 3 * n, a3);
    wire_put_le64(o + 4 * n, a4);
    wire_put_le64(o + 5 * n, a5);
    wire_put_le64(o + 6 * n, a6);
    wire_put_le64(o + 7 * n, a7);
}

/* The inverse: planes 8j .. 8j+7 at p to 8 consecutive records' field j. */
static inline void wire_codec_planes_to_block(const unsigned char *p, size_t n, uint64_t (*w)[4], unsigned j)
{
    uint64_t a0 = wire_le64(p), a1 = wire_le64(p + n), a2 = wire_le64(p + 2 * n), a3 = wire_le64(p + 3 * n);
    uint64_t a4 = wire_le64(p + 4 * n), a5 = wire_le64(p + 5 * n), a6 = wire_le64(p + 6 * n);
    uint64_t a7 = wire_le64(p + 7 * n);
    WIRE_CODEC_TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7);
    w[0][j] = a0, w[1][j] = a1, w[2][j] = a2, w[3][j] = a3;
    w[4][j] = a4, w[5][j] = a5, w[6][j] = a6, w[7][j] = a7;
}

#undef WIRE_CODEC_TRANSPOSE8
#undef WIRE_CODEC_SWAP

static inline void wire_codec_load_record(const unsigned char *p, uint64_t w[4])
{
    for (unsigned j = 0; j < 4; j++)
        w[j] = wire_le64(p + 8 * j);
}

static inline void wire_codec_store_record(unsigned char *p, const uint64_t w[4])
{
    for (unsigned j = 0; j < 4; j++)
        wire_put_le64(p + 8 * j, w[j]);
}

/* Code n little-endian records from in into out (n * 32 bytes each, apart). */
static inline void wire_codec_encode(struct wire_codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    uint64_t w[WIRE_CODEC_TILE][4];
    size_t full = n - n % 8, i;
    wire_codec_begin(c);
    for (i = 0; i < full; i += WIRE_CODEC_TILE) {
        size_t m = full - i < WIRE_CODEC_TILE ? full - i : WIRE_CODEC_TILE;
        for (size_t t = 0; t < m; t++) {
            wire_codec_load_record(in + (i + t) * TRACE_EVENT_SIZE, w[t]);
            wire_codec_encode_record(c, w[t]);
        }
        for (unsigned j = 0; j < 4; j++)
            for (size_t t = 0; t < m; t += 8)
                wire_codec_block_to_planes(w + t, j, out + 8 * j * n + i + t, n);
    }
    for (i = full; i < n; i++) { /* the last n % 8 records, byte by byte */
        wire_codec_load_record(in + i * TRACE_EVENT_SIZE, w[0]);
        wire_codec_encode_record(c, w[0]);
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            out[k * n + i] = (unsigned char)(w[0][k / 8] >> (8 * (k % 8)));
    }
}

/* The inverse: n coded records from in into n little-endian records in out. */
static inline void wire_codec_decode(struct wire_codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    uint64_t w[WIRE_CODEC_TILE][4];
    size_t full = n - n % 8, i;
    wire_codec_begin(c);
    for (i = 0; i < full; i += WIRE_CODEC_TILE) {
        size_t m = full - i < WIRE_CODEC_TILE ? full - i : WIRE_CODEC_TILE;
        for (unsigned j = 0; j < 4; j++)
            for (size_t t = 0; t < m; t += 8)
                wire_codec_planes_to_block(in + 8 * j * n + i + t, n, w + t, j);
        for (size_t t = 0; t < m; t++) {
            wire_codec_decode_record(c, w[t]);
            wire_codec_store_record(out + (i + t) * TRACE_EVENT_SIZE, w[t]);
        }
    }
    for (i = full; i < n; i++) {
        uint64_t r[4] = {0, 0, 0, 0};
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            r[k / 8] |= (uint64_t)in[k * n + i] << (8 * (k % 8));
        wire_codec_decode_record(c, r);
        wire_codec_store_record(out + i * TRACE_EVENT_SIZE, r);
    }
}

/* ---- control requests ---------------------------------------------------
 * A request's body, as trace_stream takes it and callsight ctl writes it.
 */
struct wire_ctl {
    uint32_t flags, nfuncs, depth;
    uint32_t mode; /* TRACE_STREAM_CTL_MODE: 1 events, 2 summary */
    uint32_t recorder; /* TRACE_STREAM_CTL_RECORDER: _ON or _OFF */
    int keep;
    uint64_t build_id[2], under;
    uint64_t trig[2]; /* TRACE_STREAM_CTL_TRIGGER: the function (link-time; 0 none) and its limit in ns */
    char threads[TRACE_STREAM_CTL_THREADS_MAX + 1]; /* NUL-terminated; "" every thread */
};

/* Check a body of len bytes and take it apart, its addresses into funcs
 * (room for TRACE_STREAM_CTL_FUNCS_MAX): NULL, or why it is no request. */
static inline const char *wire_ctl_parse(const unsigned char *b, size_t len, struct wire_ctl *q, uint64_t *funcs)
{
    if (len < TRACE_STREAM_CTL_FIXED || len > TRACE_STREAM_CTL_BODY_MAX)
        return "its length is out of bounds";
    q->flags = wire_le32(b);
    q->nfuncs = wire_le32(b + 4);
    uint32_t what = wire_le32(b + 8);
    q->keep = (what & TRACE_STREAM_CTL_KEEP) != 0;
    q->build_id[0] = wire_le64(b + 16);
    q->build_id[1] = wire_le64(b + 24);
    q->depth = wire_le32(b + 12);
    q->under = wire_le64(b + 32);
    uint32_t tl = wire_le32(b + 40);
    size_t at = TRACE_STREAM_CTL_FIXED + (q->flags & TRACE_STREAM_CTL_TRIGGER ? TRACE_STREAM_CTL_TRIGGER_SIZE : 0u) +
                (q->flags & TRACE_STREAM_CTL_RECORDER ? TRACE_STREAM_CTL_RECORDER_SIZE : 0u);
    q->threads[0] = '\0';
    q->trig[0] = q->trig[1] = 0;
    q->recorder = 0;
    q->mode = wire_le32(b + 44);
    if (tl > TRACE_STREAM_CTL_THREADS_MAX)
        return "its thread globs are out of bounds";
    if (q->nfuncs > TRACE_STREAM_CTL_FUNCS_MAX || len != at + 8u * (size_t)q->nfuncs + tl)
        return "its count of functions does not match its length";
    if (q->flags & TRACE_STREAM_CTL_TRIGGER) {
        q->trig[0] = wire_le64(b + TRACE_STREAM_CTL_FIXED);
        q->trig[1] = wire_le64(b + TRACE_STREAM_CTL_FIXED + 8u);
    }
    if (q->flags & TRACE_STREAM_CTL_RECORDER) {
        const unsigned char *rb = b + at - TRACE_STREAM_CTL_RECORDER_SIZE;
        q->recorder = wire_le32(rb);
        if ((q->recorder != TRACE_STREAM_CTL_RECORDER_ON && q->recorder != TRACE_STREAM_CTL_RECORDER_OFF) ||
            wire_le32(rb + 4))
            return "its flight-recorder switch is neither on nor off";
        if (q->flags != TRACE_STREAM_CTL_RECORDER || !q->keep || q->nfuncs || tl)
            return "a flight-recorder switch is a change of its own";
    }
    const unsigned char *g = b + at + 8u * (size_t)q->nfuncs;
    for (uint32_t i = 0; i < tl; i++) {
        if (g[i] < 0x20 || g[i] >= 0x7f)
            return "its thread globs are not printable text";
        q->threads[i] = (char)g[i];
    }
    q->threads[tl] = '\0';
    if (what & ~TRACE_STREAM_CTL_KEEP)
        return "it asks for something this trace_stream does not know";
    if (q->flags & ~TRACE_STREAM_CTL_FLAGS)
        return "it sets flags this trace_stream does not know";
    if ((q->flags & TRACE_STREAM_CTL_UNDER) && !q->keep && (!q->under || q->nfuncs || (q->flags & 0x6u)))
        return "a subtree needs its function, and goes with no set of functions";
    if (!(q->flags & TRACE_STREAM_CTL_UNDER) && (q->under || q->depth))
        return "it names a subtree without asking for one";
    if (!(q->flags & TRACE_STREAM_CTL_THREADS) != !tl || (q->keep && tl))
        return "its thread globs do not match its flags";
    if (q->keep && q->nfuncs)
        return "it keeps the functions as set and names some too";
    if ((q->flags & TRACE_STREAM_CTL_TRIGGER) && (q->keep || (q->trig[0] && !q->trig[1]) || (!q->trig[0] && q->trig[1])))
        return "its trigger is not a function with a limit above 0, or none";
    if ((q->flags & TRACE_STREAM_CTL_MODE) ? q->keep || (q->mode != 1u && q->mode != 2u) : q->mode != 0u)
        return "its mode is neither events nor summary";
    for (uint32_t i = 0; i < q->nfuncs; i++)
        if (!(funcs[i] = wire_le64(b + at + 8u * i)))
            return "it names a function at address 0";
    return NULL;
}

/* The body for q (its flags' THREADS bit as q->threads says, its TRIGGER
 * bit whether q->trig goes in) and its nfuncs addresses into b (room for
 * TRACE_STREAM_CTL_BODY_MAX); its length. */
static inline size_t wire_ctl_encode(unsigned char *b, const struct wire_ctl *q, const uint64_t *funcs)
{
    wire_put_le32(b, q->flags);
    wire_put_le32(b + 4, q->nfuncs);
    wire_put_le32(b + 8, q->keep ? TRACE_STREAM_CTL_KEEP : 0u);
    wire_put_le32(b + 12, q->depth);
    wire_put_le64(b + 16, q->build_id[0]);
    wire_put_le64(b + 24, q->build_id[1]);
    wire_put_le64(b + 32, q->under);
    size_t tl = 0;
    while (tl < TRACE_STREAM_CTL_THREADS_MAX && q->threads[tl])
        tl++;
    wire_put_le32(b + 40, (uint32_t)tl);
    wire_put_le32(b + 44, q->mode);
    size_t at = TRACE_STREAM_CTL_FIXED;
    if (q->flags & TRACE_STREAM_CTL_TRIGGER) {
        wire_put_le64(b + at, q->trig[0]);
        wire_put_le64(b + at + 8u, q->trig[1]);
        at += TRACE_STREAM_CTL_TRIGGER_SIZE;
    }
    if (q->flags & TRACE_STREAM_CTL_RECORDER) {
        wire_put_le32(b + at, q->recorder);
        wire_put_le32(b + at + 4u, 0u);
        at += TRACE_STREAM_CTL_RECORDER_SIZE;
    }
    for (uint32_t i = 0; i < q->nfuncs; i++)
        wire_put_le64(b + at + 8u * i, funcs[i]);
    for (size_t i = 0; i < tl; i++)
        b[at + 8u * (size_t)q->nfuncs + i] = (unsigned char)q->threads[i];
    return at + 8u * (size_t)q->nfuncs + tl;
}

#endif /* CALLSIGHT_TRACE_WIRE_H */
