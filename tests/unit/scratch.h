/*
 * scratch.h - a unit test's scratch directory removed with everything in
 * it, by nftw rather than a `rm -rf` command line: no source in the tree
 * hands a formatted command to a shell (tests/select/673).
 */
#ifndef CALLSIGHT_TEST_SCRATCH_H
#define CALLSIGHT_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static int scratch_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* dir and all below it, symlinks not followed; 0 or -1. */
static inline int scratch_remove(const char *dir)
{
    return nftw(dir, scratch_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new directory NAME-XXXXXX under $TMPDIR (/tmp without it) in buf:
 * buf, or NULL.  Under TMPDIR, so that a runner giving each run its own
 * (make mutate) takes away what a test that crashed left behind. */
static inline char *scratch_make(char *buf, size_t len, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(buf, len, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    return n > 0 && (size_t)n < len ? mkdtemp(buf) : NULL;
}

#endif
