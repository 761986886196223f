/*
 * embedded.h - the files `callsight init` installs, built into callsight.
 *
 * tools/embed.c generates the definitions at build time from runtime/,
 * stream/ and wiring/ (see the Makefile), so an installed callsight needs no
 * source tree.  Each file is known by its base name; data is followed by a
 * NUL that size does not count.
 */
#ifndef CALLSIGHT_EMBEDDED_H
#define CALLSIGHT_EMBEDDED_H

#include <stddef.h>

struct embedded_file {
    const char *name;          /* base name, e.g. "trace.c" */
    const unsigned char *data; /* size bytes, then a NUL */
    size_t size;
};

extern const struct embedded_file embedded_files[];
extern const size_t embedded_count;

#endif
