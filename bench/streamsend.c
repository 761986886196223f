/*
 * streamsend.c - measures how fast `callsight serve` ingests streams.
 *
 *   streamsend [--conns C] [--events N] [--chunk BYTES] [--level L]
 *              [--codec 1|0] [--timeout S] HOST PORT FILE...
 *
 * Reads up to N event records from callsight trace files (each FILE's
 * header_size is honoured; events are concatenated in argument order),
 * cuts them into chunks of BYTES (default 1 MiB, what trace_stream sends at
 * most) and compresses each into one zstd frame at level L (default 1,
 * trace_stream's default) -- all before any timing starts, so the client's
 * own compression is not in the figure.  Then C connections at once (one
 * thread each) send the protocol of runtime/trace_wire.h: the 64-byte
 * handshake (clock fields from the first file's header) and every chunk,
 * shut down their sending side and wait for serve to close the connection,
 * which it does only after it has decompressed and written everything.
 * With --codec 1 (the default, as trace_stream) the chunks are coded
 * (TRACE_CHUNK_EVENTS_CODED, trace_wire.h's codec) before compression, also
 * before the clock starts, and every connection offers the codec and reads
 * serve's ack before its first chunk (no ack: the connection fails).
 *
 * Output, one line:
 *   streamsend conns=C events_per_conn=E raw_bytes_per_conn=R wire_bytes_per_conn=W
 *       wall_ns=T slowest_conn_ns=S fastest_conn_ns=F
 * wall_ns runs from just before the first connect to the last close seen.
 * Exit 1 when a connection fails or serve does not close within S seconds
 * (default 120).
 *
 * C11 + POSIX; libzstd.  Build:
 *   cc -std=c11 -I runtime -o streamsend streamsend.c -lzstd -pthread
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "trace.h"
#include "trace_wire.h"

#define MAX_CONNS 64

struct chunk {
    unsigned char *wire; /* 12-byte chunk header + frame */
    size_t len;
};

static struct {
    const char *host, *port;
    int conns, level, timeout_s, codec;
    uint64_t max_events;
    size_t chunk;
} opt = {NULL, NULL, 1, 1, 120, 1, UINT64_MAX, 1u << 20};

static unsigned char handshake[TRACE_STREAM_HANDSHAKE_SIZE];
static struct chunk *chunks;
static size_t nchunks;
static uint64_t raw_bytes, wire_bytes;

struct conn {
    pthread_t thread;
    uint64_t start_ns, end_ns;
    int failed;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Appends FILE's records to *buf; the first file also gives the handshake. */
static int load_file(const char *path, unsigned char **buf, size_t *len, size_t *cap, int first)
{
    FILE *f = fopen(path, "rb");
    unsigned char h[TRACE_FILE_HEADER_SIZE];
    if (!f || fread(h, 1, sizeof h, f) != sizeof h || memcmp(h, TRACE_FILE_MAGIC, 8) != 0) {
        fprintf(stderr, "streamsend: %s: not a callsight trace file\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    uint32_t hsize = wire_le32(h + offsetof(trace_file_header_t, header_size));
    if (hsize < TRACE_FILE_HEADER_SIZE || fseek(f, (long)hsize, SEEK_SET) != 0) {
        fprintf(stderr, "streamsend: %s: bad header size\n", path);
        fclose(f);
        return -1;
    }
    if (first) {
        memcpy(handshake, TRACE_STREAM_MAGIC, 8);
        wire_put_le32(handshake + offsetof(trace_stream_handshake_t, version), TRACE_STREAM_VERSION);
        wire_put_le32(handshake + offsetof(trace_stream_handshake_t, event_size), TRACE_EVENT_SIZE);
        wire_put_le32(handshake + offsetof(trace_stream_handshake_t, flags),
              wire_le32(h + offsetof(trace_file_header_t, flags)) & TRACE_FLAG_TICKS);
        static const size_t from[5] = {offsetof(trace_file_header_t, load_bias), offsetof(trace_file_header_t, tick_hz),
                                       offsetof(trace_file_header_t, t0_ticks), offsetof(trace_file_header_t, t0_ns),
                                       offsetof(trace_file_header_t, hook_ns)};
        for (int i = 0; i < 5; i++)
            wire_put_le64(handshake + offsetof(trace_stream_handshake_t, load_bias) + 8 * (size_t)i, wire_le64(h + from[i]));
    }
    for (;;) {
        if (*cap - *len < (1u << 20)) {
            size_t ncap = *cap ? *cap * 2 : (64u << 20);
            unsigned char *nb = realloc(*buf, ncap);
            if (!nb) {
                fclose(f);
                fprintf(stderr, "streamsend: out of memory\n");
                return -1;
            }
            *buf = nb;
            *cap = ncap;
        }
        size_t want = *cap - *len;
        uint64_t left = opt.max_events - *len / TRACE_EVENT_SIZE; /* events still wanted */
        if (left < want / TRACE_EVENT_SIZE)
            want = (size_t)left * TRACE_EVENT_SIZE;
        size_t n = want ? fread(*buf + *len, 1, want, f) : 0;
        *len += n / TRACE_EVENT_SIZE * TRACE_EVENT_SIZE;
        if (n < want || *len / TRACE_EVENT_SIZE >= opt.max_events)
            break;
    }
    fclose(f);
    return 0;
}

static int prepare(unsigned char *events, size_t len)
{
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    size_t cap = (len + opt.chunk - 1) / opt.chunk;
    chunks = calloc(cap ? cap : 1, sizeof *chunks);
    struct wire_codec *codec = calloc(1, sizeof *codec);
    unsigned char *coded = malloc(opt.chunk);
    if (!cctx || !chunks || !codec || !coded)
        return -1;
    for (size_t off = 0; off < len; off += opt.chunk) {
        size_t n = len - off < opt.chunk ? len - off : opt.chunk;
        size_t bound = ZSTD_compressBound(n);
        struct chunk *c = &chunks[nchunks++];
        c->wire = malloc(TRACE_STREAM_CHUNK_HEADER_SIZE + bound);
        if (!c->wire)
            return -1;
        const unsigned char *src = events + off;
        if (opt.codec) {
            wire_codec_encode(codec, src, coded, n / TRACE_EVENT_SIZE);
            src = coded;
        }
        size_t z = ZSTD_compressCCtx(cctx, c->wire + TRACE_STREAM_CHUNK_HEADER_SIZE, bound, src, n, opt.level);
        if (ZSTD_isError(z)) {
            fprintf(stderr, "streamsend: zstd: %s\n", ZSTD_getErrorName(z));
            return -1;
        }
        wire_put_le32(c->wire + offsetof(trace_stream_chunk_header_t, type),
              opt.codec ? TRACE_CHUNK_EVENTS_CODED : TRACE_CHUNK_EVENTS);
        wire_put_le32(c->wire + offsetof(trace_stream_chunk_header_t, raw_len), (uint32_t)n);
        wire_put_le32(c->wire + offsetof(trace_stream_chunk_header_t, zstd_len), (uint32_t)z);
        c->len = TRACE_STREAM_CHUNK_HEADER_SIZE + z;
        raw_bytes += n;
        wire_bytes += c->len;
    }
    wire_bytes += sizeof handshake;
    if (opt.codec) {
        uint32_t flags = wire_le32(handshake + offsetof(trace_stream_handshake_t, flags));
        wire_put_le32(handshake + offsetof(trace_stream_handshake_t, flags), flags | TRACE_STREAM_FLAG_CODEC_OFFER);
    }
    ZSTD_freeCCtx(cctx);
    free(codec);
    free(coded);
    return 0;
}

static int connect_to(void)
{
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(opt.host, opt.port, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int send_all(int fd, const unsigned char *p, size_t len)
{
    while (len) {
        ssize_t n = send(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* After its codec ack (read before the first chunk) serve sends nothing:
 * EOF means it has finished with the connection. */
static int wait_closed(int fd)
{
    uint64_t deadline = now_ns() + (uint64_t)opt.timeout_s * 1000000000ull;
    unsigned char junk[256];
    for (;;) {
        uint64_t t = now_ns();
        if (t >= deadline)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)((deadline - t) / 1000000u) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        ssize_t n = recv(fd, junk, sizeof junk, 0);
        if (n == 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return 0; /* reset: closed too */
    }
}

/* serve's answer to the codec offer: coded chunks only after it. 0, or -1 (said). */
static int read_ack(int fd)
{
    unsigned char ack[TRACE_STREAM_ACK_SIZE];
    size_t got = 0;
    while (got < sizeof ack) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n = poll(&p, 1, opt.timeout_s * 1000) == 1 ? recv(fd, ack + got, sizeof ack - got, 0) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "streamsend: serve did not ack the codec (older serve? try --codec 0)\n");
            return -1;
        }
        got += (size_t)n;
    }
    return memcmp(ack, TRACE_STREAM_ACK_MAGIC, sizeof TRACE_STREAM_ACK_MAGIC - 1) == 0 ? 0 : -1;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    c->start_ns = now_ns();
    int fd = connect_to();
    c->failed = fd < 0 || send_all(fd, handshake, sizeof handshake) != 0 || (opt.codec && read_ack(fd) != 0);
    for (size_t i = 0; !c->failed && i < nchunks; i++)
        c->failed = send_all(fd, chunks[i].wire, chunks[i].len) != 0;
    if (!c->failed) {
        shutdown(fd, SHUT_WR);
        c->failed = wait_closed(fd) != 0;
    }
    if (fd >= 0)
        close(fd);
    c->end_ns = now_ns();
    return NULL;
}

static int parse(int argc, char **argv, int *first_file)
{
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        char *end;
        unsigned long long v = strtoull(argv[i + 1], &end, 10);
        if (*end || end == argv[i + 1])
            return -1;
        if (!strcmp(argv[i], "--conns") && v >= 1 && v <= MAX_CONNS)
            opt.conns = (int)v;
        else if (!strcmp(argv[i], "--events") && v >= 1)
            opt.max_events = v;
        else if (!strcmp(argv[i], "--chunk") && v >= TRACE_EVENT_SIZE && v <= TRACE_STREAM_MAX_RAW &&
                 v % TRACE_EVENT_SIZE == 0)
            opt.chunk = (size_t)v;
        else if (!strcmp(argv[i], "--level") && v >= 1 && v <= 19)
            opt.level = (int)v;
        else if (!strcmp(argv[i], "--codec") && v <= 1)
            opt.codec = (int)v;
        else if (!strcmp(argv[i], "--timeout") && v >= 1 && v <= 3600)
            opt.timeout_s = (int)v;
        else
            return -1;
    }
    if (argc - i < 3)
        return -1;
    opt.host = argv[i];
    opt.port = argv[i + 1];
    *first_file = i + 2;
    return 0;
}

int main(int argc, char **argv)
{
    static struct conn conns[MAX_CONNS];
    int first;
    if (parse(argc, argv, &first)) {
        fprintf(stderr, "usage: streamsend [--conns C] [--events N] [--chunk BYTES] [--level L] [--codec 1|0] [--timeout S] "
                        "HOST PORT FILE...\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    unsigned char *events = NULL;
    size_t len = 0, cap = 0;
    for (int i = first; i < argc && len / TRACE_EVENT_SIZE < opt.max_events; i++)
        if (load_file(argv[i], &events, &len, &cap, i == first))
            return 1;
    if (len == 0 || prepare(events, len)) {
        fprintf(stderr, "streamsend: no events to send, or out of memory\n");
        return 1;
    }
    free(events);
    uint64_t t0 = now_ns();
    for (int i = 0; i < opt.conns; i++)
        if (pthread_create(&conns[i].thread, NULL, conn_main, &conns[i]) != 0) {
            fprintf(stderr, "streamsend: cannot start connection %d\n", i);
            return 1;
        }
    uint64_t last = t0, slowest = 0, fastest = UINT64_MAX;
    int failed = 0;
    for (int i = 0; i < opt.conns; i++) {
        pthread_join(conns[i].thread, NULL);
        uint64_t d = conns[i].end_ns - conns[i].start_ns;
        last = conns[i].end_ns > last ? conns[i].end_ns : last;
        slowest = d > slowest ? d : slowest;
        fastest = d < fastest ? d : fastest;
        failed |= conns[i].failed;
    }
    if (failed) {
        fprintf(stderr, "streamsend: a connection failed or serve did not close it in %d s\n", opt.timeout_s);
        return 1;
    }
    printf("streamsend conns=%d events_per_conn=%" PRIu64 " raw_bytes_per_conn=%" PRIu64
           " wire_bytes_per_conn=%" PRIu64 " wall_ns=%" PRIu64 " slowest_conn_ns=%" PRIu64
           " fastest_conn_ns=%" PRIu64 "\n",
           opt.conns, raw_bytes / TRACE_EVENT_SIZE, raw_bytes, wire_bytes, last - t0, slowest, fastest);
    return 0;
}
