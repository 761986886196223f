/*
 * sql.c - `callsight sql DB|DIR 'SELECT ...'`: SQL on a trace's database
 * (analyze --format sqlite, docs/sql.md).
 *
 * Given a trace directory, the database is a cache beside the traces,
 * DIR/.callsight.db, built by running `callsight analyze DIR --format
 * sqlite` as a process (commands never call each other) and kept while
 * the traces do not change: its meta table holds a key made of every
 * trace file's name, size and modification time and each --exe's, and a
 * differing key, or another schema version, builds it again.  Queries run
 * on a read-only connection, so no statement can change a database or
 * create a file; the rows are printed by out/sql_rows.c.
 */
#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "lib/proc.h"
#include "lib/textesc.h"
#include "out/out_sqlite.h"
#include "out/sql_rows.h"

#define PROG "callsight sql"
#define CACHE_NAME ".callsight.db"
#define SCRIPT_MAX (16u << 20) /* bytes of a -f script read, at most */
#define MAX_EXES 16            /* analyze's ANALYSIS_MAX_EXES */

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight sql DB SQL [--csv | --json]\n"
"       callsight sql DIR --exe BIN [--exe BIN2 ...] SQL [--csv | --json] [--rebuild]\n"
"       callsight sql DB|DIR ... -f FILE\n"
"\n"
"Run SQL on a trace's SQLite database and print the rows.  DB is a file\n"
"written by 'callsight analyze --format sqlite -o DB'; DIR is a trace\n"
"directory, whose database is built in DIR/" CACHE_NAME " (by 'callsight\n"
"analyze DIR --exe BIN ... --format sqlite') and used again until a trace\n"
"file or an --exe binary changes (name, size or modification time), or\n"
"the schema version does.  The schema, with queries to start from, is in\n"
"docs/sql.md: tables meta, source, process, thread, module, function,\n"
"slice (one row per call: id, ts, dur, self_dur, depth, parent_id,\n"
"thread_id, function_id, name, call_site), cut_frame, func_stats,\n"
"thread_func_stats, func_hist, interval_stats, notes, trigger_call,\n"
"trigger_frame, call_edge_data; views hot_functions, slowest_calls,\n"
"call_edges, callers, callees.\n"
"\n"
"  SQL          one or more statements, separated by ';'\n"
"  -f FILE      read the statements from FILE instead ('-': stdin)\n"
"  --csv        CSV (RFC 4180): a header line, then one line per row; NULL\n"
"               is an empty field, an empty string \"\"\n"
"  --json       each statement's rows as one JSON array of objects, a row\n"
"               a line\n"
"  --exe BIN    the traced binary, for names (DIR only; as analyze's --exe)\n"
"  --rebuild    build DIR's database again even if it looks current\n"
"  -h, --help   this text\n"
"\n"
"The default output is a table: a header, a rule, then the rows, columns as\n"
"wide as their widest value in the first %u rows, numbers right-aligned,\n"
"NULL shown as NULL.  Control bytes and bytes that are not UTF-8 in a value\n"
"are shown as \\xNN in the table and in CSV, escaped in JSON; a blob is\n"
"x'HEX'.  The database is opened read-only: statements that write fail.\n"
"\n"
"Exit status: 0 success, 1 error (an SQL error is reported with SQLite's\n"
"message and its offset in the SQL; a database that cannot be opened or\n"
"built), 2 usage error.\n",
            SQL_ROWS_MEASURE);
}

struct options {
    const char *target;
    const char *sql;
    const char *script;
    const char *exes[MAX_EXES];
    size_t nexes;
    enum sql_rows_style style;
    int rebuild;
};

static int usage_error(const char *msg)
{
    fprintf(stderr, PROG ": %s (try 'callsight sql --help')\n", msg);
    return 2;
}

/* An argument that is SQL, not an option: SQL may begin with a comment
 * ("-- ...") but an option holds no blank. */
static int is_option(const char *s)
{
    return s[0] == '-' && s[1] && !strpbrk(s, " \t\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--csv") || !strcmp(a, "--json")) {
            if (o->style != SQL_ROWS_TABLE)
                return usage_error("give one of --csv and --json");
            o->style = a[2] == 'c' ? SQL_ROWS_CSV : SQL_ROWS_JSON;
        } else if (!strcmp(a, "--rebuild"))
            o->rebuild = 1;
        else if (!strcmp(a, "-f") || !strcmp(a, "--exe")) {
            if (!more)
                return usage_error(a[1] == 'f' ? "-f needs a FILE" : "--exe needs a BIN");
            if (a[1] == 'f')
                o->script = argv[++i];
            else if (o->nexes == MAX_EXES)
                return usage_error("too many --exe (16 at most)");
            else
                o->exes[o->nexes++] = argv[++i];
        } else if (is_option(a)) {
            fprintf(stderr, PROG ": unknown option '");
            textesc_put(stderr, a);
            fprintf(stderr, "' (try 'callsight sql --help')\n");
            return 2;
        } else if (!o->target)
            o->target = a;
        else if (!o->sql)
            o->sql = a;
        else
            return usage_error("one SQL argument (quote it), or -f FILE");
    }
    if (!o->target)
        return usage_error("give a database or a trace directory, and SQL");
    if (!o->sql == !o->script)
        return usage_error(o->sql ? "give SQL or -f FILE, not both" : "give SQL to run, or -f FILE");
    return 0;
}

/* 64-bit FNV-1a: the cache key needs to change with its input, nothing
 * more (it is no defence against anyone). */
static void hash(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= 0x100000001b3ull;
    }
}

static void hash_file(uint64_t *h, const char *name, const struct stat *st)
{
    int64_t v[3] = {(int64_t)st->st_size, (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec};
    hash(h, name, strlen(name) + 1);
    hash(h, v, sizeof v);
}

static int is_trace(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return !strncmp(d->d_name, "trace.", 6) && n > 10 && !strcmp(d->d_name + n - 4, ".bin");
}

/* The key of DIR's traces and the --exe binaries, as 16 hex digits.  0, or
 * 1 said. */
static int cache_key(const struct options *o, char key[17])
{
    struct dirent **list;
    struct stat st;
    char path[4096];
    uint64_t h = 0xcbf29ce484222325ull;
    int n = scandir(o->target, &list, is_trace, alphasort);
    if (n < 0) {
        fprintf(stderr, PROG ": %s: %s\n", o->target, strerror(errno));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (snprintf(path, sizeof path, "%s/%s", o->target, list[i]->d_name) < (int)sizeof path &&
            stat(path, &st) == 0)
            hash_file(&h, list[i]->d_name, &st);
        free(list[i]);
    }
    free(list);
    for (size_t i = 0; i < o->nexes; i++)
        if (stat(o->exes[i], &st) == 0)
            hash_file(&h, o->exes[i], &st);
    snprintf(key, 17, "%016llx", (unsigned long long)h);
    return 0;
}

/* The database's meta value of key as text into buf; 0 when it has none. */
static int meta_text(sqlite3 *db, const char *key, char *buf, size_t len)
{
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

/* The cache is current: built for this key, with this schema, and ours: a
 * regular file (never a FIFO, which would block the open) that this user
 * owns and nobody else may write, so that whoever else can write DIR
 * cannot plant a database with a key that matches.  One that is not is
 * built again (analyze renames the new one over it). */
static int cache_current(const char *path, const char *key)
{
    sqlite3 *db = NULL;
    char have[64], version[16];
    struct stat st;
    int ok = lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) &&
             sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
             meta_text(db, "cache_key", have, sizeof have) && !strcmp(have, key) &&
             meta_text(db, "schema_version", version, sizeof version) &&
             atoi(version) == OUT_SQLITE_SCHEMA_VERSION;
    sqlite3_close(db);
    return ok;
}

/* Run `callsight analyze DIR --exe BIN... --format sqlite -o PATH`, its
 * messages on our stderr, then mark the database with the key.  0, or 1
 * said. */
static int cache_build(const struct options *o, const char *path, const char *key)
{
    char self[4096], dirbuf[4096], err[256];
    char *argv[8 + 2 * MAX_EXES];
    int n = 0;
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    const char *dir = proc_arg_path(o->target, dirbuf, sizeof dirbuf);
    if (len <= 0 || !dir) {
        fprintf(stderr, PROG ": %s: %s\n", len <= 0 ? "/proc/self/exe" : o->target,
                strerror(len <= 0 ? errno : ENAMETOOLONG));
        return 1;
    }
    self[len] = 0;
    argv[n++] = self;
    argv[n++] = "analyze";
    argv[n++] = (char *)dir;
    for (size_t i = 0; i < o->nexes; i++) {
        argv[n++] = "--exe";
        argv[n++] = (char *)o->exes[i];
    }
    argv[n++] = "--format";
    argv[n++] = "sqlite";
    argv[n++] = "-o";
    argv[n++] = (char *)path;
    argv[n] = NULL;
    pid_t pid = proc_start(argv, NULL, STDERR_FILENO, NULL, NULL, err, sizeof err);
    if (pid < 0) {
        textesc_say(PROG, err);
        return 1;
    }
    int status = proc_wait(pid);
    if (status != 0) {
        fprintf(stderr, PROG ": building %s failed (analyze's status %d)\n", path, status);
        return 1;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int bad = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
              sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES ('cache_key', ?1)", -1, &st, NULL) !=
                  SQLITE_OK ||
              sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE;
    if (bad)
        fprintf(stderr, PROG ": %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return bad;
}

/* DIR's database, built when it is not current; its path in buf.  0, or 1
 * said, or 2 for usage. */
static int cache_path(const struct options *o, char *buf, size_t len)
{
    char key[17];
    if (!o->nexes)
        return usage_error("a trace directory needs --exe BIN, the traced binary, as analyze does");
    if (snprintf(buf, len, "%s/" CACHE_NAME, o->target) >= (int)len) {
        fprintf(stderr, PROG ": %s: %s\n", o->target, strerror(ENAMETOOLONG));
        return 1;
    }
    int rc = cache_key(o, key);
    if (rc || (!o->rebuild && cache_current(buf, key)))
        return rc;
    struct stat st; /* something else at the cache's name is not ours to remove */
    if (lstat(buf, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, PROG ": ");
        textesc_put(stderr, buf);
        fprintf(stderr, ": not a regular file, so not a cache of ours: remove it, or query a database file\n");
        return 1;
    }
    return cache_build(o, buf, key);
}

/* The whole of FILE ('-': stdin), at most SCRIPT_MAX bytes; NULL said. */
static char *read_script(const char *name)
{
    FILE *f = strcmp(name, "-") ? fopen(name, "rb") : stdin;
    char *s = f ? malloc(SCRIPT_MAX + 1) : NULL;
    size_t n = s ? fread(s, 1, SCRIPT_MAX + 1, f) : 0;
    const char *why = !f ? strerror(errno) : !s ? "out of memory" : ferror(f) ? "read error"
                      : n > SCRIPT_MAX ? "longer than 16 MiB" : NULL;
    if (f && f != stdin)
        fclose(f);
    if (why) {
        fprintf(stderr, PROG ": -f ");
        textesc_put(stderr, name);
        fprintf(stderr, ": %s\n", why);
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

/* An SQL error, with where in the SQL it is when SQLite says. */
static void sql_error(sqlite3 *db, size_t base)
{
    char msg[700];
    int off = -1;
#if SQLITE_VERSION_NUMBER >= 3038000
    off = sqlite3_error_offset(db);
#endif
    if (off >= 0)
        snprintf(msg, sizeof msg, "%s (at offset %zu of the SQL)", sqlite3_errmsg(db), base + (size_t)off);
    else
        snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(db));
    textesc_say(PROG, msg);
}

/* Every statement of sql, in order; the first error stops them.  The exit
 * status. */
static int run_sql(sqlite3 *db, const char *sql, enum sql_rows_style style)
{
    const char *p = sql;
    int ran = 0;
    while (*p) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(db, p, -1, &st, &tail) != SQLITE_OK) {
            sql_error(db, (size_t)(p - sql));
            return 1;
        }
        if (!st) { /* blanks, a comment or an empty statement (";;"): on to the next */
            if (!tail || tail == p)
                break;
            p = tail;
            continue;
        }
        ran = 1;
        int rc = sql_rows_print(stdout, st, style);
        if (rc == -1)
            sql_error(db, (size_t)(p - sql));
        else if (rc == -2)
            fprintf(stderr, PROG ": out of memory\n");
        sqlite3_finalize(st);
        if (rc)
            return 1;
        p = tail;
    }
    if (!ran)
        return usage_error("no SQL statement to run");
    return 0;
}

static int query(const struct options *o, const char *path, const char *sql)
{
    struct stat st;
    sqlite3 *db = NULL;
    const char *bad = stat(path, &st) != 0 ? strerror(errno)
                      : !S_ISREG(st.st_mode) ? "not a regular file (a database is one)" /* a FIFO would block */
                                             : NULL;
    if (bad) {
        fprintf(stderr, PROG ": ");
        textesc_put(stderr, path);
        fprintf(stderr, ": %s\n", bad);
        return 1;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": ");
        textesc_put(stderr, path);
        fprintf(stderr, ": %s\n", db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return 1;
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    /* SQLite reads the file at the first statement that needs it: read it
     * now, so a file that is no database is said as such even for SELECT 1 */
    if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": ");
        textesc_put(stderr, path);
        fprintf(stderr, ": %s\n", sqlite3_errmsg(db));
        sqlite3_close(db);
        return 1;
    }
    int rc = run_sql(db, sql, o->style);
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, PROG ": writing the rows: %s\n", strerror(errno));
        rc = 1;
    }
    sqlite3_close(db);
    return rc;
}

int cmd_sql(int argc, char **argv)
{
    struct options o = {0};
    struct stat st;
    char path[4096];
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    const char *db = o.target;
    if (stat(o.target, &st) == 0 && S_ISDIR(st.st_mode)) {
        if ((rc = cache_path(&o, path, sizeof path)))
            return rc;
        db = path;
    } else if (o.nexes || o.rebuild)
        return usage_error("--exe and --rebuild are for a trace directory");
    char *script = o.script ? read_script(o.script) : NULL;
    if (o.script && !script)
        return 1;
    rc = query(&o, db, script ? script : o.sql);
    free(script);
    return rc;
}
