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

/* A trace's analysis comes in three parts, each made by its own run of
 * analyze and used as soon as it is there: the report (JSON: the Report
 * page, in analyze's time for the JSON alone), the database (a function's
 * page, the timeline, the sources: the slowest to make, SQLite's load and
 * indexes) and the folded stacks (the flame graph). */
enum ui_part { UI_JSON, UI_DB, UI_FOLDED, UI_PARTS };

/* One part's state; lock is held while it is built and while a request
 * reads it, so a slow part never holds up a request for another. */
struct ui_built {
    pthread_mutex_t lock;
    uint64_t key;   /* the trace files' names, sizes and times it was built from (0: not built) */
    int built;      /* the part is current for key */
    char err[256];  /* why the last build failed */
};

/* One trace directory and its analysis. */
struct ui_trace {
    char *real;     /* its realpath */
    char *name;     /* "N" or "N/REL", as the API names it */
    int given;      /* index of the directory given it is in */
    struct ui_built part[UI_PARTS];
    char *json;     /* analyze's JSON report (UI_JSON) */
    size_t json_len;
    sqlite3 *db;    /* the database of another pass, read-only (UI_DB) */
    char *folded;   /* folded stacks (UI_FOLDED) */
    size_t folded_len;
    int queued;     /* waiting for the background builder (the traces' lock) */
    int cut_at_end; /* the report says a source's connection was cut and did not resume */
};

struct ui_traces {
    const char *self;              /* this callsight, to run analyze */
    char *dirs[UI_DIRS_MAX];       /* as given */
    char *reals[UI_DIRS_MAX];      /* their realpaths */
    size_t ndirs;
    const char *exes[UI_EXES_MAX]; /* --exe, passed to analyze */
    size_t nexes;
    char tmp[256];                 /* private directory for the builds, removed by close */
    pthread_mutex_t lock;          /* guards v, n, the queue, stop and kids */
    struct ui_trace *v[UI_TRACES_MAX];
    size_t n;
    /* Once a report is made, the database and folded stacks of the same
     * trace are made in the background, one trace at a time, so that the
     * other pages find them ready. */
    pthread_t builder;
    int builder_on;
    pthread_cond_t wake;
    struct ui_trace *queue[UI_TRACES_MAX];
    size_t nqueue;
    int stop;                      /* closing: no analyze started, those running killed */
    pid_t kids[8 + UI_TRACES_MAX]; /* analyze processes running */
    size_t nkids;
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

/* Lock tr's part and make it current: 0 (locked and built), or -1
 * (locked, tr->part[part].err says why).  ui_trace_unlock in both cases.
 * A report made sends the trace to the background builder. */
int ui_trace_use(struct ui_traces *t, struct ui_trace *tr, enum ui_part part);
void ui_trace_unlock(struct ui_trace *tr, enum ui_part part);

/* The trace files in dir: how many, their bytes, the newest modification
 * time (s since the epoch) and whether any is a stream's (trace.stream.*);
 * the key of their names, sizes and times. */
struct ui_dirstat {
    size_t files;
    uint64_t bytes;
    int64_t newest;
    int stream;
    uint64_t key;
    size_t links;   /* symbolic links named like trace files (not counted above) */
};
int ui_dirstat(const char *dir, struct ui_dirstat *st);

/* 1 when the trace at real (a realpath) was opened and its report, current
 * for key (ui_dirstat's), says a source's connection was cut at its end
 * (analyze's "cut_at_end"); 0 otherwise, and while its report is being
 * made (never waited for). */
int ui_traces_cut(struct ui_traces *t, const char *real, uint64_t key);

/* The names of the directories directly under given directory i that hold
 * trace files, as "i/REL", at most max, each malloc'd; their number. */
size_t ui_traces_list_sub(struct ui_traces *t, size_t i, char **names, size_t max);

/* Run this callsight with argv (argv[0] is ignored: t->self goes there),
 * its stdout and stderr captured into buf (at most len - 1 bytes, the rest
 * read and dropped; NUL-terminated).  Its exit status, or -1 with why in
 * buf when it could not be run. */
int ui_run(struct ui_traces *t, char **argv, char *buf, size_t len);

#endif
