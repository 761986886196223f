/*
 * admit.h - which connections serve takes, and the threads that serve them.
 *
 * admit_loop accepts connections on the listening socket and gives each a
 * thread running conn_serve (conn.h), at most ADMIT_MAX_CONNS streaming at
 * once.  Every thread is joined: an ended one when the next connection
 * comes, the rest in admit_stop, so none outlives serve.  A connection
 * must pass --allow and the directory's limits (files_disk_full) before it
 * gets a thread; then it is PENDING until its handshake is valid, and LIVE
 * after.  Pending ones have a budget of their own (max_conns, the stalest
 * evicted when a new one needs room), so peers that connect and say
 * nothing never keep a stream out; an admitted one that has written
 * nothing yet gives its place up to a newcomer; at most max_per_peer
 * connections come from one address (IPv6: one /64).
 *
 * SIGINT/SIGTERM are meant to be blocked in every thread and let in only
 * while the loop waits (the caller's waitmask), so that a stop is seen
 * between two accepts.  Refusals are said through conn_say_limited.
 */
#ifndef CALLSIGHT_ADMIT_H
#define CALLSIGHT_ADMIT_H

#include <signal.h>

#include "conn.h"
#include "net.h"

#define ADMIT_MAX_CONNS 1024 /* --max-conns at most */

struct admit_opts {
    int max_conns;                /* --max-conns: streaming at once, and as many shaking hands */
    int max_per_peer;             /* --max-per-peer */
    const struct net_allow *allow; /* --allow */
    const char *dir;              /* the output directory, for refusal lines */
    const struct conn_opts *conn; /* for every connection; its stopping ends the loop */
};

/* Before the loop: o (and what it points to) stays valid until admit_stop. */
void admit_init(const struct admit_opts *o);

/* Accept until *o->conn->stopping, and (cfd >= 0) answer the control
 * socket between accepts (control.h).  0, or -1 when waiting failed (errno). */
int admit_loop(int lfd, int cfd, const sigset_t *waitmask);

/* Stopping: take the connections the kernel completed but the loop had not
 * accepted yet (their clients count what they sent as sent), bounded by
 * the backlog. */
void admit_backlog(int lfd);

/* Let every connection write what it has and close its files; join them all. */
void admit_stop(void);

/* Connections served, refused, and closed to make room before sending events. */
struct admit_counts {
    unsigned long served, refused, evicted;
};
void admit_counts(struct admit_counts *out);

#endif
