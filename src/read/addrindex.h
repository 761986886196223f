/*
 * addrindex.h - dense ids for code addresses of several binaries.
 *
 * The analyzer keys functions and call sites by (binary, link-time
 * address): two programs that shared one ring can both have a function at
 * 0x1139, and those must stay two rows with two names.  Ids are handed out
 * in order of first sight, 0, 1, 2, ..., so callers keep their own per-id
 * data in plain arrays.  Lookup hashes the address (u64map) and walks the
 * short chain of ids with that address in other binaries: exact, and as
 * cheap as a plain address map when there is one binary.
 */
#ifndef CALLSIGHT_ADDRINDEX_H
#define CALLSIGHT_ADDRINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "lib/u64map.h"

struct addrindex {
    struct u64map first; /* address -> the first id with that address */
    uint64_t *addr;      /* id -> address */
    uint32_t *bin;       /* id -> binary */
    uint32_t *next;      /* id -> next id with the same address, or UINT32_MAX */
    size_t n, cap;
};

void addrindex_init(struct addrindex *x);
void addrindex_free(struct addrindex *x);
/* The id of (bin, addr), added on first sight (*added then 1).  0 ok, -1
 * out of memory or out of ids. */
int addrindex_id(struct addrindex *x, uint32_t bin, uint64_t addr, uint32_t *id, int *added);
/* The id of (bin, addr) if it has one: 1, else 0 (nothing added). */
int addrindex_find(const struct addrindex *x, uint32_t bin, uint64_t addr, uint32_t *id);

#endif
