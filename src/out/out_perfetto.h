/*
 * out_perfetto.h - `--format perfetto`: a native Perfetto trace (protobuf
 * `Trace`), written while the pass runs, for ui.perfetto.dev and
 * trace_processor.
 *
 * Layout, all on trusted packet sequence 1:
 *   - one packet with the interned event names (iid = function id + 1),
 *     flagged INCREMENTAL_STATE_CLEARED, first on the sequence;
 *   - a TrackDescriptor per process (local files: pid and "pid N"; a
 *     stream: "stream N" under a made-up pid of 2^30 + N, above any real
 *     pid, or, for each process that announced itself in a shared ring,
 *     its pid and "pid P (stream N)") and per thread (pid, tid, thread
 *     name), each before the first event on its track and again when the
 *     thread's name changes;
 *   - TrackEvent SLICE_BEGIN / SLICE_END per selected frame, at its times,
 *     strictly nested per thread: frames cut by a loss or left open at the
 *     end get their END from the matcher (callstack.h) at the thread's
 *     latest time, and a thread's times never go backwards;
 *   - TrackEvent INSTANT with a plain name for each loss and capture note,
 *     on the thread it happened on, or on its source's (default) process.
 *
 * Names come from addr2line only after the pass, but must precede their
 * use: so the events go to an unlinked temporary file as they are made
 * (memory stays bounded by threads), and out_perfetto_finish writes the
 * names and then copies the events after them.
 */
#ifndef CALLSIGHT_OUT_PERFETTO_H
#define CALLSIGHT_OUT_PERFETTO_H

#include <stdio.h>

#include "analysis/sink.h"
#include "out.h"
#include "pb.h"

struct out_perfetto_track {
    int described;   /* its TrackDescriptor is out */
    int have_ts;
    int64_t last_ts; /* of its latest event */
    int flush_open;  /* a [callsight flush] slice began and has not ended ... */
    int64_t flush_end; /* ... it ends here, or at the track's next event if that is sooner */
};

struct out_perfetto {
    const struct analysis *a;
    FILE *body;                       /* events so far */
    struct pb pkt, ev, sub, frame;    /* scratch for one packet, reused */
    struct out_perfetto_track *threads, *procs; /* by analysis index */
    size_t capthreads, capprocs;
    int err;                          /* errno of a failed write, or ENOMEM */
};

/* Events go to a temporary file in dir (NULL: $TMPDIR or /tmp).  0 ok;
 * -1 with errno set. */
int out_perfetto_init(struct out_perfetto *p, const struct analysis *a, const char *dir);
void out_perfetto_free(struct out_perfetto *p);
struct sink out_perfetto_sink(struct out_perfetto *p);
/* Write the whole trace to out.  0 ok; -1 with errno set. */
int out_perfetto_finish(struct out_perfetto *p, const struct out_view *v, FILE *out);

#endif
