/*
 * analyze.c - `callsight analyze`: per-function call counts and timing from
 * trace files, local or streamed.
 *
 * The command wires the modules together and owns the exit status:
 *   trace_files (find and group) -> analysis (anchor pre-pass, then one
 *   streaming pass: trace_reader -> callstack -> funcstats) -> symbols (one
 *   batched addr2line) -> analysis_write_summary + report_table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis.h"
#include "commands.h"
#include "report.h"
#include "symbols.h"
#include "trace_files.h"

#define PROG "callsight analyze"

struct options {
    const char *exe;
    const char *addr2line;
    size_t top;
    const char **paths;
    size_t npaths;
};

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight analyze [DIR|FILE ...] --exe BIN [--top N] [--addr2line TOOL]\n"
"\n"
"Report exact per-function call counts and timing from callsight trace files.\n"
"\n"
"Every FILE given is read, and every trace file in each DIR (not recursive;\n"
"default DIR: ./traces):\n"
"  trace.<pid>.<tid>.<seq>.bin   local file mode: one thread of one process\n"
"  trace.stream.<id>.<seq>.bin   written by 'callsight serve': one connection,\n"
"                                all of its threads interleaved\n"
"Segments are read in seq order, one series at a time; threads are told\n"
"apart by (process or stream, tid).  A damaged or foreign file is named on\n"
"stderr and the rest are still analyzed.\n""Raw tick timestamps become ns by the file's tick_hz, or by the rate between\n"
"the start and exit clock anchors when the process recorded one.\n"
"\n"
"options:\n"
"  --exe BIN          the instrumented binary that was traced (required): its\n"
"                     debug info and symbol table name the functions\n"
"  --top N            print the N functions with the most self time\n"
"                     (default 20; 0 prints every function)\n"
"  --addr2line TOOL   addr2line to run (default: addr2line); for a binary\n"
"                     built for another architecture, its toolchain's own,\n"
"                     e.g. aarch64-linux-gnu-addr2line\n"
"  -h, --help         print this help\n"
"\n"
"output:\n"
"  events=N threads=N functions=N span=S.SSSSSSs unmatched_exits=N unclosed_enters=N dropped=N\n"
"  note: pid|stream ID: ...      one line per capture note: capture stopped\n"
"                                (byte budget, disk floor, write error, event\n"
"                                limit), flight-recorder wrap, stream gap,\n"
"                                device-dropped events, events a thread lost\n"
"  (blank line)\n"
"  calls incl_ms self_ms p50_us p99_us max_us function (file:line)\n"
"                                one row per function, most self time first\n"
"\n"
"  events           enter and exit records read (markers excluded)\n"
"  threads          distinct (process or stream, tid) with events\n"
"  functions        distinct function addresses\n"
"  span             last timestamp minus first, in seconds\n"
"  unmatched_exits  exits that did not match the innermost open call\n"
"  unclosed_enters  calls still open when their thread or data ended\n"
"  dropped          events lost before reaching the files, per source the\n"
"                   larger of the device's count and the threads' own counts\n"
"  incl_ms/self_ms  total time in the function with/without its callees\n"
"  p50/p99/max_us   inclusive time per call (percentiles within 2%%)\n"
"\n"
"Functions that cannot be named are shown by address in hex.\n"
"Exit status: 0 success (notes included), 1 error, 2 usage error.\n");
}

/* The value of option `name` at argv[*i] ("--name V" or "--name=V"), or
 * NULL when argv[*i] is not that option.  *missing is set if it has no
 * value. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    size_t len = strlen(name);
    if (strncmp(argv[*i], name, len) != 0)
        return NULL;
    if (argv[*i][len] == '=')
        return argv[*i] + len + 1;
    if (argv[*i][len] != 0)
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_count(const char *s, size_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* 0 ok, 1 help printed, 2 usage error reported. */
static int parse_args(int argc, char **argv, struct options *o)
{
    int only_paths = 0;
    o->addr2line = "addr2line";
    o->top = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        if (only_paths || a[0] != '-' || !a[1]) {
            o->paths[o->npaths++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_paths = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if ((v = option_value(argc, argv, &i, "--exe", &missing))) {
            o->exe = v;
        } else if ((v = option_value(argc, argv, &i, "--addr2line", &missing))) {
            o->addr2line = v;
        } else if ((v = option_value(argc, argv, &i, "--top", &missing))) {
            if (parse_count(v, &o->top) < 0) {
                fprintf(stderr, PROG ": --top needs a count (0 = all), not '%s'\n", v);
                return 2;
            }
        } else if (missing) {
            fprintf(stderr, PROG ": %s needs a value (try '" PROG " --help')\n", a);
            return 2;
        } else {
            fprintf(stderr, PROG ": unknown option '%s' (try '" PROG " --help')\n", a);
            return 2;
        }
    }
    return 0;
}

static int check_exe(const char *exe)
{
    struct stat st;
    if (!exe) {
        fprintf(stderr, PROG ": --exe BIN is required: the traced binary, for symbols\n");
        return 2;
    }
    if (stat(exe, &st) < 0) {
        fprintf(stderr, PROG ": --exe %s: %s\n", exe, strerror(errno));
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, PROG ": --exe %s: not a regular file\n", exe);
        return 1;
    }
    return 0;
}

/* Find and group the trace files; 0 ok, else the exit status. */
static int collect(const struct options *o, struct trace_files *tf)
{
    char msg[512];
    long total = 0;
    for (size_t i = 0; i < o->npaths; i++) {
        long n = trace_files_add(tf, o->paths[i], msg, sizeof msg);
        if (n < 0) {
            fprintf(stderr, PROG ": %s\n", msg);
            return 1;
        }
        total += n;
    }
    if (total == 0) {
        if (o->npaths == 1)
            fprintf(stderr, PROG ": no trace files found in %s\n", o->paths[0]);
        else
            fprintf(stderr, PROG ": no trace files found in the %zu paths given\n", o->npaths);
        return 1;
    }
    if (trace_files_group(tf) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    return 0;
}

/* Names for every function, in funcstats order; NULL and *rc set on error. */
static struct symbol *resolve(const struct options *o, const struct funcstats *fs, int *rc)
{
    char msg[512];
    uint64_t *addrs = malloc((fs->n ? fs->n : 1) * sizeof *addrs);
    struct symbol *syms = calloc(fs->n ? fs->n : 1, sizeof *syms);
    *rc = 0;
    if (!addrs || !syms) {
        fprintf(stderr, PROG ": out of memory\n");
        goto fail;
    }
    for (size_t i = 0; i < fs->n; i++)
        addrs[i] = fs->v[i].addr;
    if (fs->n && symbols_resolve(o->addr2line, o->exe, addrs, fs->n, syms, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": %s\n", msg);
        goto fail;
    }
    free(addrs);
    return syms;
fail:
    free(addrs);
    free(syms);
    *rc = 1;
    return NULL;
}

static int analyze(const struct options *o, struct trace_files *tf)
{
    struct analysis a;
    struct symbol *syms = NULL;
    int rc = 0;

    analysis_init(&a, stderr, PROG);
    analysis_find_anchors(&a, tf);
    for (size_t i = 0; i < tf->nseries; i++)
        analysis_run_series(&a, &tf->series[i]);
    if (a.oom) {
        fprintf(stderr, PROG ": out of memory\n");
        rc = 1;
    } else if (!a.files_read) {
        fprintf(stderr, PROG ": none of the %zu trace files could be read\n", a.files_bad);
        rc = 1;
    } else if ((syms = resolve(o, &a.funcs, &rc))) {
        analysis_write_summary(&a, stdout);
        putchar('\n');
        if (report_table(stdout, &a.funcs, syms, o->top) < 0) {
            fprintf(stderr, PROG ": out of memory\n");
            rc = 1;
        }
        symbols_free(syms, a.funcs.n);
        free(syms);
    }
    analysis_free(&a);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, PROG ": writing the report: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}

int cmd_analyze(int argc, char **argv)
{
    struct options o = {0};
    struct trace_files tf;
    char msg[512];
    int rc;

    o.paths = calloc((size_t)argc + 1, sizeof *o.paths);
    if (!o.paths) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    rc = parse_args(argc, argv, &o);
    if (rc) {
        free(o.paths);
        return rc == 1 ? 0 : rc;
    }
    if (!o.npaths)
        o.paths[o.npaths++] = "./traces";
    if ((rc = check_exe(o.exe))) {
        free(o.paths);
        return rc;
    }
    if (symbols_check_tool(o.addr2line, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": %s\n", msg);
        free(o.paths);
        return 1;
    }
    trace_files_init(&tf);
    rc = collect(&o, &tf);
    if (!rc)
        rc = analyze(&o, &tf);
    trace_files_free(&tf);
    free(o.paths);
    return rc;
}
