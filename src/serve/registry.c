/*
 * registry.c - streams seen by serve (see registry.h).
 *
 * One mutex and a condition variable for the whole table: it is touched
 * twice per connection, never per chunk.
 */
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define HANDOVER_WAIT_S 5 /* for a superseded connection to finish */

struct entry {
    int used;
    uint64_t id, start_ns;
    int fd;             /* socket of the connection holding it, -1 when idle */
    uint64_t last_use;  /* for eviction */
    struct registry_prev prev;
    int tainted;        /* a claim was turned away while it ran: the next gap is not exact */
    int keyed;          /* claimed with a key: only that key claims it again */
    uint64_t key_hash;
    char host[64];      /* the last claimant's address */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_freed = PTHREAD_COND_INITIALIZER;
static struct entry table[REGISTRY_MAX];
static uint64_t uses;

static int find(uint64_t id, uint64_t start_ns)
{
    for (int i = 0; i < REGISTRY_MAX; i++)
        if (table[i].used && table[i].id == id && table[i].start_ns == start_ns)
            return i;
    return -1;
}

/* A free slot, or the least recently used idle one; -1 if every one runs. */
static int make_room(void)
{
    int best = -1;
    for (int i = 0; i < REGISTRY_MAX; i++) {
        if (!table[i].used)
            return i;
        if (table[i].fd < 0 && (best < 0 || table[i].last_use < table[best].last_use))
            best = i;
    }
    return best;
}

/* Wait until slot i is idle: the device reconnected, so its old link is dead. */
static int take_over(int i)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += HANDOVER_WAIT_S;
    if (table[i].fd >= 0)
        shutdown(table[i].fd, SHUT_RDWR);
    while (table[i].fd >= 0)
        if (pthread_cond_timedwait(&reg_freed, &reg_lock, &until) == ETIMEDOUT)
            return -1;
    return 0;
}

/* May who claim entry e?  A key decides when there is one; without, only
 * the same address may cut a live connection (a dead one's series is
 * anyone's to continue, as before keys). */
static int may_claim(const struct entry *e, const struct registry_who *who)
{
    if (e->keyed || who->keyed)
        return e->keyed && who->keyed && e->key_hash == who->key_hash;
    return e->fd < 0 || strcmp(e->host, who->host) == 0;
}

int registry_claim(const struct registry_who *who, int fd, struct registry_prev *prev, int *slot)
{
    uint64_t id = who->id, start_ns = who->start_ns;
    pthread_mutex_lock(&reg_lock);
    int i = find(id, start_ns);
    int rc = 0;
    if (i >= 0 && !may_claim(&table[i], who)) {
        table[i].tainted = 1; /* perhaps the stream's own client, moved: its records go elsewhere */
        pthread_mutex_unlock(&reg_lock);
        return -2;
    }
    if (i >= 0) {
        rc = take_over(i);
        if (rc)
            table[i].tainted = 1;
        /* it may have been evicted and reused while we waited */
        if (rc == 0 && !(table[i].used && table[i].id == id && table[i].start_ns == start_ns))
            i = -1;
    }
    if (rc == 0 && i < 0) {
        i = make_room();
        if (i >= 0) {
            table[i] = (struct entry){1, id, start_ns, -1, 0, {0, 0, 0, 0, 0}, 0, who->keyed, who->key_hash, ""};
        }
    }
    if (rc == 0 && i >= 0)
        snprintf(table[i].host, sizeof table[i].host, "%s", who->host);
    if (rc == 0 && i >= 0) {
        *prev = table[i].prev;
        prev->inexact = table[i].tainted;
        table[i].tainted = 0; /* said once, by this claim's gap */
        table[i].fd = fd;
        table[i].last_use = ++uses;
        *slot = i;
    } else
        rc = -1;
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

void registry_release(int slot, uint32_t file_id, uint32_t next_seq, uint64_t received)
{
    pthread_mutex_lock(&reg_lock);
    table[slot].fd = -1;
    table[slot].prev = (struct registry_prev){file_id != 0, file_id, next_seq, received, 0};
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}

void registry_forget(int slot)
{
    pthread_mutex_lock(&reg_lock);
    table[slot] = (struct entry){0};
    table[slot].fd = -1;
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}

void registry_abandon(int slot)
{
    pthread_mutex_lock(&reg_lock);
    table[slot].fd = -1;
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}
