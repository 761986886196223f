/*
 * symbols.c - names for addresses through one batched addr2line run per
 * binary, and addresses for names through nm (see symbols.h).
 */
#include "symbols.h"

#include <errno.h>
#include <fnmatch.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int is_exec_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int symbols_check_tool(const char *tool, char *msg, size_t msglen)
{
    if (!*tool)
        goto missing;
    if (strchr(tool, '/')) {
        if (is_exec_file(tool))
            return 0;
        goto missing;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t toollen = strlen(tool);
    while (*path) {
        size_t len = strcspn(path, ":");
        char *cand = malloc(len + toollen + 3);
        if (!cand)
            break;
        snprintf(cand, len + toollen + 3, "%.*s/%s", (int)(len ? len : 1), len ? path : ".", tool);
        int ok = is_exec_file(cand);
        free(cand);
        if (ok)
            return 0;
        path += len + (path[len] == ':');
    }
missing:
    snprintf(msg, msglen, "cannot run '%s': no such executable", tool);
    return -1;
}

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

int symbols_parse(const char *name_line, const char *loc_line, struct symbol *sym)
{
    memset(sym, 0, sizeof *sym);
    size_t n = strcspn(name_line, "\r\n");
    if (n && !(n == 2 && !strncmp(name_line, "??", 2)) && !(sym->name = dup_range(name_line, n)))
        return -1;
    /* "file:line", maybe followed by " (discriminator N)"; "??:0" or
     * "??:?" when unknown. */
    n = strcspn(loc_line, "\r\n");
    const char *paren = strstr(loc_line, " (");
    if (paren && (size_t)(paren - loc_line) < n)
        n = (size_t)(paren - loc_line);
    const char *colon = NULL;
    for (const char *p = loc_line; p < loc_line + n; p++)
        if (*p == ':')
            colon = p;
    if (!colon)
        return 0;
    size_t flen = (size_t)(colon - loc_line);
    if (!flen || (flen == 2 && !strncmp(loc_line, "??", 2)))
        return 0;
    unsigned long line = 0;
    for (const char *p = colon + 1; p < loc_line + n && *p >= '0' && *p <= '9'; p++)
        line = line * 10 + (unsigned long)(*p - '0');
    if (!(sym->file = dup_range(loc_line, flen)))
        return -1;
    sym->line = line;
    return 0;
}

void symbols_free(struct symbol *syms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(syms[i].name);
        free(syms[i].file);
        free(syms[i].module);
    }
}

/* The first line of f, for quoting an error. */
static void first_line(FILE *f, char *buf, size_t len)
{
    buf[0] = 0;
    rewind(f);
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\r\n")] = 0;
}

/* The tool's stdin, stdout and stderr, closed once it has run. */
static void close_files(FILE *in, FILE *out, FILE *err)
{
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    if (err)
        fclose(err);
}

/* Run argv (argv[0] the tool, found in PATH) on exe with these stdin,
 * stdout and stderr; 0 when it exits with 0. */
static int run_tool(char *const argv[], const char *exe, FILE *in, FILE *out, FILE *err,
                    char *msg, size_t msglen)
{
    posix_spawn_file_actions_t fa;
    const char *tool = argv[0];
    pid_t pid;
    int rc, status;

    if (posix_spawn_file_actions_init(&fa) != 0) {
        snprintf(msg, msglen, "cannot run '%s': out of memory", tool);
        return -1;
    }
    posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
    posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
    posix_spawn_file_actions_adddup2(&fa, fileno(err), 2);
    rc = posix_spawnp(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        snprintf(msg, msglen, "cannot run '%s': %s", tool, strerror(rc));
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(msg, msglen, "waiting for '%s': %s", tool, strerror(errno));
            return -1;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char line[256];
    first_line(err, line, sizeof line);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(msg, msglen, "cannot run '%s'%s%s", tool, *line ? ": " : "", line);
    else
        snprintf(msg, msglen, "'%s' failed on %s%s%s", tool, exe, *line ? ": " : "", line);
    return -1;
}

static int read_output(FILE *out, size_t n, struct symbol *syms, const char *tool, char *msg,
                       size_t msglen)
{
    char *name = NULL, *loc = NULL;
    size_t namecap = 0, loccap = 0;
    int rc = 0;
    rewind(out);
    for (size_t i = 0; i < n; i++) {
        if (getline(&name, &namecap, out) < 0 || getline(&loc, &loccap, out) < 0) {
            snprintf(msg, msglen, "'%s' printed %zu of %zu symbols", tool, i, n);
            rc = -1;
            break;
        }
        if (symbols_parse(name, loc, &syms[i]) < 0) {
            snprintf(msg, msglen, "out of memory");
            rc = -1;
            break;
        }
    }
    free(name);
    free(loc);
    return rc;
}

int symbols_resolve(const char *tool, const char *exe, const uint64_t *addrs, size_t n,
                    struct symbol *out, char *msg, size_t msglen)
{
    FILE *in = tmpfile(), *res = tmpfile(), *err = tmpfile();
    int rc = -1;
    memset(out, 0, n * sizeof *out);
    if (!in || !res || !err) {
        snprintf(msg, msglen, "temporary file: %s", strerror(errno));
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(in, "0x%llx\n", (unsigned long long)addrs[i]);
    if (fflush(in) != 0) {
        snprintf(msg, msglen, "temporary file: %s", strerror(errno));
        goto done;
    }
    rewind(in);
    char *argv[] = {(char *)tool, "-f", "-C", "-e", (char *)exe, NULL};
    if (run_tool(argv, exe, in, res, err, msg, msglen) == 0)
        rc = read_output(res, n, out, tool, msg, msglen);
done:
    close_files(in, res, err);
    if (rc < 0)
        symbols_free(out, n);
    return rc;
}

void symbols_nm_for(const char *addr2line, char *buf, size_t len)
{
    size_t n = strlen(addr2line), k = strlen("addr2line");
    if (n >= k && !strcmp(addr2line + n - k, "addr2line"))
        snprintf(buf, len, "%.*snm", (int)(n - k), addr2line);
    else
        snprintf(buf, len, "nm");
}

/* The next component of a qualified name from *p (up to a "::" outside
 * template arguments, or end), without its template arguments unless
 * keep_args: into out (len bytes, cut); *p moves past it and the "::". */
static void next_part(const char **p, const char *end, int keep_args, char *out, size_t len)
{
    size_t k = 0;
    int depth = 0;
    const char *s = *p;
    for (; s < end; s++) {
        if (depth == 0 && s + 1 < end && s[0] == ':' && s[1] == ':') {
            s += 2;
            break;
        }
        depth += *s == '<' ? 1 : *s == '>' && depth ? -1 : 0;
        if ((keep_args || (depth == 0 && *s != '>')) && k + 1 < len)
            out[k++] = *s;
    }
    out[k] = '\0';
    *p = s;
}

/* have's qualified name ("int ns::twice<int>(int)" -> "ns::twice<int>"):
 * from after a return type to the parameters, outside template arguments. */
static void qualified(const char *have, const char **start, const char **end)
{
    int depth = 0;
    *start = have;
    for (const char *s = have; *s; s++) {
        if (*s == '<')
            depth++;
        else if (*s == '>' && depth)
            depth--;
        else if (!depth && *s == ' ')
            *start = s + 1;
        else if (!depth && (*s == '(' || *s == '.')) {
            *end = s;
            return;
        }
    }
    *end = have + strlen(have);
}

/* One component: the same, or (glob) matched by want as a shell glob. */
static int part_is(const char *h, const char *w, int glob)
{
    return glob ? fnmatch(w, h, 0) == 0 : strcmp(h, w) == 0;
}

/* Does nm's name stand for `want`: the same, or a compiler's clone of it
 * ("fib.constprop.0"), or a C++ function of that name ("ns::f(int)"), given
 * whole or from any "::" as trace.config takes it ("Parser::parse",
 * "parse"; template arguments may be left out: "RoutingTable::insert" for
 * "RoutingTable<std::string>::insert(...)")?  With glob, want's components
 * are shell globs. */
static int name_match(const char *have, const char *want, int glob)
{
    size_t n = strlen(want);
    if (!strncmp(have, want, n) && (!have[n] || have[n] == '.' || have[n] == '('))
        return 1;
    if (glob && fnmatch(want, have, 0) == 0)
        return 1;
    const char *hs, *he, *ws = want, *we = want + n;
    qualified(have, &hs, &he);
    char hp[64][256], wp[64][256];
    size_t nh = 0, nw = 0;
    while (hs < he && nh < 64) {
        next_part(&hs, he, 1, hp[nh], sizeof hp[nh]);
        nh++;
    }
    while (ws < we && nw < 64) {
        next_part(&ws, we, 1, wp[nw], sizeof wp[nw]);
        nw++;
    }
    if (!nw || nw > nh || hs < he || ws < we)
        return 0;
    for (size_t i = 0; i < nw; i++) {
        const char *h = hp[nh - nw + i], *w = wp[i];
        char bare[256];
        if (!strchr(w, '<')) { /* the want part has no arguments: compare without have's */
            const char *q = h;
            next_part(&q, h + strlen(h), 0, bare, sizeof bare);
            h = bare;
        }
        if (!part_is(h, w, glob))
            return 0;
    }
    return 1;
}

/* --function's NAME: a glob when it has glob characters ('fi*'). */
static int name_is(const char *have, const char *want)
{
    return name_match(have, want, strpbrk(want, "*?[") != NULL);
}

int symbols_name_matches(const char *name, const char *glob)
{
    return name_match(name, glob, 1);
}

/* Collect the code symbols named `want` from nm's output. */
static int scan_nm(FILE *res, const char *want, uint64_t **addrs, size_t *n, char *msg,
                   size_t msglen)
{
    char *line = NULL;
    size_t cap = 0, have = 0;
    rewind(res);
    while (getline(&line, &cap, res) > 0) {
        unsigned long long addr;
        char type;
        int off = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (sscanf(line, "%llx %c %n", &addr, &type, &off) < 2 || !off || !strchr("tTwWi", type) ||
            !name_is(line + off, want))
            continue;
        if (*n == have) {
            have = have ? have * 2 : 8;
            uint64_t *v = realloc(*addrs, have * sizeof *v);
            if (!v) {
                snprintf(msg, msglen, "out of memory");
                free(line);
                return -1;
            }
            *addrs = v;
        }
        (*addrs)[(*n)++] = addr;
    }
    free(line);
    return 0;
}

int symbols_find_function(const char *nm, const char *exe, const char *name, uint64_t **addrs,
                          size_t *n, char *msg, size_t msglen)
{
    FILE *in = fopen("/dev/null", "r"), *res = tmpfile(), *err = tmpfile();
    char *argv[] = {(char *)nm, "-C", "--defined-only", (char *)exe, NULL};
    int rc = -1;
    *addrs = NULL;
    *n = 0;
    if (!in || !res || !err)
        snprintf(msg, msglen, "temporary file: %s", strerror(errno));
    else if (run_tool(argv, exe, in, res, err, msg, msglen) == 0)
        rc = scan_nm(res, name, addrs, n, msg, msglen);
    close_files(in, res, err);
    if (rc < 0 || !*n) {
        free(*addrs);
        *addrs = NULL;
    }
    return rc;
}
