/* hash.c - called directly and through HASH_TWICE (a macro). */
#include "app.h"

int util_hash(int x)
{
    unsigned h = 2166136261u ^ (unsigned)x;
    return (int)((h * 16777619u) >> 8);
}
