/*
 * peeruid.c - the local user at the other end of a TCP connection, from the
 * kernel's list of sockets (see peeruid.h).
 */
#include "peeruid.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The peer as the kernel writes a socket's local address: the address's
 * 32-bit words as the machine holds them, in hex, then the port. */
static int kernel_form(const struct sockaddr *peer, socklen_t len, char *out, size_t outlen, const char **file)
{
    if (peer->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)peer;
        snprintf(out, outlen, "%08X:%04X", (unsigned)a->sin_addr.s_addr, (unsigned)ntohs(a->sin_port));
        *file = "tcp";
        return 0;
    }
    if (peer->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)peer;
        uint32_t w[4];
        memcpy(w, a->sin6_addr.s6_addr, sizeof w);
        snprintf(out, outlen, "%08X%08X%08X%08X:%04X", (unsigned)w[0], (unsigned)w[1], (unsigned)w[2],
                 (unsigned)w[3], (unsigned)ntohs(a->sin6_port));
        *file = "tcp6";
        return 0;
    }
    return -1;
}

static int lookup(const struct sockaddr *peer, socklen_t len, unsigned server_port, const char *procdir,
                  uid_t *uid);

int peeruid_tcp(const struct sockaddr *peer, socklen_t len, unsigned server_port, const char *procdir,
                uid_t *uid)
{
    if (lookup(peer, len, server_port, procdir, uid) == 0)
        return 0;
    if (peer->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in))
        return -1;
    /* An IPv6 socket's connection to an IPv4 address: the kernel lists it
     * in tcp6, by the v4-mapped form of the address the server saw. */
    const struct sockaddr_in *a = (const struct sockaddr_in *)peer;
    struct sockaddr_in6 m;
    memset(&m, 0, sizeof m);
    m.sin6_family = AF_INET6;
    m.sin6_port = a->sin_port;
    m.sin6_addr.s6_addr[10] = m.sin6_addr.s6_addr[11] = 0xff;
    memcpy(&m.sin6_addr.s6_addr[12], &a->sin_addr, 4);
    return lookup((const struct sockaddr *)&m, sizeof m, server_port, procdir, uid);
}

static int lookup(const struct sockaddr *peer, socklen_t len, unsigned server_port, const char *procdir,
                  uid_t *uid)
{
    char want[64], path[512];
    const char *file;
    if (kernel_form(peer, len, want, sizeof want, &file) < 0 ||
        snprintf(path, sizeof path, "%s/%s", procdir, file) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[512];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        char local[64], remote[64];
        unsigned owner;
        if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %u", local, remote, &owner) != 3 ||
            strcasecmp(local, want))
            continue;
        const char *colon = strrchr(remote, ':');
        unsigned port;
        if (colon && sscanf(colon + 1, "%x", &port) == 1 && port == server_port) {
            *uid = (uid_t)owner;
            found = 0;
        }
    }
    fclose(f);
    return found;
}
