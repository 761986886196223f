/*
 * ts_args.c - trace_stream's command line (part of trace_stream.c): the
 * --help text and the options, each checked against its range.
 */
#include "ts_internal.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: trace_stream [--level N] [--codec stack|none] [--retry SECONDS]\n"
            "                    [--heartbeat SECONDS] [--summary-ms MS] [--summary-threads]\n"
            "                    [--flight-recorder [--after MS] [--max-triggers N]]\n"
            "                    [--ring-version 2|3] [--group GROUP]\n"
            "                    [--allow-control [--auth-key FILE]]\n"
            "                    [--quiet] SHM HOST PORT\n"
            "\n"
            "Forward the events of a callsight-traced program from the shared-memory\n"
            "ring SHM (e.g. /callsight0) to `callsight serve` at HOST:PORT.\n"
            "Start it first, then run the program with TRACE_SHM=SHM.  It creates\n"
            "the ring (TRACE_SHM_SIZE bytes, default 16 MiB) unless the tracer did,\n"
            "exits once every tracer has detached and the ring is drained, and then\n"
            "removes the ring.  Several programs may share the ring (same TRACE_SHM);\n"
            "a daemon that stays attached keeps it open for programs that come and go.\n"
            "SIGINT/SIGTERM: send what is in the ring, then exit (without a connection:\n"
            "at once, saying what is lost).\n"
            "\n"
            "  --level N   zstd compression level (default %d)%s\n"
            "  --codec C   stack (default%s): offer the server the stack+shuffle coding\n"
            "              of event chunks, about 4x fewer bytes and less CPU; servers\n"
            "              that do not know it never answer, and chunks stay plain.\n"
            "              none: plain chunks only%s\n"
            "  --retry S   when the server refuses the first connection or goes away,\n"
            "              keep connecting for S seconds (default %d; 0: exit at once);\n"
            "              meanwhile the ring keeps what the tracers write, for the next\n"
            "              connection (once it is full they drop new events, counted)\n"
            "  --heartbeat S  when nothing was sent for S seconds, send a small notice\n"
            "              so the server's --idle-timeout (keep it above S) does not\n"
            "              cut a quiet stream (default %d)\n"
            "  --summary-ms MS  TRACE_MODE=summary: send each process's threads merged\n"
            "              into one snapshot every MS ms (default %d), a few KB/s\n"
            "              however many threads it has\n"
            "  --summary-threads  send each thread's own snapshots instead (the\n"
            "              report keeps threads apart; many more bytes on the wire)\n"
            "  --flight-recorder  keep only the most recent events in the ring (the\n"
            "              tracers overwrite the oldest whole batches, counted) and send\n"
            "              nothing but heartbeats until a trigger: SIGUSR1, a slow call\n"
            "              (TRACE_TRIGGER=NAME>LIMIT in the program's environment), a\n"
            "              tracer that dies, or `callsight trigger` on the host (through\n"
            "              serve).  Then the ring's contents go as one snapshot\n"
            "              on a connection of its own (its own series in serve's\n"
            "              directory), and recording resumes.  Start it before the program\n"
            "  --after MS  after a trigger, also send what comes in the next MS ms\n"
            "              (default 0)\n"
            "  --max-triggers N  at most N snapshots per hour (default %d); further\n"
            "              triggers are counted and reported\n"
            "  --ring-version V  the kind of ring to create: 2 or 3.  Without it,\n"
            "              version 2 whose writers of this version reserve under its\n"
            "              lock and copy outside it (a writer that loses its CPU in\n"
            "              the middle of a copy holds up no other: fewer drops with\n"
            "              many threads), while older ones copy under the lock: every\n"
            "              tracer writes it.  2: every writer copies under the lock, as\n"
            "              before.  3: all reserve; tracers built before version 3\n"
            "              refuse it and write files.  A ring a tracer made is read as\n"
            "              it is\n",
            DEFAULT_LEVEL, FRAME_LEVEL_NOTE, CODEC_DEFAULT ? "" : " with libzstd", CODEC_NOTE, DEFAULT_RETRY_S, DEFAULT_HEARTBEAT_S, DEFAULT_SUMMARY_MS,
            DEFAULT_MAX_TRIGGERS);
    /* two strings: C11 promises compilers only 4095 bytes in one */
    fprintf(out,
            "  --group G   share the ring with the users of group G (a name or a\n"
            "              number): it is made mode 0660 with group G, and a ring that\n"
            "              another member made (TRACE_SHM_GROUP=G in the program's\n"
            "              environment) is used.  Without it the ring is mode 0600,\n"
            "              and one another user made is refused\n"
            "  --allow-control  let the host change what the program records while it\n"
            "              runs (`callsight ctl DIR`, through serve): pause, resume,\n"
            "              functions off or only some, the mode, threads, a trigger\n"
            "              rule, the flight recorder on or off; each change is exact (a\n"
            "              call keeps the decision made at its start) and said in the\n"
            "              trace.  The ring gets a control block (130 KiB) that tracers of this\n"
            "              version obey; without this option the host can change nothing\n"
            "              and is told so.  Start trace_stream before the program\n"
            "  --auth-key FILE  with --allow-control: take control only from a serve that\n"
            "              proves it holds the same key (serve --auth-key FILE; an owner-\n"
            "              only file of 32 to 4096 bytes, e.g. head -c 32 /dev/urandom),\n"
            "              and only requests signed for this connection; the key never\n"
            "              crosses the link.  Needs a build with -DTS_AUTH -lcrypto\n"
            "  --quiet     print only errors and the final summary\n"
            "  --help      this text\n"
            "\n"
            "The summary counts forwarded records (enter, exit and marker events)\n"
            "and the events the tracer dropped because the ring was full (each\n"
            "thread's share goes in-band too, from the ring's loss table).\n"
            "Exit status: 0 done, 1 error (also: the server could not be reached, and\n"
            "nothing was lost), 2 usage, %d tracers died without detaching (everything\n"
            "they had put in the ring was still sent), %d events were lost because the\n"
            "server refused or the connection was cut (what the ring still held when\n"
            "--retry ran out or a signal came, a chunk the cut broke, the tracers' drops\n"
            "while no connection was up, a snapshot that could not be sent); %d wins\n"
            "over %d, and 1 over both.\n",
            EXIT_TRACER_LOST, EXIT_LINK_LOST, EXIT_LINK_LOST, EXIT_TRACER_LOST);
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* The gid of group name or number s; -1 when there is none. */
static long group_id(const char *s)
{
    long v;
    if (parse_int(s, 0, INT_MAX, &v) == 0)
        return v;
    struct group gr, *found = NULL;
    char buf[16384];
    if (getgrnam_r(s, &gr, buf, sizeof buf, &found) != 0 || !found)
        return -1;
    return (long)found->gr_gid;
}

/* 0 run, 1 done (help printed), -1 usage error (reported). */
static int parse_args(int argc, char **argv, struct options *o)
{
    const char *pos[3];
    int npos = 0;
    o->level = DEFAULT_LEVEL;
    o->codec = CODEC_DEFAULT;
    o->quiet = 0;
    o->retry_s = DEFAULT_RETRY_S;
    o->heartbeat_s = DEFAULT_HEARTBEAT_S;
    o->summary_threads = 0;
    o->summary_ms = DEFAULT_SUMMARY_MS;
    o->recorder = 0;
    o->after_ms = 0;
    o->max_triggers = DEFAULT_MAX_TRIGGERS;
    o->ring_version = 0; /* version 2, batches committed by the writers that can (ring_create) */
    o->share_gid = -1;
    o->allow_control = 0;
    o->auth_key = NULL;
    int recorder_opts = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--summary-threads")) {
            o->summary_threads = 1;
        } else if (!strcmp(a, "--allow-control")) {
            o->allow_control = 1;
        } else if (!strcmp(a, "--auth-key")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "trace_stream: --auth-key needs a key file\n");
                return -1;
            }
            o->auth_key = argv[++i];
        } else if (!strcmp(a, "--flight-recorder")) {
            o->recorder = 1;
        } else if (!strcmp(a, "--after")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 0, AFTER_MAX_MS, &o->after_ms)) {
                fprintf(stderr, "trace_stream: --after needs milliseconds from 0 to %d\n", AFTER_MAX_MS);
                return -1;
            }
            recorder_opts = 1;
            i++;
        } else if (!strcmp(a, "--max-triggers")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 1, MAX_TRIGGERS_MAX, &o->max_triggers)) {
                fprintf(stderr, "trace_stream: --max-triggers needs a count from 1 to %d\n", MAX_TRIGGERS_MAX);
                return -1;
            }
            recorder_opts = 1;
            i++;
        } else if (!strcmp(a, "--summary-ms")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 10, 3600000, &o->summary_ms)) {
                fprintf(stderr, "trace_stream: --summary-ms needs milliseconds from 10 to 3600000\n");
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--ring-version")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], TRACE_SHM_VERSION, TRACE_SHM_VERSION_COMMIT, &v)) {
                fprintf(stderr, "trace_stream: --ring-version needs %u or %u\n", TRACE_SHM_VERSION,
                        TRACE_SHM_VERSION_COMMIT);
                return -1;
            }
            o->ring_version = (int)v;
            i++;
        } else if (!strcmp(a, "--group")) {
            if (i + 1 >= argc || (o->share_gid = group_id(argv[i + 1])) < 0) {
                fprintf(stderr, "trace_stream: --group needs a group's name or number%s%s%s\n",
                        i + 1 < argc ? " ('" : "", i + 1 < argc ? argv[i + 1] : "",
                        i + 1 < argc ? "' is neither)" : "");
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--level")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], LEVEL_MIN, LEVEL_MAX, &v)) {
                fprintf(stderr, "trace_stream: --level needs a number from %d to %d\n", LEVEL_MIN,
                        LEVEL_MAX);
                return -1;
            }
            o->level = (int)v;
            i++;
        } else if (!strcmp(a, "--codec")) {
            if (i + 1 >= argc || (strcmp(argv[i + 1], "stack") && strcmp(argv[i + 1], "none"))) {
                fprintf(stderr, "trace_stream: --codec needs 'stack' or 'none'\n");
                return -1;
            }
            o->codec = CODEC_DEFAULT && !strcmp(argv[i + 1], "stack");
            i++;
        } else if (!strcmp(a, "--retry")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 0, RETRY_MAX_S, &v)) {
                fprintf(stderr, "trace_stream: --retry needs seconds from 0 to %d\n", RETRY_MAX_S);
                return -1;
            }
            o->retry_s = v;
            i++;
        } else if (!strcmp(a, "--heartbeat")) {
            if (i + 1 >= argc || parse_int(argv[i + 1], 1, HEARTBEAT_MAX_S, &v)) {
                fprintf(stderr, "trace_stream: --heartbeat needs seconds from 1 to %d\n", HEARTBEAT_MAX_S);
                return -1;
            }
            o->heartbeat_s = v;
            i++;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "trace_stream: unknown option '%s' (try --help)\n", a);
            return -1;
        } else if (npos < 3) {
            pos[npos++] = a;
        } else {
            fprintf(stderr, "trace_stream: too many arguments (try --help)\n");
            return -1;
        }
    }
    if (npos != 3) {
        usage(stderr);
        return -1;
    }
    if (o->auth_key && !o->allow_control) {
        fprintf(stderr, "trace_stream: --auth-key goes with --allow-control: the key guards control\n");
        return -1;
    }
    if (recorder_opts && !o->recorder) {
        fprintf(stderr, "trace_stream: --after and --max-triggers go with --flight-recorder\n");
        return -1;
    }
    o->shm = pos[0];
    o->host = pos[1];
    o->port = pos[2];
    return 0;
}
