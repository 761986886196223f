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

#endif
