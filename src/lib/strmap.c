/*
 * strmap.c - open-addressing string -> uint32_t map (see strmap.h).
 */
#include "strmap.h"
#include "vec.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: names differ in a few characters, and this mixes every byte. */
static uint64_t hash_of(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static size_t find_slot(const char **keys, const uint32_t *vals, size_t cap, const char *key)
{
    size_t mask = cap - 1, i = (size_t)hash_of(key) & mask;
    while (vals[i] && strcmp(keys[i], key))
        i = (i + 1) & mask;
    return i;
}

void strmap_free(struct strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

int strmap_get(const struct strmap *m, const char *key, uint32_t *val)
{
    if (!m->cap)
        return 0;
    size_t i = find_slot(m->keys, m->vals, m->cap, key);
    if (!m->vals[i])
        return 0;
    *val = m->vals[i] - 1;
    return 1;
}

/* Store stored (a value + 1) under key; the table has room. */
static void place(struct strmap *m, const char *key, uint32_t stored)
{
    size_t i = find_slot(m->keys, m->vals, m->cap, key);
    if (!m->vals[i]) {
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = stored;
}

static int grow(struct strmap *m)
{
    struct strmap t = {0};
    t.cap = m->cap ? m->cap * 2 : 64;
    if (vec_table(&t.keys, sizeof *t.keys, &t.vals, t.cap) < 0)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i])
            place(&t, m->keys[i], m->vals[i]);
    strmap_free(m);
    *m = t;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    place(m, key, val + 1);
    return 0;
}
