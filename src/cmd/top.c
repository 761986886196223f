/*
 * top.c - `callsight top DIR`: watch a trace directory while it is written
 * (serve's --out, or a local TRACE_DIR), refreshed every interval.
 *
 * It reads the files as they grow (analysis/live.c says why files and not
 * a connection to serve), so it works the same for streams and local
 * traces and serve is unchanged.  --once prints one frame as plain text
 * (for scripts and tests) after reading everything there is; otherwise an
 * ncurses screen is redrawn each interval until q, SIGINT or SIGTERM, and
 * the terminal is restored either way.
 */
#include <errno.h>
#include <ncurses.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/live.h"
#include "commands.h"
#include "lib/textesc.h"
#include "out/notes.h"
#include "out/top_view.h"
#include "read/elf_buildid.h"
#include "serve/control.h"
#include "trace_shm.h"
#include "trace_wire.h"

#define PROG "callsight top"
#define WIRE_WAIT_MS 200 /* for each line of serve's answer: a stuck serve stalls no screen for long */

struct options {
    const char *dir;
    struct analysis_exe exes[ANALYSIS_MAX_EXES];
    size_t nexes;
    int once;
    double interval_s;
    size_t rows;
    long source; /* -1: all */
    size_t max_series;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight top DIR [--once] [--exe BIN ...] [--interval S] [--top N] [--source N]\n"
            "                         [--max-series N]\n"
            "\n"
            "Watch a trace directory while it is being written: serve's --out\n"
            "directory (trace.stream.*.bin) or a local TRACE_DIR (trace.<pid>.<tid>.*.bin).\n"
            "Only what was appended since the last refresh is read, in whole records;\n"
            "new files are picked up as they appear.  Counts are analyze's.\n"
            "\n"
            "  --once         read everything there is, print one frame as text, exit\n"
            "  --exe BIN      the traced binary, for function names (as analyze; up to %d;\n"
            "                 without it functions are shown by address)\n"
            "  --interval S   seconds between refreshes (default 1; 0.1 to 60)\n"
            "  --top N        function rows in --once's frame (default 20; 0: all)\n"
            "  --source N     show the functions of source N only (the # column)\n"
            "  --max-series N series read in detail (default %d, about 10 KB each, kept\n"
            "                 while top runs); further series are counted, not analyzed:\n"
            "                 a line says how many, with their files and bytes\n"
            "\n"
            "Per source: state, events/s of records read, wire B/s (the bytes its\n"
            "connection took on the link, asked of the serve writing DIR through its\n"
            "control socket; - for local traces and ended connections), events dropped\n"
            "in all and in the last interval.  States: streaming (its files grew in the\n"
            "last 2 s), dropping (and it lost events in the last interval), idle\n"
            "(quiet, but serve says its connection is open), ended, cut (its\n"
            "connection ended abnormally: nothing after serve's gap marker),\n"
            "reconnecting (a resumable stream cut less than %d s ago, its client's\n"
            "default --retry; streaming again if it comes back).\n"
            "Per function: calls, calls/s, self and inclusive ms in total, self ms in\n"
            "the last interval, the longest call and (over every source) p99, in us;\n"
            "summary streams (TRACE_MODE=summary) count each snapshot as it arrives.\n"
            "--once also makes analyze's pre-passes, so its times are analyze's; no\n"
            "trace files, or no source N, is an error then (exit 1).  On the screen,\n"
            "ended sources give their rows up first, and the bottom line says the\n"
            "last file skipped or torn, or the last of the analysis' notes (--once\n"
            "prints them all after its frame, as analyze does).\n"
            "\n"
            "Keys: q quit, s next sort column, tab next source, 0 every source,\n"
            "1-9 that source, p pause/resume the screen.  Live control of the\n"
            "device (its trace_stream started with --allow-control; the chosen\n"
            "source's connection, or with every source shown the one connection\n"
            "that takes control), as `callsight ctl DIR` does: P pause capture,\n"
            "R resume it, O turn the first row's function off (with those O\n"
            "turned off before), X reset (record everything); the answer shows\n"
            "on the bottom line.\n",
            ANALYSIS_MAX_EXES, LIVE_MAX_SERIES, LIVE_RECONNECT_S);
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* The option at argv[*i] with its value.  0 ok, 2 usage (said). */
static int take_option(struct options *o, int argc, char **argv, int *i)
{
    const char *name = argv[*i];
    long n;
    if (*i + 1 >= argc) {
        fprintf(stderr, PROG ": %s needs a value\n", name);
        return 2;
    }
    const char *v = argv[++*i];
    if (!strcmp(name, "--exe")) {
        if (o->nexes == ANALYSIS_MAX_EXES) {
            fprintf(stderr, PROG ": at most %d --exe\n", ANALYSIS_MAX_EXES);
            return 2;
        }
        o->exes[o->nexes++].path = v;
    } else if (!strcmp(name, "--interval")) {
        if (parse_double(v, &o->interval_s) < 0 || !(o->interval_s >= 0.1 && o->interval_s <= 60)) {
            fprintf(stderr, PROG ": --interval %s: seconds from 0.1 to 60\n", v);
            return 2;
        }
    } else if (!strcmp(name, "--max-series")) {
        if (parse_long(v, &n) < 0 || n < 1 || n > 1000000) {
            fprintf(stderr, PROG ": --max-series %s: a count from 1 to 1000000\n", v);
            return 2;
        }
        o->max_series = (size_t)n;
    } else if (!strcmp(name, "--top") || !strcmp(name, "--source")) {
        if (parse_long(v, &n) < 0 || n > 1000000) {
            fprintf(stderr, PROG ": %s %s: not a count\n", name, v);
            return 2;
        }
        if (!strcmp(name, "--source") && n < 1) {
            fprintf(stderr, PROG ": --source %s: sources are numbered from 1 (the # column)\n", v);
            return 2;
        }
        if (!strcmp(name, "--top"))
            o->rows = (size_t)n;
        else
            o->source = n - 1;
    } else {
        fprintf(stderr, PROG ": unknown option %s (try --help)\n", name);
        return 2;
    }
    return 0;
}

/* 0 ok, 1 --help (done), 2 usage (said). */
static int parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->interval_s = 1.0;
    o->rows = 20;
    o->source = -1;
    o->max_series = LIVE_MAX_SERIES;
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(argv[i], "--once"))
            o->once = 1;
        else if (!strncmp(argv[i], "--", 2))
            rc = take_option(o, argc, argv, &i);
        else if (o->dir) {
            fprintf(stderr, PROG ": one directory only (%s and %s)\n", o->dir, argv[i]);
            rc = 2;
        } else
            o->dir = argv[i];
        if (rc)
            return rc;
    }
    if (!o->dir) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* The directory exists and each --exe is a file; build-ids read.  0 ok, 1 said. */
static int check_inputs(struct options *o)
{
    struct stat st;
    char msg[512];
    if (stat(o->dir, &st) < 0) {
        fprintf(stderr, PROG ": %s: %s\n", o->dir, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, PROG ": %s: not a directory\n", o->dir);
        return 1;
    }
    for (size_t i = 0; i < o->nexes; i++) {
        struct analysis_exe *e = &o->exes[i];
        struct elf_buildid b;
        int bad = stat(e->path, &st) < 0;
        if (bad || !S_ISREG(st.st_mode)) {
            fprintf(stderr, PROG ": --exe %s: %s\n", e->path, bad ? strerror(errno) : "not a regular file");
            return 1;
        }
        if (elf_buildid_read(e->path, &b, msg, sizeof msg) < 0) {
            fprintf(stderr, PROG ": warning: --exe %s: only a trace without build-ids is named from it\n", msg);
            b.len = 0;
        }
        e->have_build_id = b.len > 0;
        elf_buildid_words(&b, e->build_id);
    }
    return 0;
}

/* ---- one frame as text ------------------------------------------------- */

static void print_line(void *ctx, const char *text)
{
    fprintf(ctx, "%s\n", text);
}

/* The analysis' notes in analyze's words (a cap reached, a capture stop, a
 * module list not used): top is driven by the same pass, so what it capped
 * or could not use is said here as analyze says it. */
static void print_note(void *ctx, const char *note)
{
    fputs("note: ", ctx);
    textesc_put(ctx, note);
    fputc('\n', ctx);
}

static int names(struct top_view *v)
{
    char msg[600];
    if (top_view_names(v, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if (msg[0])
        fprintf(stderr, PROG ": %s\n", msg);
    return 0;
}

static int once(struct live *l, struct top_view *v, const char *dir)
{
    char msg[600], title[600];
    if (live_prepare(l, msg, sizeof msg) < 0 || live_refresh(l, 1.0, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": %s\n", msg);
        return 1;
    }
    live_finish(l);
    if (!l->nseries) {
        fprintf(stderr, PROG ": no trace files in %s\n", dir);
        return 1;
    }
    if (v->source >= (long)l->nsrcs) {
        fprintf(stderr, PROG ": --source %ld: %s has %zu source%s\n", v->source + 1, dir, l->nsrcs,
                l->nsrcs == 1 ? "" : "s");
        return 1;
    }
    /* one look at the whole trace: its rates are over its span */
    uint64_t span = analysis_span(&l->a);
    l->interval_s = span ? (double)span / 1e9 : 0.0;
    if (names(v))
        return 1;
    snprintf(title, sizeof title, "callsight top %s", dir);
    if (top_view_frame(v, title, print_line, stdout) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    notes_each(&l->a, print_note, stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- the full-screen view ------------------------------------------------ */

/* The screen's view of the notes: how many, and the last (escaped). */
struct note_tally {
    size_t n;
    char last[500];
};

static void tally_note(void *ctx, const char *note)
{
    struct note_tally *t = ctx;
    t->n++;
    textesc(t->last, sizeof t->last, note, TEXTESC_TERMINAL);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

struct screen {
    int row;
};

static void draw_line(void *ctx, const char *text)
{
    struct screen *s = ctx;
    if (s->row < LINES - 1)
        mvaddnstr(s->row, 0, text, COLS);
    s->row++;
}

/* The last thing to tell the user (a file libdw cannot read, a program no
 * --exe matches): stderr would tear the screen, so the bottom line says it. */
static char notice[600];
/* The device's answer to the last P, R or X: kept until the next one. */
static char answered[1200];

static void draw(struct top_view *v, const char *dir, int paused)
{
    struct screen s = {0};
    char title[600];
    snprintf(title, sizeof title, "callsight top %s%s", dir, paused ? "  [paused]" : "");
    erase();
    v->max_rows = LINES > 8 ? (size_t)LINES : 1; /* cut at the screen's bottom by draw_line */
    v->max_sources = LINES > 12 ? (size_t)LINES / 3 : 2; /* the functions keep most of the screen */
    v->width = COLS > 0 ? (size_t)COLS : 1;
    top_view_frame(v, title, draw_line, &s);
    char bottom[2000];
    snprintf(bottom, sizeof bottom, "q quit  s sort  tab/0-9 source  p pause  P/R/X/O device pause/resume/reset/off first row%s%s%s%s",
             answered[0] ? "  | " : "", answered, notice[0] ? "  | " : "", notice);
    mvaddnstr(LINES - 1, 0, bottom, COLS);
    refresh();
}

/* P, R, X: a change for the device of the chosen source (or the one
 * connection that takes control), through serve; its answer, in words, on
 * the bottom line.  Bounded: serve answers within seconds. */
static void live_control(struct top_view *v, const char *dir, int ch)
{
    static unsigned char body[TRACE_STREAM_CTL_BODY_MAX];
    static uint64_t off[TRACE_STREAM_CTL_FUNCS_MAX], off_bid[2];
    static size_t noff;
    static char last[200];
    struct wire_ctl q = {0};
    q.keep = ch != 'X' && ch != 'O';        /* pause and resume keep the functions set */
    q.flags = ch == 'P' ? TRACE_CTL_PAUSED : 0;
    if (ch == 'X')
        noff = 0;
    if (ch == 'O') { /* the first row's function joins those this screen turned off: the setting is all of them */
        uint64_t addr, bid[2];
        if (top_view_first(v, &addr, bid, last, sizeof last) < 0) {
            snprintf(answered, sizeof answered, "off: no function of the program in the first row");
            return;
        }
        if (noff && (bid[0] != off_bid[0] || bid[1] != off_bid[1]))
            noff = 0; /* another program's: a setting names one program's functions */
        size_t k = 0;
        while (k < noff && off[k] != addr)
            k++;
        if (k == noff && noff < TRACE_STREAM_CTL_FUNCS_MAX)
            off[noff++] = addr;
        off_bid[0] = bid[0];
        off_bid[1] = bid[1];
        q.flags = TRACE_CTL_OFF;
        q.nfuncs = (uint32_t)noff;
        q.build_id[0] = bid[0];
        q.build_id[1] = bid[1];
    }
    uint32_t id = 0;
    if (v->source >= 0 && (size_t)v->source < v->l->a.nsrc && v->l->a.src[v->source].kind == ANALYSIS_SOURCE_STREAM)
        id = v->l->a.src[v->source].id;
    char reply[CONTROL_LINE_MAX], tail[CONTROL_LINE_MAX];
    unsigned cid = 0;
    unsigned long long gen = 0;
    size_t len = wire_ctl_encode(body, &q, ch == 'O' ? off : NULL);
    char what[260];
    snprintf(what, sizeof what, "%s", ch == 'P' ? "pause" : ch == 'R' ? "resume" : ch == 'X' ? "reset" : "off");
    if (ch == 'O')
        snprintf(what, sizeof what, "off %.200s (%zu function%s)", last, noff, noff == 1 ? "" : "s");
    if (control_ctl(dir, id, body, len, reply, sizeof reply) < 0)
        snprintf(answered, sizeof answered, "%s: %s", what, reply);
    else if (sscanf(reply, "applied %u %llu", &cid, &gen) == 2)
        snprintf(answered, sizeof answered, "%s: conn %u applied it (generation %llu)", what, cid, gen);
    else if (sscanf(reply, "pending %u %llu", &cid, &gen) == 2)
        snprintf(answered, sizeof answered, "%s: conn %u: written (generation %llu), no thread applied it yet", what,
                 cid, gen);
    else if (sscanf(reply, "refused %u %[^\n]", &cid, tail) == 2)
        snprintf(answered, sizeof answered, "%s: conn %u refused: %s", what, cid, tail);
    else if (sscanf(reply, "unreachable %[^\n]", tail) == 1)
        snprintf(answered, sizeof answered, "%s: %s", what, tail);
    else
        snprintf(answered, sizeof answered, "%s: serve answered something else", what);
    char raw[sizeof answered];
    snprintf(raw, sizeof raw, "%s", answered);
    textesc(answered, sizeof answered, raw, TEXTESC_TERMINAL); /* words from afar: no control bytes on the terminal */
}

/* A key: 1 to quit, else 0. */
static int on_key(struct top_view *v, int ch, int *paused, const char *dir)
{
    long n = (long)v->l->nsrcs;
    if (ch == 'q' || ch == 'Q')
        return 1;
    if (ch == 's')
        v->sort = (enum top_sort)((v->sort + 1) % TOP_SORTS);
    else if (ch == '\t')
        v->source = v->source + 1 >= n ? -1 : v->source + 1;
    else if (ch == '0')
        v->source = -1;
    else if (ch >= '1' && ch <= '9' && ch - '1' < n)
        v->source = ch - '1';
    else if (ch == 'p')
        *paused = !*paused;
    else if (ch == 'P' || ch == 'R' || ch == 'X' || ch == 'O')
        live_control(v, dir, ch);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The wire bytes of each connection, if a serve writes dir and answers
 * within a bounded wait; none (shown as "-") otherwise: a local trace, an
 * older serve, a serve that is gone. */
static void ask_wire(struct live *l, const char *dir)
{
    static struct conn_wire w[CONTROL_MAX_CONNS];
    char err[300];
    live_wire_begin(l);
    long n = control_wire(dir, w, CONTROL_MAX_CONNS, WIRE_WAIT_MS, err, sizeof err);
    for (long i = 0; i < n; i++)
        live_wire(l, w[i].id, w[i].bytes);
    live_wire_end(l);
}

/* Refresh and redraw every interval, keys in between.  0, or 1 said. */
static int screen_loop(struct live *l, struct top_view *v, const struct options *o)
{
    char msg[600] = "";
    double last = now_s() - o->interval_s;
    int paused = 0, rc = 0, dirty = 1;
    uint64_t said = 0;
    size_t notes_said = 0;
    while (!stop_signal) {
        double t = now_s();
        if (!paused && t - last >= o->interval_s) {
            if (live_refresh(l, t - last > 1e6 ? o->interval_s : t - last, msg, sizeof msg) < 0 ||
                top_view_names(v, msg, sizeof msg) < 0) {
                rc = 1;
                break;
            }
            if (msg[0])
                snprintf(notice, sizeof notice, "%s", msg);
            if (l->nsaid != said) { /* a file skipped or torn: analyze, or --once, says all */
                snprintf(notice, sizeof notice, "%s%s", l->said, l->nsaid - said > 1 ? " (and more)" : "");
                said = l->nsaid;
            }
            struct note_tally nt = {0, ""};
            notes_each(&l->a, tally_note, &nt);
            if (nt.n > notes_said) /* one more thing capped or not used: --once lists them all */
                snprintf(notice, sizeof notice, "note: %s%s", nt.last, nt.n - notes_said > 1 ? " (and more)" : "");
            notes_said = nt.n;
            ask_wire(l, o->dir);
            last = t;
            dirty = 1;
        }
        if (dirty)
            draw(v, o->dir, paused);
        dirty = 0;
        int ch = getch(); /* waits up to the timeout set */
        if (ch != ERR) {
            if (on_key(v, ch, &paused, o->dir))
                break;
            dirty = 1;
        }
    }
    endwin();
    if (rc)
        fprintf(stderr, PROG ": %s\n", msg);
    return rc;
}

static int screen(struct live *l, struct top_view *v, const struct options *o)
{
    struct sigaction sa;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, PROG ": not a terminal: use --once for a frame as text\n");
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* not SA_RESTART: getch returns, the loop ends */
    sigaction(SIGTERM, &sa, NULL);
    l->a.diag = NULL; /* lines on stderr would tear the screen: the bottom line says the latest */
    if (!initscr()) {
        fprintf(stderr, PROG ": cannot set up the terminal\n");
        return 1;
    }
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(100); /* keys answered within 0.1 s */
    return screen_loop(l, v, o);
}

int cmd_top(int argc, char **argv)
{
    struct options o;
    struct live l;
    struct top_view v;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (check_inputs(&o))
        return 1;
    if (live_init(&l, o.dir, o.exes, o.nexes, stderr, PROG) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        live_free(&l);
        return 1;
    }
    l.max_series = o.max_series;
    top_view_init(&v, &l, o.exes, o.nexes);
    v.max_rows = o.rows;
    v.source = o.source;
    rc = o.once ? once(&l, &v, o.dir) : screen(&l, &v, &o);
    top_view_free(&v);
    live_free(&l);
    return rc;
}
