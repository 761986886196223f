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
