/*
 * rateproxy.c - test helper: a TCP proxy on 127.0.0.1 that carries one
 * connection to a server at no more than a given rate, as a device's slow
 * link would, so that a test can see what reaches serve when the link and
 * not the tracer sets the pace.
 *
 *   rateproxy PORTFILE TARGET_PORT BYTES_PER_SECOND [CONNECTIONS]
 *
 * Listens on a free port (written to PORTFILE once listening), accepts
 * CONNECTIONS (default 1, at most 8) as they come, connects each to
 * 127.0.0.1:TARGET_PORT and copies both ways: client to server at most
 * BYTES_PER_SECOND in all (one token bucket of a tenth of a
 * second; its receive buffer and window are kept small, so the client
 * feels the pace),
 * server to client as it comes.  Ends when all have closed on both sides, or after
 * 300 s.  Prints "rateproxy: N bytes in T s" at the end.
 *
 * Built by make (check-build) into $(BUILD)/tests/tools/; by hand:
 *   cc -std=c11 -o rateproxy rateproxy.c
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static int listen_any(const char *portfile)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), small = 16384;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) ||
        bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        die("listen");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", (unsigned)ntohs(a.sin_port)) < 0 || fclose(f) || rename(tmp, portfile))
        die(portfile);
    return fd;
}

static int connect_to(int port)
{
    struct sockaddr_in a = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
        die("connect");
    return fd;
}

/* One proxied connection: client c, server s. */
struct pair {
    int c, s, c_open, s_open;
};

static void pair_open(struct pair *p, int lfd, int port)
{
    int clamp = 16384;
    p->c = accept(lfd, NULL, NULL);
    if (p->c < 0)
        die("accept");
    p->s = connect_to(port);
    /* A small window, so the client's socket buffer stays small too and the
     * link, not the kernel's buffering, sets its pace. */
    setsockopt(p->c, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof clamp);
    p->c_open = p->s_open = 1;
}

/* Client to server, within the tokens; returns the bytes carried. */
static size_t pair_up(struct pair *p, double tokens, char *buf, size_t cap)
{
    size_t want = tokens < (double)cap ? (size_t)tokens : cap;
    ssize_t n = read(p->c, buf, want);
    if (n <= 0) {
        p->c_open = 0;
        shutdown(p->s, SHUT_WR);
        return 0;
    }
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(p->s, buf + off, (size_t)(n - off));
        if (w <= 0)
            die("write to server");
        off += w;
    }
    return (size_t)n;
}

static void pair_down(struct pair *p, char *buf, size_t cap)
{
    ssize_t n = read(p->s, buf, cap);
    if (n <= 0) {
        p->s_open = 0;
        shutdown(p->c, SHUT_WR);
    } else if (write(p->c, buf, (size_t)n) != n) {
        p->s_open = 0; /* the client is gone */
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: rateproxy PORTFILE TARGET_PORT BYTES_PER_SECOND [CONNECTIONS]\n");
        return 2;
    }
    double rate = atof(argv[3]), tokens = 0, burst = rate / 10;
    int want = argc == 5 ? atoi(argv[4]) : 1, got = 0, port = atoi(argv[2]);
    struct pair pairs[8];
    if (want < 1 || want > 8)
        die("CONNECTIONS: 1 to 8");
    int lfd = listen_any(argv[1]);
    struct pollfd lp = {lfd, POLLIN, 0};
    if (poll(&lp, 1, 60000) <= 0)
        die("no connection within 60 s");
    pair_open(&pairs[got++], lfd, port);
    uint64_t carried = 0;
    double start = now_s(), last = start;
    char buf[65536];
    for (;;) {
        int open = 0;
        for (int i = 0; i < got; i++)
            open |= pairs[i].c_open || pairs[i].s_open;
        if ((!open && got == want) || now_s() - start >= 300)
            break;
        double t = now_s();
        tokens = tokens + rate * (t - last) > burst ? burst : tokens + rate * (t - last);
        last = t;
        struct pollfd p[17];
        for (int i = 0; i < got; i++) {
            p[2 * i] = (struct pollfd){pairs[i].c_open && tokens >= 1 ? pairs[i].c : -1, POLLIN, 0};
            p[2 * i + 1] = (struct pollfd){pairs[i].s_open ? pairs[i].s : -1, POLLIN, 0};
        }
        p[2 * got] = (struct pollfd){got < want ? lfd : -1, POLLIN, 0};
        if (poll(p, (nfds_t)(2 * got + 1), 10) < 0)
            die("poll");
        for (int i = 0; i < got; i++) {
            if (p[2 * i].revents && tokens >= 1) {
                size_t n = pair_up(&pairs[i], tokens, buf, sizeof buf);
                tokens -= (double)n;
                carried += n;
            }
            if (p[2 * i + 1].revents)
                pair_down(&pairs[i], buf, sizeof buf);
        }
        if (p[2 * got].revents)
            pair_open(&pairs[got++], lfd, port);
    }
    printf("rateproxy: %llu bytes in %.1f s\n", (unsigned long long)carried, now_s() - start);
    return 0;
}
