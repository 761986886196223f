/*
 * report.c - print the per-function table (see report.h).
 */
#include "report.h"

#include <string.h>
#include <stdlib.h>

#include "lib/textesc.h"

#define REPORT_NAME_MAX 600 /* bytes of a name a row shows; a longer one loses its middle */

/* Name, module and file come from the binaries and paths a device names:
 * the label is escaped for the terminal, so that an ESC there drives no
 * terminal and a newline forges no row (the stored names stay as they are,
 * keys for matching). */
void report_label(const struct symbol *sym, unsigned long long addr, char *buf, size_t len)
{
    char raw[1024], in[300] = "", mid[REPORT_NAME_MAX + 8];
    if (!sym || !sym->name) {
        snprintf(buf, len, "0x%llx", addr);
        return;
    }
    const char *name = sym->name;
    size_t n = strlen(name);
    if (n > REPORT_NAME_MAX) { /* C++ templates: keep both ends, so the method and file:line stay */
        size_t head = REPORT_NAME_MAX / 2, tail = REPORT_NAME_MAX - head - 3;
        snprintf(mid, sizeof mid, "%.*s...%s", (int)head, name, name + n - tail);
        name = mid;
    }
    if (sym->module)
        snprintf(in, sizeof in, " [%s]", sym->module);
    if (!sym->file || !sym->line) {
        snprintf(raw, sizeof raw, "%s%s", name, in);
    } else {
        const char *base = strrchr(sym->file, '/');
        snprintf(raw, sizeof raw, "%s%s (%s:%lu)", name, in, base ? base + 1 : sym->file, sym->line);
    }
    textesc(buf, len, raw, TEXTESC_TERMINAL);
}

int report_table(FILE *out, const struct funcstats *fs, const struct symbol *syms, size_t top,
                 int only_called)
{
    uint32_t *order = funcstats_by_self(fs);
    char label[1024];
    if (!order)
        return -1;
    fprintf(out, "%10s %12s %12s %11s %11s %11s  %s\n", "calls", "incl_ms", "self_ms", "p50_us",
            "p99_us", "max_us", "function (file:line)");
    for (size_t i = 0, rows = 0; i < fs->n && (!top || rows < top); i++) {
        const struct funcstats_entry *e = &fs->v[order[i]];
        if (only_called && !e->calls)
            continue;
        rows++;
        report_label(syms ? &syms[order[i]] : NULL, (unsigned long long)e->addr, label,
                     sizeof label);
        char calls[24]; /* ">=N": a summary row that is a lower bound (funcstats.h) */
        snprintf(calls, sizeof calls, "%s%llu", e->lower_bound ? ">=" : "", (unsigned long long)e->calls);
        fprintf(out, "%10s %12.3f %12.3f %11.3f %11.3f %11.3f  %s\n",
                calls, (double)e->incl_ns / 1e6, (double)e->self_ns / 1e6,
                (double)hist_percentile(&e->lat, 50) / 1e3,
                (double)hist_percentile(&e->lat, 99) / 1e3, (double)e->lat.max / 1e3, label);
    }
    free(order);
    return 0;
}
