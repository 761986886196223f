/*
 * pb.c - protobuf field encoding (see pb.h).
 */
#include "pb.h"

#include <stdlib.h>
#include <string.h>

void pb_free(struct pb *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void pb_clear(struct pb *b)
{
    b->n = 0;
}

static int room(struct pb *b, size_t more)
{
    if (b->oom)
        return 0;
    if (b->n + more <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

static void varint(struct pb *b, uint64_t v)
{
    if (!room(b, 10))
        return;
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
    varint(b, (uint64_t)field << 3);
    varint(b, v);
}

void pb_bytes(struct pb *b, uint32_t field, const void *data, size_t len)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, len);
    if (len && room(b, len)) {
        memcpy(b->p + b->n, data, len);
        b->n += len;
    }
}

void pb_str(struct pb *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

void pb_msg(struct pb *b, uint32_t field, const struct pb *sub)
{
    if (sub->oom)
        b->oom = 1;
    pb_bytes(b, field, sub->p, sub->n);
}
