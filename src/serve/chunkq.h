/*
 * chunkq.h - the bounded queue of chunk buffers between the two threads of
 * one serve connection (conn.c).
 *
 * The reader thread takes a free buffer, fills it with one decompressed
 * (and decoded) chunk and puts it; the writer thread takes chunks in the
 * order they were put, acts on each and releases its buffer.  The buffers
 * are allocated once, so a connection's memory stays fixed however far the
 * reader runs ahead of the disk: with every buffer full the reader waits.
 * One reader and one writer per queue; either side may end it: the reader
 * closes it (nothing more will come), the writer quits it (nothing more
 * will be taken, so a reader waiting for a buffer is let go).
 */
#ifndef CALLSIGHT_CHUNKQ_H
#define CALLSIGHT_CHUNKQ_H

#include <stddef.h>

#include "proto.h"

/* One chunk in flight: its header and a buffer of the queue's capacity. */
struct chunkq_item {
    struct proto_chunk h;
    unsigned char *buf;
};

struct chunkq;

/* A queue of `slots` buffers of `cap` bytes each; NULL when out of memory. */
struct chunkq *chunkq_new(int slots, size_t cap);
void chunkq_free(struct chunkq *q);

/* Reader: the next free buffer, waiting while all are in use; NULL once the writer quit. */
struct chunkq_item *chunkq_claim(struct chunkq *q);

/* Reader: hand the buffer chunkq_claim gave to the writer. */
void chunkq_put(struct chunkq *q);

/* Reader: nothing more will be put; the writer still gets everything already put. */
void chunkq_close(struct chunkq *q);

/* Writer: the oldest chunk put and not released, waiting for one; NULL once
 * closed and empty.  One at a time: release it before taking the next. */
struct chunkq_item *chunkq_take(struct chunkq *q);

/* Writer: the same, waiting no later than by_ms (net_now_ms's clock; 0: no
 * limit).  NULL also when that time came first, and then *late is 1. */
struct chunkq_item *chunkq_take_by(struct chunkq *q, uint64_t by_ms, int *late);

/* Writer: done with the chunk chunkq_take gave; its buffer is free again. */
void chunkq_release(struct chunkq *q);

/* Writer: take nothing more; a reader waiting in chunkq_claim gets NULL. */
void chunkq_quit(struct chunkq *q);

#endif
