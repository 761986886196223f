/*
 * report.c - print the per-function and per-thread tables (see report.h).
 *
 * A table is made in two passes over the rows it prints: the first finds
 * the sums' units (from their largest values) and each column's width
 * (its widest cell), the second prints; so a call of a minute lines up
 * with one of a microsecond.
 */
#include "report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "lib/textesc.h"

#define REPORT_NAME_MAX 600 /* bytes of a name a row shows; a longer one loses its middle */
#define REPORT_SHORT_ARGS 24 /* a short name keeps argument lists up to this long, without templates */

/* ---- names ---------------------------------------------------------------- */

/* Append c to buf at *k (len bytes, NUL kept room for). */
static void put(char *buf, size_t len, size_t *k, char c)
{
    if (*k + 1 < len)
        buf[(*k)++] = c;
}

/* The end of the bracket opened at s[0] ('<', '(', '{' or '['): the
 * matching close, counting every kind inside, or NULL when unbalanced. */
static const char *closing(const char *s)
{
    char stack[64];
    size_t depth = 0;
    for (; *s; s++) {
        char c = *s;
        if (c == '<' || c == '(' || c == '{' || c == '[') {
            if (depth == sizeof stack)
                return NULL;
            stack[depth++] = c == '<' ? '>' : c == '(' ? ')' : c == '{' ? '}' : ']';
        } else if (depth && c == stack[depth - 1] && !--depth) {
            return s;
        } else if (c == '>' && depth && stack[depth - 1] != '>') {
            continue; /* "->" inside parentheses */
        }
    }
    return NULL;
}

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

void report_short_name(const char *name, char *buf, size_t len)
{
    size_t k = 0, start = 0;
    int params = 0; /* the parameter list was passed: later spaces are qualifiers' */
    for (const char *s = name; *s;) {
        const char *end;
        if (!strncmp(s, "operator", 8) && (s == name || !word_char(s[-1])) && !word_char(s[8])) {
            /* operator<<, operator(), operator new[]: its symbol up to the parameters */
            const char *p = s + 8;
            if (!strncmp(p, "()", 2))
                p += 2;
            while (*p && *p != '(')
                p++;
            while (s < p)
                put(buf, len, &k, *s++);
            continue;
        }
        if (!strncmp(s, "(anonymous namespace)", 21)) {
            for (int i = 0; i < 21; i++)
                put(buf, len, &k, *s++);
            continue;
        }
        if ((*s == '{' || *s == '[') && (end = closing(s))) { /* {lambda(int)#1}, [abi:cxx11], [clone .cold] */
            while (s <= end)
                put(buf, len, &k, *s++);
            continue;
        }
        if ((*s == '<' || *s == '(') && (end = closing(s))) {
            /* a short list stays, so that Box<int> and Box<double>, f(int)
             * and f(char) stay apart; a long or nested one is collapsed */
            int keep = end - s - 1 <= REPORT_SHORT_ARGS && !memchr(s + 1, '<', (size_t)(end - s - 1));
            params |= *s == '(';
            if (keep) {
                while (s <= end)
                    put(buf, len, &k, *s++);
                continue;
            }
            put(buf, len, &k, *s);
            for (int i = 0; i < 3; i++)
                put(buf, len, &k, '.');
            put(buf, len, &k, *end);
            s = end + 1;
            continue;
        }
        if (*s == ' ' && !params && s[1] && s[1] != '(' && s[1] != '[')
            start = k + 1; /* a return type before the name */
        put(buf, len, &k, *s++);
    }
    buf[k] = 0;
    if (params && start && start < k) /* only a function's name, "int f(int)", has a return type */
        memmove(buf, buf + start, k - start + 1);
}

static void label_of(const struct symbol *sym, unsigned long long addr, int shortn, char *buf, size_t len)
{
    char in[300] = "", mid[REPORT_NAME_MAX + 8], brief[4096];
    char raw[sizeof brief + sizeof in + 64]; /* a name, its module and file:line whole (buf cuts) */
    if (!sym || !sym->name) {
        snprintf(buf, len, "0x%llx", addr);
        return;
    }
    const char *name = sym->name;
    if (shortn) {
        report_short_name(name, brief, sizeof brief);
        name = brief;
    }
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

/* Name, module and file come from the binaries and paths a device names:
 * the label is escaped for the terminal, so that an ESC there drives no
 * terminal and a newline forges no row (the stored names stay as they are,
 * keys for matching). */
void report_label(const struct symbol *sym, unsigned long long addr, char *buf, size_t len)
{
    label_of(sym, addr, 0, buf, len);
}

void report_label_short(const struct symbol *sym, unsigned long long addr, char *buf, size_t len)
{
    label_of(sym, addr, 1, buf, len);
}

/* s[0..n) cut to width by taking out bytes [head, n - tail) for "...". */
static void cut_middle(char *s, size_t n, size_t head, size_t tail)
{
    size_t from = head, to = n - tail;
    while (from && ((unsigned char)s[from] & 0xc0) == 0x80) /* not inside a UTF-8 character */
        from--;
    while (to < n && ((unsigned char)s[to] & 0xc0) == 0x80)
        to++;
    memcpy(s + from, "...", 3);
    memmove(s + from + 3, s + to, strlen(s + to) + 1);
}

void report_elide(char *s, size_t width)
{
    size_t n = strlen(s);
    if (n <= width || width < 5)
        return;
    /* "name (file:line)": file:line whole when it leaves the name room,
     * and more of the name's end (the method) than of its start */
    const char *paren = n && s[n - 1] == ')' ? strstr(s, " (") : NULL;
    for (const char *p = paren; p && (p = strstr(p + 1, " (")); )
        paren = p;
    size_t suffix = paren ? n - (size_t)(paren - s) : 0;
    char *keep = paren && width >= 20 ? strdup(paren) : NULL;
    if (keep) {
        if (suffix + 10 > width) { /* a long path: " (...funcs.h:147)", its end kept */
            size_t room = width / 2 - 5; /* after " (..." */
            memmove(keep + 5, keep + suffix - room, room + 1);
            memcpy(keep, " (...", 5);
            suffix = room + 5;
        }
        size_t name = (size_t)(paren - s), room = width - suffix - 3, head = room / 3;
        s[name] = 0;
        if (name > width - suffix)
            cut_middle(s, name, head, room - head);
        strcat(s, keep);
        free(keep);
        return;
    }
    size_t head = (width - 3) / 2;
    cut_middle(s, n, head, width - 3 - head);
}

/* ---- rows ----------------------------------------------------------------- */

/* The name a filter matches: the demangled name, or the address in hex. */
static const char *match_name(const struct funcstats *fs, const struct symbol *syms, uint32_t id, char *hex,
                              size_t len)
{
    if (syms && syms[id].name)
        return syms[id].name;
    snprintf(hex, len, "0x%llx", (unsigned long long)fs->v[id].addr);
    return hex;
}

static int any_match(const char *name, const char *const *globs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (symbols_name_matches(name, globs[i]))
            return 1;
    return 0;
}

static int kept(const struct funcstats *fs, const struct symbol *syms, const struct report_opts *o, uint32_t id)
{
    char hex[32];
    if (o->only_called && !fs->v[id].calls)
        return 0;
    if (!o->nmatch && !o->nexclude)
        return 1;
    const char *name = match_name(fs, syms, id, hex, sizeof hex);
    return (!o->nmatch || any_match(name, o->match, o->nmatch)) && !any_match(name, o->exclude, o->nexclude);
}

struct by_name {
    const struct funcstats *fs;
    const struct symbol *syms;
};

/* Names in byte order, the unnamed after them by address. */
static int cmp_name(const void *pa, const void *pb, void *ctx)
{
    const struct by_name *c = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const char *na = c->syms ? c->syms[a].name : NULL, *nb = c->syms ? c->syms[b].name : NULL;
    int r = na && nb ? strcmp(na, nb) : (na == NULL) - (nb == NULL);
    if (r)
        return r;
    uint64_t xa = c->fs->v[a].addr, xb = c->fs->v[b].addr;
    return xa < xb ? -1 : xa > xb ? 1 : (a > b) - (a < b);
}

uint32_t *report_rows(const struct funcstats *fs, const struct symbol *syms, const struct report_opts *o,
                      size_t *n)
{
    static const struct report_opts all = {0};
    if (!o)
        o = &all;
    uint32_t *order = funcstats_by(fs, o->sort);
    size_t k = 0;
    if (!order)
        return NULL;
    for (size_t i = 0; i < fs->n; i++)
        if (kept(fs, syms, o, order[i]))
            order[k++] = order[i];
    if (o->sort == FUNCSTATS_BY_NAME) {
        struct by_name c = {fs, syms};
        qsort_r(order, k, sizeof *order, cmp_name, &c);
    }
    *n = k;
    return order;
}

/* ---- cells ---------------------------------------------------------------- */

static const struct {
    const char *word;
    double ns;
} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};

/* A time column's unit: `base` (an index in units), one up while its
 * largest value would need five digits before the point. */
static unsigned unit_for(unsigned base, double max_ns)
{
    unsigned u = base;
    while (u + 1 < sizeof units / sizeof units[0] && max_ns >= 1e4 * units[u].ns)
        u++;
    return u;
}

/* An exact time: three decimals of the unit. */
static void cell_exact(char *buf, size_t len, double ns, unsigned unit)
{
    snprintf(buf, len, "%.3f", ns / units[unit].ns);
}

/* An estimate: three significant digits, four when the first is a 1 (so
 * that rounding adds at most 0.25% to the histogram's 1.6%: within 2% in
 * all), at most `most` decimals. */
static void cell_estimate(char *buf, size_t len, double v, int most)
{
    if (v <= 0) {
        snprintf(buf, len, "0");
        return;
    }
    int mag = (int)floor(log10(v)); /* 10^mag <= v */
    int digits = v / pow(10, mag) < 2 ? 4 : 3;
    int dec = digits - 1 - mag;
    if (dec < 0) { /* large: rounded to its digits, no decimals */
        double p = pow(10, -dec);
        v = floor(v / p + 0.5) * p;
        dec = 0;
    }
    if (dec > most)
        dec = most;
    snprintf(buf, len, "%.*f", dec, v);
    /* rounding up may carry into a digit more (99.95 -> 100.0): one decimal less */
    if (dec > 0 && floor(log10(atof(buf))) > mag)
        snprintf(buf, len, "%.*f", --dec, v);
}

/* One call's time, in the unit that gives it at most four digits before
 * the point, the unit after the number ("41.247us", "50ns", "8003.548ms"):
 * an exact one with three decimals (whole ns), an estimate with its digits. */
static void cell_call(char *buf, size_t len, double ns, int exact)
{
    unsigned u = unit_for(0, ns);
    char num[48];
    double v = ns / units[u].ns;
    if (exact)
        snprintf(num, sizeof num, "%.*f", u ? 3 : 0, v);
    else
        cell_estimate(num, sizeof num, v, u ? 3 : 0);
    snprintf(buf, len, "%s%s", num, units[u].word);
}

enum col { C_CALLS, C_INCL, C_SELF, C_SHARE, C_MEAN, C_MIN, C_P50, C_P99, C_MAX, NCOLS };
static const struct {
    const char *head; /* the header, before its unit */
    unsigned base;    /* the sums' unit at most values (units[]) */
} cols[NCOLS] = {
    {"calls", 0}, {"incl_", 2}, {"self_", 2}, {"self%", 0}, {"mean", 0},
    {"min", 0},  {"p50", 0},  {"p99", 0},  {"max", 0},
};

/* The sums: one unit for the column, in its header. */
static int timed(int c)
{
    return c == C_INCL || c == C_SELF;
}

/* A row's value in column c, in ns (C_CALLS: calls); *exact 0 for an estimate. */
static double value_of(const struct funcstats_entry *e, int c, int *exact)
{
    *exact = 1;
    switch (c) {
    case C_CALLS: return (double)e->calls;
    case C_INCL: return (double)e->incl_ns;
    case C_SELF: return (double)e->self_ns;
    case C_MEAN: return e->calls ? (double)e->lat_ns / (double)e->calls : 0;
    case C_MIN: return e->lat.n ? (double)e->lat.min : 0;
    case C_P50:
    case C_P99: {
        unsigned pct = c == C_P50 ? 50 : 99;
        *exact = hist_percentile_exact(&e->lat, pct);
        return (double)hist_percentile(&e->lat, pct);
    }
    case C_MAX: return e->lat.n ? (double)e->lat.max : 0;
    default: return 0;
    }
}

static void cell(char *buf, size_t len, const struct funcstats_entry *e, int c, const unsigned *unit, double total)
{
    int exact;
    double v = value_of(e, c, &exact);
    if (c == C_CALLS)
        snprintf(buf, len, "%s%llu", e->lower_bound ? ">=" : "", (unsigned long long)e->calls);
    else if (c == C_SHARE)
        snprintf(buf, len, "%.1f", total > 0 ? 100.0 * (double)e->self_ns / total : 0.0);
    else if (timed(c))
        cell_exact(buf, len, v, unit[c]);
    else
        cell_call(buf, len, v, exact);
}

static void header(char *buf, size_t len, int c, const unsigned *unit)
{
    snprintf(buf, len, "%s%s", cols[c].head, timed(c) ? units[unit[c]].word : "");
}

/* ---- the function table --------------------------------------------------- */

/* A terminal's rows are kept to its width: the columns least read are left
 * out, in this order, until the longest name fits; if it still does not,
 * names go without their file:line (as perf and uftrace show them), then
 * lose their middle, keeping at least REPORT_NAME_MIN columns; calls, incl,
 * self, p99 and max always stay.  A line after the table says what was
 * left out. */
#define REPORT_NAME_MIN 32u
static const int drop_order[] = {C_MIN, C_P50, C_MEAN, C_SHARE};

int report_table(FILE *out, const struct funcstats *fs, const struct symbol *syms, const struct report_opts *o)
{
    static const struct report_opts dflt = {0};
    if (!o)
        o = &dflt;
    size_t n, shown;
    uint32_t *order = report_rows(fs, syms, o, &n);
    char label[1024], buf[64];
    unsigned unit[NCOLS] = {0};
    size_t width[NCOLS];
    double max[NCOLS] = {0}, total = 0;
    if (!order)
        return -1;
    shown = o->top && o->top < n ? o->top : n;
    for (size_t i = 0; i < fs->n; i++)
        total += (double)fs->v[i].self_ns;
    for (size_t r = 0; r < shown; r++)
        for (int c = 0; c < NCOLS; c++) {
            int exact;
            double v = value_of(&fs->v[order[r]], c, &exact);
            max[c] = v > max[c] ? v : max[c];
        }
    for (int c = 0; c < NCOLS; c++) {
        unit[c] = timed(c) ? unit_for(cols[c].base, max[c]) : 0;
        header(buf, sizeof buf, c, unit);
        width[c] = strlen(buf);
    }
    for (size_t r = 0; r < shown; r++)
        for (int c = 0; c < NCOLS; c++) {
            cell(buf, sizeof buf, &fs->v[order[r]], c, unit, total);
            width[c] = strlen(buf) > width[c] ? strlen(buf) : width[c];
        }
    int on[NCOLS];
    size_t numbers = 0, label_w = 0, dropped = 0;
    int no_where = 0; /* a row's file:line left out to fit */
    for (int c = 0; c < NCOLS; c++) {
        on[c] = 1;
        numbers += width[c] + 2;
    }
    for (size_t r = 0; o->columns && r < shown; r++) {
        const struct funcstats_entry *e = &fs->v[order[r]];
        label_of(syms ? &syms[order[r]] : NULL, (unsigned long long)e->addr, !o->long_names, label, sizeof label);
        label_w = strlen(label) > label_w ? strlen(label) : label_w;
    }
    for (size_t k = 0; o->columns && numbers + label_w > o->columns && k < sizeof drop_order / sizeof *drop_order;
         k++) {
        on[drop_order[k]] = 0;
        numbers -= width[drop_order[k]] + 2;
        dropped++;
    }
    size_t fit = o->columns && o->columns > numbers + REPORT_NAME_MIN ? o->columns - numbers : REPORT_NAME_MIN;
    for (int c = 0; c < NCOLS; c++) {
        if (!on[c])
            continue;
        header(buf, sizeof buf, c, unit);
        fprintf(out, "%*s  ", (int)width[c], buf);
    }
    fputs("function (file:line)\n", out);
    for (size_t r = 0; r < shown; r++) {
        const struct funcstats_entry *e = &fs->v[order[r]];
        for (int c = 0; c < NCOLS; c++) {
            if (!on[c])
                continue;
            cell(buf, sizeof buf, e, c, unit, total);
            fprintf(out, "%*s  ", (int)width[c], buf);
        }
        label_of(syms ? &syms[order[r]] : NULL, (unsigned long long)e->addr, !o->long_names, label, sizeof label);
        if (o->columns && strlen(label) > fit - 1) { /* one column spare: a terminal wraps at its last */
            char *where = strstr(label, " ("); /* the name before its file:line, as perf and uftrace show */
            for (char *p = where; p && (p = strstr(p + 1, " (")); )
                where = p;
            if (where && label[strlen(label) - 1] == ')') {
                *where = 0;
                no_where = 1;
            }
            report_elide(label, fit - 1);
        }
        fprintf(out, "%s\n", label);
    }
    if (shown < n) {
        uint64_t self = 0, calls = 0;
        for (size_t r = shown; r < n; r++) { /* saturating: a hostile file's sums may be near 2^64 */
            uint64_t ds = fs->v[order[r]].self_ns, dc = fs->v[order[r]].calls;
            self = self > UINT64_MAX - ds ? UINT64_MAX : self + ds;
            calls = calls > UINT64_MAX - dc ? UINT64_MAX : calls + dc;
        }
        fprintf(out, "%zu more function%s (%.3f ms self, %llu call%s); --top 0 shows all\n", n - shown,
                n - shown == 1 ? "" : "s", (double)self / 1e6, (unsigned long long)calls, calls == 1 ? "" : "s");
    }
    if (dropped || no_where) {
        fprintf(out, "(%zu columns: left out", o->columns);
        for (size_t k = 0; k < dropped; k++)
            fprintf(out, "%s %s", k ? "," : "", cols[drop_order[k]].head);
        fprintf(out, "%s; --wide shows all)\n", no_where ? (dropped ? ", file:line" : " file:line") : "");
    }
    free(order);
    return 0;
}

/* ---- filters that match nothing ------------------------------------------ */

/* Edit distance, bounded: strings are cut at 127 bytes. */
static size_t distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), row[128];
    na = na > 127 ? 127 : na;
    nb = nb > 127 ? 127 : nb;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* How many "::" components s has (outside template arguments). */
static size_t components(const char *s)
{
    size_t n = 1;
    int depth = 0;
    for (; *s; s++) {
        depth += *s == '<' ? 1 : *s == '>' && depth ? -1 : 0;
        if (!depth && s[0] == ':' && s[1] == ':') {
            n++;
            s++;
        }
    }
    return n;
}

/* The last k components of a short name without its parameters and
 * template arguments: "net::Map<...>::get(...)" with k 2 -> "Map::get". */
static const char *tail_parts(char *brief, size_t k)
{
    brief[strcspn(brief, "(")] = 0;
    for (char *t; (t = strstr(brief, "<...>"));)
        memmove(t, t + 5, strlen(t + 5) + 1);
    size_t total = components(brief);
    const char *s = brief;
    int depth = 0;
    for (size_t skip = total > k ? total - k : 0; skip && *s; s++) {
        depth += *s == '<' ? 1 : *s == '>' && depth ? -1 : 0;
        if (!depth && s[0] == ':' && s[1] == ':') {
            s++;
            skip--;
        }
    }
    return s;
}

#define NEAREST 3

/* The NEAREST names with calls closest to glob (its glob characters
 * ignored), compared on as many components as it has; into list. */
static void nearest(const struct funcstats *fs, const struct symbol *syms, const char *glob, char *list,
                    size_t len)
{
    char want[256], brief[512];
    size_t k = 0, best[NEAREST], nbest = 0;
    uint32_t who[NEAREST];
    for (const char *s = glob; *s && k + 1 < sizeof want; s++)
        if (!strchr("*?[]", *s))
            want[k++] = *s;
    want[k] = 0;
    size_t parts = components(want);
    for (size_t i = 0; i < fs->n; i++) {
        if (!fs->v[i].calls || !syms || !syms[i].name)
            continue;
        report_short_name(syms[i].name, brief, sizeof brief);
        size_t d = distance(want, tail_parts(brief, parts)), at = nbest;
        while (at && best[at - 1] > d)
            at--;
        if (at == NEAREST)
            continue;
        nbest += nbest < NEAREST;
        memmove(best + at + 1, best + at, (nbest - 1 - at) * sizeof *best);
        memmove(who + at + 1, who + at, (nbest - 1 - at) * sizeof *who);
        best[at] = d;
        who[at] = (uint32_t)i;
    }
    size_t at = 0;
    list[0] = 0;
    for (size_t i = 0; i < nbest && at < len; i++) {
        report_short_name(syms[who[i]].name, brief, sizeof brief);
        brief[strcspn(brief, "(")] = 0;
        at += (size_t)snprintf(list + at, len - at, "%s%s", i ? ", " : "", brief);
    }
}

/* Does glob match any function with calls? */
static int matches_any(const struct funcstats *fs, const struct symbol *syms, const char *glob, size_t *called)
{
    char hex[32];
    int any = 0;
    *called = 0;
    for (size_t i = 0; i < fs->n; i++)
        if (fs->v[i].calls) {
            ++*called;
            any |= !any && symbols_name_matches(match_name(fs, syms, (uint32_t)i, hex, sizeof hex), glob);
        }
    return any;
}

int report_check_filters(const char *prog, const struct funcstats *fs, const struct symbol *syms,
                         const struct report_opts *o)
{
    char list[1024], line[2048];
    int bad = 0;
    for (size_t i = 0; i < o->nmatch + o->nexclude; i++) {
        int is_match = i < o->nmatch;
        const char *glob = is_match ? o->match[i] : o->exclude[i - o->nmatch];
        size_t called;
        if (matches_any(fs, syms, glob, &called))
            continue;
        nearest(fs, syms, glob, list, sizeof list);
        snprintf(line, sizeof line, "%s--%s '%s' matches none of the %zu functions with calls%s%s%s", is_match ? "" : "note: ",
                 is_match ? "match" : "exclude", glob, called, list[0] ? "; the nearest: " : "", list,
                 is_match ? "" : " (nothing left out)");
        textesc_say(prog, line);
        bad |= is_match;
    }
    return bad;
}

/* ---- the thread table ----------------------------------------------------- */

enum tcol { T_SOURCE, T_TID, T_CALLS, T_EVENTS, T_SELF, T_SHARE, T_LOST, T_SPAN, NTCOLS };
static const char *const tcol_head[NTCOLS] = {"source", "tid", "calls", "events", "self_", "self%", "lost", "span_"};

static int shown_thread(const struct analysis *a, const struct analysis_thread *t)
{
    if (a->filter.thread && !t->selected)
        return 0;
    return t->has_events || t->lost || t->calls; /* a thread whose every event was lost is still one */
}

static uint64_t span_of(const struct analysis_thread *t)
{
    return t->events && t->last_ns > t->first_ns ? (uint64_t)(t->last_ns - t->first_ns) : 0;
}

static int cmp_threads(const void *pa, const void *pb, void *ctx)
{
    const struct analysis_thread *a = *(const struct analysis_thread *const *)pa;
    const struct analysis_thread *b = *(const struct analysis_thread *const *)pb;
    enum funcstats_key key = *(const enum funcstats_key *)ctx;
    if (key == FUNCSTATS_BY_CALLS && a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    if (key != FUNCSTATS_BY_NAME && a->self_ns != b->self_ns)
        return a->self_ns > b->self_ns ? -1 : 1;
    if (key == FUNCSTATS_BY_NAME) {
        int r = strcmp(a->name, b->name);
        if (r)
            return r;
    }
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static void tcell(char *buf, size_t len, const struct analysis *a, const struct analysis_thread *t, int c,
                  const unsigned *unit, double total)
{
    const struct analysis_source *s = &a->src[t->src];
    switch (c) {
    case T_SOURCE: snprintf(buf, len, "%s %u", analysis_source_word(s), s->id); break;
    case T_TID: snprintf(buf, len, "%u", t->tid); break;
    case T_CALLS: snprintf(buf, len, "%llu", (unsigned long long)t->calls); break;
    case T_EVENTS: snprintf(buf, len, "%llu", (unsigned long long)t->events); break;
    case T_SELF: cell_exact(buf, len, (double)t->self_ns, unit[c]); break;
    case T_SHARE: snprintf(buf, len, "%.1f", total > 0 ? 100.0 * (double)t->self_ns / total : 0.0); break;
    case T_LOST: snprintf(buf, len, "%llu", (unsigned long long)t->lost); break;
    default:
        if (t->events)
            cell_exact(buf, len, (double)span_of(t), unit[c]);
        else
            snprintf(buf, len, "-"); /* summary traces: no events to time it by */
    }
}

int report_threads(FILE *out, const struct analysis *a, const struct report_opts *o)
{
    const struct analysis_thread **v = malloc((a->nthreads ? a->nthreads : 1) * sizeof *v);
    enum funcstats_key key = o ? o->sort : FUNCSTATS_BY_SELF;
    size_t n = 0, width[NTCOLS];
    unsigned unit[NTCOLS] = {0};
    double total = 0, max_self = 0, max_span = 0;
    char buf[64], name[4 * ANALYSIS_NAME_MAX + 8];
    if (!v)
        return -1;
    for (size_t i = 0; i < a->nthreads; i++)
        if (shown_thread(a, &a->threads[i])) {
            const struct analysis_thread *t = v[n++] = &a->threads[i];
            total += (double)t->self_ns;
            max_self = (double)t->self_ns > max_self ? (double)t->self_ns : max_self;
            max_span = (double)span_of(t) > max_span ? (double)span_of(t) : max_span;
        }
    qsort_r(v, n, sizeof *v, cmp_threads, &key);
    size_t shown = o && o->top && o->top < n ? o->top : n; /* --top, as for the functions */
    unit[T_SELF] = unit_for(2, max_self);
    unit[T_SPAN] = unit_for(2, max_span);
    for (int c = 0; c < NTCOLS; c++) {
        snprintf(buf, sizeof buf, "%s%s", tcol_head[c], c == T_SELF || c == T_SPAN ? units[unit[c]].word : "");
        width[c] = strlen(buf);
        for (size_t r = 0; r < shown; r++) {
            tcell(buf, sizeof buf, a, v[r], c, unit, total);
            width[c] = strlen(buf) > width[c] ? strlen(buf) : width[c];
        }
    }
    for (int c = 0; c < NTCOLS; c++) {
        snprintf(buf, sizeof buf, "%s%s", tcol_head[c], c == T_SELF || c == T_SPAN ? units[unit[c]].word : "");
        fprintf(out, c == T_SOURCE ? "%-*s  " : "%*s  ", (int)width[c], buf);
    }
    fputs("thread\n", out);
    for (size_t r = 0; r < shown; r++) {
        for (int c = 0; c < NTCOLS; c++) {
            tcell(buf, sizeof buf, a, v[r], c, unit, total);
            fprintf(out, c == T_SOURCE ? "%-*s  " : "%*s  ", (int)width[c], buf);
        }
        fprintf(out, "%s\n", v[r]->name[0] ? textesc(name, sizeof name, v[r]->name, TEXTESC_TERMINAL) : "-");
    }
    if (shown < n) {
        uint64_t self = 0, calls = 0;
        for (size_t r = shown; r < n; r++) { /* saturating, as the functions' line */
            self = self > UINT64_MAX - v[r]->self_ns ? UINT64_MAX : self + v[r]->self_ns;
            calls = calls > UINT64_MAX - v[r]->calls ? UINT64_MAX : calls + v[r]->calls;
        }
        fprintf(out, "%zu more thread%s (%.3f ms self, %llu call%s); --top 0 shows all\n", n - shown,
                n - shown == 1 ? "" : "s", (double)self / 1e6, (unsigned long long)calls, calls == 1 ? "" : "s");
    }
    free(v);
    return 0;
}
