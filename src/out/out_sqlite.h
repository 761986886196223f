/*
 * out_sqlite.h - `--format sqlite`: the whole analysis as one SQLite
 * database (the system's libsqlite3), for `callsight sql` and any SQL
 * client.  The schema, its version (OUT_SQLITE_SCHEMA_VERSION, in the
 * `meta` table) and the queries it was made for are in docs/sql.md.
 *
 * It is a sink (analysis/sink.h) as the timelines are: each call goes out
 * as a row of `slice_data` when its frame closes, through one prepared
 * statement inside one transaction, so memory stays flat however long the
 * trace (a stack of slice ids per thread, as deep as its shadow stack, the
 * per-thread function totals and the caller-callee pairs' totals).  Names are known only after the pass,
 * so a slice holds its function's id and the `slice` view joins the name;
 * out_sqlite_finish writes the tables the JSON report is written from (the
 * same structures, so the same numbers), then builds the indexes.
 *
 * Strings from a trace or a binary go in as bound parameters, never as
 * SQL text, made valid UTF-8 first (textesc.h, TEXTESC_UTF8: other bytes
 * become \xNN); a reader escapes control bytes for its own output.
 */
#ifndef CALLSIGHT_OUT_SQLITE_H
#define CALLSIGHT_OUT_SQLITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/sink.h"
#include "lib/u64map.h"
#include "out.h"

#define OUT_SQLITE_SCHEMA_VERSION 1
#define OUT_SQLITE_FORMAT "callsight-sql"

struct sqlite3;
struct sqlite3_stmt;

/* One thread's open frames: the slice id each was given (0: not stored)
 * and its function (OUT_SQLITE_UNKNOWN: a placeholder's). */
#define OUT_SQLITE_UNKNOWN UINT32_MAX
struct out_sqlite_frame {
    uint64_t id;
    uint32_t func;
};
struct out_sqlite_stack {
    struct out_sqlite_frame *v;
    size_t n, cap;
};

/* Calls of one function made directly from another, summed as they
 * return (call_edge_data). */
struct out_sqlite_edge {
    uint32_t caller, callee;
    uint64_t calls, dur_ns, self_ns;
};

struct out_sqlite {
    const struct analysis *a;
    struct sqlite3 *db;
    struct sqlite3_stmt *slice, *cut; /* the two inserts the pass runs */
    struct out_sqlite_stack *stacks;  /* by analysis thread index */
    size_t capstacks;
    uint64_t next_id;                 /* slice ids, from 1, in the order frames opened */
    uint64_t slices, cuts;            /* rows written */
    /* Per (thread, function) totals, for thread_func_stats: entries whose
     * addr is the function id and bin the thread index. */
    struct funcstats_entry *tf;
    size_t ntf, captf;
    struct u64map tf_index;           /* thread << 32 | function -> position in tf */
    struct out_sqlite_edge *edges;    /* by (caller, callee) of the calls stored */
    size_t nedges, capedges;
    struct u64map edge_index;         /* caller << 32 | callee -> position in edges */
    int oom;
    char err[256];                    /* the first error, when set */
    FILE *progress;                   /* a terminal for a progress line (the caller's), or NULL */
    int progress_shown;               /* ... a line is there to clear */
};

#define OUT_SQLITE_PROGRESS ((uint64_t)1 << 20) /* calls between two progress lines */

/* Create the database at path (an empty or new file) with the schema and
 * begin the load.  0 ok; -1 with a message in q->err. */
int out_sqlite_init(struct out_sqlite *q, const struct analysis *a, const char *path);
void out_sqlite_free(struct out_sqlite *q);
struct sink out_sqlite_sink(struct out_sqlite *q);
/* After the pass and naming: every table, the indexes, closed.  0 ok; -1
 * with a message in q->err. */
int out_sqlite_finish(struct out_sqlite *q, const struct out_view *v);

#endif
