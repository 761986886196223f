/*
 * net.h - the few socket operations callsight serve needs.
 *
 * A listening TCP socket with its real address (for `--port 0`), reading an
 * exact number of bytes, and printable peer names.  Errors come back as a
 * message in the caller's buffer; nothing here prints or exits.
 */
#ifndef CALLSIGHT_NET_H
#define CALLSIGHT_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* "host:port" or "[v6]:port", numeric; large enough for any address. */
#define NET_NAME_MAX 64

/*
 * Listen on host:port (port "0" takes a free one).  Returns the socket and
 * writes the address actually bound to `where`, or -1 with the reason in err.
 */
int net_listen(const char *host, const char *port, char *where, size_t where_len, char *err,
               size_t err_len);

/* The numeric name of a socket address, "127.0.0.1:5555". */
void net_addr_name(const struct sockaddr *sa, socklen_t len, char *buf, size_t buf_len);

/*
 * Read exactly len bytes unless the peer closes first.  Returns 0 when all
 * arrived, 1 at end of stream, -1 on error (errno set).  *got says how many
 * bytes arrived either way.
 */
int net_read_full(int fd, void *buf, size_t len, size_t *got);

/* CLOCK_MONOTONIC in ms, for net_read_by's deadlines. */
uint64_t net_now_ms(void);

/*
 * Read exactly len bytes, paced: wait at most first_ms for the first byte
 * (-1: no limit of its own), and finish by *deadline (CLOCK_MONOTONIC ms).
 * A *deadline of 0 is set when the first byte arrives, to then_ms later
 * (-1: none), so a caller can give a chunk a budget from its first byte
 * and extend it for the payload.  Returns as net_read_full; a missed wait
 * is -1 with errno EAGAIN (nothing came: idle), a missed deadline -1 with
 * errno ETIMEDOUT (too slow).
 */
int net_read_by(int fd, void *buf, size_t len, size_t *got, int first_ms, uint64_t *deadline,
                int then_ms);

/* Who a peer is, for per-peer caps, from a name from net_addr_name: its
 * IPv4 address ("127.0.0.1"), or its IPv6 /64 ("[fd00:1::]/64"). */
void net_host_of(const char *name, char *host, size_t len);

/* Who may connect: up to NET_ALLOW_MAX IPv4 or IPv6 prefixes. */
#define NET_ALLOW_MAX 32

struct net_cidr {
    int family;                 /* AF_INET or AF_INET6 */
    unsigned char addr[16];     /* network order; 4 bytes used for IPv4 */
    int bits;                   /* prefix length */
};

struct net_allow {
    int n;                      /* 0: everyone may connect */
    struct net_cidr cidr[NET_ALLOW_MAX];
};

/*
 * Parse "CIDR[,CIDR...]" (192.168.1.0/24, 10.1.2.3, fd00::/8; an address
 * without /N is one host).  0, or -1 with the reason.
 */
int net_allow_parse(const char *spec, struct net_allow *a, char *err, size_t err_len);

/* 1 when a is empty or sa falls in one of its prefixes (IPv4-mapped IPv6 counts as IPv4). */
int net_allow_match(const struct net_allow *a, const struct sockaddr *sa);

/* 1 when the listening socket fd is bound to a loopback address only. */
int net_bound_loopback(int fd);

#endif
