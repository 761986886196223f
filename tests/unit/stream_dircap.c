/*
 * stream_dircap.c - unit tests (TAP) of the directory's cap that serve's
 * connections share (--max-total-mb, src/serve/files.c): a write accounted
 * but still under way when another connection finds the cap reached and
 * the directory is summed again stays accounted, so the two together never
 * pass the cap (issue 29: on a loaded machine 30 connections at once
 * wrote a chunk or more past --max-total-mb 8, test serve/351); and a
 * write that fails gives back what it did not write, so the accounts end
 * equal to the files on disk.
 *
 * The race is made deterministic, not waited for: this program defines
 * write() itself, so files.o's writes come here, and the one to connection
 * A's file is held at a gate, after its bytes were accounted and before any
 * is written, while connection B writes until the cap stops it.  Every
 * wait is bounded.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "serve/files.h"
#include "scratch.h"
#include "trace.h"

#define CHUNK 4096u                      /* records a chunk, as trace_stream sends them */
#define CHUNK_BYTES (CHUNK * TRACE_EVENT_SIZE) /* 128 KiB */
#define CAP (8u * CHUNK_BYTES)           /* --max-total-mb 1 */
#define HDR TRACE_FILE_HEADER_SIZE
#define WAIT_S 10

static int n_test, failed;
static char dir[160]; /* scratch_make: under $TMPDIR */
static const struct proto_hello hello = {0, TRACE_FLAG_TICKS, 0x1000, 1000000, 7, 8, 9};
static unsigned char chunk[CHUNK_BYTES];

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

/* ---- the gate: writes to gate_fd wait until it opens -------------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_fd = -1;
static int gate_entered, gate_open, a_done;

static struct timespec deadline(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_S;
    return ts;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    pthread_mutex_lock(&gate_lock);
    if (fd == gate_fd) {
        struct timespec until = deadline();
        gate_entered = 1;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open && pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == 0) {
        }
    }
    pthread_mutex_unlock(&gate_lock);
    return syscall(SYS_write, fd, buf, n);
}

/* ---- the files on disk -------------------------------------------------- */

static long file_size(const struct files *f, uint32_t seq)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/trace.stream.%u.%u.bin", dir, (unsigned)f->id, (unsigned)seq);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static enum files_news a_news;

static void *append_a(void *arg)
{
    struct files *a = arg;
    a_news = files_append(a, chunk, CHUNK);
    pthread_mutex_lock(&gate_lock);
    a_done = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    return NULL;
}

/* A's chunk is accounted and its write held while B writes to the cap and
 * past it: B's refused chunk makes serve sum the directory again, which
 * finds A's bytes not yet there. */
static void test_write_under_way(void)
{
    struct files a, b;
    char err[FILES_ERR_MAX];
    ok(files_open(&a, dir, 64u << 20, 64u << 20, &hello, err, sizeof err) == 0 &&
           files_open(&b, dir, 64u << 20, 64u << 20, &hello, err, sizeof err) == 0,
       "two connections open their files");
    pthread_mutex_lock(&gate_lock);
    gate_fd = a.fd;
    pthread_mutex_unlock(&gate_lock);
    pthread_t t;
    if (pthread_create(&t, NULL, append_a, &a) != 0) {
        ok(0, "a thread for connection A");
        return;
    }
    pthread_mutex_lock(&gate_lock);
    struct timespec until = deadline();
    while (!gate_entered && !a_done && pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == 0) {
    }
    int held = gate_entered;
    pthread_mutex_unlock(&gate_lock);
    ok(held, "A's chunk is accounted and its write held before a byte is written");

    int written = 0;
    enum files_news news = FILES_OK;
    for (int i = 0; i < 10 && news == FILES_OK; i++)
        if ((news = files_append(&b, chunk, CHUNK)) == FILES_OK)
            written++;

    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(t, NULL);

    ok(a_news == FILES_OK && a.events == CHUNK, "A's chunk is written once its write goes on");
    ok(news == FILES_TOTAL_REACHED && written == 6 && b.events == 6 * CHUNK && b.discarded == CHUNK,
       "B writes 6 chunks and is stopped at its 7th: A's chunk under way still counts");
    long sa = file_size(&a, 0), sb = file_size(&b, 0);
    long want = 2 * HDR + 7 * (long)CHUNK_BYTES + TRACE_EVENT_SIZE;
    printf("# files: A %ld bytes, B %ld bytes, together %ld; the cap %u\n", sa, sb, sa + sb, CAP);
    ok(sa + sb == want && sa + sb - TRACE_EVENT_SIZE <= (long)CAP,
       "the files hold 2 headers, 7 chunks and B's budget marker: within the cap but for that last marker");
    ok(files_dir_bytes() == (uint64_t)(sa + sb), "the accounts equal the bytes on disk");
    files_close(&a);
    files_close(&b);
}

/* A write that fails part-way (RLIMIT_FSIZE) is cut back to the last whole
 * record; what it had reserved and did not leave on disk is given back. */
static void test_failed_write_gives_back(void)
{
    struct files c;
    char err[FILES_ERR_MAX];
    uint64_t before = files_dir_bytes();
    ok(files_open(&c, dir, 64u << 20, 64u << 20, &hello, err, sizeof err) == 0, "a third connection");
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1000; /* the 40 records below pass it part-way */
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    enum files_news news = files_append(&c, chunk, 40);
    setrlimit(RLIMIT_FSIZE, &old);
    files_close(&c);
    long sc = file_size(&c, 0);
    ok(news == FILES_WRITE_FAILED && sc == HDR + TRACE_EVENT_SIZE, "the write fails; the file is its header and a marker");
    printf("# accounted %llu bytes more, the file holds %ld\n",
           (unsigned long long)(files_dir_bytes() - before), sc);
    ok(files_dir_bytes() - before == (uint64_t)sc, "the 40 records not written are not accounted");
}

int main(void)
{
    char err[FILES_ERR_MAX];
    if (!scratch_make(dir, sizeof dir, "callsight-unit-dc"))
        return 1;
    ok(files_init_dir(dir, err, sizeof err) == 0, "init an empty directory");
    files_set_limits(CAP, 0, 0);
    test_write_under_way();
    test_failed_write_gives_back();
    printf("1..%d\n", n_test);
    if (scratch_remove(dir) != 0)
        return 1;
    return failed;
}
