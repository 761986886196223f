/*
 * hook_reach.c - do a binary's hooks call the hooks (see hook_reach.h)?
 * objdump's output is read line by line into a call graph of names (each
 * function's calls and tail jumps to a symbol, the target's own start,
 * not an offset into it), then walked from the two hooks.
 */
#include "hook_reach.h"
#include "lib/proc.h"
#include "lib/strmap.h"
#include "lib/vec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct graph {
    char **names;
    size_t n, cap;
    struct strmap index;
    uint32_t (*edges)[2]; /* caller, callee */
    size_t nedges, capedges;
    int oom;
};

void hook_reach_objdump_for(const char *addr2line, char *buf, size_t len)
{
    size_t n = strlen(addr2line), k = strlen("addr2line");
    if (n >= k && !strcmp(addr2line + n - k, "addr2line"))
        snprintf(buf, len, "%.*sobjdump", (int)(n - k), addr2line);
    else
        snprintf(buf, len, "objdump");
}

/* The number of name[0..len), made on first sight; UINT32_MAX out of memory. */
static uint32_t name_id(struct graph *g, const char *name, size_t len)
{
    char *s = malloc(len + 1);
    uint32_t id;
    if (!s)
        goto oom;
    memcpy(s, name, len);
    s[len] = '\0';
    if (strmap_get(&g->index, s, &id)) {
        free(s);
        return id;
    }
    if (g->n >= UINT32_MAX - 1 || vec_grow(&g->names, &g->cap, g->n, sizeof *g->names, 256) < 0 ||
        strmap_put(&g->index, s, (uint32_t)g->n) < 0) {
        free(s);
        goto oom;
    }
    g->names[g->n] = s;
    return (uint32_t)g->n++;
oom:
    g->oom = 1;
    return UINT32_MAX;
}

/* "0000000000401136 <foo>:" starts a function: its id; UINT32_MAX if not one. */
static uint32_t function_start(struct graph *g, const char *line)
{
    const char *p = line, *open, *end;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
        p++;
    if (p == line || strncmp(p, " <", 2) || !(end = strstr(p, ">:")) || end[2] != '\n')
        return UINT32_MAX;
    open = p + 2;
    return name_id(g, open, (size_t)(end - open));
}

/* An instruction that names a symbol's start, "call 401030 <f@plt>": f's id. */
static uint32_t target_of(struct graph *g, const char *line)
{
    const char *open = strrchr(line, '<'), *close = open ? strchr(open, '>') : NULL;
    if (!open || !close || close == open + 1 || memchr(open, '+', (size_t)(close - open)))
        return UINT32_MAX;
    size_t len = (size_t)(close - open - 1);
    const char *at = memchr(open + 1, '@', len); /* f@plt is f */
    return name_id(g, open + 1, at ? (size_t)(at - open - 1) : len);
}

static int read_graph(struct graph *g, FILE *in)
{
    char line[4096];
    uint32_t cur = UINT32_MAX;
    while (fgets(line, sizeof line, in) && !g->oom) {
        if (line[0] != ' ' && line[0] != '\t') {
            cur = line[0] ? function_start(g, line) : UINT32_MAX;
            continue;
        }
        uint32_t to = cur == UINT32_MAX ? UINT32_MAX : target_of(g, line);
        if (to == UINT32_MAX || to == cur)
            continue;
        if (g->nedges && g->edges[g->nedges - 1][0] == cur && g->edges[g->nedges - 1][1] == to)
            continue;
        if (vec_grow(&g->edges, &g->capedges, g->nedges, sizeof *g->edges, 1024) < 0) {
            g->oom = 1;
            break;
        }
        g->edges[g->nedges][0] = cur;
        g->edges[g->nedges++][1] = to;
    }
    return g->oom ? -1 : 0;
}

static int is_hook(const char *name)
{
    return !strcmp(name, "__cyg_profile_func_enter") || !strcmp(name, "__cyg_profile_func_exit");
}

/* Walk from the hooks; 1 when a function reached calls a hook. */
static int walk(struct graph *g, char *culprit, size_t len, size_t *ncalling)
{
    unsigned char *seen = calloc(g->n ? g->n : 1, 1);
    uint32_t *queue = malloc((g->n ? g->n : 1) * sizeof *queue);
    size_t head = 0, tail = 0;
    *ncalling = 0;
    if (!seen || !queue) {
        free(seen);
        free(queue);
        return -1;
    }
    for (size_t i = 0; i < g->n; i++)
        if (is_hook(g->names[i])) {
            seen[i] = 1;
            queue[tail++] = (uint32_t)i;
        }
    while (head < tail) { /* few functions are reached: a scan of the edges per one is cheap enough */
        uint32_t f = queue[head++];
        int calls_hook = 0;
        for (size_t e = 0; e < g->nedges; e++) {
            if (g->edges[e][0] != f)
                continue;
            uint32_t to = g->edges[e][1];
            calls_hook |= is_hook(g->names[to]);
            if (!seen[to]) {
                seen[to] = 1;
                queue[tail++] = to;
            }
        }
        /* name a function of the runtime's own over a hook, which says less */
        if (calls_hook && (!(*ncalling)++ || (is_hook(culprit) && !is_hook(g->names[f]))))
            snprintf(culprit, len, "%s", g->names[f]);
    }
    free(seen);
    free(queue);
    return *ncalling > 0;
}

int hook_reach_check(const char *objdump, const char *exe, char *culprit, size_t len, size_t *ncalling,
                     char *msg, size_t msglen)
{
    struct graph g;
    char path[4096];
    int fds[2], rc = -1;
    memset(&g, 0, sizeof g);
    *ncalling = 0;
    culprit[0] = '\0';
    const char *arg = proc_arg_path(exe, path, sizeof path);
    char *argv[] = {(char *)objdump, "-d", "--no-show-raw-insn", (char *)arg, NULL};
    if (!arg || pipe(fds) != 0) {
        snprintf(msg, msglen, "%s", !arg ? "the path is too long" : "no pipe");
        return -1;
    }
    pid_t pid = proc_start(argv, NULL, fds[1], "LC_ALL", "C", msg, msglen);
    close(fds[1]);
    FILE *in = pid < 0 ? NULL : fdopen(fds[0], "r");
    if (!in) {
        close(fds[0]);
        if (pid >= 0)
            proc_wait(pid);
        return -1;
    }
    int read_rc = read_graph(&g, in);
    while (fgets(path, sizeof path, in)) /* the rest, so that objdump ends */
        ;
    fclose(in);
    int status = proc_wait(pid);
    if (read_rc < 0)
        snprintf(msg, msglen, "out of memory");
    else if (status != 0)
        snprintf(msg, msglen, "%s -d %s failed (exit %d)", objdump, exe, status);
    else if ((rc = walk(&g, culprit, len, ncalling)) < 0)
        snprintf(msg, msglen, "out of memory");
    for (size_t i = 0; i < g.n; i++)
        free(g.names[i]);
    free(g.names);
    free(g.edges);
    strmap_free(&g.index);
    return rc;
}
