/*
 * scan.c - `callsight scan [DIR]`: which of a project's sources trace.config
 * instruments, which not, and why, before anything is built.
 *
 * Runs in DIR, takes its C and C++ sources (sources.h) and asks choose.h
 * about each.  A config that selects single functions is decided on the
 * call graph (graph_build.h), compiled with --cc into DIR/callsight-obj as
 * `make instrument` does, so the two share it; then every function is
 * listed under its source, and each include-func with its subtree's size.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "lib/textesc.h"
#include "select/choose.h"
#include "select/graph_build.h"
#include "select/sources.h"

#define PROG "callsight scan"

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight scan [DIR] [--config FILE] [--cc CMD] [--cxx CMD]\n"
"\n"
"List DIR's C and C++ sources (default: here; not in hidden folders nor in\n"
"callsight/ and callsight-obj/) and say for each whether trace.config has\n"
"it instrumented, and which line decided.  With exclude-func, include-func\n"
"or a rule naming a header, each function is listed too, decided on the\n"
"call graph (compiled into DIR/callsight-obj, as make instrument does).\n"
"\n"
"options:\n"
"  --config FILE   the selection (default: DIR/trace.config, and when that\n"
"                  does not exist every source is selected; a FILE given\n"
"                  must exist)\n"
"  --cc CMD        how DIR's C sources compile, for the call graph (default:\n"
"                  cc); run in DIR: --cc 'gcc -Iinclude -DNDEBUG'\n"
"  --cxx CMD       the same for C++ sources (default: c++)\n"
"  -h, --help      print this help\n"
"\n"
"output: a summary line, then one line per source:\n"
"  scan: N sources, I instrumented, O not (CONFIG)\n"
"    on   src/net/crc.c    include src/ (line 3)\n"
"    off  src/x_test.c     exclude *_test.c (line 4)\n"
"with the call graph, a source's line counts its functions, and each\n"
"function follows: on|off NAME FILE:LINE and why.\n"
"\n"
"Exit status: 0 done, 1 error, 2 usage error.\n");
}

static int width_of(const struct sources *l)
{
    int width = 0;
    for (size_t i = 0; i < l->n; i++)
        if ((int)strlen(l->v[i]) > width)
            width = (int)strlen(l->v[i]);
    return width < 60 ? width : 60;
}

static void report_files(const struct choose *ch, const struct sources *l, const char *config)
{
    char why[CONFIG_MAX_LINE + 64];
    const struct config_rule *rule;
    size_t count = 0;
    for (size_t i = 0; i < l->n; i++)
        count += (size_t)choose_source(ch, l->v[i], &rule);
    printf("scan: %zu sources, %zu instrumented, %zu not (%s)\n", l->n, count, l->n - count,
           ch->have_file ? config : "no trace.config: every source");
    int width = width_of(l);
    for (size_t i = 0; i < l->n; i++) {
        int on = choose_source(ch, l->v[i], &rule);
        char name[4 * PATH_MAX]; /* a project's file names may hold anything: escaped for the terminal */
        choose_why(ch, on, rule, why, sizeof why);
        printf("  %-4s %-*s  %s\n", on ? "on" : "off", width, textesc(name, sizeof name, l->v[i], TEXTESC_TERMINAL),
               why);
    }
}

/* The functions an include-func takes, and the calls through pointers
 * among those whose calls it follows (all but the last level's). */
static void subtree_size(const struct choose *ch, const struct config_rule *r, unsigned char *mark, size_t *n,
                         size_t *ind)
{
    const struct graph *g = ch->g;
    *n = *ind = 0;
    for (int pass = 0; pass < 2; pass++) {
        int depth = pass == 0 ? r->depth : r->depth < 0 ? -1 : r->depth - 1;
        if (depth < 0 && r->depth >= 0)
            return;
        memset(mark, 0, g->nf);
        for (size_t i = 0; i < g->nf; i++)
            if (g->f[i].defined && choose_names(ch, r->arg, &g->f[i]))
                (void)graph_reach(g, i, depth, mark);
        for (size_t i = 0; i < g->nf; i++) {
            if (pass == 0)
                *n += mark[i] && g->f[i].defined;
            else
                *ind += mark[i] ? g->f[i].indirect : 0;
        }
    }
}

/* Each include-func's subtree, and the calls no graph can follow. */
static void report_subtrees(const struct choose *ch)
{
    unsigned char *mark = calloc(ch->g->nf ? ch->g->nf : 1, 1);
    for (size_t k = 0; mark && k < ch->cfg.n; k++) {
        const struct config_rule *r = &ch->cfg.rules[k];
        if (r->kind != CONFIG_INCLUDE_FUNC)
            continue;
        size_t n, ind;
        char text[CONFIG_MAX_LINE + 32];
        subtree_size(ch, r, mark, &n, &ind);
        printf("%s (line %u): %zu function%s", choose_rule_text(r, text, sizeof text), r->line, n, n == 1 ? "" : "s");
        if (ind)
            printf(", and %zu call%s through pointers it cannot follow (callsight select shows where)", ind,
                   ind == 1 ? "" : "s");
        printf("\n");
    }
    free(mark);
}

static void report_funcs(const struct choose *ch, const struct sources *l, const char *config)
{
    const struct graph *g = ch->g;
    char why[CONFIG_MAX_LINE + 64];
    size_t count = 0, fon = 0, fall = 0;
    unsigned char *seen = calloc(g->nf ? g->nf : 1, 1); /* a header's inline function counts once */
    for (size_t u = 0; u < g->nu; u++) {
        count += choose_unit_on(ch, u) > 0;
        for (size_t k = 0; seen && k < g->u[u].n; k++) {
            size_t i = g->u[u].funcs[k];
            fall += !seen[i];
            fon += !seen[i] && ch->on[i];
            seen[i] = 1;
        }
    }
    free(seen);
    printf("scan: %zu sources, %zu instrumented, %zu not (%s); %zu of %zu functions\n", l->n, count,
           l->n - count, config, fon, fall);
    int width = width_of(l);
    for (size_t u = 0; u < g->nu; u++) {
        size_t on = choose_unit_on(ch, u);
        char name[4 * PATH_MAX], file[4 * PATH_MAX]; /* escaped for the terminal, as above */
        printf("  %-4s %-*s  %zu of %zu function%s\n", on ? "on" : "off", width,
               textesc(file, sizeof file, g->u[u].source, TEXTESC_TERMINAL), on, g->u[u].n, g->u[u].n == 1 ? "" : "s");
        for (size_t k = 0; k < g->u[u].n; k++) {
            size_t i = g->u[u].funcs[k];
            choose_why(ch, ch->on[i], ch->why[i], why, sizeof why);
            printf("         %-4s %s  %s:%u  %s\n", ch->on[i] ? "on" : "off",
                   textesc(name, sizeof name, g->f[i].name, TEXTESC_TERMINAL),
                   textesc(file, sizeof file, g->f[i].file, TEXTESC_TERMINAL), g->f[i].line, why);
        }
    }
    report_subtrees(ch);
}

int cmd_scan(int argc, char **argv)
{
    const char *dir = NULL, *config = NULL;
    struct graph_build b = {"cc", "c++", "callsight-obj", PROG, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && !strcmp(argv[i], "--config"))
            config = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--cc"))
            b.cc = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--cxx"))
            b.cxx = argv[++i];
        else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, PROG ": unknown or extra argument '%s' (try '" PROG " --help')\n", argv[i]);
            return 2;
        } else
            dir = argv[i];
    }
    char cfg[PATH_MAX];
    if (config && !realpath(config, cfg)) {
        fprintf(stderr, PROG ": %s: %s\n", config, strerror(errno));
        return 1;
    }
    const char *shown = config ? config : dir ? "trace.config" : "./trace.config";
    if (dir && chdir(dir) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct sources l;
    struct choose ch;
    struct graph g;
    memset(&g, 0, sizeof g);
    char err[CONFIG_ERR_MAX + 4200]; /* may quote a file name: said by textesc_say */
    if (sources_find_here(&l, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        return 1;
    }
    int rc = 0;
    if (choose_init(&ch, config ? cfg : "trace.config", config != NULL, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        sources_free(&l);
        return 1;
    }
    if (ch.graph_rule && (graph_build_is_clang(b.cc) || graph_build_run(&b, &g, l.v, l.n, err, sizeof err) < 0 ||
                          choose_use_graph(&ch, &g, PROG, err, sizeof err) < 0)) {
        textesc_say(PROG, graph_build_is_clang(b.cc) ? "--cc is clang, which has no call graph: give a GCC (--cc gcc)"
                                                     : err);
        rc = 1;
    } else {
        choose_warn_unused(&ch, l.v, l.n, PROG);
        if (ch.g)
            report_funcs(&ch, &l, shown);
        else
            report_files(&ch, &l, shown);
    }
    choose_free(&ch);
    graph_free(&g);
    sources_free(&l);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
