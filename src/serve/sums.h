/*
 * sums.h - summary snapshots sent as increments
 * (TRACE_CHUNK_SUMMARY_INCREMENTS, specified in runtime/trace_wire.h) put
 * back into whole cumulative snapshots (trace.h) for serve's files, so that
 * nothing after serve needs to know increments exist.
 *
 * One per connection, since increments are relative to what that
 * connection carried before.  Each tid's totals are kept: per function its
 * calls, times and the buckets of its histogram that are not zero (a
 * function's memory follows the buckets the wire carried, never all
 * TRACE_SUMMARY_NBUCKETS of them for a function that had a few).
 *
 * Bounded: at most SUMS_MAX_TIDS tids and SUMS_MAX_BYTES held by one
 * connection, and at most sums_set_budget()'s bytes by all connections
 * together (serve's --max-summary-mb; connections are threads, so that
 * account is shared and atomic).  A stream that needs more, or whose
 * increments are malformed (parts out of order, an index past the last
 * bucket, a snapshot that does not end with its own number, counts that
 * wrap, buckets that count more calls than their function), gets one clear
 * error naming the cap and the option that raises it, and is closed by the
 * caller; what was written before stays.  sums_oldest_open() tells the
 * caller how long a snapshot has been open, for its deadline.
 */
#ifndef CALLSIGHT_SUMS_H
#define CALLSIGHT_SUMS_H

#include <stddef.h>
#include <stdint.h>

#define SUMS_MAX_TIDS 256u
#define SUMS_MAX_BYTES ((size_t)64 << 20)  /* one connection's totals */
#define SUMS_DEFAULT_BUDGET_MB 64u         /* all connections' (--max-summary-mb) */

struct sums;

/* Where whole records go: n little-endian records.  0, or -1 to stop. */
typedef int (*sums_put)(void *ctx, const unsigned char *records, size_t n);

/* NULL when out of memory. */
struct sums *sums_new(void);
void sums_free(struct sums *s);

/* A chunk's payload: n records in planes (trace_wire.h), taken at now_ms
 * (any clock that only goes forward: it dates the snapshots begun).  Whole
 * snapshots go to put as they complete.  0, or -1 with why set (the stream
 * is bad, or needs more than a cap allows). */
int sums_take(struct sums *s, const unsigned char *planes, size_t n, uint64_t now_ms, sums_put put,
              void *ctx, char *why, size_t why_len);

/* The snapshot open longest (a BEGIN taken, its END not yet). */
struct sums_open {
    uint32_t tid;
    uint64_t seq;      /* its number */
    uint64_t since_ms; /* the now_ms of the sums_take that brought its BEGIN */
};
/* 1 and *out filled when a snapshot is open, else 0. */
int sums_oldest_open(const struct sums *s, struct sums_open *out);

/* All connections' totals together: set before the first connection (the
 * default is SUMS_DEFAULT_BUDGET_MB MiB). */
void sums_set_budget(size_t bytes);
/* Bytes all connections' totals hold now (their accounts, malloc's
 * overhead included). */
size_t sums_held_all(void);
/* Connections refused so far because all connections' totals were at the budget. */
uint64_t sums_refused_all(void);

#endif
