/*
 * sql_rows.h - a query's rows printed for `callsight sql`: an aligned
 * table, CSV or JSON.
 *
 * Values come from a database whose strings came from traces, so nothing
 * reaches the output raw: in the table and in CSV a control byte or a
 * byte that is not UTF-8 is shown as \xNN (textesc.h, TEXTESC_TERMINAL),
 * in JSON the string is escaped as JSON (textesc_put_json).  A blob is
 * shown as x'HEX'.  Memory is bounded: the table measures its columns on
 * its first SQL_ROWS_MEASURE rows, prints them, then prints the rest as
 * they come in those widths (a longer value only pushes its row out).
 */
#ifndef CALLSIGHT_SQL_ROWS_H
#define CALLSIGHT_SQL_ROWS_H

#include <stdio.h>

#define SQL_ROWS_MEASURE 1000

struct sqlite3_stmt;

enum sql_rows_style {
    SQL_ROWS_TABLE, /* a header, then rows; numbers right-aligned; NULL as NULL */
    SQL_ROWS_CSV,   /* RFC 4180: a header line, CRLF-free, quoted where needed; NULL empty */
    SQL_ROWS_JSON   /* one array of objects per statement, a row a line */
};

/* Step st to its end, printing its rows to out (a statement without
 * columns prints nothing).  0 ok; -1 on an SQL error (the caller reports
 * sqlite3_errmsg); -2 out of memory. */
int sql_rows_print(FILE *out, struct sqlite3_stmt *st, enum sql_rows_style style);

#endif
