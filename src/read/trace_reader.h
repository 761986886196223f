/*
 * trace_reader.h - read one trace file through a fixed-size buffer.
 *
 * The reader validates the header (magic, version, event_size, header_size),
 * works out the byte order (TRACE_FLAG_BIGENDIAN files are swapped field by
 * field), skips header_size bytes, and hands out events one at a time in host
 * order.  Memory is the struct itself, whatever the file's length.  It also
 * converts a file's timestamps to nanoseconds from the header's clock
 * calibration, or from the exit clock anchor when the caller found one.
 *
 * Two ways to take the events: trace_reader_next copies one at a time;
 * trace_reader_next_batch hands out the whole records buffered (up to
 * TRACE_READER_HANDOUT at a time), decoded in place (nothing to do when the file is in host order, the common case) with
 * their timestamps already in ns, which is what the analyzer's hot loop
 * wants.  The two may be mixed: each takes the records after the last one
 * the other handed out.
 *
 * Nothing in the file is trusted: a short or foreign header is an error with
 * a message naming what is wrong, and a partial last record is reported as
 * truncation after the whole records before it have been returned.
 */
#ifndef CALLSIGHT_TRACE_READER_H
#define CALLSIGHT_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define TRACE_READER_BUF (64u * 1024u) /* bytes read per read(2) */
#define TRACE_READER_BATCH (TRACE_READER_BUF / TRACE_EVENT_SIZE) /* most events buffered */
/* Most events per batch: a batch's records and their ns (10 KB) are read
 * twice, converted then used, and stay in L1 between the two; a whole
 * buffer's (80 KB) did not (docs/performance.md). */
#define TRACE_READER_HANDOUT 256u

enum trace_reader_status {
    TRACE_READER_EVENT = 1,     /* *ev holds the next event */
    TRACE_READER_END = 0,       /* clean end of file */
    TRACE_READER_TRUNCATED = -1, /* a partial record at the end (see ->trailing) */
    TRACE_READER_IOERR = -2     /* read(2) failed (see ->err) */
};

/* Events handed out by trace_reader_next_batch: ev[i] in host order, ns[i]
 * its ts in nanoseconds (as trace_reader_ns gives it, whatever the kind: a
 * marker that carries data in ts keeps it in ev[i].ts).  Valid until the
 * reader's next call. */
struct trace_reader_batch {
    const trace_event_t *ev;
    const int64_t *ns;
    size_t n;
};

struct trace_reader {
    int fd;
    trace_file_header_t hdr; /* in host order, magic as in the file */
    int swap;                /* file is big-endian */
    int native;              /* file is in host byte order: records are used as read */
    uint64_t file_size;
    size_t trailing;         /* bytes of a partial record at the end */
    int err;                 /* errno of a failed read */
    /* clock: ns = t0_ns + (ts - t0_ticks) * ns_per_tick, or ts when !ticks */
    int ticks;
    double ns_per_tick;
    int64_t t0_ns;   /* hdr.t0_ns, saturated to int64_t */
    int clock_fast;  /* t0_ns leaves room for the fast conversion */
    int have_near;   /* ticks in [near_lo, near_lo + near_span] convert without the fast one's tests */
    uint64_t near_lo, near_span;
    size_t pos, len; /* unread bytes are buf.bytes[pos, len); pos is a multiple of 32 */
    union {          /* records are read into bytes and used as ev */
        unsigned char bytes[TRACE_READER_BUF];
        trace_event_t ev[TRACE_READER_BATCH];
    } buf;
    int64_t ns[TRACE_READER_BATCH]; /* a batch's timestamps in ns, by position in buf */
};

/*
 * Open and validate.  0 ok; -1 with a one-line reason in msg (e.g. "not a
 * callsight trace (bad magic)") and nothing left open.
 */
int trace_reader_open(struct trace_reader *r, const char *path, char *msg, size_t msglen);
void trace_reader_close(struct trace_reader *r);
/* Where the next record not yet handed out begins (a byte offset in the
 * file, header included), so that a reader of a growing file can close it
 * and come back later: records in the buffer count as not read.  -1 when
 * lseek fails. */
int64_t trace_reader_tell(struct trace_reader *r);
/* Continue at offset off, which trace_reader_tell gave for this file: 0 ok,
 * -1 when it is not at a record's start or lseek fails. */
int trace_reader_seek(struct trace_reader *r, uint64_t off);
/* Position at the last `bytes` worth of whole records (all if fewer). */
int trace_reader_seek_tail(struct trace_reader *r, uint64_t bytes);
enum trace_reader_status trace_reader_next(struct trace_reader *r, trace_event_t *ev);
/*
 * The next whole records buffered, at most TRACE_READER_HANDOUT (reading
 * more first if none is): returns TRACE_READER_EVENT with b->n >= 1, or, with b->n == 0, what
 * trace_reader_next would have returned at that point (END, TRUNCATED or
 * IOERR).
 */
enum trace_reader_status trace_reader_next_batch(struct trace_reader *r,
                                                 struct trace_reader_batch *b);

/*
 * Use an exit clock anchor (marker TRACE_MARK_CLOCK_ANCHOR: ticks and the
 * monotonic ns at the same instant) instead of tick_hz for this file's tick
 * rate: the rate across the start and exit anchors.  Ignored (returns -1)
 * when the file's ts are ns or the anchor is not after the start anchor.
 */
int trace_reader_set_anchor(struct trace_reader *r, uint64_t anchor_ticks, uint64_t anchor_ns);
/* A ts of this file in nanoseconds. */
int64_t trace_reader_ns(const struct trace_reader *r, uint64_t ts);

#endif
