/*
 * scan.c - `callsight scan [DIR]`: which of a project's sources trace.config
 * instruments, which not, and why, before anything is built.
 *
 * Walks DIR (not into hidden folders, nor callsight's own callsight/ and
 * callsight-obj/), takes the C and C++ sources, sorts them and asks
 * choose.h about each.  Bounded: SCAN_MAX_FILES sources, SCAN_MAX_DEPTH
 * folders deep; beyond either it stops with an error rather than report a
 * part as the whole.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "select/choose.h"

#define PROG "callsight scan"
#define SCAN_MAX_FILES 100000
#define SCAN_MAX_DEPTH 64

struct list {
    char **v;
    size_t n, cap;
    int err; /* errno of the first failure, or E2BIG / ELOOP past the bounds */
};

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight scan [DIR] [--config FILE]\n"
"\n"
"List DIR's C and C++ sources (default: here; not in hidden folders nor in\n"
"callsight/ and callsight-obj/) and say for each whether trace.config has\n"
"it instrumented, and which line decided.\n"
"\n"
"options:\n"
"  --config FILE   the selection (default: DIR/trace.config; when it does\n"
"                  not exist, every source is selected)\n"
"  -h, --help      print this help\n"
"\n"
"output: a summary line, then one line per source:\n"
"  scan: N sources, I instrumented, O not (CONFIG)\n"
"    on   src/net/crc.c    include src/ (line 3)\n"
"    off  src/x_test.c     exclude *_test.c (line 4)\n"
"\n"
"Exit status: 0 done, 1 error, 2 usage error.\n");
}

static int is_source(const char *name)
{
    static const char *const ext[] = {".c", ".cc", ".cpp", ".cxx", ".C", ".c++"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof ext / sizeof ext[0]; i++)
        if (!strcmp(dot, ext[i]))
            return 1;
    return 0;
}

static void add(struct list *l, const char *path)
{
    if (l->n == SCAN_MAX_FILES) {
        l->err = E2BIG;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->err = ENOMEM;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path)))
        l->err = ENOMEM;
    else
        l->n++;
}

static void walk(struct list *l, const char *dir, int depth)
{
    if (depth > SCAN_MAX_DEPTH) {
        l->err = ELOOP;
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        l->err = errno;
        return;
    }
    for (struct dirent *e; !l->err && (e = readdir(d));) {
        const char *n = e->d_name;
        if (n[0] == '.' || (depth == 0 && (!strcmp(n, "callsight") || !strcmp(n, "callsight-obj"))))
            continue;
        char path[CHOOSE_PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, n) >= (int)sizeof path || lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            walk(l, path, depth + 1);
        else if (S_ISREG(st.st_mode) && is_source(n))
            add(l, path);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int report(struct list *l, const char *dir, const char *config)
{
    struct choose ch;
    char err[CONFIG_ERR_MAX + 64], why[CONFIG_MAX_LINE + 64];
    if (choose_init(&ch, config, 0, err, sizeof err) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    qsort(l->v, l->n, sizeof *l->v, cmp_str);
    /* Two passes, the count first: a decision costs a few matches, and
     * keeping none saves holding one per source. */
    size_t count = 0;
    const struct config_rule *rule;
    for (size_t i = 0; i < l->n; i++)
        count += (size_t)choose_source(&ch, l->v[i], &rule);
    printf("scan: %zu sources, %zu instrumented, %zu not (%s)\n", l->n, count, l->n - count,
           ch.have_file ? config : "no trace.config: every source");
    size_t skip = strlen(dir) + 1;
    int width = 0;
    for (size_t i = 0; i < l->n; i++)
        if ((int)strlen(l->v[i] + skip) > width)
            width = (int)strlen(l->v[i] + skip);
    width = width < 60 ? width : 60;
    for (size_t i = 0; i < l->n; i++) {
        int on = choose_source(&ch, l->v[i], &rule);
        choose_why(&ch, on, rule, why, sizeof why);
        printf("  %-4s %-*s  %s\n", on ? "on" : "off", width, l->v[i] + skip, why);
    }
    choose_free(&ch);
    return 0;
}

int cmd_scan(int argc, char **argv)
{
    const char *dir = NULL, *config = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && !strcmp(argv[i], "--config"))
            config = argv[++i];
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, PROG ": unknown or extra argument '%s' (try '" PROG " --help')\n", argv[i]);
            return 2;
        } else
            dir = argv[i];
    }
    if (!dir)
        dir = ".";
    char cfg[CHOOSE_PATH_MAX];
    if (!config) {
        snprintf(cfg, sizeof cfg, "%s/trace.config", dir);
        config = cfg;
    }
    struct list l = {NULL, 0, 0, 0};
    walk(&l, dir, 0);
    int rc;
    if (l.err) {
        fprintf(stderr, PROG ": %s: %s\n", dir,
                l.err == E2BIG ? "more than 100000 sources" : l.err == ELOOP ? "folders nested too deep"
                                                                         : strerror(l.err));
        rc = 1;
    } else {
        rc = report(&l, dir, config);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
