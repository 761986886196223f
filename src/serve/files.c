/*
 * files.c - segment files, rotation, budget and connection ids for
 * callsight serve (see files.h).
 *
 * Every write leaves the files valid: headers are written whole or the file
 * is removed, and a failed event write is cut back to the last whole record.
 */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "lib/u64map.h"
#include "segname.h"
#include "trace.h"
#include "trace_wire.h"

#define REC TRACE_EVENT_SIZE

/* The connection-id allocator: the one thing connections share.  Ids that
 * some file in the directory had at startup are never claimed, whoever put
 * it there. */
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t ids_next = 1;
static struct u64map ids_used;

/* The out directory, opened once: every file is made and removed relative
 * to it, so a path swapped for a symlink later redirects nothing. */
static int dir_fd = -1;

/* ---- the directory's disk, shared by every connection -------------------
 * Every byte is accounted before it is written, under one lock, against
 * the directory's cap and the filesystem's free space less what was
 * written since it was last asked (once a second), so connections writing
 * at once cannot together pass either.  Between the accounting and the end
 * of its write a connection's bytes are under way (disk_pending): neither
 * the directory's sum nor statvfs need see them yet, so both are taken
 * with them added, or a connection that sums the directory while another
 * writes would give the other's bytes out a second time (issue 29).  A
 * write settles its bytes when it is done, giving back what it did not
 * leave on disk. */
#define DISK_CHECK_MS 1000u
#define DISK_RESCAN_MS 10000u /* the cap reached: look again what the directory holds, at most this often */

static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t disk_used;            /* bytes of series files in the directory, those under way included */
static uint64_t disk_pending;         /* accounted, their writes not yet done */
static uint64_t disk_cap = UINT64_MAX; /* --max-total-mb */
static uint64_t disk_floor;           /* --min-free-mb, bytes; 0: none */
static uint64_t disk_inode_floor;     /* free inodes a new file must leave; 0: none */
static uint64_t disk_free;            /* at the last statvfs, less what was written or is under way since */
static uint64_t disk_checked_ms;      /* 0: never */
static uint64_t disk_rescanned_ms;    /* when the cap was last found reached and the directory summed */

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1u;
}

/* Refresh disk_free when it is stale (disk_lock held).  A write under way
 * may be partly in statvfs's figure already: counting it whole errs on the
 * side of the floor. */
static void disk_refresh(void)
{
    struct statvfs sv;
    uint64_t now = mono_ms();
    if (disk_checked_ms && now - disk_checked_ms < DISK_CHECK_MS)
        return;
    disk_checked_ms = now;
    if (fstatvfs(dir_fd, &sv) == 0) {
        uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
        disk_free = avail > disk_pending ? avail - disk_pending : 0;
    }
}

/* The bytes of the directory's series files now, and those under way
 * (disk_lock held), so that traces moved away make room again.  A write
 * under way may be partly in a file's size already: counting it whole errs
 * on the side of the cap, until the next sum.  Left as it was if the
 * directory cannot be read. */
static void disk_rescan(void)
{
    uint64_t now = mono_ms();
    if (disk_rescanned_ms && now - disk_rescanned_ms < DISK_RESCAN_MS)
        return;
    disk_rescanned_ms = now;
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    uint64_t sum = 0;
    uint32_t id, seq;
    struct stat st;
    for (struct dirent *e; (e = readdir(d));)
        if (segname_parse(e->d_name, &id, &seq) &&
            fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    closedir(d);
    disk_used = sum + disk_pending;
}

/* len bytes accounted and under way (disk_lock held). */
static void disk_account(uint64_t len)
{
    disk_used += len;
    disk_pending += len;
    disk_free = disk_free > len ? disk_free - len : 0;
}

/* May len more bytes be written?  OK, with them accounted and under way
 * until disk_settle, or why not (nothing is taken then). */
static enum files_news disk_take(uint64_t len)
{
    enum files_news news = FILES_OK;
    pthread_mutex_lock(&disk_lock);
    if (disk_used + len > disk_cap)
        disk_rescan();
    if (disk_used + len > disk_cap)
        news = FILES_TOTAL_REACHED;
    else if (disk_floor && (disk_refresh(), disk_free < disk_floor + len))
        news = FILES_DISK_LOW;
    else
        disk_account(len);
    pthread_mutex_unlock(&disk_lock);
    return news;
}

/* A header, or the last marker of a connection: always fits, counted,
 * never refused; under way until disk_settle as disk_take's bytes are. */
static void disk_take_anyway(uint64_t len)
{
    pthread_mutex_lock(&disk_lock);
    disk_account(len);
    pthread_mutex_unlock(&disk_lock);
}

/* The write of len taken bytes is over and left kept of them on disk: the
 * rest is given back. */
static void disk_settle(uint64_t len, uint64_t kept)
{
    pthread_mutex_lock(&disk_lock);
    disk_pending -= len;
    uint64_t back = len - kept;
    disk_used = disk_used > back ? disk_used - back : 0;
    disk_free += back;
    pthread_mutex_unlock(&disk_lock);
}

/* 1 when a new file would leave fewer free inodes than the floor. */
static int inodes_low(void)
{
    struct statvfs sv;
    if (!disk_inode_floor || fstatvfs(dir_fd, &sv) != 0 || sv.f_files == 0)
        return 0; /* some filesystems have no fixed inode count (f_files 0) */
    return (uint64_t)sv.f_favail <= disk_inode_floor; /* the new file would leave fewer */
}

void files_set_limits(uint64_t total_cap, uint64_t floor_bytes, uint64_t inode_floor)
{
    pthread_mutex_lock(&disk_lock);
    disk_cap = total_cap ? total_cap : UINT64_MAX;
    disk_floor = floor_bytes;
    disk_inode_floor = inode_floor;
    disk_checked_ms = 0;
    pthread_mutex_unlock(&disk_lock);
}

int files_disk_full(char *why, size_t len)
{
    int full = 0;
    pthread_mutex_lock(&disk_lock);
    if (disk_used >= disk_cap)
        disk_rescan();
    if (disk_used >= disk_cap)
        full = snprintf(why, len, "the directory holds %" PRIu64 " MB, its cap (--max-total-mb)", disk_used >> 20);
    else if (disk_floor && (disk_refresh(), disk_free < disk_floor))
        full = snprintf(why, len, "less than %" PRIu64 " MB free", disk_floor >> 20);
    pthread_mutex_unlock(&disk_lock);
    if (!full && inodes_low())
        full = snprintf(why, len, "fewer than %" PRIu64 " inodes free", disk_inode_floor);
    return full != 0;
}

uint64_t files_dir_bytes(void)
{
    pthread_mutex_lock(&disk_lock);
    uint64_t v = disk_used;
    pthread_mutex_unlock(&disk_lock);
    return v;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- directory and ids ------------------------------------------------- */

static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0750) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(path, 0750) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* Note the ids in the directory; the highest.  -1 when it cannot be read. */
static int scan_ids(uint32_t *highest)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    u64map_init(&ids_used);
    *highest = 0;
    for (struct dirent *e; (e = readdir(d));) {
        uint32_t id = 0, seq;
        if (!segname_parse(e->d_name, &id, &seq))
            continue;
        if (u64map_put(&ids_used, id, 1) < 0)
            break;
        struct stat st;
        if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            disk_used += (uint64_t)st.st_size;
        if (id > *highest)
            *highest = id;
    }
    closedir(d);
    return 0;
}

int files_init_dir(const char *dir, char *err, size_t err_len)
{
    if (make_dirs(dir) != 0) {
        snprintf(err, err_len, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        snprintf(err, err_len, "%s is a symbolic link or not a directory; give the directory itself", dir);
        return -1;
    }
    /* Others on this machine are adversaries: a directory another user owns,
     * or one anybody but its owner may write, lets them replace the control
     * socket or the traces under serve. */
    struct stat st;
    if (dir_fd >= 0 && fstat(dir_fd, &st) == 0 && (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
        snprintf(err, err_len, st.st_uid != geteuid()
                                   ? "%s belongs to another user (uid %u): give a directory of your own"
                                   : "%s may be written by others (mode %03o): chmod go-w it, or give another",
                 dir, st.st_uid != geteuid() ? (unsigned)st.st_uid : (unsigned)(st.st_mode & 0777));
        close(dir_fd);
        dir_fd = -1;
        return -1;
    }
    uint32_t highest = 0;
    if (dir_fd < 0 || scan_ids(&highest) != 0) {
        snprintf(err, err_len, "cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    pthread_mutex_lock(&ids_lock);
    ids_next = highest == UINT32_MAX ? 1 : highest + 1; /* a planted last id: start over, skipping */
    pthread_mutex_unlock(&ids_lock);
    return 0;
}

int files_dir_fd(void)
{
    return dir_fd;
}

static int segment_name(const struct files *f, uint32_t seq, char *name, size_t len)
{
    return segname_path(name, len, ".", f->id, seq);
}

/* Readable by the owner's group (the analysis), by nobody else. */
static int create_segment(const struct files *f, uint32_t seq)
{
    char name[64];
    if (segment_name(f, seq, name, sizeof name))
        return -1;
    if (inodes_low()) {
        errno = ENOSPC;
        return -1;
    }
    return openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
}

/* The next id no file had at startup (ids_lock held); 0 when none is left. */
static uint32_t next_unused(void)
{
    uint32_t v;
    for (uint64_t n = 0; n <= (uint64_t)UINT32_MAX; n++, ids_next++)
        if (ids_next != 0 && u64map_get(&ids_used, ids_next, &v) == 0)
            return ids_next++;
    return 0;
}

/* Claim the lowest free id from ids_next on; the seq-0 file is the claim. */
static int claim_id(struct files *f)
{
    int fd = -1;
    pthread_mutex_lock(&ids_lock);
    for (int tries = 0; fd < 0 && tries < 1000 && (f->id = next_unused()) != 0; tries++) {
        fd = create_segment(f, 0);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    pthread_mutex_unlock(&ids_lock);
    if (fd < 0 && errno == EEXIST)
        errno = EBUSY; /* another serve keeps taking ids in this directory */
    return fd;
}

/* ---- segments ---------------------------------------------------------- */

static void encode_header(const struct files *f, unsigned char *h)
{
    memset(h, 0, TRACE_FILE_HEADER_SIZE);
    memcpy(h + offsetof(trace_file_header_t, magic), TRACE_FILE_MAGIC, sizeof TRACE_FILE_MAGIC);
    wire_put_le32(h + offsetof(trace_file_header_t, version), f->summary ? TRACE_FILE_VERSION_SUMMARY : TRACE_FILE_VERSION);
    wire_put_le32(h + offsetof(trace_file_header_t, event_size), TRACE_EVENT_SIZE);
    wire_put_le32(h + offsetof(trace_file_header_t, header_size), TRACE_FILE_HEADER_SIZE);
    wire_put_le32(h + offsetof(trace_file_header_t, flags), f->flags);
    wire_put_le64(h + offsetof(trace_file_header_t, load_bias), f->load_bias);
    wire_put_le64(h + offsetof(trace_file_header_t, tick_hz), f->tick_hz);
    wire_put_le64(h + offsetof(trace_file_header_t, t0_ticks), f->t0_ticks);
    wire_put_le64(h + offsetof(trace_file_header_t, t0_ns), f->t0_ns);
    wire_put_le64(h + offsetof(trace_file_header_t, hook_ns), f->hook_ns);
    wire_put_le32(h + offsetof(trace_file_header_t, pid), f->id);
    wire_put_le32(h + offsetof(trace_file_header_t, seq), f->seq);
}

/* Write the header of the freshly created segment f->seq; remove the file if that fails. */
static int start_segment(struct files *f, int fd)
{
    unsigned char h[TRACE_FILE_HEADER_SIZE];
    encode_header(f, h);
    disk_take_anyway(sizeof h); /* the file itself was allowed (inodes; the caps at accept) */
    if (write_all(fd, h, sizeof h) == 0) {
        disk_settle(sizeof h, sizeof h);
        f->fd = fd;
        f->seg_bytes = TRACE_FILE_HEADER_SIZE;
        f->total_bytes += TRACE_FILE_HEADER_SIZE;
        return 0;
    }
    int err = errno;
    char name[64];
    close(fd);
    int gone = segment_name(f, f->seq, name, sizeof name) == 0 && unlinkat(dir_fd, name, 0) == 0;
    disk_settle(sizeof h, gone ? 0 : sizeof h); /* a part left on disk stays counted */
    errno = err;
    return -1;
}

static int file_setup(struct files *f, const char *dir, uint64_t seg_cap, uint64_t budget,
                      const struct proto_hello *h, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    f->dir = dir;
    f->seg_cap = seg_cap;
    f->budget = budget;
    f->fd = -1;
    f->flags = h->flags & ~TRACE_FLAG_BIGENDIAN; /* we always write little-endian */
    f->load_bias = h->load_bias;
    f->tick_hz = h->tick_hz;
    f->t0_ticks = h->t0_ticks;
    f->t0_ns = h->t0_ns;
    f->hook_ns = h->hook_ns;
    if (seg_cap < TRACE_FILE_HEADER_SIZE + REC || budget < TRACE_FILE_HEADER_SIZE + 2 * REC) {
        snprintf(err, err_len, "segment size or budget too small for a header and a record");
        return -1;
    }
    return 0;
}

int files_open(struct files *f, const char *dir, uint64_t seg_cap, uint64_t budget,
                     const struct proto_hello *h, char *err, size_t err_len)
{
    if (file_setup(f, dir, seg_cap, budget, h, err, err_len))
        return -1;
    int fd = claim_id(f);
    if (fd < 0 || start_segment(f, fd) != 0) {
        snprintf(err, err_len, "cannot create a trace file in %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int files_continue(struct files *f, const char *dir, uint64_t seg_cap, uint64_t budget,
                         const struct proto_hello *h, uint32_t id, uint32_t seq, char *err,
                         size_t err_len)
{
    if (file_setup(f, dir, seg_cap, budget, h, err, err_len))
        return -1;
    f->id = id;
    f->seq = seq;
    f->first_seq = seq;
    int fd = create_segment(f, seq);
    if (fd < 0 || start_segment(f, fd) != 0) {
        snprintf(err, err_len, "cannot create segment %u of series %u in %s: %s", (unsigned)seq,
                 (unsigned)id, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

static void stop_after_failure(struct files *f, const char *what, int err)
{
    snprintf(f->error, sizeof f->error, "%s: %s", what, strerror(err));
    f->stopped = 1;
}

/* Write n records whose bytes were taken (disk_take or disk_take_anyway),
 * and settle them. */
static int write_records(struct files *f, const unsigned char *p, size_t n)
{
    if (write_all(f->fd, p, n * REC) != 0) {
        int err = errno;
        /* Cut a partial write back to the last whole record and give its
         * bytes back.  If the cut fails a torn record stays at the end
         * (readers take whole records only), and stays counted. */
        int cut = ftruncate(f->fd, (off_t)f->seg_bytes) == 0;
        disk_settle(n * REC, cut ? 0 : n * REC);
        lseek(f->fd, (off_t)f->seg_bytes, SEEK_SET);
        errno = err;
        return -1;
    }
    disk_settle(n * REC, n * REC);
    f->seg_bytes += n * REC;
    f->total_bytes += n * REC;
    return 0;
}

static void encode_marker(const struct files *f, unsigned char *r, uint32_t code, uint64_t payload)
{
    memset(r, 0, REC);
    wire_put_le64(r + offsetof(trace_event_t, ts), f->last_ts);
    wire_put_le64(r + offsetof(trace_event_t, func), code);
    wire_put_le64(r + offsetof(trace_event_t, call_site), payload);
    r[offsetof(trace_event_t, kind)] = TRACE_KIND_MARKER;
}

/* The last marker a connection's files get; its room is always reserved. */
static void write_final_marker(struct files *f, uint32_t code, uint64_t payload)
{
    unsigned char r[REC];
    encode_marker(f, r, code, payload);
    disk_take_anyway(REC);
    if (write_records(f, r, 1) != 0 && !f->error[0])
        stop_after_failure(f, "writing a marker failed", errno);
    f->stopped = 1;
}

/* The directory's cap (--max-total-mb), shared by every connection, is reached. */
static enum files_news stop_for_total(struct files *f)
{
    f->total_cap = 1;
    write_final_marker(f, TRACE_MARK_BUDGET, disk_cap);
    return f->error[0] ? FILES_WRITE_FAILED : FILES_TOTAL_REACHED;
}

static enum files_news stop_for_budget(struct files *f)
{
    write_final_marker(f, TRACE_MARK_BUDGET, f->budget);
    return f->error[0] ? FILES_WRITE_FAILED : FILES_BUDGET_REACHED;
}

enum files_news files_stop_disk_low(struct files *f, uint64_t floor_bytes)
{
    if (f->stopped)
        return FILES_OK;
    f->low_space = 1;
    write_final_marker(f, TRACE_MARK_DISK_FLOOR, floor_bytes);
    return f->error[0] ? FILES_WRITE_FAILED : FILES_DISK_LOW;
}

static enum files_news stop_for_failure(struct files *f, const char *what)
{
    int err = errno;
    stop_after_failure(f, what, err);
    write_final_marker(f, TRACE_MARK_WRITE_ERROR, (uint64_t)err);
    return FILES_WRITE_FAILED;
}

/* Start segment seq+1 (the caller closes the old one); -1 with seq unchanged. */
static int rotate(struct files *f)
{
    f->seq++;
    int fd = create_segment(f, f->seq);
    if (fd < 0 || start_segment(f, fd) != 0) {
        f->seq--;
        return -1;
    }
    return 0;
}

/* Start the next segment when this one is full; may stop the writing instead. */
static enum files_news make_room(struct files *f)
{
    if (f->total_bytes + TRACE_FILE_HEADER_SIZE + 2 * REC > f->budget)
        return stop_for_budget(f);
    int old = f->fd;
    if (rotate(f) != 0) {
        f->fd = old;
        if (errno == ENOSPC && disk_inode_floor && inodes_low())
            return files_stop_disk_low(f, disk_floor);
        return stop_for_failure(f, "cannot start the next segment");
    }
    close(old);
    return FILES_OK;
}

/*
 * Append n records, rotating as segments fill.  Ordinary records always
 * leave one record of the budget free, so the budget marker fits.  Device
 * records that cannot be written any more are counted as discarded.
 */
static enum files_news put_records(struct files *f, const unsigned char *p, size_t n,
                                         int device)
{
    enum files_news news = FILES_OK;
    while (n > 0 && !f->stopped) {
        if (f->seg_bytes + REC > f->seg_cap) {
            news = make_room(f);
            continue;
        }
        uint64_t k = n, fit_seg = (f->seg_cap - f->seg_bytes) / REC;
        uint64_t fit_budget = (f->budget - f->total_bytes - REC) / REC;
        if (k > fit_seg)
            k = fit_seg;
        if (k > fit_budget)
            k = fit_budget;
        if (k == 0) {
            news = stop_for_budget(f);
            continue;
        }
        enum files_news disk = disk_take(k * REC);
        if (disk != FILES_OK) {
            news = disk == FILES_TOTAL_REACHED ? stop_for_total(f) : files_stop_disk_low(f, disk_floor);
            continue;
        }
        if (write_records(f, p, (size_t)k) != 0) {
            news = stop_for_failure(f, "writing events failed");
            continue;
        }
        if (device) {
            f->events += k;
            f->last_ts = wire_le64(p + (k - 1) * REC + offsetof(trace_event_t, ts));
        }
        p += k * REC;
        n -= (size_t)k;
    }
    if (device)
        f->discarded += n;
    return news;
}

/* The first summary snapshot record makes this segment, and every later
 * one, say TRACE_FILE_VERSION_SUMMARY, so that an analyzer that predates
 * them refuses the file instead of reporting it empty. */
static void note_summaries(struct files *f, const unsigned char *events, size_t n)
{
    if (f->summary || f->fd < 0)
        return;
    size_t i = 0;
    while (i < n && events[i * REC + offsetof(trace_event_t, kind)] != TRACE_KIND_SUMMARY)
        i++;
    if (i == n)
        return;
    unsigned char v[4];
    wire_put_le32(v, TRACE_FILE_VERSION_SUMMARY);
    if (pwrite(f->fd, v, sizeof v, offsetof(trace_file_header_t, version)) == (ssize_t)sizeof v)
        f->summary = 1;
}

enum files_news files_append(struct files *f, const unsigned char *events, size_t n)
{
    note_summaries(f, events, n);
    return put_records(f, events, n, 1);
}

enum files_news files_mark(struct files *f, uint32_t code, uint64_t payload)
{
    unsigned char r[REC];
    encode_marker(f, r, code, payload);
    return put_records(f, r, 1, 0);
}

enum files_news files_mark_at(struct files *f, uint32_t code, uint64_t payload,
                                          uint64_t ts)
{
    unsigned char r[REC];
    encode_marker(f, r, code, payload);
    wire_put_le64(r + offsetof(trace_event_t, ts), ts);
    return put_records(f, r, 1, 0);
}

uint32_t files_segments(const struct files *f)
{
    return f->seq + 1 - f->first_seq;
}

void files_close(struct files *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}
