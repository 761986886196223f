/*
 * graph_build.c - compile units for their call graph, where stale, and read
 * them (see graph_build.h).
 */
#include "graph_build.h"
#include "sources.h"
#include "lib/proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PATH_LEN 4096
#define CMD_MAX 8192 /* a compile command kept in REL.cg.cmd */

int graph_build_is_clang(const char *cc)
{
    struct proc_words w;
    char line[512] = "", err[256];
    if (proc_split(cc, 1, &w, err, sizeof err) < 0)
        return 0;
    w.argv[w.argc] = "--version";
    proc_capture(w.argv, NULL, line, sizeof line);
    proc_words_free(&w);
    return strstr(line, "clang") != NULL;
}

/* objdir/SRC + suffix, ".." components of SRC spelled "__" so that nothing
 * lands outside objdir.  0, or -1 too long. */
static int unit_path(const char *objdir, const char *src, const char *suffix, char *out, size_t len)
{
    size_t o = (size_t)snprintf(out, len, "%s/", objdir);
    for (const char *p = src; *p && o + 3 < len; p++) {
        int at_start = p == src || p[-1] == '/';
        if (at_start && p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2])) {
            out[o++] = '_';
            out[o++] = '_';
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return o + strlen(suffix) + 1 < len ? (strcat(out, suffix), 0) : -1;
}

static int newer(const struct stat *a, const struct stat *b)
{
    return a->st_mtim.tv_sec != b->st_mtim.tv_sec ? a->st_mtim.tv_sec > b->st_mtim.tv_sec
                                                  : a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

/* Does the make-style dependency file at dpath name a file newer than ci
 * (or one that is gone)?  A file that cannot be read counts as stale. */
static int deps_newer(const char *dpath, const struct stat *ci)
{
    FILE *f = fopen(dpath, "r");
    if (!f)
        return 1;
    char word[PATH_LEN];
    size_t n = 0;
    int c, stale = 0, first = 1;
    while (!stale && (c = fgetc(f)) != EOF) {
        if (c == '\\') {
            int d = fgetc(f);
            if (d == '\n' || d == EOF)
                continue;
            c = d; /* an escaped character of a name: "\ " */
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (n && !first) {
                word[n] = '\0';
                struct stat st;
                stale = stat(word, &st) != 0 || newer(&st, ci);
            }
            if (n && word[n - 1] == ':')
                first = 0;
            n = 0;
            continue;
        }
        if (n + 1 >= sizeof word) {
            stale = 1;
            break;
        }
        word[n++] = (char)c;
    }
    if (n && !stale && !first) {
        word[n] = '\0';
        struct stat st;
        stale = stat(word, &st) != 0 || newer(&st, ci);
    }
    fclose(f);
    return stale || first;
}

/* Is the unit's graph file there, made by this command, and newer than what
 * the compiler read? */
static int is_fresh(const char *objdir, const char *src, const char *cmd)
{
    char ci[PATH_LEN], d[PATH_LEN], c[PATH_LEN], old[CMD_MAX + 2] = "";
    struct stat st;
    if (unit_path(objdir, src, ".cg.ci", ci, sizeof ci) < 0 || unit_path(objdir, src, ".cg.d", d, sizeof d) < 0 ||
        unit_path(objdir, src, ".cg.cmd", c, sizeof c) < 0 || stat(ci, &st) != 0)
        return 0;
    FILE *f = fopen(c, "r");
    if (!f)
        return 0;
    size_t n = fread(old, 1, sizeof old - 1, f);
    fclose(f);
    old[n] = '\0';
    return !strcmp(old, cmd) && !deps_newer(d, &st);
}

static const char *command_for(const struct graph_build *b, const char *src)
{
    return sources_kind(src) == 1 && b->cxx ? b->cxx : b->cc;
}

/* Start the compiler for one unit.  Its pid, or -1 (said in err). */
static pid_t start_unit(const struct graph_build *b, const char *src, char *err, size_t errlen)
{
    char o[PATH_LEN], d[PATH_LEN];
    if (unit_path(b->objdir, src, ".cg.o", o, sizeof o) < 0 || unit_path(b->objdir, src, ".cg.d", d, sizeof d) < 0 ||
        sources_make_parents(o) < 0) {
        snprintf(err, errlen, "%s: cannot make a place for its call graph under %s: %s", src, b->objdir,
                 errno ? strerror(errno) : "path too long");
        return -1;
    }
    /* Until this compile succeeds there is no graph of the unit: a failed
     * one may leave a partial .ci behind, which must not pass for fresh. */
    char ci[PATH_LEN], c[PATH_LEN];
    if (unit_path(b->objdir, src, ".cg.cmd", c, sizeof c) == 0)
        unlink(c);
    if (unit_path(b->objdir, src, ".cg.ci", ci, sizeof ci) == 0)
        unlink(ci);
    /* An argv, never a shell: the unit's name is the project's, and one
     * like `@opts.c` or `-wrapper` must reach the compiler as a file. */
    static const char *const fixed[] = {"-O0", "-fno-lto", "-w", "-fcallgraph-info", "-MMD", "-MF", NULL,
                                        "-MT", "callgraph", "-c", "-o", NULL, NULL};
    enum { NFIXED = sizeof fixed / sizeof *fixed, AT_D = 6, AT_O = 11, AT_SRC = 12 };
    char arg[PATH_LEN];
    const char *unit = proc_arg_path(src, arg, sizeof arg);
    struct proc_words w;
    if (!unit) {
        snprintf(err, errlen, "%s: path too long", src);
        return -1;
    }
    if (proc_split(command_for(b, src), NFIXED, &w, err, errlen) < 0)
        return -1;
    for (int i = 0; i < NFIXED; i++)
        w.argv[w.argc + i] = (char *)(i == AT_D ? d : i == AT_O ? o : i == AT_SRC ? unit : fixed[i]);
    /* ccache off: a cached object comes without its .ci. */
    pid_t pid = proc_start(w.argv, NULL, -1, "CCACHE_DISABLE", "1", err, errlen);
    proc_words_free(&w);
    return pid;
}

/* After a unit compiled: its object removed, its command kept. */
static void finish_unit(const struct graph_build *b, const char *src)
{
    char o[PATH_LEN], c[PATH_LEN];
    if (unit_path(b->objdir, src, ".cg.o", o, sizeof o) == 0)
        unlink(o);
    if (unit_path(b->objdir, src, ".cg.cmd", c, sizeof c) < 0)
        return;
    FILE *f = fopen(c, "w");
    if (f) {
        fputs(command_for(b, src), f);
        fclose(f);
    }
}

static int cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n < 256 ? (int)n : 1;
}

/* Compile the stale units, `jobs` at a time.  0, or -1 with err set. */
static int compile_stale(const struct graph_build *b, char *const *srcs, size_t n, char *err, size_t errlen)
{
    size_t *todo = malloc((n ? n : 1) * sizeof *todo), ntodo = 0;
    pid_t *pids = NULL;
    if (!todo) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_fresh(b->objdir, srcs[i], command_for(b, srcs[i])))
            todo[ntodo++] = i;
    int jobs = b->jobs > 0 ? b->jobs : cpus(), failed = 0, running = 0, rc = 0;
    if (ntodo)
        fprintf(stderr, "%s: call graph: compiling %zu of %zu units (-O0 -fcallgraph-info, into %s/)\n", b->prog,
                ntodo, n, b->objdir);
    pids = calloc((size_t)jobs, sizeof *pids);
    size_t *slot_unit = calloc((size_t)jobs, sizeof *slot_unit), next = 0;
    if (!pids || !slot_unit) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    while (rc == 0 && (next < ntodo || running)) {
        for (int s = 0; s < jobs && next < ntodo && rc == 0; s++) {
            if (pids[s])
                continue;
            if ((pids[s] = start_unit(b, srcs[todo[next]], err, errlen)) < 0) {
                pids[s] = 0;
                rc = -1;
                break;
            }
            slot_unit[s] = todo[next++];
            running++;
        }
        int status;
        pid_t pid = running ? wait(&status) : -1;
        if (pid < 0 && running) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "wait: %s", strerror(errno));
            rc = -1;
            break;
        }
        for (int s = 0; s < jobs && pid > 0; s++) {
            if (pids[s] != pid)
                continue;
            pids[s] = 0;
            running--;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                finish_unit(b, srcs[slot_unit[s]]);
            else
                failed++;
        }
    }
    for (int s = 0; pids && s < jobs; s++) /* after an error: let the rest finish */
        if (pids[s])
            waitpid(pids[s], NULL, 0);
    if (rc == 0 && failed) {
        snprintf(err, errlen, "%d of %zu units did not compile for the call graph (the compiler said why, "
                              "above): the compile command must be the build's own (scan and select: --cc "
                              "'CC -I... -D...'), and -fcallgraph-info needs GCC 10 or newer", failed, ntodo);
        rc = -1;
    }
    free(pids);
    free(slot_unit);
    free(todo);
    return rc;
}

int graph_build_run(const struct graph_build *b, struct graph *g, char *const *srcs, size_t n, char *err,
                    size_t errlen)
{
    if (compile_stale(b, srcs, n, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char ci[PATH_LEN];
        if (unit_path(b->objdir, srcs[i], ".cg.ci", ci, sizeof ci) < 0) {
            snprintf(err, errlen, "%s: path too long", srcs[i]);
            return -1;
        }
        if (graph_add_unit(g, srcs[i], ci, err, errlen) < 0)
            return -1;
    }
    if (graph_finish(g) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
