/*
 * trace_reader.c - one trace file, read through a fixed buffer (see
 * trace_reader.h).  The analyzer's only way into trace files: the anchor
 * pre-pass uses trace_reader_seek_tail, the main pass reads each file once
 * from the start.
 */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_wire.h" /* its byte-order helpers */

/* A field in the file's order: little-endian, or a big-endian device's. */
static uint32_t get32(const unsigned char *p, int big) { return big ? wire_be32(p) : wire_le32(p); }
static uint64_t get64(const unsigned char *p, int big) { return big ? wire_be64(p) : wire_le64(p); }

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
    if (h->version != TRACE_FILE_VERSION && h->version != TRACE_FILE_VERSION_SUMMARY)
        return "unsupported trace version";
    if (!!(h->flags & TRACE_FLAG_BIGENDIAN) != *big)
        return "byte order flag contradicts the header";
    if (h->event_size != TRACE_EVENT_SIZE)
        return "unsupported event size";
    if (h->header_size < TRACE_FILE_HEADER_SIZE)
        return "header_size too small";
    if (h->header_size != TRACE_FILE_HEADER_SIZE && h->header_size % TRACE_EVENT_SIZE)
        return "header_size neither 80 nor a multiple of 32"; /* records would be misread */
    return NULL;
}

/* Whether this host stores integers least significant byte first. */
/* The host's byte order, which GCC and clang (the host tool's compilers)
 * predefine; the device side, built by any C11 compiler, tests it at run
 * time instead. */
#define HOST_LITTLE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

static void set_near(struct trace_reader *r);

static void set_clock(struct trace_reader *r)
{
    r->ticks = r->hdr.tick_hz != 0;
    r->ns_per_tick = r->ticks ? 1e9 / (double)r->hdr.tick_hz : 1.0;
    r->t0_ns = r->hdr.t0_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)r->hdr.t0_ns;
    r->clock_fast = r->t0_ns <= INT64_MAX - ((int64_t)1 << 51);
    set_near(r);
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
    r->native = r->swap != HOST_LITTLE;
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

int64_t trace_reader_tell(struct trace_reader *r)
{
    off_t at = lseek(r->fd, 0, SEEK_CUR);
    if (at < 0) {
        r->err = errno;
        return -1;
    }
    return (int64_t)at - (int64_t)(r->len - r->pos);
}

int trace_reader_seek(struct trace_reader *r, uint64_t off)
{
    /* a wrong offset would misread every record after it: refuse it */
    if (off < r->hdr.header_size || (off - r->hdr.header_size) % TRACE_EVENT_SIZE || off > (uint64_t)INT64_MAX)
        return -1;
    if (lseek(r->fd, (off_t)off, SEEK_SET) < 0) {
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
    memmove(r->buf.bytes, r->buf.bytes + r->pos, keep);
    r->pos = 0;
    r->len = keep;
    while (r->len < TRACE_EVENT_SIZE) {
        ssize_t k = read(r->fd, r->buf.bytes + r->len, sizeof r->buf.bytes - r->len);
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

/* At least one whole record buffered: TRACE_READER_EVENT, else why not. */
static enum trace_reader_status have_record(struct trace_reader *r)
{
    if (r->len - r->pos >= TRACE_EVENT_SIZE)
        return TRACE_READER_EVENT;
    ssize_t have = refill(r);
    if (have < 0)
        return TRACE_READER_IOERR;
    if ((size_t)have < TRACE_EVENT_SIZE) {
        r->trailing = (size_t)have;
        return have ? TRACE_READER_TRUNCATED : TRACE_READER_END;
    }
    return TRACE_READER_EVENT;
}

/* The record at p, in the file's byte order, as a host-order event.  p may
 * be ev itself: every field is read before it is written. */
static void decode(const unsigned char *p, int big, trace_event_t *ev)
{
    uint64_t ts = get64(p, big), func = get64(p + 8, big), site = get64(p + 16, big);
    uint32_t tid = get32(p + 24, big);
    ev->ts = ts;
    ev->func = func;
    ev->call_site = site;
    ev->tid = tid;
    /* kind and pad are single bytes, already where they belong */
}

enum trace_reader_status trace_reader_next(struct trace_reader *r, trace_event_t *ev)
{
    enum trace_reader_status st = have_record(r);
    if (st != TRACE_READER_EVENT)
        return st;
    const unsigned char *p = r->buf.bytes + r->pos;
    r->pos += TRACE_EVENT_SIZE;
    memcpy(ev, p, TRACE_EVENT_SIZE);
    if (!r->native)
        decode(p, r->swap, ev);
    return TRACE_READER_EVENT;
}

int trace_reader_set_anchor(struct trace_reader *r, uint64_t anchor_ticks, uint64_t anchor_ns)
{
    if (!r->ticks || anchor_ticks <= r->hdr.t0_ticks || anchor_ns <= r->hdr.t0_ns)
        return -1;
    r->ns_per_tick = (double)(anchor_ns - r->hdr.t0_ns) / (double)(anchor_ticks - r->hdr.t0_ticks);
    set_near(r);
    return 0;
}

/* The conversion as first written: the reference the fast path below must
 * agree with, and what it falls back on.  The difference is taken in
 * integers so that only the elapsed part goes through double precision; the
 * result saturates. */
static int64_t ticks_to_ns_slow(const struct trace_reader *r, uint64_t ts)
{
    double d = ts >= r->hdr.t0_ticks ? (double)(ts - r->hdr.t0_ticks) * r->ns_per_tick
                                     : -(double)(r->hdr.t0_ticks - ts) * r->ns_per_tick;
    int64_t base = r->t0_ns;
    d = nearbyint(d);
    if (d >= 9.2e18 || (d > 0 && (int64_t)d > INT64_MAX - base))
        return INT64_MAX;
    if (d <= -9.2e18)
        return INT64_MIN;
    return base + (int64_t)d; /* base >= 0, so a negative d cannot overflow */
}

/*
 * The same result, bit for bit, without the libm call and the saturation
 * tests, for every ts within 2^63 ticks and 2^51 ns (26 days) of the start
 * anchor; the analyzer converts every event's ts.
 *   - ts - t0 as a signed integer converts to the same double as the
 *     slow path's unsigned one, negated when ts < t0: conversion and
 *     product round symmetrically about zero.
 *   - For |d| < 2^51, d + 1.5 * 2^52 lies in [2^52, 2^53), where doubles are
 *     the integers: the addition rounds d to an integer, to nearest with
 *     ties to even (1.5 * 2^52 is even, so parity is kept), which is what
 *     nearbyint does in the default rounding mode; the subtraction is exact.
 *   - t0_ns <= INT64_MAX - 2^51 (clock_fast) means the sum cannot saturate.
 * This needs doubles evaluated in double precision (FLT_EVAL_METHOD 0, not
 * x87) and no reassociation or fused multiply-add (ISO C mode, no
 * -ffast-math: the host build's flags); elsewhere the slow path does it all.
 */
static int fast_ns(uint64_t t0, double ns_per_tick, int64_t t0_ns, uint64_t ts, int64_t *ns)
{
#if FLT_EVAL_METHOD == 0
    const double two51 = 2251799813685248.0, round_at = 6755399441055744.0; /* 2^51, 1.5 * 2^52 */
    int64_t diff;
    if (ts >= t0 && ts - t0 <= (uint64_t)INT64_MAX)
        diff = (int64_t)(ts - t0);
    else if (ts < t0 && t0 - ts <= (uint64_t)INT64_MAX)
        diff = -(int64_t)(t0 - ts);
    else
        return 0;
    double d = (double)diff * ns_per_tick;
    if (!(fabs(d) < two51))
        return 0;
    *ns = t0_ns + (int64_t)((d + round_at) - round_at);
    return 1;
#else
    (void)t0, (void)ns_per_tick, (void)t0_ns, (void)ts, (void)ns;
    return 0;
#endif
}

static int64_t ticks_to_ns(const struct trace_reader *r, uint64_t ts)
{
    int64_t ns;
    if (r->clock_fast && fast_ns(r->hdr.t0_ticks, r->ns_per_tick, r->t0_ns, ts, &ns))
        return ns;
    return ticks_to_ns_slow(r, ts);
}

int64_t trace_reader_ns(const struct trace_reader *r, uint64_t ts)
{
    if (!r->ticks)
        return ts > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ts;
    return ticks_to_ns(r, ts);
}

/*
 * The ticks near the start anchor for which fast_ns's two tests cannot
 * fail, found once per clock so that a batch tests one range instead:
 * |ts - t0| <= lim keeps the difference in int64_t, and since conversion
 * and product round monotonically, |(double)diff * ns_per_tick| is at most
 * (double)lim * ns_per_tick, which is checked here to be below 2^51.  The
 * result is then fast_ns's, computed the same way.
 */
static void set_near(struct trace_reader *r)
{
    const double two51 = 2251799813685248.0;
    r->have_near = 0;
    if (!r->ticks || !r->clock_fast || !(r->ns_per_tick > 0) || FLT_EVAL_METHOD != 0)
        return;
    double x = two51 / r->ns_per_tick / 2;
    uint64_t lim = !(x < 9.2e18) ? (uint64_t)INT64_MAX : (uint64_t)x;
    if (!((double)lim * r->ns_per_tick < two51))
        return;
    uint64_t t0 = r->hdr.t0_ticks;
    uint64_t lo = t0 > lim ? t0 - lim : 0, hi = t0 < UINT64_MAX - lim ? t0 + lim : UINT64_MAX;
    r->near_lo = lo;
    r->near_span = hi - lo;
    r->have_near = 1;
}

/* The ns of every record in ev[0, n), into ns[0, n). */
static void batch_ns(const struct trace_reader *r, const trace_event_t *ev, int64_t *ns, size_t n)
{
    if (!r->ticks) {
        for (size_t i = 0; i < n; i++)
            ns[i] = ev[i].ts > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ev[i].ts;
        return;
    }
    /* The clock in locals: stores to ns[] could otherwise alias r's fields. */
    const uint64_t t0 = r->hdr.t0_ticks;
    const double per_tick = r->ns_per_tick;
    const int64_t t0_ns = r->t0_ns;
    const int fast = r->clock_fast;
    if (r->have_near) {
        const double round_at = 6755399441055744.0; /* 1.5 * 2^52, as in fast_ns */
        const uint64_t lo = r->near_lo, span = r->near_span;
        for (size_t i = 0; i < n; i++) {
            uint64_t ts = ev[i].ts;
            if (ts - lo <= span) { /* lo <= ts <= lo + span */
                int64_t diff = ts >= t0 ? (int64_t)(ts - t0) : -(int64_t)(t0 - ts);
                double d = (double)diff * per_tick;
                ns[i] = t0_ns + (int64_t)((d + round_at) - round_at);
            } else if (!fast_ns(t0, per_tick, t0_ns, ts, &ns[i]))
                ns[i] = ticks_to_ns_slow(r, ts);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!fast || !fast_ns(t0, per_tick, t0_ns, ev[i].ts, &ns[i]))
            ns[i] = ticks_to_ns_slow(r, ev[i].ts);
}

enum trace_reader_status trace_reader_next_batch(struct trace_reader *r,
                                                 struct trace_reader_batch *b)
{
    b->n = 0;
    enum trace_reader_status st = have_record(r);
    if (st != TRACE_READER_EVENT)
        return st;
    size_t first = r->pos / TRACE_EVENT_SIZE, n = (r->len - r->pos) / TRACE_EVENT_SIZE;
    if (n > TRACE_READER_HANDOUT)
        n = TRACE_READER_HANDOUT;
    trace_event_t *ev = r->buf.ev + first;
    r->pos += n * TRACE_EVENT_SIZE;
    if (!r->native)
        for (size_t i = 0; i < n; i++)
            decode((const unsigned char *)&ev[i], r->swap, &ev[i]);
    batch_ns(r, ev, r->ns + first, n);
    b->ev = ev;
    b->ns = r->ns + first;
    b->n = n;
    return TRACE_READER_EVENT;
}
