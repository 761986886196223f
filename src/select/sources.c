/*
 * sources.c - find a project's sources (see sources.h).
 */
#include "sources.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sources_kind(const char *name)
{
    static const char *const cxx[] = {".cc", ".cpp", ".cxx", ".C", ".c++"};
    const char *dot = strrchr(name, '.');
    if (!dot || strchr(dot, '/'))
        return -1;
    if (!strcmp(dot, ".c"))
        return 0;
    for (size_t i = 0; i < sizeof cxx / sizeof cxx[0]; i++)
        if (!strcmp(dot, cxx[i]))
            return 1;
    return -1;
}

static int add(struct sources *l, const char *path)
{
    if (l->n == SOURCES_MAX_FILES)
        return E2BIG;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        return ENOMEM;
    l->n++;
    return 0;
}

/* 0, or the errno of the first failure (E2BIG, ELOOP past the bounds). */
static int walk(struct sources *l, const char *dir, int depth)
{
    if (depth > SOURCES_MAX_DEPTH)
        return ELOOP;
    DIR *d = opendir(dir);
    if (!d)
        return errno;
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(d));) {
        const char *n = e->d_name;
        if (n[0] == '.' || (depth == 0 && (!strcmp(n, "callsight") || !strcmp(n, "callsight-obj"))))
            continue;
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, n) >= (int)sizeof path || lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            err = walk(l, path, depth + 1);
        else if (S_ISREG(st.st_mode) && sources_kind(n) >= 0)
            err = add(l, path);
    }
    closedir(d);
    return err;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sources_find(struct sources *l, const char *dir, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    int e = walk(l, dir, 0);
    if (e) {
        snprintf(err, errlen, "%s: %s", dir,
                 e == E2BIG ? "more than 100000 sources" : e == ELOOP ? "folders nested too deep" : strerror(e));
        return -1;
    }
    if (l->n)
        qsort(l->v, l->n, sizeof *l->v, cmp_str);
    return 0;
}

void sources_free(struct sources *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

int sources_find_here(struct sources *l, char *err, size_t errlen)
{
    if (sources_find(l, ".", err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < l->n; i++) /* "./x.c" -> "x.c", as a build names it */
        memmove(l->v[i], l->v[i] + 2, strlen(l->v[i] + 2) + 1);
    return 0;
}

int sources_make_parents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    return 0;
}
