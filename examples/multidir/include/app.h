/* app.h - the multidir example's declarations (see main.c). */
#ifndef APP_H
#define APP_H

int net_a(int x);
int net_data(int x);
int util_hash(int x);
int util_hash_mix(int x);
int mix(int x);
int hash_selftest(void);

/* A call made through a macro: the call graph must still see util_hash. */
#define HASH_TWICE(x) util_hash(util_hash(x))

/* An inline function of a header: instrumented where it is compiled in. */
static inline int clamp(int x)
{
    return x < 0 ? 0 : x > 1000 ? 1000 : x;
}

#endif
