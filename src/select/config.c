/*
 * config.c - parse trace.config and match sources against it (see
 * config.h).
 */
#include "config.h"
#include "lib/fileopen.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES ((size_t)1 << 20) /* a config larger than this is a mistake */
#define PATH_PARTS 64                      /* components of a pattern or path */

void config_free(struct config *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->rules[i].arg);
    free(c->rules);
    memset(c, 0, sizeof *c);
}

/* The next whitespace-separated word of *p, NUL-terminated in place. */
static char *next_word(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    if (!*s)
        return NULL;
    char *w = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r')
        s++;
    if (*s)
        *s++ = '\0';
    *p = s;
    return w;
}

static const struct {
    const char *word;
    enum config_kind kind;
} directives[] = {{"include", CONFIG_INCLUDE},
                  {"exclude", CONFIG_EXCLUDE},
                  {"exclude-func", CONFIG_EXCLUDE_FUNC},
                  {"include-func", CONFIG_INCLUDE_FUNC}};

/* One line, comments cut off.  0 ok (a rule added, or none); -1 with why. */
static int parse_line(struct config *c, char *line, unsigned no, const char **why)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *p = line, *d = next_word(&p);
    if (!d)
        return 0;
    size_t k = 0;
    while (k < sizeof directives / sizeof directives[0] && strcmp(d, directives[k].word))
        k++;
    if (k == sizeof directives / sizeof directives[0]) {
        *why = "expected include, exclude, exclude-func or include-func";
        return -1;
    }
    struct config_rule r = {directives[k].kind, NULL, -1, no};
    char *arg = next_word(&p), *depth = next_word(&p);
    if (!arg) {
        *why = r.kind <= CONFIG_EXCLUDE ? "expected a path pattern after the directive"
                                        : "expected a function name after the directive";
        return -1;
    }
    if (depth && r.kind != CONFIG_INCLUDE_FUNC) {
        *why = "expected one argument only";
        return -1;
    }
    if (depth) {
        char *end;
        errno = 0;
        long v = strtol(depth, &end, 10);
        if (errno || *end || v < 0 || v > 1000000 || next_word(&p)) {
            *why = "expected a depth from 0 to 1000000 (or none: all of it) after the function";
            return -1;
        }
        r.depth = (int)v;
    }
    if (c->n == CONFIG_MAX_RULES) {
        *why = "too many directives";
        return -1;
    }
    if (!c->rules && !(c->rules = calloc(CONFIG_MAX_RULES, sizeof *c->rules))) {
        *why = "out of memory";
        return -1;
    }
    if (!(r.arg = strdup(arg))) {
        *why = "out of memory";
        return -1;
    }
    c->rules[c->n++] = r;
    c->includes += r.kind == CONFIG_INCLUDE;
    c->funcs += r.kind >= CONFIG_EXCLUDE_FUNC;
    return 0;
}

int config_parse(struct config *c, const char *name, const char *text, size_t len, char *err,
                 size_t errlen)
{
    char line[CONFIG_MAX_LINE + 1];
    unsigned no = 0;
    memset(c, 0, sizeof *c);
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *why = NULL;
        no++;
        if (n > CONFIG_MAX_LINE)
            why = "line too long";
        else if (memchr(text + at, '\0', n))
            why = "a NUL byte: not a text file";
        if (!why) {
            memcpy(line, text + at, n);
            line[n] = '\0';
            (void)parse_line(c, line, no, &why);
        }
        if (why) {
            snprintf(err, errlen, "%s:%u: %s", name, no, why);
            config_free(c);
            return -1;
        }
        at += n + 1;
    }
    return 0;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
    char *buf;
    size_t n;
    if (fileopen_read(path, CONFIG_MAX_BYTES, &buf, &n, err, errlen) < 0)
        return -1;
    int rc = config_parse(c, path, buf, n, err, errlen);
    free(buf);
    return rc;
}

/* Split a '/'-separated path into its non-empty, non-"." components. */
static size_t split(char *s, char **parts)
{
    size_t n = 0;
    for (char *tok = strtok(s, "/"); tok && n < PATH_PARTS; tok = strtok(NULL, "/"))
        if (strcmp(tok, "."))
            parts[n++] = tok;
    return n;
}

/* p[0..np) against s[at - np .. at): each component a glob. */
static int parts_match(char **p, size_t np, char **s, size_t at)
{
    for (size_t i = 0; i < np; i++)
        if (fnmatch(p[i], s[at - np + i], FNM_PERIOD) != 0)
            return 0;
    return 1;
}

int config_matches(const char *pattern, const char *rel)
{
    char pb[CONFIG_MAX_LINE + 1], sb[4096];
    char *p[PATH_PARTS], *s[PATH_PARTS];
    size_t plen = strlen(pattern);
    if (plen > CONFIG_MAX_LINE || strlen(rel) >= sizeof sb)
        return 0;
    int folder = plen && pattern[plen - 1] == '/', anchored = pattern[0] == '/';
    memcpy(pb, pattern, plen + 1);
    memcpy(sb, rel, strlen(rel) + 1);
    size_t np = split(pb, p), ns = split(sb, s);
    if (!np || !ns)
        return 0;
    if (!folder) /* the file itself: its last components */
        return np <= ns && (!anchored || np == ns) && parts_match(p, np, s, ns);
    /* a folder: some folder of the path (not the file) ends with it */
    for (size_t at = np; at < ns; at++)
        if ((!anchored || at == np) && parts_match(p, np, s, at))
            return 1;
    return 0;
}

int config_selects(const struct config *c, const char *rel, const struct config_rule **why)
{
    const struct config_rule *inc = NULL;
    *why = NULL;
    for (size_t i = 0; i < c->n; i++) {
        const struct config_rule *r = &c->rules[i];
        if (r->kind == CONFIG_EXCLUDE && config_matches(r->arg, rel)) {
            *why = r;
            return 0;
        }
        if (r->kind == CONFIG_INCLUDE && !inc && config_matches(r->arg, rel))
            inc = r;
    }
    *why = inc;
    return inc != NULL || c->includes == 0;
}
