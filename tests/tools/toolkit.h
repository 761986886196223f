/*
 * toolkit.h - what the C test helpers in tests/tools/ share (attack.c,
 * lockhog.c, ringwriter.c, ...): small functions, static inline, so each
 * helper stays one file that make builds with one cc line (and no link
 * against a library of the tests).  Prefix tk_.
 */
#ifndef TOOLKIT_H
#define TOOLKIT_H

#include <time.h>

/* Sleep MS milliseconds (a signal may end it early: the callers poll). */
static inline void tk_sleep_ms(long ms)
{
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

#endif
