/*
 * config.h - trace.config: which sources of a project get hooks.
 *
 * One directive per line; `#` starts a comment anywhere on a line; blank
 * lines are ignored:
 *
 *   include PATTERN          sources (files or folders) to instrument; with
 *                            none, every source is included
 *   exclude PATTERN          sources not to instrument (exclude wins)
 *   exclude-func NAME        one function left out
 *   include-func NAME [D]    a function and what it calls, D levels deep
 *
 * A PATTERN is a path relative to the config's folder, matched component by
 * component from the end, each component a shell glob (fnmatch): `crc.c`
 * is any file named crc.c, `net/crc.c` one in a folder named net,
 * `*_test.c` any test file.  A trailing `/` makes it a folder: `net/` is
 * every source under any folder named net, `src/net/` under src/net.  A
 * leading `/` anchors it at the config's folder.  So `a.c` never selects
 * data.c, as GCC's substring matching of file names would.
 *
 * Bounded: at most CONFIG_MAX_RULES directives, CONFIG_MAX_LINE bytes a
 * line; anything else is an error naming file:line and what was expected.
 */
#ifndef CALLSIGHT_CONFIG_H
#define CALLSIGHT_CONFIG_H

#include <stddef.h>

#define CONFIG_MAX_RULES 1024
#define CONFIG_MAX_LINE 1024
#define CONFIG_ERR_MAX 1200

enum config_kind { CONFIG_INCLUDE, CONFIG_EXCLUDE, CONFIG_EXCLUDE_FUNC, CONFIG_INCLUDE_FUNC };

struct config_rule {
    enum config_kind kind;
    char *arg;       /* the pattern or function name */
    int depth;       /* include-func: levels below the function; -1 = all */
    unsigned line;   /* where it was written */
};

struct config {
    struct config_rule *rules;
    size_t n;
    size_t includes; /* how many include rules */
    size_t funcs;    /* how many function-level rules */
};

/* Parse text[0..len) read from `name` (for messages).  0 ok; -1 with err
 * set to "name:line: what was expected". */
int config_parse(struct config *c, const char *name, const char *text, size_t len, char *err,
                 size_t errlen);
/* Read and parse a file.  0 ok; -1 with err set. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);
void config_free(struct config *c);

/* Does PATTERN select the source at rel (relative to the config's folder,
 * '/'-separated)? */
int config_matches(const char *pattern, const char *rel);

/* Whether rel is instrumented, and the rule that decided (NULL: the
 * default, every source when there is no include rule, else none). */
int config_selects(const struct config *c, const char *rel, const struct config_rule **why);

#endif
