/*
 * files.h - the trace files of one streamed connection.
 *
 * callsight serve writes each connection to trace.stream.<id>.<seq>.bin in
 * the output directory: an 80-byte trace_file_header_t carrying the
 * handshake's clock calibration (pid = the connection id), then the events
 * as they arrive.  A segment is rotated to seq+1 before it would pass the
 * segment size, and a connection stops writing before its files together
 * would pass its byte budget, leaving a TRACE_MARK_BUDGET marker (which may
 * take a full segment one record past the segment size, never the budget).
 * A write that fails stops the connection's writing the same way, with a
 * TRACE_MARK_WRITE_ERROR marker when it can still be written.
 *
 * Connection ids never repeat, not even across restarts of serve into the
 * same directory: an id is claimed by creating its seq-0 file with O_EXCL,
 * counting up from the highest id found in the directory at startup and
 * skipping every id a file there had (planted ones too).  This allocator is
 * the only state connections share.  The directory is opened once, without
 * following a symlink, and files are made relative to it, mode 0640.
 */
#ifndef CALLSIGHT_FILES_H
#define CALLSIGHT_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define FILES_ERR_MAX 256

struct files {
    const char *dir;
    uint64_t seg_cap;      /* rotate before a segment passes this many bytes */
    uint64_t budget;       /* all segments together stay within this */
    uint32_t id, seq;
    uint32_t first_seq;    /* this connection's first segment (0 unless it continues a series) */
    int fd;                /* current segment, -1 once closed */
    uint32_t flags;        /* calibration for every segment's header */
    uint64_t load_bias, tick_hz, t0_ticks, t0_ns, hook_ns;
    uint64_t seg_bytes;    /* bytes in the current segment */
    uint64_t total_bytes;  /* bytes in all segments */
    uint64_t events;       /* device records written */
    uint64_t discarded;    /* device records not written: budget reached or a write failed */
    uint64_t last_ts;      /* ts of the last device record written */
    int stopped;           /* budget reached or a write failed: nothing more is written */
    int summary;           /* summary snapshots came: headers say TRACE_FILE_VERSION_SUMMARY */
    int low_space;         /* stopped because the filesystem ran low (bytes or inodes) */
    int total_cap;         /* stopped because the directory reached --max-total-mb */
    char error[FILES_ERR_MAX]; /* why it stopped, when a write failed */
};

/* What a write did that the caller should report (once). */
enum files_news {
    FILES_OK = 0,
    FILES_BUDGET_REACHED, /* this write hit the budget; the rest is discarded */
    FILES_WRITE_FAILED,   /* a write failed; f->error says why; the rest is discarded */
    FILES_DISK_LOW,       /* free space fell below the floor; the rest is discarded */
    FILES_TOTAL_REACHED   /* the directory's cap is reached; the rest is discarded */
};

/*
 * Create dir (and its parents) if needed and find the highest connection id
 * in it.  Call once before any files_open.  0, or -1 with the reason.
 */
int files_init_dir(const char *dir, char *err, size_t err_len);

/*
 * The limits every connection shares, checked before each write: the
 * directory's files together within total_cap bytes (0: none; what was
 * there at startup counts; once reached, the directory is summed again at
 * most every 10 s, so traces moved away make room, the writes still under
 * way added; a connection's headers and its last marker are written even
 * at the cap), the filesystem's free space above floor_bytes,
 * and a new file only while more than inode_floor inodes are free (0: no
 * floor).  A connection that meets one stops writing with a marker
 * (TRACE_MARK_BUDGET carrying total_cap, or TRACE_MARK_DISK_FLOOR).
 */
void files_set_limits(uint64_t total_cap, uint64_t floor_bytes, uint64_t inode_floor);

/* 1 (why said) when a new connection could write nothing now. */
int files_disk_full(char *why, size_t len);

/* Bytes of series files in the directory: found at startup plus written
 * or under way since (or, once the cap was reached, summed again). */
uint64_t files_dir_bytes(void);

/* The out directory as files_init_dir opened it (O_NOFOLLOW), for
 * reading serve's own files back relative to it. */
int files_dir_fd(void);

/*
 * Claim a fresh connection id and write its first segment's header.  The
 * limits are in bytes; budget must leave room for a header and a marker.
 * 0, or -1 with the reason (nothing is left on disk then).
 */
int files_open(struct files *f, const char *dir, uint64_t seg_cap, uint64_t budget,
                     const struct proto_hello *h, char *err, size_t err_len);

/*
 * Continue connection id's series at segment seq (a stream that reconnected;
 * the stream registry guarantees nobody else writes that series).  The new
 * segment is created with O_EXCL all the same.  0, or -1 with the reason.
 */
int files_continue(struct files *f, const char *dir, uint64_t seg_cap, uint64_t budget,
                         const struct proto_hello *h, uint32_t id, uint32_t seq, char *err,
                         size_t err_len);

/* Append n little-endian device records. */
enum files_news files_append(struct files *f, const unsigned char *events, size_t n);

/* Append a serve marker: code, payload, ts of the last record, tid 0. */
enum files_news files_mark(struct files *f, uint32_t code, uint64_t payload);

/* The same with an explicit ts (TRACE_MARK_STREAM_ID carries a start time there). */
enum files_news files_mark_at(struct files *f, uint32_t code, uint64_t payload,
                                          uint64_t ts);

/* Stop writing because the filesystem is low on space, with a TRACE_MARK_DISK_FLOOR marker. */
enum files_news files_stop_disk_low(struct files *f, uint64_t floor_bytes);

/* Segments this connection wrote so far (1 after open). */
uint32_t files_segments(const struct files *f);

void files_close(struct files *f);

#endif
