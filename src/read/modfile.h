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
 *
 * A debuginfod request is a round trip to a server, perhaps across the
 * world, where every other place is a file read here.  So the caller first
 * hands every module it will ask for to modfile_prefetch, which asks the
 * servers for those the files here do not have, MODFILE_DEBUGINFOD_THREADS
 * at a time (each thread with its own client: one is not to be shared),
 * all within one deadline; modfile_find then takes their answers.  What
 * the deadline cut off is said, per module and to the caller.
 */
#ifndef CALLSIGHT_MODFILE_H
#define CALLSIGHT_MODFILE_H

#include <stddef.h>
#include <stdint.h>

#define MODFILE_MAX_DEBUG_DIRS 16
#define MODFILE_DEBUGINFOD_THREADS 8           /* debuginfod requests at once, at most */
#define MODFILE_DEBUGINFOD_DEADLINE_MS 30000u  /* every lookup answered within this of the first */

struct modfile_where {
    const char *sysroot;                              /* NULL: none */
    const char *debug_dirs[MODFILE_MAX_DEBUG_DIRS];   /* --debug-dir, in the order given */
    size_t ndebug_dirs;
    uint64_t debuginfod_deadline_ms; /* --debuginfod-deadline (0: MODFILE_DEBUGINFOD_DEADLINE_MS) */
};

struct modfile_answer; /* one build-id's answer from debuginfod (modfile.c) */
struct modfile_asker;  /* a debuginfod client and the deadline it keeps (modfile.c) */

struct modfile {
    const struct modfile_where *where;
    struct modfile_asker *one; /* the client for a lookup not made up front, begun on first need */
    int debuginfod_off; /* DEBUGINFOD_URLS unset or empty, or no client */
    int64_t deadline_ns; /* CLOCK_MONOTONIC: debuginfod's answers are waited for until then (0: not yet set) */
    struct modfile_answer *answers; /* modfile_prefetch's, by build-id */
    size_t nanswers;
};

/* A module modfile_find will be asked for, as it will be asked. */
struct modfile_want {
    const char *path;
    const unsigned char *id;
    size_t len;
    int late; /* set: its file was left to debuginfod, which gave no answer by the deadline */
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
/*
 * Before modfile_find: the modules want[0..n) that neither their path,
 * --sysroot nor a --debug-dir has are asked of debuginfod (when
 * DEBUGINFOD_URLS is set), each build-id once, MODFILE_DEBUGINFOD_THREADS
 * requests at a time, until the deadline (modfile_deadline_ms after the
 * first; a request under way then is stopped, within about a second); the
 * answers are kept for modfile_find, and want[i].late says which were cut
 * off.  The answers do not depend on which thread asked first.  0, or -2
 * out of memory (nothing kept: modfile_find asks one at a time).
 */
int modfile_prefetch(struct modfile *m, struct modfile_want *want, size_t n);
/* The deadline for all of debuginfod's answers, in ms. */
uint64_t modfile_deadline_ms(const struct modfile *m);

#endif
