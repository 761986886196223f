/*
 * report.h - the per-function table of `callsight analyze`.
 *
 *        calls      incl_ms      self_ms      p50_us      p99_us      max_us  function (file:line)
 *
 * One row per function, by self time descending; times in ms and us with
 * three decimals; the function as "name (file:line)" with the file's base
 * name, just "name" without line info, or its address in hex when it could
 * not be named.
 */
#ifndef CALLSIGHT_REPORT_H
#define CALLSIGHT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/funcstats.h"
#include "read/symbols.h"

/* syms is indexed like fs->v (NULL: all in hex); top 0 means every row;
 * only_called leaves out functions without calls (when filtering).  0 ok,
 * -1 out of memory. */
int report_table(FILE *out, const struct funcstats *fs, const struct symbol *syms, size_t top,
                 int only_called);
/* "name (file:line)" etc. for one function, into buf. */
void report_label(const struct symbol *sym, unsigned long long addr, char *buf, size_t len);

#endif
