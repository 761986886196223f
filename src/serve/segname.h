/*
 * segname.h - the names of the files callsight serve writes.
 *
 * serve writes each connection as trace.stream.<id>.<seq>.bin (id never 0,
 * seq the segment within the connection's series).  The writer
 * (serve/files.c) makes these names and the resume search
 * (resume.c) reads them back, so both take them from here.
 * trace_files.c, which discovers every kind of trace file for analyze,
 * accepts a looser set of names (see trace_files.h).
 */
#ifndef CALLSIGHT_SEGNAME_H
#define CALLSIGHT_SEGNAME_H

#include <stddef.h>
#include <stdint.h>

/* "trace.stream.<id>.<seq>.bin" -> id (never 0) and seq; 0 if the name is
 * not one of ours. */
int segname_parse(const char *name, uint32_t *id, uint32_t *seq);

/* dir/trace.stream.<id>.<seq>.bin into path[0..len); 0, or -1 with errno
 * ENAMETOOLONG. */
int segname_path(char *path, size_t len, const char *dir, uint32_t id, uint32_t seq);

#endif
