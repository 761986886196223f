/*
 * streamgen.c - test helper: plays a trace_stream client, well or badly.
 *
 *   streamgen [options] HOST PORT
 *
 * Sends a handshake and `--events N` known events in chunks of `--chunk K`,
 * optionally a drop notice, optionally in big-endian order, optionally
 * the records of a file as one more chunk (`--records FILE`: 32-byte
 * records in host order, sent as they are), optionally a file's bytes as a
 * TRACE_CHUNK_SUMMARY_INCREMENTS chunk (`--increments FILE`: the handshake
 * then offers summaries and the ack is awaited first), or breaks the
 * protocol in one chosen way (--bad MODE) so the tests can check that serve
 * closes exactly that connection with a clear message.  Event i carries
 *
 *   ts = 1000 + 10 i, func = 0x401000 + (i % 13) * 0x40, call_site = 0x500000 + i,
 *   tid = 7 + i % 5, kind = i % 2
 *
 * so the receiving side can check every field (tests/tools/tracecheck.pl).
 * The handshake carries flags 1 (TICKS), load_bias 0x1000, tick_hz 3000000000,
 * t0_ticks 111, t0_ns 222, hook_ns 33.
 *
 * Built by make (check-build) into $(BUILD)/tests/tools/; by hand:
 *   cc -std=c11 -I runtime -o streamgen streamgen.c -lzstd
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
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

struct opts {
    const char *host, *port, *bad, *resume_file, *paused_file, *records, *increments;
    long events, chunk, pause_after, notice, unknown_after;
    int big;
};

static int sock = -1;
static int big; /* byte order of everything sent */
static int offer_summaries; /* --increments: the handshake offers summaries */

/* Fields in the order sent: little-endian, or reversed as a big-endian agent sends them (--big-endian). */
static void put32(unsigned char *p, uint32_t v)
{
    tk_put(p, v, 4, big);
}

static void put64(unsigned char *p, uint64_t v)
{
    tk_put(p, v, 8, big);
}

static void die(const char *what)
{
    fprintf(stderr, "streamgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* In bad modes the server may hang up at any point; that is the point. */
static int send_bytes(const void *buf, size_t len)
{
    return tk_send_all(sock, buf, len);
}

static void connect_to(const char *host, const char *port)
{
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res))
        die("getaddrinfo");
    sock = socket(res->ai_family, res->ai_socktype, 0);
    if (sock < 0 || connect(sock, res->ai_addr, res->ai_addrlen))
        die("connect");
    freeaddrinfo(res);
}

static void send_handshake(const char *bad)
{
    unsigned char h[TRACE_STREAM_HANDSHAKE_SIZE] = {0};
    memcpy(h, bad && !strcmp(bad, "magic") ? "TKSTREAX" : TRACE_STREAM_MAGIC, 8);
    put32(h + offsetof(trace_stream_handshake_t, version), bad && !strcmp(bad, "version") ? 3 : 2);
    put32(h + offsetof(trace_stream_handshake_t, event_size),
          bad && !strcmp(bad, "event-size") ? 24 : TRACE_EVENT_SIZE);
    put32(h + offsetof(trace_stream_handshake_t, flags),
          TRACE_FLAG_TICKS | (offer_summaries ? TRACE_STREAM_FLAG_SUMMARY_OFFER : 0));
    put64(h + offsetof(trace_stream_handshake_t, load_bias), 0x1000);
    put64(h + offsetof(trace_stream_handshake_t, tick_hz), 3000000000u);
    put64(h + offsetof(trace_stream_handshake_t, t0_ticks), 111);
    put64(h + offsetof(trace_stream_handshake_t, t0_ns), 222);
    put64(h + offsetof(trace_stream_handshake_t, hook_ns), 33);
    send_bytes(h, bad && !strcmp(bad, "trunc-handshake") ? 40 : sizeof h);
}

/* Send one chunk: header with the given lengths, then `flen` bytes of frame. */
static int send_chunk_raw(uint32_t type, uint32_t raw_len, uint32_t zlen, const void *frame, size_t flen)
{
    unsigned char h[TRACE_STREAM_CHUNK_HEADER_SIZE];
    put32(h, type);
    put32(h + 4, raw_len);
    put32(h + 8, zlen);
    if (send_bytes(h, sizeof h))
        return -1;
    return flen ? send_bytes(frame, flen) : 0;
}

static size_t compress(void *dst, size_t cap, const void *src, size_t len, int content_size)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size);
    size_t z = ZSTD_compress2(c, dst, cap, src, len);
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(z)) {
        fprintf(stderr, "streamgen: compress: %s\n", ZSTD_getErrorName(z));
        exit(1);
    }
    return z;
}

/* Events [first, first+n) as one chunk, spoiled as `bad` says (NULL: good). */
static int send_events(long first, long n, const char *bad)
{
    size_t raw_len = (size_t)n * TRACE_EVENT_SIZE;
    size_t cap = ZSTD_compressBound(TRACE_STREAM_MAX_RAW) * 2;
    unsigned char *raw = calloc(1, TRACE_STREAM_MAX_RAW), *z = malloc(cap);
    if (!raw || !z)
        die("malloc");
    for (long i = 0; i < n; i++)
        tk_make_event(raw + i * TRACE_EVENT_SIZE, first + i, big);
    size_t zl = compress(z, cap, raw, raw_len, 1);
    int rc;
    if (!bad)
        rc = send_chunk_raw(0, (uint32_t)raw_len, (uint32_t)zl, z, zl);
    else if (!strcmp(bad, "trunc-chunk"))
        rc = send_chunk_raw(0, (uint32_t)raw_len, (uint32_t)zl, z, zl / 2);
    else if (!strcmp(bad, "oversize"))
        rc = send_chunk_raw(0, TRACE_STREAM_MAX_RAW + 32, (uint32_t)zl, z, zl);
    else if (!strcmp(bad, "not32"))
        rc = send_chunk_raw(0, (uint32_t)raw_len + 1, (uint32_t)zl, z, zl);
    else if (!strcmp(bad, "corrupt")) {
        memset(z, 0xab, zl); /* not a zstd frame at all */
        rc = send_chunk_raw(0, (uint32_t)raw_len, (uint32_t)zl, z, zl);
    } else if (!strcmp(bad, "lenmismatch")) {
        rc = send_chunk_raw(0, (uint32_t)raw_len - 32, (uint32_t)zl, z, zl);
    } else if (!strcmp(bad, "trailing")) {
        size_t zl2 = compress(z + zl, cap - zl, raw, raw_len, 1); /* two frames in one chunk */
        rc = send_chunk_raw(0, (uint32_t)raw_len, (uint32_t)(zl + zl2), z, zl + zl2);
    } else if (!strcmp(bad, "bomb")) {
        /* 4 MiB of zeros, size not declared, announced as 128 records. */
        memset(raw, 0, TRACE_STREAM_MAX_RAW);
        zl = compress(z, cap, raw, TRACE_STREAM_MAX_RAW, 0);
        rc = send_chunk_raw(0, 4096, (uint32_t)zl, z, zl);
    } else {
        fprintf(stderr, "streamgen: unknown --bad mode %s\n", bad);
        exit(2);
    }
    free(raw);
    free(z);
    return rc;
}

/* The records of a file, as one chunk of this type. */
static int send_records(const char *path, uint32_t type)
{
    static unsigned char raw[TRACE_STREAM_MAX_RAW];
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    size_t n = fread(raw, 1, sizeof raw, f);
    fclose(f);
    n -= n % TRACE_EVENT_SIZE;
    size_t cap = ZSTD_compressBound(n ? n : 1);
    unsigned char *z = malloc(cap);
    if (!z)
        die("malloc");
    size_t zl = compress(z, cap, raw, n, 1);
    int rc = send_chunk_raw(type, (uint32_t)n, (uint32_t)zl, z, zl);
    free(z);
    return rc;
}

/* The server's 16-byte ack, waited for (bounded: 10 s). */
static void read_ack(void)
{
    unsigned char ack[TRACE_STREAM_ACK_SIZE];
    size_t got = 0;
    struct pollfd p = {sock, POLLIN, 0};
    while (got < sizeof ack && poll(&p, 1, 10000) > 0) {
        ssize_t n = recv(sock, ack + got, sizeof ack - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got < sizeof ack)
        die("no ack from the server");
}

static int send_notice(uint64_t count)
{
    unsigned char payload[8], z[64];
    put64(payload, count);
    size_t zl = compress(z, sizeof z, payload, sizeof payload, 1);
    return send_chunk_raw(1, 8, (uint32_t)zl, z, zl);
}

static int send_unknown(void)
{
    unsigned char junk[100];
    memset(junk, 0x5a, sizeof junk);
    return send_chunk_raw(99, 0, sizeof junk, junk, sizeof junk);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* Hold the connection open until the test says go (bounded: 30 s). */
static void pause_here(const struct opts *o)
{
    struct stat st;
    if (o->paused_file)
        touch(o->paused_file);
    for (int i = 0; i < 3000 && o->resume_file && stat(o->resume_file, &st) != 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
}

/* After a bad stream, wait (bounded) for the server to hang up. */
static void wait_close(void)
{
    char buf[256];
    struct pollfd p = {sock, POLLIN, 0};
    shutdown(sock, SHUT_WR);
    while (poll(&p, 1, 10000) > 0 && recv(sock, buf, sizeof buf, 0) > 0)
        ;
}

static const char *handshake_modes[] = {"magic", "version", "event-size", "trunc-handshake"};

static int run(const struct opts *o)
{
    const char *bad = o->bad;
    send_handshake(bad);
    for (size_t i = 0; bad && i < sizeof handshake_modes / sizeof *handshake_modes; i++)
        if (!strcmp(bad, handshake_modes[i]))
            return 0;
    long sent = 0, chunks = 0;
    while (sent < o->events) {
        long n = o->events - sent < o->chunk ? o->events - sent : o->chunk;
        if (send_events(sent, n, NULL))
            return 1;
        sent += n;
        if (++chunks == o->pause_after)
            pause_here(o);
        if (chunks == o->unknown_after && send_unknown())
            return 1;
    }
    if (o->records && send_records(o->records, TRACE_CHUNK_EVENTS))
        return 1;
    if (o->increments) {
        read_ack();
        if (send_records(o->increments, TRACE_CHUNK_SUMMARY_INCREMENTS))
            return 1;
        wait_close();
    }
    if (o->notice >= 0 && send_notice((uint64_t)o->notice))
        return 1;
    if (bad)
        send_events(sent, o->chunk, bad);
    return 0;
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.events = 0, .chunk = 1000, .notice = -1};
    int i;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--big-endian")) {
            o->big = 1;
            continue;
        }
        if (!strcmp(a, "--events")) o->events = atol(v);
        else if (!strcmp(a, "--chunk")) o->chunk = atol(v);
        else if (!strcmp(a, "--bad")) o->bad = v;
        else if (!strcmp(a, "--notice")) o->notice = atol(v);
        else if (!strcmp(a, "--pause-after")) o->pause_after = atol(v);
        else if (!strcmp(a, "--paused-file")) o->paused_file = v;
        else if (!strcmp(a, "--resume-file")) o->resume_file = v;
        else if (!strcmp(a, "--unknown-after")) o->unknown_after = atol(v);
        else if (!strcmp(a, "--records")) o->records = v;
        else if (!strcmp(a, "--increments")) o->increments = v;
        else {
            fprintf(stderr, "streamgen: unknown option %s\n", a);
            exit(2);
        }
        i++;
    }
    if (argc - i != 2 || o->chunk < 1 || o->chunk * TRACE_EVENT_SIZE > TRACE_STREAM_MAX_RAW) {
        fprintf(stderr, "usage: streamgen [--events N] [--chunk K] [--bad MODE] [--notice D] "
                        "[--big-endian] [--pause-after C --paused-file F --resume-file F] "
                        "[--unknown-after C] [--records FILE] [--increments FILE] HOST PORT\n");
        exit(2);
    }
    o->host = argv[i];
    o->port = argv[i + 1];
}

int main(int argc, char **argv)
{
    struct opts o;
    parse(argc, argv, &o);
    big = o.big;
    offer_summaries = o.increments != NULL;
    connect_to(o.host, o.port);
    int rc = run(&o);
    if (o.bad)
        wait_close();
    close(sock);
    return rc;
}
