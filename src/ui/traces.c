/*
 * traces.c - the trace directories `callsight ui` serves and their
 * analyses (see traces.h).  Every analysis is analyze's own, run as a
 * process the way a user runs it (as `run` and `sql` do), so that what the
 * pages show is what `callsight analyze` prints; the database of the same
 * pass answers the questions the report does not (a function's histogram,
 * callers, slowest calls, the calls in a time window).
 */
#include "traces.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "lib/proc.h"

#define OUT_MAX (256u << 20) /* a report or folded file read back: at most this */

static const char *const part_format[UI_PARTS] = {"json", "sqlite", "folded"};
static const char *const part_file[UI_PARTS] = {"json", "db", "folded"};

static void *builder(void *arg);

int ui_traces_open(struct ui_traces *t, const char *self, char **dirs, size_t ndirs, const char **exes,
                   size_t nexes, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    t->self = self;
    if (ndirs > UI_DIRS_MAX || nexes > UI_EXES_MAX) {
        snprintf(err, errlen, "at most %d directories and %d --exe", UI_DIRS_MAX, UI_EXES_MAX);
        return -1;
    }
    for (size_t i = 0; i < nexes; i++)
        t->exes[t->nexes++] = exes[i];
    for (size_t i = 0; i < ndirs; i++) {
        struct stat st;
        char *real = realpath(dirs[i], NULL);
        if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: %s", dirs[i], real ? "not a directory" : strerror(errno));
            free(real);
            ui_traces_close(t);
            return -1;
        }
        t->dirs[t->ndirs] = dirs[i];
        t->reals[t->ndirs++] = real;
    }
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > sizeof t->tmp - 32)
        base = "/tmp";
    snprintf(t->tmp, sizeof t->tmp, "%s/callsight-ui.XXXXXX", base);
    if (!mkdtemp(t->tmp)) {
        snprintf(err, errlen, "%s: %s", t->tmp, strerror(errno));
        t->tmp[0] = '\0';
        ui_traces_close(t);
        return -1;
    }
    /* without it the other parts are made when first asked for */
    t->builder_on = pthread_create(&t->builder, NULL, builder, t) == 0;
    return 0;
}

static void trace_free(struct ui_trace *tr)
{
    for (int p = 0; p < UI_PARTS; p++)
        pthread_mutex_destroy(&tr->part[p].lock);
    sqlite3_close(tr->db);
    free(tr->json);
    free(tr->folded);
    free(tr->real);
    free(tr->name);
    free(tr);
}

/* Everything in the private directory is ours: the outputs, and what an
 * analyze that failed halfway left (its FILE.db.XXXXXX). */
static void tmp_remove(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(tmp);
}

void ui_traces_close(struct ui_traces *t)
{
    pthread_mutex_lock(&t->lock);
    t->stop = 1;
    for (size_t i = 0; i < t->nkids; i++)
        kill(t->kids[i], SIGTERM);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    if (t->builder_on)
        pthread_join(t->builder, NULL);
    t->builder_on = 0;
    for (size_t i = 0; i < t->n; i++)
        trace_free(t->v[i]);
    t->n = 0;
    if (t->tmp[0])
        tmp_remove(t->tmp);
    t->tmp[0] = '\0';
    for (size_t i = 0; i < t->ndirs; i++)
        free(t->reals[i]);
    t->ndirs = 0;
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
}

static int is_trace_file(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, "trace.", 6) && n > 10 && !strcmp(name + n - 4, ".bin");
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The key depends on the order readdir gives; a directory that is not
 * changing gives the same order, which is all the key needs. */
int ui_dirstat(const char *dir, struct ui_dirstat *st)
{
    memset(st, 0, sizeof *st);
    st->key = 0xcbf29ce484222325ull;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int fd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat s;
        if (!is_trace_file(e->d_name) || fstatat(fd, e->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        st->links += S_ISLNK(s.st_mode);
        if (!S_ISREG(s.st_mode))
            continue;
        st->files++;
        st->bytes += (uint64_t)s.st_size;
        if (s.st_mtim.tv_sec > st->newest)
            st->newest = s.st_mtim.tv_sec;
        if (!strncmp(e->d_name, "trace.stream.", 13))
            st->stream = 1;
        int64_t v[3] = {(int64_t)s.st_size, (int64_t)s.st_mtim.tv_sec, (int64_t)s.st_mtim.tv_nsec};
        st->key = fnv(fnv(st->key, e->d_name, strlen(e->d_name) + 1), v, sizeof v);
    }
    closedir(d);
    if (st->key == 0)
        st->key = 1;
    return 0;
}

size_t ui_traces_list_sub(struct ui_traces *t, size_t i, char **names, size_t max)
{
    size_t n = 0;
    DIR *d = opendir(t->reals[i]);
    if (!d)
        return 0;
    struct dirent *e;
    while (n < max && (e = readdir(d))) {
        char path[PATH_MAX];
        struct ui_dirstat st;
        struct stat s;
        if (e->d_name[0] == '.' ||
            snprintf(path, sizeof path, "%s/%s", t->reals[i], e->d_name) >= (int)sizeof path ||
            lstat(path, &s) < 0 || !S_ISDIR(s.st_mode) || ui_dirstat(path, &st) < 0 || !st.files)
            continue;
        size_t len = strlen(e->d_name) + 24;
        if (!(names[n] = malloc(len)))
            break;
        snprintf(names[n++], len, "%zu/%s", i, e->d_name);
    }
    closedir(d);
    return n;
}

/* "N" or "N/REL": the given directory's index and REL (NULL for none). */
static int parse_name(const char *name, size_t ndirs, size_t *idx, const char **rel)
{
    char *end;
    if (!(*name >= '0' && *name <= '9'))
        return -1;
    errno = 0;
    unsigned long i = strtoul(name, &end, 10);
    if (errno || i >= ndirs || (end - name > 1 && *name == '0'))
        return -1;
    *idx = i;
    *rel = NULL;
    if (*end == '/' && end[1])
        *rel = end + 1;
    else if (*end)
        return -1;
    return 0;
}

/* real is under root (or root itself). */
static int is_under(const char *real, const char *root)
{
    size_t n = strlen(root);
    if (n == 1) /* "/" */
        return 1;
    return !strncmp(real, root, n) && (real[n] == '\0' || real[n] == '/');
}

static struct ui_trace *trace_new(const char *real, const char *name, size_t given)
{
    struct ui_trace *tr = calloc(1, sizeof *tr);
    if (!tr)
        return NULL;
    for (int p = 0; p < UI_PARTS; p++)
        pthread_mutex_init(&tr->part[p].lock, NULL);
    tr->real = strdup(real);
    tr->name = strdup(name);
    tr->given = (int)given;
    if (!tr->real || !tr->name) {
        trace_free(tr);
        return NULL;
    }
    return tr;
}

struct ui_trace *ui_traces_find(struct ui_traces *t, const char *name, int *status, char *err, size_t errlen)
{
    size_t idx;
    const char *rel;
    char path[PATH_MAX];
    if (parse_name(name, t->ndirs, &idx, &rel) < 0) {
        *status = 400;
        snprintf(err, errlen, "a trace is named N or N/DIR, N the directory given (0 to %zu)", t->ndirs - 1);
        return NULL;
    }
    if (rel && snprintf(path, sizeof path, "%s/%s", t->reals[idx], rel) >= (int)sizeof path) {
        *status = 400;
        snprintf(err, errlen, "the name is too long");
        return NULL;
    }
    char *real = realpath(rel ? path : t->reals[idx], NULL);
    if (!real) {
        *status = 404;
        snprintf(err, errlen, "no such directory");
        return NULL;
    }
    struct stat st;
    if (!is_under(real, t->reals[idx])) {
        *status = 403;
        snprintf(err, errlen, "outside the directories callsight ui was given");
        free(real);
        return NULL;
    }
    struct ui_dirstat ds;
    if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode) || ui_dirstat(real, &ds) < 0 || !ds.files) {
        *status = 404;
        snprintf(err, errlen, "not a directory of trace files");
        free(real);
        return NULL;
    }
    /* analyze follows a link in a directory; here it could lead outside
     * the directories given, so such a trace is not analyzed at all */
    if (ds.links) {
        *status = 403;
        snprintf(err, errlen, "it holds a symbolic link named like a trace file: not read through (only the "
                              "directories given are served)");
        free(real);
        return NULL;
    }
    struct ui_trace *found = NULL;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n && !found; i++)
        if (!strcmp(t->v[i]->real, real))
            found = t->v[i];
    if (!found && t->n == UI_TRACES_MAX) {
        *status = 503;
        snprintf(err, errlen, "%d traces are open already", UI_TRACES_MAX);
    } else if (!found && (found = trace_new(real, name, idx)))
        t->v[t->n++] = found;
    else if (!found) {
        *status = 500;
        snprintf(err, errlen, "out of memory");
    }
    pthread_mutex_unlock(&t->lock);
    free(real);
    return found;
}

static size_t trace_index(struct ui_traces *t, struct ui_trace *tr)
{
    pthread_mutex_lock(&t->lock);
    size_t i = 0;
    while (i < t->n && t->v[i] != tr)
        i++;
    pthread_mutex_unlock(&t->lock);
    return i;
}

/* The analyze processes running, so that closing can end them. */
static pid_t kid_start(struct ui_traces *t, char **argv, int log_fd, char *err, size_t errlen)
{
    pid_t pid = -1;
    pthread_mutex_lock(&t->lock);
    if (t->stop)
        snprintf(err, errlen, "callsight ui is stopping");
    else if (t->nkids == sizeof t->kids / sizeof t->kids[0])
        snprintf(err, errlen, "too many analyses at once");
    else if ((pid = proc_start(argv, NULL, log_fd, NULL, NULL, err, errlen)) > 0)
        t->kids[t->nkids++] = pid;
    pthread_mutex_unlock(&t->lock);
    return pid;
}

static int kid_wait(struct ui_traces *t, pid_t pid)
{
    int status = proc_wait(pid);
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->nkids; i++)
        if (t->kids[i] == pid) {
            t->kids[i] = t->kids[--t->nkids];
            break;
        }
    pthread_mutex_unlock(&t->lock);
    return status;
}

/* Run `callsight analyze REAL --exe ... --format FORMAT -o OUT`, its messages
 * to log_fd.  0, or -1 with the reason in why (256 bytes). */
static int run_analyze(struct ui_traces *t, struct ui_trace *tr, const char *format, const char *out, int log_fd,
                       char *why)
{
    char *argv[8 + 2 * UI_EXES_MAX];
    char err[256];
    int n = 0;
    argv[n++] = (char *)t->self;
    argv[n++] = "analyze";
    argv[n++] = tr->real; /* absolute: never taken for an option */
    for (size_t i = 0; i < t->nexes; i++) {
        argv[n++] = "--exe";
        argv[n++] = (char *)t->exes[i];
    }
    argv[n++] = "--format";
    argv[n++] = (char *)format;
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n] = NULL;
    pid_t pid = kid_start(t, argv, log_fd, err, sizeof err);
    if (pid < 0) {
        snprintf(why, 256, "%s", err);
        return -1;
    }
    int status = kid_wait(t, pid);
    if (status != 0) {
        char line[200] = "";
        if (lseek(log_fd, 0, SEEK_SET) == 0) {
            ssize_t got = read(log_fd, line, sizeof line - 1);
            line[got > 0 ? got : 0] = '\0';
            line[strcspn(line, "\n")] = '\0';
        }
        snprintf(why, 256, "analyze --format %s failed (status %d): %s", format, status, line);
        return -1;
    }
    return 0;
}

int ui_run(struct ui_traces *t, char **argv, char *buf, size_t len)
{
    char err[256];
    int fds[2];
    argv[0] = (char *)t->self;
    buf[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(buf, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = proc_start(argv, NULL, fds[1], NULL, NULL, err, sizeof err);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        snprintf(buf, len, "%s", err);
        return -1;
    }
    size_t got = 0;
    char sink[4096];
    for (;;) {
        char *to = got < len - 1 ? buf + got : sink;
        size_t room = got < len - 1 ? len - 1 - got : sizeof sink;
        ssize_t r = read(fds[0], to, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (to != sink)
            got += (size_t)r;
    }
    buf[got] = '\0';
    close(fds[0]);
    return proc_wait(pid);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 65536 * 2;
            char *nb = ncap <= OUT_MAX ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb, cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void drop_part(struct ui_trace *tr, enum ui_part part)
{
    if (part == UI_JSON) {
        free(tr->json);
        tr->json = NULL, tr->json_len = 0;
    } else if (part == UI_DB) {
        sqlite3_close(tr->db);
        tr->db = NULL;
    } else {
        free(tr->folded);
        tr->folded = NULL, tr->folded_len = 0;
    }
    tr->part[part].built = 0;
}

/* Whether any source of analyze's JSON report has "cut_at_end": true. */
static int report_cut_at_end(const char *json, size_t len)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    json_t *srcs = json_object_get(root, "sources");
    size_t i;
    json_t *s;
    int cut = 0;
    json_array_foreach(srcs, i, s) cut |= json_is_true(json_object_get(s, "cut_at_end"));
    json_decref(root);
    return cut;
}

int ui_traces_cut(struct ui_traces *t, const char *real, uint64_t key)
{
    struct ui_trace *tr = NULL;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n && !tr; i++)
        if (!strcmp(t->v[i]->real, real))
            tr = t->v[i];
    pthread_mutex_unlock(&t->lock);
    struct ui_built *b = tr ? &tr->part[UI_JSON] : NULL;
    if (!b || pthread_mutex_trylock(&b->lock) != 0)
        return 0;
    int cut = b->built && b->key == key && tr->cut_at_end;
    pthread_mutex_unlock(&b->lock);
    return cut;
}

/* Make one part of tr's analysis for the files of key, its lock held. */
static int build(struct ui_traces *t, struct ui_trace *tr, enum ui_part part, uint64_t key)
{
    struct ui_built *b = &tr->part[part];
    size_t i = trace_index(t, tr);
    char out[512], log[512];
    snprintf(out, sizeof out, "%s/%zu.%s", t->tmp, i, part_file[part]);
    snprintf(log, sizeof log, "%s/%zu.%s.log", t->tmp, i, part_file[part]);
    drop_part(tr, part);
    b->key = key;
    int fd = open(log, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(b->err, sizeof b->err, "the analysis log: %s", strerror(errno));
        return -1;
    }
    int rc = run_analyze(t, tr, part_format[part], out, fd, b->err);
    close(fd);
    if (rc)
        return -1;
    if (part == UI_DB) {
        if (sqlite3_open_v2(out, &tr->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            snprintf(b->err, sizeof b->err, "the analysis database: %s",
                     tr->db ? sqlite3_errmsg(tr->db) : "out of memory");
            drop_part(tr, part);
            return -1;
        }
    } else {
        size_t len;
        char *text = slurp(out, &len);
        if (!text) {
            snprintf(b->err, sizeof b->err, "reading analyze's output: %s", strerror(errno ? errno : ENOMEM));
            return -1;
        }
        if (part == UI_JSON) {
            tr->json = text, tr->json_len = len;
            tr->cut_at_end = report_cut_at_end(text, len);
        } else
            tr->folded = text, tr->folded_len = len;
    }
    b->built = 1;
    b->err[0] = '\0';
    return 0;
}

/* A report was made: the rest of the trace's analysis in the background. */
static void enqueue(struct ui_traces *t, struct ui_trace *tr)
{
    pthread_mutex_lock(&t->lock);
    if (t->builder_on && !tr->queued && t->nqueue < UI_TRACES_MAX) {
        tr->queued = 1;
        t->queue[t->nqueue++] = tr;
        pthread_cond_signal(&t->wake);
    }
    pthread_mutex_unlock(&t->lock);
}

static void *builder(void *arg)
{
    struct ui_traces *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        if (!t->nqueue) {
            pthread_cond_wait(&t->wake, &t->lock);
            continue;
        }
        struct ui_trace *tr = t->queue[0];
        memmove(t->queue, t->queue + 1, --t->nqueue * sizeof t->queue[0]);
        tr->queued = 0;
        pthread_mutex_unlock(&t->lock);
        for (enum ui_part p = UI_DB; p < UI_PARTS; p++) {
            ui_trace_use(t, tr, p); /* a failure is kept in the part, for whoever asks */
            ui_trace_unlock(tr, p);
        }
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int ui_trace_use(struct ui_traces *t, struct ui_trace *tr, enum ui_part part)
{
    struct ui_built *b = &tr->part[part];
    pthread_mutex_lock(&b->lock);
    struct ui_dirstat st;
    if (ui_dirstat(tr->real, &st) < 0) {
        snprintf(b->err, sizeof b->err, "cannot read the directory: %s", strerror(errno));
        return -1;
    }
    if (b->key == st.key)
        return b->built ? 0 : -1;
    int rc = build(t, tr, part, st.key);
    if (rc == 0 && part == UI_JSON)
        enqueue(t, tr);
    return rc;
}

void ui_trace_unlock(struct ui_trace *tr, enum ui_part part)
{
    pthread_mutex_unlock(&tr->part[part].lock);
}
