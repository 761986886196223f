/*
 * fileopen.h - opening a file that untrusted data names, as what it claims
 * to be.
 *
 * A trace names files on the host (a module's path, a build-id's debug
 * file): a FIFO there would block the reader forever, a device node would
 * be read or rewound, and a path with `..` or a symlink would leave the
 * --sysroot it was to be looked for in.  These open without blocking,
 * insist on a regular file under a size cap, and, inside a root, resolve
 * every component (symlinks included) within that root.
 */
#ifndef CALLSIGHT_FILEOPEN_H
#define CALLSIGHT_FILEOPEN_H

#include <stddef.h>
#include <stdint.h>

/* path opened read-only, close-on-exec, never blocking on open, and only
 * when it is a regular file of at most max_bytes.  Its fd (blocking reads),
 * or -1 with msg set ("PATH: not a regular file", "PATH: larger than N
 * MB", or strerror). */
int fileopen_regular(const char *path, uint64_t max_bytes, char *msg, size_t msglen);

/* The whole of path, opened as fileopen_regular does, in *buf (malloc'd,
 * with a NUL after its *len bytes: text parsers stop there).  0, or -1 with
 * msg set as above, or "PATH: changed while being read". */
int fileopen_read(const char *path, uint64_t max_bytes, char **buf, size_t *len, char *msg, size_t msglen);

/* The same for path taken inside root, as a chroot would see it: `..`
 * stops at root, and an absolute symlink means root's own.  On success the
 * file's real path (inside root) is written to real (reallen bytes). */
int fileopen_in_root(const char *root, const char *path, uint64_t max_bytes, char *real, size_t reallen,
                     char *msg, size_t msglen);

#endif
