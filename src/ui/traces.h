/*
 * traces.h - the trace directories `callsight ui` was given, and each
 * one's analysis, made by `callsight analyze` itself.
 *
 * A trace is named in the API as "N" (the N-th directory given, from 0) or
 * "N/REL" (a directory under it); the name is resolved with realpath and
 * refused unless it stays under the given directory, so neither ".." nor a
 * symlink reaches anything else.  Its analysis is made on first use, and
 * again when its trace files change, by running `callsight analyze DIR
 * --exe ... --format json`, `--format sqlite` and `--format folded` into a
 * private temporary directory: the API's report is analyze's, byte for
 * byte, and the rest is read from the same pass's database.
 */
#ifndef CALLSIGHT_UI_TRACES_H
#define CALLSIGHT_UI_TRACES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define UI_TRACES_MAX 64 /* traces open at once: directories given and under them */
#define UI_DIRS_MAX 16   /* directories on the command line */
#define UI_EXES_MAX 16   /* --exe */

/* One trace directory and its analysis.  lock is held while it is built
 * and while a request reads it. */
struct ui_trace {
    pthread_mutex_t lock;
    char *real;     /* its realpath */
    char *name;     /* "N" or "N/REL", as the API names it */
    int given;      /* index of the directory given it is in */
    uint64_t key;   /* the trace files' names, sizes and times it was built from (0: not built) */
    int built;      /* json, db and folded are current for key */
    char *json;     /* analyze's JSON report */
    size_t json_len;
    sqlite3 *db;    /* the same pass's database, read-only */
    char *folded;   /* the same pass's folded stacks */
    size_t folded_len;
    char err[256];  /* why the last build failed */
};

struct ui_traces {
    const char *self;              /* this callsight, to run analyze */
    char *dirs[UI_DIRS_MAX];       /* as given */
    char *reals[UI_DIRS_MAX];      /* their realpaths */
    size_t ndirs;
    const char *exes[UI_EXES_MAX]; /* --exe, passed to analyze */
    size_t nexes;
    char tmp[256];                 /* private directory for the builds, removed by close */
    pthread_mutex_t lock;          /* guards v and n */
    struct ui_trace *v[UI_TRACES_MAX];
    size_t n;
};

/* Takes the directories (each must exist) and exes; makes the private
 * directory.  0, or -1 with err set. */
int ui_traces_open(struct ui_traces *t, const char *self, char **dirs, size_t ndirs, const char **exes,
                   size_t nexes, char *err, size_t errlen);
void ui_traces_close(struct ui_traces *t);

/* The trace the API name names, or NULL with *status an HTTP status (400
 * malformed, 403 outside the directories given, 404 no such directory or
 * no trace files, 503 too many open) and why in err. */
struct ui_trace *ui_traces_find(struct ui_traces *t, const char *name, int *status, char *err, size_t errlen);

/* Lock tr and make its analysis current: 0 (locked and built), or -1
 * (locked, tr->err says why).  ui_trace_unlock in both cases. */
int ui_trace_use(struct ui_traces *t, struct ui_trace *tr);
void ui_trace_unlock(struct ui_trace *tr);

/* The trace files in dir: how many, their bytes, the newest modification
 * time (s since the epoch) and whether any is a stream's (trace.stream.*);
 * the key of their names, sizes and times. */
struct ui_dirstat {
    size_t files;
    uint64_t bytes;
    int64_t newest;
    int stream;
    uint64_t key;
};
int ui_dirstat(const char *dir, struct ui_dirstat *st);

/* The names of the directories directly under given directory i that hold
 * trace files, as "i/REL", at most max, each malloc'd; their number. */
size_t ui_traces_list_sub(struct ui_traces *t, size_t i, char **names, size_t max);

/* Run this callsight with argv (argv[0] is ignored: t->self goes there),
 * its stdout and stderr captured into buf (at most len - 1 bytes, the rest
 * read and dropped; NUL-terminated).  Its exit status, or -1 with why in
 * buf when it could not be run. */
int ui_run(struct ui_traces *t, char **argv, char *buf, size_t len);

#endif
