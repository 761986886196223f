/*
 * choose.c - per-source decisions from a trace.config (see choose.h).
 */
#include "choose.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind_word(enum config_kind k)
{
    static const char *const words[] = {"include", "exclude", "exclude-func", "include-func"};
    return words[k];
}

int choose_init(struct choose *ch, const char *path, int required, char *err, size_t errlen)
{
    memset(ch, 0, sizeof *ch);
    char abs[PATH_MAX];
    if (access(path, F_OK) != 0 && errno == ENOENT && !required) {
        if (!getcwd(ch->dir, sizeof ch->dir)) {
            snprintf(err, errlen, "the working directory: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (config_load(&ch->cfg, path, err, errlen) < 0)
        return -1;
    ch->have_file = 1;
    for (size_t i = 0; i < ch->cfg.n; i++) {
        const struct config_rule *r = &ch->cfg.rules[i];
        if (r->kind >= CONFIG_EXCLUDE_FUNC) {
            snprintf(err, errlen, "%s:%u: %s: selecting single functions is not available yet; "
                                  "select files and folders with include and exclude",
                     path, r->line, kind_word(r->kind));
            config_free(&ch->cfg);
            return -1;
        }
    }
    if (!realpath(path, abs)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        config_free(&ch->cfg);
        return -1;
    }
    char *slash = strrchr(abs, '/');
    *(slash == abs ? slash + 1 : slash) = '\0';
    snprintf(ch->dir, sizeof ch->dir, "%s", abs);
    return 0;
}

void choose_free(struct choose *ch)
{
    config_free(&ch->cfg);
}

void choose_rel(const struct choose *ch, const char *source, char *rel, size_t len)
{
    char joined[PATH_MAX], real[PATH_MAX], cwd[PATH_MAX];
    const char *p = source;
    if (source[0] != '/' && getcwd(cwd, sizeof cwd)) {
        int n = snprintf(joined, sizeof joined, "%s/%s", cwd, source);
        if (n > 0 && (size_t)n < sizeof joined)
            p = joined;
    }
    if (realpath(p, real)) /* a source not there yet (generated): as joined */
        p = real;
    size_t n = strlen(ch->dir);
    const char *under = NULL;
    if (n == 1)
        under = p[0] == '/' ? p + 1 : NULL;
    else if (!strncmp(p, ch->dir, n) && p[n] == '/')
        under = p + n + 1;
    snprintf(rel, len, "%s", under ? under : source);
}

int choose_source(const struct choose *ch, const char *source, const struct config_rule **why)
{
    char rel[CHOOSE_PATH_MAX];
    *why = NULL;
    if (!ch->have_file)
        return 1;
    choose_rel(ch, source, rel, sizeof rel);
    return config_selects(&ch->cfg, rel, why);
}

void choose_why(const struct choose *ch, int on, const struct config_rule *why, char *buf, size_t len)
{
    if (!ch->have_file)
        snprintf(buf, len, "no trace.config: every source");
    else if (why)
        snprintf(buf, len, "%s %s (line %u)", kind_word(why->kind), why->arg, why->line);
    else
        snprintf(buf, len, "%s", on ? "no include rule: every source not excluded" : "no include matches");
}
