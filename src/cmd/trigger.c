/*
 * trigger.c - `callsight trigger`: ask a running `callsight serve` to have
 * the flight recorders among its connections (trace_stream
 * --flight-recorder) take a snapshot now, as SIGUSR1 on the device would.
 *
 * It talks to serve through the control socket in serve's output
 * directory (serve/control.h); serve passes the request down each open
 * connection whose client took the offer (TRACE_ACK_SNAPSHOT_REQUESTS in
 * trace_wire.h), and each trace_stream ships its ring as a new series in
 * that directory, bounded by its --max-triggers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve/control.h"

#define PROG "callsight trigger"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight trigger [DIR] [--conn ID]\n"
            "\n"
            "Ask the `callsight serve` writing DIR (default traces, serve's default\n"
            "--out) to have its flight recorders take a snapshot now: every connection\n"
            "of a `trace_stream --flight-recorder` (or only conn ID), as SIGUSR1 to\n"
            "that trace_stream would.  Each sends what its ring holds as a new series\n"
            "in DIR, within its --max-triggers; analyze names it \"taken for the host\n"
            "asked\".  Connections of other clients are not asked.\n"
            "\n"
            "  --conn ID   only this connection (its id as serve's lines give it)\n"
            "  --help      this text\n"
            "\n"
            "Prints which connections were asked.  Exit status: 0 at least one was,\n"
            "1 none was (no flight recorder connected, or no serve listens in DIR),\n"
            "2 usage error.\n");
}

static int parse_id(const char *s, unsigned long *id)
{
    char *end;
    errno = 0;
    *id = strtoul(s, &end, 10);
    return errno || end == s || *end || s[0] == '-' || *id == 0 || *id > 0xffffffffUL ? -1 : 0;
}

/* Say what serve answered; the exit status. */
static int report(const char *dir, unsigned long id, const char *reply)
{
    size_t n;
    if (strncmp(reply, "ok ", 3) == 0) {
        const char *ids = strchr(reply + 3, ' ');
        printf("callsight trigger: snapshot requested of %s (conn %s)\n",
               strtoul(reply + 3, NULL, 10) == 1 ? "1 connection" : "these connections", ids ? ids + 1 : "?");
        return 0;
    }
    if (sscanf(reply, "none %zu", &n) == 1) {
        if (n)
            fprintf(stderr, PROG ": %zu flight recorder(s) in %s could not be asked (their connections are "
                            "full); try again\n", n, dir);
        else if (id)
            fprintf(stderr, PROG ": conn %lu of the serve writing %s is not a flight recorder that takes "
                            "requests (or has ended)\n", id, dir);
        else
            fprintf(stderr, PROG ": no flight recorder is connected to the serve writing %s (trace_stream "
                            "--flight-recorder; an older one does not take requests)\n", dir);
        return 1;
    }
    fprintf(stderr, PROG ": serve answered: %s\n", reply);
    return 1;
}

int cmd_trigger(int argc, char **argv)
{
    const char *dir = NULL;
    unsigned long id = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--conn")) {
            if (i + 1 >= argc || parse_id(argv[++i], &id)) {
                fprintf(stderr, PROG ": --conn needs a connection id, a number from 1\n");
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, PROG ": unknown option '%s' (try '" PROG " --help')\n", argv[i]);
            return 2;
        } else if (!dir) {
            dir = argv[i];
        } else {
            fprintf(stderr, PROG ": one DIR only (try '" PROG " --help')\n");
            return 2;
        }
    }
    if (!dir)
        dir = "traces";
    char reply[CONTROL_LINE_MAX];
    if (control_request(dir, (uint32_t)id, reply, sizeof reply)) {
        fprintf(stderr, PROG ": %s\n", reply);
        return 1;
    }
    return report(dir, id, reply);
}
