/* hash_test.c - a self-test linked into the program: `exclude *_test.c`. */
#include "app.h"

int hash_selftest(void)
{
    return util_hash(1) + util_hash(2) + util_hash(3) != 0;
}
