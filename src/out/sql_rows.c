/*
 * sql_rows.c - a query's rows as a table, CSV or JSON (see sql_rows.h).
 */
#include "sql_rows.h"

#include <math.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"

/* A blob as x'HEX', which SQL itself would read back. */
static char *blob_text(sqlite3_stmt *st, int i)
{
    static const char digit[] = "0123456789abcdef";
    const unsigned char *b = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    char *s = malloc(2 * n + 4);
    if (!s)
        return NULL;
    char *p = s;
    *p++ = 'x';
    *p++ = '\'';
    for (size_t k = 0; k < n; k++) {
        *p++ = digit[b[k] >> 4];
        *p++ = digit[b[k] & 15];
    }
    *p++ = '\'';
    *p = 0;
    return s;
}

/* Value i of the current row as text safe for a terminal (malloc'ed; NULL
 * out of memory); *num: it is a number (right-aligned in the table). */
static char *cell(sqlite3_stmt *st, int i, const char *null_text, int *num)
{
    int type = sqlite3_column_type(st, i);
    *num = type == SQLITE_INTEGER || type == SQLITE_FLOAT;
    if (type == SQLITE_NULL)
        return strdup(null_text);
    if (type == SQLITE_BLOB)
        return blob_text(st, i);
    const char *s = (const char *)sqlite3_column_text(st, i);
    if (!s)
        return NULL;
    size_t n = strlen(s), len = n < SIZE_MAX / 5 ? 4 * n + 1 : 0; /* every byte at most \xNN */
    char *e = len ? malloc(len) : NULL;
    return e ? textesc(e, len, s, TEXTESC_TERMINAL) : NULL;
}

/* Characters a terminal shows for s (escaped: ASCII, or whole UTF-8). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += (*p & 0xC0) != 0x80;
    return w;
}

static char *name_cell(sqlite3_stmt *st, int i)
{
    const char *s = sqlite3_column_name(st, i);
    size_t n = s ? strlen(s) : 0, len = n < SIZE_MAX / 5 ? 4 * n + 1 : 0;
    char *e = len ? malloc(len) : NULL;
    return e ? textesc(e, len, s ? s : "", TEXTESC_TERMINAL) : NULL;
}

struct table {
    int ncol;
    size_t *w;           /* each column's width */
    char **cells;        /* the rows measured, ncol each */
    unsigned char *num;  /* ... and whether each is a number */
    size_t rows;
};

static void put_cell(FILE *out, const struct table *t, int col, const char *s, int num)
{
    size_t pad = t->w[col] > width(s) ? t->w[col] - width(s) : 0;
    if (col)
        fputs("  ", out);
    if (num)
        fprintf(out, "%*s", (int)pad, "");
    fputs(s, out);
    if (!num && col + 1 < t->ncol) /* no trailing blanks */
        fprintf(out, "%*s", (int)pad, "");
}

static void put_row(FILE *out, const struct table *t, char **cells, const unsigned char *num)
{
    for (int j = 0; j < t->ncol; j++)
        put_cell(out, t, j, cells[j], num[j]);
    fputc('\n', out);
}

static void free_cells(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
}

/* One row's cells into cells[0..ncol), measured into t->w when measure
 * is set.  0 or -2. */
static int take_row(sqlite3_stmt *st, struct table *t, char **cells, unsigned char *num, int measure)
{
    for (int j = 0; j < t->ncol; j++) {
        int isnum;
        if (!(cells[j] = cell(st, j, "NULL", &isnum))) {
            free_cells(cells, (size_t)j);
            return -2;
        }
        num[j] = (unsigned char)isnum;
        size_t w = measure ? width(cells[j]) : 0;
        t->w[j] = w > t->w[j] ? w : t->w[j];
    }
    return 0;
}

/* The header, its rule and the rows measured. */
static int flush_measured(FILE *out, struct table *t, char **names)
{
    unsigned char *left = calloc((size_t)t->ncol, 1);
    if (!left)
        return -2;
    put_row(out, t, names, left);
    for (int j = 0; j < t->ncol; j++) {
        fputs(j ? "  " : "", out);
        for (size_t k = 0; k < t->w[j]; k++)
            fputc('-', out);
    }
    fputc('\n', out);
    for (size_t r = 0; r < t->rows; r++) {
        put_row(out, t, t->cells + r * (size_t)t->ncol, t->num + r * (size_t)t->ncol);
        free_cells(t->cells + r * (size_t)t->ncol, (size_t)t->ncol);
    }
    t->rows = 0;
    free(left);
    return 0;
}

static int print_table(FILE *out, sqlite3_stmt *st, int ncol)
{
    struct table t = {ncol, calloc((size_t)ncol, sizeof(size_t)),
                      calloc((size_t)ncol * SQL_ROWS_MEASURE, sizeof(char *)),
                      calloc((size_t)ncol * SQL_ROWS_MEASURE, 1), 0};
    char **names = calloc((size_t)ncol, sizeof *names);
    int rc = t.w && t.cells && t.num && names ? 0 : -2, step = SQLITE_ROW, flushed = 0;
    for (int j = 0; !rc && j < ncol; j++) {
        if (!(names[j] = name_cell(st, j)))
            rc = -2;
        else
            t.w[j] = width(names[j]);
    }
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (t.rows == SQL_ROWS_MEASURE && !flushed) {
            rc = flush_measured(out, &t, names);
            flushed = 1;
        }
        if (rc || (rc = take_row(st, &t, t.cells + t.rows * (size_t)ncol, t.num + t.rows * (size_t)ncol, !flushed)))
            break;
        if (!flushed) {
            t.rows++;
            continue;
        }
        put_row(out, &t, t.cells, t.num); /* measured enough: as it comes */
        free_cells(t.cells, (size_t)ncol);
    }
    if (!rc && step != SQLITE_DONE)
        rc = -1;
    if (!rc && !flushed)
        rc = flush_measured(out, &t, names); /* the header even for no rows: the columns say what was asked */
    free_cells(t.cells, t.rows * (size_t)ncol);
    if (names)
        free_cells(names, (size_t)ncol);
    free(names);
    free(t.w);
    free(t.cells);
    free(t.num);
    return rc;
}

/* A CSV field: quoted when it holds a comma, a quote or a blank at an end,
 * or is an empty string (so that it differs from NULL). */
static void csv_field(FILE *out, const char *s, int is_null)
{
    size_t n = strlen(s);
    if (!(is_null || (n && !strpbrk(s, ",\"") && s[0] != ' ' && s[n - 1] != ' '))) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
        return;
    }
    fputs(s, out);
}

static int print_csv(FILE *out, sqlite3_stmt *st, int ncol)
{
    int step, isnum;
    for (int j = 0; j < ncol; j++) {
        char *name = name_cell(st, j);
        if (!name)
            return -2;
        fputs(j ? "," : "", out);
        csv_field(out, name, 0);
        free(name);
    }
    fputc('\n', out);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        for (int j = 0; j < ncol; j++) {
            char *s = cell(st, j, "", &isnum);
            if (!s)
                return -2;
            fputs(j ? "," : "", out);
            csv_field(out, s, sqlite3_column_type(st, j) == SQLITE_NULL);
            free(s);
        }
        fputc('\n', out);
    }
    return step == SQLITE_DONE ? 0 : -1;
}

static int json_value(FILE *out, sqlite3_stmt *st, int j)
{
    int type = sqlite3_column_type(st, j);
    if (type == SQLITE_INTEGER)
        fprintf(out, "%lld", (long long)sqlite3_column_int64(st, j));
    else if (type == SQLITE_FLOAT && isfinite(sqlite3_column_double(st, j)))
        fprintf(out, "%.17g", sqlite3_column_double(st, j));
    else if (type == SQLITE_TEXT)
        textesc_put_json(out, (const char *)sqlite3_column_text(st, j));
    else if (type == SQLITE_BLOB) {
        char *s = blob_text(st, j);
        if (!s)
            return -2;
        textesc_put_json(out, s);
        free(s);
    } else
        fputs("null", out);
    return 0;
}

static int print_json(FILE *out, sqlite3_stmt *st, int ncol)
{
    int step, n = 0;
    fputc('[', out);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        fputs(n++ ? ",\n{" : "{", out);
        for (int j = 0; j < ncol; j++) {
            fputs(j ? ", " : "", out);
            textesc_put_json(out, sqlite3_column_name(st, j));
            fputs(": ", out);
            if (json_value(out, st, j) < 0)
                return -2;
        }
        fputc('}', out);
    }
    fputs("]\n", out);
    return step == SQLITE_DONE ? 0 : -1;
}

int sql_rows_print(FILE *out, sqlite3_stmt *st, enum sql_rows_style style)
{
    int ncol = sqlite3_column_count(st), step;
    if (!ncol) { /* nothing to show: run it */
        while ((step = sqlite3_step(st)) == SQLITE_ROW)
            ;
        return step == SQLITE_DONE ? 0 : -1;
    }
    if (style == SQL_ROWS_CSV)
        return print_csv(out, st, ncol);
    if (style == SQL_ROWS_JSON)
        return print_json(out, st, ncol);
    return print_table(out, st, ncol);
}
