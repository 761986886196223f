/*
 * ui.c - `callsight ui`: trace directories in a browser (docs/ui.md).
 *
 * The command reads its options, hands the directories to ui/traces.c
 * (which runs `callsight analyze` for each trace as it is opened), starts
 * the web server (ui/http.c) and prints the URL to open; it stops on
 * SIGINT or SIGTERM, and removes its temporary files then.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "lib/textesc.h"
#include "ui/http.h"
#include "ui/project.h"
#include "ui/traces.h"

#define PROG "callsight ui"

static void help(FILE *out)
{
    fputs("usage: callsight ui DIR... --exe BIN [--exe BIN2 ...] [--project PDIR] [--host ADDR] [--port N]\n"
          "       callsight ui --project PDIR [--cc CMD] [--cxx CMD] [--host ADDR] [--port N]\n"
          "\n"
          "Serves the trace directories DIR (local trace directories, serve's output\n"
          "directories, and the directories directly under them that hold trace\n"
          "files) as web pages, and prints the URL to open: the traces with their\n"
          "state and loss, each one's report (a sortable, filterable table with the\n"
          "loss and notes above it, as `callsight analyze` prints them), a\n"
          "function's latency histogram, callers, callees and slowest calls, a\n"
          "flame graph, a timeline of a window of calls, and a live page (top's\n"
          "frame every second).  Given one directory, the page opens on its report.\n"
          "With --project, a Project page edits that project's trace.config: what\n"
          "the draft selects, as `callsight scan` prints it, a function's subtree as\n"
          "`callsight select` lists it, and a save that shows the diff first.\n"
          "Every figure is analyze's (or top's): each trace is analyzed when first\n"
          "opened, and again when its files change, by `callsight analyze DIR --exe\n"
          "BIN ...`.  The pages and their scripts are built into callsight: no\n"
          "network, nothing else to install.  The JSON API the pages read is in\n"
          "docs/ui.md.\n"
          "\n"
          "options:\n"
          "  --exe BIN     the traced binary, for names (required with DIR; repeat\n"
          "                for each program in the traces), passed to analyze as given\n"
          "  --project PDIR  a project whose trace.config the Project page edits (the\n"
          "                only thing ui ever writes: PDIR/trace.config, replaced whole)\n"
          "  --cc CMD, --cxx CMD  how PDIR's sources compile, for scan's and\n"
          "                select's call graph, as those commands take them\n"
          "  --host ADDR   the address to listen on (default 127.0.0.1).  Anything\n"
          "                but loopback: every URL must start with a random token,\n"
          "                printed in the URL to open\n"
          "  --port N      the port (default 8321; 0: any free port, printed)\n"
          "  -h, --help    this text\n"
          "\n"
          "Requests whose Host header is not this server's address and port are\n"
          "refused (421; not checked when bound to a wildcard address, where the\n"
          "token guards), as are methods other than GET and HEAD (405; the Project\n"
          "page's saves and previews are POSTs carrying a second token), URLs over\n"
          "1024 bytes or query values over 256 (414) and names of directories\n"
          "outside those given (403).  On loopback only this user's (and root's)\n"
          "connections are served: another user's is closed unanswered.  API\n"
          "requests a browser marks as made by another site's page are refused\n"
          "(403).  At most 32 connections, 30 s idle each, and 4 live streams\n"
          "(503 beyond).\n"
          "\n"
          "Stops on Ctrl-C (SIGINT) or SIGTERM.  Exit status: 0 stopped, 1 could not\n"
          "start (a directory, the address), 2 usage.\n",
          out);
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, PROG ": %s", msg);
    if (arg) {
        fputs(" '", stderr);
        textesc_put(stderr, arg);
        fputc('\'', stderr);
    }
    fputs(" (try 'callsight ui --help')\n", stderr);
    return 2;
}

/* Why path cannot be the traced binary analyze reads, or NULL. */
static const char *exe_problem(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    return access(path, R_OK) == 0 ? NULL : strerror(errno);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int cmd_ui(int argc, char **argv)
{
    char *dirs[UI_DIRS_MAX];
    const char *exes[UI_EXES_MAX];
    size_t ndirs = 0, nexes = 0;
    const char *host = "127.0.0.1", *port = "8321", *project = NULL, *cc = NULL, *cxx = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        }
        if (!strcmp(a, "--exe") || !strcmp(a, "--host") || !strcmp(a, "--port") || !strcmp(a, "--project") ||
            !strcmp(a, "--cc") || !strcmp(a, "--cxx")) {
            if (i + 1 == argc)
                return usage_error("this option needs a value:", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--project"))
                project = v;
            else if (!strcmp(a, "--cc"))
                cc = v;
            else if (!strcmp(a, "--cxx"))
                cxx = v;
            else if (!strcmp(a, "--host"))
                host = v;
            else if (!strcmp(a, "--port")) {
                char *end;
                long p = strtol(v, &end, 10);
                if (!*v || *end || p < 0 || p > 65535)
                    return usage_error("--port takes 0 to 65535, not", v);
                port = v;
            } else if (nexes == UI_EXES_MAX)
                return usage_error("too many --exe, at most 16:", v);
            else
                exes[nexes++] = v;
        } else if (a[0] == '-' && a[1])
            return usage_error("unknown option", a);
        else if (ndirs == UI_DIRS_MAX)
            return usage_error("too many directories, at most 16:", a);
        else
            dirs[ndirs++] = argv[i];
    }
    if (!ndirs && !project)
        return usage_error("name at least one trace directory, or --project PDIR", NULL);
    if (ndirs && !nexes)
        return usage_error("--exe BIN is required: the traced binary, for names, as analyze needs it", NULL);
    if ((cc || cxx) && !project)
        return usage_error("--cc and --cxx are for --project's scan and select", NULL);

    /* Said now rather than on the first page opened: analyze would refuse it there. */
    for (size_t i = 0; i < nexes; i++) {
        const char *why = exe_problem(exes[i]);
        if (why) {
            fputs(PROG ": --exe ", stderr);
            textesc_put(stderr, exes[i]);
            fprintf(stderr, ": %s\n", why);
            return 1;
        }
    }

    char self[4096], err[512], url[512];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, PROG ": /proc/self/exe: %s\n", strerror(errno));
        return 1;
    }
    self[len] = '\0';
    struct ui_project p;
    memset(&p, 0, sizeof p);
    if (project && ui_project_open(&p, project, cc, cxx, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        return 1;
    }
    struct ui_traces t;
    if (ui_traces_open(&t, self, dirs, ndirs, exes, nexes, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        ui_project_close(&p);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct ui_server *s;
    if (ui_server_start(&s, &t, &p, host, port, url, sizeof url, err, sizeof err) < 0) {
        textesc_say(PROG, err);
        ui_traces_close(&t);
        ui_project_close(&p);
        return 1;
    }
    /* Given one directory, the page opens on its report; given only a
     * project, on the Project page. */
    if (ndirs)
        printf("callsight ui: serving %zu director%s%s at %s%s\n", ndirs, ndirs == 1 ? "y" : "ies",
               project ? " and a project" : "", url, ndirs == 1 ? "#/report?t=0" : "");
    else
        printf("callsight ui: serving a project at %s#/project\n", url);
    fflush(stdout);
    /* The signal may reach any thread: look at the flag five times a second. */
    while (!stop) {
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    ui_server_stop(s);
    ui_traces_close(&t);
    ui_project_close(&p);
    return 0;
}
