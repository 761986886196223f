/*
 * sums.h - summary snapshots sent as increments
 * (TRACE_CHUNK_SUMMARY_INCREMENTS, specified in runtime/trace_wire.h) put
 * back into whole cumulative snapshots (trace.h) for serve's files, so that
 * nothing after serve needs to know increments exist.
 *
 * One per connection, since increments are relative to what that
 * connection carried before.  Each tid's totals are kept: per function its
 * calls, times and a histogram of TRACE_SUMMARY_NBUCKETS counts.  Bounded:
 * at most SUMS_MAX_TIDS tids and SUMS_MAX_BYTES held; a
 * stream that needs more, or whose increments are malformed (parts out of
 * order, an index past the last bucket, a snapshot that does not end with
 * its own number, counts that wrap), gets one clear error and is closed by
 * the caller; what was written before stays.
 */
#ifndef CALLSIGHT_SUMS_H
#define CALLSIGHT_SUMS_H

#include <stddef.h>

#define SUMS_MAX_TIDS 256u
#define SUMS_MAX_BYTES ((size_t)64 << 20)

struct sums;

/* Where whole records go: n little-endian records.  0, or -1 to stop. */
typedef int (*sums_put)(void *ctx, const unsigned char *records, size_t n);

/* NULL when out of memory. */
struct sums *sums_new(void);
void sums_free(struct sums *s);

/* A chunk's payload: n records in planes (trace_wire.h).  Whole snapshots
 * go to put as they complete.  0, or -1 with why set (the stream is bad). */
int sums_take(struct sums *s, const unsigned char *planes, size_t n, sums_put put,
                     void *ctx, char *why, size_t why_len);

#endif
