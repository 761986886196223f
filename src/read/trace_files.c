/*
 * trace_files.c - discover trace files and group them into series (see
 * trace_files.h).  Only names and stat() data are looked at here; headers
 * are the reader's business.
 */
#include "trace_files.h"
#include "lib/vec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct trace_file_entry {
    char *path;
    enum trace_series_kind kind;
    uint32_t id, tid, seq;
    dev_t dev;
    ino_t ino;
};

void trace_files_init(struct trace_files *t)
{
    memset(t, 0, sizeof *t);
}

void trace_files_free(struct trace_files *t)
{
    for (size_t i = 0; i < t->nfiles; i++)
        free(t->files[i].path);
    free(t->files);
    for (size_t i = 0; i < t->nseries; i++)
        free(t->series[i].segs);
    free(t->series);
    trace_files_init(t);
}

/* A decimal u32 ending at a '.'; advances *p past the dot. */
static int parse_u32_dot(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > UINT32_MAX)
            return 0;
        s++;
    }
    if (*s != '.')
        return 0;
    *out = (uint32_t)v;
    *p = s + 1;
    return 1;
}

/* Up to `max` dot-terminated numbers, then exactly "bin"; count returned. */
static int parse_numbers(const char *s, uint32_t *nums, int max)
{
    int n = 0;
    while (n < max && parse_u32_dot(&s, &nums[n]))
        n++;
    return strcmp(s, "bin") == 0 ? n : -1;
}

int trace_files_parse_name(const char *name, enum trace_series_kind *kind, uint32_t *id,
                           uint32_t *tid, uint32_t *seq)
{
    uint32_t nums[3];
    int n;
    if (strncmp(name, "trace.stream.", 13) == 0) {
        n = parse_numbers(name + 13, nums, 2);
        if (n < 1)
            return 0;
        *kind = TRACE_SERIES_STREAM;
        *id = nums[0];
        *tid = 0;
        *seq = n == 2 ? nums[1] : 0;
        return 1;
    }
    if (strncmp(name, "trace.", 6) != 0)
        return 0;
    n = parse_numbers(name + 6, nums, 3);
    if (n < 2)
        return 0;
    *kind = TRACE_SERIES_LOCAL;
    *id = nums[0];
    *tid = nums[1];
    *seq = n == 3 ? nums[2] : 0;
    return 1;
}

static int push_file(struct trace_files *t, const char *path, const struct stat *st,
                     enum trace_series_kind kind, uint32_t id, uint32_t tid, uint32_t seq)
{
    if (vec_grow(&t->files, &t->capfiles, t->nfiles, sizeof *t->files, 64) < 0)
        return -1;
    char *copy = strdup(path);
    if (!copy)
        return -1;
    if (kind == TRACE_SERIES_LOOSE)
        id = t->loose_next++;
    t->files[t->nfiles++] = (struct trace_file_entry){copy, kind, id, tid, seq, st->st_dev, st->st_ino};
    return 1;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static long add_dir(struct trace_files *t, const char *dir, char *msg, size_t msglen)
{
    DIR *d = opendir(dir);
    long added = 0;
    if (!d) {
        snprintf(msg, msglen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        enum trace_series_kind kind;
        uint32_t id, tid, seq;
        struct stat st;
        if (!trace_files_parse_name(de->d_name, &kind, &id, &tid, &seq))
            continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *path = malloc(len);
        if (!path)
            goto oom;
        snprintf(path, len, "%s/%s", dir, de->d_name);
        int r = 0;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            r = push_file(t, path, &st, kind, id, tid, seq);
        free(path);
        if (r < 0)
            goto oom;
        added += r;
    }
    closedir(d);
    return added;
oom:
    closedir(d);
    snprintf(msg, msglen, "out of memory");
    return -1;
}

long trace_files_add(struct trace_files *t, const char *path, char *msg, size_t msglen)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return add_dir(t, path, msg, msglen);
    if (!S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "%s: not a regular file or directory", path);
        return -1;
    }
    enum trace_series_kind kind = TRACE_SERIES_LOOSE;
    uint32_t id = 0, tid = 0, seq = 0;
    trace_files_parse_name(base_name(path), &kind, &id, &tid, &seq);
    int r = push_file(t, path, &st, kind, id, tid, seq);
    if (r < 0)
        snprintf(msg, msglen, "out of memory");
    return r;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_entry(const void *pa, const void *pb)
{
    const struct trace_file_entry *a = pa, *b = pb;
    int c = cmp_u32((uint32_t)a->kind, (uint32_t)b->kind);
    if (!c)
        c = cmp_u32(a->id, b->id);
    if (!c)
        c = cmp_u32(a->tid, b->tid);
    if (!c)
        c = cmp_u32(a->seq, b->seq);
    if (!c)
        c = strcmp(a->path, b->path);
    return c;
}

static int same_series(const struct trace_file_entry *a, const struct trace_file_entry *b)
{
    return a->kind == b->kind && a->id == b->id && a->tid == b->tid;
}

static int cmp_inode(const void *pa, const void *pb)
{
    const struct trace_file_entry *a = pa, *b = pb;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* The same file reached twice (a directory and a path into it) counts once. */
static void drop_duplicates(struct trace_files *t)
{
    size_t kept = 0;
    if (!t->nfiles)
        return; /* files is NULL then, which qsort may not be given */
    qsort(t->files, t->nfiles, sizeof *t->files, cmp_inode);
    for (size_t i = 0; i < t->nfiles; i++) {
        if (kept && t->files[kept - 1].dev == t->files[i].dev && t->files[kept - 1].ino == t->files[i].ino)
            free(t->files[i].path);
        else
            t->files[kept++] = t->files[i];
    }
    t->nfiles = kept;
}

int trace_files_group(struct trace_files *t)
{
    drop_duplicates(t);
    if (t->nfiles)
        qsort(t->files, t->nfiles, sizeof *t->files, cmp_entry);
    size_t n = 0;
    for (size_t i = 0; i < t->nfiles; i++)
        n += i == 0 || !same_series(&t->files[i - 1], &t->files[i]);
    t->series = calloc(n ? n : 1, sizeof *t->series);
    if (!t->series)
        return -1;
    for (size_t i = 0, end; i < t->nfiles; i = end) {
        for (end = i + 1; end < t->nfiles && same_series(&t->files[i], &t->files[end]); end++)
            ;
        struct trace_series *s = &t->series[t->nseries++];
        s->kind = t->files[i].kind;
        s->id = t->files[i].id;
        s->tid = t->files[i].tid;
        s->segs = malloc((end - i) * sizeof *s->segs);
        if (!s->segs)
            return -1;
        for (size_t j = i; j < end; j++)
            s->segs[s->nsegs++] = (struct trace_segment){t->files[j].path, t->files[j].seq};
    }
    return 0;
}
