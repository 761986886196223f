/*
 * toolkit.h - what the C test helpers in tests/tools/ share (attack.c,
 * lockhog.c, ringwriter.c, ...): small functions, static inline, so each
 * helper stays one file that make builds with one cc line (and no link
 * against a library of the tests).  Prefix tk_.  Those that include it
 * are built with -Iruntime (the event layout comes from trace.h).
 */
#ifndef TOOLKIT_H
#define TOOLKIT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "trace.h"

/* Sleep MS milliseconds (a signal may end it early: the callers poll). */
static inline void tk_sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

/* Send all LEN bytes of P on FD (no SIGPIPE: the peer may hang up, which
 * is what some tests do): 0, or -1 when the peer closed or send failed. */
static inline int tk_send_all(int fd, const void *p, size_t len)
{
    const unsigned char *b = p;
    while (len) {
        ssize_t n = send(fd, b, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Store the low BYTES bytes of V at P, little-endian, or big-endian when
 * BIG (the byte order a big-endian device would write). */
static inline void tk_put(unsigned char *p, uint64_t v, size_t bytes, int big)
{
    for (size_t i = 0; i < bytes; i++)
        p[big ? bytes - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

/* Event I of the synthetic stream streamgen and attack send: 13 functions,
 * 5 threads, alternating entry and exit; the tests know its counts. */
static inline void tk_make_event(unsigned char *e, long i, int big)
{
    memset(e, 0, TRACE_EVENT_SIZE);
    tk_put(e + offsetof(trace_event_t, ts), 1000 + 10 * (uint64_t)i, 8, big);
    tk_put(e + offsetof(trace_event_t, func), 0x401000 + (uint64_t)(i % 13) * 0x40, 8, big);
    tk_put(e + offsetof(trace_event_t, call_site), 0x500000 + (uint64_t)i, 8, big);
    tk_put(e + offsetof(trace_event_t, tid), 7 + (uint32_t)(i % 5), 4, big);
    e[offsetof(trace_event_t, kind)] = (unsigned char)(i % 2);
}

#endif
