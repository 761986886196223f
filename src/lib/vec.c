/*
 * vec.c - growable arrays' one growth rule (see vec.h).
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
