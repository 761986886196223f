/*
 * net.c - listening socket, exact reads and address names for callsight
 * serve (see net.h).
 */
#include "net.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
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
