/*
 * rateproxy.c - test helper: a TCP proxy on 127.0.0.1 that carries one
 * connection to a server at no more than a given rate, as a device's slow
 * link would, so that a test can see what reaches serve when the link and
 * not the tracer sets the pace.
 *
 *   rateproxy PORTFILE TARGET_PORT BYTES_PER_SECOND
 *
 * Listens on a free port (written to PORTFILE once listening), accepts one
 * connection, connects it to 127.0.0.1:TARGET_PORT and copies both ways:
 * client to server at most BYTES_PER_SECOND (a token bucket of a tenth of a
 * second; its receive buffer and window are kept small, so the client
 * feels the pace),
 * server to client as it comes.  Ends when both sides have closed, or after
 * 300 s.  Prints "rateproxy: N bytes in T s" at the end.
 *
 * Built by the tests with: cc -std=c11 -o rateproxy rateproxy.c
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

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: rateproxy PORTFILE TARGET_PORT BYTES_PER_SECOND\n");
        return 2;
    }
    double rate = atof(argv[3]), tokens = 0, burst = rate / 10;
    int lfd = listen_any(argv[1]);
    struct pollfd lp = {lfd, POLLIN, 0};
    if (poll(&lp, 1, 60000) <= 0)
        die("no connection within 60 s");
    int c = accept(lfd, NULL, NULL), s = connect_to(atoi(argv[2])), clamp = 16384;
    if (c < 0)
        die("accept");
    /* A small window, so the client's socket buffer stays small too and the
     * link, not the kernel's buffering, sets its pace. */
    setsockopt(c, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof clamp);
    int c_open = 1, s_open = 1;
    uint64_t carried = 0;
    double start = now_s(), last = start;
    char buf[65536];
    while ((c_open || s_open) && now_s() - start < 300) {
        double t = now_s();
        tokens = tokens + rate * (t - last) > burst ? burst : tokens + rate * (t - last);
        last = t;
        struct pollfd p[2] = {{c_open && tokens >= 1 ? c : -1, POLLIN, 0}, {s_open ? s : -1, POLLIN, 0}};
        if (poll(p, 2, 10) < 0)
            die("poll");
        if (p[0].revents) {
            size_t want = tokens < (double)sizeof buf ? (size_t)tokens : sizeof buf;
            ssize_t n = read(c, buf, want);
            if (n <= 0) {
                c_open = 0;
                shutdown(s, SHUT_WR);
            } else {
                tokens -= (double)n;
                carried += (uint64_t)n;
                for (ssize_t off = 0; off < n;) {
                    ssize_t w = write(s, buf + off, (size_t)(n - off));
                    if (w <= 0)
                        die("write to server");
                    off += w;
                }
            }
        }
        if (p[1].revents) {
            ssize_t n = read(s, buf, sizeof buf);
            if (n <= 0) {
                s_open = 0;
                shutdown(c, SHUT_WR);
            } else if (write(c, buf, (size_t)n) != n) {
                s_open = 0; /* the client is gone */
            }
        }
    }
    printf("rateproxy: %llu bytes in %.1f s\n", (unsigned long long)carried, now_s() - start);
    return 0;
}
