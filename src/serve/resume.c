/*
 * resume.c - a reconnecting stream's claim (see resume.h): the registry of
 * streams in memory, the index of series on disk, and the count of what a
 * series on disk holds.
 *
 * The registry has one mutex and a condition variable for the whole table:
 * it is touched twice per connection, never per chunk.  The index is shared
 * too: one mutex of its own.  Only the connection thread of a reconnecting
 * stream that the registry does not know counts its files, holding that
 * stream's registry entry, so no other connection writes the files it
 * counts.
 */
#include "resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "files.h"
#include "segname.h"
#include "trace.h"
#include "trace_wire.h"

#define REC TRACE_EVENT_SIZE
#define ID_PROBE 4      /* records at a seq-0 segment's head that may name the stream */
#define BUF_RECS 2048   /* the counting pass reads 64 KiB at a time */
#define HEADER_MAX 4096 /* a longer header_size is not one serve wrote */

/* The index: every series that names its stream, from one scan at startup
 * and from serve as it starts new ones. */
struct indexed {
    uint64_t sid, start_ns;
    uint32_t file_id;
    int keyed;
    uint64_t key_hash;
};

static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;
static struct indexed *index_of;
static size_t index_n, index_cap;
static uint64_t index_left_out;

/*
 * Open a segment positioned after its header; -1 if it is missing, is not
 * a regular file (a FIFO would block, a device would lie) or its header is
 * not whole.  Never follows a symlink, never blocks on open.
 */
static int open_segment(int dirfd, uint32_t id, uint32_t seq)
{
    char name[64];
    unsigned char h[TRACE_FILE_HEADER_SIZE];
    struct stat st;
    if (segname_path(name, sizeof name, ".", id, seq))
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    uint64_t hsize = 0;
    if (read(fd, h, sizeof h) == (ssize_t)sizeof h && !memcmp(h, TRACE_FILE_MAGIC, sizeof TRACE_FILE_MAGIC))
        hsize = wire_le32(h + offsetof(trace_file_header_t, header_size));
    if (hsize < TRACE_FILE_HEADER_SIZE || hsize > HEADER_MAX || lseek(fd, (off_t)hsize, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int serve_marker(const unsigned char *r, uint64_t *code)
{
    *code = wire_le64(r + offsetof(trace_event_t, func));
    return r[offsetof(trace_event_t, kind)] == TRACE_KIND_MARKER &&
           wire_le32(r + offsetof(trace_event_t, tid)) == 0;
}

/* A record serve wrote itself, not one the device sent; *stop when it stopped the writing. */
static int own_record(const unsigned char *r, int *stop)
{
    uint64_t code;
    if (!serve_marker(r, &code))
        return 0;
    switch (code) {
    case TRACE_MARK_BUDGET:
    case TRACE_MARK_DISK_FLOOR:
    case TRACE_MARK_WRITE_ERROR:
        *stop = 1;
        return 1;
    case TRACE_MARK_DEVICE_DROPPED:
    case TRACE_MARK_STREAM_GAP:
    case TRACE_MARK_TRACER_VANISHED:
    case TRACE_MARK_STREAM_CUT:
    case TRACE_MARK_STREAM_RESUMED:
    case TRACE_MARK_STREAM_ID:
    case TRACE_MARK_STREAM_KEY:
        return 1;
    default:
        return 0;
    }
}

/* The stream series id's seq-0 segment names at its head, into *e; 0 if none. */
static int read_names(int dirfd, uint32_t id, struct indexed *e)
{
    unsigned char r[ID_PROBE * REC];
    int fd = open_segment(dirfd, id, 0), named = 0;
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, r, sizeof r);
    close(fd);
    *e = (struct indexed){0, 0, id, 0, 0};
    for (ssize_t i = 0; n > 0 && i + (ssize_t)REC <= n; i += REC) {
        uint64_t code, payload = wire_le64(r + i + offsetof(trace_event_t, call_site));
        if (!serve_marker(r + i, &code))
            continue;
        if (code == TRACE_MARK_STREAM_ID && !named) {
            e->sid = payload;
            e->start_ns = wire_le64(r + i + offsetof(trace_event_t, ts));
            named = 1;
        } else if (code == TRACE_MARK_STREAM_KEY && named) {
            e->keyed = 1;
            e->key_hash = payload;
        }
    }
    return named;
}

static void index_put(const struct indexed *e)
{
    if (index_n == index_cap) {
        size_t cap = index_cap ? 2 * index_cap : 64;
        struct indexed *p = cap <= RESUME_INDEX_MAX ? realloc(index_of, cap * sizeof *p) : NULL;
        if (!p) {
            index_left_out++;
            return;
        }
        index_of = p;
        index_cap = cap;
    }
    index_of[index_n++] = *e;
}

void resume_index_add(uint64_t sid, uint64_t start_ns, uint32_t file_id, int keyed, uint64_t key_hash)
{
    struct indexed e = {sid, start_ns, file_id, keyed, key_hash};
    pthread_mutex_lock(&index_lock);
    index_put(&e);
    pthread_mutex_unlock(&index_lock);
}

/* A DIR for dirfd that leaves dirfd open, with a file offset of its own
 * (a dup would share one, and threads read the directory at once). */
static DIR *open_dir(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* its own offset: readdir in two threads */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    return d;
}

int resume_index_build(int dirfd, uint64_t *left_out)
{
    DIR *d = open_dir(dirfd);
    if (!d)
        return -1;
    uint32_t id, seq;
    struct indexed e;
    pthread_mutex_lock(&index_lock);
    index_n = 0;
    index_left_out = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (segname_parse(de->d_name, &id, &seq) && seq == 0 && read_names(dirfd, id, &e))
            index_put(&e);
    *left_out = index_left_out;
    pthread_mutex_unlock(&index_lock);
    closedir(d);
    return 0;
}

/* Add one segment's device records to out; a torn last record is not one. -1 on a read error. */
static int count_segment(int dirfd, uint32_t id, uint32_t seq, unsigned char *buf,
                         struct resume_found *out)
{
    int fd = open_segment(dirfd, id, seq), stop = 0;
    size_t have = 0;
    ssize_t n = 0;
    if (fd < 0)
        return 0; /* a header never written whole holds no records */
    while ((n = read(fd, buf + have, BUF_RECS * REC - have)) > 0 || (n < 0 && errno == EINTR)) {
        have += n > 0 ? (size_t)n : 0;
        size_t whole = have / REC * REC;
        for (size_t i = 0; i < whole; i += REC)
            out->received += !own_record(buf + i, &stop);
        memmove(buf, buf + whole, have - whole);
        have -= whole;
    }
    close(fd);
    if (stop)
        out->exact = 0;
    return n < 0 ? -1 : 0;
}

static int listed(const uint32_t *ids, int n, uint32_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/*
 * The series the index says are the stream's and bear the claim's key (or,
 * for a claim without one, none); the newest of them continues.  *others:
 * series of the stream with another key.
 */
static int find_ids(uint64_t sid, uint64_t start_ns, int keyed, uint64_t key_hash, uint32_t *ids, int *others,
                    struct resume_found *out)
{
    int n = 0;
    *others = 0;
    pthread_mutex_lock(&index_lock);
    for (size_t i = 0; i < index_n && n < RESUME_SERIES_MAX; i++) {
        const struct indexed *e = &index_of[i];
        if (e->sid != sid || e->start_ns != start_ns)
            continue;
        if (e->keyed != keyed || e->key_hash != key_hash) {
            ++*others;
            continue;
        }
        ids[n++] = e->file_id;
        if (e->file_id >= out->file_id)
            out->file_id = e->file_id;
    }
    pthread_mutex_unlock(&index_lock);
    return n;
}

/* Count those series' records and find where the newest continues. */
static int count_ids(DIR *d, int dirfd, const uint32_t *ids, int n, struct resume_found *out)
{
    unsigned char *buf = malloc(BUF_RECS * REC);
    uint32_t id, seq;
    int rc = buf ? 0 : -1;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!segname_parse(e->d_name, &id, &seq) || !listed(ids, n, id))
            continue;
        rc = count_segment(dirfd, id, seq, buf, out);
        if (id == out->file_id && seq >= out->next_seq)
            out->next_seq = seq + 1;
    }
    free(buf);
    return rc;
}

int resume_find(int dirfd, uint64_t id, uint64_t start_ns, uint64_t key_hash, int keyed,
                       struct resume_found *out)
{
    uint32_t ids[RESUME_SERIES_MAX];
    int others;
    memset(out, 0, sizeof *out);
    int n = find_ids(id, start_ns, keyed, key_hash, ids, &others, out);
    if (n == 0) {
        out->refused = others > 0; /* the stream's series are for the holder of their key only */
        return 0;
    }
    out->keyed = keyed;
    out->key_hash = key_hash;
    DIR *d = open_dir(dirfd);
    if (!d)
        return -1;
    out->found = out->exact = 1;
    int rc = count_ids(d, dirfd, ids, n, out);
    closedir(d);
    return rc;
}

/* ---- the registry, in memory ------------------------------------------ */

#define HANDOVER_WAIT_S 5 /* for a superseded connection to finish */

/* Where a stream stood when its last connection ended. */
struct prev {
    int known;          /* an earlier connection of this stream ran here */
    uint32_t file_id;   /* its series' connection id */
    uint32_t next_seq;  /* the segment number to continue with */
    uint64_t received;  /* records received on all its earlier connections */
    int inexact;        /* a connection of it was turned away meanwhile (its records are elsewhere) */
};

struct entry {
    int used;
    uint64_t id, start_ns;
    int fd;             /* socket of the connection holding it, -1 when idle */
    uint64_t last_use;  /* for eviction */
    struct prev prev;
    int tainted;        /* a claim was turned away while it ran: the next gap is not exact */
    int keyed;          /* claimed with a key: only that key claims it again */
    uint64_t key_hash;
    char host[64];      /* the last claimant's address */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_freed = PTHREAD_COND_INITIALIZER;
static struct entry table[RESUME_REGISTRY_MAX];
static uint64_t uses;

static int find(uint64_t id, uint64_t start_ns)
{
    for (int i = 0; i < RESUME_REGISTRY_MAX; i++)
        if (table[i].used && table[i].id == id && table[i].start_ns == start_ns)
            return i;
    return -1;
}

/* A free slot, or the least recently used idle one; -1 if every one runs. */
static int make_room(void)
{
    int best = -1;
    for (int i = 0; i < RESUME_REGISTRY_MAX; i++) {
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
static int may_claim(const struct entry *e, const struct resume_who *who)
{
    if (e->keyed || who->keyed)
        return e->keyed && who->keyed && e->key_hash == who->key_hash;
    return e->fd < 0 || strcmp(e->host, who->host) == 0;
}

static int registry_claim(const struct resume_who *who, int fd, struct prev *prev, int *slot)
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

void resume_release(int slot, uint32_t file_id, uint32_t next_seq, uint64_t received)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&reg_lock);
    table[slot].fd = -1;
    table[slot].prev = (struct prev){file_id != 0, file_id, next_seq, received, 0};
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}

static void registry_forget(int slot)
{
    pthread_mutex_lock(&reg_lock);
    table[slot] = (struct entry){0};
    table[slot].fd = -1;
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}

void resume_abandon(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&reg_lock);
    table[slot].fd = -1;
    pthread_cond_broadcast(&reg_freed);
    pthread_mutex_unlock(&reg_lock);
}

/* ---- a claim ------------------------------------------------------------ */

int resume_key_hash(const unsigned char key[TRACE_STREAM_RESUME_KEY_SIZE], uint64_t *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(key, TRACE_STREAM_RESUME_KEY_SIZE, md, &len, EVP_sha256(), NULL) || len < 8)
        return -1;
    *out = wire_le64(md);
    return 0;
}

/*
 * A stream the registry does not know: serve may have been restarted into
 * the same directory (or the entry made room), so the index says whether
 * the stream has series on disk and whose key they bear, whatever the
 * resume claims its connection number is.  -2 when they bear another key.
 */
static int from_disk(const struct resume_who *who, struct prev *prev, struct resume_claim *out)
{
    struct resume_found s;
    if (resume_find(files_dir_fd(), who->id, who->start_ns, who->key_hash, who->keyed, &s)) {
        out->disk_errno = errno;
        return 0;
    }
    if (s.refused)
        return -2;
    if (s.found)
        *prev = (struct prev){1, s.file_id, s.next_seq, s.received, 0};
    out->exact = s.exact;
    return 0;
}

void resume_claim(const struct resume_who *who, int fd, struct resume_claim *out)
{
    struct prev prev = {0, 0, 0, 0, 0};
    memset(out, 0, sizeof *out);
    out->slot = -1;
    out->exact = 1;
    int rc = registry_claim(who, fd, &prev, &out->slot);
    if (rc == -2) {
        out->refused = who->keyed ? "its resume key does not match" : "it runs on a connection from another address";
        return;
    }
    if (rc)
        out->slot = -1;
    else if (!prev.known && from_disk(who, &prev, out) == -2) {
        registry_forget(out->slot); /* so the entry binds nobody */
        out->slot = -1;
        out->refused = who->keyed ? "its resume key does not match its series on disk"
                                  : "its series on disk was started with a resume key";
        return;
    }
    out->known = prev.known;
    out->file_id = prev.file_id;
    out->next_seq = prev.next_seq;
    out->received = prev.received;
    out->turned_away = prev.inexact;
    if (prev.inexact)
        out->exact = 0;
}
