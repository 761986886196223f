/*
 * doctor.c - `callsight doctor`: check a set-up before it becomes a
 * puzzling report.
 *
 * One line per check, `[ok]`, `[note]` (works, but worth knowing) or
 * `[FAIL]` (tracing or its report will not work as it is), each saying what
 * was found and, for a FAIL, what to do; exit status 1 on any FAIL.  The
 * checks: the compiler accepts -finstrument-functions, and which trace.config
 * directives it supports; --exe is ELF with the runtime linked in, symbols,
 * line info and a build-id, and the addr2line (and nm) in use read its
 * architecture, and its runtime's hooks do not call the hooks (a runtime
 * compiled with -finstrument-functions); the trace directory is writable
 * and has room; /dev/shm can hold the ring, and which rings there are stale
 * (no process has them open); trace.config parses and selects something
 * here.  Nothing is changed (a stale ring is only named, with its rm line): the compiler's test runs in a temporary directory that is
 * removed, the trace directory is probed with a file that is removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "lib/proc.h"
#include "read/elf_buildid.h"
#include "read/hook_reach.h"
#include "read/symbols.h"
#include "select/choose.h"
#include "select/sources.h"
#include "trace_shm.h"

#define PROG "callsight doctor"

struct doctor {
    const char *exe, *addr2line, *cc, *dir, *config, *project;
    int config_given;
    unsigned ok, notes, fails;
    int compiler_is_clang;
};

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight doctor [--exe BIN] [--addr2line TOOL] [--cc CC] [--config FILE]\n"
"                        [--trace-dir DIR] [PROJECT]\n"
"\n"
"Check what tracing and its report need, one line each: [ok], [note] (works,\n"
"worth knowing) or [FAIL] (will not work as it is; the line says what to do).\n"
"\n"
"  the compiler    accepts -finstrument-functions; which trace.config\n"
"                  directives it supports (GCC 10+: all; clang: files only)\n"
"  --exe BIN       is ELF, has callsight's runtime linked in, not compiled\n"
"                  with -finstrument-functions itself (its hooks would call\n"
"                  the hooks: objdump reads that), symbols, line info and a\n"
"                  build-id; the addr2line (and nm) in use read its\n"
"                  architecture\n"
"  the trace dir   (--trace-dir, else $TRACE_DIR, else traces) is writable,\n"
"                  with room for TRACE_MAX_MB\n"
"  /dev/shm        can hold the ring (TRACE_SHM_SIZE; containers often give\n"
"                  64 MB); your rings there that no process has open any\n"
"                  more (stale: their trace_stream and tracers are gone),\n"
"                  each with the rm line that removes it\n"
"  trace.config    PROJECT's (default: here) parses, and selects some of\n"
"                  its sources\n"
"\n"
"options:\n"
"  --exe BIN        the instrumented program\n"
"  --addr2line TOOL as analyze would use (default: addr2line)\n"
"  --cc CC          the compiler (default: $CC, else cc)\n"
"  --config FILE    the selection (default: PROJECT/trace.config)\n"
"  --trace-dir DIR  where traces go (default: $TRACE_DIR, else traces)\n"
"  -h, --help       print this help\n"
"\n"
"Exit status: 0 no FAIL, 1 any FAIL, 2 usage error.\n");
}

static void say(struct doctor *d, int kind, const char *fmt, ...)
{
    static const char *const tag[] = {"[ok]  ", "[note]", "[FAIL]"};
    va_list ap;
    printf("%s ", tag[kind]);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    d->ok += kind == 0;
    d->notes += kind == 1;
    d->fails += kind == 2;
}

/* Run the compile command cc with args (NULL-ended) in dir, the first line
 * of its output (stderr too) into out.  Its exit status (-1: could not
 * run).  An argv, never a shell: TMPDIR and --cc are the user's words, not
 * a script. */
static int run_cc(const char *cc, const char *const *args, const char *dir, char *out, size_t len)
{
    struct proc_words w;
    size_t n = 0;
    while (args[n])
        n++;
    out[0] = '\0';
    if (proc_split(cc, n, &w, out, len) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        w.argv[w.argc + (int)i] = (char *)args[i];
    int rc = proc_capture(w.argv, dir, out, len);
    proc_words_free(&w);
    return rc;
}

/* The scratch directory's files (it has no subdirectories), then itself. */
static int remove_scratch(const char *dir)
{
    static const char *const names[] = {"t.c", "t.o", "t2.o", "t.ci", "t2.ci"};
    char p[PATH_MAX];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, names[i]) < sizeof p && unlink(p) < 0 && errno != ENOENT)
            return -1;
    return rmdir(dir);
}

static void check_compiler(struct doctor *d)
{
    char tmp[] = "/tmp/callsight-doctor-XXXXXX", src[PATH_MAX + 8], obj[PATH_MAX + 8], line[512], ver[256];
    const char *tmpdir = getenv("TMPDIR");
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s/callsight-doctor-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    char *dir = mkdtemp(base) ? base : mkdtemp(tmp);
    if (!dir) {
        say(d, 2, "compiler: no temporary directory to test it in: %s", strerror(errno));
        return;
    }
    snprintf(src, sizeof src, "%s/t.c", dir);
    snprintf(obj, sizeof obj, "%s/t.o", dir);
    FILE *f = fopen(src, "w");
    if (f) {
        fputs("int f(int x) { return x + 1; }\n", f);
        fclose(f);
    }
    const char *version[] = {"--version", NULL};
    run_cc(d->cc, version, NULL, ver, sizeof ver);
    d->compiler_is_clang = strstr(ver, "clang") != NULL;
    const char *instr[] = {"-finstrument-functions", "-c", "-o", obj, src, NULL};
    if (run_cc(d->cc, instr, NULL, line, sizeof line) != 0) {
        say(d, 2, "compiler: %s does not compile with -finstrument-functions: %s (set --cc, or CC, to a GCC or "
                  "clang)", d->cc, line[0] ? line : "it could not be run");
    } else if (d->compiler_is_clang) {
        say(d, 0, "compiler: %s (%s) accepts -finstrument-functions", d->cc, ver);
        say(d, 1, "compiler: clang selects whole files only (include, exclude); exclude-func and include-func "
                  "need GCC 10 or newer");
    } else {
        /* In the directory: -fcallgraph-info writes t2.ci beside t2.o. */
        const char *graph_args[] = {"-O0", "-fcallgraph-info", "-c", "-o", "t2.o", "t.c", NULL};
        int graph = run_cc(d->cc, graph_args, dir, line, sizeof line) == 0;
        say(d, 0, "compiler: %s (%s) accepts -finstrument-functions", d->cc, ver);
        say(d, graph ? 0 : 1, "compiler: %s", graph ? "it writes a call graph, so every trace.config directive works "
                                                        "(include-func and exclude-func too)"
                                                      : "trace.config's file directives work; exclude-func and "
                                                        "include-func need GCC 10 or newer");
    }
    if (remove_scratch(dir) != 0)
        say(d, 1, "compiler: could not remove %s: %s", dir, strerror(errno));
}

/* The runtime is linked in: are its own functions free of hooks?  A
 * runtime compiled with -finstrument-functions (an old trace.c in the one
 * cc line with the program) recurses at the first hook. */
static void check_hooks(struct doctor *d)
{
    char objdump[PATH_MAX], culprit[256], msg[512];
    size_t n = 0;
    hook_reach_objdump_for(d->addr2line, objdump, sizeof objdump);
    int r = hook_reach_check(objdump, d->exe, culprit, sizeof culprit, &n, msg, sizeof msg);
    if (r < 0)
        say(d, 1, "binary: callsight's runtime is linked in; whether it was compiled with -finstrument-functions "
                  "could not be read: %s", msg);
    else if (r > 0)
        say(d, 2, "binary: callsight's runtime in %s was compiled with -finstrument-functions: its hooks call the "
                  "hooks again (through %s%s), so the program crashes once TRACE_ENABLE=1; compile trace.c without "
                  "it (cc -c trace.c -o trace.o, as `make instrument` does), or take this callsight's trace.c "
                  "(callsight init), every function of which is marked no_instrument_function", d->exe, culprit,
            n > 1 ? " and others" : "");
    else
        say(d, 0, "binary: callsight's runtime is linked in, its own functions without hooks");
}

/* --exe: ELF and build-id, the runtime, symbols, line info, the tools. */
static void check_exe(struct doctor *d)
{
    char msg[512], nm[PATH_MAX];
    struct elf_buildid id;
    if (!d->exe) {
        say(d, 1, "binary: no --exe given: its checks are skipped");
        return;
    }
    if (elf_buildid_read(d->exe, &id, msg, sizeof msg) < 0) {
        say(d, 2, "binary: %s", msg);
        return;
    }
    if (id.len)
        say(d, 0, "binary: %s is ELF with a build-id (analyze checks the trace came from it)", d->exe);
    else
        say(d, 1, "binary: %s has no build-id: analyze cannot prove a trace came from it (link with "
                  "-Wl,--build-id)", d->exe);
    symbols_nm_for(d->addr2line, nm, sizeof nm);
    uint64_t *addrs = NULL;
    size_t n = 0;
    if (symbols_check_tool(d->addr2line, msg, sizeof msg) < 0) {
        say(d, 2, "symbols: %s", msg);
        say(d, 1, "binary: the runtime and symbol checks need that tool, and are skipped");
        return;
    }
    if (symbols_find_function(nm, d->exe, "__cyg_profile_func_enter", &addrs, &n, msg, sizeof msg) < 0) {
        say(d, 2, "symbols: %s and %s cannot read %s, another architecture's binary? (%s) Give --addr2line "
                  "the one for the machine it was built for; the nm beside it is used too", d->addr2line, nm, d->exe,
            msg);
        say(d, 1, "binary: the runtime and symbol checks are skipped");
        return;
    }
    free(addrs);
    size_t nmain = 0;
    uint64_t *mains = NULL;
    int has_main = symbols_find_function(nm, d->exe, "main", &mains, &nmain, msg, sizeof msg) == 0 && nmain;
    free(mains);
    if (!n && !has_main) { /* no symbol table: whether the runtime is in cannot be told */
        say(d, 2, "binary: %s is stripped (no symbol table): doctor cannot tell whether the callsight runtime is "
                  "linked in, and analyze would show addresses only: give --exe the unstripped binary, or keep its "
                  "debug file for --debug-dir", d->exe);
        return;
    }
    if (!n)
        say(d, 2, "binary: %s has no callsight runtime (no __cyg_profile_func_enter): link trace.c into it, as "
                  "`make instrument` does", d->exe);
    else
        check_hooks(d);
    if (symbols_find_function(nm, d->exe, "main", &addrs, &n, msg, sizeof msg) < 0 || !n) {
        free(addrs);
        say(d, 2, "binary: no symbol main in %s: it is stripped, or not a program (build with -g, do not strip)",
            d->exe);
        return;
    }
    struct symbol sym;
    int bad = symbols_resolve(d->addr2line, d->exe, addrs, 1, &sym, msg, sizeof msg);
    free(addrs);
    if (bad < 0) {
        say(d, 2, "symbols: %s cannot read %s: %s (another architecture? give --addr2line for its machine)",
            d->addr2line, d->exe, msg);
        return;
    }
    if (!sym.name || strcmp(sym.name, "main"))
        say(d, 2, "symbols: %s names main's address '%s': it does not read %s (another architecture?)", d->addr2line,
            sym.name ? sym.name : "??", d->exe);
    else if (!sym.file || sym.line == 0)
        say(d, 1, "symbols: %s names functions, but there is no line info (build with -g for file:line)",
            d->addr2line);
    else
        say(d, 0, "symbols: %s reads %s: names and file:line (main at %s:%lu)", d->addr2line, d->exe, sym.file,
            sym.line);
    symbols_free(&sym, 1);
}

static unsigned long long env_bytes(const char *name, unsigned long long dflt, unsigned long long unit)
{
    const char *s = getenv(name);
    char *end;
    unsigned long long v = s && *s ? strtoull(s, &end, 10) : 0;
    return s && *s && !*end ? v * unit : dflt * unit;
}

static void check_dir(struct doctor *d)
{
    char probe[PATH_MAX + 64], parent[PATH_MAX];
    struct stat st;
    const char *where = d->dir;
    if (stat(d->dir, &st) != 0) {
        snprintf(parent, sizeof parent, "%s", d->dir);
        char *slash = strrchr(parent, '/');
        snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - parent) : 1, slash ? d->dir : ".");
        where = parent[0] ? parent : "/";
    } else if (!S_ISDIR(st.st_mode)) {
        say(d, 2, "trace dir: %s is not a directory", d->dir);
        return;
    }
    snprintf(probe, sizeof probe, "%s/.callsight-doctor-XXXXXX", where);
    int fd = mkstemp(probe);
    if (fd < 0) {
        say(d, 2, "trace dir: %s is not writable: %s (choose another: TRACE_DIR, or callsight run --dir)", where,
            strerror(errno));
        return;
    }
    close(fd);
    unlink(probe);
    struct statvfs v;
    unsigned long long room = statvfs(where, &v) == 0 ? (unsigned long long)v.f_bavail * v.f_frsize : 0;
    unsigned long long budget = env_bytes("TRACE_MAX_MB", 512, 1ull << 20);
    if (room < budget)
        say(d, 1, "trace dir: %s is writable, with %llu MB free, less than TRACE_MAX_MB (%llu MB): a long run "
                  "ends at the disk's end", d->dir, room >> 20, budget >> 20);
    else
        say(d, 0, "trace dir: %s is writable%s, with %llu MB free", d->dir, where == d->dir ? "" : " (to be made)",
            room >> 20);
}

static void check_shm(struct doctor *d)
{
    unsigned long long want = env_bytes("TRACE_SHM_SIZE", 16ull << 20, 1);
    struct statvfs v;
    if (statvfs("/dev/shm", &v) != 0) {
        say(d, 2, "shm: /dev/shm: %s: stream mode needs POSIX shared memory", strerror(errno));
        return;
    }
    unsigned long long room = (unsigned long long)v.f_bavail * v.f_frsize;
    if (room < want)
        say(d, 2, "shm: /dev/shm has %llu KiB free and the ring needs %llu KiB (TRACE_SHM_SIZE): stream mode "
                  "would die of SIGBUS at the first write; free some, set a smaller TRACE_SHM_SIZE, or give the "
                  "container more (docker --shm-size)", room >> 10, want >> 10);
    else
        say(d, 0, "shm: /dev/shm has %llu MB free, the ring needs %llu MB", room >> 20, want >> 20);
}

/* A segment of /dev/shm that looks like a ring: ours (uid), a regular file
 * reached without following a link, opened without blocking (a FIFO
 * planted there must not hang doctor), its header's magic and version.
 * The header into *h and the segment's stat into *st; 0 if it is one. */
static int ring_header(const char *path, trace_shm_header_t *h, struct stat *st, int *fd)
{
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return -1;
    if (fstat(*fd, st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
        st->st_size >= (off_t)sizeof *h && pread(*fd, h, sizeof *h, 0) == (ssize_t)sizeof *h &&
        !memcmp(h->magic, TRACE_SHM_MAGIC "\0\0\0", 8) &&
        (h->version == TRACE_SHM_VERSION || h->version == TRACE_SHM_VERSION_COMMIT))
        return 0;
    close(*fd);
    return -1;
}

/* Whether a process of ours has /dev/shm/name mapped (tracers and
 * trace_stream map it), by /proc/PID/maps; a process we cannot read is
 * not counted: it is another user's. */
static int ring_mapped(const char *name)
{
    char want[NAME_MAX + 16], path[64], line[PATH_MAX + 128];
    snprintf(want, sizeof want, " /dev/shm/%s", name);
    size_t wl = strlen(want);
    DIR *proc = opendir("/proc");
    int found = 0;
    for (struct dirent *e; proc && !found && (e = readdir(proc));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%.20s/maps", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && !found && fgets(line, sizeof line, f)) {
            char *at = strstr(line, want);
            found = at && (at[wl] == '\n' || at[wl] == ' ');
        }
        if (f)
            fclose(f);
    }
    if (proc)
        closedir(proc);
    return found;
}

/* The rings in /dev/shm that nobody has open any more: a tracer holds a
 * shared flock on its ring while it lives, and it and trace_stream map it;
 * with neither, the segment only takes memory until someone removes it,
 * and a program started on its name would fill it for no reader. */
static void check_stale_rings(struct doctor *d)
{
    DIR *dir = opendir("/dev/shm");
    const char *mine = getenv("TRACE_SHM");
    unsigned rings = 0, stale = 0;
    if (mine && *mine == '/')
        mine++;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        char path[NAME_MAX + 16], when[32] = "?";
        trace_shm_header_t h;
        struct stat st;
        int fd;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (e->d_name[0] == '.' || ring_header(path, &h, &st, &fd) < 0)
            continue;
        rings++;
        int locked = flock(fd, LOCK_EX | LOCK_NB) != 0; /* a tracer's shared lock: it lives */
        if (!locked)
            flock(fd, LOCK_UN);
        close(fd);
        if (locked || ring_mapped(e->d_name))
            continue;
        stale++;
        struct tm tm;
        time_t t = st.st_mtime;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        int named = mine && !strcmp(mine, e->d_name);
        say(d, named ? 2 : 1, "shm: /dev/shm/%s is a stale callsight ring (%llu KiB, %llu bytes of events never read, "
                              "last written %s): no tracer or trace_stream has it open any more%s; remove it: rm "
                              "/dev/shm/%s", e->d_name, (unsigned long long)((st.st_size + 1023) >> 10),
            (unsigned long long)(h.head - h.tail < h.capacity ? h.head - h.tail : h.capacity), when,
            named ? ", and it is TRACE_SHM's: a program started now would write it for no reader" : "", e->d_name);
    }
    if (dir)
        closedir(dir);
    if (!stale)
        say(d, 0, "shm: no stale callsight ring in /dev/shm (%u of yours in use)", rings);
}

static void check_config(struct doctor *d)
{
    struct choose ch;
    char err[CONFIG_ERR_MAX + 64];
    if (access(d->config, F_OK) != 0 && !d->config_given) {
        say(d, 1, "trace.config: none in %s: every source is instrumented (callsight init writes a starter)",
            d->project);
        return;
    }
    if (choose_init(&ch, d->config, 1, err, sizeof err) < 0) {
        say(d, 2, "trace.config: %s", err);
        return;
    }
    struct sources l;
    size_t on = 0;
    if (sources_find(&l, d->project, err, sizeof err) == 0) {
        const struct config_rule *why;
        for (size_t i = 0; i < l.n; i++)
            on += (size_t)choose_source(&ch, l.v[i], &why);
        if (ch.graph_rule)
            say(d, d->compiler_is_clang ? 2 : 1, "trace.config: line %u selects single functions: decided on GCC's "
                "call graph when you build%s (callsight scan --cc '...' shows them)", ch.graph_rule->line,
                d->compiler_is_clang ? ", which clang cannot do: build with GCC" : "");
        else if (!on)
            say(d, 2, "trace.config: selects none of the %zu sources in %s: nothing would be traced (callsight "
                      "scan says why)", l.n, d->project);
        else
            say(d, 0, "trace.config: parses, and selects %zu of the %zu sources in %s", on, l.n, d->project);
        sources_free(&l);
    } else {
        say(d, 1, "trace.config: parses; the sources here could not be listed: %s", err);
    }
    choose_free(&ch);
}

int cmd_doctor(int argc, char **argv)
{
    struct doctor d;
    memset(&d, 0, sizeof d);
    d.addr2line = "addr2line";
    d.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    d.dir = getenv("TRACE_DIR") && *getenv("TRACE_DIR") ? getenv("TRACE_DIR") : "traces";
    d.project = ".";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int v = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--exe")) {
            d.exe = argv[++i];
        } else if (v && !strcmp(a, "--addr2line")) {
            d.addr2line = argv[++i];
        } else if (v && !strcmp(a, "--cc")) {
            d.cc = argv[++i];
        } else if (v && !strcmp(a, "--trace-dir")) {
            d.dir = argv[++i];
        } else if (v && !strcmp(a, "--config")) {
            d.config = argv[++i];
            d.config_given = 1;
        } else if (a[0] == '-') {
            fprintf(stderr, PROG ": unknown or incomplete option '%s' (try '" PROG " --help')\n", a);
            return 2;
        } else {
            d.project = a;
        }
    }
    char cfg[PATH_MAX];
    if (!d.config_given) {
        snprintf(cfg, sizeof cfg, "%s/trace.config", d.project);
        d.config = cfg;
    }
    check_compiler(&d);
    check_exe(&d);
    check_dir(&d);
    check_shm(&d);
    check_stale_rings(&d);
    check_config(&d);
    printf("doctor: %u ok, %u note%s, %u FAIL\n", d.ok, d.notes, d.notes == 1 ? "" : "s", d.fails);
    return fflush(stdout) != 0 || d.fails ? 1 : 0;
}
