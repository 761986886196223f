/*
 * unit.h - what the C unit tests here share (each is its own program,
 * printing TAP): static inline helpers, prefix unit_.
 */
#ifndef UNIT_H
#define UNIT_H

#include <stdint.h>

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

#endif
