/*
 * conn.h - one trace_stream connection, from handshake to close.
 *
 * callsight serve runs conn_serve() in a thread per accepted socket.
 * It reads and checks the handshake, claims a connection id and its trace
 * file (only after a valid handshake, at the first chunk, continuing the
 * series of an earlier connection of the same stream), then reads, checks, decompresses and
 * appends chunks until the peer closes, on two threads: the calling one
 * reads and decompresses, a writer thread it starts and joins before it
 * returns decodes and appends.  A malformed stream ends only its own
 * connection; what was written stays valid.  Everything it has to say goes to
 * stdout as one line each, prefixed "callsight serve: ".
 */
#ifndef CALLSIGHT_CONN_H
#define CALLSIGHT_CONN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_wire.h"

struct conn_opts {
    const char *dir;         /* output directory, prepared by files_init_dir */
    uint64_t seg_bytes;      /* rotate segments at this size */
    uint64_t budget_bytes;   /* per-connection cap on all its files */
    int quiet;               /* no periodic status lines */
    int status_secs;         /* interval of the status lines */
    const atomic_int *stopping; /* set when serve shuts down, for the close line */
    int idle_secs;           /* close a connection silent this long; 0 never */
    uint64_t min_free_bytes; /* stop writing below this much free space; 0 never */
    uint64_t min_free_inodes; /* ... or below this many free inodes; 0 never */
    uint64_t total_bytes;    /* the directory's cap (all connections, files_set_limits) */
    int snapshot_secs;       /* close a connection whose summary snapshot stays open this long; 0 never */
};

/* serve's say in a connection's life, for its caps. */
struct conn_gate {
    /* The handshake is valid: 0 admits the connection, else it is refused,
     * with why (one line, said by the connection). */
    int (*admit)(void *arg, char *why, size_t why_len);
    /* Its first chunk of events has begun (its file opens when the chunk
     * is whole): from now on it holds its place (until then it may be
     * closed to make room, like one still shaking hands).  Called once. */
    void (*writing)(void *arg);
    /* Was it closed to make room?  For its close line. */
    int (*evicted)(void *arg);
    void *arg;
};

/* Serve one connection to its end; the caller closes fd afterwards.
 * accepted_ms (net_now_ms) starts the handshake's deadline. */
void conn_serve(int fd, const char *peer, const struct conn_opts *o, uint64_t accepted_ms,
                       const struct conn_gate *gate);

/* A line about a connection without an id (refused, evicted, no
 * handshake): at most 20 per 2 s are printed, the rest counted in one
 * line.  serve calls conn_say_flush now and then to print that. */
void conn_say_limited(const char *fmt, ...);
void conn_say_flush(void);

/*
 * Ask the flight recorders among the connections (id 0: all of them, else
 * conn id) for a snapshot: a snapshot request to each that took the offer
 * (TRACE_ACK_SNAPSHOT_REQUESTS), never blocking.  Fills sent[] with the ids
 * reached (at most max) and returns how many; *takers_seen counts those
 * that take requests, reached or not (a full socket buffer).
 */
size_t conn_request_snapshot(uint32_t id, uint32_t *sent, size_t max, size_t *takers_seen);

/*
 * Live control (docs/control.md): send a request body (trace_wire.h,
 * trace_stream_ctl_body_t and its addresses) to connection id (0: the one
 * connection that takes control) and wait, bounded, for its answer.  One
 * caller at a time (serve's control socket).  Returns CONN_CTL_*; res
 * holds the connection reached, the answer, and why when not applied.
 */
enum { CONN_CTL_APPLIED = 0, CONN_CTL_REFUSED = 1, CONN_CTL_UNREACHABLE = 2, CONN_CTL_PENDING = 3 };
struct conn_ctl_result {
    uint32_t id;
    trace_stream_ctl_answer_t answer;
    char why[160];
};
int conn_control(uint32_t id, const unsigned char *body, size_t len, struct conn_ctl_result *res);

/* The connections writing now, for `callsight ctl DIR --list`: whether each
 * takes control (takes 1; 2: it offers control, but serve has a key it has
 * not proved, so nothing is relayed to it), and its last answer (answered
 * 0: none yet). */
struct conn_ctl_entry {
    uint32_t id;
    int takes;    /* 0 no control; 1 takes it; with serve's key, 2 proved it, 3 did not (nothing relayed) */
    int answered;
    trace_stream_ctl_answer_t last;
};
size_t conn_ctl_list(struct conn_ctl_entry *out, size_t max);

/* A connection writing a file, and the bytes read from its socket so far
 * (handshake and chunks, compressed: what crossed the link). */
struct conn_wire {
    uint32_t id;
    uint64_t bytes;
};
#define CONN_LISTED_MAX 1024 /* connections listed at once; more write, unlisted */
/* The connections writing files now, at most max of them, in out; how many. */
size_t conn_wire(struct conn_wire *out, size_t max);

#endif
