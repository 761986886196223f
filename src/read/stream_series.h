/*
 * stream_series.h - find a resumable stream's file series on disk, for a
 * serve restarted into the same out directory.
 *
 * The stream registry (stream_registry.h) is in memory.  When a stream
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
 * Bounded: a few records of each seq-0 segment, then one pass with a fixed
 * buffer over the stream's own files; at most STREAM_SERIES_MAX series.
 */
#ifndef CALLSIGHT_STREAM_SERIES_H
#define CALLSIGHT_STREAM_SERIES_H

#include <stdint.h>

#define STREAM_SERIES_MAX 16

struct stream_found {
    int found;          /* some series in the directory belongs to the stream */
    int exact;          /* received is exactly what serve received on it */
    uint32_t file_id;   /* its newest series, to continue */
    uint32_t next_seq;  /* that series' next segment number */
    uint64_t received;  /* device records in all its series */
};

/* Look for stream (id, start_ns) in dir.  0 with *out filled (found may be 0), -1 on a read error. */
int stream_series_find(const char *dir, uint64_t id, uint64_t start_ns, struct stream_found *out);

#endif
