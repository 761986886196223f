/*
 * ctlblock.h - the host's end of a process's live-control block
 * (runtime/trace_shm.h, trace_shm_control_t; docs/control.md): open the
 * block a process made with TRACE_CONTROL=1, read what it applies, and
 * write a new setting whole, for `callsight ctl --pid`.
 *
 * The block is another process's memory: opened only as what it claims to
 * be (a regular shm segment of this uid, no one else's access, of its
 * exact size, no symlink), and its fields checked before use.
 */
#ifndef CALLSIGHT_CTLBLOCK_H
#define CALLSIGHT_CTLBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "trace_shm.h"

struct ctlblock {
    int fd;
    trace_shm_control_t *c;
    unsigned long pid;
};

/* 0 ok; -1 with a one-line reason in msg (none there: *gone set, the
 * process has no block: not running, or not with TRACE_CONTROL=1). */
int ctlblock_open(struct ctlblock *b, unsigned long pid, int *gone, char *msg, size_t len);
void ctlblock_close(struct ctlblock *b);

/* The setting applied now (its generation, flags and functions, link-time
 * addresses, at most TRACE_CTL_FUNCS_MAX into addrs).  Returns the count. */
size_t ctlblock_current(const struct ctlblock *b, uint64_t *gen, uint32_t *flags, uint64_t *addrs);

/* Write flags and the n link-time addresses of the program build_id names
 * (NULL: any), or the subtree under (depth levels), as the next generation
 * (*gen), on the threads whose names match threads (NULL or "": all), with
 * the trigger trig (function, ns; with TRACE_CTL_TRIGGER in flags), in
 * mode (TRACE_CTL_MODE_*, with TRACE_CTL_MODE), whole
 * or not at all; with keep, the functions and threads stay as set
 * (trace_ctl_publish).  0, or -1 with the
 * reason in msg (more than TRACE_CTL_FUNCS_MAX, a table that would not be
 * found within TRACE_CTL_PROBE_MAX slots, another writer for over a
 * second). */
int ctlblock_write(struct ctlblock *b, uint32_t flags, const uint64_t build_id[2], const uint64_t *addrs, size_t n,
                   uint64_t under, uint32_t depth, const char *threads, const uint64_t trig[2], uint32_t mode, int keep,
                   uint64_t *gen, char *msg, size_t len);

/* Wait up to ms for a thread to apply gen: 1 it did, 0 not yet. */
int ctlblock_wait(const struct ctlblock *b, uint64_t gen, unsigned ms);

#endif
