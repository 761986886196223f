/*
 * proc.h - running another program by its argument vector, never through a
 * shell.
 *
 * callsight runs compilers and tools on projects and binaries it did not
 * write (scan, select, flags, doctor).  A command line built as text and
 * handed to /bin/sh runs whatever a file name or a directory name says, so
 * every program is started here with execvp and an argv; the one string a
 * user gives as a command (--cc 'gcc -Iinc -DX="a b"') is split into words
 * by proc_split, which knows quotes and backslashes and expands nothing.
 * A path that would read as an option or a response file (`-x.c`,
 * `@opts.c`) goes in as `./-x.c` (proc_arg_path).
 */
#ifndef CALLSIGHT_PROC_H
#define CALLSIGHT_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Words of a command: argv[0..argc-1] then NULL, in one allocation. */
struct proc_words {
    char **argv;
    int argc;
};

/* Split cmd as a shell would split a plain word list: blanks separate,
 * '...' keeps everything, "..." keeps everything but \" \\ \$ \`, a
 * backslash keeps the next character.  Nothing is expanded or run: $, *,
 * ;, |, ` and the like are ordinary characters.  extra is the number of
 * argv places to leave free after the words (for the caller's arguments),
 * filled with NULL.  0, or -1 with err set (an unclosed quote, no word,
 * out of memory). */
int proc_split(const char *cmd, size_t extra, struct proc_words *w, char *err, size_t errlen);
void proc_words_free(struct proc_words *w);

/* path as an argument no program can take for an option or a response
 * file: `./` before a relative name that starts with '-' or '@'.  Returns
 * path itself or buf (len bytes); NULL when it does not fit. */
const char *proc_arg_path(const char *path, char *buf, size_t len);

/* Start argv[0] (found in PATH) with argv, in dir when not NULL, its
 * stdout and stderr to out_fd when >= 0 (stdin from /dev/null then), with
 * setenv_name=setenv_value in its environment when the name is not NULL.
 * The child's pid, or -1 with err set. */
pid_t proc_start(char *const argv[], const char *dir, int out_fd, const char *setenv_name,
                 const char *setenv_value, char *err, size_t errlen);

/* Wait for pid: its exit status, 128 + the signal that ended it, or -1. */
int proc_wait(pid_t pid);

/* Run argv to its end, its stdout and stderr together read for their first
 * line (into line, len bytes, without the newline; the rest is read and
 * dropped).  Its exit status (127: it could not be run), or -1. */
int proc_capture(char *const argv[], const char *dir, char *line, size_t len);

#endif
