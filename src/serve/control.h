/*
 * control.h - serve's control socket: how `callsight trigger` asks a
 * running serve to have its flight recorders take a snapshot.
 *
 * serve listens on a UNIX socket in its output directory,
 * DIR/.callsight-serve.sock (mode 0600: whoever may write DIR's traces may
 * ask; and the asking end asks only a serve of its own user, or root's,
 * by the socket's peer credentials), for one request line at a time:
 *
 *   snapshot ID\n      ID: a connection id, or 0 for every connection
 *
 * and answers one line:
 *
 *   ok N ID,ID,...\n   sent to N connections (their ids), N >= 1
 *   none TAKERS\n      sent to none: TAKERS connections take requests
 *                      (0: no flight recorder with TRACE_ACK_SNAPSHOT_REQUESTS
 *                      is connected; more: their sockets were full)
 *   error WHY\n        the request was not understood
 *
 *   wire\n             (callsight top) answered by a count and one line each:
 *   wire N\n           N connections write files now (at most
 *   ID BYTES\n         CONTROL_MAX_CONNS), each with the bytes read from its
 *                      socket so far
 *
 *   ctl ID LEN\n       (callsight ctl DIR) then LEN bytes: a live-control
 *                      request body (trace_wire.h) for connection ID (0:
 *                      the one that takes control); answered by one line:
 *   applied ID GEN APPLIED FLAGS NFUNCS\n   (pending: the same words, after
 *                      "pending": written, no thread applied it yet)
 *   refused ID WHY\n   the device refused it: nothing changed
 *   unreachable WHY\n  no such connection, it does not take control, no answer
 *
 *   ctl-list\n         answered by "ctl-list N\n" and one line per connection:
 *   ID TAKES ANSWERED GEN APPLIED FLAGS NFUNCS\n  (the last answer's figures;
 *                      TAKES 2: offers control, has not proved serve's key)
 *
 * The protocol is private to one callsight version on one host, so it is
 * text and unversioned; the wire to devices is what trace_wire.h defines.
 */
#ifndef CALLSIGHT_CONTROL_H
#define CALLSIGHT_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

#define CONTROL_SOCKET_NAME ".callsight-serve.sock"
#define CONTROL_LINE_MAX 512
#define CONTROL_MAX_CONNS CONN_LISTED_MAX /* connections in one 'wire' answer */

/* serve: listen in dir.  The socket's fd, or -1 with why in err (serve
 * goes on without: no snapshot requests).  A live serve already listening
 * there is left alone (err says so); a stale socket is replaced. */
int control_listen(const char *dir, char *err, size_t errlen);
/* serve: take one request from the listening socket and answer it; bounded
 * (a client that does not send its line within a second is dropped). */
void control_serve_one(int lfd);
/* serve, at the end: close and remove the socket. */
void control_close(int lfd, const char *dir);

/* callsight trigger: ask the serve writing dir for a snapshot of connection
 * id (0: all); its answer line (without the newline) in reply.  0, or -1
 * with why in reply (no serve listening there, no answer in time). */
int control_request(const char *dir, uint32_t id, char *reply, size_t len);

/* callsight top: the connections the serve writing dir has now, with their
 * wire bytes (at most max in out), within wait_ms per line.  How many, or
 * -1 with why in err (no serve listening there, no answer in time, a serve
 * that predates the request). */
long control_wire(const char *dir, struct conn_wire *out, size_t max, int wait_ms, char *err,
                  size_t errlen);

/* callsight ctl DIR: send a request body for connection id; serve's answer
 * line (without the newline) in reply.  0, or -1 with why in reply. */
int control_ctl(const char *dir, uint32_t id, const unsigned char *body, size_t len, char *reply, size_t rlen);

/* callsight ctl DIR --list: the answer's lines, whole, into text (NUL
 * ended).  0, or -1 with why in text. */
int control_ctl_list(const char *dir, char *text, size_t len);

#endif
