/*
 * addrindex.c - (binary, address) -> dense id (see addrindex.h).
 */
#include "addrindex.h"

#include <stdlib.h>
#include <string.h>

#define NO_ID UINT32_MAX

void addrindex_init(struct addrindex *x)
{
    memset(x, 0, sizeof *x);
}

void addrindex_free(struct addrindex *x)
{
    u64map_free(&x->first);
    free(x->addr);
    free(x->bin);
    free(x->next);
    addrindex_init(x);
}

/* Room for one more id.  0 ok, -1 out of memory or ids. */
static int reserve(struct addrindex *x)
{
    if (x->n < x->cap)
        return 0;
    if (x->n >= UINT32_MAX - 1)
        return -1;
    size_t cap = x->cap ? x->cap * 2 : 256;
    uint64_t *addr = realloc(x->addr, cap * sizeof *addr);
    if (addr)
        x->addr = addr;
    uint32_t *bin = realloc(x->bin, cap * sizeof *bin);
    if (bin)
        x->bin = bin;
    uint32_t *next = realloc(x->next, cap * sizeof *next);
    if (next)
        x->next = next;
    if (!addr || !bin || !next)
        return -1;
    x->cap = cap;
    return 0;
}

int addrindex_id(struct addrindex *x, uint32_t bin, uint64_t addr, uint32_t *id, int *added)
{
    uint32_t i, last = NO_ID;
    *added = 0;
    if (u64map_get(&x->first, addr, &i)) {
        for (; i != NO_ID; last = i, i = x->next[i])
            if (x->bin[i] == bin) {
                *id = i;
                return 0;
            }
    }
    if (reserve(x) < 0 || (last == NO_ID && u64map_put(&x->first, addr, (uint32_t)x->n) < 0))
        return -1;
    i = (uint32_t)x->n++;
    x->addr[i] = addr;
    x->bin[i] = bin;
    x->next[i] = NO_ID;
    if (last != NO_ID)
        x->next[last] = i;
    *id = i;
    *added = 1;
    return 0;
}

int addrindex_find(const struct addrindex *x, uint32_t bin, uint64_t addr, uint32_t *id)
{
    uint32_t i;
    if (!u64map_get(&x->first, addr, &i))
        return 0;
    for (; i != NO_ID; i = x->next[i])
        if (x->bin[i] == bin) {
            *id = i;
            return 1;
        }
    return 0;
}
