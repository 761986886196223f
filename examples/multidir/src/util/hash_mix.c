/* hash_mix.c - one name inside another, in one file: GCC's exclude list
 * matches by substring, so `exclude-func mix` cannot be done here without
 * taking util_hash_mix too, and callsight keeps mix and says why; while
 * `exclude-func util_hash` (hash.c) must leave util_hash_mix alone, which
 * one list given to every file would not. */
#include "app.h"

int mix(int x)
{
    return x * 31 + 7;
}

int util_hash_mix(int x)
{
    return (x ^ 0x3c) * 17;
}
