/*
 * out_chrome.h - `--format chrome`: Chrome's trace-event JSON (the object
 * form), which about:tracing, Perfetto's UI and importer, speedscope and
 * many scripts read.  Written while the pass runs, like the Perfetto
 * timeline.
 *
 *   {"displayTimeUnit":"ns",
 *    "otherData":{"tool":"callsight", header counts, "notes":[...]},
 *    "traceEvents":[ one event a line:
 *      "ph":"M" process_name per process and thread_name per thread (the
 *               thread's latest name, or "thread N"), pid and tid as the
 *               Perfetto timeline has them (out_process_pid);
 *      "ph":"X" a complete event per selected frame, ts and dur in
 *               microseconds with three decimals (exact ns), strictly
 *               nested per thread (a thread's times never go backwards);
 *               a frame that left without its exit (open at the end, cut by
 *               a loss or an unmatched exit, a "[lost frames]" placeholder)
 *               closes at its thread's latest time with "args":{"cut":...},
 *               and otherData counts them; a flush of the tracer is a
 *               "[callsight flush]" event inside the call it interrupted;
 *      "ph":"i" each loss and capture note, on its thread ("s":"t") or its
 *               source's process ("s":"p");
 *      "ph":"C" loss counters, so loss shows on the timeline itself: per
 *               thread "tid N lost" (events it lost so far), per source
 *               "device dropped" (the device's count so far) and "stream
 *               gaps lost", and "dropped" (the header's dropped count of
 *               that source: 0 at the trace's first event, the total at its
 *               last), each as {"events": N}.]}
 *
 * Names come from addr2line only after the pass: so the events go, as
 * fixed records naming functions by id, to an unlinked temporary file as
 * they are made (a frame's when it opens, its duration filled in when it
 * closes, so each thread's calls come in the order they start, callers
 * first), and out_chrome_finish writes them out as JSON with their names.
 * Memory stays bounded by threads and their depth.
 */
#ifndef CALLSIGHT_OUT_CHROME_H
#define CALLSIGHT_OUT_CHROME_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/sink.h"
#include "out.h"

#define OUT_CHROME_BUF (256u * 1024u) /* the records' write buffer (more than one record and its text) */

struct out_chrome_open {
    int64_t start; /* its time */
    uint64_t at;   /* where its record is in the file */
};

struct out_chrome_thread {
    int used;           /* an event of it is out: its thread_name goes too */
    int have_ts;
    int64_t last_ts;    /* its latest time, never going backwards */
    struct out_chrome_open *open; /* each selected frame still open, innermost last */
    size_t nopen, capopen;
    uint64_t lost;      /* events it lost so far (its counter) */
    int flush_open;     /* a [callsight flush] began at flush_start and ends at ... */
    int64_t flush_start, flush_end; /* ... flush_end, or at its next event if that is sooner */
    uint64_t flush_at;  /* where its record is */
};

struct out_chrome {
    const struct analysis *a;
    FILE *body;                     /* the records so far (written with pwrite, read with stdio) */
    unsigned char *buf;             /* records not yet in body ... */
    size_t nbuf;
    uint64_t buf_off;               /* ... which go at this offset */
    struct out_chrome_thread *threads; /* by analysis thread index */
    size_t capthreads;
    unsigned char *procs_used;      /* by analysis process index */
    size_t capprocs;
    uint64_t *gap_events;           /* by source: lost in stream gaps so far */
    size_t capsrc;
    uint64_t slices, cut_slices;    /* X events of frames; of them, without their exit */
    int err;                        /* errno of a failed write, or ENOMEM */
};

/* Records go to a temporary file in dir (NULL: $TMPDIR or /tmp).  0 ok;
 * -1 with errno set. */
int out_chrome_init(struct out_chrome *c, const struct analysis *a, const char *dir);
void out_chrome_free(struct out_chrome *c);
struct sink out_chrome_sink(struct out_chrome *c);
/* Write the whole document to out.  0 ok; -1 with errno set. */
int out_chrome_finish(struct out_chrome *c, const struct out_view *v, FILE *out);

#endif
