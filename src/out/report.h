/*
 * report.h - the per-function table of `callsight analyze`, and its
 * per-thread table (--threads).
 *
 *   calls  incl_ms  self_ms  self%       mean     min    p50    p99         max  function (file:line)
 *    1000  500.500  500.500  100.0  500.500us  1000ns  504us  991us  1000.000us  helper (tiny.c:2)
 *
 * One row per function, by self time descending unless sorted otherwise
 * (--sort); then, after --top N rows, one line for the rest: "N more
 * functions (X ms self, Y calls); --top 0 shows all".  The sums (incl,
 * self) have their unit in the header, ms, or s when the column's largest
 * value would need five digits before the point; a call's times (mean,
 * min, p50, p99, max) each carry their own, ns, us, ms or s, the one that
 * gives at most four digits before the point, so a 50 ns call and a 12 ms
 * one both read in one column.  Every column is as wide as its widest
 * cell, so rows are aligned whatever the values.  Exact values (sums,
 * means from the exact sum, min, max) have three decimals (whole ns in
 * ns); percentiles estimated from a histogram (within 1.6%, hist.h) three
 * significant digits (four from 1000 to 1999 of a power of ten: within 2%
 * in all).  self% is the function's share of the sum of every function's
 * self time in the table (the calls selected), which is the traced time
 * of all threads.
 *
 * The function is "name (file:line)" with the file's base name, just
 * "name" without line info, or its address in hex when it could not be
 * named; C++ names short by default: long template argument and
 * parameter lists collapsed to <...> and (...), the return type left out
 * (report_short_name).
 */
#ifndef CALLSIGHT_REPORT_H
#define CALLSIGHT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "analysis/funcstats.h"
#include "read/symbols.h"

/* Which rows, in which order, named how. */
struct report_opts {
    size_t top;                 /* rows printed, 0 all */
    int only_called;            /* leave out functions without calls (when filtering) */
    enum funcstats_key sort;    /* --sort (FUNCSTATS_BY_SELF: the default) */
    const char *const *match;   /* --match globs: a row is kept if one matches its name */
    size_t nmatch;
    const char *const *exclude; /* --exclude globs: a row one matches is left out */
    size_t nexclude;
    int long_names;             /* --long-names: C++ names in full */
    size_t columns;             /* a terminal's width to fit rows to (0: no limit, --wide) */
};

/* The rows a table shows, in its order (o NULL: every function, by self
 * time), syms indexed like fs->v (NULL: all in hex); malloc'ed, *n long,
 * NULL when out of memory. */
uint32_t *report_rows(const struct funcstats *fs, const struct symbol *syms, const struct report_opts *o,
                      size_t *n);
/* The function table.  0 ok, -1 out of memory. */
int report_table(FILE *out, const struct funcstats *fs, const struct symbol *syms, const struct report_opts *o);
/* --threads: one row per thread with events or losses (the selected
 * ones, with --thread), by self time (or by calls, or name, as o->sort asks): source, tid, calls, events, self
 * time and share, events lost, span, name.  0 ok, -1 out of memory. */
int report_threads(FILE *out, const struct analysis *a, const struct report_opts *o);
/* Each --match or --exclude glob that matches no function with calls is
 * said on stderr as prog's, with the nearest names there are: 1 when a
 * --match matched none (an error: nothing would be shown), else 0. */
int report_check_filters(const char *prog, const struct funcstats *fs, const struct symbol *syms,
                         const struct report_opts *o);
/* "name (file:line)" etc. for one function, into buf, escaped for the
 * terminal; the _short form with report_short_name's name. */
void report_label(const struct symbol *sym, unsigned long long addr, char *buf, size_t len);
void report_label_short(const struct symbol *sym, unsigned long long addr, char *buf, size_t len);
/* A demangled name with its long template argument and parameter lists
 * (over 24 characters, or holding a template) collapsed and its return
 * type left out:
 * "int ns::Map<std::__cxx11::basic_string<char, ...> >::get(std::__cxx11::basic_string<...> const&) const"
 * -> "ns::Map<...>::get(...) const"; short lists stay, so that Box<int>
 * and Box<double>, area(int, int) and area(double) stay apart; C names
 * are unchanged. */
void report_short_name(const char *name, char *buf, size_t len);
/* s cut to width columns by taking out its middle ("head...tail"), so that
 * the ends, a function and its file:line, stay (UTF-8 kept whole). */
void report_elide(char *s, size_t width);

#endif
