/*
 * strmap.h - a small open-addressing hash map from strings to uint32_t
 * values, for lookups by name (a call graph's functions by their title).
 *
 * Keys are borrowed: the map keeps the pointer, and the caller keeps the
 * string alive and unchanged while the map lives.  Linear probing over a
 * power-of-two table kept at most half full; entries are never removed one
 * by one, only the whole map is freed.
 */
#ifndef CALLSIGHT_STRMAP_H
#define CALLSIGHT_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct strmap {
    const char **keys;
    uint32_t *vals; /* stored value + 1; 0 marks an empty slot */
    size_t cap;     /* slots, a power of two (0 before the first put) */
    size_t count;
};

/* A zeroed struct is an empty map. */
void strmap_free(struct strmap *m);
/* 1 and *val set when key is present, else 0. */
int strmap_get(const struct strmap *m, const char *key, uint32_t *val);
/* Insert or overwrite.  0 ok, -1 out of memory (map unchanged).  val must
 * be below UINT32_MAX. */
int strmap_put(struct strmap *m, const char *key, uint32_t val);

#endif
