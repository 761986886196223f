/*
 * flatten.c - build-time tool: a unity file and what it includes, made one
 * file.
 *
 *   flatten OUT UNITY [-I DIR]... [--keep NAME]...
 *
 * Writes UNITY to OUT with each line `#include "x"` replaced by x's own
 * lines, recursively: x is looked for beside the file that includes it,
 * then in each -I DIR in order.  Each file goes in once; a later include
 * of a file already in is dropped.  An include of a NAME given with --keep
 * (trace.h: the public header users include in their own code) stays an
 * include line (its first one only), as do all `#include <...>`.  OUT opens with a banner that
 * names the files it was made from, and a one-line comment marks where
 * each inlined file begins.
 *
 * The runtime (runtime/trace.c, a list of its parts) and trace_stream
 * (stream/trace_stream.c) are kept as files by concern and shipped as the
 * one file each that `callsight init` installs and users compile with one
 * cc line; the Makefile runs this to make build/dist/trace.c and
 * build/dist/trace_stream.c.  Only the text is joined: #if around an
 * include is not evaluated, so the parts include their files
 * unconditionally.
 *
 * Bounded: includes nested at most FL_DEPTH deep, FL_FILES files, lines of
 * at most FL_LINE bytes, FL_OUT bytes in all.  A missing file, a cycle, or
 * a bound passed is one line on stderr and exit 1, and OUT is not written
 * (it is written to OUT.tmp and renamed).  Usage: exit 2.  C11 and stdio.
 */
#define _POSIX_C_SOURCE 200809L /* stat(), dev_t, ino_t */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FL_DEPTH 16          /* include nesting */
#define FL_FILES 256         /* files inlined */
#define FL_LINE 4096         /* bytes of one line, newline included */
#define FL_OUT (64L << 20)   /* bytes written in all */
#define FL_PATH 1024         /* bytes of a path */
#define FL_DIRS 32           /* -I dirs */
#define FL_KEEP 32           /* --keep names */

struct fl_file {
    char path[FL_PATH];      /* as found: the includer's dir or an -I dir, then the name */
    dev_t dev;
    ino_t ino;
    int open;                /* on the include stack now: another include of it is a cycle */
};

struct fl {
    const char *dirs[FL_DIRS];
    int ndirs;
    const char *keep[FL_KEEP];
    int kept_out[FL_KEEP]; /* its include line written already */
    int nkeep;
    struct fl_file files[FL_FILES];
    int nfiles;
    char *out;               /* the flattened text, before the banner */
    size_t len, cap;
};

/* The one line an error gets; -1, which every caller passes up unsaid. */
__attribute__((format(printf, 1, 2))) static int fl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("flatten: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return -1;
}

static int fl_put(struct fl *f, const char *s, size_t n)
{
    if (n > (size_t)FL_OUT - f->len)
        return fl_fail("the output would pass %ld bytes", FL_OUT);
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 65536;
        while (cap < f->len + n)
            cap *= 2;
        char *p = realloc(f->out, cap);
        if (!p)
            return fl_fail("out of memory");
        f->out = p;
        f->cap = cap;
    }
    memcpy(f->out + f->len, s, n);
    f->len += n;
    return 0;
}

static int fl_puts(struct fl *f, const char *s)
{
    return fl_put(f, s, strlen(s));
}

/* The name in a line `#include "name"` (spaces allowed around '#', a
 * comment after it): copied into name; 0 if the line is no such include. */
static int fl_include_name(const char *line, char *name, size_t cap)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "include", 7) != 0)
        return 0;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '"')
        return 0;
    const char *end = strchr(p, '"');
    if (!end || end == p || (size_t)(end - p) >= cap)
        return 0;
    memcpy(name, p, (size_t)(end - p));
    name[end - p] = '\0';
    return 1;
}

/* The --keep index of name, or -1. */
static int fl_kept(const struct fl *f, const char *name)
{
    for (int i = 0; i < f->nkeep; i++)
        if (strcmp(f->keep[i], name) == 0)
            return i;
    return -1;
}

/* dir/name into out; the name alone when dir is "". */
static int fl_join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, FL_PATH, "%s%s%s", dir, *dir ? "/" : "", name);
    return n >= 0 && n < FL_PATH;
}

/* Where `name`, included by `from`, is: beside from, then in the -I dirs.
 * 0 found (path and st filled), -1 not. */
static int fl_find(const struct fl *f, const char *from, const char *name, char *path, struct stat *st)
{
    char dir[FL_PATH];
    const char *slash = strrchr(from, '/');
    size_t n = slash ? (size_t)(slash - from) : 0;
    memcpy(dir, from, n);
    dir[n] = '\0';
    if (name[0] == '/') {
        if (!fl_join(path, "", name))
            return -1;
        return stat(path, st) == 0 && S_ISREG(st->st_mode) ? 0 : -1;
    }
    for (int i = -1; i < f->ndirs; i++) {
        if (!fl_join(path, i < 0 ? dir : f->dirs[i], name))
            continue;
        if (stat(path, st) == 0 && S_ISREG(st->st_mode))
            return 0;
    }
    return -1;
}

static struct fl_file *fl_known(struct fl *f, const struct stat *st)
{
    for (int i = 0; i < f->nfiles; i++)
        if (f->files[i].dev == st->st_dev && f->files[i].ino == st->st_ino)
            return &f->files[i];
    return NULL;
}

static int fl_file(struct fl *f, const char *path, const struct stat *st, int depth);

/* One line of `from` (line number no): copied, or the file it includes
 * inlined, or dropped when that file is in already. */
static int fl_line(struct fl *f, const char *from, long no, const char *line, int depth)
{
    char name[FL_PATH], path[FL_PATH];
    struct stat st;
    if (!fl_include_name(line, name, sizeof name))
        return fl_puts(f, line);
    int k = fl_kept(f, name);
    if (k >= 0) { /* a kept header's include line once, where it first comes */
        if (f->kept_out[k])
            return 0;
        f->kept_out[k] = 1;
        return fl_puts(f, line);
    }
    if (fl_find(f, from, name, path, &st) != 0)
        return fl_fail("%s:%ld: \"%s\": no such file beside it or in the -I dirs", from, no, name);
    struct fl_file *known = fl_known(f, &st);
    if (known && known->open)
        return fl_fail("%s:%ld: \"%s\": a cycle (%s is open, and included again)", from, no, name,
                       known->path);
    if (known)
        return 0; /* in already */
    if (depth + 1 > FL_DEPTH)
        return fl_fail("%s:%ld: \"%s\": includes nested more than %d deep", from, no, name, FL_DEPTH);
    return fl_file(f, path, &st, depth + 1);
}

static int fl_lines(struct fl *f, FILE *in, const char *path, int depth)
{
    char line[FL_LINE + 1];
    long no = 0;
    while (fgets(line, sizeof line, in)) {
        size_t n = strlen(line);
        no++;
        if (n == FL_LINE && line[n - 1] != '\n')
            return fl_fail("%s:%ld: a line longer than %d bytes", path, no, FL_LINE - 1);
        if (n > 0 && line[n - 1] != '\n') { /* the last line, unterminated */
            line[n++] = '\n';
            line[n] = '\0';
        }
        if (fl_line(f, path, no, line, depth) != 0)
            return -1;
    }
    if (ferror(in))
        return fl_fail("%s: read error", path);
    return 0;
}

/* Inlines one file: its begin marker (not for the unity file itself, which
 * the banner names), then its lines. */
static int fl_file(struct fl *f, const char *path, const struct stat *st, int depth)
{
    if (f->nfiles == FL_FILES)
        return fl_fail("%s: more than %d files", path, FL_FILES);
    struct fl_file *me = &f->files[f->nfiles++];
    snprintf(me->path, sizeof me->path, "%s", path);
    me->dev = st->st_dev;
    me->ino = st->st_ino;
    me->open = 1;
    FILE *in = fopen(path, "r");
    if (!in)
        return fl_fail("%s: %s", path, strerror(errno));
    int rc = 0;
    if (depth > 0) {
        rc = fl_puts(f, "/* ---- ");
        rc = rc ? rc : fl_puts(f, path);
        rc = rc ? rc : fl_puts(f, " (inlined by tools/flatten.c) ---- */\n");
    }
    rc = rc ? rc : fl_lines(f, in, path, depth);
    fclose(in);
    me->open = 0;
    return rc;
}

/* The banner: what OUT was made from, and that it is not the file to edit. */
static void fl_banner(FILE *out, const struct fl *f, const char *out_path)
{
    const char *base = strrchr(out_path, '/');
    fprintf(out, "/*\n * %s - generated by tools/flatten.c from these files; edit those, not this:\n",
            base ? base + 1 : out_path);
    for (int i = 0; i < f->nfiles; i++)
        fprintf(out, " *   %s\n", f->files[i].path);
    fprintf(out, " * It needs only ");
    for (int i = 0; i < f->nkeep; i++)
        fprintf(out, "%s%s", i ? (i + 1 == f->nkeep ? " and " : ", ") : "", f->keep[i]);
    fprintf(out, "%s beside it.\n */\n", f->nkeep ? "" : "its system's headers");
}

static int fl_write(const struct fl *f, const char *out_path)
{
    char tmp[FL_PATH + 8];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= (int)sizeof tmp)
        return fl_fail("%s: path too long", out_path);
    FILE *out = fopen(tmp, "w");
    if (!out)
        return fl_fail("%s: %s", tmp, strerror(errno));
    fl_banner(out, f, out_path);
    fwrite(f->out, 1, f->len, out);
    if (ferror(out) | (fclose(out) != 0)) {
        remove(tmp);
        return fl_fail("%s: write error", tmp);
    }
    if (rename(tmp, out_path) != 0) {
        remove(tmp);
        return fl_fail("%s: %s", out_path, strerror(errno));
    }
    return 0;
}

static int fl_usage(void)
{
    fprintf(stderr, "usage: flatten OUT UNITY [-I DIR]... [--keep NAME]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    static struct fl f;
    if (argc < 3)
        return fl_usage();
    for (int i = 3; i < argc; i++) {
        int dir = strcmp(argv[i], "-I") == 0, keep = strcmp(argv[i], "--keep") == 0;
        if ((!dir && !keep) || i + 1 == argc)
            return fl_usage();
        if ((dir && f.ndirs == FL_DIRS) || (keep && f.nkeep == FL_KEEP)) {
            fl_fail("more than %d %s", dir ? FL_DIRS : FL_KEEP, dir ? "-I dirs" : "--keep names");
            return 2;
        }
        if (dir)
            f.dirs[f.ndirs++] = argv[++i];
        else
            f.keep[f.nkeep++] = argv[++i];
    }
    struct stat st;
    if (strlen(argv[2]) >= FL_PATH || strlen(argv[1]) >= FL_PATH) {
        fl_fail("%s: path too long", strlen(argv[2]) >= FL_PATH ? argv[2] : argv[1]);
        return 1;
    }
    if (stat(argv[2], &st) != 0) {
        fl_fail("%s: %s", argv[2], strerror(errno));
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        fl_fail("%s: not a regular file", argv[2]);
        return 1;
    }
    int rc = fl_file(&f, argv[2], &st, 0);
    if (rc == 0)
        rc = fl_write(&f, argv[1]);
    free(f.out);
    return rc == 0 ? 0 : 1;
}
