/*
 * modfile.h - the file to name a shared object's functions from, found by
 * its recorded path and build-id.
 *
 * A module list (trace.h, "loaded modules") gives each shared object the
 * path it was loaded from on the device and its GNU build-id.  The file
 * with that build-id is looked for, in order: at the recorded path itself
 * (analyze runs where the program ran); under --sysroot (the device's root
 * file system copied to this host); in each --debug-dir, in the
 * .build-id/ab/cdef....debug layout GDB and perf use; and from the
 * debuginfod servers in DEBUGINFOD_URLS, through elfutils' libdebuginfod
 * (nothing is contacted when it is unset or empty).  Every file found is
 * checked: its build-id must be the recorded one.  (--exe files with the
 * build-id are the caller's, before all this.)
 */
#ifndef CALLSIGHT_MODFILE_H
#define CALLSIGHT_MODFILE_H

#include <stddef.h>

#define MODFILE_MAX_DEBUG_DIRS 16

struct modfile_where {
    const char *sysroot;                              /* NULL: none */
    const char *debug_dirs[MODFILE_MAX_DEBUG_DIRS];   /* --debug-dir, in the order given */
    size_t ndebug_dirs;
};

struct modfile {
    const struct modfile_where *where;
    void *debuginfod;   /* the client, begun on first need (a debuginfod_client) */
    int debuginfod_off; /* DEBUGINFOD_URLS unset or empty, or no client */
};

void modfile_init(struct modfile *m, const struct modfile_where *where);
void modfile_free(struct modfile *m);
/*
 * The file for the module loaded from path (may be "") with build-id
 * id[0..len) (len 0: none recorded; then the recorded path and --sysroot
 * are taken on trust).  0 and a malloc'ed path in *out; -1 with a one-line
 * reason in why (where it looked and what it found), or -2 out of memory.
 */
int modfile_find(struct modfile *m, const char *path, const unsigned char *id, size_t len, char **out,
                 char *why, size_t whylen);

#endif
