/*
 * admit.c - serve's connection threads and their caps (see admit.h).
 *
 * A table of slots, one per connection thread.  The threads share nothing
 * but the connection-id allocator and the disk's accounts in files.c and
 * the resume claims (resume.c); the slots are only for the caps, shutting
 * sockets down and joining threads.
 */
#include "admit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "files.h"

/* Slots: the streaming connections, as many again still shaking hands, and
 * room for evicted ones whose threads are ending. */
#define MAX_SLOTS (2 * ADMIT_MAX_CONNS + 64)

/* An accepted connection, handed to its thread. */
struct job {
    int fd;
    int slot;
    uint64_t accepted_ms;
    char peer[NET_NAME_MAX];
};

/*
 * A connection thread's place, for shutting its socket down and joining it,
 * and for the caps: a connection is PENDING until its handshake is valid,
 * then LIVE.  Pending ones have a budget of their own (max_conns, the
 * stalest evicted when a new one needs room), so peers that connect and
 * say nothing never keep a stream out.
 */
enum slot_state { SLOT_PENDING, SLOT_LIVE, SLOT_EVICTED };

struct slot {
    int fd;           /* the connection's socket; -1 once its thread is done with it */
    int ended;        /* the thread has ended (or is ending) and is not joined yet */
    pthread_t thread;
    enum slot_state state;
    int writing;      /* LIVE and its first events have begun: it keeps its place */
    uint64_t accepted_ms;
    char host[NET_NAME_MAX]; /* the peer's address, for --max-per-peer */
};

/* Open sockets and threads to join; active counts the running threads. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_freed = PTHREAD_COND_INITIALIZER;
static struct slot slots[MAX_SLOTS];
static int active;
static unsigned long served;
static atomic_ulong evicted, refused; /* also counted by the accepting thread, outside slots_lock */
static int max_conns, max_per_peer;
static const struct admit_opts *opts;

/* ---- connection threads ------------------------------------------------ */

/* Slots in a state (and, with host, from that address). slots_lock held. */
static int count_slots(enum slot_state st, const char *host)
{
    int n = 0;
    for (int i = 0; i < MAX_SLOTS; i++)
        if (slots[i].fd >= 0 && slots[i].state == st && (!host || !strcmp(slots[i].host, host)))
            n++;
    return n;
}

/* The connection (from host, or any) that has waited longest without
 * writing: still shaking hands, or admitted but with no events begun yet;
 * -1 if none. */
static int stalest_idle(const char *host)
{
    int best = -1;
    for (int i = 0; i < MAX_SLOTS; i++) {
        const struct slot *sl = &slots[i];
        if (sl->fd < 0 || sl->state == SLOT_EVICTED || sl->writing || (host && strcmp(sl->host, host)))
            continue;
        if (best < 0 || sl->accepted_ms < slots[best].accepted_ms)
            best = i;
    }
    return best;
}

/* Its thread ends at its next read; the slot frees when it has. */
static void evict(int i)
{
    shutdown(slots[i].fd, SHUT_RDWR);
    slots[i].state = SLOT_EVICTED;
    evicted++;
}

/*
 * The handshake was valid: a LIVE place, unless streams fill them.  An
 * admitted connection that has written nothing yet holds its place only
 * until someone else needs it, so handshakes and heartbeats alone keep no
 * stream out.
 */
static int admit(void *arg, char *why, size_t why_len)
{
    struct job *j = arg;
    int rc = 0;
    pthread_mutex_lock(&slots_lock);
    struct slot *sl = &slots[j->slot];
    if (sl->state == SLOT_EVICTED)
        rc = snprintf(why, why_len, "made room for newer connections before its handshake came");
    else if (count_slots(SLOT_LIVE, NULL) >= max_conns) {
        int v = -1;
        for (int i = 0; i < MAX_SLOTS; i++) /* the stalest admitted one that writes nothing */
            if (slots[i].fd >= 0 && slots[i].state == SLOT_LIVE && !slots[i].writing &&
                (v < 0 || slots[i].accepted_ms < slots[v].accepted_ms))
                v = i;
        if (v >= 0)
            evict(v);
        else
            rc = snprintf(why, why_len, "%d connections already streaming (--max-conns)", max_conns);
    }
    if (!rc)
        sl->state = SLOT_LIVE;
    else
        refused++;
    pthread_mutex_unlock(&slots_lock);
    return rc ? -1 : 0;
}

static void writing(void *arg)
{
    struct job *j = arg;
    pthread_mutex_lock(&slots_lock);
    slots[j->slot].writing = 1;
    pthread_mutex_unlock(&slots_lock);
}

static int was_evicted(void *arg)
{
    struct job *j = arg;
    pthread_mutex_lock(&slots_lock);
    int e = slots[j->slot].state == SLOT_EVICTED;
    pthread_mutex_unlock(&slots_lock);
    return e;
}

static void *conn_thread(void *arg)
{
    struct job *j = arg;
    struct conn_gate gate = {admit, writing, was_evicted, j};
    conn_serve(j->fd, j->peer, opts->conn, j->accepted_ms, &gate);
    pthread_mutex_lock(&slots_lock);
    slots[j->slot].fd = -1;
    slots[j->slot].ended = 1;
    active--;
    pthread_cond_broadcast(&slots_freed);
    pthread_mutex_unlock(&slots_lock);
    close(j->fd);
    free(j);
    return NULL;
}

/*
 * Tell a refused peer why (best effort: trace_stream never reads, but a
 * person with nc does), then close.  Never blocks: the socket is fresh.
 */
static void refuse(int fd, const char *msg, int len)
{
    if (len > 0)
        (void)!send(fd, msg, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
    close(fd);
}


/* Join the threads that have ended (slots_lock held: they take it no more). */
static void reap_ended(void)
{
    for (int i = 0; i < MAX_SLOTS; i++)
        if (slots[i].ended) {
            pthread_join(slots[i].thread, NULL);
            slots[i].ended = 0;
        }
}

/*
 * Make room for a new connection from host: within --max-per-peer for its
 * address, within the pending budget for all, evicting the stalest pending
 * one where it must.  0, or -1 with why (slots_lock held).
 */
static int make_room(const char *host, char *why, size_t why_len)
{
    if (count_slots(SLOT_PENDING, host) + count_slots(SLOT_LIVE, host) >= max_per_peer) {
        int v = stalest_idle(host);
        if (v < 0) {
            snprintf(why, why_len, "%d connections from %s already open (--max-per-peer)", max_per_peer, host);
            return -1;
        }
        evict(v);
    }
    if (count_slots(SLOT_PENDING, NULL) >= max_conns) {
        int v = -1;
        for (int i = 0; i < MAX_SLOTS; i++)
            if (slots[i].fd >= 0 && slots[i].state == SLOT_PENDING &&
                (v < 0 || slots[i].accepted_ms < slots[v].accepted_ms))
                v = i;
        evict(v);
    }
    return 0;
}

/* A free slot for a new thread; -1 when even the evicted ones fill the table. */
static int free_slot(void)
{
    for (int i = 0; i < MAX_SLOTS; i++)
        if (slots[i].fd < 0)
            return i;
    return -1;
}

/* Hand an accepted socket to a new thread, or refuse it. */
static void start_conn(int fd, const char *peer)
{
    char why[NET_NAME_MAX + 96] = "out of memory";
    struct job *j = malloc(sizeof *j);
    int ok = 0;
    if (j) {
        j->fd = fd;
        j->accepted_ms = net_now_ms();
        snprintf(j->peer, sizeof j->peer, "%s", peer);
        pthread_mutex_lock(&slots_lock);
        reap_ended();
        char host[NET_NAME_MAX];
        net_host_of(peer, host, sizeof host);
        j->slot = make_room(host, why, sizeof why) == 0 ? free_slot() : -2;
        if (j->slot == -1)
            snprintf(why, sizeof why, "%d connections open or closing", MAX_SLOTS);
        if (j->slot >= 0) {
            struct slot *sl = &slots[j->slot];
            *sl = (struct slot){.fd = fd, .state = SLOT_PENDING, .accepted_ms = j->accepted_ms};
            snprintf(sl->host, sizeof sl->host, "%s", host);
            ok = pthread_create(&sl->thread, NULL, conn_thread, j) == 0;
            if (!ok) {
                sl->fd = -1;
                snprintf(why, sizeof why, "cannot start a thread");
            }
        }
        if (ok) {
            active++;
            served++;
        } else
            refused++;
        pthread_mutex_unlock(&slots_lock);
    }
    if (!ok) {
        char msg[sizeof why + NET_NAME_MAX + 64];
        int n = snprintf(msg, sizeof msg, "callsight serve: connection from %s refused: %s\n", peer, why);
        conn_say_limited("connection from %s refused: %s", peer, why);
        refuse(fd, msg, n);
        free(j);
    }
}

/* ---- accepting --------------------------------------------------------- */

static void accept_one(int lfd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char peer[NET_NAME_MAX];
    int fd = accept(lfd, (struct sockaddr *)&ss, &len);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        /* out of descriptors: the connection waits in the backlog; do not spin on it */
        conn_say_limited("cannot accept a connection now: %s", strerror(errno));
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        return;
    }
    if (fd < 0) {
        if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
            fprintf(stderr, "callsight serve: accept failed: %s\n", strerror(errno));
        return;
    }
    net_addr_name((struct sockaddr *)&ss, len, peer, sizeof peer);
    if (!net_allow_match(opts->allow, (struct sockaddr *)&ss)) {
        conn_say_limited("connection from %s refused: not in --allow", peer);
        refused++;
        close(fd);
        return;
    }
    char why[128];
    if (files_disk_full(why, sizeof why)) {
        char msg[NET_NAME_MAX + 300];
        int n = snprintf(msg, sizeof msg, "callsight serve: connection from %s refused: %s in %s\n", peer, why,
                         opts->dir);
        conn_say_limited("connection from %s refused: %s in %s", peer, why, opts->dir);
        refused++;
        refuse(fd, msg, n);
        return;
    }
    start_conn(fd, peer);
}

/* Accept until stopping; the signals are delivered only inside pselect.
 * Connections, and (cfd >= 0) requests on the control socket: one at a
 * time, each bounded (control.c), so a slow asker delays accepting by a
 * second at most. */
int admit_loop(int lfd, int cfd, const sigset_t *waitmask)
{
    while (!atomic_load(opts->conn->stopping)) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(lfd, &rd);
        if (cfd >= 0)
            FD_SET(cfd, &rd);
        struct timespec tick = {opts->conn->status_secs, 0}; /* for the lines kept quiet (conn_say_limited) */
        int rc = pselect((lfd > cfd ? lfd : cfd) + 1, &rd, NULL, NULL, &tick, waitmask);
        conn_say_flush();
        if (rc > 0 && FD_ISSET(lfd, &rd))
            accept_one(lfd);
        if (rc > 0 && cfd >= 0 && FD_ISSET(cfd, &rd))
            control_serve_one(cfd);
        else if (rc < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

/*
 * Stopping: connections the kernel completed but we had not accepted yet
 * have sent data their clients count as sent.  Take them too (bounded by
 * the backlog), so admit_stop writes what they sent like everyone else's.
 */
void admit_backlog(int lfd)
{
    int fl = fcntl(lfd, F_GETFL);
    if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) != 0)
        return;
    for (int i = 0; i < MAX_SLOTS; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        char peer[NET_NAME_MAX];
        int fd = accept(lfd, (struct sockaddr *)&ss, &len);
        if (fd < 0)
            return;
        net_addr_name((struct sockaddr *)&ss, len, peer, sizeof peer);
        if (net_allow_match(opts->allow, (struct sockaddr *)&ss))
            start_conn(fd, peer);
        else
            close(fd);
    }
}

/* Let every connection write what it has and close its files. */
void admit_stop(void)
{
    pthread_mutex_lock(&slots_lock);
    for (int i = 0; i < MAX_SLOTS; i++)
        if (slots[i].fd >= 0)
            shutdown(slots[i].fd, SHUT_RD);
    while (active > 0)
        pthread_cond_wait(&slots_freed, &slots_lock);
    reap_ended();
    pthread_mutex_unlock(&slots_lock);
}

void admit_init(const struct admit_opts *o)
{
    opts = o;
    max_conns = o->max_conns;
    max_per_peer = o->max_per_peer;
    for (int i = 0; i < MAX_SLOTS; i++)
        slots[i] = (struct slot){.fd = -1};
}

void admit_counts(struct admit_counts *out)
{
    pthread_mutex_lock(&slots_lock);
    out->served = served;
    pthread_mutex_unlock(&slots_lock);
    out->refused = refused;
    out->evicted = evicted;
}
