/*
 * net.c - listening socket, exact reads, address names and the --allow
 * prefixes for callsight serve (see net.h).
 */
#include "net.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

void net_addr_name(const struct sockaddr *sa, socklen_t len, char *buf, size_t buf_len)
{
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getnameinfo(sa, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV)) {
        snprintf(buf, buf_len, "?");
        return;
    }
    if (sa->sa_family == AF_INET6)
        snprintf(buf, buf_len, "[%s]:%s", host, port);
    else
        snprintf(buf, buf_len, "%s:%s", host, port);
}

static int listen_on(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0)
        return fd;
    int err = errno;
    close(fd);
    errno = err;
    return -1;
}

int net_listen(const char *host, const char *port, char *where, size_t where_len, char *err,
               size_t err_len)
{
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        snprintf(err, err_len, "cannot resolve %s port %s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last = 0;
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        if ((fd = listen_on(ai)) < 0)
            last = errno;
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, err_len, "cannot listen on %s:%s: %s", host, port, strerror(last));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        net_addr_name((struct sockaddr *)&ss, len, where, where_len);
    else
        snprintf(where, where_len, "%s:%s", host, port);
    return fd;
}

int net_read_full(int fd, void *buf, size_t len, size_t *got)
{
    unsigned char *p = buf;
    size_t have = 0;
    while (have < len) {
        ssize_t n = recv(fd, p + have, len - have, 0);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        *got = have;
        return n == 0 ? 1 : -1;
    }
    *got = have;
    return 0;
}

uint64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* How long the next poll may wait; 0 with errno set when the time is up. */
static int wait_ms(size_t have, int first_ms, uint64_t deadline, int *wait)
{
    *wait = have == 0 ? first_ms : -1;
    if (deadline == 0)
        return 1;
    uint64_t now = net_now_ms();
    if (now >= deadline) {
        errno = ETIMEDOUT;
        return 0;
    }
    uint64_t left = deadline - now;
    if (*wait < 0 || left < (uint64_t)*wait)
        *wait = left > INT32_MAX ? INT32_MAX : (int)left;
    return 1;
}

int net_read_by(int fd, void *buf, size_t len, size_t *got, int first_ms, uint64_t *deadline,
                int then_ms)
{
    unsigned char *p = buf;
    size_t have = 0;
    int rc = 0;
    while (have < len) {
        int wait;
        if (!wait_ms(have, first_ms, *deadline, &wait)) {
            rc = -1;
            break;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int n = poll(&pf, 1, wait);
        if (n == 0 && have == 0 && wait == first_ms) {
            errno = EAGAIN;
            rc = -1;
            break;
        }
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0)
                errno = ETIMEDOUT;
            rc = -1;
            break;
        }
        ssize_t r = recv(fd, p + have, len - have, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r <= 0) {
            rc = r == 0 ? 1 : -1;
            break;
        }
        if (have == 0 && *deadline == 0 && then_ms >= 0)
            *deadline = net_now_ms() + (uint64_t)then_ms;
        have += (size_t)r;
    }
    *got = have;
    return rc;
}

/* An IPv6 peer is one /64 (a host is given a whole one; its addresses are
 * free), an IPv4-mapped one its IPv4 address. */
static void host6_of(const char *name, size_t n, char *host, size_t len)
{
    char buf[INET6_ADDRSTRLEN + 8];
    unsigned char a[16];
    snprintf(buf, sizeof buf, "%.*s", (int)(n > 2 ? n - 2 : 0), name + 1);
    if (inet_pton(AF_INET6, buf, a) != 1) {
        snprintf(host, len, "%.*s", (int)n, name);
        return;
    }
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(a, mapped, sizeof mapped)) {
        inet_ntop(AF_INET, a + 12, host, (socklen_t)len);
        return;
    }
    memset(a + 8, 0, 8);
    inet_ntop(AF_INET6, a, buf, sizeof buf);
    snprintf(host, len, "[%s]/64", buf);
}

void net_host_of(const char *name, char *host, size_t len)
{
    const char *colon = strrchr(name, ':');
    size_t n = colon ? (size_t)(colon - name) : strlen(name);
    if (name[0] == '[')
        host6_of(name, n, host, len);
    else
        snprintf(host, len, "%.*s", (int)n, name);
}

/* ---- who may connect --------------------------------------------------- */

static int parse_cidr(const char *s, size_t len, struct net_cidr *c)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    if (inet_pton(AF_INET, buf, c->addr) == 1)
        c->family = AF_INET;
    else if (inet_pton(AF_INET6, buf, c->addr) == 1)
        c->family = AF_INET6;
    else
        return -1;
    int max = c->family == AF_INET ? 32 : 128;
    c->bits = max;
    if (slash) {
        char *end;
        long v = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end || v < 0 || v > max)
            return -1;
        c->bits = (int)v;
    }
    return 0;
}

int net_allow_parse(const char *spec, struct net_allow *a, char *err, size_t err_len)
{
    a->n = 0;
    for (const char *p = spec;;) {
        size_t len = strcspn(p, ",");
        if (a->n == NET_ALLOW_MAX) {
            snprintf(err, err_len, "--allow takes at most %d prefixes", NET_ALLOW_MAX);
            return -1;
        }
        if (parse_cidr(p, len, &a->cidr[a->n])) {
            snprintf(err, err_len, "--allow: '%.*s' is not an address or CIDR prefix", (int)len, p);
            return -1;
        }
        a->n++;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

static int prefix_match(const unsigned char *addr, const unsigned char *net, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(addr, net, (size_t)whole))
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xffu << (8 - rest));
    return (addr[whole] & mask) == (net[whole] & mask);
}

/* The address as family + bytes; an IPv4-mapped IPv6 address becomes IPv4. */
static int addr_bytes(const struct sockaddr *sa, unsigned char *out)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return AF_INET;
    }
    if (sa->sa_family == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        if (!memcmp(b, mapped, 12)) {
            memcpy(out, b + 12, 4);
            return AF_INET;
        }
        memcpy(out, b, 16);
        return AF_INET6;
    }
    return -1;
}

int net_allow_match(const struct net_allow *a, const struct sockaddr *sa)
{
    unsigned char b[16];
    if (a->n == 0)
        return 1;
    int family = addr_bytes(sa, b);
    for (int i = 0; i < a->n; i++)
        if (a->cidr[i].family == family && prefix_match(b, a->cidr[i].addr, a->cidr[i].bits))
            return 1;
    return 0;
}

int net_bound_loopback(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    unsigned char b[16];
    static const unsigned char v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    int family = addr_bytes((struct sockaddr *)&ss, b);
    return (family == AF_INET && b[0] == 127) || (family == AF_INET6 && !memcmp(b, v6_loop, 16));
}
