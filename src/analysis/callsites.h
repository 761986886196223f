/*
 * callsites.h - time by call site: which line calls which function, how
 * often, and for how long.
 *
 * As a sink it adds each selected completed call to the row of (call site,
 * callee): the call site is the return address the compiler's hook passed
 * with the enter, made link-time like the function's, and in the callee's
 * binary (the caller ran in the same process).  Sites get dense ids
 * so that the names of functions and sites go to addr2line in one batch.
 * Memory grows with distinct (site, callee) pairs, which the program's code
 * bounds, never with events.
 */
#ifndef CALLSIGHT_CALLSITES_H
#define CALLSIGHT_CALLSITES_H

#include <stddef.h>
#include <stdint.h>

#include "funcstats.h"
#include "lib/u64map.h"
#include "read/addrindex.h"
#include "sink.h"

struct callsites_row {
    uint32_t site; /* index into sites */
    uint32_t func; /* function id (funcstats) */
    uint8_t inlined; /* called from code inlined into the function at site - 1
                      * (its first byte): the call's own line is unknown */
    uint64_t calls, incl_ns, self_ns;
};

struct callsites {
    const struct funcstats *funcs; /* the callees, for their binary */
    struct addrindex sites; /* (binary, link-time return address) -> site id */
    struct callsites_row *rows;
    size_t nrows, caprows;
    struct u64map row_index; /* site id << 32 | func -> row */
    int oom;
};

void callsites_init(struct callsites *c, const struct funcstats *funcs);
void callsites_free(struct callsites *c);
struct sink callsites_sink(struct callsites *c);
/* Add to the row of (bin, site, func) as if these calls had closed there
 * (a pass in parts, jobs.h); inlined as in the row.  0 ok, -1 out of memory. */
int callsites_add(struct callsites *c, uint32_t bin, uint64_t site, uint32_t func, int inlined, uint64_t calls,
                  uint64_t incl_ns, uint64_t self_ns);
/* Row indexes by inclusive time descending (then calls, site, callee);
 * malloc'ed, c->nrows long, NULL when out of memory. */
uint32_t *callsites_by_incl(const struct callsites *c);

#endif
