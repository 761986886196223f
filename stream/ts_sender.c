/*
 * ts_sender.c - a sender's life (part of trace_stream.c): the stream's
 * identity (its id and resume key, from a random source), its buffers
 * made and freed, and its connection ended in order.
 */
#include "ts_internal.h"

/* len random bytes: getrandom() (never waiting for the kernel's pool: a
 * device at boot must not hang here), else /dev/urandom.  0, or -1 when
 * neither gives them.  Unbuffered reads, so no copy of a secret stays in a
 * stdio buffer. */
static int random_bytes(unsigned char *buf, size_t len)
{
    size_t got = 0;
#ifdef HAVE_GETRANDOM
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, GRND_NONBLOCK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* ENOSYS (an old kernel), EAGAIN (pool not ready yet) */
        got += (size_t)n;
    }
    if (got == len)
        return 0;
    got = 0;
#endif
    int fd = open("/dev/urandom", O_RDONLY);
    while (fd >= 0 && got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    return got == len ? 0 : -1;
}

/* The stream's secret, chosen once for all its connections; without a
 * random source the flag is not offered, and a server then lets only the
 * same address take over the stream (trace_shm.h). */
static void resume_key_init(struct sender *s)
{
    s->resume.keyed = random_bytes(s->resume.key, sizeof s->resume.key) == 0;
    if (!s->resume.keyed)
        fprintf(stderr, "trace_stream: no random source (getrandom, /dev/urandom): no resume key is "
                        "offered, so serve lets only this address take over the stream\n");
}

/* A random stream id: getrandom or /dev/urandom, else the clock and pid mixed. */
static uint64_t random_id(void)
{
    uint64_t id = 0;
    unsigned char b[sizeof id];
    if (random_bytes(b, sizeof b) == 0)
        memcpy(&id, b, sizeof id);
    if (id == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
        id = id * 0x9e3779b97f4a7c15u + 1;
    }
    return id;
}

static int sender_init(struct sender *s, int sock, const struct options *o)
{
    struct timespec ts;
    memset(s, 0, sizeof *s);
    s->sock = sock;
    s->level = o->level;
    s->o = o;
    s->resume.stream_id = random_id();
    clock_gettime(CLOCK_REALTIME, &ts);
    s->resume.start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    s->raw = malloc(CHUNK_RAW);
    s->wire_cap = TRACE_STREAM_CHUNK_HEADER_SIZE + frame_bound(CHUNK_RAW);
    s->wire = malloc(s->wire_cap);
    if (o->codec) {
        s->codec = calloc(1, sizeof *s->codec);
        s->coded = malloc(CHUNK_RAW);
    }
    if (!o->summary_threads && (s->merge = calloc(1, sizeof *s->merge)) != NULL &&
        !(s->merge->out = malloc(CHUNK_RAW))) {
        free(s->merge);
        s->merge = NULL;
    }
    if (o->allow_control) {
        /* room before the body for its head, and after it for its code
         * (auth_request: one HMAC over both) */
        s->ctl.mem = malloc(TRACE_STREAM_CTL_HEAD_SIZE + TRACE_STREAM_CTL_BODY_MAX + TRACE_STREAM_AUTH_MAC);
        s->ctl.body = s->ctl.mem ? s->ctl.mem + TRACE_STREAM_CTL_HEAD_SIZE : NULL;
        s->ctl.funcs = malloc(TRACE_STREAM_CTL_FUNCS_MAX * sizeof *s->ctl.funcs);
    }
    if (frame_init(s) < 0 || !s->raw || !s->wire || (o->codec && (!s->codec || !s->coded)) ||
        (!o->summary_threads && !s->merge) || (o->allow_control && (!s->ctl.body || !s->ctl.funcs))) {
        fprintf(stderr, "trace_stream: out of memory\n");
        return -1;
    }
    return 0;
}

/*
 * End the connection so that the server sees an orderly end, never a reset:
 * closing a socket that still holds unread bytes (the codec ack, if it came
 * after our last look) makes the kernel send RST, and serve would record a
 * cut stream.  So: no more from us (FIN), then read and discard until the
 * server closes too, for at most CLOSE_WAIT_MS.
 */
#define CLOSE_WAIT_MS 2000
static void sender_close(struct sender *s)
{
    if (s->sock < 0)
        return;
    if (shutdown(s->sock, SHUT_WR) == 0) {
        uint64_t until = now_ms() + CLOSE_WAIT_MS;
        for (uint64_t t = now_ms(); t < until; t = now_ms()) {
            struct pollfd p = {s->sock, POLLIN, 0};
            unsigned char junk[256];
            if (poll(&p, 1, (int)(until - t)) <= 0)
                break; /* timed out, or a signal: close anyway */
            ssize_t n = recv(s->sock, junk, sizeof junk, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                break; /* the server's end, or an error */
        }
    }
    close(s->sock);
    s->sock = -1;
}

static void sender_free(struct sender *s)
{
    volatile unsigned char *k = s->resume.key; /* volatile: a store the compiler may not drop */
    for (size_t i = 0; i < sizeof s->resume.key; i++)
        k[i] = 0;
    frame_free(s);
    free(s->raw);
    free(s->wire);
    free(s->coded);
    free(s->codec);
    free(s->ctl.mem);
    free(s->ctl.funcs);
    if (s->merge)
        merge_free(s->merge);
    free(s->merge);
    sender_close(s);
}
