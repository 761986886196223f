/*
 * vec.h - room for one more element in a growable array, by doubling.
 *
 * The analyzer and its live driver keep many arrays that only ever grow
 * (sources, threads, rows, segments), each as a pointer, a length and a
 * capacity in the owning struct; this is their one growth rule, with the
 * size overflow checked, so each call site stays a line.  The hash maps'
 * tables are allocated here too, for the same overflow check.
 */
#ifndef CALLSIGHT_VEC_H
#define CALLSIGHT_VEC_H

#include <stddef.h>
#include <stdint.h>

/* *(void **)vp holds *cap elements of size bytes, n of them used: make room
 * for element n (doubling, from first_cap).  0 ok; -1 out of memory or too
 * large, the array left as it was. */
int vec_grow(void *vp, size_t *cap, size_t n, size_t size, size_t first_cap);

/* The two parallel arrays of an open-addressing table of cap slots (strmap,
 * u64map): *(void **)keysp gets cap keys of key_size bytes, uninitialised,
 * *vals cap zeroed slots (0 = empty).  0 ok; -1 out of memory or too large,
 * nothing allocated. */
int vec_table(void *keysp, size_t key_size, uint32_t **vals, size_t cap);

#endif
