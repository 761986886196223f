/*
 * peeruid.h - which local user is at the other end of a TCP connection.
 *
 * A server on 127.0.0.1 is reachable by every user of the machine, and
 * TCP, unlike a Unix socket, has no SO_PEERCRED.  But a connection from
 * this machine is a socket of this machine: the kernel lists it, with the
 * uid that owns it, in /proc/net/tcp (tcp6 for IPv6 and v4-mapped peers),
 * keyed by its local address and port, which are the peer address the
 * server saw.  callsight ui uses it to serve its own user alone.
 */
#ifndef CALLSIGHT_PEERUID_H
#define CALLSIGHT_PEERUID_H

#include <sys/socket.h>
#include <sys/types.h>

/* The uid owning the client socket of the connection from peer (as
 * accept(2) gave it) to this machine's port server_port: 0 and *uid set,
 * or -1 when no such connection is listed (a peer on another machine, or
 * the listing unreadable).  The files it reads are given by procdir
 * ("/proc/net" but in tests). */
int peeruid_tcp(const struct sockaddr *peer, socklen_t len, unsigned server_port, const char *procdir,
                uid_t *uid);

#endif
