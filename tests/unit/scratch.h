/*
 * scratch.h - a unit test's scratch directory removed with everything in
 * it, by nftw rather than a `rm -rf` command line: no source in the tree
 * hands a formatted command to a shell (tests/select/673).
 */
#ifndef CALLSIGHT_TEST_SCRATCH_H
#define CALLSIGHT_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>

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

#endif
