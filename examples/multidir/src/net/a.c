/* a.c - one of two files with a static helper of the same name. */
#include "app.h"

static __attribute__((noinline)) int helper(int x)
{
    return x * 3;
}

int net_a(int x)
{
    return helper(x) + 1;
}
