/*
 * strmap.c - open-addressing string -> uint32_t map (see strmap.h).
 */
#include "strmap.h"

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

static int grow(struct strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    if (cap > SIZE_MAX / sizeof(char *))
        return -1;
    const char **keys = malloc(cap * sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t j = find_slot(keys, vals, cap, m->keys[i]);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int strmap_put(struct strmap *m, const char *key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t i = find_slot(m->keys, m->vals, m->cap, key);
    if (!m->vals[i]) {
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = val + 1;
    return 0;
}
