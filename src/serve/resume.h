/*
 * resume.h - find a resumable stream's file series on disk, for a
 * serve restarted into the same out directory.
 *
 * The stream registry (registry.h) is in memory.  When a stream
 * reconnects that it does not know, serve looks here instead: every series
 * that serve started for a resumable stream begins with a
 * TRACE_MARK_STREAM_ID marker naming it, so the seq-0 segments' first
 * records say which series belong to the stream, and the records in those
 * series say how many serve received: the device records, i.e. all records
 * but the markers serve itself wrote (tid 0).  That is the registry's
 * `received`, unless a connection stopped writing (budget, disk floor,
 * write error): what it then read but discarded is on no disk, and the
 * count is reported as inexact.
 *
 * Bounded, and no work for a stranger: the directory is scanned once, at
 * startup, into an index of which series name which stream (and its key's
 * hash, TRACE_MARK_STREAM_KEY); serve adds the series it starts.  A resume
 * is looked up there; only a stream found, with its key, costs one pass
 * with a fixed buffer over its own files (at most RESUME_SERIES_MAX
 * series).  Files are opened relative to serve's directory, without
 * following symlinks or blocking, and must be regular files.
 */
#ifndef CALLSIGHT_RESUME_H
#define CALLSIGHT_RESUME_H

#include <stdint.h>

#define RESUME_SERIES_MAX 16
#define RESUME_INDEX_MAX (1u << 20) /* series indexed; more are not resumable after a restart */

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

/* Scan the directory (once, at startup).  0 with *left_out the series the
 * index had no room for, or -1 when it cannot be read. */
int resume_index_build(int dirfd, uint64_t *left_out);

/* serve started a series that names stream (sid, start_ns) and maybe a key. */
void resume_index_add(uint64_t sid, uint64_t start_ns, uint32_t file_id, int keyed, uint64_t key_hash);

/* Look for stream (id, start_ns) claimed with (keyed, key_hash): only its
 * series with that key (or, unkeyed, without one) are found and counted.
 * 0 with *out filled (found may be 0; refused when it has series, but none
 * with that key), -1 on a read error. */
int resume_find(int dirfd, uint64_t id, uint64_t start_ns, uint64_t key_hash, int keyed,
                       struct resume_found *out);

#endif

/*
 * registry.h - the streams serve has seen, so a reconnecting client
 * continues its own file series and its loss can be counted exactly.
 *
 * A trace_stream client names its stream (random id + start time) in a
 * TRACE_CHUNK_RESUME after every handshake.  The registry remembers, per
 * stream, the connection id of its file series, the next segment number and
 * how many records serve received on all its connections so far.  A
 * connection holds its stream's entry while it runs; a newer connection of
 * the same stream (the device reconnected, so the old link is dead even if
 * TCP has not noticed) shuts the old socket down and waits, bounded, for it
 * to let go.  Bounded size: the least recently used idle entry makes room.
 * In memory only: for a stream a restarted serve does not know, conn.c
 * looks on disk (resume.h).
 *
 * Nobody else may take a stream over: one that sent a resume key
 * (trace_shm.h) is claimed again only with the same key (its hash is kept,
 * never the key); one without a key is taken over while a connection of it
 * runs only from the same peer address.
 */
#ifndef CALLSIGHT_REGISTRY_H
#define CALLSIGHT_REGISTRY_H

#include <stdint.h>

#define REGISTRY_MAX 256

/* What serve knows about a stream when a connection claims it. */
struct registry_prev {
    int known;          /* an earlier connection of this stream ran here */
    uint32_t file_id;   /* its series' connection id */
    uint32_t next_seq;  /* the segment number to continue with */
    uint64_t received;  /* records received on all its earlier connections */
    int inexact;        /* a connection of it was turned away meanwhile (its records are elsewhere) */
};

/* Who claims a stream. */
struct registry_who {
    uint64_t id, start_ns; /* the stream, from its resume notice */
    int keyed;             /* it sent a resume key ... */
    uint64_t key_hash;     /* ... whose hash this is (conn.c) */
    const char *host;      /* the peer's address, without the port */
};

/*
 * Claim stream who for the connection on socket fd.  0 with *prev filled;
 * -1 when the registry is full of running streams or the earlier
 * connection would not let go in time; -2 when the claim is refused (the
 * key differs, or a live stream without a key is claimed from another
 * address).  On -1 and -2 the caller starts a new series.  The returned
 * slot is passed to registry_release.
 */
int registry_claim(const struct registry_who *who, int fd, struct registry_prev *prev, int *slot);

/* The connection ends: remember where its series stands (file_id 0: it has none). */
void registry_release(int slot, uint32_t file_id, uint32_t next_seq, uint64_t received);

/* The connection ends having written nothing: the stream stands where it did. */
void registry_abandon(int slot);

/* The claim turned out not to be the stream's (its series on disk has
 * another key): drop the entry it made, so it binds nobody. */
void registry_forget(int slot);

#endif
