/*
 * attack.c - test helper: a hostile (or a carefully legitimate) peer of
 * callsight serve, for tests/serve/351-serve-hostile.t.
 *
 *   attack [--src ADDR] [--hold-ms MS] MODE N HOST PORT [MODE ARGS]
 *
 * Modes (N: how many connections, all open at once):
 *   idle        connect and send nothing
 *   slowloris   send the handshake one byte per second
 *   hello       a valid handshake and a resume notice, then nothing
 *   notices     one connection (N ignored: 1): handshake, then COUNT drop
 *               notices (MODE ARGS: COUNT), then close
 *   zeros       one connection (N: chunks): handshake, then N chunks of the
 *               largest size, 4 MiB of zero records each, which zstd makes
 *               a frame of about 140 bytes
 *   sums        summary increments that hold serve's memory (MODE ARGS:
 *               FUNCS [end]): each connection offers summaries, waits for
 *               the ack and sends, in chunks of 11 functions (about 240 KiB
 *               of records each, so that serve's chunk buffers stay small
 *               beside the totals), snapshot 1 of thread 7 with FUNCS
 *               functions of TRACE_SUMMARY_NBUCKETS calls each, one in
 *               every bucket; without "end" the snapshot is never ended.
 *               Then a drop notice counting FUNCS, so serve's log says when
 *               it has taken everything before.  All connections send at
 *               once (the same bytes), without blocking on any one.
 *   stream      one resumable stream: handshake, resume notice (MODE ARGS:
 *               SID START SEQ EVENTS [KEYHEX|-] [PAUSEFILE GOFILE]), with
 *               the resume key if KEYHEX, then EVENTS events in chunks of
 *               100; with PAUSEFILE, touches it after the first chunk and
 *               waits for GOFILE before the rest
 * All connections are held until --hold-ms has passed (default 0) or, for
 * idle/slowloris/hello, every one of them was closed by the server.  Prints
 * "attack: MODE: N opened, K closed by the server".
 * --src binds the connections to ADDR first (127.0.0.2: another peer).
 *
 * Event i of `stream`: ts = 1000 + 10 i, func = 0x401000 + (i % 13) * 0x40,
 * call_site = 0x500000 + i, tid = 7 + i % 5, kind = i % 2, as streamgen's.
 *
 * Built by make (check-build) into $(BUILD)/tests/tools/; by hand:
 *   cc -std=c11 -I runtime -o attack attack.c -lzstd
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "trace.h"
#include "trace_wire.h"
#include "toolkit.h"

#define MAX_FDS 4096

static const char *src_addr;
static long hold_ms;

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(const char *host, int port)
{
    struct sockaddr_in a = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (src_addr) {
        struct sockaddr_in s = {0};
        s.sin_family = AF_INET;
        inet_pton(AF_INET, src_addr, &s.sin_addr);
        if (bind(fd, (struct sockaddr *)&s, sizeof s) != 0) {
            close(fd);
            return -1;
        }
    }
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void make_hello(unsigned char *h, uint32_t flags)
{
    memset(h, 0, TRACE_STREAM_HANDSHAKE_SIZE);
    memcpy(h, TRACE_STREAM_MAGIC, 8);
    wire_put_le32(h + offsetof(trace_stream_handshake_t, version), TRACE_STREAM_VERSION);
    wire_put_le32(h + offsetof(trace_stream_handshake_t, event_size), TRACE_EVENT_SIZE);
    wire_put_le32(h + offsetof(trace_stream_handshake_t, flags), TRACE_FLAG_TICKS | flags);
    wire_put_le64(h + offsetof(trace_stream_handshake_t, load_bias), 0x1000);
    wire_put_le64(h + offsetof(trace_stream_handshake_t, tick_hz), 3000000000u);
    wire_put_le64(h + offsetof(trace_stream_handshake_t, t0_ticks), 111);
    wire_put_le64(h + offsetof(trace_stream_handshake_t, t0_ns), 222);
    wire_put_le64(h + offsetof(trace_stream_handshake_t, hook_ns), 33);
}

/* One zstd-framed chunk. */
static int send_chunk(int fd, uint32_t type, const void *raw, size_t len)
{
    size_t cap = ZSTD_compressBound(len);
    unsigned char *z = malloc(cap + TRACE_STREAM_CHUNK_HEADER_SIZE);
    if (!z)
        return -1;
    size_t zl = ZSTD_compress(z + TRACE_STREAM_CHUNK_HEADER_SIZE, cap, raw, len, 1);
    if (ZSTD_isError(zl)) {
        free(z);
        return -1;
    }
    wire_put_le32(z, type);
    wire_put_le32(z + 4, (uint32_t)len);
    wire_put_le32(z + 8, (uint32_t)zl);
    int rc = tk_send_all(fd, z, zl + TRACE_STREAM_CHUNK_HEADER_SIZE);
    free(z);
    return rc;
}

static int send_resume(int fd, uint64_t sid, uint64_t start, uint32_t seq)
{
    unsigned char r[TRACE_STREAM_RESUME_SIZE] = {0};
    wire_put_le64(r + offsetof(trace_stream_resume_t, stream_id), sid);
    wire_put_le64(r + offsetof(trace_stream_resume_t, start_ns), start);
    wire_put_le32(r + offsetof(trace_stream_resume_t, conn_seq), seq);
    return send_chunk(fd, TRACE_CHUNK_RESUME, r, sizeof r);
}

static int send_events(int fd, long first, long n)
{
    unsigned char *raw = malloc((size_t)n * TRACE_EVENT_SIZE);
    if (!raw)
        return -1;
    for (long i = 0; i < n; i++)
        tk_make_event(raw + (size_t)i * TRACE_EVENT_SIZE, first + i, 0);
    int rc = send_chunk(fd, TRACE_CHUNK_EVENTS, raw, (size_t)n * TRACE_EVENT_SIZE);
    free(raw);
    return rc;
}

/* 1 when the server has closed fd (or reset it). */
static int closed_by_peer(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    char b[256];
    if (poll(&p, 1, 0) <= 0)
        return 0;
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Hold fds until hold_ms has passed or all were closed; slowloris trickles. */
static int hold(int *fds, int n, int trickle)
{
    static unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE];
    int closed = 0, sent = 0;
    char *gone = calloc((size_t)n, 1);
    make_hello(hello, 0);
    long end = now_ms() + hold_ms, next = now_ms();
    while (gone && closed < n && now_ms() < end) {
        for (int i = 0; i < n; i++)
            if (!gone[i] && closed_by_peer(fds[i])) {
                gone[i] = 1;
                closed++;
            }
        if (trickle && now_ms() >= next && sent < (int)sizeof hello) {
            for (int i = 0; i < n; i++)
                if (!gone[i])
                    (void)!send(fds[i], hello + sent, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            sent++;
            next += 1000;
        }
        tk_sleep_ms(20);
    }
    free(gone);
    return closed;
}

static int many(const char *mode, int n, const char *host, int port)
{
    static int fds[MAX_FDS];
    int opened = 0;
    unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE];
    make_hello(hello, 0);
    for (int i = 0; i < n && i < MAX_FDS; i++) {
        int fd = dial(host, port);
        if (fd < 0)
            break;
        if (!strcmp(mode, "hello") && (tk_send_all(fd, hello, sizeof hello) ||
                                       send_resume(fd, 0xbad0000 + (uint64_t)i, 5, 1))) {
            close(fd);
            continue;
        }
        fds[opened++] = fd;
    }
    int closed = hold(fds, opened, !strcmp(mode, "slowloris"));
    printf("attack: %s: %d opened, %d closed by the server\n", mode, opened, closed);
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    return 0;
}

/* ---- sums ---------------------------------------------------------------- */

#define SUMS_FUNCS_PER_CHUNK 11
#define SUMS_REC_MAX (1 + SUMS_FUNCS_PER_CHUNK * (2 + TRACE_SUMMARY_NBUCKETS / 2) + 2)

static void sum_rec(unsigned char *r, unsigned part, uint64_t ts, uint64_t func, uint64_t site)
{
    memset(r, 0, TRACE_EVENT_SIZE);
    wire_put_le64(r + offsetof(trace_event_t, ts), ts);
    wire_put_le64(r + offsetof(trace_event_t, func), func);
    wire_put_le64(r + offsetof(trace_event_t, call_site), site);
    wire_put_le32(r + offsetof(trace_event_t, tid), 7);
    r[offsetof(trace_event_t, kind)] = TRACE_KIND_SUMMARY;
    r[offsetof(trace_event_t, pad)] = (unsigned char)part;
}

/* Append one chunk of type (n records, or len raw bytes) as sent to buf. */
static int add_chunk(unsigned char **buf, size_t *len, size_t *cap, uint32_t type, const void *raw, size_t n)
{
    size_t bound = ZSTD_compressBound(n) + TRACE_STREAM_CHUNK_HEADER_SIZE;
    if (*len + bound > *cap) {
        size_t c = (*cap + bound) * 2;
        unsigned char *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p, *cap = c;
    }
    unsigned char *h = *buf + *len;
    size_t zl = ZSTD_compress(h + TRACE_STREAM_CHUNK_HEADER_SIZE, bound - TRACE_STREAM_CHUNK_HEADER_SIZE, raw, n, 1);
    if (ZSTD_isError(zl))
        return -1;
    wire_put_le32(h, type);
    wire_put_le32(h + 4, (uint32_t)n);
    wire_put_le32(h + 8, (uint32_t)zl);
    *len += zl + TRACE_STREAM_CHUNK_HEADER_SIZE;
    return 0;
}

/* Records rec[0..n) as a chunk of summary increments: in planes (trace_wire.h). */
static int add_planes(unsigned char **buf, size_t *len, size_t *cap, const unsigned char *rec, size_t n,
                      unsigned char *planes)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < TRACE_EVENT_SIZE; k++)
            planes[k * n + i] = rec[i * TRACE_EVENT_SIZE + k];
    return add_chunk(buf, len, cap, TRACE_CHUNK_SUMMARY_INCREMENTS, planes, n * TRACE_EVENT_SIZE);
}

/* Everything a sums connection sends after the handshake, as bytes. */
static unsigned char *sums_bytes(long funcs, int end, size_t *len)
{
    size_t cap = 0, n = 0;
    unsigned char *buf = NULL, v[8];
    unsigned char *rec = malloc(SUMS_REC_MAX * TRACE_EVENT_SIZE), *planes = malloc(SUMS_REC_MAX * TRACE_EVENT_SIZE);
    *len = 0;
    if (!rec || !planes)
        return NULL;
    sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_BEGIN, 1000, 1, (uint64_t)funcs);
    for (long f = 0; f < funcs; f++) {
        sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_FUNC, 100u * TRACE_SUMMARY_NBUCKETS,
                0x401000 + 0x10 * (uint64_t)f, TRACE_SUMMARY_NBUCKETS);
        sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_TIMES, 50u * TRACE_SUMMARY_NBUCKETS, 1, 1u << 20);
        for (uint64_t b = 0; b < TRACE_SUMMARY_NBUCKETS; b += 2)
            sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_BUCKETS, 1, 1, b << 32 | (b + 1));
        if ((f + 1) % SUMS_FUNCS_PER_CHUNK && f + 1 < funcs)
            continue;
        if (end && f + 1 == funcs) {
            sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_META, 0, 0, 0);
            sum_rec(rec + n++ * TRACE_EVENT_SIZE, TRACE_SUMMARY_END, 2000, 1, 0);
        }
        if (add_planes(&buf, len, &cap, rec, n, planes))
            return NULL;
        n = 0;
    }
    wire_put_le64(v, (uint64_t)funcs);
    if (add_chunk(&buf, len, &cap, TRACE_CHUNK_NOTICE, v, sizeof v))
        return NULL;
    free(rec);
    free(planes);
    return buf;
}

/* The server's ack, waited for (10 s at most): 0, or -1. */
static int read_ack(int fd)
{
    unsigned char ack[TRACE_STREAM_ACK_SIZE];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof ack && poll(&p, 1, 10000) > 0) {
        ssize_t n = recv(fd, ack + got, sizeof ack - got, 0);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return got == sizeof ack ? 0 : -1;
}

/* buf to every fd at once, never blocking on one; a connection the server
 * closed is left (hold counts it), and everything stops at hold_ms. */
static void send_all_at_once(int *fds, int n, const unsigned char *buf, size_t len)
{
    size_t *off = calloc((size_t)n, sizeof *off);
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    long end = now_ms() + hold_ms;
    int left = n;
    for (int i = 0; off && p && i < n; i++)
        p[i] = (struct pollfd){fds[i], POLLOUT, 0};
    while (off && p && left > 0 && now_ms() < end && poll(p, (nfds_t)n, 100) >= 0)
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t k = send(fds[i], buf + off[i], len - off[i], MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k > 0)
                off[i] += (size_t)k;
            if ((k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || k == 0 || off[i] == len) {
                p[i].fd = -1;
                left--;
            }
        }
    free(off);
    free(p);
}

static int sums(int n, const char *host, int port, char **a, int na)
{
    static int fds[MAX_FDS];
    unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE];
    size_t len;
    if (na < 1)
        return 2;
    unsigned char *buf = sums_bytes(atol(a[0]), na > 1 && !strcmp(a[1], "end"), &len);
    if (!buf)
        return 1;
    make_hello(hello, TRACE_STREAM_FLAG_SUMMARY_OFFER);
    int opened = 0;
    for (int i = 0; i < n && i < MAX_FDS; i++) {
        int fd = dial(host, port);
        if (fd < 0)
            break;
        if (tk_send_all(fd, hello, sizeof hello) || read_ack(fd)) {
            close(fd);
            continue;
        }
        fds[opened++] = fd;
    }
    send_all_at_once(fds, opened, buf, len);
    int closed = hold(fds, opened, 0);
    printf("attack: sums: %d opened, %d closed by the server\n", opened, closed);
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    free(buf);
    return 0;
}

static int notices(const char *host, int port, long count)
{
    unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE], v[8];
    int fd = dial(host, port);
    make_hello(hello, 0);
    if (fd < 0 || tk_send_all(fd, hello, sizeof hello) || send_events(fd, 0, 10))
        return 1;
    for (long i = 1; i <= count; i++) {
        wire_put_le64(v, (uint64_t)i);
        if (send_chunk(fd, TRACE_CHUNK_NOTICE, v, sizeof v))
            return 1;
    }
    close(fd);
    printf("attack: notices: %ld sent\n", count);
    return 0;
}

static int zeros(const char *host, int port, int n)
{
    unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE];
    unsigned char *raw = calloc(1, TRACE_STREAM_MAX_RAW);
    int fd = dial(host, port);
    make_hello(hello, 0);
    if (!raw || fd < 0 || tk_send_all(fd, hello, sizeof hello))
        return 1;
    for (int i = 0; i < n; i++)
        if (send_chunk(fd, TRACE_CHUNK_EVENTS, raw, TRACE_STREAM_MAX_RAW))
            return 1;
    shutdown(fd, SHUT_WR);
    char b[64];
    while (recv(fd, b, sizeof b, 0) > 0)
        ;
    close(fd);
    free(raw);
    printf("attack: zeros: %d chunks sent\n", n);
    return 0;
}

static int parse_key(const char *hex, unsigned char *key)
{
    if (strlen(hex) != 2 * TRACE_STREAM_RESUME_KEY_SIZE)
        return -1;
    for (int i = 0; i < (int)TRACE_STREAM_RESUME_KEY_SIZE; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        key[i] = (unsigned char)v;
    }
    return 0;
}

static void wait_for(const char *pause, const char *go)
{
    FILE *f = fopen(pause, "w");
    if (f)
        fclose(f);
    struct stat st;
    for (int i = 0; i < 3000 && stat(go, &st) != 0; i++)
        tk_sleep_ms(10);
}

static int stream(const char *host, int port, char **a, int na)
{
    unsigned char hello[TRACE_STREAM_HANDSHAKE_SIZE], key[TRACE_STREAM_RESUME_KEY_SIZE];
    if (na < 4)
        return 2;
    uint64_t sid = strtoull(a[0], NULL, 0), start = strtoull(a[1], NULL, 0);
    uint32_t seq = (uint32_t)strtoul(a[2], NULL, 0);
    long events = atol(a[3]);
    int keyed = na > 4 && strcmp(a[4], "-") != 0;
    if (keyed && parse_key(a[4], key))
        return 2;
    int fd = dial(host, port);
    make_hello(hello, keyed ? TRACE_STREAM_FLAG_RESUME_KEY : 0);
    if (fd < 0 || tk_send_all(fd, hello, sizeof hello) || send_resume(fd, sid, start, seq))
        return 1;
    if (keyed && send_chunk(fd, TRACE_CHUNK_RESUME_KEY, key, sizeof key))
        return 1;
    for (long sent = 0; sent < events; sent += 100) {
        if (send_events(fd, sent, events - sent < 100 ? events - sent : 100))
            return 1;
        if (sent == 0 && na > 6)
            wait_for(a[5], a[6]);
    }
    shutdown(fd, SHUT_WR);
    char b[64];
    while (recv(fd, b, sizeof b, 0) > 0)
        ;
    close(fd);
    printf("attack: stream: %ld events sent\n", events);
    return 0;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--src"))
            src_addr = argv[i + 1];
        else if (!strcmp(argv[i], "--hold-ms"))
            hold_ms = atol(argv[i + 1]);
        else
            break;
    }
    if (argc - i < 4) {
        fprintf(stderr, "usage: attack [--src ADDR] [--hold-ms MS] MODE N HOST PORT [ARGS]\n");
        return 2;
    }
    const char *mode = argv[i];
    int n = atoi(argv[i + 1]), port = atoi(argv[i + 3]);
    const char *host = argv[i + 2];
    if (!strcmp(mode, "idle") || !strcmp(mode, "slowloris") || !strcmp(mode, "hello"))
        return many(mode, n, host, port);
    if (!strcmp(mode, "notices"))
        return argc - i > 4 ? notices(host, port, atol(argv[i + 4])) : 2;
    if (!strcmp(mode, "zeros"))
        return zeros(host, port, n);
    if (!strcmp(mode, "sums"))
        return sums(n, host, port, argv + i + 4, argc - i - 4);
    if (!strcmp(mode, "stream"))
        return stream(host, port, argv + i + 4, argc - i - 4);
    fprintf(stderr, "attack: unknown mode %s\n", mode);
    return 2;
}
