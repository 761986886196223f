/*
 * choose.h - what the instrumented build does with each source, from a
 * trace.config (config.h): the compiler flags a source gets and why.
 *
 * Sources are named as the build names them (relative to where the build
 * runs, or absolute); the config's patterns are relative to the config's
 * own folder, so each source is first made relative to it.  A source
 * outside that folder is matched as given.
 *
 * Selection is by file: a selected source is compiled with
 * CHOOSE_INSTR_FLAGS, any other with no hooks at all, which works with GCC
 * and clang alike and costs an unselected file nothing.  Function-level
 * directives (exclude-func, include-func) are refused for now, with the
 * line that holds them.
 */
#ifndef CALLSIGHT_CHOOSE_H
#define CALLSIGHT_CHOOSE_H

#include <stddef.h>

#include "config.h"

#define CHOOSE_INSTR_FLAGS "-finstrument-functions -g"
#define CHOOSE_PATH_MAX 4096

struct choose {
    struct config cfg;
    char dir[CHOOSE_PATH_MAX]; /* the config's folder, absolute */
    int have_file;             /* a config file was read (else: every source) */
};

/* Load the config at path; a missing file is an error only when `required`
 * (else every source is selected).  0 ok; -1 with err set. */
int choose_init(struct choose *ch, const char *path, int required, char *err, size_t errlen);
void choose_free(struct choose *ch);

/* The source's path relative to the config's folder, into rel. */
void choose_rel(const struct choose *ch, const char *source, char *rel, size_t len);

/* Whether source is instrumented; *why the rule that decided or NULL. */
int choose_source(const struct choose *ch, const char *source, const struct config_rule **why);

/* Why, in words: "include src/ (trace.config:3)", "no include matches",
 * "no trace.config: every source". */
void choose_why(const struct choose *ch, int on, const struct config_rule *why, char *buf, size_t len);

#endif
