/*
 * ringwriter.c - test helper: plays a traced process writing to the shm ring.
 *
 *   ringwriter [--wait] [--create BYTES] [--version V] [--batch B] [--linger-ms MS] [--legacy 1] [--mark 1]
 *              [--first I] [--abandon B] SHM N
 *
 * Attaches to the ring SHM the way the runtime does (trace_shm.h): waits for
 * the creator's magic, holds a shared flock on it for its lifetime, writes
 * the header's lower half, increments `writers`
 * with release, then puts N known events (tests/tools/tracecheck.pl has the
 * formula; the same as streamgen's) in batches of B under the header's
 * spinlock; a batch that finds no room or cannot get the lock is dropped and
 * counted in `dropped`.  It writes the protocol of the ring's version: in a
 * version-3 ring each batch gets its header, is copied after the lock is
 * let go and then committed.  It prints its counts, stays attached for
 * --linger-ms, then decrements `writers`.
 * --legacy 1 takes no shared flock, as another agent's tracer would not.
 * --mark 1 writes a version-2 ring's batches committed, each with a header
 * marked TRACE_SHM_BATCH_MARK, as this tree's tracer does in a ring with
 * TRACE_SHM_FEATURE_COMMIT; without it a version-2 ring gets plain records,
 * as a tracer that knows only version 2 writes.
 * --create makes the ring itself first (as a tracer started before
 * trace_stream would), of --version V (default TRACE_SHM_VERSION_COMMIT).
 * --abandon B (version 3): after the N events, reserve a batch of B more
 * and exit at once without committing it or detaching, as a tracer killed
 * in the middle of its copy would.  --wait waits for room instead of dropping
 * (not what a tracer does; it lets a test push any volume through a small
 * ring without loss).  --first I makes its events I, I+1, ... (default 0),
 * so that writers one after another continue one sequence, which
 * tracecheck.pl --first checks across a cut connection.  Prints "ringwriter: generated N written W dropped D".
 *
 * Built by make (check-build) into $(BUILD)/tests/tools/; by hand:
 *   cc -std=c11 -I runtime -o ringwriter ringwriter.c
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* flock */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace.h"
#include "trace_shm.h"
#include "toolkit.h"

static trace_shm_header_t *hdr;
static unsigned char *storage;
static int ring_fd = -1; /* kept open: its shared flock says we live */

static _Atomic uint64_t *a64(uint64_t *p) { return (_Atomic uint64_t *)p; }
static _Atomic uint32_t *a32(uint32_t *p) { return (_Atomic uint32_t *)p; }

static void die(const char *what)
{
    fprintf(stderr, "ringwriter: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t magic_word(void)
{
    char m[8] = {0};
    uint64_t w;
    memcpy(m, TRACE_SHM_MAGIC, sizeof TRACE_SHM_MAGIC - 1);
    memcpy(&w, m, 8);
    return w;
}

static void create_ring(const char *name, uint64_t bytes, uint32_t version)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        die("shm_open create");
    uint32_t cap = (uint32_t)((bytes - TRACE_SHM_HEADER_SIZE) / 32 * 32);
    if (ftruncate(fd, (off_t)(TRACE_SHM_HEADER_SIZE + cap)))
        die("ftruncate");
    hdr = mmap(NULL, TRACE_SHM_HEADER_SIZE + cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (hdr == MAP_FAILED)
        die("mmap");
    ring_fd = fd;
    hdr->version = version;
    hdr->capacity = cap;
    atomic_store_explicit(a64((uint64_t *)(void *)hdr->magic), magic_word(), memory_order_release);
}

static void attach_ring(const char *name)
{
    int fd = -1;
    struct stat st;
    for (int i = 0; i < 500 && fd < 0; i++)
        if ((fd = shm_open(name, O_RDWR, 0)) < 0)
            tk_sleep_ms(10);
    if (fd < 0)
        die("shm_open");
    for (int i = 0; i < 500 && (fstat(fd, &st) || st.st_size < TRACE_SHM_HEADER_SIZE); i++)
        tk_sleep_ms(10);
    hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (hdr == MAP_FAILED)
        die("mmap");
    ring_fd = fd;
    for (int i = 0; i < 500; i++) {
        if (atomic_load_explicit(a64((uint64_t *)(void *)hdr->magic), memory_order_acquire) == magic_word())
            return;
        tk_sleep_ms(10);
    }
    fprintf(stderr, "ringwriter: no ring magic in %s\n", name);
    exit(1);
}

static void make_event(unsigned char *e, uint64_t i)
{
    trace_event_t ev = {.ts = 1000 + 10 * i,
                        .func = 0x401000 + (i % 13) * 0x40,
                        .call_site = 0x500000 + i,
                        .tid = (uint32_t)(7 + i % 5),
                        .kind = (uint8_t)(i % 2)};
    memcpy(e, &ev, sizeof ev);
}

/* Bounded: spin, then yield, then give up (the batch is dropped). */
static int lock_ring(uint32_t me)
{
    for (int i = 0; i < 100000; i++) {
        uint32_t free_ = 0;
        if (atomic_compare_exchange_weak_explicit(a32(&hdr->lock), &free_, me, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
        if (i > 1000)
            sched_yield();
    }
    return -1;
}

static void copy_in(uint64_t pos, const unsigned char *buf, uint64_t bytes)
{
    uint64_t cap = hdr->capacity, off = pos % cap, first = cap - off < bytes ? cap - off : bytes;
    memcpy(storage + off, buf, (size_t)first);
    memcpy(storage, buf + first, (size_t)(bytes - first));
}

/* 1 written, 0 dropped; with wait set, a full ring is waited out instead
 * (tests only).  commit 0: a version-3 batch is reserved and left so. */
static int g_mark; /* --mark 1: commit batches in a version-2 ring, as a tracer does in one with
                    * TRACE_SHM_FEATURE_COMMIT */

static int put_batch(const unsigned char *buf, uint64_t n, int wait, int commit)
{
    int v3 = hdr->version == TRACE_SHM_VERSION_COMMIT || g_mark;
again:;
    uint64_t bytes = (n + (uint64_t)v3) * TRACE_EVENT_SIZE, cap = hdr->capacity;
    if (lock_ring((uint32_t)getpid()))
        goto drop;
    uint64_t head = atomic_load_explicit(a64(&hdr->head), memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(a64(&hdr->tail), memory_order_acquire);
    if (cap - (head - tail) < bytes) {
        atomic_store_explicit(a32(&hdr->lock), 0, memory_order_release);
        if (wait) {
            tk_sleep_ms(1);
            goto again;
        }
        goto drop;
    }
    if (!v3) {
        copy_in(head, buf, bytes);
        atomic_store_explicit(a64(&hdr->head), head + bytes, memory_order_release);
        atomic_store_explicit(a32(&hdr->lock), 0, memory_order_release);
        return 1;
    }
    trace_shm_batch_t b = {0, (uint32_t)n, (uint32_t)n, (uint32_t)getpid(), 0, 0,
                           (uint8_t)(g_mark ? TRACE_SHM_BATCH_MARK : 0), {0, 0, 0}};
    _Atomic uint64_t *word = a64((uint64_t *)(void *)(storage + head % cap));
    memcpy(storage + head % cap + 8, (unsigned char *)&b + 8, sizeof b - 8);
    atomic_store_explicit(word, ~head, memory_order_relaxed);
    atomic_store_explicit(a64(&hdr->head), head + bytes, memory_order_release);
    atomic_store_explicit(a32(&hdr->lock), 0, memory_order_release);
    if (!commit)
        return 1;
    copy_in(head + TRACE_EVENT_SIZE, buf, bytes - TRACE_EVENT_SIZE);
    atomic_store_explicit(word, head, memory_order_release);
    return 1;
drop:
    atomic_fetch_add_explicit(a64(&hdr->dropped), n, memory_order_relaxed);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t create = 0, batch = 64, first = 0, abandon = 0, version = TRACE_SHM_VERSION_COMMIT;
    long linger = 0;
    int i = 1, wait = 0, legacy = 0;
    if (argc > 1 && !strcmp(argv[1], "--wait")) {
        wait = 1;
        i++;
    }
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--create")) create = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--batch")) batch = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--linger-ms")) linger = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--legacy")) legacy = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mark")) g_mark = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--first")) first = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--abandon")) abandon = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--version")) version = strtoull(argv[i + 1], NULL, 10);
        else break;
    }
    if (argc - i != 2 || batch < 1 || batch > 4096 || abandon > 4096 ||
        (version != TRACE_SHM_VERSION_COMMIT && version != TRACE_SHM_VERSION)) {
        fprintf(stderr, "usage: ringwriter [--wait] [--create BYTES] [--version V] [--batch B] [--linger-ms MS] "
                        "[--legacy 1] [--mark 1] [--first I] [--abandon B] SHM N\n");
        return 2;
    }
    uint64_t total = strtoull(argv[i + 1], NULL, 10), written = 0, dropped = 0;
    if (create)
        create_ring(argv[i], create, (uint32_t)version);
    else
        attach_ring(argv[i]);
    storage = (unsigned char *)hdr + TRACE_SHM_HEADER_SIZE;

    /* Proof of life for trace_stream, held until we exit, taken before we count. */
    if (!legacy && flock(ring_fd, LOCK_SH) != 0)
        die("flock");
    /* The lower half first; `writers` published with release after it. */
    hdr->flags = TRACE_FLAG_TICKS;
    hdr->load_bias = 0x1000;
    hdr->tick_hz = 3000000000u;
    hdr->t0_ticks = 111;
    hdr->t0_ns = 222;
    hdr->hook_ns = 33;
    atomic_fetch_add_explicit(a32(&hdr->writers), 1, memory_order_release);

    static unsigned char buf[4096 * TRACE_EVENT_SIZE];
    for (uint64_t next = 0; next < total;) {
        uint64_t n = total - next < batch ? total - next : batch;
        for (uint64_t k = 0; k < n; k++)
            make_event(buf + k * TRACE_EVENT_SIZE, first + next + k);
        if (put_batch(buf, n, wait, 1))
            written += n;
        else
            dropped += n;
        next += n;
    }
    printf("ringwriter: generated %llu written %llu dropped %llu\n", (unsigned long long)total,
           (unsigned long long)written, (unsigned long long)dropped);
    fflush(stdout);
    if (abandon) {
        for (uint64_t k = 0; k < abandon; k++)
            make_event(buf + k * TRACE_EVENT_SIZE, first + total + k);
        int put = hdr->version == TRACE_SHM_VERSION_COMMIT && put_batch(buf, abandon, 0, 0);
        printf("ringwriter: %s a batch of %llu and died\n", put ? "reserved" : "could not reserve",
               (unsigned long long)abandon);
        fflush(stdout);
        _exit(0);
    }
    tk_sleep_ms(linger);
    atomic_fetch_sub_explicit(a32(&hdr->writers), 1, memory_order_release);
    return 0;
}
