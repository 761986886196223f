/*
 * commands.h - the subcommands of the callsight host tool.
 *
 * main.c parses the subcommand name and calls cmd_<name>(argc, argv) with
 * argv[0] set to the subcommand's name.  Each command lives in its own file,
 * parses its own options, prints its own --help, reports its own errors once
 * and returns the process exit status (0 ok, 1 failure, 2 usage).  Commands
 * use the shared modules and never call each other.
 */
#ifndef CALLSIGHT_COMMANDS_H
#define CALLSIGHT_COMMANDS_H

int cmd_analyze(int argc, char **argv); /* analyze.c; also `replay` (argv[0]) */
int cmd_serve(int argc, char **argv);   /* serve.c */
int cmd_diff(int argc, char **argv);    /* diff.c */
int cmd_init(int argc, char **argv);    /* init.c */
int cmd_flags(int argc, char **argv);   /* flags.c */
int cmd_scan(int argc, char **argv);    /* scan.c */
int cmd_select(int argc, char **argv);  /* select.c */
int cmd_run(int argc, char **argv);     /* run.c */
int cmd_doctor(int argc, char **argv);  /* doctor.c */
int cmd_trigger(int argc, char **argv); /* trigger.c */
int cmd_top(int argc, char **argv);     /* top.c */
int cmd_ctl(int argc, char **argv);     /* ctl.c */
int cmd_sql(int argc, char **argv);     /* sql.c */
int cmd_ui(int argc, char **argv);      /* ui.c */

#endif
