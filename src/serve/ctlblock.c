/*
 * ctlblock.c - open, read and write a process's live-control block (see
 * ctlblock.h).
 */
#include "ctlblock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ctlblock_open(struct ctlblock *b, unsigned long pid, int *gone, char *msg, size_t len)
{
    char path[96];
    struct stat st;
    memset(b, 0, sizeof *b);
    b->fd = -1;
    *gone = 0;
    snprintf(path, sizeof path, "/dev/shm/callsight-ctl-%lu-%lu", (unsigned long)geteuid(), pid);
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        *gone = errno == ENOENT;
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
        st.st_size != (off_t)TRACE_CTL_SIZE) {
        snprintf(msg, len, "%s: not a control block of this user that only it can open (%lld bytes, mode %o)",
                 path, (long long)st.st_size, (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, TRACE_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    trace_shm_control_t *c = m;
    uint64_t magic = atomic_load_explicit((_Atomic uint64_t *)(void *)c->magic, memory_order_acquire), want;
    memcpy(&want, TRACE_CTL_MAGIC, sizeof want);
    if (magic != want || c->version != TRACE_CTL_VERSION || c->size != TRACE_CTL_SIZE ||
        c->pid != pid) {
        snprintf(msg, len, "%s: not a control block this callsight reads (version %u)", path, (unsigned)c->version);
        munmap(m, TRACE_CTL_SIZE);
        close(fd);
        return -1;
    }
    b->fd = fd;
    b->c = c;
    b->pid = pid;
    return 0;
}

void ctlblock_close(struct ctlblock *b)
{
    if (b->c)
        munmap(b->c, TRACE_CTL_SIZE);
    if (b->fd >= 0)
        close(b->fd);
    b->c = NULL;
    b->fd = -1;
}

static uint64_t load_gen(const trace_shm_control_t *c)
{
    return atomic_load_explicit((_Atomic uint64_t *)&c->gen, memory_order_acquire);
}

size_t ctlblock_current(const struct ctlblock *b, uint64_t *gen, uint32_t *flags, uint64_t *addrs)
{
    uint64_t g = load_gen(b->c);
    uint32_t k = (uint32_t)(g / 2u) & 1u;
    size_t n = 0;
    *gen = g;
    *flags = g ? b->c->setting[k].flags : 0;
    for (uint32_t i = 0; g && i < TRACE_CTL_SLOTS && n < TRACE_CTL_FUNCS_MAX; i++)
        if (b->c->funcs[k][i])
            addrs[n++] = b->c->funcs[k][i];
    return n;
}

/* One writer at a time: an exclusive flock, waited for up to a second. */
static int lock_block(int fd)
{
    for (int i = 0; i < 100; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

int ctlblock_write(struct ctlblock *b, uint32_t flags, const uint64_t build_id[2], const uint64_t *addrs, size_t n,
                   uint64_t under, uint32_t depth, const char *threads, const uint64_t trig[2], uint32_t mode, int keep,
                   uint64_t *gen, char *msg, size_t len)
{
    if (n > TRACE_CTL_FUNCS_MAX) {
        snprintf(msg, len, "%zu functions: a setting holds at most %u", n, TRACE_CTL_FUNCS_MAX);
        return -1;
    }
    if (lock_block(b->fd) < 0) {
        snprintf(msg, len, "another callsight ctl kept the block for over a second");
        return -1;
    }
    const char *why = trace_ctl_publish(b->c, flags, build_id, addrs, (uint32_t)n, under, depth, threads, trig, mode, keep, gen);
    flock(b->fd, LOCK_UN);
    if (why)
        snprintf(msg, len, "%s", why);
    return why ? -1 : 0;
}

int ctlblock_wait(const struct ctlblock *b, uint64_t gen, unsigned ms)
{
    for (unsigned t = 0;; t += 5) {
        if (atomic_load_explicit((_Atomic uint64_t *)&b->c->applied, memory_order_relaxed) >= gen)
            return 1;
        if (t >= ms)
            return 0;
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
}
