/*
 * u64map.c - unit test of the open-addressing map (src/u64map.c) against a
 * plain array: inserts through many growths, overwrites, key 0, clear.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/u64map.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

int main(void)
{
    enum { N = 100000 };
    struct u64map m;
    uint32_t v;
    int good = 1;
    printf("1..7\n");
    u64map_init(&m);
    ok(!u64map_get(&m, 0, &v) && !u64map_get(&m, 42, &v), "empty map finds nothing");
    /* Keys that differ only in high bits or by a stride, as addresses do. */
    for (uint32_t i = 0; i < N; i++)
        good &= u64map_put(&m, (uint64_t)i * 4096 + ((uint64_t)i << 40), i) == 0;
    ok(good && m.count == N && m.count * 2 <= m.cap, "100000 inserts, at most half full");
    good = 1;
    for (uint32_t i = 0; i < N; i++)
        good &= u64map_get(&m, (uint64_t)i * 4096 + ((uint64_t)i << 40), &v) && v == i;
    good &= !u64map_get(&m, 4096 + 1, &v);
    ok(good, "every key found with its value; an absent key is not");
    u64map_put(&m, 4096 + (1ull << 40), 777);
    ok(u64map_get(&m, 4096 + (1ull << 40), &v) && v == 777 && m.count == N, "overwrite keeps the count");
    u64map_put(&m, 0, 5);
    ok(u64map_get(&m, 0, &v) && v == 5, "key 0 is an ordinary key");
    u64map_clear(&m);
    ok(m.count == 0 && !u64map_get(&m, 0, &v) && !u64map_get(&m, 4096 + (1ull << 40), &v),
       "clear forgets everything");
    u64map_free(&m);
    /* Keys that differ only in their top bits, or only in bit 63. */
    good = 1;
    for (uint32_t i = 0; i < 4096; i++)
        good &= u64map_put(&m, (uint64_t)i << 52, i) == 0;
    good &= u64map_put(&m, 1ull << 63 | 5, 4096) == 0 && u64map_put(&m, 5, 4097) == 0;
    for (uint32_t i = 0; i < 4096; i++)
        good &= u64map_get(&m, (uint64_t)i << 52, &v) && v == i;
    good &= u64map_get(&m, 1ull << 63 | 5, &v) && v == 4096 && u64map_get(&m, 5, &v) && v == 4097;
    ok(good && m.count == 4098, "keys apart only in the top bits are told apart");
    u64map_free(&m);
    return 0;
}
