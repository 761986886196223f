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
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "select/choose.h"

#define PROG "callsight flags"

enum format { FMT_RAW, FMT_MAKE, FMT_CMAKE };

static void usage(FILE *out)
{
    fprintf(out,
"usage: callsight flags [--config FILE] [--instr FLAGS] [--format raw|make|cmake | --write DIR]\n"
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
"                  cmake: set_source_files_properties() lines\n"
"  --instr FLAGS   the flags of a selected source (default: " CHOOSE_INSTR_FLAGS ")\n"
"  --write DIR     print nothing; keep DIR/SOURCE.flags holding each\n"
"                  SOURCE's flags, rewritten only when they change (what\n"
"                  callsight.mk's objects depend on)\n"
"  -h, --help      print this help\n"
"\n"
"Exit status: 0 done, 1 the config cannot be read or used, 2 usage error.\n");
}

/* mkdir -p of path's folder. */
static int make_parents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
        *p = '/';
        if (bad)
            return -1;
    }
    return 0;
}

/* DIR/SOURCE.flags := the flags, unless it holds them already.  0 or -1 (said). */
static int write_one(const char *dir, const char *src, const char *instr, int on)
{
    char path[CHOOSE_PATH_MAX], old[1024] = "", want[1024];
    snprintf(want, sizeof want, "%s\n", on ? instr : "");
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
    if (make_parents(path) < 0 || !(f = fopen(path, "w")) || fputs(want, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void print_one(enum format f, const char *src, const char *instr, int on)
{
    if (f == FMT_RAW) {
        printf("%s\n", on ? instr : "");
    } else if (f == FMT_MAKE) {
        printf("callsight_flags/%s := %s\n", src, on ? instr : "");
    } else if (on) {
        printf("set_source_files_properties(\"%s\" PROPERTIES COMPILE_OPTIONS \"", src);
        for (const char *p = instr; *p; p++) /* a CMake list: ; between the flags */
            putchar(*p == ' ' ? ';' : *p);
        printf("\")\n");
    }
}

int cmd_flags(int argc, char **argv)
{
    const char *config = "trace.config", *write_dir = NULL, *instr = CHOOSE_INSTR_FLAGS;
    int required = 0, i = 1;
    enum format f = FMT_RAW;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 < argc && !strcmp(argv[i], "--config")) {
            config = argv[++i];
            required = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "--instr")) {
            instr = argv[++i];
            if (strlen(instr) > 900) {
                fprintf(stderr, PROG ": --instr: flags longer than 900 bytes\n");
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "--write")) {
            write_dir = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--format")) {
            const char *v = argv[++i];
            if (!strcmp(v, "raw") || !strcmp(v, "make") || !strcmp(v, "cmake"))
                f = v[0] == 'r' ? FMT_RAW : v[0] == 'm' ? FMT_MAKE : FMT_CMAKE;
            else {
                fprintf(stderr, PROG ": --format needs raw, make or cmake, not '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, PROG ": unknown or incomplete option '%s' (try '" PROG " --help')\n", argv[i]);
            return 2;
        }
    }
    int nsrc = i < argc ? argc - i - 1 : 0;
    if (nsrc == 0 || (f == FMT_RAW && nsrc != 1 && !write_dir)) {
        fprintf(stderr, PROG ": give %s after -- (try '" PROG " --help')\n",
                f == FMT_RAW ? "exactly one SOURCE (--format raw)" : "the SOURCEs");
        return 2;
    }
    struct choose ch;
    char err[CONFIG_ERR_MAX + 64];
    if (choose_init(&ch, config, required, err, sizeof err) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    int rc = 0;
    for (int k = i + 1; k < argc && rc == 0; k++) {
        const struct config_rule *why;
        int on = choose_source(&ch, argv[k], &why);
        if (write_dir)
            rc = write_one(write_dir, argv[k], instr, on) < 0;
        else
            print_one(f, argv[k], instr, on);
    }
    choose_free(&ch);
    return fflush(stdout) == 0 ? rc : 1;
}
