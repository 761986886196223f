/*
 * init.c - `callsight init`: adopt callsight in a project.
 *
 * Copies the runtime (trace.c, and trace.h, the header it and the user's
 * code include), with --stream the device client trace_stream.c, each one
 * file flattened from its parts at build time (tools/flatten.c), and the
 * build wiring (callsight.mk for make,
 * callsight.cmake for CMake) flat into DIR/callsight/, from the copies
 * built into this binary (embedded.h), so an installed callsight needs no
 * source tree.  Then prints the lines to paste into the project's build and
 * the commands to run.
 *
 * It also writes a commented starter DIR/trace.config (which sources get
 * hooks) when the project has none; an existing one is the user's and is
 * never touched, --force or not.
 *
 * A file that is already there and identical is left alone, so running init
 * twice is harmless.  A file that differs (the user changed it, or it came
 * from another callsight version) is never overwritten without --force; all
 * files are checked before any is written, so a refusal writes nothing.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "embedded.h"
#include "select/sources.h"

#define INIT_MAX_FILES 8
#define INIT_PATH_MAX 4096
#define INIT_NAME_MAX 64

struct init_opts {
    const char *dir;
    int stream, force;
    int make, cmake; /* wiring to write: both unless --build chose one */
};

enum file_state { FILE_ABSENT, FILE_SAME, FILE_DIFFERENT, FILE_ERROR };

static void usage(FILE *out)
{
    fprintf(out,
        "usage: callsight init [--stream] [--build make|cmake] [--force] DIR\n"
        "\n"
        "Adopt callsight in the project in DIR: copy its runtime flat into\n"
        "DIR/callsight/ and write the build wiring for an instrumented profile\n"
        "beside your normal build, then print the lines to paste into your\n"
        "build and the commands to run.  The files come from copies built into\n"
        "this callsight binary; no source tree is needed.\n"
        "\n"
        "DIR/callsight/ receives:\n"
        "  trace.c trace.h               the runtime, one C11 file and its header\n"
        "  trace_stream.c                with --stream: the on-device client that\n"
        "                                forwards the shm ring to 'callsight serve'\n"
        "  callsight.mk                  GNU make fragment: 'make instr' builds\n"
        "                                NAME.instr for each program you list\n"
        "  callsight.cmake               CMake module: callsight_instrument(T) adds\n"
        "                                T.instr; target 'instr' builds them all\n"
        "and DIR/trace.config, a commented starter of which sources get hooks,\n"
        "unless there is one (yours is never changed).\n"
        "\n"
        "The instrumented profile compiles your sources with\n"
        "-finstrument-functions -g and links the runtime, compiled without it,\n"
        "and -pthread; your normal build is not changed and keeps zero hooks.\n"
        "\n"
        "options:\n"
        "  --stream        also copy trace_stream.c; the wiring then builds it\n"
        "                  (it needs libzstd for the target)\n"
        "  --build B       write only the wiring for B: make or cmake (default:\n"
        "                  both; the instructions follow DIR's CMakeLists.txt or\n"
        "                  Makefile)\n"
        "  --force         replace files in DIR/callsight/ that differ from this\n"
        "                  callsight's copies (changed by you, or from another\n"
        "                  version); without it they are never overwritten\n"
        "  -h, --help      print this help\n"
        "\n"
        "Files already there and identical are left alone, so running init again\n"
        "is harmless.  If any file differs and --force is not given, nothing is\n"
        "written.\n"
        "\n"
        "Exit status: 0 done, 1 error (nothing written on a refusal), 2 usage.\n");
}

static int parse_build(const char *v, struct init_opts *o)
{
    o->make = !strcmp(v, "make");
    o->cmake = !strcmp(v, "cmake");
    if (o->make || o->cmake)
        return 0;
    fprintf(stderr, "callsight init: --build must be make or cmake, not '%s'\n", v);
    return -1;
}

static int parse_args(int argc, char **argv, struct init_opts *o)
{
    o->make = o->cmake = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--stream"))
            o->stream = 1;
        else if (!strcmp(a, "--force"))
            o->force = 1;
        else if (!strcmp(a, "--build") && i + 1 < argc) {
            if (parse_build(argv[++i], o) < 0)
                return -1;
        } else if (!strncmp(a, "--build=", 8)) {
            if (parse_build(a + 8, o) < 0)
                return -1;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "callsight init: unknown or incomplete option '%s' "
                            "(try 'callsight init --help')\n", a);
            return -1;
        } else if (o->dir) {
            fprintf(stderr, "callsight init: one DIR only ('%s' and '%s')\n", o->dir, a);
            return -1;
        } else
            o->dir = a;
    }
    if (!o->dir) {
        fprintf(stderr, "callsight init: which project? give its DIR "
                        "(try 'callsight init --help')\n");
        return -1;
    }
    return 0;
}

static const struct embedded_file *embedded_get(const char *name)
{
    for (size_t i = 0; i < embedded_count; i++)
        if (!strcmp(embedded_files[i].name, name))
            return &embedded_files[i];
    return NULL;
}

/* The names init installs for these options, in order; returns how many. */
static int plan_files(const struct init_opts *o, const char **names)
{
    int n = 0;
    names[n++] = "trace.c";
    names[n++] = "trace.h";
    if (o->stream)
        names[n++] = "trace_stream.c";
    if (o->make)
        names[n++] = "callsight.mk";
    if (o->cmake)
        names[n++] = "callsight.cmake";
    return n;
}

/* Whether the file at path holds exactly f's bytes. */
static enum file_state file_compare(const char *path, const struct embedded_file *f)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno == ENOENT ? FILE_ABSENT : FILE_ERROR;
    if (!S_ISREG(st.st_mode)) {
        errno = EISDIR;
        return FILE_ERROR;
    }
    if ((size_t)st.st_size != f->size)
        return FILE_DIFFERENT;
    FILE *in = fopen(path, "rb");
    if (!in)
        return FILE_ERROR;
    enum file_state s = FILE_SAME;
    unsigned char buf[8192];
    size_t off = 0, got;
    while (s == FILE_SAME && (got = fread(buf, 1, sizeof buf, in)) > 0) {
        if (off + got > f->size || memcmp(buf, f->data + off, got))
            s = FILE_DIFFERENT;
        off += got;
    }
    if (s == FILE_SAME && (ferror(in) || off != f->size))
        s = ferror(in) ? FILE_ERROR : FILE_DIFFERENT;
    fclose(in);
    return s;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes f to path through a temporary file and rename, so a failure
 * never leaves a half-written file under the real name. */
static int file_install(const char *path, const struct embedded_file *f)
{
    char tmp[INIT_PATH_MAX + INIT_NAME_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, f->data, f->size);
    int saved = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -1;
        saved = errno;
    }
    if (rc < 0) {
        unlink(tmp);
        errno = saved;
    }
    return rc;
}

static int make_dest(const struct init_opts *o, char *dest, size_t size)
{
    struct stat st;
    const char *why = stat(o->dir, &st) < 0 ? strerror(errno)
                      : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
    if (why) {
        fprintf(stderr, "callsight init: %s: %s (init works in an existing project "
                        "directory)\n", o->dir, why);
        return -1;
    }
    if ((size_t)snprintf(dest, size, "%s/callsight", o->dir) >= size - INIT_NAME_MAX) {
        fprintf(stderr, "callsight init: %s: path too long\n", o->dir);
        return -1;
    }
    if (mkdir(dest, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "callsight init: cannot create %s: %s\n", dest, strerror(errno));
        return -1;
    }
    if (stat(dest, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "callsight init: %s exists and is not a directory\n", dest);
        return -1;
    }
    return 0;
}

/* Compares every planned file; refuses (once per differing file, nothing
 * written) unless --force.  Fills states[]. */
static int check_files(const struct init_opts *o, const char *dest, const char **names,
                       int n, enum file_state *states)
{
    int refused = 0;
    for (int i = 0; i < n; i++) {
        char path[INIT_PATH_MAX + INIT_NAME_MAX];
        snprintf(path, sizeof path, "%s/%s", dest, names[i]);
        states[i] = file_compare(path, embedded_get(names[i]));
        if (states[i] == FILE_ERROR) {
            fprintf(stderr, "callsight init: cannot read %s: %s\n", path, strerror(errno));
            return -1;
        }
        if (states[i] == FILE_DIFFERENT && !o->force) {
            fprintf(stderr, "callsight init: %s differs from this callsight's copy "
                            "(changed by you, or from another version); not "
                            "overwriting it: --force replaces it\n", path);
            refused = 1;
        }
    }
    if (refused)
        fprintf(stderr, "callsight init: nothing written\n");
    return refused ? -1 : 0;
}

static int install_files(const char *dest, const char **names, int n,
                         const enum file_state *states)
{
    static const char *const verb[] = {"wrote", "unchanged", "replaced"};
    for (int i = 0; i < n; i++) {
        char path[INIT_PATH_MAX + INIT_NAME_MAX];
        snprintf(path, sizeof path, "%s/%s", dest, names[i]);
        if (states[i] != FILE_SAME && file_install(path, embedded_get(names[i])) < 0) {
            fprintf(stderr, "callsight init: cannot write %s: %s\n", path, strerror(errno));
            return -1;
        }
        printf("  %-10s %s\n", verb[states[i]], path);
    }
    return 0;
}

/* Reads up to size-1 bytes of DIR/name as a string; "" when absent. */
static void read_project_file(const char *dir, const char *name, char *buf, size_t size)
{
    char path[INIT_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf[0] = '\0';
    FILE *in = fopen(path, "r");
    if (!in)
        return;
    size_t got = fread(buf, 1, size - 1, in);
    buf[got] = '\0';
    fclose(in);
}

static int project_has(const char *dir, const char *name)
{
    char path[INIT_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* A target or program name for the instructions: copies the leading
 * [A-Za-z0-9_.+-] characters of s into out; "" when there are none. */
static void take_name(const char *s, char *out, size_t size)
{
    size_t n = 0;
    while (n + 1 < size && s[n] != '\0' &&
           (isalnum((unsigned char)s[n]) || strchr("_.+-", s[n]) != NULL)) {
        out[n] = s[n];
        n++;
    }
    out[n] = '\0';
}

/* The first add_executable() target of DIR/CMakeLists.txt, or "app". */
static void cmake_target(const char *dir, char *out, size_t size)
{
    static char text[65536];
    read_project_file(dir, "CMakeLists.txt", text, sizeof text);
    const char *p = strcasestr(text, "add_executable(");
    out[0] = '\0';
    if (p) {
        p += strlen("add_executable(");
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        take_name(p, out, size);
    }
    if (!out[0])
        snprintf(out, size, "app");
}

/* The project's C and C++ sources in every folder (sources.h), relative to
 * dir, as one line; "..." when they do not all fit. */
static void top_sources(const char *dir, char *out, size_t size)
{
    struct sources l;
    char err[512];
    size_t skip = strlen(dir) + 1;
    out[0] = '\0';
    if (sources_find(&l, dir, err, sizeof err) < 0)
        l.n = 0;
    for (size_t i = 0; i < l.n; i++) {
        const char *rel = l.v[i] + skip;
        if (strlen(out) + strlen(rel) + 6 >= size) {
            snprintf(out + strlen(out), size - strlen(out), " ...");
            break;
        }
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "", rel);
    }
    sources_free(&l);
    if (!out[0])
        snprintf(out, size, "main.c");
}

/* A program name for the Make instructions: DIR's own name, or "app". */
static void make_program(const char *dir, char *out, size_t size)
{
    char abs[INIT_PATH_MAX];
    out[0] = '\0';
    if (realpath(dir, abs)) {
        const char *base = strrchr(abs, '/');
        base = base ? base + 1 : abs;
        take_name(base, out, size);
        if (strlen(out) != strlen(base) || strchr(out, '.') || strchr(out, '+'))
            out[0] = '\0';
    }
    if (!out[0])
        snprintf(out, size, "app");
}

static void print_run(const struct init_opts *o, const char *bin, const char *stream_bin)
{
    printf("\nthen trace it and see its report (in %s):\n\n"
           "    callsight run -- %s\n\n"
           "or, step by step:\n\n"
           "    TRACE_ENABLE=1 %s\n"
           "    callsight analyze traces/ --exe %s\n", o->dir, bin, bin, bin);
    if (o->stream)
        printf("\nor stream it: 'callsight serve' on the analysis host, then on the device\n\n"
               "    %s /callsight0 HOST 9001 &\n"
               "    TRACE_ENABLE=1 TRACE_SHM=/callsight0 %s\n",
               stream_bin, bin);
}

/* DIR/trace.config, the starter, unless the project has one. */
static int install_config(const struct init_opts *o)
{
    char path[INIT_PATH_MAX + INIT_NAME_MAX];
    const struct embedded_file *f = embedded_get("trace.config");
    snprintf(path, sizeof path, "%s/trace.config", o->dir);
    if (!f) {
        fprintf(stderr, "callsight init: this callsight was built without trace.config\n");
        return -1;
    }
    if (project_has(o->dir, "trace.config")) {
        printf("  %-10s %s (yours: left as it is)\n", "kept", path);
        return 0;
    }
    if (file_install(path, f) < 0) {
        fprintf(stderr, "callsight init: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    printf("  %-10s %s (a starter: every source until you choose)\n", "wrote", path);
    return 0;
}

/* Does DIR's Makefile include the wiring already (a second init)? */
static int makefile_includes_wiring(const char *dir)
{
    static const char *const names[] = {"GNUmakefile", "makefile", "Makefile"};
    char path[INIT_PATH_MAX + 16], line[1024];
    int found = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !found; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "r");
        while (f && !found && fgets(line, sizeof line, f))
            found = strstr(line, "include") && strstr(line, "callsight/callsight.mk");
        if (f)
            fclose(f);
    }
    return found;
}

static void guide_make(const struct init_opts *o)
{
    char prog[INIT_NAME_MAX], srcs[1024], bin[INIT_NAME_MAX + 16];
    make_program(o->dir, prog, sizeof prog);
    top_sources(o->dir, srcs, sizeof srcs);
    snprintf(bin, sizeof bin, "./%s.instr", prog);
    if (makefile_includes_wiring(o->dir)) {
        printf("\nMake: %s/Makefile already includes callsight/callsight.mk (check that\n"
               "CALLSIGHT_PROGRAMS names your programs and each NAME_SRCS its sources);\n"
               "choose in %s/trace.config what gets hooks ('callsight scan' shows it), then:\n\n"
               "    make instrument\n", o->dir, o->dir);
        print_run(o, "./NAME.instr", "./callsight/trace_stream");
        return;
    }
    printf("\nMake: add these lines to %s/Makefile, below your own variables\n"
           "(name each program to instrument and its sources):\n\n"
           "    CALLSIGHT_PROGRAMS := %s\n"
           "    %s_SRCS := %s\n"
           "    include callsight/callsight.mk\n\n"
           "choose in %s/trace.config what gets hooks ('callsight scan' shows it),\n"
           "then build the instrumented profile (your normal build is unchanged):\n\n"
           "    make instrument\n", o->dir, prog, prog, srcs, o->dir);
    if (o->stream)
        printf("    (this also builds callsight/trace_stream)\n");
    print_run(o, bin, "./callsight/trace_stream");
}

static void guide_cmake(const struct init_opts *o)
{
    char target[INIT_NAME_MAX], bin[INIT_NAME_MAX + 16];
    cmake_target(o->dir, target, sizeof target);
    snprintf(bin, sizeof bin, "./build/%s.instr", target);
    printf("\nCMake: add these lines at the end of %s/CMakeLists.txt\n"
           "(one callsight_instrument() per executable target):\n\n"
           "    include(callsight/callsight.cmake)\n"
           "    callsight_instrument(%s)\n\n"
           "choose in %s/trace.config what gets hooks ('callsight scan' shows it),\n"
           "then build the instrumented profile (your normal build is unchanged):\n\n"
           "    cmake -S . -B build && cmake --build build --target instr\n",
           o->dir, target, o->dir);
    if (o->stream)
        printf("    (this also builds build/trace_stream)\n");
    print_run(o, bin, "./build/trace_stream");
}

/* Instructions for the wiring written; when both were, for the build
 * system DIR uses (both when it has neither file). */
static void print_guide(const struct init_opts *o)
{
    int cm = project_has(o->dir, "CMakeLists.txt");
    int mk = project_has(o->dir, "Makefile") || project_has(o->dir, "makefile") ||
             project_has(o->dir, "GNUmakefile");
    int show_make = o->make && (!o->cmake || mk || !cm);
    int show_cmake = o->cmake && (!o->make || cm || !mk);
    if (show_make)
        guide_make(o);
    if (show_cmake)
        guide_cmake(o);
}

int cmd_init(int argc, char **argv)
{
    struct init_opts o = {0};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    const char *names[INIT_MAX_FILES];
    enum file_state states[INIT_MAX_FILES];
    char dest[INIT_PATH_MAX];
    int n = plan_files(&o, names);
    for (int i = 0; i < n; i++)
        if (!embedded_get(names[i])) {
            fprintf(stderr, "callsight init: this callsight was built without %s\n", names[i]);
            return 1;
        }
    if (make_dest(&o, dest, sizeof dest) < 0 || check_files(&o, dest, names, n, states) < 0)
        return 1;
    printf("callsight init: %s\n", dest);
    if (install_files(dest, names, n, states) < 0 || install_config(&o) < 0)
        return 1;
    print_guide(&o);
    return 0;
}
