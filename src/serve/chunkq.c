/*
 * chunkq.c - bounded queue of chunk buffers, one reader and one writer
 * thread (see chunkq.h).
 *
 * The buffers form a ring used strictly in order: the reader fills slot
 * put % n, the writer empties slot done % n, and put - done buffers are in
 * use.  One mutex guards the counters and flags, one condition variable
 * wakes whichever side waits (at most one thread per side).
 * Buffer contents are handed over by the counters: the mutex makes the
 * reader's writes to a slot visible to the writer that takes it, and the
 * writer's release visible to the reader that refills it.
 */
#include "chunkq.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct chunkq {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int n;
    uint64_t put;    /* chunks the reader has put */
    uint64_t done;   /* chunks the writer has released */
    int closed;      /* the reader puts nothing more */
    int quit;        /* the writer takes nothing more */
    struct chunkq_item *items;
};

static void free_items(struct chunkq *q)
{
    for (int i = 0; q->items && i < q->n; i++)
        free(q->items[i].buf);
    free(q->items);
}

struct chunkq *chunkq_new(int slots, size_t cap)
{
    struct chunkq *q = slots > 0 ? calloc(1, sizeof *q) : NULL;
    if (!q)
        return NULL;
    q->n = slots;
    q->items = calloc((size_t)slots, sizeof *q->items);
    int ok = q->items != NULL;
    for (int i = 0; ok && i < slots; i++)
        ok = (q->items[i].buf = malloc(cap)) != NULL;
    pthread_condattr_t attr;
    if (ok && pthread_condattr_init(&attr) == 0) {
        /* the writer's deadlines are on the monotonic clock (net_now_ms's) */
        ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_mutex_init(&q->lock, NULL) == 0;
        if (ok && pthread_cond_init(&q->changed, &attr) == 0) {
            pthread_condattr_destroy(&attr);
            return q;
        }
        if (ok)
            pthread_mutex_destroy(&q->lock);
        pthread_condattr_destroy(&attr);
    }
    free_items(q);
    free(q);
    return NULL;
}

void chunkq_free(struct chunkq *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free_items(q);
    free(q);
}

struct chunkq_item *chunkq_claim(struct chunkq *q)
{
    pthread_mutex_lock(&q->lock);
    while (!q->quit && q->put - q->done == (uint64_t)q->n)
        pthread_cond_wait(&q->changed, &q->lock);
    struct chunkq_item *it = q->quit ? NULL : &q->items[q->put % (uint64_t)q->n];
    pthread_mutex_unlock(&q->lock);
    return it;
}

void chunkq_put(struct chunkq *q)
{
    pthread_mutex_lock(&q->lock);
    q->put++;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

void chunkq_close(struct chunkq *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

struct chunkq_item *chunkq_take_by(struct chunkq *q, uint64_t by_ms, int *late)
{
    struct timespec by = {(time_t)(by_ms / 1000u), (long)(by_ms % 1000u) * 1000000L};
    *late = 0;
    pthread_mutex_lock(&q->lock);
    while (!q->closed && q->put == q->done && !*late)
        if (!by_ms)
            pthread_cond_wait(&q->changed, &q->lock);
        else
            *late = pthread_cond_timedwait(&q->changed, &q->lock, &by) == ETIMEDOUT;
    *late = *late && q->put == q->done && !q->closed;
    struct chunkq_item *it = q->put == q->done ? NULL : &q->items[q->done % (uint64_t)q->n];
    pthread_mutex_unlock(&q->lock);
    return it;
}

struct chunkq_item *chunkq_take(struct chunkq *q)
{
    int late;
    return chunkq_take_by(q, 0, &late);
}

void chunkq_release(struct chunkq *q)
{
    pthread_mutex_lock(&q->lock);
    q->done++;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

void chunkq_quit(struct chunkq *q)
{
    pthread_mutex_lock(&q->lock);
    q->quit = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}
