/*
 * out_callers.c - the call-site table (see out_callers.h).
 */
#include "out_callers.h"

#include <stdlib.h>

#include "notes.h"
#include "report.h"

int out_callers_write(FILE *out, const struct out_view *v)
{
    const struct callsites *c = v->sites;
    uint32_t *order = callsites_by_incl(c);
    char site[1024], callee[1024];
    if (!order)
        return -1;
    notes_write_text(v->a, out);
    notes_write_filter(v->a, out);
    fprintf(out, "\n%10s %12s %12s  %s\n", "calls", "incl_ms", "self_ms", "call site -> function");
    size_t rows = v->top && v->top < c->nrows ? v->top : c->nrows;
    for (size_t i = 0; i < rows; i++) {
        const struct callsites_row *r = &c->rows[order[i]];
        report_label(v->site_syms ? &v->site_syms[r->site] : NULL,
                     (unsigned long long)c->sites.addr[r->site], site, sizeof site);
        report_label(v->funcs ? &v->funcs[r->func] : NULL,
                     (unsigned long long)v->a->funcs.v[r->func].addr, callee, sizeof callee);
        fprintf(out, "%10llu %12.3f %12.3f  %s%s -> %s\n", (unsigned long long)r->calls,
                (double)r->incl_ns / 1e6, (double)r->self_ns / 1e6, site,
                r->inlined ? " [inlined: call line unknown]" : "", callee);
    }
    free(order);
    return 0;
}
