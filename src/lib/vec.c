/*
 * vec.c - growable arrays' one growth rule, hash tables' allocation (see vec.h).
 */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>

int vec_grow(void *vp, size_t *cap, size_t n, size_t size, size_t first_cap)
{
    void **v = vp;
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first_cap;
    if (c < *cap || c > SIZE_MAX / size)
        return -1;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

int vec_table(void *keysp, size_t key_size, uint32_t **vals, size_t cap)
{
    void **keys = keysp;
    if (cap > SIZE_MAX / key_size)
        return -1;
    *keys = malloc(cap * key_size);
    *vals = calloc(cap, sizeof **vals);
    if (*keys && *vals)
        return 0;
    free(*keys);
    free(*vals);
    *keys = NULL;
    *vals = NULL;
    return -1;
}
