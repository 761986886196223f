/*
 * sources.h - a project's C and C++ sources, found by walking its folder,
 * for `callsight scan` and `callsight select`.
 *
 * Not into hidden folders, nor callsight's own callsight/ and
 * callsight-obj/ at the top.  Bounded: SOURCES_MAX_FILES sources,
 * SOURCES_MAX_DEPTH folders deep; beyond either the walk fails rather than
 * report a part as the whole.
 */
#ifndef CALLSIGHT_SOURCES_H
#define CALLSIGHT_SOURCES_H

#include <stddef.h>

#define SOURCES_MAX_FILES 100000
#define SOURCES_MAX_DEPTH 64

struct sources {
    char **v;      /* paths as dir/..., sorted */
    size_t n, cap;
};

/* Walk dir.  0 ok; -1 with err set (errno's words, or the bound passed). */
int sources_find(struct sources *l, const char *dir, char *err, size_t errlen);
void sources_free(struct sources *l);
/* The same for the current directory, named as a build there names them
 * ("x.c", not "./x.c"). */
int sources_find_here(struct sources *l, char *err, size_t errlen);
/* mkdir -p of path's folder (path is changed and restored).  0, or -1 with
 * errno set. */
int sources_make_parents(char *path);

/* By extension: 1 a C++ source, 0 a C source, -1 neither. */
int sources_kind(const char *name);

#endif
