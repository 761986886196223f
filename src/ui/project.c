/*
 * project.c - the Project page's API (see project.h and docs/ui.md):
 * trace.config read and saved here, previews and subtrees by running
 * `callsight scan` and `callsight select` themselves, so the page shows
 * exactly what they print.
 */
#include "project.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileopen.h"
#include "lib/textesc.h"

#define TOOL_TEXT (256u << 10) /* scan's or select's output: at most this */

/* One save at a time: the version check and the rename together, so that
 * of two saves made from the same version one is refused. */
static pthread_mutex_t save_lock = PTHREAD_MUTEX_INITIALIZER;

int ui_project_open(struct ui_project *p, const char *dir, const char *cc, const char *cxx, char *err,
                    size_t errlen)
{
    struct stat st;
    memset(p, 0, sizeof *p);
    p->cc = cc, p->cxx = cxx;
    char *real = realpath(dir, NULL);
    if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--project %s: %s", dir, real ? "not a directory" : strerror(errno));
        free(real);
        return -1;
    }
    size_t n = strlen(real) + sizeof "/trace.config";
    if (!(p->config = malloc(n))) {
        free(real);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(p->config, n, "%s/trace.config", real);
    p->dir = real;
    return 0;
}

void ui_project_close(struct ui_project *p)
{
    free(p->dir);
    free(p->config);
    memset(p, 0, sizeof *p);
}

/* f, an open_memstream of *buf and *len, closed (which sets them) and
 * made the answer. */
static void reply_json(struct ui_reply *r, int status, char **buf, size_t *len, FILE *f)
{
    if (fclose(f) != 0) {
        free(*buf);
        *buf = NULL, *len = 0;
    }
    r->status = status, r->body = *buf, r->len = *len, r->type = "application/json";
}

static void reply_error(struct ui_reply *r, int status, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        r->status = 500, r->body = NULL;
        return;
    }
    fputs("{\"error\": ", f);
    textesc_put_json(f, msg);
    fputs("}\n", f);
    reply_json(r, status, &buf, &len, f);
}

/* The version a save is checked against: FNV-1a of the bytes, in hex;
 * "none" for a project without trace.config. */
static void version_of(const char *text, size_t len, int exists, char *out)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * 0x100000001b3u;
    if (exists)
        snprintf(out, 17, "%016llx", (unsigned long long)h);
    else
        snprintf(out, 17, "none");
}

/* trace.config now: 1 read (*text, *len), 0 there is none, -1 error (msg),
 * -2 it is a symbolic link (msg): read no more through one than written,
 * since it could name any file this user may read. */
static int read_config(const struct ui_project *p, char **text, size_t *len, char *msg, size_t msglen)
{
    struct stat st;
    *text = NULL, *len = 0;
    int there = lstat(p->config, &st) == 0;
    if (!there && errno == ENOENT)
        return 0;
    if (there && S_ISLNK(st.st_mode)) {
        snprintf(msg, msglen, "trace.config is a symbolic link: not read through; edit it by hand");
        return -2;
    }
    if (fileopen_read(p->config, UI_PROJECT_MAX, text, len, msg, msglen) < 0)
        return -1;
    return 1;
}

static void api_get(struct ui_project *p, struct ui_reply *r)
{
    char *text, msg[PATH_MAX + 64], ver[17];
    size_t len;
    int have = read_config(p, &text, &len, msg, sizeof msg);
    if (have < 0) {
        reply_error(r, have == -2 ? 409 : 500, msg);
        return;
    }
    version_of(text, len, have, ver);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f) {
        free(text);
        r->status = 500, r->body = NULL;
        return;
    }
    fputs("{\"dir\": ", f);
    textesc_put_json(f, p->dir);
    fprintf(f, ", \"exists\": %s, \"version\": \"%s\", \"token\": \"%s\", \"config\": ", have ? "true" : "false",
            ver, p->token);
    textesc_put_json(f, have ? text : "");
    fputs("}\n", f);
    free(text);
    reply_json(r, 200, &buf, &blen, f);
}

/* A draft as text: no NUL inside (trace.config is text; a NUL would end it
 * early for the parser and hide what follows). */
static int draft_ok(const char *body, size_t len, struct ui_reply *r)
{
    if (len > UI_PROJECT_MAX) {
        reply_error(r, 413, "a trace.config of at most 64 KiB");
        return 0;
    }
    if (memchr(body, '\0', len)) {
        reply_error(r, 400, "trace.config is text: no NUL byte");
        return 0;
    }
    return 1;
}

/* Write len bytes of body to fd: 0, or -1 (errno). */
static int write_all(int fd, const char *body, size_t len)
{
    while (len) {
        ssize_t k = write(fd, body, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        body += k, len -= (size_t)k;
    }
    return 0;
}

/* Every hide in text written as as (no longer than hide), in place. */
static void rename_in(char *text, const char *hide, const char *as)
{
    size_t hl = strlen(hide), al = strlen(as);
    char *at;
    if (al > hl || !hl)
        return;
    while ((at = strstr(text, hide))) {
        memcpy(at, as, al);
        memmove(at + al, at + hl, strlen(at + hl) + 1);
        text = at + al;
    }
}

/* Run tool (argv[1..], argv[0] filled by ui_run) and answer its exit
 * status and text, as it printed them (the draft's temporary name, hide,
 * said as "trace.config (draft)"). */
static void run_tool(struct ui_traces *t, char **argv, const char *hide, struct ui_reply *r)
{
    char *text = malloc(TOOL_TEXT), *buf = NULL;
    size_t blen = 0;
    FILE *f = text ? open_memstream(&buf, &blen) : NULL;
    if (!f) {
        free(text);
        r->status = 500, r->body = NULL;
        return;
    }
    int rc = ui_run(t, argv, text, TOOL_TEXT);
    if (hide)
        rename_in(text, hide, "trace.config (draft)");
    fprintf(f, "{\"status\": %d, \"output\": ", rc);
    textesc_put_json(f, text);
    fputs("}\n", f);
    free(text);
    reply_json(r, 200, &buf, &blen, f);
}

/* --cc and --cxx, as given to ui, after argv[n]: the new n. */
static int tool_opts(const struct ui_project *p, char **argv, int n)
{
    if (p->cc)
        argv[n++] = "--cc", argv[n++] = (char *)p->cc;
    if (p->cxx)
        argv[n++] = "--cxx", argv[n++] = (char *)p->cxx;
    return n;
}

/* `callsight scan DIR --config DRAFT`: the draft in ui's private
 * directory, never in the project. */
static void api_preview(struct ui_project *p, struct ui_traces *t, const char *body, size_t len,
                        struct ui_reply *r)
{
    if (!draft_ok(body, len, r))
        return;
    char path[sizeof t->tmp + 32];
    snprintf(path, sizeof path, "%s/draft.XXXXXX", t->tmp);
    int fd = mkstemp(path);
    if (fd < 0) {
        reply_error(r, 500, strerror(errno));
        return;
    }
    int bad = write_all(fd, body, len);
    if (close(fd) != 0 || bad) {
        unlink(path);
        reply_error(r, 500, "cannot write the draft");
        return;
    }
    char *argv[12] = {NULL, "scan", p->dir, "--config", path};
    argv[tool_opts(p, argv, 5)] = NULL;
    run_tool(t, argv, path, r);
    unlink(path);
}

/* `callsight select DIR --function NAME [--depth N] --list`. */
static void api_select(struct ui_project *p, struct ui_traces *t, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    const char *fn = arg(ctx, "function"), *depth = arg(ctx, "depth");
    if (!fn || !*fn) {
        reply_error(r, 400, "function: the function's name");
        return;
    }
    if (depth && (!*depth || strspn(depth, "0123456789") != strlen(depth) || strlen(depth) > 6)) {
        reply_error(r, 400, "depth: a number of levels, 0 to 999999");
        return;
    }
    char *argv[14] = {NULL, "select", p->dir, "--function", (char *)fn, "--list"};
    int n = 6;
    if (depth)
        argv[n++] = "--depth", argv[n++] = (char *)depth;
    argv[tool_opts(p, argv, n)] = NULL;
    run_tool(t, argv, NULL, r);
}

/* Replace trace.config by the draft, if it is still the version base. */
static void api_save(struct ui_project *p, const char *body, size_t len, const char *base, struct ui_reply *r)
{
    if (!draft_ok(body, len, r))
        return;
    if (!base) {
        reply_error(r, 400, "X-Callsight-Base: the version the draft was made from");
        return;
    }
    struct stat st;
    mode_t mode = 0644;
    if (lstat(p->config, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            reply_error(r, 409, S_ISLNK(st.st_mode) ? "trace.config is a symbolic link: not written through; edit it by hand"
                                                    : "trace.config is not a regular file: not replaced");
            return;
        }
        mode = st.st_mode & 07777;
    }
    char *now, msg[PATH_MAX + 64], ver[17];
    size_t nlen;
    int have = read_config(p, &now, &nlen, msg, sizeof msg);
    if (have < 0) {
        reply_error(r, have == -2 ? 409 : 500, msg);
        return;
    }
    version_of(now, nlen, have, ver);
    free(now);
    if (strcmp(ver, base)) {
        reply_error(r, 409, "trace.config changed since it was loaded: reload the page to see it");
        return;
    }
    size_t tl = strlen(p->dir) + sizeof "/.trace.config.XXXXXX";
    char *tmp = malloc(tl);
    if (!tmp) {
        r->status = 500, r->body = NULL;
        return;
    }
    snprintf(tmp, tl, "%s/.trace.config.XXXXXX", p->dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(msg, sizeof msg, "cannot write in the project: %s", strerror(errno));
        free(tmp);
        reply_error(r, 500, msg);
        return;
    }
    int bad = fchmod(fd, mode) != 0 || write_all(fd, body, len) != 0 || fsync(fd) != 0;
    bad |= close(fd) != 0;
    if (bad || rename(tmp, p->config) != 0) {
        snprintf(msg, sizeof msg, "cannot save trace.config: %s", strerror(errno));
        unlink(tmp);
        free(tmp);
        reply_error(r, 500, msg);
        return;
    }
    free(tmp);
    version_of(body, len, 1, ver);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f) {
        r->status = 500, r->body = NULL;
        return;
    }
    fprintf(f, "{\"saved\": true, \"version\": \"%s\", \"bytes\": %zu}\n", ver, len);
    reply_json(r, 200, &buf, &blen, f);
}

void ui_project_api(struct ui_project *p, struct ui_traces *t, const char *what, int post, const char *body,
                    size_t len, const char *base, ui_arg_fn arg, void *ctx, struct ui_reply *r)
{
    memset(r, 0, sizeof *r);
    if (!p->dir) {
        reply_error(r, 404, "no project: start callsight ui with --project DIR");
        return;
    }
    int get = !strcmp(what, "project") || !strcmp(what, "project/select");
    int postable = !strcmp(what, "project/preview") || !strcmp(what, "project/save");
    if (!get && !postable) {
        reply_error(r, 404, "no such API: see docs/ui.md");
        return;
    }
    if (post != postable) {
        reply_error(r, 405, postable ? "POST only" : "GET only");
        return;
    }
    if (!strcmp(what, "project"))
        api_get(p, r);
    else if (!strcmp(what, "project/select"))
        api_select(p, t, arg, ctx, r);
    else if (!strcmp(what, "project/preview"))
        api_preview(p, t, body, len, r);
    else {
        pthread_mutex_lock(&save_lock);
        api_save(p, body, len, base, r);
        pthread_mutex_unlock(&save_lock);
    }
}
