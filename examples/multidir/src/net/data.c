/* data.c - the other static helper; `exclude a.c` must leave it alone. */
#include "app.h"

static __attribute__((noinline)) int helper(int x)
{
    return x * 5;
}

int net_data(int x)
{
    return helper(x) + helper(x + 1);
}
