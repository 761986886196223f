/*
 * unit.h - what the C unit tests here share (each is its own program,
 * printing TAP): static inline helpers, prefix unit_.
 */
#ifndef UNIT_H
#define UNIT_H

#include <stdint.h>
#include <string.h>

#include "trace.h"

/* xorshift64: the next of a reproducible pseudo-random sequence whose
 * state (never 0) is *s; each test seeds its own, so its inputs are the
 * same every run. */
static inline uint64_t unit_xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A record event of KIND (module list or summary snapshot) as the runtime
 * writes one: TS, FUNC and CALL_SITE carry its fields, PART and COUNT go
 * in pad[0] and pad[1]. */
static inline trace_event_t unit_record_event(uint8_t kind, uint8_t part, uint8_t count,
                                              uint64_t ts, uint64_t func, uint64_t site)
{
    trace_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.ts = ts;
    ev.func = func;
    ev.call_site = site;
    ev.kind = kind;
    ev.pad[0] = part;
    ev.pad[1] = count;
    return ev;
}

#endif
