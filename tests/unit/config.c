/*
 * config.c - unit test of trace.config (src/select/config.c): the
 * directives, comments anywhere, one-line errors naming file:line, and
 * path patterns matched component by component from the end (a.c never
 * selects data.c), folders, globs, anchoring, and which rule decides;
 * config_load reads only a regular file (a project's FIFO named
 * trace.config must not hang select).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"

#include "select/config.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static int fails_n(const char *text, size_t len, const char *want)
{
    struct config c;
    char err[CONFIG_ERR_MAX] = "";
    int rc = config_parse(&c, "trace.config", text, len, err, sizeof err);
    if (rc == 0)
        config_free(&c);
    if (rc == 0 || strcmp(err, want))
        printf("# rc=%d err='%s' want '%s'\n", rc, err, want);
    return rc < 0 && !strcmp(err, want);
}

static int fails(const char *text, const char *want)
{
    return fails_n(text, strlen(text), want);
}

static const char *decide(const struct config *c, const char *rel)
{
    static char buf[64];
    const struct config_rule *why;
    int on = config_selects(c, rel, &why);
    snprintf(buf, sizeof buf, "%s:%u", on ? "on" : "off", why ? why->line : 0);
    return buf;
}

/* config_load: a file's rules, a FIFO and a missing file refused at once. */
static void load_checks(void)
{
    char dir[160], path[200], err[CONFIG_ERR_MAX] = "", want[260];
    struct config c;
    if (!scratch_make(dir, sizeof dir, "config-unit"))
        return;
    snprintf(path, sizeof path, "%s/trace.config", dir);
    FILE *f = fopen(path, "w");
    if (f)
        fputs("include src/\n", f), fclose(f);
    int rc = config_load(&c, path, err, sizeof err);
    ok(rc == 0 && c.n == 1, "config_load reads a file's rules");
    if (rc == 0)
        config_free(&c);
    snprintf(path, sizeof path, "%s/fifo.config", dir);
    snprintf(want, sizeof want, "%s: not a regular file", path);
    rc = mkfifo(path, 0600) == 0 ? config_load(&c, path, err, sizeof err) : 0;
    ok(rc < 0 && !strcmp(err, want), "a FIFO is refused, not waited on");
    snprintf(path, sizeof path, "%s/none.config", dir);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    rc = config_load(&c, path, err, sizeof err);
    ok(rc < 0 && !strcmp(err, want), "a missing file is said so");
    if (strcmp(err, want))
        printf("# err='%s'\n", err);
    scratch_remove(dir);
}

int main(void)
{
    printf("1..19\n");
    const char *text = "# a starter config\n"
                       "\n"
                       "include src/   # everything under src\n"
                       "exclude *_test.c#no space needed\n"
                       "\texclude   net/a.c \r\n"
                       "exclude-func hash_key\n"
                       "include-func run_query 2\n"
                       "include-func main\n";
    struct config c;
    char err[CONFIG_ERR_MAX];
    ok(config_parse(&c, "trace.config", text, strlen(text), err, sizeof err) == 0 && c.n == 6 &&
           c.includes == 1 && c.funcs == 3,
       "directives, comments anywhere, blank lines, tabs and CR");
    ok(c.rules[0].kind == CONFIG_INCLUDE && !strcmp(c.rules[0].arg, "src/") && c.rules[0].line == 3 &&
           c.rules[1].kind == CONFIG_EXCLUDE && !strcmp(c.rules[1].arg, "*_test.c") &&
           !strcmp(c.rules[2].arg, "net/a.c") && c.rules[2].line == 5,
       "each rule keeps its argument and line");
    ok(c.rules[3].kind == CONFIG_EXCLUDE_FUNC && c.rules[4].depth == 2 && c.rules[5 - 1].line == 7,
       "include-func with a depth");
    config_free(&c);

    ok(fails("include src/\nincluded x\n", "trace.config:2: expected include, exclude, exclude-func or include-func"),
       "an unknown directive: file:line and what was expected");
    ok(fails("exclude\n", "trace.config:1: expected a path pattern after the directive"), "a missing pattern");
    ok(fails("include-func f -1\n",
             "trace.config:1: expected a depth from 0 to 1000000 (or none: all of it) after the function"),
       "a bad depth");
    ok(fails("exclude a.c b.c\n", "trace.config:1: expected one argument only"), "two patterns on one line");
    ok(fails_n("include a\0b\n", 12, "trace.config:1: a NUL byte: not a text file"), "a NUL byte");

    ok(config_matches("a.c", "src/net/a.c") && !config_matches("a.c", "src/net/data.c"),
       "a.c selects a.c in any folder and never data.c");
    ok(config_matches("net/crc.c", "src/net/crc.c") && !config_matches("net/crc.c", "src/crc.c") &&
           !config_matches("src/net/crc.c", "net/crc.c"),
       "a path matches its last components, each one");
    ok(config_matches("net/", "src/net/crc.c") && config_matches("net/", "net/x/y.c") &&
           !config_matches("net/", "src/network/crc.c") && !config_matches("net/", "src/net.c"),
       "a folder pattern: any folder of that name, not a file, not a prefix of a name");
    ok(config_matches("*_test.c", "lib/x_test.c") && !config_matches("*_test.c", "lib/x_test.cc") &&
           config_matches("src/*/", "src/util/u.c"),
       "globs in any component");
    ok(config_matches("/src/", "src/net/a.c") && !config_matches("/src/", "third/src/a.c") &&
           config_matches("/main.c", "main.c") && !config_matches("/main.c", "src/main.c"),
       "a leading / anchors at the config's folder");
    ok(config_matches("net/a.c", "./src//net/a.c"), "./ and // in paths are ignored");

    const char *rules = "include src/\ninclude tools/gen.c\nexclude *_test.c\n";
    config_parse(&c, "t", rules, strlen(rules), err, sizeof err);
    char got[256];
    snprintf(got, sizeof got, "%s ", decide(&c, "src/a.c"));
    strcat(got, decide(&c, "src/a_test.c")), strcat(got, " ");
    strcat(got, decide(&c, "tools/gen.c")), strcat(got, " ");
    strcat(got, decide(&c, "other/b.c"));
    ok(!strcmp(got, "on:1 off:3 on:2 off:0"), "include selects, exclude wins, the rest is off when any include");
    if (strcmp(got, "on:1 off:3 on:2 off:0"))
        printf("# %s\n", got);
    config_free(&c);
    config_parse(&c, "t", "exclude gen/\n", 12, err, sizeof err);
    snprintf(got, sizeof got, "%s ", decide(&c, "src/a.c"));
    strcat(got, decide(&c, "gen/b.c"));
    ok(!strcmp(got, "on:0 off:1"), "without include, everything but the excluded");
    config_free(&c);
    load_checks();
    return 0;
}
