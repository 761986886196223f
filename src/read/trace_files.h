/*
 * trace_files.h - find trace files and group them into series.
 *
 * A series is what one writer produced, segment after segment:
 *   trace.<pid>.<tid>.<seq>.bin     local file mode: one thread of one process
 *   trace.stream.<id>.<seq>.bin     written by serve: one connection, all of
 *                                   its threads interleaved
 * (a name without .<seq> counts as segment 0).  Directories are scanned, not
 * recursively, for names of those two shapes; a file named on the command
 * line with another name is still taken, as a series of its own ("loose"),
 * whose source is decided by its header.  The same file reached twice (a
 * directory and a path into it) is kept once.  Series come out sorted by
 * kind, id and tid, their segments by seq, so runs are reproducible.
 */
#ifndef CALLSIGHT_TRACE_FILES_H
#define CALLSIGHT_TRACE_FILES_H

#include <stddef.h>
#include <stdint.h>

enum trace_series_kind {
    TRACE_SERIES_LOCAL = 0,  /* id = pid, tid = the thread */
    TRACE_SERIES_STREAM = 1, /* id = connection id, tid unused */
    TRACE_SERIES_LOOSE = 2   /* id = order found; source from the header */
};

struct trace_segment {
    char *path;
    uint32_t seq;
};

struct trace_series {
    enum trace_series_kind kind;
    uint32_t id, tid;
    struct trace_segment *segs; /* sorted by seq */
    size_t nsegs;
};

struct trace_file_entry; /* private */

struct trace_files {
    struct trace_file_entry *files; /* everything added, before grouping */
    size_t nfiles, capfiles;
    struct trace_series *series; /* after trace_files_group */
    size_t nseries;
    uint32_t loose_next;
};

/* A zeroed struct is empty. */
void trace_files_init(struct trace_files *t);
void trace_files_free(struct trace_files *t);
/*
 * Add a directory (its trace files) or one file.  Returns the number of
 * trace files added (0 is fine for the caller to judge), or -1 with a
 * one-line reason in msg (no such file or directory, unreadable, ...).
 */
long trace_files_add(struct trace_files *t, const char *path, char *msg, size_t msglen);
/* Sort what was added into series.  0 ok, -1 out of memory. */
int trace_files_group(struct trace_files *t);

/* Parse a file's base name.  1 and the fields set if it is a trace name. */
int trace_files_parse_name(const char *name, enum trace_series_kind *kind, uint32_t *id,
                           uint32_t *tid, uint32_t *seq);

#endif
