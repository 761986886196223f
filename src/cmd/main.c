/*
 * main.c - entry point of the callsight host tool.
 *
 * Dispatches `callsight <command> [args]` to cmd_<command>() in its own file
 * (analyze.c, serve.c, ...).  Only the command level decides the exit status.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef CALLSIGHT_VERSION
#define CALLSIGHT_VERSION "0.1.0"
#endif

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"analyze", cmd_analyze, "report per-function call counts and timing from trace files"},
    {"replay", cmd_analyze, "each thread's calls in time order, nested (analyze --format replay)"},
    {"serve", cmd_serve, "receive streams from trace_stream clients and write trace files"},
    {"diff", cmd_diff, "compare two JSON reports function by function; gate CI on regressions"},
    {"init", cmd_init, "copy the runtime and build wiring into a project to trace it"},
    {"flags", cmd_flags, "the compiler flags trace.config gives each source (for the build)"},
    {"scan", cmd_scan, "which sources trace.config instruments, and why"},
    {"select", cmd_select, "a function and what it calls, for include-func"},
    {"run", cmd_run, "trace a program and print its report, in one step"},
    {"doctor", cmd_doctor, "check this machine, a binary and a project for tracing"},
    {"trigger", cmd_trigger, "ask serve's flight recorders for a snapshot now"},
    {"top", cmd_top, "watch a trace directory live: sources and the busiest functions"},
    {"ctl", cmd_ctl, "change what a running process records (TRACE_CONTROL=1)"},
    {"sql", cmd_sql, "run SQL on a trace's database (analyze --format sqlite)"},
    {"ui", cmd_ui, "trace directories in a browser: reports, functions, flame graphs"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: callsight <command> [options]\n\n"
                 "callsight gives exact per-call timing for the functions you choose,\n"
                 "from local trace files or streamed off a remote device.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'callsight <command> --help' describes one command.\n"
                 "'callsight --version' prints the version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("callsight %s\n", CALLSIGHT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "callsight: unknown command '%s' (try 'callsight --help')\n", argv[1]);
    return 2;
}
