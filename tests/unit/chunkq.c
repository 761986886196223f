/*
 * chunkq.c - unit tests (TAP) of src/serve/chunkq.c, the bounded queue between a
 * serve connection's reader and writer threads: chunks arrive whole and in
 * order, the reader is never more than the queue's buffers ahead, closing
 * still delivers what was put, quitting lets a waiting reader go, and a
 * take with a deadline (the writer's for open summary snapshots) gives up
 * at it, but not while a chunk is there.
 * Also run under ThreadSanitizer by `make tsan-test`.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "serve/chunkq.h"

#define SLOTS 3
#define CAP 4096
#define CHUNKS 2000

static int n_test, failed;

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

struct run {
    struct chunkq *q;
    long limit;            /* chunks to put before closing; <0: until the writer quits */
    long put;              /* chunks the reader put */
    atomic_long released;  /* chunks the writer released */
    int too_far_ahead;     /* the reader got a buffer with SLOTS already unreleased */
};

/* Chunk i: raw_len i % CAP, the buffer filled with i's low byte. */
static void *reader(void *arg)
{
    struct run *r = arg;
    for (long i = 0; r->limit < 0 || i < r->limit; i++) {
        struct chunkq_item *it = chunkq_claim(r->q);
        if (!it)
            break;
        if (i - atomic_load(&r->released) >= SLOTS)
            r->too_far_ahead = 1;
        it->h = (struct proto_chunk){1, (uint32_t)(i % CAP), (uint32_t)i};
        memset(it->buf, (int)(i & 0xff), CAP);
        chunkq_put(r->q);
        r->put++;
    }
    if (r->limit >= 0)
        chunkq_close(r->q);
    return NULL;
}

static int chunk_intact(const struct chunkq_item *it, long i)
{
    if (it->h.zstd_len != (uint32_t)i || it->h.raw_len != (uint32_t)(i % CAP))
        return 0;
    for (size_t k = 0; k < CAP; k++)
        if (it->buf[k] != (unsigned char)(i & 0xff))
            return 0;
    return 1;
}

/* Take up to max chunks (all when max < 0), checking each; returns how many, -1 on a bad one. */
static long drain(struct run *r, long max)
{
    long n = 0;
    struct chunkq_item *it;
    while ((max < 0 || n < max) && (it = chunkq_take(r->q))) {
        if (!chunk_intact(it, n))
            return -1;
        atomic_fetch_add(&r->released, 1); /* before: the reader may refill it at once */
        chunkq_release(r->q);
        n++;
    }
    return n;
}

static void test_order(void)
{
    struct run r = {chunkq_new(SLOTS, CAP), CHUNKS, 0, 0, 0};
    pthread_t t;
    ok(r.q != NULL, "a queue of 3 buffers");
    pthread_create(&t, NULL, reader, &r);
    long got = drain(&r, -1);
    pthread_join(t, NULL);
    ok(got == CHUNKS, "every chunk put arrives, whole and in order, then the closed queue ends");
    ok(!r.too_far_ahead, "the reader never holds more than 3 buffers unreleased");
    ok(chunkq_take(r.q) == NULL, "a closed, empty queue stays ended");
    chunkq_free(r.q);
}

static void test_close_with_pending(void)
{
    struct run r = {chunkq_new(SLOTS, CAP), 2, 0, 0, 0};
    reader(&r); /* puts 2 and closes, with nobody taking yet */
    ok(drain(&r, -1) == 2, "closing keeps what was put: both chunks are still taken");
    chunkq_free(r.q);
}

static void test_quit(void)
{
    struct run r = {chunkq_new(SLOTS, CAP), -1, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, reader, &r);
    long got = drain(&r, 5);
    chunkq_quit(r.q); /* the reader is waiting for a buffer, or soon will be */
    pthread_join(t, NULL);
    ok(got == 5, "the writer took 5 chunks intact");
    ok(r.put >= 5 && r.put <= 5 + SLOTS, "after quit the reader's claim fails: it put at most 3 more");
    ok(!r.too_far_ahead, "and never ran more than 3 ahead");
    chunkq_free(r.q);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void test_deadline(void)
{
    struct run r = {chunkq_new(SLOTS, CAP), 1, 0, 0, 0};
    int late = 0;
    ok(chunkq_take_by(r.q, now_ms() + 50, &late) == NULL && late,
       "an empty queue: a take with a deadline gives up at it, saying it was late");
    struct chunkq_item *it = chunkq_claim(r.q);
    it->h = (struct proto_chunk){1, 0, 0};
    chunkq_put(r.q);
    ok(chunkq_take_by(r.q, now_ms() - 1, &late) == it && !late, "a chunk waiting is taken though the time has passed");
    chunkq_release(r.q);
    chunkq_close(r.q);
    ok(chunkq_take_by(r.q, now_ms() + 60000, &late) == NULL && !late, "a closed queue ends it at once, not late");
    chunkq_free(r.q);
}

int main(void)
{
    test_order();
    test_close_with_pending();
    test_quit();
    test_deadline();
    ok(chunkq_new(0, CAP) == NULL, "a queue needs at least one buffer");
    chunkq_free(NULL);
    printf("1..%d\n", n_test);
    return failed;
}
