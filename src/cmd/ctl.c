/*
 * ctl.c - `callsight ctl`: change what a running program records, without
 * a rebuild or a restart (live control, docs/control.md): pause and resume
 * it, turn functions off, or record only some.  Two ways to reach it:
 * `--pid PID`, a local process started with TRACE_CONTROL=1 (its own
 * block, serve/ctlblock.c), or `DIR`, a serve directory, whose serve relays
 * the change to a device's trace_stream --allow-control (serve/control.c).
 *
 * Options, names and the exit status are here; the names are nm's
 * (read/symbols.c), as analyze --function takes them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve/control.h"
#include "serve/ctlblock.h"
#include "read/elf_buildid.h"
#include "read/symbols.h"
#include "trace_wire.h"

#define PROG "callsight ctl"
#define NAMES_MAX 256 /* --off/--only arguments; each may be a glob of many functions */

enum { CTL_APPLIED = 0, CTL_REFUSED = 1, CTL_USAGE = 2, CTL_UNREACHABLE = 3, CTL_PENDING = 4 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight ctl --pid PID [--exe BIN] CHANGE [--wait MS]\n"
            "       callsight ctl DIR [--conn N] [--exe BIN] CHANGE\n"
            "       callsight ctl DIR --list\n"
            "  CHANGE: --pause | --resume | --off NAME... | --only NAME...\n"
            "          | --under NAME [--depth D] | --reset | --show;\n"
            "          [--threads GLOBS] [--trigger NAME>LIMIT | --trigger none]\n"
            "          [--mode events|summary]\n"
            "       callsight ctl DIR [--conn N] --recorder on|off\n"
            "\n"
            "Change what a running program records, from now on, without a rebuild or\n"
            "a restart.  Each of its threads applies a change at its next hook and says\n"
            "so in its trace (analyze shows every change); a call already open keeps\n"
            "the decision made when it began, so counts stay exact and no exit is left\n"
            "without its enter.  Only what the build instrumented can be recorded:\n"
            "these options narrow it.  A change is a whole setting: --off replaces an\n"
            "earlier --off or --only; --pause and --resume keep the functions set.\n"
            "\n"
            "  --pid PID     a local process started with TRACE_CONTROL=1 by this user:\n"
            "                its block is /dev/shm/callsight-ctl-UID-PID (owner-only,\n"
            "                removed when it exits)\n"
            "  DIR           the directory of a running `callsight serve`: the change goes\n"
            "                to a device whose trace_stream runs with --allow-control,\n"
            "                over its connection, and its answer comes back\n"
            "  --conn N      DIR: the connection (as serve's \"conn N from\" line and\n"
            "                --list say); without it, the one connection that takes control\n"
            "  --list        DIR: the connections writing now, whether each takes control,\n"
            "                and the last change each applied\n"
            "  --exe BIN     the program, to look NAMEs up in (required with --off and\n"
            "                --only; with --pid its build-id must be the process's; a\n"
            "                device's processes of another program ignore the names)\n"
            "  --pause       record nothing from now on (the functions set stay set)\n"
            "  --resume      record again, as set before --pause\n"
            "  --off NAME    do not record these functions' calls; NAME as analyze\n"
            "                --function takes it (a C++ name from any '::', a glob\n"
            "                'fi*'); repeat for more\n"
            "  --only NAME   record only these functions' calls (repeatable)\n"
            "  --under NAME  record only calls inside a call of NAME (one function):\n"
            "                NAME itself and what it calls, from its next call on\n"
            "  --depth D     with --under: at most D levels below NAME (0: NAME alone;\n"
            "                default: all)\n"
            "  --threads GLOBS  and only on threads whose name matches one of GLOBS\n"
            "                (comma-separated, as TRACE_THREADS; checked when a thread\n"
            "                applies the change); alone: everything, on those threads\n"
            "  --trigger NAME>LIMIT  and a call of NAME (one function) slower than LIMIT\n"
            "                (a number and ns, us, ms or s: 'parse>2ms') fires a trigger,\n"
            "                as TRACE_TRIGGER does: a mark in the trace and, on a flight\n"
            "                recorder's device, a snapshot; in place of TRACE_TRIGGER's\n"
            "                rule; alone: everything, with this trigger.  Event traces\n"
            "                only.  --trigger none: no trigger at all (a change without\n"
            "                --trigger goes back to TRACE_TRIGGER's, if the program has one)\n"
            "  --mode M      and calls that begin from now on are recorded as M: events\n"
            "                (each call) or summary (per-function totals, as TRACE_MODE=\n"
            "                summary); a call already open stays in the mode it began\n"
            "                in, so every call is counted once; alone: everything, in\n"
            "                mode M.  A change without --mode goes back to TRACE_MODE's.\n"
            "                Not for programs run with TRACE_MODE=both\n"
            "  --reset       record everything again\n");
    fprintf(out,
            "  --recorder on|off  DIR: turn the device's ring into a flight recorder\n"
            "                (it keeps only its most recent events; a trigger, `callsight\n"
            "                trigger` or SIGUSR1 to trace_stream sends them as a snapshot,\n"
            "                a series of its own) or back to streaming (its last recording\n"
            "                first).  The main series has a hole between the two, which\n"
            "                analyze notes as made on purpose, not as loss.  A change of\n"
            "                its own: what is recorded stays as set\n"
            "  --show        --pid: print what the process applies now, change nothing\n"
            "  --wait MS     --pid: how long to wait for a thread to apply the change\n"
            "                (default 1000; a thread applies it at its next hook); through\n"
            "                serve the device waits %u ms\n"
            "  --help        this text\n"
            "\n",
            TRACE_STREAM_CTL_WAIT_MS);
    fprintf(out,
            "At most %u functions per setting; a NAME that matches nothing is an\n"
            "error, and nothing changes.  Shared objects' functions are not yet named\n"
            "here (the program's own only).\n"
            "\n"
            "Exit status: 0 applied (or shown, listed), 1 refused (a NAME that matches\n"
            "nothing, too many functions, another binary, the device said no: the\n"
            "reason is printed), 2 usage error, 3 unreachable (no such process with a\n"
            "control block; no serve in DIR, no such connection, or its trace_stream\n"
            "does not take control), 4 written but no thread applied it in time (the\n"
            "program made no call since).\n",
            TRACE_CTL_FUNCS_MAX);
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *v)
{
    char *end;
    errno = 0;
    *v = strtoul(s, &end, 10);
    return errno || end == s || *end || s[0] == '-' || *v > max ? -1 : 0;
}

/* "only calls under 1 function, ..." in words; depth as the block or the
 * marker holds it (0xffff and above: any). */
static void ctl_under_words(char *out, size_t len, uint32_t depth)
{
    if (depth >= 0xffffu)
        snprintf(out, len, "only calls under 1 function (all levels)");
    else
        snprintf(out, len, "only calls under 1 function (at most %u level%s below it)", depth, depth == 1 ? "" : "s");
}

/* --trigger's LIMIT: a number and ns, us, ms or s (as the runtime's
 * TRACE_TRIGGER); 0 when it is not one. */
static uint64_t trigger_limit(const char *v)
{
    static const struct { const char *unit; uint64_t ns; } units[] = {
        {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || errno || v[0] == '-' || v[0] == '+')
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(end, units[i].unit) && n <= UINT64_MAX / units[i].ns)
            return (uint64_t)n * units[i].ns;
    return 0;
}

#define SAY_NO_TRIGGER 0x10000u /* say_setting: TRACE_CTL_TRIGGER with no function */
#define SAY_SUMMARY 0x20000u    /* say_setting: TRACE_CTL_MODE is summary */

static void say_setting(const char *who, uint64_t gen, uint32_t flags, size_t n, const char *threads,
                        const char *state)
{
    char on[300] = "";
    if ((flags & TRACE_CTL_THREADS) && threads)
        snprintf(on, sizeof on, " on threads '%s'", threads);
    else if (flags & TRACE_CTL_THREADS)
        snprintf(on, sizeof on, " on threads by name");
    if (flags & TRACE_CTL_MODE)
        snprintf(on + strlen(on), sizeof on - strlen(on), ", as %s", flags & SAY_SUMMARY ? "summaries" : "events");
    if (flags & SAY_NO_TRIGGER)
        snprintf(on + strlen(on), sizeof on - strlen(on), ", with no trigger");
    else if (flags & TRACE_CTL_TRIGGER)
        snprintf(on + strlen(on), sizeof on - strlen(on), ", with its own trigger rule");
    char what[96];
    if (flags & TRACE_CTL_UNDER)
        ctl_under_words(what, sizeof what, (uint32_t)n);
    else if (flags & TRACE_CTL_OFF)
        snprintf(what, sizeof what, "all but %zu function%s", n, n == 1 ? "" : "s");
    else if (flags & TRACE_CTL_ONLY)
        snprintf(what, sizeof what, "only %zu function%s", n, n == 1 ? "" : "s");
    else
        snprintf(what, sizeof what, "everything");
    printf(PROG ": %s: generation %llu: %s%s%s%s%s\n", who, (unsigned long long)gen,
           flags & TRACE_CTL_PAUSED ? "paused (on --resume: " : "recording ", what, on,
           flags & TRACE_CTL_PAUSED ? ")" : "", state);
}

/* The link-time addresses of every NAME in exe, and exe's build-id words;
 * with want (nonzero), exe must have that build-id.  0, or an exit
 * status (said). */
static int resolve(const char *exe, const uint64_t want[2], const char *who, char **names, size_t nn, uint64_t **out,
                   size_t *nout, uint64_t words[2])
{
    char nm[512], msg[512];
    struct elf_buildid id;
    if (elf_buildid_read(exe, &id, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": --exe: %s\n", msg);
        return CTL_REFUSED;
    }
    elf_buildid_words(&id, words);
    if (want && (want[0] || want[1]) && (words[0] != want[0] || words[1] != want[1])) {
        char a[33], p[33];
        elf_buildid_hex(words, a);
        elf_buildid_hex(want, p);
        fprintf(stderr, PROG ": --exe %s has build-id %s; %s runs %s: give the binary it runs\n", exe, a, who, p);
        return CTL_REFUSED;
    }
    symbols_nm_for("addr2line", nm, sizeof nm);
    *out = NULL;
    *nout = 0;
    for (size_t i = 0; i < nn; i++) {
        uint64_t *addrs;
        size_t n;
        if (symbols_find_function(nm, exe, names[i], &addrs, &n, msg, sizeof msg) < 0) {
            fprintf(stderr, PROG ": %s\n", msg);
            free(*out);
            return CTL_REFUSED;
        }
        if (!n) {
            fprintf(stderr, PROG ": no function named '%s' in %s: nothing changed\n", names[i], exe);
            free(*out);
            return CTL_REFUSED;
        }
        uint64_t *grown = realloc(*out, (*nout + n) * sizeof *grown);
        if (!grown) {
            free(addrs);
            free(*out);
            fprintf(stderr, PROG ": out of memory\n");
            return CTL_REFUSED;
        }
        *out = grown;
        for (size_t k = 0; k < n; k++)
            (*out)[(*nout)++] = addrs[k];
        free(addrs);
    }
    if (*nout > TRACE_CTL_FUNCS_MAX) {
        fprintf(stderr, PROG ": the names match %zu functions; a setting holds at most %u: nothing changed\n", *nout,
                TRACE_CTL_FUNCS_MAX);
        free(*out);
        *out = NULL;
        return CTL_REFUSED;
    }
    return 0;
}

/* What a change is, before it is sent anywhere. */
struct change {
    int op; /* 'p'ause 'r'esume 'o'ff 'y' only 'u'nder 'x' reset 's'how 'f'light recorder */
    uint32_t recorder; /* --recorder: TRACE_STREAM_CTL_RECORDER_ON or _OFF */
    unsigned long depth; /* --under's --depth (TRACE_CTL_DEPTH_ANY: all) */
    const char *threads; /* --threads: thread globs (NULL: every thread) */
    const char *trigger; /* --trigger NAME>LIMIT or "none" (NULL: TRACE_TRIGGER's) */
    uint32_t mode;       /* --mode: TRACE_CTL_MODE_* (0: TRACE_MODE's) */
    const char *exe;
    char **names;
    size_t nn;
    unsigned long wait_ms;
};

/* --under takes one function: its address out of the list (freed), or
 * CTL_REFUSED when the name matches several (said). */
static int one_function(const char *name, uint64_t **addrs, size_t *n, uint64_t *under)
{
    int rc = 0;
    if (*n == 1)
        *under = (*addrs)[0];
    else {
        fprintf(stderr, PROG ": --under '%s' matches %zu functions; it takes one: nothing changed\n", name, *n);
        rc = CTL_REFUSED;
    }
    free(*addrs);
    *addrs = NULL;
    *n = 0;
    return rc;
}

/* --trigger: the rule's function (link-time) and limit into trig, exe's
 * build-id words into words (with want, exe must have it); "none": zeros.
 * 0, or an exit status (said). */
static int trigger_of(const struct change *ch, const uint64_t want[2], const char *who, uint64_t trig[2],
                      uint64_t words[2])
{
    trig[0] = trig[1] = 0;
    if (!strcmp(ch->trigger, "none"))
        return 0;
    const char *gt = strrchr(ch->trigger, '>');
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(gt - ch->trigger), ch->trigger);
    char *names[1] = {name};
    uint64_t *addrs = NULL;
    size_t n = 0;
    int rc = resolve(ch->exe, want, who, names, 1, &addrs, &n, words);
    if (!rc && n != 1) {
        fprintf(stderr, PROG ": --trigger '%s' matches %zu functions; a trigger takes one: nothing changed\n", name, n);
        rc = CTL_REFUSED;
    }
    if (!rc) {
        trig[0] = addrs[0];
        trig[1] = trigger_limit(gt + 1);
    }
    free(addrs);
    return rc;
}

/* --pid: the process's own block. */
static int ctl_pid(unsigned long pid, const struct change *ch)
{
    struct ctlblock b;
    char msg[600], who[32];
    int gone;
    snprintf(who, sizeof who, "pid %lu", pid);
    if (ctlblock_open(&b, pid, &gone, msg, sizeof msg) < 0) {
        if (gone)
            fprintf(stderr, PROG ": pid %lu has no control block: it is not running, or was not started with "
                            "TRACE_CONTROL=1 by this user\n", pid);
        else
            fprintf(stderr, PROG ": %s\n", msg);
        return CTL_UNREACHABLE;
    }
    static uint64_t cur[TRACE_CTL_FUNCS_MAX];
    uint64_t gen, words[2] = {0, 0};
    uint32_t flags;
    size_t ncur = ctlblock_current(&b, &gen, &flags, cur);
    int rc = CTL_APPLIED, op = ch->op;
    if (op == 's') {
        uint64_t applied = b.c->applied;
        if (flags & TRACE_CTL_UNDER)
            ncur = b.c->setting[(gen / 2u) & 1u].under_depth;
        flags |= flags & TRACE_CTL_TRIGGER && !b.c->setting[(gen / 2u) & 1u].trig_func ? SAY_NO_TRIGGER : 0;
        flags |= b.c->setting[(gen / 2u) & 1u].mode == TRACE_CTL_MODE_SUMMARY ? SAY_SUMMARY : 0;
        say_setting(who, gen, flags, ncur, b.c->setting[(gen / 2u) & 1u].threads,
                    gen && applied < gen ? " (not yet applied by any thread)" : "");
        ctlblock_close(&b);
        return CTL_APPLIED;
    }
    uint64_t *addrs = NULL;
    size_t n = 0;
    int keep = op == 'p' || op == 'r';
    uint64_t under = 0;
    if (op == 'o' || op == 'y' || op == 'u') {
        rc = resolve(ch->exe, b.c->build_id, who, ch->names, ch->nn, &addrs, &n, words);
        if (op == 'u' && !rc)
            rc = one_function(ch->names[0], &addrs, &n, &under);
        flags = (flags & TRACE_CTL_PAUSED) | (op == 'o' ? TRACE_CTL_OFF : op == 'y' ? TRACE_CTL_ONLY : TRACE_CTL_UNDER);
    } else if (keep) {
        n = flags & (TRACE_CTL_OFF | TRACE_CTL_ONLY) ? ncur : 0;
        flags = op == 'p' ? flags | TRACE_CTL_PAUSED : flags & ~TRACE_CTL_PAUSED;
    } else
        flags = 0;
    uint64_t trig[2] = {0, 0}, tw[2] = {0, 0};
    if (!rc && ch->trigger) {
        rc = trigger_of(ch, b.c->build_id, who, trig, tw);
        flags |= TRACE_CTL_TRIGGER;
        if (!words[0] && !words[1]) /* the setting's build-id names the trigger's program too */
            memcpy(words, tw, sizeof tw);
    }
    if (ch->mode)
        flags |= TRACE_CTL_MODE;
    if (rc == CTL_APPLIED && ctlblock_write(&b, flags, words, addrs, n, under, (uint32_t)ch->depth, ch->threads, trig,
                                            ch->mode, keep, &gen, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": pid %lu: refused: %s; nothing changed\n", pid, msg);
        rc = CTL_REFUSED;
    }
    free(addrs);
    if (rc == CTL_APPLIED) {
        int applied = ctlblock_wait(&b, gen, (unsigned)ch->wait_ms);
        const trace_ctl_setting_t *set = &b.c->setting[(gen / 2u) & 1u];
        flags = set->flags; /* as written: the threads, and with keep the functions or subtree kept */
        n = flags & TRACE_CTL_UNDER ? set->under_depth : set->nfuncs;
        flags |= flags & TRACE_CTL_TRIGGER && !set->trig_func ? SAY_NO_TRIGGER : 0;
        flags |= set->mode == TRACE_CTL_MODE_SUMMARY ? SAY_SUMMARY : 0;
        say_setting(who, gen, flags, n, set->threads, applied ? " (applied)" : " (written; no thread has applied it yet: each does at its next call)");
        rc = applied ? CTL_APPLIED : CTL_PENDING;
    }
    ctlblock_close(&b);
    return rc;
}

/* DIR --list: the connections, one line each. */
static int ctl_list(const char *dir)
{
    static char text[CONTROL_MAX_CONNS * 96 + 64];
    if (control_ctl_list(dir, text, sizeof text) < 0) {
        fprintf(stderr, PROG ": %s\n", text);
        return CTL_UNREACHABLE;
    }
    int any = 0;
    for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        unsigned id, flags, nfuncs;
        int takes, answered;
        unsigned long long gen, applied;
        *nl = 0;
        if (sscanf(line, "%u %d %d %llu %llu %u %u", &id, &takes, &answered, &gen, &applied, &flags, &nfuncs) != 7)
            continue;
        char who[32];
        snprintf(who, sizeof who, "conn %u%s", id, takes == 2 ? " (key proved)" : "");
        any = 1;
        if (!takes)
            printf(PROG ": %s: takes no control (its trace_stream runs without --allow-control, or predates it)\n",
                   who);
        else if (takes == 3)
            printf(PROG ": %s: takes control, but has not proved serve's key: nothing is relayed to it (start its "
                   "trace_stream with --auth-key and the same key)\n", who);
        else if (!answered)
            printf(PROG ": %s: takes control; nothing changed yet\n", who);
        else
            say_setting(who, gen, flags, nfuncs, NULL, applied >= gen ? " (applied)" : " (not yet applied)");
    }
    if (!any)
        printf(PROG ": no connection is writing in %s\n", dir);
    return CTL_APPLIED;
}

/* DIR: the change, as a request body, through serve to the device. */
static int ctl_dir(const char *dir, unsigned long conn, const struct change *ch)
{
    static unsigned char body[TRACE_STREAM_CTL_BODY_MAX];
    struct wire_ctl q = {0};
    uint64_t *addrs = NULL;
    size_t n = 0;
    int rc = 0;
    if (ch->op == 'o' || ch->op == 'y') {
        rc = resolve(ch->exe, NULL, "", ch->names, ch->nn, &addrs, &n, q.build_id);
        q.flags = ch->op == 'o' ? TRACE_CTL_OFF : TRACE_CTL_ONLY;
        q.nfuncs = (uint32_t)n;
    } else if (ch->op == 'u') {
        rc = resolve(ch->exe, NULL, "", ch->names, ch->nn, &addrs, &n, q.build_id);
        if (!rc)
            rc = one_function(ch->names[0], &addrs, &n, &q.under);
        q.flags = TRACE_CTL_UNDER;
        q.depth = (uint32_t)ch->depth;
    } else if (ch->op == 'f') {
        q.keep = 1;
        q.flags = TRACE_STREAM_CTL_RECORDER;
        q.recorder = ch->recorder;
    } else {
        q.keep = ch->op == 'p' || ch->op == 'r';
        q.flags = ch->op == 'p' ? TRACE_CTL_PAUSED : 0;
    }
    if (!rc && ch->trigger) {
        uint64_t tw[2] = {0, 0};
        rc = trigger_of(ch, NULL, "", q.trig, tw);
        q.flags |= TRACE_CTL_TRIGGER;
        if (!q.build_id[0] && !q.build_id[1])
            memcpy(q.build_id, tw, sizeof tw);
    }
    if (rc)
        return rc;
    if (ch->mode) {
        q.flags |= TRACE_CTL_MODE;
        q.mode = ch->mode;
    }
    if (ch->threads) {
        q.flags |= TRACE_CTL_THREADS;
        snprintf(q.threads, sizeof q.threads, "%s", ch->threads);
    }
    size_t len = wire_ctl_encode(body, &q, addrs);
    free(addrs);
    char reply[CONTROL_LINE_MAX], word[16], tail[CONTROL_LINE_MAX], who[32];
    unsigned id = 0, flags = 0, nfuncs = 0;
    unsigned long long gen = 0, applied = 0;
    if (control_ctl(dir, (uint32_t)conn, body, len, reply, sizeof reply) < 0) {
        fprintf(stderr, PROG ": %s\n", reply);
        return CTL_UNREACHABLE;
    }
    if (sscanf(reply, "%15s %u %llu %llu %u %u", word, &id, &gen, &applied, &flags, &nfuncs) == 6 &&
        (!strcmp(word, "applied") || !strcmp(word, "pending"))) {
        int done = !strcmp(word, "applied");
        snprintf(who, sizeof who, "conn %u", id);
        if (ch->op == 'f') {
            int on = (flags & TRACE_STREAM_CTL_RECORDER) != 0;
            printf(PROG ": %s: flight recorder %s%s\n", who, on ? "on" : "off",
                   done ? on ? " (applied: the ring keeps its most recent events; snapshots come as series of "
                               "their own)" : " (applied: streaming)"
                        : " (asked; not made yet: the ring is still being drained up to the switch)");
            return done ? CTL_APPLIED : CTL_PENDING;
        }
        flags |= flags & TRACE_CTL_TRIGGER && !q.trig[0] ? SAY_NO_TRIGGER : 0;
        flags |= q.mode == TRACE_CTL_MODE_SUMMARY ? SAY_SUMMARY : 0;
        say_setting(who, gen, flags, flags & TRACE_CTL_UNDER ? ch->depth : nfuncs, ch->threads, done ? " (applied)"
                    : " (written; no thread has applied it yet: each does at its next call)");
        return done ? CTL_APPLIED : CTL_PENDING;
    }
    if (sscanf(reply, "refused %u %[^\n]", &id, tail) == 2) {
        fprintf(stderr, PROG ": conn %u: refused: %s; nothing changed\n", id, tail);
        return CTL_REFUSED;
    }
    if (sscanf(reply, "unreachable %[^\n]", tail) == 1) {
        fprintf(stderr, PROG ": %s\n", tail);
        return CTL_UNREACHABLE;
    }
    fprintf(stderr, PROG ": serve in %s answered something else: %.80s\n", dir, reply);
    return CTL_UNREACHABLE;
}

int cmd_ctl(int argc, char **argv)
{
    unsigned long pid = 0, conn = 0;
    const char *dir = NULL;
    char *names[NAMES_MAX];
    struct change ch = {0, 0, TRACE_CTL_DEPTH_ANY, NULL, NULL, 0, NULL, names, 0, 1000};
    int list = 0, conn_given = 0, wait_given = 0, depth_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_arg = !strcmp(a, "--pid") || !strcmp(a, "--exe") || !strcmp(a, "--off") || !strcmp(a, "--only") ||
                      !strcmp(a, "--wait") || !strcmp(a, "--conn") || !strcmp(a, "--under") || !strcmp(a, "--depth") ||
                      !strcmp(a, "--threads") || !strcmp(a, "--trigger") || !strcmp(a, "--mode") ||
                      !strcmp(a, "--recorder");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (has_arg && i + 1 >= argc) {
            fprintf(stderr, PROG ": %s needs a value (try --help)\n", a);
            return CTL_USAGE;
        }
        int want = !strcmp(a, "--pause") ? 'p' : !strcmp(a, "--resume") ? 'r' : !strcmp(a, "--off") ? 'o'
                 : !strcmp(a, "--only") ? 'y' : !strcmp(a, "--under") ? 'u' : !strcmp(a, "--reset") ? 'x'
                 : !strcmp(a, "--show") ? 's' : !strcmp(a, "--recorder") ? 'f' : 0;
        if (want) {
            if (ch.op && ch.op != want) {
                fprintf(stderr, PROG ": one change at a time: %s with another (try --help)\n", a);
                return CTL_USAGE;
            }
            ch.op = want;
            if (want == 'u' && ch.nn) {
                fprintf(stderr, PROG ": --under takes one function\n");
                return CTL_USAGE;
            }
            if (want == 'f') {
                const char *v = argv[++i];
                ch.recorder = !strcmp(v, "on") ? TRACE_STREAM_CTL_RECORDER_ON
                              : !strcmp(v, "off") ? TRACE_STREAM_CTL_RECORDER_OFF : 0;
                if (!ch.recorder) {
                    fprintf(stderr, PROG ": --recorder: '%s' is not on or off\n", v);
                    return CTL_USAGE;
                }
            }
            if (want == 'o' || want == 'y' || want == 'u') {
                if (ch.nn == NAMES_MAX) {
                    fprintf(stderr, PROG ": more than %d names\n", NAMES_MAX);
                    return CTL_USAGE;
                }
                names[ch.nn++] = argv[++i];
            }
        } else if (!strcmp(a, "--pid")) {
            if (parse_ulong(argv[++i], 4194304UL, &pid) < 0 || !pid) {
                fprintf(stderr, PROG ": --pid: '%s' is not a process id\n", argv[i]);
                return CTL_USAGE;
            }
        } else if (!strcmp(a, "--conn")) {
            if (parse_ulong(argv[++i], UINT32_MAX, &conn) < 0 || !conn) {
                fprintf(stderr, PROG ": --conn: '%s' is not a connection number\n", argv[i]);
                return CTL_USAGE;
            }
            conn_given = 1;
        } else if (!strcmp(a, "--depth")) {
            if (parse_ulong(argv[++i], 65534UL, &ch.depth) < 0) {
                fprintf(stderr, PROG ": --depth: '%s' is not a number of levels up to 65534\n", argv[i]);
                return CTL_USAGE;
            }
            depth_given = 1;
        } else if (!strcmp(a, "--threads")) {
            ch.threads = argv[++i];
            if (!*ch.threads || strlen(ch.threads) > TRACE_CTL_THREADS_MAX || strspn(ch.threads, " ") == strlen(ch.threads)) {
                fprintf(stderr, PROG ": --threads: give 1 to %u bytes of globs, comma-separated\n", TRACE_CTL_THREADS_MAX);
                return CTL_USAGE;
            }
            for (const char *c = ch.threads; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
                    fprintf(stderr, PROG ": --threads: globs are printable ASCII\n");
                    return CTL_USAGE;
                }
        } else if (!strcmp(a, "--mode")) {
            const char *m = argv[++i];
            ch.mode = !strcmp(m, "events") ? TRACE_CTL_MODE_EVENTS : !strcmp(m, "summary") ? TRACE_CTL_MODE_SUMMARY : 0;
            if (!ch.mode) {
                fprintf(stderr, PROG ": --mode: '%s' is not events or summary\n", m);
                return CTL_USAGE;
            }
        } else if (!strcmp(a, "--trigger")) {
            ch.trigger = argv[++i];
            const char *gt = strrchr(ch.trigger, '>');
            if (strcmp(ch.trigger, "none") &&
                (!gt || gt == ch.trigger || gt - ch.trigger > 255 || !trigger_limit(gt + 1))) {
                fprintf(stderr, PROG ": --trigger: '%s' is not NAME>LIMIT (such as parse>2ms; units ns, us, ms, s) "
                                "or none\n", ch.trigger);
                return CTL_USAGE;
            }
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "--exe"))
            ch.exe = argv[++i];
        else if (!strcmp(a, "--wait")) {
            if (parse_ulong(argv[++i], 600000UL, &ch.wait_ms) < 0) {
                fprintf(stderr, PROG ": --wait: '%s' is not a number of ms up to 600000\n", argv[i]);
                return CTL_USAGE;
            }
            wait_given = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PROG ": unknown option '%s' (try --help)\n", a);
            return CTL_USAGE;
        } else if (dir) {
            fprintf(stderr, PROG ": one serve directory only ('%s' and '%s')\n", dir, a);
            return CTL_USAGE;
        } else
            dir = a;
    }
    if ((ch.threads || ch.trigger || ch.mode) && !ch.op && !list)
        ch.op = 'x'; /* --threads, --trigger or --mode alone: everything, on these threads, ... */
    const char *bad = pid && dir ? "--pid PID or DIR, not both"
                      : !pid && !dir ? "say which program: --pid PID, or a serve directory DIR"
                      : pid && (list || conn_given) ? "--list and --conn go with DIR, not --pid"
                      : dir && ch.op == 's' ? "--show goes with --pid; for DIR, --list"
                      : pid && ch.op == 'f' ? "--recorder goes with DIR: a device's ring, through serve"
                      : ch.op == 'f' && (ch.threads || ch.trigger || ch.mode)
                          ? "--recorder is a change of its own: without --threads, --trigger or --mode"
                      : dir && wait_given ? "--wait goes with --pid (through serve the device waits)"
                      : list && ch.op ? "--list changes nothing: give it alone"
                      : depth_given && ch.op != 'u' ? "--depth goes with --under"
                      : ch.threads && (ch.op == 'p' || ch.op == 'r' || ch.op == 's' || list)
                          ? "--threads is part of a whole new setting: alone, or with --off, --only, --under or --reset"
                      : ch.trigger && (ch.op == 'p' || ch.op == 'r' || ch.op == 's' || list)
                          ? "--trigger is part of a whole new setting: alone, or with --off, --only, --under or --reset"
                      : ch.mode && (ch.op == 'p' || ch.op == 'r' || ch.op == 's' || list)
                          ? "--mode is part of a whole new setting: alone, or with --off, --only, --under or --reset"
                      : !list && !ch.op ? "say what to change: --pause, --resume, --off, --only, --under, --reset, "
                                          "--recorder or --show"
                      : NULL;
    if (bad) {
        fprintf(stderr, PROG ": %s (try --help)\n", bad);
        return CTL_USAGE;
    }
    if (ch.trigger && strcmp(ch.trigger, "none") && !ch.exe) {
        fprintf(stderr, PROG ": --trigger needs --exe BIN, the program it runs, to find the name in\n");
        return CTL_USAGE;
    }
    if ((ch.op == 'o' || ch.op == 'y' || ch.op == 'u') && !ch.exe) {
        fprintf(stderr, PROG ": --%s needs --exe BIN, the program it runs, to find the names in\n",
                ch.op == 'o' ? "off" : ch.op == 'y' ? "only" : "under");
        return CTL_USAGE;
    }
    if (list)
        return ctl_list(dir);
    return pid ? ctl_pid(pid, &ch) : ctl_dir(dir, conn, &ch);
}
