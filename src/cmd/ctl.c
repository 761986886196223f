/*
 * ctl.c - `callsight ctl --pid PID`: change what a running process
 * records, without a rebuild or a restart (live control, step 1 of
 * docs/control.md): pause and resume it, turn functions off, or record
 * only some, in a process started with TRACE_CONTROL=1.
 *
 * Options, names and the exit status are here; the block itself is
 * serve/ctlblock.c's (serve relays control in step 2), the names nm's
 * (read/symbols.c), as analyze --function takes them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "serve/ctlblock.h"
#include "read/elf_buildid.h"
#include "read/symbols.h"

#define PROG "callsight ctl"
#define NAMES_MAX 256 /* --off/--only arguments; each may be a glob of many functions */

enum { CTL_APPLIED = 0, CTL_REFUSED = 1, CTL_USAGE = 2, CTL_UNREACHABLE = 3, CTL_PENDING = 4 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: callsight ctl --pid PID [--exe BIN]\n"
            "                     (--pause | --resume | --off NAME... | --only NAME... | --reset | --show)\n"
            "                     [--wait MS]\n"
            "\n"
            "Change what a running process records, from now on, without a rebuild or\n"
            "a restart.  The process must have been started with TRACE_CONTROL=1 (by\n"
            "this user): it then has a control block, /dev/shm/callsight-ctl-UID-PID,\n"
            "owner-only, removed when it exits.  Each of its threads applies a change\n"
            "at its next hook and says so in its trace (analyze shows every change);\n"
            "a call already open keeps the decision made when it began, so counts stay\n"
            "exact and no exit is left without its enter.  Only what the build\n"
            "instrumented can be recorded: these options narrow it.\n"
            "\n"
            "  --pid PID     the process\n"
            "  --exe BIN     the program it runs, to look NAMEs up in (required with\n"
            "                --off and --only; its build-id must be the process's)\n"
            "  --pause       record nothing from now on (the functions set stay set)\n"
            "  --resume      record again, as set before --pause\n"
            "  --off NAME    do not record these functions' calls; NAME as analyze\n"
            "                --function takes it (a C++ name from any '::', a glob\n"
            "                'fi*'); repeat for more; replaces an earlier --off/--only\n"
            "  --only NAME   record only these functions' calls (repeatable)\n"
            "  --reset       record everything again\n"
            "  --show        print what the process applies now, change nothing\n"
            "  --wait MS     how long to wait for a thread to apply the change\n"
            "                (default 1000; a thread applies it at its next hook)\n"
            "  --help        this text\n"
            "\n"
            "At most %u functions per setting.  Shared objects' functions are not\n"
            "yet named here (the program's own only).\n"
            "\n"
            "Exit status: 0 applied (or shown), 1 refused (a NAME that matches\n"
            "nothing, too many functions, another binary), 2 usage error, 3 no\n"
            "such process with a control block, 4 written but no thread applied it\n"
            "within --wait (the process made no call since).\n",
            TRACE_CTL_FUNCS_MAX);
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *v)
{
    char *end;
    errno = 0;
    *v = strtoul(s, &end, 10);
    return errno || end == s || *end || s[0] == '-' || *v > max ? -1 : 0;
}

static void say_setting(unsigned long pid, uint64_t gen, uint32_t flags, size_t n, const char *state)
{
    char what[64];
    if (flags & TRACE_CTL_OFF)
        snprintf(what, sizeof what, "all but %zu function%s", n, n == 1 ? "" : "s");
    else if (flags & TRACE_CTL_ONLY)
        snprintf(what, sizeof what, "only %zu function%s", n, n == 1 ? "" : "s");
    else
        snprintf(what, sizeof what, "everything");
    printf(PROG ": pid %lu: generation %llu: %s%s%s%s\n", pid, (unsigned long long)gen,
           flags & TRACE_CTL_PAUSED ? "paused (on --resume: " : "recording ", what,
           flags & TRACE_CTL_PAUSED ? ")" : "", state);
}

/* The runtime addresses of every NAME in exe; 0, or an exit status (said). */
static int resolve(const char *exe, const struct ctlblock *b, char **names, size_t nn, uint64_t **out, size_t *nout)
{
    char nm[512], msg[512];
    struct elf_buildid id;
    uint64_t words[2];
    if (elf_buildid_read(exe, &id, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": --exe: %s\n", msg);
        return CTL_REFUSED;
    }
    elf_buildid_words(&id, words);
    if ((b->c->build_id[0] || b->c->build_id[1]) && (words[0] != b->c->build_id[0] || words[1] != b->c->build_id[1])) {
        char a[33], p[33];
        elf_buildid_hex(words, a);
        elf_buildid_hex(b->c->build_id, p);
        fprintf(stderr, PROG ": --exe %s has build-id %s; pid %lu runs %s: give the binary it runs\n", exe, a, b->pid,
                p);
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
            (*out)[(*nout)++] = addrs[k] + b->c->load_bias;
        free(addrs);
    }
    return 0;
}

int cmd_ctl(int argc, char **argv)
{
    unsigned long pid = 0, wait_ms = 1000;
    const char *exe = NULL;
    char *names[NAMES_MAX];
    size_t nn = 0;
    int op = 0; /* 'p'ause 'r'esume 'o'ff 'y' only 'x' reset 's'how */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_arg = !strcmp(a, "--pid") || !strcmp(a, "--exe") || !strcmp(a, "--off") || !strcmp(a, "--only") ||
                      !strcmp(a, "--wait");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (has_arg && i + 1 >= argc) {
            fprintf(stderr, PROG ": %s needs a value (try --help)\n", a);
            return CTL_USAGE;
        }
        int want = !strcmp(a, "--pause") ? 'p' : !strcmp(a, "--resume") ? 'r' : !strcmp(a, "--off") ? 'o'
                 : !strcmp(a, "--only") ? 'y' : !strcmp(a, "--reset") ? 'x' : !strcmp(a, "--show") ? 's' : 0;
        if (want) {
            if (op && op != want) {
                fprintf(stderr, PROG ": one change at a time: %s with another (try --help)\n", a);
                return CTL_USAGE;
            }
            op = want;
            if (want == 'o' || want == 'y') {
                if (nn == NAMES_MAX) {
                    fprintf(stderr, PROG ": more than %d names\n", NAMES_MAX);
                    return CTL_USAGE;
                }
                names[nn++] = argv[++i];
            }
        } else if (!strcmp(a, "--pid")) {
            if (parse_ulong(argv[++i], 4194304UL, &pid) < 0 || !pid) {
                fprintf(stderr, PROG ": --pid: '%s' is not a process id\n", argv[i]);
                return CTL_USAGE;
            }
        } else if (!strcmp(a, "--exe"))
            exe = argv[++i];
        else if (!strcmp(a, "--wait")) {
            if (parse_ulong(argv[++i], 600000UL, &wait_ms) < 0) {
                fprintf(stderr, PROG ": --wait: '%s' is not a number of ms up to 600000\n", argv[i]);
                return CTL_USAGE;
            }
        } else {
            fprintf(stderr, PROG ": unknown option '%s' (try --help)\n", a);
            return CTL_USAGE;
        }
    }
    if (!pid || !op) {
        fprintf(stderr, PROG ": %s (try --help)\n", !pid ? "--pid PID is required" : "say what to change: --pause, --resume, --off, --only, --reset or --show");
        return CTL_USAGE;
    }
    if ((op == 'o' || op == 'y') && !exe) {
        fprintf(stderr, PROG ": --%s needs --exe BIN, the program pid %lu runs, to find the names in\n",
                op == 'o' ? "off" : "only", pid);
        return CTL_USAGE;
    }

    struct ctlblock b;
    char msg[600];
    int gone;
    if (ctlblock_open(&b, pid, &gone, msg, sizeof msg) < 0) {
        if (gone)
            fprintf(stderr, PROG ": pid %lu has no control block: it is not running, or was not started with "
                            "TRACE_CONTROL=1 by this user\n", pid);
        else
            fprintf(stderr, PROG ": %s\n", msg);
        return CTL_UNREACHABLE;
    }
    static uint64_t cur[TRACE_CTL_FUNCS_MAX];
    uint64_t gen;
    uint32_t flags;
    size_t ncur = ctlblock_current(&b, &gen, &flags, cur);
    int rc = CTL_APPLIED;
    if (op == 's') {
        uint64_t applied = b.c->applied;
        say_setting(pid, gen, flags, ncur, gen && applied < gen ? " (not yet applied by any thread)" : "");
        ctlblock_close(&b);
        return CTL_APPLIED;
    }
    uint64_t *addrs = NULL;
    size_t n = 0;
    uint32_t keep = flags & (TRACE_CTL_OFF | TRACE_CTL_ONLY);
    if (op == 'o' || op == 'y') {
        rc = resolve(exe, &b, names, nn, &addrs, &n);
        flags = (flags & TRACE_CTL_PAUSED) | (op == 'o' ? TRACE_CTL_OFF : TRACE_CTL_ONLY);
    } else if (op == 'p' || op == 'r') {
        addrs = keep ? cur : NULL; /* the functions stay as set */
        n = keep ? ncur : 0;
        flags = op == 'p' ? flags | TRACE_CTL_PAUSED : flags & ~TRACE_CTL_PAUSED;
    } else
        flags = 0;
    if (rc == CTL_APPLIED && ctlblock_write(&b, flags, addrs, n, &gen, msg, sizeof msg) < 0) {
        fprintf(stderr, PROG ": pid %lu: refused: %s; nothing changed\n", pid, msg);
        rc = CTL_REFUSED;
    }
    if (addrs != cur)
        free(addrs);
    if (rc == CTL_APPLIED) {
        int applied = ctlblock_wait(&b, gen, (unsigned)wait_ms);
        say_setting(pid, gen, flags, n, applied ? " (applied)" : " (written; no thread has applied it yet: each does at its next call)");
        rc = applied ? CTL_APPLIED : CTL_PENDING;
    }
    ctlblock_close(&b);
    return rc;
}
