/*
 * u64map.h - a small open-addressing hash map from uint64_t keys to uint32_t
 * values, for the analyzer's lookups (function address -> function index,
 * (source, tid) -> thread slot).
 *
 * Linear probing, power-of-two capacity, kept at most half full, so a lookup
 * touches a cache line or two.  Entries are never removed one by one; a map
 * is cleared or freed as a whole.  Any key is allowed, 0 included.
 */
#ifndef CALLSIGHT_U64MAP_H
#define CALLSIGHT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
    uint64_t *keys;
    uint32_t *vals; /* stored value + 1; 0 marks an empty slot */
    size_t cap;     /* slots, a power of two (0 before the first put) */
    size_t count;   /* occupied slots */
    unsigned shift; /* 64 - log2(cap): a hash's top bits pick the slot */
};

/* A zeroed struct is an empty map; this is only for readability. */
void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* Forget every entry, keep the storage. */
void u64map_clear(struct u64map *m);
/* 1 and *val set when key is present, else 0. */
int u64map_get(const struct u64map *m, uint64_t key, uint32_t *val);
/* Insert or overwrite.  0 ok, -1 out of memory (map unchanged). val must be
 * below UINT32_MAX. */
int u64map_put(struct u64map *m, uint64_t key, uint32_t val);

#endif
