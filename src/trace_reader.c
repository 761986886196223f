/*
 * trace_reader.c - one trace file, read through a fixed buffer (see
 * trace_reader.h).  The analyzer's only way into trace files: the anchor
 * pre-pass uses trace_reader_seek_tail, the main pass reads each file once
 * from the start.
 */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t get32(const unsigned char *p, int big)
{
    if (big)
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t get64(const unsigned char *p, int big)
{
    uint64_t hi = get32(p + (big ? 0 : 4), big), lo = get32(p + (big ? 4 : 0), big);
    return hi << 32 | lo;
}

/* Read exactly n bytes at offset, or fail; 1 ok, 0 short, -1 error. */
static int read_at(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        got += (size_t)k;
    }
    return 1;
}

static void decode_header(const unsigned char *p, int big, trace_file_header_t *h)
{
    memcpy(h->magic, p, 8);
    h->version = get32(p + 8, big);
    h->event_size = get32(p + 12, big);
    h->header_size = get32(p + 16, big);
    h->flags = get32(p + 20, big);
    h->load_bias = get64(p + 24, big);
    h->tick_hz = get64(p + 32, big);
    h->t0_ticks = get64(p + 40, big);
    h->t0_ns = get64(p + 48, big);
    h->hook_ns = get64(p + 56, big);
    h->pid = get32(p + 64, big);
    h->seq = get32(p + 68, big);
    h->reserved = get64(p + 72, big);
}

/* Byte order from the version field (a small number, so a swapped one is
 * huge), checked against the BIGENDIAN flag read in that order. */
static const char *check_header(const unsigned char *p, trace_file_header_t *h, int *big)
{
    if (memcmp(p, TRACE_FILE_MAGIC, 8) != 0)
        return "not a callsight trace (bad magic)";
    *big = get32(p + 8, 0) > 0xffffu;
    decode_header(p, *big, h);
    if (h->version != TRACE_FILE_VERSION)
        return "unsupported trace version";
    if (!!(h->flags & TRACE_FLAG_BIGENDIAN) != *big)
        return "byte order flag contradicts the header";
    if (h->event_size != TRACE_EVENT_SIZE)
        return "unsupported event size";
    if (h->header_size < TRACE_FILE_HEADER_SIZE)
        return "header_size too small";
    return NULL;
}

static void set_clock(struct trace_reader *r)
{
    r->ticks = r->hdr.tick_hz != 0;
    r->ns_per_tick = r->ticks ? 1e9 / (double)r->hdr.tick_hz : 1.0;
}

int trace_reader_open(struct trace_reader *r, const char *path, char *msg, size_t msglen)
{
    unsigned char raw[TRACE_FILE_HEADER_SIZE];
    struct stat st;
    const char *why = NULL;

    r->pos = r->len = r->trailing = 0;
    r->err = 0;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        snprintf(msg, msglen, "%s", strerror(errno));
        return -1;
    }
    if (fstat(r->fd, &st) < 0) {
        snprintf(msg, msglen, "%s", strerror(errno));
        goto fail;
    }
    r->file_size = (uint64_t)st.st_size;
    size_t have = r->file_size < sizeof raw ? (size_t)r->file_size : sizeof raw;
    if (read_at(r->fd, raw, have, 0) <= 0) {
        snprintf(msg, msglen, "%s", have ? strerror(errno ? errno : EIO) : "empty file");
        goto fail;
    }
    if (have == 0)
        why = "empty file";
    else if (have < 8 || memcmp(raw, TRACE_FILE_MAGIC, 8) != 0)
        why = "not a callsight trace (bad magic)";
    else if (have < sizeof raw)
        why = "truncated header";
    else
        why = check_header(raw, &r->hdr, &r->swap);
    if (!why && r->file_size < r->hdr.header_size)
        why = "truncated header";
    if (why) {
        snprintf(msg, msglen, "%s", why);
        goto fail;
    }
    set_clock(r);
    if (lseek(r->fd, (off_t)r->hdr.header_size, SEEK_SET) < 0) {
        snprintf(msg, msglen, "%s", strerror(errno));
        goto fail;
    }
    return 0;
fail:
    close(r->fd);
    r->fd = -1;
    return -1;
}

void trace_reader_close(struct trace_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

int trace_reader_seek_tail(struct trace_reader *r, uint64_t bytes)
{
    uint64_t records = (r->file_size - r->hdr.header_size) / TRACE_EVENT_SIZE;
    uint64_t want = bytes / TRACE_EVENT_SIZE;
    uint64_t first = records > want ? records - want : 0;
    off_t off = (off_t)(r->hdr.header_size + first * TRACE_EVENT_SIZE);
    if (lseek(r->fd, off, SEEK_SET) < 0) {
        r->err = errno;
        return -1;
    }
    r->pos = r->len = r->trailing = 0;
    return 0;
}

/* Refill keeping the unread tail; returns bytes now buffered, -1 on error. */
static ssize_t refill(struct trace_reader *r)
{
    size_t keep = r->len - r->pos;
    memmove(r->buf, r->buf + r->pos, keep);
    r->pos = 0;
    r->len = keep;
    while (r->len < TRACE_EVENT_SIZE) {
        ssize_t k = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            r->err = errno;
            return -1;
        }
        if (k == 0)
            break;
        r->len += (size_t)k;
    }
    return (ssize_t)r->len;
}

enum trace_reader_status trace_reader_next(struct trace_reader *r, trace_event_t *ev)
{
    if (r->len - r->pos < TRACE_EVENT_SIZE) {
        ssize_t have = refill(r);
        if (have < 0)
            return TRACE_READER_IOERR;
        if ((size_t)have < TRACE_EVENT_SIZE) {
            r->trailing = (size_t)have;
            return have ? TRACE_READER_TRUNCATED : TRACE_READER_END;
        }
    }
    const unsigned char *p = r->buf + r->pos;
    r->pos += TRACE_EVENT_SIZE;
    ev->ts = get64(p, r->swap);
    ev->func = get64(p + 8, r->swap);
    ev->call_site = get64(p + 16, r->swap);
    ev->tid = get32(p + 24, r->swap);
    ev->kind = p[28];
    memcpy(ev->pad, p + 29, sizeof ev->pad);
    return TRACE_READER_EVENT;
}

int trace_reader_set_anchor(struct trace_reader *r, uint64_t anchor_ticks, uint64_t anchor_ns)
{
    if (!r->ticks || anchor_ticks <= r->hdr.t0_ticks || anchor_ns <= r->hdr.t0_ns)
        return -1;
    r->ns_per_tick = (double)(anchor_ns - r->hdr.t0_ns) / (double)(anchor_ticks - r->hdr.t0_ticks);
    return 0;
}

int64_t trace_reader_ns(const struct trace_reader *r, uint64_t ts)
{
    if (!r->ticks)
        return ts > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ts;
    /* The difference is taken in integers so that only the elapsed part
     * goes through double precision; the result saturates. */
    double d = ts >= r->hdr.t0_ticks ? (double)(ts - r->hdr.t0_ticks) * r->ns_per_tick
                                     : -(double)(r->hdr.t0_ticks - ts) * r->ns_per_tick;
    int64_t base = r->hdr.t0_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)r->hdr.t0_ns;
    d = nearbyint(d);
    if (d >= 9.2e18 || (d > 0 && (int64_t)d > INT64_MAX - base))
        return INT64_MAX;
    if (d <= -9.2e18)
        return INT64_MIN;
    return base + (int64_t)d; /* base >= 0, so a negative d cannot overflow */
}
