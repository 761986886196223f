/*
 * choose.c - per-source decisions from a trace.config (see choose.h).
 */
#include "choose.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind_word(enum config_kind k)
{
    static const char *const words[] = {"include", "exclude", "exclude-func", "include-func"};
    return words[k];
}

/* A rule about functions, or about a header (whose inline functions are
 * compiled into the units that include it): only the call graph can say
 * which functions it means. */
static int needs_graph(const struct config_rule *r)
{
    static const char *const hdr[] = {".h", ".hh", ".hpp", ".hxx", ".H", ".inl", ".ipp", ".tcc"};
    if (r->kind >= CONFIG_EXCLUDE_FUNC)
        return 1;
    const char *dot = strrchr(r->arg, '.');
    for (size_t i = 0; dot && !strchr(dot, '/') && i < sizeof hdr / sizeof hdr[0]; i++)
        if (!strcmp(dot, hdr[i]))
            return 1;
    return 0;
}

int choose_init(struct choose *ch, const char *path, int required, char *err, size_t errlen)
{
    memset(ch, 0, sizeof *ch);
    char abs[PATH_MAX];
    if (!path || (access(path, F_OK) != 0 && errno == ENOENT && !required)) {
        if (!getcwd(ch->dir, sizeof ch->dir)) {
            snprintf(err, errlen, "the working directory: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (config_load(&ch->cfg, path, err, errlen) < 0)
        return -1;
    ch->have_file = 1;
    snprintf(ch->path, sizeof ch->path, "%s", path);
    for (size_t i = 0; i < ch->cfg.n && !ch->graph_rule; i++)
        if (needs_graph(&ch->cfg.rules[i]))
            ch->graph_rule = &ch->cfg.rules[i];
    if (!realpath(path, abs)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        config_free(&ch->cfg);
        return -1;
    }
    char *slash = strrchr(abs, '/');
    *(slash == abs ? slash + 1 : slash) = '\0';
    snprintf(ch->dir, sizeof ch->dir, "%s", abs);
    return 0;
}

void choose_free(struct choose *ch)
{
    config_free(&ch->cfg);
    free(ch->on);
    free(ch->why);
}

void choose_rel(const struct choose *ch, const char *source, char *rel, size_t len)
{
    char joined[PATH_MAX], real[PATH_MAX], cwd[PATH_MAX];
    const char *p = source;
    if (source[0] != '/' && getcwd(cwd, sizeof cwd)) {
        int n = snprintf(joined, sizeof joined, "%s/%s", cwd, source);
        if (n > 0 && (size_t)n < sizeof joined)
            p = joined;
    }
    if (realpath(p, real)) /* a source not there yet (generated): as joined */
        p = real;
    size_t n = strlen(ch->dir);
    const char *under = NULL;
    if (n == 1)
        under = p[0] == '/' ? p + 1 : NULL;
    else if (!strncmp(p, ch->dir, n) && p[n] == '/')
        under = p + n + 1;
    snprintf(rel, len, "%s", under ? under : source);
}

int choose_source(const struct choose *ch, const char *source, const struct config_rule **why)
{
    char rel[CHOOSE_PATH_MAX];
    *why = NULL;
    if (!ch->have_file)
        return 1;
    choose_rel(ch, source, rel, sizeof rel);
    return config_selects(&ch->cfg, rel, why);
}

const char *choose_rule_text(const struct config_rule *r, char *buf, size_t len)
{
    if (r->kind == CONFIG_INCLUDE_FUNC && r->depth >= 0)
        snprintf(buf, len, "%s %s %d", kind_word(r->kind), r->arg, r->depth);
    else
        snprintf(buf, len, "%s %s", kind_word(r->kind), r->arg);
    return buf;
}

void choose_why(const struct choose *ch, int on, const struct config_rule *why, char *buf, size_t len)
{
    char depth[CONFIG_MAX_LINE + 32];
    if (!ch->have_file)
        snprintf(buf, len, "no trace.config: every source");
    else if (why)
        snprintf(buf, len, "%s%s (line %u)", on == CHOOSE_KEPT ? "kept against " : "", choose_rule_text(why, depth,
                 sizeof depth), why->line);
    else
        snprintf(buf, len, "%s", on ? "no include rule: every source not excluded" : "no include matches");
}

int choose_names(const struct choose *ch, const char *arg, const struct graph_func *f)
{
    /* PATH:NAME: the last ':' that is not half of a "::" */
    const char *colon = NULL;
    for (const char *p = arg; *p; p++)
        if (*p == ':' && p[1] != ':' && (p == arg || p[-1] != ':'))
            colon = p;
    const char *name = colon ? colon + 1 : arg;
    size_t n = strlen(name);
    int hit = 0;
    for (int k = 0; k < 2 && !hit; k++) {
        const char *full = k ? f->plain : f->name;
        size_t fl = strlen(full);
        hit = !strcmp(full, name) || (fl > n + 2 && !strcmp(full + fl - n, name) && full[fl - n - 1] == ':' &&
                                      full[fl - n - 2] == ':');
    }
    if (!hit || !colon)
        return hit;
    char path[CONFIG_MAX_LINE + 1], rel[CHOOSE_PATH_MAX];
    snprintf(path, sizeof path, "%.*s", (int)(colon - arg), arg);
    choose_rel(ch, f->file, rel, sizeof rel);
    return config_matches(path, rel);
}

/* The file rules' verdict on a function's file: 1 included, 0 excluded, -1
 * neither; *why the rule. */
static int file_verdict(const struct choose *ch, const char *rel, const struct config_rule **why)
{
    int v = -1;
    *why = NULL;
    for (size_t i = 0; i < ch->cfg.n; i++) {
        const struct config_rule *r = &ch->cfg.rules[i];
        if (r->kind == CONFIG_EXCLUDE && config_matches(r->arg, rel)) {
            *why = r;
            return 0;
        }
        if (r->kind == CONFIG_INCLUDE && v < 0 && config_matches(r->arg, rel)) {
            *why = r;
            v = 1;
        }
    }
    return v;
}

/* A directive's NAME matched no function: say so, and when it was written
 * FILE:NAME and the name alone exists, where it does (up to three files). */
static void say_unmatched(const struct choose *ch, const struct config_rule *r, char *err, size_t errlen)
{
    const struct graph *g = ch->g;
    const char *colon = NULL;
    for (const char *p = r->arg; *p; p++)
        if (*p == ':' && p[1] != ':' && (p == r->arg || p[-1] != ':'))
            colon = p;
    char where[600] = "";
    size_t shown = 0, total = 0;
    for (size_t i = 0; colon && i < g->nf; i++) {
        if (!g->f[i].defined || !choose_names(ch, colon + 1, &g->f[i]))
            continue;
        if (shown < 3 && strlen(where) + strlen(g->f[i].file) + 3 < sizeof where) {
            snprintf(where + strlen(where), sizeof where - strlen(where), "%s%s", shown ? ", " : "", g->f[i].file);
            shown++;
        }
        total++;
    }
    int n = snprintf(err, errlen, "%s:%u: %s %s: no function of that name is defined in the %zu units compiled",
                     ch->path, r->line, kind_word(r->kind), r->arg, g->nu);
    if (total && n > 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, "; %s is defined in %s%s (the part before ':' matches none)",
                 colon + 1, where, total > shown ? ", ..." : "");
}

/* include-func: its subtree on.  0, or -1 with err set. */
static int apply_include_func(struct choose *ch, const struct config_rule *r, unsigned char *mark,
                              const signed char *verdict, char *err, size_t errlen)
{
    const struct graph *g = ch->g;
    size_t roots = 0;
    memset(mark, 0, g->nf);
    for (size_t i = 0; i < g->nf; i++) {
        if (!g->f[i].defined || !choose_names(ch, r->arg, &g->f[i]))
            continue;
        roots++;
        if (graph_reach(g, i, r->depth, mark) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (!roots) {
        say_unmatched(ch, r, err, errlen);
        return -1;
    }
    for (size_t i = 0; i < g->nf; i++)
        if (mark[i] && !ch->on[i] && verdict[i] != 0) { /* an excluded file's stay out */
            ch->on[i] = 1;
            ch->why[i] = r;
        }
    return 0;
}

/* Would GCC's substring match of `text` take a selected function of unit
 * u?  Its index, or SIZE_MAX.  The label is checked too: it holds every
 * word of GCC's own spelling, so no match is missed. */
static size_t takes_selected(const struct choose *ch, const struct graph_unit *u, const char *text)
{
    for (size_t k = 0; k < u->n; k++) {
        const struct graph_func *f = &ch->g->f[u->funcs[k]];
        if (ch->on[u->funcs[k]] && (strstr(f->name, text) || strstr(f->label, text)))
            return u->funcs[k];
    }
    return SIZE_MAX;
}

/* A function GCC cannot leave out alone, because its name is inside a
 * selected function's of the same unit, stays instrumented (CHOOSE_KEPT),
 * said once on stderr.  Until nothing changes: one kept may be the next
 * one's reason. */
static void keep_clashes(struct choose *ch, const char *prog)
{
    const struct graph *g = ch->g;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t u = 0; u < g->nu; u++) {
            const struct graph_unit *unit = &g->u[u];
            for (size_t k = 0; k < unit->n; k++) {
                size_t i = unit->funcs[k];
                const char *text = graph_match_text(g->f[i].name);
                size_t clash = ch->on[i] ? SIZE_MAX : takes_selected(ch, unit, text);
                if (clash == SIZE_MAX)
                    continue;
                fprintf(stderr, "%s: warning: %s: %s stays instrumented: GCC leaves out every function whose "
                                "name contains \"%s\", and %s (%s:%u), which is selected, does\n",
                        prog, unit->source, g->f[i].name, text, g->f[clash].name, g->f[clash].file,
                        g->f[clash].line);
                ch->on[i] = CHOOSE_KEPT;
                changed = 1;
            }
        }
    }
}

int choose_use_graph(struct choose *ch, const struct graph *g, const char *prog, char *err, size_t errlen)
{
    size_t nf = g->nf ? g->nf : 1;
    int inc_funcs = 0;
    for (size_t i = 0; i < ch->cfg.n; i++)
        inc_funcs |= ch->cfg.rules[i].kind == CONFIG_INCLUDE_FUNC;
    ch->g = g;
    ch->on = calloc(nf, 1);
    ch->why = calloc(nf, sizeof *ch->why);
    unsigned char *mark = calloc(nf, 1);
    signed char *verdict = calloc(nf, 1);
    int rc = ch->on && ch->why && mark && verdict ? 0 : -1;
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    char rel[CHOOSE_PATH_MAX];
    for (size_t i = 0; rc == 0 && i < g->nf; i++) {
        choose_rel(ch, g->f[i].file, rel, sizeof rel);
        verdict[i] = (signed char)file_verdict(ch, rel, &ch->why[i]);
        ch->on[i] = verdict[i] == 1 || (verdict[i] < 0 && ch->cfg.includes == 0 && !inc_funcs);
    }
    for (size_t k = 0; rc == 0 && k < ch->cfg.n; k++)
        if (ch->cfg.rules[k].kind == CONFIG_INCLUDE_FUNC)
            rc = apply_include_func(ch, &ch->cfg.rules[k], mark, verdict, err, errlen);
    /* Exclusions last: exclude wins. */
    for (size_t k = 0; rc == 0 && k < ch->cfg.n; k++) {
        const struct config_rule *r = &ch->cfg.rules[k];
        if (r->kind != CONFIG_EXCLUDE_FUNC)
            continue;
        size_t hits = 0;
        for (size_t i = 0; i < g->nf; i++)
            if (g->f[i].defined && choose_names(ch, r->arg, &g->f[i])) {
                hits++;
                ch->on[i] = 0;
                ch->why[i] = r;
            }
        if (!hits) {
            say_unmatched(ch, r, err, errlen);
            rc = -1;
        }
    }
    if (rc == 0)
        keep_clashes(ch, prog);
    free(mark);
    free(verdict);
    return rc;
}

size_t choose_unit_on(const struct choose *ch, size_t u)
{
    size_t n = 0;
    for (size_t k = 0; k < ch->g->u[u].n; k++)
        n += ch->on[ch->g->u[u].funcs[k]] != 0;
    return n;
}

/* Append text to buf at *o, commas escaped as GCC's list wants.  0 or -1. */
static int put_escaped(char *buf, size_t len, size_t *o, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*o + 3 >= len)
            return -1;
        if (*p == ',')
            buf[(*o)++] = '\\';
        buf[(*o)++] = *p;
    }
    buf[*o] = '\0';
    return 0;
}

int choose_unit_flags(const struct choose *ch, size_t u, int quoted, char *buf, size_t len)
{
    const struct graph_unit *unit = &ch->g->u[u];
    size_t o = 0, listed = 0;
    buf[0] = '\0';
    if (!choose_unit_on(ch, u))
        return 0;
    for (size_t k = 0; k < unit->n; k++) {
        const struct graph_func *f = &ch->g->f[unit->funcs[k]];
        const char *text = graph_match_text(f->name);
        if (ch->on[unit->funcs[k]] || !*text)
            continue;
        int dup = 0; /* the same text twice (overloads) once */
        for (size_t j = 0; j < k && !dup; j++)
            dup = !ch->on[unit->funcs[j]] && !strcmp(graph_match_text(ch->g->f[unit->funcs[j]].name), text);
        if (dup)
            continue;
        if (listed++ == 0)
            o += (size_t)snprintf(buf, len, "%s-finstrument-functions-exclude-function-list=", quoted ? "'" : "");
        else if (o + 1 < len)
            buf[o++] = ',';
        if (o >= len || put_escaped(buf, len, &o, text) < 0)
            return -1;
    }
    if (listed && quoted) {
        if (o + 2 >= len)
            return -1;
        buf[o++] = '\'';
        buf[o] = '\0';
    }
    return 1;
}

/* Does some source (rels[0..n)) or, with the graph, some function's file
 * match the pattern? */
static int pattern_used(const struct choose *ch, const char *pattern, char **rels, size_t n)
{
    char rel[CHOOSE_PATH_MAX];
    for (size_t i = 0; i < n; i++)
        if (config_matches(pattern, rels[i]))
            return 1;
    for (size_t i = 0; ch->g && i < ch->g->nf; i++) {
        if (!ch->g->f[i].defined)
            continue;
        choose_rel(ch, ch->g->f[i].file, rel, sizeof rel);
        if (config_matches(pattern, rel))
            return 1;
    }
    return 0;
}

void choose_warn_unused(const struct choose *ch, char *const *srcs, size_t n, const char *prog)
{
    if (!ch->have_file)
        return;
    char **rels = calloc(n ? n : 1, sizeof *rels), rel[CHOOSE_PATH_MAX];
    for (size_t i = 0; rels && i < n; i++) {
        choose_rel(ch, srcs[i], rel, sizeof rel);
        if (!(rels[i] = strdup(rel)))
            break;
    }
    for (size_t k = 0; rels && k < ch->cfg.n; k++) {
        const struct config_rule *r = &ch->cfg.rules[k];
        if (r->kind <= CONFIG_EXCLUDE && !pattern_used(ch, r->arg, rels, n))
            fprintf(stderr, "%s: warning: %s:%u: %s %s matches none of the %zu sources%s (a typo?)\n", prog, ch->path,
                    r->line, kind_word(r->kind), r->arg, n, ch->g ? " nor any function's file" : "");
    }
    for (size_t i = 0; rels && i < n; i++)
        free(rels[i]);
    free(rels);
}
