/*
 * stream_series.c - a resumable stream's series on disk (see stream_series.h).
 *
 * Only the connection thread of a reconnecting stream that the registry
 * does not know calls this, holding that stream's registry slot, so no
 * other connection writes the files it counts.
 */
#include "stream_series.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream_name.h"
#include "trace.h"

#define REC TRACE_EVENT_SIZE
#define ID_PROBE 4      /* records at a seq-0 segment's head that may name the stream */
#define BUF_RECS 2048   /* the counting pass reads 64 KiB at a time */
#define HEADER_MAX 4096 /* a longer header_size is not one serve wrote */

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Open a segment positioned after its header; -1 if it is missing or its header is not whole. */
static int open_segment(const char *dir, uint32_t id, uint32_t seq)
{
    char path[PATH_MAX];
    unsigned char h[TRACE_FILE_HEADER_SIZE];
    if (stream_name_path(path, sizeof path, dir, id, seq))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint64_t hsize = 0;
    if (read(fd, h, sizeof h) == (ssize_t)sizeof h && !memcmp(h, TRACE_FILE_MAGIC, sizeof TRACE_FILE_MAGIC))
        hsize = get_le(h + offsetof(trace_file_header_t, header_size), 4);
    if (hsize < TRACE_FILE_HEADER_SIZE || hsize > HEADER_MAX || lseek(fd, (off_t)hsize, SEEK_SET) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int serve_marker(const unsigned char *r, uint64_t *code)
{
    *code = get_le(r + offsetof(trace_event_t, func), 8);
    return r[offsetof(trace_event_t, kind)] == TRACE_KIND_MARKER &&
           get_le(r + offsetof(trace_event_t, tid), 4) == 0;
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
        return 1;
    default:
        return 0;
    }
}

/* Does series id's seq-0 segment begin by naming stream (sid, start_ns)? */
static int names_stream(const char *dir, uint32_t id, uint64_t sid, uint64_t start_ns)
{
    unsigned char r[ID_PROBE * REC];
    int fd = open_segment(dir, id, 0);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, r, sizeof r);
    close(fd);
    for (ssize_t i = 0; n > 0 && i + (ssize_t)REC <= n; i += REC) {
        uint64_t code;
        if (serve_marker(r + i, &code) && code == TRACE_MARK_STREAM_ID &&
            get_le(r + i + offsetof(trace_event_t, call_site), 8) == sid &&
            get_le(r + i + offsetof(trace_event_t, ts), 8) == start_ns)
            return 1;
    }
    return 0;
}

/* Add one segment's device records to out; a torn last record is not one. -1 on a read error. */
static int count_segment(const char *dir, uint32_t id, uint32_t seq, unsigned char *buf,
                         struct stream_found *out)
{
    int fd = open_segment(dir, id, seq), stop = 0;
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

/* Pass 1: the series whose seq-0 segment names the stream. */
static int find_ids(DIR *d, const char *dir, uint64_t sid, uint64_t start_ns, uint32_t *ids)
{
    int n = 0;
    uint32_t id, seq;
    for (struct dirent *e; n < STREAM_SERIES_MAX && (e = readdir(d));)
        if (stream_name_parse(e->d_name, &id, &seq) && seq == 0 && names_stream(dir, id, sid, start_ns))
            ids[n++] = id;
    return n;
}

/* Pass 2: count those series' records and find where the newest continues. */
static int count_ids(DIR *d, const char *dir, const uint32_t *ids, int n, struct stream_found *out)
{
    unsigned char *buf = malloc(BUF_RECS * REC);
    uint32_t id, seq;
    int rc = buf ? 0 : -1;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!stream_name_parse(e->d_name, &id, &seq) || !listed(ids, n, id))
            continue;
        rc = count_segment(dir, id, seq, buf, out);
        if (id == out->file_id && seq >= out->next_seq)
            out->next_seq = seq + 1;
    }
    free(buf);
    return rc;
}

int stream_series_find(const char *dir, uint64_t id, uint64_t start_ns, struct stream_found *out)
{
    uint32_t ids[STREAM_SERIES_MAX];
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = find_ids(d, dir, id, start_ns, ids);
    for (int i = 0; i < n; i++)
        if (ids[i] > out->file_id)
            out->file_id = ids[i];
    int rc = 0;
    if (n > 0) {
        out->found = out->exact = 1;
        rewinddir(d);
        rc = count_ids(d, dir, ids, n, out);
    }
    closedir(d);
    return rc;
}
