/*
 * modfile.c - find a shared object's file by recorded path and build-id
 * (see modfile.h): the path, --sysroot, --debug-dir, debuginfod, each
 * candidate's build-id read (elf_buildid.c) and compared with the one the
 * module list recorded (its first 24 bytes at most: all a list carries).
 * debuginfod's lookups are made up front, on a few threads at once within
 * one deadline (modfile_prefetch), and kept by build-id for modfile_find.
 */
#include "modfile.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elf_buildid.h"
#include "lib/fileopen.h"
#include "trace.h"

void modfile_init(struct modfile *m, const struct modfile_where *where)
{
    memset(m, 0, sizeof *m);
    m->where = where;
}

/* One build-id's lookup: what debuginfod said, or that it said nothing in time. */
enum answer_state { ANSWER_FOUND, ANSWER_FAILED, ANSWER_LATE };

struct modfile_answer {
    unsigned char id[TRACE_MODULE_BYTES];
    size_t len;
    enum answer_state state;
    int err;    /* ANSWER_FAILED: debuginfod's errno */
    char *path; /* ANSWER_FOUND: the file in debuginfod's cache (malloc'ed) */
};

/* One client and the request it is making (its user data). */
struct modfile_asker {
    debuginfod_client *client;
    int64_t deadline_ns;
    int stopped; /* the progress function stopped this request: the deadline passed */
};

void modfile_free(struct modfile *m)
{
    if (m->one)
        debuginfod_end(m->one->client);
    free(m->one);
    m->one = NULL;
    for (size_t i = 0; i < m->nanswers; i++)
        free(m->answers[i].path);
    free(m->answers);
    m->answers = NULL;
    m->nanswers = 0;
}

uint64_t modfile_deadline_ms(const struct modfile *m)
{
    return m->where->debuginfod_deadline_ms ? m->where->debuginfod_deadline_ms : MODFILE_DEBUGINFOD_DEADLINE_MS;
}

static void hex(const unsigned char *id, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
    out[2 * len] = '\0';
}

/* 1 when file has the build-id (or none was recorded), 0 when it does not
 * (said in why), -1 when it cannot be read as ELF (said). */
static int same_build_id(const char *file, const unsigned char *id, size_t len, char *why, size_t whylen)
{
    struct elf_buildid b;
    char msg[512], mine[2 * ELF_BUILDID_MAX + 1];
    if (access(file, R_OK) != 0) {
        snprintf(why, whylen, "%s: %s", file, strerror(errno));
        return -1;
    }
    if (elf_buildid_read(file, &b, msg, sizeof msg) < 0) {
        snprintf(why, whylen, "%s", msg);
        return -1;
    }
    if (!len)
        return 1;
    /* a list carries 24 bytes at most: an id of 24 may be longer, shorter ones are whole */
    if ((len < TRACE_MODULE_BYTES ? b.len == len : b.len >= len) && !memcmp(b.id, id, len))
        return 1;
    hex(b.id, b.len < 8 ? b.len : 8, mine);
    snprintf(why, whylen, "%s has build-id %s...", file, b.len ? mine : "(none)");
    return 0;
}

static int take(const char *file, char **out)
{
    return (*out = strdup(file)) ? 0 : -2;
}

/* DIR/.build-id/ab/cdef....debug for the whole id; "" when the recorded id
 * may be cut (TRACE_MODULE_BYTES: all a list carries). */
static void debug_path(const char *dir, const unsigned char *id, size_t len, char *out, size_t outlen)
{
    char h[2 * TRACE_MODULE_BYTES + 1];
    out[0] = '\0';
    if (len < 2 || len >= TRACE_MODULE_BYTES)
        return;
    hex(id, len, h);
    snprintf(out, outlen, "%s/.build-id/%.2s/%s.debug", dir, h, h + 2);
}

/* DEBUGINFOD_URLS as it may be shown: each URL's user:password@ (which a
 * URL may carry for its server) left out, so no note or log holds it. */
static void urls_shown(const char *urls, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = urls; *p && o + 1 < len;) {
        const char *end = p + strcspn(p, " \t");
        const char *host = strstr(p, "://");
        host = host && host < end ? host + 3 : p;
        const char *at = memchr(host, '@', (size_t)(end - host));
        const char *slash = memchr(host, '/', (size_t)(end - host));
        if (at && (!slash || at < slash)) {
            /* scheme://, then what follows the credentials */
            o += (size_t)snprintf(out + o, len - o, "%.*s%.*s", (int)(host - p), p, (int)(end - at - 1), at + 1);
        } else {
            o += (size_t)snprintf(out + o, len - o, "%.*s", (int)(end - p), p);
        }
        if (o >= len)
            o = len - 1;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p && o + 1 < len)
            out[o++] = ' ';
    }
    out[o < len ? o : len - 1] = '\0';
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The servers to ask, or NULL when none are named (then none ever are). */
static const char *debuginfod_urls(struct modfile *m)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (m->debuginfod_off || !urls || !*urls) {
        m->debuginfod_off = 1;
        return NULL;
    }
    return urls;
}

/* The deadline starts with the first lookup and holds for all that follow. */
static int64_t deadline(struct modfile *m)
{
    if (!m->deadline_ns)
        m->deadline_ns = now_ns() + (int64_t)modfile_deadline_ms(m) * 1000000;
    return m->deadline_ns;
}

/* libdebuginfod calls this while a request waits (about once a second at
 * least) and stops the request when it returns non-zero. */
static int past_deadline(debuginfod_client *c, long a, long b)
{
    (void)a;
    (void)b;
    struct modfile_asker *k = debuginfod_get_user_data(c);
    if (now_ns() < k->deadline_ns)
        return 0;
    k->stopped = 1;
    return 1;
}

static int asker_begin(struct modfile_asker *k, int64_t deadline_ns)
{
    k->deadline_ns = deadline_ns;
    k->stopped = 0;
    if (!(k->client = debuginfod_begin()))
        return -1;
    debuginfod_set_user_data(k->client, k);
    debuginfod_set_progressfn(k->client, past_deadline);
    return 0;
}

/*
 * libdebuginfod takes a request it was told to stop for one the servers
 * refused, and leaves its empty "failed" mark in its cache, so that for
 * cache_miss_s (10 minutes by default) it would not ask again: a run given
 * a longer deadline would be told "not found" at once.  The mark of a
 * request stopped here is taken away again.  Its place is libdebuginfod's
 * own (the cache directory as its manual gives it, then ID/debuginfo); an
 * empty regular file there is the mark, nothing else is touched.
 */
static void forget_stopped(const unsigned char *id, size_t len)
{
    const char *cache = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char dir[4096], file[4200], h[2 * TRACE_MODULE_BYTES + 1];
    struct stat st;
    home = home && *home ? home : "/";
    if (cache && *cache)
        snprintf(dir, sizeof dir, "%s", cache);
    else if (snprintf(dir, sizeof dir, "%s/.debuginfod_client_cache", home) > 0 && stat(dir, &st) == 0)
        ;
    else if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/debuginfod_client", xdg);
    else
        snprintf(dir, sizeof dir, "%s/.cache/debuginfod_client", home);
    hex(id, len, h);
    snprintf(file, sizeof file, "%s/%s/debuginfo", dir, h);
    if (lstat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(file);
}

/* One build-id asked of the servers, into a. */
static void ask(struct modfile_asker *k, struct modfile_answer *a)
{
    if (now_ns() >= k->deadline_ns) {
        a->state = ANSWER_LATE;
        return;
    }
    k->stopped = 0;
    char *path = NULL;
    int fd = debuginfod_find_debuginfo(k->client, a->id, (int)a->len, &path);
    if (fd >= 0) {
        close(fd);
        a->state = ANSWER_FOUND;
        a->path = path;
    } else if (k->stopped) {
        a->state = ANSWER_LATE;
        forget_stopped(a->id, a->len);
    } else {
        a->state = ANSWER_FAILED;
        a->err = -fd;
    }
}

/* The lookups shared by the threads of one modfile_prefetch: each takes
 * the next one not yet taken, so none is asked twice. */
struct batch {
    struct modfile_answer *answers;
    size_t n;
    atomic_size_t next;
};

struct worker {
    struct modfile_asker k;
    struct batch *b;
    pthread_t th;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->b->next, 1)) < w->b->n;)
        ask(&w->k, &w->b->answers[i]);
    return NULL;
}

static int by_id(const void *pa, const void *pb)
{
    const struct modfile_answer *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return memcmp(a->id, b->id, a->len);
}

static struct modfile_answer *answer_of(const struct modfile *m, const unsigned char *id, size_t len)
{
    struct modfile_answer key = {.len = len};
    memcpy(key.id, id, len);
    return m->nanswers ? bsearch(&key, m->answers, m->nanswers, sizeof key, by_id) : NULL;
}

/* An answer said in why.  0 found (*out the file), -1 not, -2 out of memory. */
static int answer_said(const struct modfile *m, const struct modfile_answer *a, const char *urls, char **out,
                       char *why, size_t whylen)
{
    char shown[512];
    if (a->state == ANSWER_FOUND)
        return (*out = strdup(a->path)) ? 0 : -2;
    urls_shown(urls, shown, sizeof shown);
    if (a->state == ANSWER_LATE)
        snprintf(why, whylen, "debuginfod (%s): no answer within the %g s deadline", shown,
                 (double)modfile_deadline_ms(m) / 1000);
    else
        snprintf(why, whylen, "debuginfod (%s): %s", shown, strerror(a->err));
    return -1;
}

/* From debuginfod, when DEBUGINFOD_URLS names servers: modfile_prefetch's
 * answer, else asked now (within the same deadline).  0 found, -1 not, -2
 * out of memory. */
static int from_debuginfod(struct modfile *m, const unsigned char *id, size_t len, char **out, char *why,
                           size_t whylen)
{
    const char *urls = debuginfod_urls(m);
    if (!urls || !len || len >= TRACE_MODULE_BYTES)
        return -1; /* no servers; or no id recorded, or perhaps cut: nothing to ask for */
    const struct modfile_answer *kept = answer_of(m, id, len);
    if (kept)
        return answer_said(m, kept, urls, out, why, whylen);
    if (!m->one && (!(m->one = calloc(1, sizeof *m->one)) || asker_begin(m->one, deadline(m)) < 0)) {
        free(m->one);
        m->one = NULL;
        m->debuginfod_off = 1;
        snprintf(why, whylen, "debuginfod: no client");
        return -1;
    }
    struct modfile_answer a = {.len = len};
    memcpy(a.id, id, len);
    ask(m->one, &a);
    int rc = answer_said(m, &a, urls, out, why, whylen);
    free(a.path);
    return rc;
}

/* The file at the recorded path, under --sysroot or in a --debug-dir.
 * 0 (*out set), -1 not (first and last say why), -2 out of memory. */
static int find_here(struct modfile *m, const char *path, const unsigned char *id, size_t len, char **out,
                     char *first, size_t firstlen, char *last, size_t lastlen)
{
    const struct modfile_where *w = m->where;
    char file[8192];
    int rc;
    if (!path[0]) {
        snprintf(first, firstlen, "no path was recorded");
    } else if (path[0] != '/') {
        /* The device's paths are its loader's, absolute: a relative one
         * would be looked for wherever analyze runs. */
        snprintf(first, firstlen, "%s: not an absolute path, not looked for", path);
    } else if (w->sysroot) {
        /* The device's root on the host: the path is taken inside it only,
         * `..` and symlinks included, never on the host itself. */
        int fd = fileopen_in_root(w->sysroot, path, ELF_BUILDID_MAX_FILE, file, sizeof file, first, firstlen);
        if (fd >= 0) {
            close(fd);
            if ((rc = same_build_id(file, id, len, first, firstlen)) == 1)
                return take(file, out);
        }
    } else if ((rc = same_build_id(path, id, len, first, firstlen)) == 1) {
        return take(path, out);
    }
    for (size_t i = 0; i < w->ndebug_dirs; i++) {
        debug_path(w->debug_dirs[i], id, len, file, sizeof file);
        if (file[0] && access(file, R_OK) == 0 && same_build_id(file, id, len, last, lastlen) == 1)
            return take(file, out);
    }
    return -1;
}

int modfile_find(struct modfile *m, const char *path, const unsigned char *id, size_t len, char **out,
                 char *why, size_t whylen)
{
    char first[700] = "", last[700] = "";
    *out = NULL;
    int rc = find_here(m, path, id, len, out, first, sizeof first, last, sizeof last);
    if (rc == -1)
        rc = from_debuginfod(m, id, len, out, last, sizeof last);
    if (rc == -1)
        snprintf(why, whylen, "%s%s%s", first, last[0] ? "; " : "", last);
    return rc;
}

int modfile_prefetch(struct modfile *m, struct modfile_want *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        want[i].late = 0;
    if (!debuginfod_urls(m) || m->nanswers)
        return 0; /* no servers; or asked already */
    /* the build-ids to ask for: those no file here has, each once */
    struct modfile_answer *as = calloc(n ? n : 1, sizeof *as);
    size_t na = 0;
    if (!as)
        return -2;
    for (size_t i = 0; i < n; i++) {
        char first[700], last[700], *file = NULL;
        if (!want[i].len || want[i].len >= TRACE_MODULE_BYTES)
            continue;
        int rc = find_here(m, want[i].path ? want[i].path : "", want[i].id, want[i].len, &file, first,
                           sizeof first, last, sizeof last);
        free(file);
        if (rc == -2) {
            free(as);
            return -2;
        }
        if (rc == 0)
            continue;
        as[na].len = want[i].len;
        memcpy(as[na++].id, want[i].id, want[i].len);
    }
    qsort(as, na, sizeof *as, by_id);
    size_t u = 0;
    for (size_t i = 0; i < na; i++)
        if (!u || by_id(&as[u - 1], &as[i]))
            as[u++] = as[i];
    if (!u) {
        free(as);
        return 0;
    }
    /* the calling thread is one of the askers: the lookups go on if no
     * thread can be started, and each asker has a client of its own */
    struct batch b = {as, u, 0};
    struct worker ws[MODFILE_DEBUGINFOD_THREADS];
    size_t nw = 0, started = 1;
    int64_t until = deadline(m);
    while (nw < MODFILE_DEBUGINFOD_THREADS && nw < u && asker_begin(&ws[nw].k, until) == 0)
        ws[nw++].b = &b;
    for (; started < nw && pthread_create(&ws[started].th, NULL, work, &ws[started]) == 0; started++)
        ;
    if (nw)
        work(&ws[0]);
    for (size_t i = 1; i < started; i++)
        pthread_join(ws[i].th, NULL);
    for (size_t i = 0; i < nw; i++)
        debuginfod_end(ws[i].k.client);
    if (!nw) { /* no client at all: modfile_find tries again, and says so */
        free(as);
        return 0;
    }
    m->answers = as;
    m->nanswers = u;
    for (size_t i = 0; i < n; i++) {
        const struct modfile_answer *a =
            want[i].len && want[i].len < TRACE_MODULE_BYTES ? answer_of(m, want[i].id, want[i].len) : NULL;
        want[i].late = a && a->state == ANSWER_LATE;
    }
    return 0;
}
