/*
 * u64map.c - open-addressing uint64_t -> uint32_t map (see u64map.h).
 */
#include "u64map.h"
#include "vec.h"

#include <stdlib.h>
#include <string.h>

/* Multiplicative (Fibonacci) hashing: the top bits of key * 2^64/phi
 * depend on every bit of the key, so addresses and tids that differ only in
 * a few low (or high) bits still spread over the table.  One multiply: the
 * analyzer looks up every event's function and thread. */
static size_t slot_of(uint64_t key, unsigned shift)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> shift);
}

/* log2 of a power of two. */
static unsigned log2_of(size_t cap)
{
    unsigned b = 0;
    while (cap >>= 1)
        b++;
    return b;
}

void u64map_init(struct u64map *m)
{
    memset(m, 0, sizeof *m);
}

void u64map_free(struct u64map *m)
{
    free(m->keys);
    free(m->vals);
    u64map_init(m);
}

void u64map_clear(struct u64map *m)
{
    if (m->cap)
        memset(m->vals, 0, m->cap * sizeof *m->vals);
    m->count = 0;
}

static size_t find_slot(const uint64_t *keys, const uint32_t *vals, size_t cap, unsigned shift,
                        uint64_t key)
{
    size_t mask = cap - 1;
    size_t i = slot_of(key, shift);
    while (vals[i] && keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

int u64map_get(const struct u64map *m, uint64_t key, uint32_t *val)
{
    if (!m->cap)
        return 0;
    size_t i = find_slot(m->keys, m->vals, m->cap, m->shift, key);
    if (!m->vals[i])
        return 0;
    *val = m->vals[i] - 1;
    return 1;
}

/* Store stored (a value + 1) under key; the table has room. */
static void place(struct u64map *m, uint64_t key, uint32_t stored)
{
    size_t i = find_slot(m->keys, m->vals, m->cap, m->shift, key);
    m->count += !m->vals[i]; /* a new key, or the same key again */
    m->keys[i] = key;
    m->vals[i] = stored;
}

static int grow(struct u64map *m)
{
    struct u64map t = {0};
    t.cap = m->cap ? m->cap * 2 : 16;
    if (vec_table(&t.keys, sizeof *t.keys, &t.vals, t.cap) < 0)
        return -1;
    t.shift = 64 - log2_of(t.cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i])
            place(&t, m->keys[i], m->vals[i]);
    u64map_free(m);
    *m = t;
    return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint32_t val)
{
    if (val == UINT32_MAX)
        return -1;
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    place(m, key, val + 1);
    return 0;
}
