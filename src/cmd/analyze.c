/*
 * analyze.c - `callsight analyze`: per-function call counts and timing from
 * trace files, local or streamed, as a table, JSON, folded stacks, a flame
 * graph, a Perfetto timeline, Chrome trace-event JSON, a call-site table,
 * the call tree or each thread's calls in order (also `callsight replay`:
 * main.c runs this command under that name too).
 *
 * The command wires the modules together and owns the exit status:
 *   trace_files (find and group) -> analysis (pre-passes, then one
 *   streaming pass: trace_reader -> callstack -> sinks: funcstats always,
 *   plus cctree, callsites, out_perfetto, out_chrome or out_replay as the format
 *   needs) -> symbols
 *   (one batched addr2line for functions and call sites) -> the format's
 *   writer (report.c, out_*.c).  Before any name is looked up, each
 *   build-id the runtime recorded is matched to an --exe's (elf_buildid.c):
 *   a trace may hold several programs that shared one ring, each named
 *   from its own binary.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h> /* TIOCGWINSZ: a terminal's width, for the text table */
#include <sys/stat.h>

#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/callsites.h"
#include "analysis/callstack.h"
#include "analysis/cctree.h"
#include "analysis/jobs.h"
#include "analysis/naming.h"
#include "out/advice.h"
#include "out/notes.h"
#include "commands.h"
#include "out/out.h"
#include "out/out_callers.h"
#include "out/out_folded.h"
#include "out/out_json.h"
#include "out/out_chrome.h"
#include "out/out_perfetto.h"
#include "out/out_replay.h"
#include "out/out_sqlite.h"
#include "lib/textesc.h"
#include "out/out_svg.h"
#include "out/out_tree.h"
#include "out/report.h"
#include "read/elf_buildid.h"
#include "read/modfile.h"
#include "read/symbols.h"
#include "read/trace_files.h"
#include "read/trace_runs.h"

/* "callsight analyze", or "callsight replay" when run under that name, so
 * that every error names the command the user typed. */
static const char *prog = "callsight analyze";

/* One error line on stderr, prog first. */
static void say_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_err(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(MODLIST_MAX == 4096, "--max-modules' message says its bound");
_Static_assert(OUT_TREE_DEPTH_MAX == 4096, "--tree-depth's message says its bound");

enum format { FMT_TEXT, FMT_JSON, FMT_FOLDED, FMT_SVG, FMT_PERFETTO, FMT_CALLERS, FMT_CHROME, FMT_TREE, FMT_REPLAY, FMT_SQLITE };
static const char *const format_names[] = {"text", "json", "folded", "svg", "perfetto", "callers", "chrome", "tree",
                                           "replay", "sqlite"};

struct options {
    struct analysis_exe exes[ANALYSIS_MAX_EXES]; /* --exe, in the order given */
    size_t nexes;
    const char *addr2line;
    size_t top;
    const char **paths;
    size_t npaths;
    enum format format;
    const char *out_path;
    size_t max_stacks;
    size_t max_threads, max_funcs, max_depth; /* --max-threads, --max-funcs, --max-depth (0: default) */
    size_t max_modules;    /* --max-modules (0: default) */
    size_t modules_mb;     /* --max-modules-mb (0: default) */
    size_t jobs;           /* --jobs (0: the CPUs online) */
    size_t folded_depth;   /* --max-folded-depth (0: default) */
    uint64_t folded_bytes; /* --max-folded-mb, in bytes (0: default) */
    int force; /* --force: analyze even if --exe is not the traced binary */
    int keep_tracer_time; /* --keep-tracer-time */
    int trigger;          /* --trigger: only the slow calls and their stacks */
    int64_t interval_ns;  /* --interval (0: not given) */
    struct out_tree_opts tree; /* --tree-depth (0: not given), --per-thread; top from --top */
    size_t max_lines;     /* --max-lines (replay) */
    int replay_cmd;       /* run as `callsight replay`: its help */
    int have_max_lines;
    struct analysis_filter filter;
    uint64_t *funcs; /* --function addresses (malloc'ed) */
    uint32_t *func_exe; /* the --exe each was found in (malloc'ed) */
    struct modfile_where where; /* --sysroot, --debug-dir: shared objects' files */
    uint32_t run_pid;     /* --run PID (when has_run) */
    int has_run, all_runs; /* --run, --all-runs */
    char runs_note[1200]; /* which file-mode run is reported (trace_runs_note) */
    struct report_opts report;  /* --sort, --match, --exclude, --long-names (report.h) */
    const char **globs_match, **globs_exclude; /* report's lists (argc long, malloc'ed) */
    int threads;                /* --threads: the per-thread table */
    int wide;                   /* --wide: every column, however wide the terminal */
};

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight analyze [DIR|FILE ...] --exe BIN [--exe BIN2 ...] [--format F] [-o FILE]\n"
"                         [--top N] [--thread TID|NAME] [--since T] [--until T]\n"
"                         [--function NAME] [--max-stacks N] [--interval T]\n"
"                         [--addr2line TOOL] [--force] [--keep-tracer-time]\n"
"                         [--sysroot DIR] [--debug-dir DIR ...] [--trigger]\n"
"                         [--max-threads N] [--max-funcs N] [--max-depth N]\n"
"                         [--max-folded-depth N] [--max-folded-mb N] [--jobs N]\n"
"                         [--max-modules N] [--max-modules-mb N]\n"
"                         [--debuginfod-deadline T] [--run PID | --all-runs]\n"
"                         [--per-thread] [--tree-depth N] [--max-lines N]\n"
"                         [--sort KEY] [--match GLOB ...] [--exclude GLOB ...]\n"
"                         [--long-names] [--threads] [--wide]\n"
"\n"
"Report exact per-function call counts and timing from callsight trace files.\n"
"\n"
"Every FILE given is read, and every trace file in each DIR (not recursive;\n"
"default DIR: ./traces):\n"
"  trace.<pid>.<tid>.<seq>.bin   local file mode: one thread of one process\n"
"  trace.stream.<id>.<seq>.bin   written by 'callsight serve': one connection,\n"
"                                all of its threads interleaved\n"
"Segments are read in seq order, one series at a time; threads are told\n"
"apart by (process or stream, tid).  File mode never removes an earlier\n"
"run's files: when local files hold several runs (program starts, each with\n"
"the processes it forked), the newest is reported and a note names the\n"
"others.  A damaged or foreign file is named on\n"
"stderr and the rest are still analyzed.\n"
"Raw tick timestamps become ns by the file's tick_hz, or by the rate between\n"
"the start and exit clock anchors when the process recorded one.\n"
"\n"
"options:\n"
"  --exe BIN          the instrumented binary that was traced (required): its\n"
"                     debug info and symbol table name the functions.  Traces\n"
"                     record the traced binary's GNU build-id; a BIN whose\n"
"                     build-id differs is refused (exit 1).  When several\n"
"                     programs wrote one ring, give --exe once for each (up to\n"
"                     %d): each process is named from the BIN with its\n"
"                     build-id, and one that matches none is refused.\n"
"                     Shared objects (libraries, dlopen'ed plugins) are named\n"
"                     from the BIN with their build-id, else from the path\n"
"                     they were loaded from if the file there has it (inside\n"
"                     --sysroot when given), in a --debug-dir, or from\n"
"                     debuginfod; else\n"
"                     as libfoo.so+0x1234, with a note\n",
            ANALYSIS_MAX_EXES);
    fprintf(out,
"  --sysroot DIR      the device's root file system copied here: a shared\n"
"                     object loaded from /usr/lib/libfoo.so is looked for as\n"
"                     DIR/usr/lib/libfoo.so (its build-id checked), and only\n"
"                     there: .. and symlinks stay inside DIR\n"
"  --debug-dir DIR    debug files by build-id, DIR/.build-id/ab/cdef....debug\n"
"                     (the layout GDB and perf use); may be repeated.  Then\n"
"                     the debuginfod servers in DEBUGINFOD_URLS, if it is set\n"
"                     (nothing is contacted otherwise)\n"
"  --debuginfod-deadline T\n"
"                     debuginfod: every module's answer within T of the first\n"
"                     request (default %us; %d requests at a time, each also\n"
"                     bounded by DEBUGINFOD_TIMEOUT); modules not answered by\n"
"                     then are shown by offset, and a note says how many\n",
            MODFILE_DEBUGINFOD_DEADLINE_MS / 1000, MODFILE_DEBUGINFOD_THREADS);
    fprintf(out,
"  --run PID          of several file-mode runs, report the one pid PID was\n"
"                     in (the program, or a child it forked)\n"
"  --all-runs         report every run in the files together\n"
"  --trigger          text: only the calls that fired TRACE_TRIGGER, each with\n"
"                     its stack at that moment, a frame a line (file:line);\n"
"                     exit 1 when the traces hold none\n"
"  --force            analyze anyway when a build-id matches no BIN: those\n"
"                     functions are named from the first BIN (a warning is\n"
"                     printed: names may be wrong)\n"
"  --keep-tracer-time count the tracer's own time (its flushes: file writes,\n"
"                     waits for the ring) in the calls it interrupted, as\n"
"                     before traces recorded it; by default it is taken out\n"
"                     of every call open at the time, and a note says how much\n"
"  --format F         text (default), json, folded, svg, perfetto, chrome,\n"
"                     callers, tree, replay or sqlite\n"
"  -o, --output FILE  write there instead of stdout\n"
"  --top N            text and callers: print the N rows with the most self\n"
"                     (callers: inclusive) time (default 20; 0 prints all);\n"
"                     text: one line then says how many more, their self time\n"
"                     and calls;\n"
"                     tree: the N paths with the most inclusive time under\n"
"                     each, the rest summed in one '... N more paths' line\n"
"  --per-thread       tree: one tree per thread (default: threads merged, the\n"
"                     same call path on every thread one line)\n"
"  --tree-depth N     tree: levels of calls shown (default %u, at most %u);\n"
"                     a line with paths below that says '[+N deeper paths, T us]'\n"
"  --max-lines N      replay: calls shown per thread (default %u; 0: all); a\n"
"                     last line says how many more there were\n"
            , OUT_TREE_DEPTH, OUT_TREE_DEPTH_MAX, OUT_REPLAY_LINES);
    fprintf(out,
"  --sort KEY         text and json: rows by calls, self (the default), incl,\n"
"                     mean, max, p99 (largest first) or name\n"
"  --match GLOB       text and json: only the functions GLOB matches (may be\n"
"                     repeated: any of them), by name as --function takes it:\n"
"                     whole, or from any '::' on, template arguments left out,\n"
"                     each component a shell glob ('fi*', 'Table::*'); one\n"
"                     that matches no function is an error naming the nearest\n"
"  --exclude GLOB     text and json: leave out the functions GLOB matches (may\n"
"                     be repeated); one that matches none is a note\n"
"  --long-names       text: C++ names in full (default: template arguments and\n"
"                     parameters collapsed, Map<...>::get(...), return type left out)\n"
"  --wide             text on a terminal: every column and whole names (by\n"
"                     default rows fit its width: min, p50, mean, self%% left out\n"
"                     in that order as needed, a line says which; names lose\n"
"                     their middle); output to a file or pipe is always whole\n"
"  --threads          text: a table of the threads instead of the functions:\n"
"                     source, tid, calls, events, self time and share, events\n"
"                     lost, span (first to last event), name; --top N rows,\n"
"                     then one line for the rest\n"
"  --thread TID|NAME  only the threads with this tid, or this name (as the\n"
"                     runtime recorded it; a glob as TRACE_THREADS takes,\n"
"                     e.g. 'worker-*'); when it matches none, a note lists them\n"
"  --since T, --until T\n"
"                     only calls that start inside this window; T is a time\n"
"                     from the trace's first event: a number with a unit,\n"
"                     s (the default), ms, us or ns, e.g. 1.5, 250ms, 40us.\n"
"                     Summary traces: the intervals between snapshots that\n"
"                     end inside the window, T from the program's start\n"
"  --function NAME    only NAME's calls and everything they call (its subtree);\n"
"                     NAME as in the table, a glob ('fi*', '*::insert'), or a\n"
"                     link-time address 0x...\n"
"  --max-stacks N     folded and svg: distinct stacks kept (default %u); calls\n"
"                     on further stacks are counted under [other stacks]\n"
"  --max-folded-depth N\n"
"                     folded: frames per line (default %u); deeper frames are\n"
"                     folded into their ancestor's '...;[deeper] SELF_NS' line\n"
"  --max-folded-mb N  folded: MiB of output at most (default %llu); further\n"
"                     stacks are left out, and a note says how many\n"
"  --max-threads N    threads analyzed (default %u); records of further threads\n"
"                     are counted, not analyzed, and a note says how many\n"
"  --max-funcs N      distinct functions kept (default %zu); calls of further\n"
"                     functions are counted in one row, [other]\n"
"  --max-depth N      frames kept per thread (default %zu); deeper calls are\n"
"                     counted, not timed (a note per thread)\n",
            CCTREE_DEFAULT_MAX, OUT_FOLDED_MAX_DEPTH, (unsigned long long)(OUT_FOLDED_MAX_BYTES >> 20),
            ANALYSIS_MAX_THREADS, FUNCSTATS_MAX, CALLSTACK_MAX_DEPTH);
    fprintf(out,
"  --max-modules N    modules kept of a thread's module list (default %u, at\n"
"                     most %u); addresses in further ones are named as the\n"
"                     program's, and a note says how many were not kept\n"
"  --max-modules-mb N MiB the module lists may hold at once (default %u);\n"
"                     modules beyond it are not kept, and a note says so\n""  --interval T       summary traces, json: the width of each interval of the\n"
"                     series (default 1s, at least 1ms; set it no finer than\n"
"                     the run's TRACE_SUMMARY_MS, or in stream mode than\n"
"                     trace_stream's --summary-ms); a long run's intervals\n"
"                     are widened as needed to keep the series bounded\n"
"  --jobs N           read the series (a thread's files, a connection's) on N\n"
"                     threads (default: the CPUs online; 1: one pass); the\n"
"                     output is the same whatever N.  One series (a stream's\n"
"                     connection) is cut into N parts read at once when only\n"
"                     the function table is asked for (text, json, --threads,\n"
"                     no filter); --format perfetto and chrome always use one\n"
"  --addr2line TOOL   name functions with this addr2line instead of libdw\n"
"                     (the default, which reads any architecture's ELF in-\n"
"                     process), e.g. aarch64-linux-gnu-addr2line; --function\n"
"                     runs the nm beside it (default: nm)\n"
"  -h, --help         print this help\n"
"\n",
            ANALYSIS_MAX_MODULES, MODLIST_MAX, ANALYSIS_MAX_MODULES_MB);
    fprintf(out,
"formats (docs/analysis.md has the details and the JSON schema):\n"
"  text      the header line, notes and the per-function table below\n"
"  json      the whole report: header, notes, sources, threads, every function\n"
"            with calls, incl, self, min, mean, p50, p90, p99, max (ns), file:line\n"
"  folded    collapsed stacks 'thread;root;child;leaf SELF_NS', one per stack,\n"
"            for flamegraph.pl, inferno or speedscope\n"
"  svg       an interactive flame graph in one self-contained file\n"
"  perfetto  a Perfetto protobuf trace: a timeline per thread, slices per call,\n"
"            losses as instants; open it in ui.perfetto.dev\n"
"  chrome    Chrome's trace-event JSON: complete events per call, thread and\n"
"            process names, losses as instants and counters, the header and\n"
"            notes in otherData; for ui.perfetto.dev, about:tracing or speedscope\n"
"  callers   the hottest call sites: caller file:line -> function\n"
"  tree      the call tree: one line per call path, indented by depth, with\n"
"            its calls, inclusive and self time (us); children by inclusive\n"
"            time; a path's incl is its self plus its children's incl\n"
"  replay    each thread's calls in the order they started, one a line,\n"
"            indented by depth: start (us from the trace's start), duration\n"
"            (us), function; a call without its exit says so, and has no\n"
"            duration (also 'callsight replay')\n"
"  sqlite    an SQLite database (-o FILE.db, a regular file): every call as a\n"
"            row of slice, func_stats (the json's numbers), threads, losses,\n"
"            notes and views; its schema is docs/sql.md, 'callsight sql'\n"
"            queries it\n"
"\n");
    fprintf(out,
"text output:\n"
"  events=N threads=N functions=N span=S.SSSSSSs unmatched_exits=N unclosed_enters=N dropped=N\n"
"  note: pid|stream ID: ...      one line per capture note: capture stopped\n"
"                                (byte budget, disk floor, write error, event\n"
"                                limit), flight-recorder wrap, stream gap,\n"
"                                device-dropped events, events a thread lost,\n"
"                                tracer time excluded, waits for the ring\n"
"  filter: ...: N of M calls selected     (only when filtering)\n"
"  trigger: F took T ms, ...; stack: A > B > F\n"
"                                one line per call that fired TRACE_TRIGGER\n"
"  (blank line)\n"
"  calls incl_ms self_ms self%% mean min p50 p99 max function (file:line)\n"
"                                one row per function, most self time first;\n""                                after --top N rows, 'N more functions (...)'\n"
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
"  self%%            its self time's share of all functions' self time\n"
"  mean/min/p50/p99/max\n"
"                   inclusive time per call, each with its unit (ns, us, ms,\n"
"                   s: at most four digits before the point), e.g. 41.247us;\n"
"                   p50/p99 from a histogram (within 1.6%%), 3 significant\n"
"                   digits, the rest exact\n"
"  incl and self take the unit in their header: ms, or s from 10000 ms; every\n"
"  column is as wide as its widest value.\n"
"The header and notes always describe all input; filters choose the calls\n"
"that go into the table and every other output.\n"
"\n"
"Summary traces (TRACE_MODE=summary) give the same report from the device's\n"
"aggregates: calls, incl, self, min and max exact, percentiles from its\n"
"histograms; json adds \"intervals\", each function's calls and time per\n"
"interval.  span runs from the start of the first interval to the end of\n"
"the last; folded, svg, perfetto, chrome, callers, tree, replay and\n"
"--function need events.\n"
"\n"
"Functions that cannot be named are shown by address in hex.\n"
"Exit status: 0 success (notes included), 1 error, 2 usage error.\n");
}

/* `callsight replay --help`. */
static void replay_usage(FILE *out)
{
    fprintf(out,
"usage: callsight replay [DIR|FILE ...] --exe BIN [--thread TID|NAME]\n"
"                        [--since T] [--until T] [--function NAME]\n"
"                        [--max-lines N] [-o FILE] [analyze options]\n"
"\n"
"Each thread's calls in the order they started, one line per call, nested by\n"
"indentation: the same as 'callsight analyze --format replay'.  The header\n"
"line and notes come first, as in the table (losses included); then, per\n"
"thread, its line and its calls:\n"
"\n"
"  thread 500 (main): 4 calls\n"
"        start_us       dur_us  call\n"
"           0.000    10000.000  main\n"
"         100.000     1000.000    work\n"
"\n"
"  start_us   when the call started, in us from the trace's start (where\n"
"             --since and --until count from)\n"
"  dur_us     its inclusive time (the tracer's own time taken out); '-' and\n"
"             '(no exit in the trace)' for a call cut short: still open at\n"
"             the end, or its exit lost or unmatched; frames entered while\n"
"             events were lost are '[lost frames]', and a loss has a line in\n"
"             its place ('[N events lost here]', '[stream gap: ...]')\n"
"\n"
"options:\n"
"  --exe BIN          the traced binary (required), as for analyze\n"
"  --thread TID|NAME  only these threads (a tid, a name or a glob)\n"
"  --since T, --until T\n"
"                     only calls that start in this window: 1.5, 250ms, 40us\n"
"  --function NAME    only NAME's calls and what they call\n"
"  --max-lines N      calls shown per thread (default %u; 0: all); a last line\n"
"                     says how many more there were\n"
"  -o, --output FILE  write there instead of stdout\n"
"  -h, --help         print this help\n"
"Every option of 'callsight analyze' is taken too ('callsight analyze\n"
"--help'); the output is written in bounded memory, a few counters per thread.\n"
"Exit status: 0 success (notes included), 1 error, 2 usage error.\n",
            OUT_REPLAY_LINES);
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

/* A time from the trace's start: a decimal number and a unit (s, ms, us,
 * ns; s when none).  0 ok, -1 not a time. */
static int parse_time(const char *s, int64_t *ns)
{
    static const struct { const char *unit; double scale; } units[] = {
        {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
    char *end;
    if ((*s < '0' || *s > '9') && *s != '.')
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit) && v * units[i].scale < 9.2e18) {
            *ns = (int64_t)(v * units[i].scale + 0.5);
            return 0;
        }
    return -1;
}

static int parse_sort(const char *v, enum funcstats_key *k)
{
    static const char *const words[] = {"self", "calls", "incl", "mean", "max", "p99", "name"};
    static const enum funcstats_key keys[] = {FUNCSTATS_BY_SELF, FUNCSTATS_BY_CALLS, FUNCSTATS_BY_INCL,
                                              FUNCSTATS_BY_MEAN, FUNCSTATS_BY_MAX,   FUNCSTATS_BY_P99,
                                              FUNCSTATS_BY_NAME};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(v, words[i])) {
            *k = keys[i];
            return 0;
        }
    return -1;
}

/* --match and --exclude: each kept in argv's order (argc entries at most,
 * allocated with the paths). */
static const char *take_glob(struct options *o, const char *name, const char *v)
{
    int match = !strcmp(name, "--match");
    if (!*v)
        return match ? "--match needs a glob" : "--exclude needs a glob";
    if (match)
        o->globs_match[o->report.nmatch++] = v;
    else
        o->globs_exclude[o->report.nexclude++] = v;
    return NULL;
}

static int parse_format(const char *v, enum format *f)
{
    for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
        if (!strcmp(v, format_names[i])) {
            *f = (enum format)i;
            return 0;
        }
    return -1;
}

/* A filter option's value; NULL ok, else what is wrong with it. */
static const char *take_filter(struct analysis_filter *f, const char *name, const char *v)
{
    if (!strcmp(name, "--thread")) {
        f->thread = v;
        return *v ? NULL : "--thread needs a tid or a name";
    }
    if (!strcmp(name, "--function")) {
        f->function = v;
        return *v ? NULL : "--function needs a name";
    }
    int since = !strcmp(name, "--since");
    if (parse_time(v, since ? &f->since_ns : &f->until_ns) < 0)
        return since ? "--since needs a time such as 1.5, 250ms, 40us"
                     : "--until needs a time such as 1.5, 250ms, 40us";
    *(since ? &f->has_since : &f->has_until) = 1;
    return NULL;
}

/* One option with a value; 0 ok, 2 usage error reported. */
static int take_value(struct options *o, const char *name, const char *v)
{
    const char *bad = NULL;
    size_t mb = 0, pid = 0;
    int64_t ns = 0;
    if (!strcmp(name, "--exe") && o->nexes == ANALYSIS_MAX_EXES)
        bad = "--exe is given at most " STR(ANALYSIS_MAX_EXES) " times";
    else if (!strcmp(name, "--exe"))
        o->exes[o->nexes++].path = v;
    else if (!strcmp(name, "--addr2line"))
        o->addr2line = v;
    else if (!strcmp(name, "--sysroot"))
        o->where.sysroot = v;
    else if (!strcmp(name, "--debug-dir") && o->where.ndebug_dirs == MODFILE_MAX_DEBUG_DIRS)
        bad = "--debug-dir is given at most " STR(MODFILE_MAX_DEBUG_DIRS) " times";
    else if (!strcmp(name, "--debug-dir"))
        o->where.debug_dirs[o->where.ndebug_dirs++] = v;
    else if (!strcmp(name, "--output"))
        o->out_path = v;
    else if (!strcmp(name, "--top") && parse_count(v, &o->top) < 0)
        bad = "--top needs a count (0 = all)";
    else if (!strcmp(name, "--sort") && parse_sort(v, &o->report.sort) < 0)
        bad = "--sort needs one of calls, self, incl, mean, max, p99, name";
    else if (!strcmp(name, "--match") || !strcmp(name, "--exclude"))
        bad = take_glob(o, name, v);
    else if (!strcmp(name, "--format") && parse_format(v, &o->format) < 0)
        bad = "--format needs one of text, json, folded, svg, perfetto, chrome, callers, tree, replay, sqlite";
    else if (!strcmp(name, "--tree-depth") &&
             (parse_count(v, &o->tree.max_depth) < 0 || !o->tree.max_depth || o->tree.max_depth > OUT_TREE_DEPTH_MAX))
        bad = "--tree-depth needs a count from 1 to 4096"; /* OUT_TREE_DEPTH_MAX */
    else if (!strcmp(name, "--max-lines") && parse_count(v, &o->max_lines) < 0)
        bad = "--max-lines needs a count (0 = all)";
    else if (!strcmp(name, "--max-stacks") && (parse_count(v, &o->max_stacks) < 0 || o->max_stacks < 2))
        bad = "--max-stacks needs a count of at least 2";
    else if (!strcmp(name, "--max-threads") && (parse_count(v, &o->max_threads) < 0 || !o->max_threads))
        bad = "--max-threads needs a count of at least 1";
    else if (!strcmp(name, "--max-funcs") && (parse_count(v, &o->max_funcs) < 0 || !o->max_funcs || o->max_funcs > UINT32_MAX - 2))
        bad = "--max-funcs needs a count from 1 to 4294967293";
    else if (!strcmp(name, "--max-folded-depth") && (parse_count(v, &o->folded_depth) < 0 || !o->folded_depth))
        bad = "--max-folded-depth needs a count of at least 1";
    else if (!strcmp(name, "--max-folded-mb") && (parse_count(v, &mb) < 0 || !mb || mb > ((uint64_t)1 << 40)))
        bad = "--max-folded-mb needs a count of MiB from 1 to 1099511627776";
    else if (!strcmp(name, "--max-depth") && (parse_count(v, &o->max_depth) < 0 || !o->max_depth))
        bad = "--max-depth needs a count of at least 1";
    else if (!strcmp(name, "--max-modules") &&
             (parse_count(v, &o->max_modules) < 0 || !o->max_modules || o->max_modules > MODLIST_MAX))
        bad = "--max-modules needs a count from 1 to 4096"; /* MODLIST_MAX */
    else if (!strcmp(name, "--max-modules-mb") &&
             (parse_count(v, &o->modules_mb) < 0 || !o->modules_mb || o->modules_mb > ((size_t)1 << 20) ||
              o->modules_mb > SIZE_MAX >> 20))
        bad = "--max-modules-mb needs a count of MiB from 1 to 1048576";
    else if (!strcmp(name, "--jobs") && (parse_count(v, &o->jobs) < 0 || !o->jobs || o->jobs > ANALYSIS_MAX_JOBS))
        bad = "--jobs needs a count from 1 to " STR(ANALYSIS_MAX_JOBS);
    else if (!strcmp(name, "--interval") && (parse_time(v, &o->interval_ns) < 0 || o->interval_ns < 1000000))
        bad = "--interval needs a time of at least 1ms, such as 1, 500ms";
    else if (!strcmp(name, "--debuginfod-deadline") && (parse_time(v, &ns) < 0 || ns < 1000000 || ns > INT64_MAX / 2))
        bad = "--debuginfod-deadline needs a time of at least 1ms, such as 30, 500ms";
    else if (!strcmp(name, "--run") && (parse_count(v, &pid) < 0 || !pid || pid > UINT32_MAX))
        bad = "--run needs a process id";
    else if (!strcmp(name, "--run"))
        o->run_pid = (uint32_t)pid, o->has_run = 1;
    else if (!strcmp(name, "--thread") || !strcmp(name, "--function") ||
             !strcmp(name, "--since") || !strcmp(name, "--until"))
        bad = take_filter(&o->filter, name, v);
    if (bad) {
        say_err("%s, not '%s'\n", bad, v);
        return 2;
    }
    if (!strcmp(name, "--max-lines"))
        o->have_max_lines = 1;
    if (mb)
        o->folded_bytes = (uint64_t)mb << 20;
    if (ns)
        o->where.debuginfod_deadline_ms = (uint64_t)(ns + 999999) / 1000000;
    return 0;
}

static const char *const value_options[] = {"--exe", "--addr2line", "--top", "--format",
                                             "--output", "-o", "--thread", "--since", "--until",
                                             "--function", "--max-stacks", "--interval",
                                             "--sysroot", "--debug-dir", "--max-threads", "--max-funcs",
                                             "--max-depth", "--max-folded-depth",
                                             "--max-folded-mb", "--jobs", "--max-modules",
                                             "--max-modules-mb", "--debuginfod-deadline", "--tree-depth",
                                             "--max-lines", "--run", "--sort", "--match", "--exclude"};

/* 0 ok, 1 help printed, 2 usage error reported. */
static int parse_args(int argc, char **argv, struct options *o)
{
    int only_paths = 0;
    o->addr2line = NULL; /* names through libdw, unless --addr2line */
    o->top = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int missing = 0, rc;
        if (only_paths || a[0] != '-' || !a[1]) {
            o->paths[o->npaths++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_paths = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            (o->replay_cmd ? replay_usage : usage)(stdout);
            return 1;
        }
        if (!strcmp(a, "--force")) {
            o->force = 1;
            continue;
        }
        if (!strcmp(a, "--keep-tracer-time")) {
            o->keep_tracer_time = 1;
            continue;
        }
        if (!strcmp(a, "--trigger")) {
            o->trigger = 1;
            continue;
        }
        if (!strcmp(a, "--per-thread")) {
            o->tree.per_thread = 1;
            continue;
        }
        if (!strcmp(a, "--all-runs")) {
            o->all_runs = 1;
            continue;
        }
        if (!strcmp(a, "--long-names") || !strcmp(a, "--threads")) {
            *(!strcmp(a, "--threads") ? &o->threads : &o->report.long_names) = 1;
            continue;
        }
        if (!strcmp(a, "--wide")) {
            o->wide = 1;
            continue;
        }
        size_t k = 0;
        for (; k < sizeof value_options / sizeof value_options[0] && !v && !missing; k++)
            v = option_value(argc, argv, &i, value_options[k], &missing);
        if (missing) {
            say_err("%s needs a value (try '%s --help')\n", a, prog);
            return 2;
        }
        if (!v) {
            say_err("unknown option '%s' (try '%s --help')\n", a, prog);
            return 2;
        }
        const char *name = value_options[k - 1];
        if ((rc = take_value(o, strcmp(name, "-o") ? name : "--output", v)))
            return rc;
    }
    const struct analysis_filter *f = &o->filter;
    if (f->has_since && f->has_until && f->until_ns < f->since_ns) {
        say_err("--until is before --since\n");
        return 2;
    }
    if (o->has_run && o->all_runs) {
        say_err("--run and --all-runs choose differently: give one\n");
        return 2;
    }
    if (o->trigger && o->format != FMT_TEXT) {
        say_err("--trigger is a text view (json always carries \"triggers\")\n");
        return 2;
    }
    if ((o->tree.per_thread || o->tree.max_depth) && o->format != FMT_TREE) {
        say_err("--%s is for --format tree\n", o->tree.per_thread ? "per-thread" : "tree-depth");
        return 2;
    }
    if (o->have_max_lines && o->format != FMT_REPLAY) {
        say_err("--max-lines is for --format replay (callsight replay)\n");
        return 2;
    }
    if (o->threads && (o->format != FMT_TEXT || o->trigger)) {
        say_err("--threads is a text view (json always carries \"threads\")\n");
        return 2;
    }
    if ((o->report.nmatch || o->report.nexclude) && o->format != FMT_TEXT && o->format != FMT_JSON) {
        say_err("--match and --exclude choose the rows of text and json; --function chooses "
                        "the calls of every format\n");
        return 2;
    }
    return 0;
}

/* Each --exe is a regular file; its build-id is read (none: 0).  0 ok,
 * else the exit status (reported). */
static int check_exes(struct options *o)
{
    struct stat st;
    char msg[512];
    if (!o->nexes) {
        say_err("--exe BIN is required: the traced binary, for symbols\n");
        return 2;
    }
    for (size_t i = 0; i < o->nexes; i++) {
        struct analysis_exe *e = &o->exes[i];
        struct elf_buildid b;
        if (stat(e->path, &st) < 0) {
            say_err("--exe %s: %s\n", e->path, strerror(errno));
            return 1;
        }
        if (!S_ISREG(st.st_mode)) {
            say_err("--exe %s: not a regular file\n", e->path);
            return 1;
        }
        if (elf_buildid_read(e->path, &b, msg, sizeof msg) < 0)
            b.len = 0; /* traces recorded from it then are taken on trust */
        e->have_build_id = b.len > 0;
        elf_buildid_words(&b, e->build_id);
    }
    return 0;
}

/* --sysroot is a directory: a typo would otherwise only show as modules
 * left unnamed.  (A --debug-dir may be missing, as in GDB's list of them:
 * it then holds nothing.)  0 ok, else the exit status (said). */
static int check_sysroot(const char *dir)
{
    struct stat st;
    const char *why = !dir ? NULL : stat(dir, &st) < 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
    if (why)
        say_err("--sysroot %s: %s\n", dir, why);
    return why ? 1 : 0;
}

/* Find and group the trace files; 0 ok, else the exit status. */
static int collect(const struct options *o, struct trace_files *tf)
{
    char msg[512];
    long total = 0;
    for (size_t i = 0; i < o->npaths; i++) {
        long n = trace_files_add(tf, o->paths[i], msg, sizeof msg);
        if (n < 0) {
            say_err("%s\n", msg);
            return 1;
        }
        total += n;
    }
    if (total == 0) {
        /* the commonest cause by far: the program ran untraced */
        if (o->npaths == 1)
            say_err("no trace files found in %s (trace.*.bin): was the program run with "
                            "TRACE_ENABLE=1 and TRACE_DIR=%s? (`callsight run` sets both; `callsight doctor` checks "
                            "a set-up)\n", o->paths[0], o->paths[0]);
        else
            say_err("no trace files found in the %zu paths given (trace.*.bin): was the program run "
                            "with TRACE_ENABLE=1? (`callsight run` sets it)\n", o->npaths);
        return 1;
    }
    if (trace_files_group(tf) < 0) {
        say_err("out of memory\n");
        return 1;
    }
    return 0;
}

/* Of several file-mode runs, keep the newest or --run's, unless --all-runs,
 * and word the note that says so.  0 ok, else the exit status (said). */
static int choose_run(struct options *o, struct trace_files *tf)
{
    struct trace_runs runs;
    char list[800];
    if (trace_runs_find(tf, &runs) < 0) {
        say_err("out of memory\n");
        return 1;
    }
    size_t keep = runs.newest;
    if (o->has_run && (keep = trace_runs_of_pid(tf, &runs, o->run_pid)) == TRACE_RUNS_NONE) {
        trace_runs_list(&runs, TRACE_RUNS_NONE, 8, list, sizeof list);
        if (runs.n)
            say_err("--run %u: no run in these traces has pid %u; they hold %zu: %s\n", o->run_pid,
                    o->run_pid, runs.n, list);
        else
            say_err("--run %u: these traces hold no file-mode run (--run chooses among local "
                            "trace.<pid>.* files)\n", o->run_pid);
        trace_runs_free(&runs);
        return 1;
    }
    if (runs.n > 1 && !o->all_runs)
        trace_runs_keep(tf, &runs, keep);
    trace_runs_note(&runs, keep, o->all_runs, o->runs_note, sizeof o->runs_note);
    trace_runs_free(&runs);
    return 0;
}

/* Append n addresses found in --exe number exe to the targets.  0 ok. */
static int add_targets(struct options *o, const uint64_t *addrs, size_t n, uint32_t exe)
{
    size_t have = o->filter.nfuncs;
    uint64_t *f = realloc(o->funcs, (have + n) * sizeof *f);
    if (f)
        o->funcs = f;
    uint32_t *e = realloc(o->func_exe, (have + n) * sizeof *e);
    if (e)
        o->func_exe = e;
    if (!f || !e)
        return -1;
    for (size_t i = 0; i < n; i++) {
        o->funcs[have + i] = addrs[i];
        o->func_exe[have + i] = exe;
    }
    o->filter.nfuncs = have + n;
    o->filter.funcs = o->funcs;
    o->filter.func_exe = o->func_exe;
    return 0;
}

/* --function: a link-time address as given (in every --exe), or the
 * addresses nm finds for the name in each --exe.  0 ok, else the exit
 * status (reported). */
static int find_targets(struct options *o)
{
    const char *name = o->filter.function;
    char nm[512], msg[512];
    char *end;
    if (!name)
        return 0;
    if (!strncmp(name, "0x", 2)) {
        errno = 0;
        unsigned long long v = strtoull(name + 2, &end, 16);
        uint64_t addr = v;
        int bad = errno || end == name + 2 || *end;
        for (size_t i = 0; !bad && i < o->nexes; i++)
            if (add_targets(o, &addr, 1, (uint32_t)i) < 0)
                goto oom;
        if (!bad)
            return 0;
    }
    symbols_nm_for(o->addr2line ? o->addr2line : "addr2line", nm, sizeof nm);
    for (size_t i = 0; i < o->nexes; i++) {
        uint64_t *addrs;
        size_t n;
        if (symbols_find_function(nm, o->exes[i].path, name, &addrs, &n, msg, sizeof msg) < 0) {
            say_err("--function: %s\n", msg);
            return 1;
        }
        int rc = add_targets(o, addrs, n, (uint32_t)i);
        free(addrs);
        if (rc < 0)
            goto oom;
    }
    if (o->filter.nfuncs)
        return 0;
    if (o->nexes == 1)
        say_err("--function: no function named '%s' in %s\n", name, o->exes[0].path);
    else
        say_err("--function: no function named '%s' in any of the %zu --exe binaries\n",
                name, o->nexes);
    return 1;
oom:
    say_err("out of memory\n");
    return 1;
}

/* The file -o writes until it is whole (open_output); --format sqlite
 * builds its database there. */
static char out_tmp[4096];
static int out_direct;

/* What one run holds: the analysis, the sinks the format needs, names. */
struct run {
    const struct options *o;
    struct analysis a;
    struct cctree tree;
    struct callsites sites;
    struct out_perfetto perf;
    struct out_chrome chrome;
    struct out_replay replay;
    struct out_sqlite sql;
    int have_tree, have_sites, have_perf, have_chrome, have_replay, have_sql;
    struct symbol *syms; /* functions, then call sites */
    size_t nsyms;
    struct modfile files; /* shared objects' files, found by build-id */
    FILE *out;
};

/* The directory of path, for the timeline's temporary file. */
static const char *dir_of(const char *path, char *buf, size_t len)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!path)
        return NULL;
    if (!slash)
        return ".";
    snprintf(buf, len, "%.*s", (int)(slash - path ? slash - path : 1), path);
    return buf;
}

/* Set up the analysis and the format's sinks.  0 ok, else reported, 1. */
static int setup(struct run *r)
{
    const struct options *o = r->o;
    char dir[4096];
    int bad = analysis_set_filter(&r->a, &o->filter) < 0;
    r->a.keep_tracer_time = o->keep_tracer_time;
    if (o->interval_ns)
        r->a.interval_ns = (uint64_t)o->interval_ns;
    if (o->max_threads)
        r->a.max_threads = o->max_threads;
    if (o->max_funcs)
        r->a.funcs.max = o->max_funcs;
    if (o->max_depth)
        r->a.max_depth = o->max_depth;
    if (o->max_modules)
        r->a.modules.per_list = o->max_modules;
    if (o->modules_mb)
        r->a.modules.max_bytes = o->modules_mb << 20;
    if (o->format == FMT_FOLDED || o->format == FMT_SVG || o->format == FMT_TREE) {
        bad |= cctree_init(&r->tree, o->max_stacks) < 0;
        r->tree.merge_threads = o->format == FMT_TREE && !o->tree.per_thread;
        r->have_tree = 1;
        bad |= analysis_add_sink(&r->a, cctree_sink(&r->tree)) < 0;
    } else if (o->format == FMT_CALLERS) {
        callsites_init(&r->sites, &r->a.funcs);
        r->have_sites = 1;
        bad |= analysis_add_sink(&r->a, callsites_sink(&r->sites)) < 0;
    } else if (o->format == FMT_PERFETTO) {
        if (out_perfetto_init(&r->perf, &r->a, dir_of(o->out_path, dir, sizeof dir)) < 0) {
            say_err("temporary file for the timeline: %s\n", strerror(errno));
            return 1;
        }
        r->have_perf = 1;
        bad |= analysis_add_sink(&r->a, out_perfetto_sink(&r->perf)) < 0;
    } else if (o->format == FMT_CHROME) {
        if (out_chrome_init(&r->chrome, &r->a, dir_of(o->out_path, dir, sizeof dir)) < 0) {
            say_err("temporary file for the timeline: %s\n", strerror(errno));
            return 1;
        }
        r->have_chrome = 1;
        bad |= analysis_add_sink(&r->a, out_chrome_sink(&r->chrome)) < 0;
    } else if (o->format == FMT_REPLAY) {
        if (out_replay_init(&r->replay, &r->a, dir_of(o->out_path, dir, sizeof dir),
                            o->have_max_lines ? o->max_lines : OUT_REPLAY_LINES) < 0) {
            say_err("temporary file for the replay: %s\n", strerror(errno));
            return 1;
        }
        r->have_replay = 1;
        bad |= analysis_add_sink(&r->a, out_replay_sink(&r->replay)) < 0;
    } else if (o->format == FMT_SQLITE) {
        r->have_sql = 1; /* its free closes what init opened, even when init failed */
        if (out_sqlite_init(&r->sql, &r->a, out_tmp) < 0) {
            textesc_say(prog, r->sql.err);
            return 1;
        }
        r->sql.progress = isatty(STDERR_FILENO) ? stderr : NULL; /* a long build says how far it is */
        bad |= analysis_add_sink(&r->a, out_sqlite_sink(&r->sql)) < 0;
    }
    if (bad) {
        say_err("out of memory\n");
        return 1;
    }
    return 0;
}

/* Names for every function and call site (analysis/naming.h): the
 * build-ids were checked, so each program is named from its --exe.  0 ok,
 * else reported, 1. */
static int resolve(struct run *r)
{
    struct naming n = {r->o->exes, r->o->nexes, r->o->addr2line, &r->files, 1};
    char msg[512];
    int rc = naming_resolve(&n, &r->a, r->have_sites ? &r->sites.sites : NULL, &r->syms, &r->nsyms, msg,
                            sizeof msg);
    if (rc > 0)
        say_err("%s\n", msg);
    if (rc < 0 || r->a.oom) {
        say_err("out of memory\n");
        rc = 1;
    }
    return rc;
}

/* --trigger found no call that fired TRACE_TRIGGER: the snapshots there
 * are (one taken by SIGUSR1 or `callsight trigger` has no slow call), so
 * the user knows where the recorder's data went. */
static void no_triggers(const struct analysis *a)
{
    static const char *const cause[] = {"an unknown cause", "SIGUSR1", "a slow call (TRACE_TRIGGER)",
                                        "a tracer that died", "callsight trigger"};
    size_t n = 0;
    const struct analysis_source *first = NULL;
    for (size_t i = 0; i < a->nsrc; i++)
        if (a->src[i].snapshot && !n++)
            first = &a->src[i];
    if (a->triggers_unselected) {
        say_err("--trigger: no call selected fired TRACE_TRIGGER (%llu did, outside --thread, "
                        "--since, --until or --function)\n", (unsigned long long)a->triggers_unselected);
        return;
    }
    if (!n) {
        say_err("--trigger: no call in these traces fired TRACE_TRIGGER\n");
        return;
    }
    say_err("--trigger: no call in these traces fired TRACE_TRIGGER; they hold %zu flight-recorder "
                    "snapshot%s (the first, %s %u, taken for %s): analyze without --trigger reports what %s\n",
            n, n == 1 ? "" : "s", analysis_source_word(first), first->id,
            cause[first->snapshot_cause < 5 ? first->snapshot_cause : 0], n == 1 ? "it holds" : "they hold");
}

/* A program none of whose functions has a name (a stripped --exe) gets a
 * note rather than a report of bare addresses without a word. */
static void note_unnamed(struct run *r)
{
    uint64_t program = 0, unnamed = 0;
    for (size_t i = 0; i < r->a.funcs.n && i < r->nsyms; i++) {
        uint32_t b = r->a.funcs.v[i].bin;
        if (b < r->a.nbins && r->a.bins[b].module)
            continue; /* a shared object's: its own notes say why */
        program++;
        unnamed += !r->syms[i].name;
    }
    if (program && unnamed == program && r->o->nexes && symbols_dw_has_functions(r->o->exes[0].path) == 0) {
        r->a.unnamed_program = program;
        r->a.unnamed_exe = r->o->exes[0].path;
    }
}

/* A terminal's width when out is one (0: not a terminal: rows stay whole). */
static size_t terminal_columns(FILE *out)
{
    struct winsize ws;
    int fd = fileno(out);
    if (fd < 0 || !isatty(fd))
        return 0;
    return ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 ? ws.ws_col : 80;
}

static int write_text(FILE *out, const struct out_view *v, int trigger, int threads)
{
    notes_write_text(v->a, out);
    (void)advice_write_text(v, out); /* out of memory is said in a line of its own */
    notes_write_filter(v->a, out);
    out_triggers_text(out, v);
    if (trigger) {
        out_triggers_stacks(out, v);
        return 0;
    }
    fputc('\n', out);
    struct report_opts ro = *v->report;
    ro.top = v->top;
    ro.only_called = v->a->filtering;
    if (threads)
        return report_threads(out, v->a, &ro);
    return report_table(out, &v->a->funcs, v->funcs, &ro);
}

/* What --format folded's limits left out (stderr, as for --max-stacks). */
static void folded_notes(const struct out_folded_limits *f)
{
    if (f->deep_stacks)
        say_err("note: %llu stacks deeper than --max-folded-depth %zu frames are folded into "
                        "their ancestor's [deeper] line\n", (unsigned long long)f->deep_stacks, f->max_depth);
    if (f->cut_lines)
        say_err("note: the output reached --max-folded-mb %llu: %llu stacks (%llu ns of self time) "
                        "left out\n", (unsigned long long)(f->max_bytes >> 20), (unsigned long long)f->cut_lines,
                (unsigned long long)f->cut_ns);
}

/* Write the format.  0 ok, else reported, 1. */
static int write_output(struct run *r)
{
    const struct options *o = r->o;
    const char *exe = o->exes[0].path, *base = strrchr(exe, '/');
    struct out_folded_limits folded = {o->folded_depth ? o->folded_depth : OUT_FOLDED_MAX_DEPTH,
                                       o->folded_bytes ? o->folded_bytes : OUT_FOLDED_MAX_BYTES, 0, 0, 0};
    struct out_view v = {&r->a, r->syms, r->have_sites ? &r->sites : NULL,
                         r->syms + r->a.funcs.n, r->have_tree ? &r->tree : NULL, o->top,
                         base ? base + 1 : exe, &o->report};
    struct out_tree_opts tree = {o->tree.max_depth ? o->tree.max_depth : OUT_TREE_DEPTH, o->top, o->tree.per_thread};
    int rc;
    switch (o->format) {
    case FMT_JSON: rc = out_json_write(r->out, &v); break;
    case FMT_FOLDED: rc = out_folded_write(r->out, &v, &folded); break;
    case FMT_SVG: rc = out_svg_write(r->out, &v); break;
    case FMT_CALLERS: rc = out_callers_write(r->out, &v); break;
    case FMT_PERFETTO: rc = out_perfetto_finish(&r->perf, &v, r->out); break;
    case FMT_CHROME: rc = out_chrome_finish(&r->chrome, &v, r->out); break;
    case FMT_TREE: rc = out_tree_write(r->out, &v, &tree); break;
    case FMT_REPLAY: rc = out_replay_finish(&r->replay, &v, r->out); break;
    case FMT_SQLITE:
        if (out_sqlite_finish(&r->sql, &v) < 0) {
            textesc_say(prog, r->sql.err);
            return 1;
        }
        rc = 0;
        break;
    default: rc = write_text(r->out, &v, o->trigger, o->threads); break;
    }
    if (rc < 0) {
        say_err("%s\n", errno == ENOMEM || !errno ? "out of memory" : strerror(errno));
        return 1;
    }
    if (r->have_tree && r->tree.overflow && o->format != FMT_TREE) /* tree: in its notes */
        say_err("note: %llu calls on stacks beyond --max-stacks %zu are counted "
                        "under [other stacks]\n",
                (unsigned long long)r->tree.overflow, r->tree.max_nodes);
    folded_notes(&folded);
    return 0;
}

/* --jobs, or the CPUs online; one for the timelines (perfetto, chrome), written
 * as the pass goes (in series order: it cannot be put together after). */
static size_t jobs_of(const struct options *o)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (o->format == FMT_PERFETTO || o->format == FMT_CHROME || o->format == FMT_REPLAY || o->format == FMT_SQLITE)
        return 1;
    if (o->jobs)
        return o->jobs;
    return cpus < 1 ? 1 : cpus > (long)ANALYSIS_MAX_JOBS ? ANALYSIS_MAX_JOBS : (size_t)cpus;
}

static int run_pass(struct run *r, struct trace_files *tf)
{
    struct analysis *a = &r->a;
    struct analysis_jobs_stats st;
    analysis_prepare(a, tf);
    analysis_jobs_run(a, tf, jobs_of(r->o), r->have_tree ? &r->tree : NULL, r->have_sites ? &r->sites : NULL, &st);
    if (getenv("CALLSIGHT_JOBS_STATS")) /* for tests: which way each job went */
        say_err("jobs %zu, merged %zu, read again %zu\n", st.jobs, st.merged, st.reread);
    analysis_finish(a);
    if (a->oom || a->funcs.oom || (r->have_tree && r->tree.oom) || (r->have_sites && r->sites.oom)) {
        say_err("out of memory\n");
        return 1;
    }
    if (!a->files_read) {
        say_err("none of the %zu trace files could be read\n", a->files_bad);
        return 1;
    }
    return 0;
}

/* "pid 123", "stream 4" or "pid 123 in stream 4": who ran a binary. */
static void process_label(const struct analysis *a, uint32_t proc, char *buf, size_t len)
{
    const struct analysis_process *p = &a->procs[proc];
    const struct analysis_source *s = &a->src[p->src];
    if (p->announced && s->kind == ANALYSIS_SOURCE_STREAM)
        snprintf(buf, len, "pid %u in stream %u", p->pid, s->id);
    else
        snprintf(buf, len, "%s %u", analysis_source_word(s), s->id);
}

/* The first binary with events that no --exe has the build-id of, or -1. */
static long foreign_bin(const struct analysis *a)
{
    for (size_t i = 0; i < a->nprocs; i++) {
        const struct analysis_bin *b = &a->bins[a->procs[i].bin];
        if (a->procs[i].events && b->have_build_id && !b->exe_matches)
            return a->procs[i].bin;
    }
    return -1;
}

/* Some traced binary has its --exe: the list is short, not wrong. */
static int any_exe_matched(const struct analysis *a)
{
    for (size_t i = 0; i < a->nbins; i++)
        if (a->bins[i].exe_matches)
            return 1;
    return 0;
}

/* Every --exe must be a binary that ran: each build-id recorded (its first
 * 16 bytes, all the trace carries) is matched to the --exe that has it.
 * Traces without one (older runtimes, a binary built without) are taken
 * on trust and named from the first --exe.  0 ok, else reported, 1. */
static int check_build_ids(const struct run *r)
{
    const struct options *o = r->o;
    const struct analysis *a = &r->a;
    char who[64], mine[33], theirs[33], why[700];
    long bin = foreign_bin(a);
    if (a->bins_over)
        say_err("warning: the trace names more than %d build-ids (damaged?); "
                        "the processes of the rest are named from the first --exe\n", ANALYSIS_MAX_BINS);
    if (bin < 0)
        return 0;
    const struct analysis_bin *b = &a->bins[bin];
    const struct analysis_exe *e = &o->exes[0];
    process_label(a, b->proc, who, sizeof who);
    elf_buildid_hex(b->build_id, theirs);
    elf_buildid_hex(e->build_id, mine);
    const char *hint = "give the binary that ran";
    if (o->nexes > 1 || any_exe_matched(a)) {
        snprintf(why, sizeof why, "%s was traced from build-id %s, which no --exe has", who, theirs);
        hint = "give --exe once for each program that ran";
    } else if (e->have_build_id)
        snprintf(why, sizeof why, "--exe %s is not the traced binary: its build-id %s differs from %s's %s",
                 e->path, mine, who, theirs);
    else
        snprintf(why, sizeof why, "--exe %s has no readable build-id, but %s was traced from build-id %s",
                 e->path, who, theirs);
    if (o->force) {
        say_err("warning: %s; analyzing anyway (--force): names may be wrong\n", why);
        return 0;
    }
    say_err("%s; %s (or --force)\n", why, hint);
    return 1;
}

static void run_free(struct run *r)
{
    if (r->syms)
        symbols_free(r->syms, r->nsyms);
    free(r->syms);
    if (r->have_tree)
        cctree_free(&r->tree);
    if (r->have_sites)
        callsites_free(&r->sites);
    if (r->have_perf)
        out_perfetto_free(&r->perf);
    if (r->have_chrome)
        out_chrome_free(&r->chrome);
    if (r->have_replay)
        out_replay_free(&r->replay);
    if (r->have_sql)
        out_sqlite_free(&r->sql);
    modfile_free(&r->files);
    analysis_free(&r->a);
}

/* Summary traces (TRACE_MODE=summary) hold totals per thread and function,
 * interval by interval: never mixed with events, and no call paths.  0 or 1
 * (said). */
static int check_summary(const struct run *r)
{
    const struct options *o = r->o;
    const struct analysis *a = &r->a;
    const char *why = NULL;
    if (!a->summary_threads && !a->summary_damaged && !a->summary_outside)
        why = o->interval_ns && a->events ? "--interval is for summary traces (TRACE_MODE=summary); these hold events"
                                          : NULL;
    else if (a->events && !a->mode_switches) /* live control's switches count each call once */
        why = "the traces mix events and summaries (TRACE_MODE=summary): analyze each from a directory of its own";
    else if (o->format == FMT_FOLDED || o->format == FMT_SVG || o->format == FMT_PERFETTO || o->format == FMT_CHROME ||
             o->format == FMT_CALLERS || o->format == FMT_TREE || o->format == FMT_REPLAY)
        why = "summary traces hold totals, not call paths: this --format needs event traces (TRACE_MODE=events)";
    else if (o->filter.nfuncs)
        why = "--function needs event traces: summary traces hold each function's totals, not its callees";
    else if (o->keep_tracer_time)
        why = "--keep-tracer-time needs event traces: in summary traces the device took the tracer's time out";
    else if (o->trigger)
        why = "--trigger needs event traces: summary traces hold no calls to trigger on";
    if (!why)
        return 0;
    say_err("%s\n", why);
    return 1;
}

static int analyze(const struct options *o, struct trace_files *tf, FILE *out)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.out = out;
    analysis_init(&r.a, stderr, prog);
    analysis_set_exes(&r.a, o->exes, o->nexes);
    r.a.runs_note = o->runs_note[0] ? o->runs_note : NULL;
    modfile_init(&r.files, &o->where);
    int rc = setup(&r);
    if (!rc)
        rc = run_pass(&r, tf);
    if (!rc)
        rc = check_summary(&r);
    if (!rc && o->trigger && !r.a.ntriggers) {
        no_triggers(&r.a);
        rc = 1;
    }
    if (!rc)
        rc = check_build_ids(&r);
    if (!rc)
        rc = resolve(&r);
    if (!rc)
        note_unnamed(&r);
    if (!rc && (o->report.nmatch || o->report.nexclude))
        rc = report_check_filters(prog, &r.a.funcs, r.syms, &o->report);
    if (!rc)
        rc = write_output(&r);
    run_free(&r);
    return rc;
}

/* Open the output; NULL when reported (rc set). */
static mode_t current_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}

/* -o FILE, when FILE is a regular file or does not exist yet, is written as
 * FILE.XXXXXX beside it and renamed over it only when the report is whole:
 * an error or a refusal leaves FILE as it was.  Anything else (/dev/null, a
 * FIFO, a terminal) is written directly and never renamed over or removed. */

static FILE *open_output(const struct options *o, int *rc)
{
    if (!o->out_path) {
        if (o->format == FMT_PERFETTO && isatty(1)) {
            say_err("a perfetto trace is binary: give -o FILE or redirect stdout\n");
            *rc = 2;
            return NULL;
        }
        if (o->format == FMT_SQLITE) {
            say_err("--format sqlite writes a database file: give -o FILE\n");
            *rc = 2;
            return NULL;
        }
        return stdout;
    }
    FILE *f = NULL;
    int fd = -1;
    struct stat st;
    out_direct = stat(o->out_path, &st) == 0 && !S_ISREG(st.st_mode);
    if (out_direct && o->format == FMT_SQLITE) {
        /* SQLite needs a file it can seek in and a name to rename into place */
        say_err("-o %s: --format sqlite needs a regular file\n", o->out_path);
        *rc = 2;
        return NULL;
    }
    if (out_direct)
        f = fopen(o->out_path, "wb");
    else if (snprintf(out_tmp, sizeof out_tmp, "%s.XXXXXX", o->out_path) >= (int)sizeof out_tmp)
        errno = ENAMETOOLONG;
    else if ((fd = mkstemp(out_tmp)) >= 0 && (fchmod(fd, 0666 & ~current_umask()) != 0 || !(f = fdopen(fd, "wb")))) {
        close(fd);
        unlink(out_tmp);
    }
    if (!f) {
        say_err("-o %s: %s\n", o->out_path, strerror(errno));
        *rc = 1;
    }
    return f;
}

/* Flush and close; a failed write is an error.  rc: the status so far. */
static int close_output(const struct options *o, FILE *out, int rc)
{
    int bad = fflush(out) != 0 || ferror(out);
    const char *what = o->out_path ? o->out_path : "the report";
    if (out != stdout && fclose(out) != 0)
        bad = 1;
    if (bad && !rc) {
        say_err("writing %s: %s\n", what, strerror(errno));
        rc = 1;
    }
    if (o->out_path && !out_direct && !rc && rename(out_tmp, o->out_path) != 0) {
        say_err("-o %s: %s\n", o->out_path, strerror(errno));
        rc = 1;
    }
    if (rc && o->out_path && !out_direct)
        unlink(out_tmp); /* no half-written file left to mislead; FILE stays as it was */
    return rc;
}

static int prepare(struct options *o, int argc, char **argv)
{
    char msg[512];
    int rc = parse_args(argc, argv, o);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (!o->npaths)
        o->paths[o->npaths++] = "./traces";
    if ((rc = check_exes(o)))
        return rc;
    if ((rc = check_sysroot(o->where.sysroot)))
        return rc;
    if (o->addr2line && symbols_check_tool(o->addr2line, msg, sizeof msg) < 0) {
        say_err("%s\n", msg);
        return 1;
    }
    return find_targets(o);
}

/* `callsight replay ...` (main.c runs this with argv[0] "replay") is
 * `callsight analyze --format replay ...`, with a help of its own. */
int cmd_analyze(int argc, char **argv)
{
    struct options o = {0};
    struct trace_files tf;
    int rc;

    o.replay_cmd = argc > 0 && !strcmp(argv[0], "replay");
    prog = o.replay_cmd ? "callsight replay" : "callsight analyze";
    o.format = o.replay_cmd ? FMT_REPLAY : FMT_TEXT;
    o.paths = calloc((size_t)argc + 1, sizeof *o.paths);
    o.globs_match = calloc((size_t)argc + 1, sizeof *o.globs_match);
    o.globs_exclude = calloc((size_t)argc + 1, sizeof *o.globs_exclude);
    o.report.match = o.globs_match;
    o.report.exclude = o.globs_exclude;
    if (!o.paths || !o.globs_match || !o.globs_exclude) {
        free(o.paths);
        free(o.globs_match);
        free(o.globs_exclude);
        say_err("out of memory\n");
        return 1;
    }
    rc = prepare(&o, argc, argv);
    if (rc) {
        free(o.paths);
        free(o.funcs);
        free(o.func_exe);
        free(o.globs_match);
        free(o.globs_exclude);
        return rc < 0 ? 0 : rc;
    }
    trace_files_init(&tf);
    rc = collect(&o, &tf);
    if (!rc)
        rc = choose_run(&o, &tf);
    FILE *out = rc ? NULL : open_output(&o, &rc);
    if (out && !o.wide)
        o.report.columns = terminal_columns(out);
    if (out)
        rc = close_output(&o, out, analyze(&o, &tf, out));
    trace_files_free(&tf);
    free(o.paths);
    free(o.funcs);
    free(o.func_exe);
    free(o.globs_match);
    free(o.globs_exclude);
    return rc;
}
