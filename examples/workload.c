/*
 * workload.c - callsight's demo workload and end-to-end test fixture.
 *
 * A main thread and WORKERS worker threads do a realistic mix of work:
 * recursion (fib), sorting (a merge sort), hashing (FNV-1a), a little
 * matrix math and short sleeps (10-15 ms, so that the event rate, a few
 * million per second, is one a device link can carry).  Every function is noinline and its call
 * count follows exactly from the parameters, so tests can assert exact
 * counts:
 *
 *   main, spawn_workers, join_workers          1 each
 *   arg_int                                    5 (one per parameter)
 *   worker_main                                workers
 *   do_iteration, matmul, nap, sort_keys,      workers * iters each
 *     fill_keys
 *   fib                                        workers * iters * (2*F(fib_n+1) - 1)
 *   msort                                      workers * iters * (2*sort_n - 1)
 *   merge                                      workers * iters * (sort_n - 1)
 *   hash_key                                   workers * iters * sort_n
 *   dot                                        workers * iters * mat_n^2
 *
 * usage: workload [ITERS [WORKERS [FIB_N [SORT_N [MAT_N]]]]]
 *        defaults 16 25 12 64 8
 * It prints the parameters it ran with and a checksum that depends on all
 * of the work, so the compiler cannot drop any of it.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#ifndef MAX_SORT /* -D: tests build a different binary from this source */
#define MAX_SORT 4096
#endif
#define MAX_MAT 32
#define MAX_WORKERS 256

struct params {
    int iters, workers, fib_n, sort_n, mat_n;
};

struct worker {
    pthread_t thread;
    int index;
    const struct params *p;
    uint64_t checksum;
};

static NOINLINE uint64_t fib(int n)
{
    return n < 2 ? (uint64_t)n : fib(n - 1) + fib(n - 2);
}

static NOINLINE uint32_t hash_key(uint32_t key)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < 4; i++) {
        h ^= (key >> (8 * i)) & 0xffu;
        h *= 16777619u;
    }
    return h;
}

static NOINLINE void fill_keys(uint32_t *keys, int n, uint32_t seed)
{
    for (int i = 0; i < n; i++)
        keys[i] = hash_key(seed * 7919u + (uint32_t)i);
}

static NOINLINE void merge(uint32_t *a, uint32_t *tmp, int mid, int n)
{
    int i = 0, j = mid, k = 0;
    while (i < mid && j < n)
        tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
    while (i < mid)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* 2n-1 calls for n >= 1: one per node of the split tree. */
static NOINLINE void msort(uint32_t *a, uint32_t *tmp, int n)
{
    if (n < 2)
        return;
    int mid = n / 2;
    msort(a, tmp, mid);
    msort(a + mid, tmp, n - mid);
    merge(a, tmp, mid, n);
}

NOINLINE void sort_keys(uint32_t *a, uint32_t *tmp, int n)
{
    msort(a, tmp, n);
}

static NOINLINE double dot(const double *row, const double *m, int col, int n)
{
    double s = 0;
    for (int k = 0; k < n; k++)
        s += row[k] * m[k * n + col];
    return s;
}

NOINLINE void matmul(const double *a, const double *b, double *c, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            c[i * n + j] = dot(a + i * n, b, j, n);
}

NOINLINE void nap(long ns)
{
    struct timespec ts = {0, ns};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static NOINLINE uint64_t do_iteration(struct worker *w, int iter)
{
    const struct params *p = w->p;
    uint32_t keys[MAX_SORT], tmp[MAX_SORT];
    double a[MAX_MAT * MAX_MAT], b[MAX_MAT * MAX_MAT], c[MAX_MAT * MAX_MAT];
    int nn = p->mat_n * p->mat_n;

    uint64_t sum = fib(p->fib_n);
    fill_keys(keys, p->sort_n, (uint32_t)(w->index * 100003 + iter));
    sort_keys(keys, tmp, p->sort_n);
    sum += keys[0] ^ keys[p->sort_n - 1];
    for (int i = 0; i < nn; i++) {
        a[i] = (double)((i + iter) % 7);
        b[i] = (double)((i * 3 + w->index) % 5);
    }
    matmul(a, b, c, p->mat_n);
    sum += (uint64_t)c[nn - 1];
    nap(10000000L + 200000L * w->index); /* 10-15 ms: a device-like event rate */
    return sum;
}

static NOINLINE void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%02d", w->index);
    pthread_setname_np(pthread_self(), name); /* traces label threads by name */
    for (int i = 0; i < w->p->iters; i++)
        w->checksum += do_iteration(w, i);
    return NULL;
}

static NOINLINE int spawn_workers(struct worker *ws, const struct params *p)
{
    for (int i = 0; i < p->workers; i++) {
        ws[i].index = i;
        ws[i].p = p;
        ws[i].checksum = 0;
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            fprintf(stderr, "workload: cannot create thread %d\n", i);
            return -1;
        }
    }
    return 0;
}

static NOINLINE uint64_t join_workers(struct worker *ws, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(ws[i].thread, NULL);
        sum += ws[i].checksum;
    }
    return sum;
}

static int arg_int(int argc, char **argv, int i, int def, int lo, int hi)
{
    if (argc <= i)
        return def;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "workload: argument %d must be %d..%d\n", i, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    static struct worker ws[MAX_WORKERS];
    struct params p = {
        arg_int(argc, argv, 1, 16, 1, 1000000),
        arg_int(argc, argv, 2, 25, 1, MAX_WORKERS),
        arg_int(argc, argv, 3, 12, 0, 30),
        arg_int(argc, argv, 4, 64, 2, MAX_SORT),
        arg_int(argc, argv, 5, 8, 1, MAX_MAT),
    };
    if (spawn_workers(ws, &p) != 0)
        return 1;
    uint64_t sum = join_workers(ws, p.workers);
    printf("workload: iters=%d workers=%d fib_n=%d sort_n=%d mat_n=%d checksum=%llu\n",
           p.iters, p.workers, p.fib_n, p.sort_n, p.mat_n, (unsigned long long)sum);
    return 0;
}
