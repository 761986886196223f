/*
 * flags.c - `callsight flags`: the compiler flags trace.config gives each
 * source, for the build wiring (callsight.mk, callsight.cmake) or any
 * other build system.
 *
 * With --format raw and one source it prints exactly the flags for that
 * source, or nothing when the source is not instrumented, so a build can
 * splice its output into a compile line.  make and cmake print one
 * assignment per source.  --write DIR instead keeps DIR/SOURCE.flags for
 * each source, rewritten only when its flags change, so that a build whose
 * objects depend on those files recompiles exactly the sources whose
 * selection changed (callsight.mk).  The decisions are choose.h's.
 *
 * A config that selects single functions (or names a header) needs the
 * call graph: --graph-cc gives the build's compile command, and the
 * sources are compiled for it (graph_build.h) before any is decided, so
 * give every source of the program at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "select/choose.h"
#include "select/graph_build.h"
#include "select/sources.h"

#define PROG "callsight flags"

enum format { FMT_RAW, FMT_MAKE, FMT_CMAKE, FMT_LIST };

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight flags [--config FILE] [--instr FLAGS] [--format raw|make|cmake|list | --write DIR]\n"
"                       [--graph-cc CMD] [--graph-cxx CMD] [--graph-dir DIR] [-j N]\n"
"                       -- SOURCE...\n"
"\n"
"Print the compiler flags trace.config gives each SOURCE in the\n"
"instrumented build: " CHOOSE_INSTR_FLAGS " for a selected source,\n"
"nothing for any other (it is compiled with no hooks at all).  SOURCEs are\n"
"named as the build names them; the config's patterns are relative to its\n"
"own folder.\n"
"\n"
"options:\n"
"  --config FILE   the selection (default: trace.config here; when it does\n"
"                  not exist, every source is selected)\n"
"  --format F      raw (default): the flags alone, for one SOURCE;\n"
"                  make: 'callsight_flags/SOURCE := FLAGS' lines;\n"
"                  cmake: set_source_files_properties() lines;\n"
"                  list: SOURCE<tab>1|0<tab>EXTRA per source (instrumented\n"
"                  or not; EXTRA, the exclude-list option it needs besides\n"
"                  the instrumenting flags), after a line '#<tab>graph'\n"
"                  when the call graph decided (callsight.cmake reads this)\n"
"  --instr FLAGS   the flags of a selected source (default: " CHOOSE_INSTR_FLAGS ")\n"
"  --graph-cc CMD  the build's C compile command (\"gcc -Iinclude -O2\"), for\n"
"                  the call graph that exclude-func, include-func and a rule\n"
"                  naming a header need (GCC 10 or newer)\n"
"  --graph-cxx CMD the same for C++ sources (default: --graph-cc)\n"
"  --graph-dir DIR where the graph files are kept (default: --write's DIR,\n"
"                  else callsight-obj)\n"
"  -j, --jobs N    compilers run at once for the graph (default: the CPUs)\n"
"  --write DIR     print nothing; keep DIR/SOURCE.flags holding each\n"
"                  SOURCE's flags, rewritten only when they change (what\n"
"                  callsight.mk's objects depend on)\n"
"  -h, --help      print this help\n"
"\n"
"Exit status: 0 done, 1 the config cannot be read or used, 2 usage error.\n");
}

/* DIR/SOURCE.flags := the flags, unless it holds them already.  0 or -1 (said). */
static int write_one(const char *dir, const char *src, const char *instr, int on, const char *extra)
{
    static char old[CHOOSE_FLAGS_MAX + 1100], want[CHOOSE_FLAGS_MAX + 1100];
    char path[CHOOSE_PATH_MAX];
    snprintf(want, sizeof want, "%s%s%s\n", on ? instr : "", *extra ? " " : "", extra);
    old[0] = '\0';
    if (snprintf(path, sizeof path, "%s/%s.flags", dir, src) >= (int)sizeof path) {
        fprintf(stderr, PROG ": %s: path too long\n", src);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(old, 1, sizeof old - 1, f);
        old[n] = '\0';
        fclose(f);
        if (!strcmp(old, want))
            return 0;
    }
    if (sources_make_parents(path) < 0 || !(f = fopen(path, "w")) || fputs(want, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void print_one(enum format f, const char *src, const char *instr, int on, const char *extra)
{
    const char *sep = *extra ? " " : "";
    if (f == FMT_LIST) {
        printf("%s\t%d\t%s\n", src, on, extra);
    } else if (f == FMT_RAW) {
        printf("%s%s%s\n", on ? instr : "", sep, extra);
    } else if (f == FMT_MAKE) {
        printf("callsight_flags/%s := %s%s%s\n", src, on ? instr : "", sep, extra);
    } else if (on) {
        printf("set_source_files_properties(\"%s\" PROPERTIES COMPILE_OPTIONS \"", src);
        for (const char *p = instr; *p; p++) /* a CMake list: ; between the flags */
            putchar(*p == ' ' ? ';' : *p);
        printf("%s%s\")\n", *extra ? ";" : "", extra); /* one element, spaces and all */
    }
}

/* A config that needs the call graph: its refusals, then the graph built
 * and applied.  0 ok; -1 said. */
static int use_graph(struct choose *ch, struct graph *g, const struct graph_build *b, char **srcs, int n)
{
    const struct config_rule *r = ch->graph_rule;
    char err[CONFIG_ERR_MAX + 4200];
    const char *what = r->kind == CONFIG_EXCLUDE_FUNC ? "exclude-func" : r->kind == CONFIG_INCLUDE_FUNC
                                                                       ? "include-func" : "a rule naming a header";
    if (!b->cc) {
        fprintf(stderr, PROG ": %s:%u: %s needs the call graph, so the compile command: give --graph-cc "
                        "'CC CPPFLAGS CFLAGS' (callsight.mk and callsight.cmake do)\n", ch->path, r->line, what);
        return -1;
    }
    if (graph_build_is_clang(b->cc) || (b->cxx && graph_build_is_clang(b->cxx))) {
        fprintf(stderr, PROG ": %s:%u: %s: clang cannot leave single functions out of -finstrument-functions "
                        "(it has no -finstrument-functions-exclude-function-list, nor a call graph): build the "
                        "instrumented profile with GCC (make instrument CC=gcc), or choose whole files with "
                        "include and exclude\n", ch->path, r->line, what);
        return -1;
    }
    if (graph_build_run(b, g, srcs, (size_t)n, err, sizeof err) < 0 || choose_use_graph(ch, g, PROG, err, sizeof err) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    return 0;
}

int cmd_flags(int argc, char **argv)
{
    const char *config = "trace.config", *write_dir = NULL, *instr = CHOOSE_INSTR_FLAGS;
    struct graph_build b = {NULL, NULL, NULL, PROG, 0};
    int required = 0, i = 1;
    enum format f = FMT_RAW;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, PROG ": unknown or incomplete option '%s' (try '" PROG " --help')\n", o);
            return 2;
        }
        i++;
        if (!strcmp(o, "--config")) {
            config = v;
            required = 1;
        } else if (!strcmp(o, "--instr") && strlen(v) <= 900) {
            instr = v;
        } else if (!strcmp(o, "--write")) {
            write_dir = v;
        } else if (!strcmp(o, "--graph-cc") || !strcmp(o, "--graph-cxx")) {
            *(o[8] == 'c' && o[9] == 'c' ? &b.cc : &b.cxx) = v;
        } else if (!strcmp(o, "--graph-dir")) {
            b.objdir = v;
        } else if ((!strcmp(o, "-j") || !strcmp(o, "--jobs")) && atoi(v) > 0 && atoi(v) <= 256) {
            b.jobs = atoi(v);
        } else if (!strcmp(o, "--format") && (!strcmp(v, "raw") || !strcmp(v, "make") || !strcmp(v, "cmake") ||
                                               !strcmp(v, "list"))) {
            f = v[0] == 'r' ? FMT_RAW : v[0] == 'm' ? FMT_MAKE : v[0] == 'l' ? FMT_LIST : FMT_CMAKE;
        } else {
            fprintf(stderr, PROG ": %s '%s' is not understood (try '" PROG " --help')\n", o, v);
            return 2;
        }
    }
    int nsrc = i < argc ? argc - i - 1 : 0;
    if (nsrc == 0 || (f == FMT_RAW && nsrc != 1 && !write_dir)) {
        fprintf(stderr, PROG ": give %s after -- (try '" PROG " --help')\n",
                f == FMT_RAW ? "exactly one SOURCE (--format raw)" : "the SOURCEs");
        return 2;
    }
    b.objdir = b.objdir ? b.objdir : write_dir ? write_dir : "callsight-obj";
    if (!b.cxx || !*b.cxx)
        b.cxx = b.cc;
    struct choose ch;
    struct graph g;
    memset(&g, 0, sizeof g);
    char err[CONFIG_ERR_MAX + 64];
    if (choose_init(&ch, config, required, err, sizeof err) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    int rc = ch.graph_rule && use_graph(&ch, &g, &b, argv + i + 1, nsrc) < 0;
    if (rc == 0)
        choose_warn_unused(&ch, argv + i + 1, (size_t)nsrc, PROG);
    size_t selected = 0;
    static char extra[CHOOSE_FLAGS_MAX];
    if (rc == 0 && ch.g && f == FMT_LIST && !write_dir)
        printf("#\tgraph\n");
    for (int k = 0; k < nsrc && rc == 0; k++) {
        const char *src = argv[i + 1 + k];
        const struct config_rule *why;
        int on = ch.g ? choose_unit_flags(&ch, (size_t)k, write_dir != NULL, extra, sizeof extra)
                      : choose_source(&ch, src, &why);
        if (!ch.g)
            extra[0] = '\0';
        selected += on > 0;
        if (on < 0) {
            fprintf(stderr, PROG ": %s: more than %d bytes of flags\n", src, CHOOSE_FLAGS_MAX);
            rc = 1;
        } else if (write_dir) {
            rc = write_one(write_dir, src, instr, on, extra) < 0;
        } else {
            print_one(f, src, instr, on, extra);
        }
    }
    if (rc == 0 && ch.have_file && !selected)
        fprintf(stderr, PROG ": warning: %s selects none of the %d sources: the instrumented build has no hooks\n",
                ch.path, nsrc);
    choose_free(&ch);
    graph_free(&g);
    return fflush(stdout) == 0 ? rc : 1;
}
