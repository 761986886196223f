/*
 * resume.h - where a reconnecting stream's records go, and how many serve
 * received of it before: the one module serve asks about resume.
 *
 * A trace_stream client names its stream (random id + start time) in a
 * TRACE_CHUNK_RESUME after every handshake, and may add a resume key
 * (trace_wire.h).  A connection claims its stream with resume_claim at its
 * first chunk and learns whether it continues an earlier connection's file
 * series (which one, from which segment) and how many records serve
 * received on the stream's earlier connections, so that its loss is
 * counted exactly; it lets go with resume_release when it ends.
 *
 * Two places know streams:
 *   - the registry, in memory: per stream the connection id of its series,
 *     the next segment number and the records received.  A connection
 *     holds its stream's entry while it runs; a newer connection of the
 *     same stream (the device reconnected, so the old link is dead even if
 *     TCP has not noticed) shuts the old socket down and waits, bounded,
 *     for it to let go.  At most RESUME_REGISTRY_MAX entries: the least
 *     recently used idle one makes room.
 *   - the disk, for a serve restarted into the same directory: every series
 *     serve starts for a resumable stream begins with a TRACE_MARK_STREAM_ID
 *     marker naming it (and TRACE_MARK_STREAM_KEY, its key's hash), so the
 *     seq-0 segments' first records say which series belong to the stream,
 *     and their records say how many serve received: the device records,
 *     all but the markers serve wrote itself (tid 0).  That is exact unless
 *     a connection stopped writing (budget, disk floor, write error): what
 *     it then read but discarded is on no disk.  Bounded, and no work for a
 *     stranger: the directory is scanned once, at startup, into an index
 *     (resume_index_build); serve adds the series it starts
 *     (resume_index_add).  Only a stream found there, with its key, costs
 *     one pass with a fixed buffer over its own files (at most
 *     RESUME_SERIES_MAX series).  Files are opened relative to serve's
 *     directory, without following symlinks or blocking, and must be
 *     regular files.
 *
 * Nobody else may take a stream over: one that sent a resume key is
 * claimed again only with the same key (its hash is kept, never the key);
 * one without a key is taken over while a connection of it runs only from
 * the same peer address.  Nothing here prints: what is worth saying comes
 * back to the connection.
 */
#ifndef CALLSIGHT_RESUME_H
#define CALLSIGHT_RESUME_H

#include <stdint.h>

#include "trace_wire.h"

#define RESUME_REGISTRY_MAX 256
#define RESUME_SERIES_MAX 16
#define RESUME_INDEX_MAX (1u << 20) /* series indexed; more are not resumable after a restart */

/* Who claims a stream. */
struct resume_who {
    uint64_t id, start_ns; /* the stream, from its resume notice */
    int keyed;             /* it sent a resume key ... */
    uint64_t key_hash;     /* ... whose hash this is (resume_key_hash) */
    const char *host;      /* the peer's address, without the port */
};

/* What a claim found. */
struct resume_claim {
    int slot;           /* the registry entry held (-1: none); give it to resume_release */
    int known;          /* an earlier connection's series: continue it */
    uint32_t file_id;   /* its connection id */
    uint32_t next_seq;  /* the segment number to continue with */
    uint64_t received;  /* records received on all the stream's earlier connections */
    int exact;          /* received is exactly that */
    int turned_away;    /* a connection of it was turned away meanwhile (its records are elsewhere) */
    const char *refused; /* not resumed, why: the connection starts a series of its own, nameless */
    int disk_errno;     /* its series on disk could not be looked for (errno); it starts a new series */
};

/* The key's hash, as TRACE_MARK_STREAM_KEY carries it: SHA-256's first 8 bytes.  0, or -1. */
int resume_key_hash(const unsigned char key[TRACE_STREAM_RESUME_KEY_SIZE], uint64_t *out);

/* Claim stream who for the connection on socket fd: in the registry, or
 * (unknown there) on disk.  A connection refused, or one for which the
 * registry has no room or whose earlier connection would not let go in
 * time, starts a new series. */
void resume_claim(const struct resume_who *who, int fd, struct resume_claim *out);

/* The connection ends: remember where its series stands (file_id 0: it has
 * none).  Nothing for slot -1. */
void resume_release(int slot, uint32_t file_id, uint32_t next_seq, uint64_t received);

/* The connection ends having written nothing: the stream stands where it
 * did.  Nothing for slot -1. */
void resume_abandon(int slot);

/* Scan the directory (once, at startup).  0 with *left_out the series the
 * index had no room for, or -1 when it cannot be read. */
int resume_index_build(int dirfd, uint64_t *left_out);

/* serve started a series that names stream (sid, start_ns) and maybe a key. */
void resume_index_add(uint64_t sid, uint64_t start_ns, uint32_t file_id, int keyed, uint64_t key_hash);

/* What the disk holds of a stream. */
struct resume_found {
    int found;          /* some series in the directory belongs to the stream */
    int refused;        /* it has series, none with the claim's key: not counted, not found */
    int keyed;          /* the series found name a key ... */
    uint64_t key_hash;  /* ... with this hash (the claim's) */
    int exact;          /* received is exactly what serve received on it */
    uint32_t file_id;   /* its newest series, to continue */
    uint32_t next_seq;  /* that series' next segment number */
    uint64_t received;  /* device records in all its series */
};

/* Look on disk for stream (id, start_ns) claimed with (keyed, key_hash):
 * only its series with that key (or, unkeyed, without one) are found and
 * counted.  0 with *out filled (found may be 0; refused when it has
 * series, but none with that key), -1 on a read error.  resume_claim's
 * search, for tests. */
int resume_find(int dirfd, uint64_t id, uint64_t start_ns, uint64_t key_hash, int keyed,
                struct resume_found *out);

#endif
