/*
 * mutate.c - the mutation runner (`make mutate`, issue 32): it measures how
 * many small bugs nobody planted the suite catches, where plant.py checks
 * only the bugs tests/README.md lists.
 *
 *   mutate [-n N] [-s SEED] [-b BASE] [-f GLOB]... [-k KEY]... [-m MAP] [-e EQUIV]
 *          [-t SECS] [-j JOBS] [-a] [-A] [-l]
 *
 * Run from the top of a checkout.  It copies the checkout's files (those
 * git tracks or would track, as they are in the working tree) once into a
 * scratch directory under $TMPDIR, builds it (`make check-build`), and runs
 * the tests of each area once unmutated (a baseline: a failing test would
 * make every mutant look killed).  Then, for each mutant alone, it changes
 * one line of one C file of runtime/, stream/ or src/, rebuilds what make
 * finds changed, runs the tests tests/mutate.map lists for that file, each
 * file alone, JOBS at once, stopping at the first that fails (the tests
 * that killed the file's mutants before go first, then the fastest), and
 * puts the line back.  A mutant is
 *   killed     a test failed;
 *   timed out  its tests ran longer than SECS (default 300): counted as
 *              caught (a hang fails make test), shown apart;
 *   stillborn  it did not build (-Werror included): not a test's merit,
 *              left out of the score;
 *   survived   every test passed: a hole, or an equivalent mutant;
 *   equivalent listed in tests/mutate.equiv with why: not run, left out.
 * The last line is the score: (killed + timed out) / (total - equivalent -
 * stillborn).  Survivors are printed as one-line diffs with FILE:LINE.
 *
 * The kinds of mutant, each at one spot of code (comments, strings and
 * preprocessor lines are never touched):
 *   a comparison flipped       < <=, > >=, == != (each way)
 *   off by one in a bound      a literal beside a comparison +1 or -1, a
 *                              plain name on a comparison's right + 1,
 *                              an index [i] made [i + 1]
 *   an update made assignment  += and -= made =
 *   a condition negated        if (c) / while (c) made if (!(c))
 *   a statement removed        an expression statement alone on its line
 *                              (a call, an assignment, ++) made ;
 *                              (not a free: a leak is for LeakSanitizer)
 * Each has a key FILE:LINE:COL:KIND (KIND: the new operator, +1, -1, !,
 * del) by which tests/mutate.equiv names it.
 *
 * -n N     run N mutants drawn from all of them by SEED (default 1): the
 *          same tree, seed and N give the same mutants; 0 (the default
 *          here; make's is 300): all.
 * -b BASE  only lines the working tree changed against BASE (git diff -U0
 *          BASE): `make mutate CHANGED=1` is -b HEAD.
 * -f GLOB  only files matching GLOB (fnmatch, `*` crossing `/`).
 * -k KEY   only the mutant KEY (repeatable): a survivor again, after a fix.
 * -a       build and test under ASan+UBSan (make's BUILD=build/asan
 *          SAN=1), so reads past an array count as caught: slower.
 * -A       run every test of a mutant's area, and name every test that
 *          killed it (how many tests stand between a bug and the suite);
 *          slower: a killed mutant costs its whole area.
 * -l       list the mutants chosen, with their diffs, and run nothing.
 * The tests run with TMPDIR inside the scratch directory, so what a test
 * a mutant crashed, or one killed at its time limit, leaves behind goes
 * with the scratch.
 * Everything runs at the priority it was started with: make runs it under
 * nice -n 10.  Interrupted, it stops its tests and removes its scratch.
 */
#define _GNU_SOURCE

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_GLOBS 32

struct src {                 /* one C file, as lines */
    char *path;
    char **line;             /* without the newline */
    int nlines;
    char **mask;             /* per line: 1 where the char is code */
    int *depth;              /* brace depth at the start of each line */
    const char *tests;       /* from the map: the prove arguments */
    unsigned char *changed;  /* per line: changed against BASE (-b) */
    unsigned *kills;         /* per test of its area: its mutants that test killed (NULL: none yet) */
};

#define MAX_JOBS 16

/* An area: the tests one map line names, each file alone, with what the
 * baseline took (the order of a mutant's tests: see run_area). */
struct area {
    const char *tests;       /* the map's words (the pointer the files share) */
    char **list;             /* test paths, from the top of the scratch tree */
    size_t n;
    double *secs;            /* baseline seconds of each */
    unsigned char *failed;   /* per test: it failed on the last run (-A: every one that did) */
};

struct mutant {
    int file, line, col;     /* line and col from 1 */
    char kind[8];
    char *text;              /* the whole mutated line */
    int equiv;
    int done;                /* -r: its verdict from an earlier log, plus 1 */
    char *by;                /* -r: " by TEST" as that log said, or NULL */
};

struct mapent { char *glob; char *tests; };

static struct src *g_src;
static int g_nsrc;
static struct mutant *g_mut;
static size_t g_nmut, g_capmut;
static struct mapent *g_map;
static int g_nmap;
static char g_scratch[PATH_MAX];
static const char *g_build = "build"; /* the build directory in the scratch tree (-a: build/asan) */
static volatile sig_atomic_t g_stop;
static pid_t g_child[MAX_JOBS]; /* running tests or builds, each its own process group (0: free) */
static struct area *g_area;
static size_t g_narea;
static int g_all;            /* -A: a mutant's tests all run, and every one that kills it is named */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mutate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        die("out of memory");
    return p;
}

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        die("out of memory");
    va_end(ap);
    return s;
}

/* The whole output of ARGV (git, run in the checkout; never a shell: the
 * tree's C hands no command line to one, tests/select/673).  Exits on a
 * failure: what it asks git must work. */
static char *capture(char *const argv[])
{
    int fd[2];
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    if (pipe(fd) != 0)
        die("pipe: %s", strerror(errno));
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                die("out of memory");
        }
        ssize_t got = read(fd[0], buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd[0]);
    buf[n] = 0;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("failed: %s %s", argv[0], argv[1] ? argv[1] : "");
    return buf;
}

static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;
    if (!f)
        die("cannot read %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        die("cannot read %s", path);
    buf = xmalloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("cannot read %s", path);
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = (size_t)n;
    return buf;
}

/* ---- reading the sources: which characters are code ---- */

/* Split TEXT into lines and mark, per character, whether it is code: not
 * in a comment, a string or a character constant, and not on a
 * preprocessor line (a mutant there would change a macro for every use,
 * or an #include).  Also the brace depth each line starts at, which tells
 * a statement inside a function from a declaration at file scope. */
static void src_scan(struct src *s, char *text)
{
    int cap = 256, inblock = 0, inmacro = 0, depth = 0;
    s->line = xmalloc(sizeof *s->line * (size_t)cap);
    s->mask = xmalloc(sizeof *s->mask * (size_t)cap);
    s->depth = xmalloc(sizeof *s->depth * (size_t)cap);
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (s->nlines == cap) {
            cap *= 2;
            s->line = realloc(s->line, sizeof *s->line * (size_t)cap);
            s->mask = realloc(s->mask, sizeof *s->mask * (size_t)cap);
            s->depth = realloc(s->depth, sizeof *s->depth * (size_t)cap);
            if (!s->line || !s->mask || !s->depth)
                die("out of memory");
        }
        char *l = xmalloc(len + 1), *m = xmalloc(len + 1);
        memcpy(l, p, len);
        s->depth[s->nlines] = depth;
        const char *first = l + strspn(l, " \t");
        int pre = inmacro || (!inblock && *first == '#');
        inmacro = pre && len > 0 && l[len - 1] == '\\';
        for (size_t i = 0; i < len; i++) {
            if (inblock) {
                if (l[i] == '*' && l[i + 1] == '/') {
                    inblock = 0;
                    i++;
                }
                continue;
            }
            if (l[i] == '/' && l[i + 1] == '*') {
                inblock = 1;
                i++;
                continue;
            }
            if (l[i] == '/' && l[i + 1] == '/')
                break;
            if (l[i] == '"' || l[i] == '\'') {
                char q = l[i];
                for (i++; i < len && l[i] != q; i++)
                    if (l[i] == '\\')
                        i++;
                continue;
            }
            if (pre)
                continue;
            m[i] = 1;
            depth += l[i] == '{';
            depth -= l[i] == '}';
        }
        s->line[s->nlines] = l;
        s->mask[s->nlines] = m;
        s->nlines++;
        p += len + (nl != NULL);
    }
}

/* ---- making mutants ---- */

static int is_ident(int c) { return isalnum(c) || c == '_'; }

/* Keep the mutant "line LN with [at, at+len) replaced by REPL" unless -b
 * left that line out. */
static void add(int f, int ln, size_t at, size_t len, const char *repl, const char *kind)
{
    struct src *s = &g_src[f];
    if (s->changed && !s->changed[ln])
        return;
    const char *l = s->line[ln];
    if (g_nmut == g_capmut) {
        g_capmut = g_capmut ? 2 * g_capmut : 1024;
        g_mut = realloc(g_mut, sizeof *g_mut * g_capmut);
        if (!g_mut)
            die("out of memory");
    }
    struct mutant *m = &g_mut[g_nmut++];
    m->file = f;
    m->line = ln + 1;
    m->col = (int)at + 1;
    m->equiv = 0;
    snprintf(m->kind, sizeof m->kind, "%s", kind);
    m->text = xasprintf("%.*s%s%s", (int)at, l, repl, l + at + len);
}

/* Is [at, at+len) of line LN all code? */
static int code(const struct src *s, int ln, size_t at, size_t len)
{
    size_t n = strlen(s->line[ln]);
    if (at + len > n)
        return 0;
    for (size_t i = at; i < at + len; i++)
        if (!s->mask[ln][i])
            return 0;
    return 1;
}

/* The comparison operator at I, its length (0: none): never part of <<,
 * >>, ->, <<=, >>=. */
static size_t cmp_at(const char *l, size_t i)
{
    char c = l[i], n = l[i + 1], pv = i ? l[i - 1] : ' ';
    if ((c == '=' || c == '!') && n == '=' && pv != '=' && pv != '!' && pv != '<' && pv != '>')
        return l[i + 2] == '=' ? 0 : 2;
    if (c != '<' && c != '>')
        return 0;
    if (pv == '<' || pv == '>' || pv == '-' || n == c)
        return 0;
    return n == '=' ? 2 : 1;
}

/* An integer literal at I (decimal or hex, any suffix): its length. */
static size_t literal_at(const char *l, size_t i)
{
    size_t j = i;
    if (!isdigit((unsigned char)l[i]) || (i && is_ident((unsigned char)l[i - 1])))
        return 0;
    while (isxdigit((unsigned char)l[j]) || l[j] == 'x' || l[j] == 'X')
        j++;
    while (l[j] == 'u' || l[j] == 'U' || l[j] == 'l' || l[j] == 'L')
        j++;
    return l[j] == '.' || is_ident((unsigned char)l[j]) ? 0 : j - i;
}

/* A plain name, maybe through -> and . (n, t->n, s.len), at I, ending
 * where an operand ends: its length. */
static size_t name_at(const char *l, size_t i)
{
    size_t j = i;
    if (!(isalpha((unsigned char)l[i]) || l[i] == '_') || (i && is_ident((unsigned char)l[i - 1])))
        return 0;
    for (;;) {
        while (is_ident((unsigned char)l[j]))
            j++;
        if (l[j] == '.' && (isalpha((unsigned char)l[j + 1]) || l[j + 1] == '_'))
            j++;
        else if (l[j] == '-' && l[j + 1] == '>')
            j += 2;
        else
            break;
    }
    size_t k = j + strspn(l + j, " ");
    return strchr(");,?&|]", l[k]) && l[k] ? j - i : 0;
}

static void flip(int f, int ln, size_t i, size_t len)
{
    static const char *const from[] = {"<", "<=", ">", ">=", "==", "!="};
    static const char *const to[] = {"<=", "<", ">=", ">", "!=", "=="};
    const char *l = g_src[f].line[ln];
    for (size_t k = 0; k < sizeof from / sizeof *from; k++)
        if (strlen(from[k]) == len && !strncmp(l + i, from[k], len))
            add(f, ln, i, len, to[k], to[k]);
}

/* Off by one beside the comparison at [i, i+len). */
static void off_by_one(int f, int ln, size_t i, size_t len)
{
    const struct src *s = &g_src[f];
    const char *l = s->line[ln];
    size_t r = i + len + strspn(l + i + len, " "), n;
    size_t e = i;
    while (e > 0 && l[e - 1] == ' ')
        e--;
    /* the literal right after, or right before, the operator */
    size_t at[2] = {r, 0}, lens[2] = {literal_at(l, r), 0};
    if (e > 0) {
        size_t b = e;
        while (b > 0 && (isalnum((unsigned char)l[b - 1])))
            b--;
        if (b < e && literal_at(l, b) == e - b && (b == 0 || !is_ident((unsigned char)l[b - 1]))) {
            at[1] = b;
            lens[1] = e - b;
        }
    }
    for (int k = 0; k < 2; k++) {
        if (!lens[k] || !code(s, ln, at[k], lens[k]))
            continue;
        char lit[64], repl[96];
        snprintf(lit, sizeof lit, "%.*s", (int)lens[k], l + at[k]);
        int plain = strspn(lit, "0123456789") == strlen(lit) && strlen(lit) < 9;
        long v = plain ? strtol(lit, NULL, 10) : 0;
        if (plain)
            snprintf(repl, sizeof repl, "%ld", v + 1);
        else
            snprintf(repl, sizeof repl, "(%s + 1)", lit);
        add(f, ln, at[k], lens[k], repl, "+1");
        if (plain && v == 0)
            continue; /* -1 where 0 was: a sign change, not an off-by-one */
        if (plain)
            snprintf(repl, sizeof repl, "%ld", v - 1);
        else
            snprintf(repl, sizeof repl, "(%s - 1)", lit);
        add(f, ln, at[k], lens[k], repl, "-1");
    }
    if (!lens[0] && (n = name_at(l, r)) && code(s, ln, r, n)) {
        char *repl = xasprintf("%.*s + 1", (int)n, l + r);
        add(f, ln, r, n, repl, "+1");
        free(repl);
    }
}

/* The ')' that closes the '(' at I on the same line, or 0. */
static size_t close_paren(const struct src *s, int ln, size_t i)
{
    const char *l = s->line[ln];
    int d = 0;
    for (size_t j = i; l[j]; j++) {
        if (!s->mask[ln][j])
            continue;
        d += l[j] == '(';
        d -= l[j] == ')';
        if (d == 0)
            return j;
    }
    return 0;
}

static void negate(int f, int ln, size_t i)
{
    const struct src *s = &g_src[f];
    const char *l = s->line[ln];
    size_t kw = l[i] == 'i' ? 2 : 5, p = i + kw + strspn(l + i + kw, " "), q;
    if (l[p] != '(' || !(q = close_paren(s, ln, p)))
        return;
    char *repl = xasprintf("(!%.*s)", (int)(q - p + 1), l + p);
    add(f, ln, p, q - p + 1, repl, "!");
    free(repl);
}

static int keyword(const char *w, size_t n)
{
    static const char *const kw[] = {"return", "break", "continue", "goto", "case", "default",
                                     "else", "if", "for", "while", "do", "switch", "typedef",
                                     "static", "const", "struct", "enum", "union", "unsigned",
                                     "signed", "volatile", "extern", "register", "sizeof",
                                     "_Static_assert", "va_start", "va_end", "va_copy"};
    for (size_t k = 0; k < sizeof kw / sizeof *kw; k++)
        if (strlen(kw[k]) == n && !strncmp(w, kw[k], n))
            return 1;
    return 0;
}

/* The last code character of the code line before LN ('{' at file start). */
static char prev_end(const struct src *s, int ln)
{
    for (int k = ln - 1; k >= 0; k--)
        for (size_t j = strlen(s->line[k]); j-- > 0;)
            if (s->mask[k][j] && !isspace((unsigned char)s->line[k][j]))
                return s->line[k][j];
    return '{';
}

/* Remove an expression statement that is a whole line inside a function:
 * starts after a ';', '{', '}' or label, is not a declaration (a name then
 * a name or '*'), not a jump, and holds no braces; va_start and friends
 * stay (removing them is a compile error or undefined). */
static void delete_stmt(int f, int ln)
{
    const struct src *s = &g_src[f];
    const char *l = s->line[ln];
    size_t b = strspn(l, " \t"), e = strlen(l), n;
    if (s->depth[ln] < 1 || e == b)
        return;
    while (e > b && isspace((unsigned char)l[e - 1]))
        e--;
    if (l[e - 1] != ';' || !code(s, ln, b, e - b) || strpbrk(l, "{}"))
        return;
    int par = 0;
    for (size_t j = b; j < e; j++)
        par += (l[j] == '(') - (l[j] == ')');
    if (par != 0 || !strchr(";{}:", prev_end(s, ln)))
        return;
    if (l[b] == '+' || l[b] == '-' || l[b] == '*') {
        if (l[b] != '*' && l[b + 1] != l[b])
            return;
    } else {
        for (n = 0; is_ident((unsigned char)l[b + n]); n++)
            ;
        if (!n || isdigit((unsigned char)l[b]) || keyword(l + b, n))
            return;
        /* A free removed is a leak: LeakSanitizer's to find, in the ASan
         * pass, not a behaviour the plain build's tests can see. */
        if ((n == 4 && !strncmp(l + b, "free", 4)) || (n > 5 && !strncmp(l + b + n - 5, "_free", 5)))
            return;
        size_t k = b + n + strspn(l + b + n, " ");
        if (is_ident((unsigned char)l[k]) || (l[k] == '*' && l[k - 1] == ' ') || l[k] == ':')
            return;
    }
    add(f, ln, b, e - b, ";", "del");
}

static void make_mutants(int f)
{
    const struct src *s = &g_src[f];
    for (int ln = 0; ln < s->nlines; ln++) {
        const char *l = s->line[ln];
        size_t n = strlen(l), len;
        for (size_t i = 0; i < n; i++) {
            if (!s->mask[ln][i])
                continue;
            if ((len = cmp_at(l, i)) && code(s, ln, i, len)) {
                flip(f, ln, i, len);
                if (l[i] != '=' && l[i] != '!')
                    off_by_one(f, ln, i, len);
                i += len - 1;
            } else if ((l[i] == '+' || l[i] == '-') && l[i + 1] == '=' && (!i || l[i - 1] != l[i])
                       && code(s, ln, i, 2)) {
                add(f, ln, i, 2, "=", "=");
                i++;
            } else if (l[i] == '[' && (len = name_at(l, i + 1)) && l[i + 1 + len] == ']'
                       && islower((unsigned char)l[i + 1]) && i > 0 && l[i - 1] != ' '
                       && s->depth[ln] >= 1) {
                char *repl = xasprintf("%.*s + 1", (int)len, l + i + 1);
                add(f, ln, i + 1, len, repl, "+1");
                free(repl);
            } else if ((!strncmp(l + i, "if", 2) || !strncmp(l + i, "while", 5))
                       && (!i || !is_ident((unsigned char)l[i - 1]))
                       && !is_ident((unsigned char)l[i + (l[i] == 'i' ? 2 : 5)])) {
                negate(f, ln, i);
            }
        }
        delete_stmt(f, ln);
    }
}

/* ---- the map, the equivalents, the changed lines ---- */

static char *trim(char *s)
{
    char *e;
    s += strspn(s, " \t");
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

/* tests/mutate.map: "GLOB TEST..." per line, the first glob that matches
 * a file wins; a TEST is a path (globs allowed) or unit/NAME, the unit
 * test program build/tests/NAME. */
static void read_map(const char *path)
{
    char *text = slurp_file(path, NULL), *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *h = strchr(l, '#');
        if (h)
            *h = 0;
        l = trim(l);
        if (!*l)
            continue;
        size_t g = strcspn(l, " \t");
        if (!l[g])
            die("%s: %s: no tests", path, l);
        g_map = realloc(g_map, sizeof *g_map * (size_t)(g_nmap + 1));
        if (!g_map)
            die("out of memory");
        l[g] = 0;
        g_map[g_nmap].glob = xstrdup(l);
        g_map[g_nmap].tests = xstrdup(trim(l + g + 1));
        g_nmap++;
    }
    free(text);
}

static const char *map_tests(const char *file)
{
    for (int i = 0; i < g_nmap; i++)
        if (!fnmatch(g_map[i].glob, file, 0))
            return g_map[i].tests;
    return NULL;
}

static void mutant_key(const struct mutant *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s:%d:%d:%s", g_src[m->file].path, m->line, m->col, m->kind);
}

/* tests/mutate.equiv: "KEY REASON" per line.  An entry that names none of
 * the mutants of the files looked at is stale (the line moved): said. */
static int read_equiv(const char *path, int full)
{
    FILE *f = fopen(path, "r");
    char l[1024], key[PATH_MAX + 64];
    int stale = 0;
    if (!f)
        return 0;
    while (fgets(l, sizeof l, f)) {
        char *t = trim(l);
        if (!*t || *t == '#')
            continue;
        t[strcspn(t, " \t")] = 0;
        int found = 0, ours = 0;
        for (size_t i = 0; i < g_nmut; i++) {
            mutant_key(&g_mut[i], key, sizeof key);
            if (!strcmp(key, t))
                g_mut[i].equiv = found = 1;
        }
        for (int i = 0; i < g_nsrc; i++)
            ours |= !strncmp(t, g_src[i].path, strlen(g_src[i].path)) && t[strlen(g_src[i].path)] == ':';
        if (!found && ours && full) {
            printf("mutate: %s: %s names no mutant any more (update it)\n", path, t);
            stale++;
        }
    }
    fclose(f);
    return stale;
}

/* Lines the working tree changed against BASE, from git diff -U0's hunk
 * heads (+START,COUNT). */
static void read_changed(struct src *s, const char *base)
{
    char *argv[] = {"git", "diff", "-U0", "--no-color", (char *)base, "--", s->path, NULL};
    char *out = capture(argv), *save = NULL;
    s->changed = xmalloc((size_t)s->nlines + 1);
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *plus;
        if (strncmp(l, "@@ ", 3) || !(plus = strchr(l, '+')))
            continue;
        long start = strtol(plus + 1, &plus, 10), count = 1;
        if (*plus == ',')
            count = strtol(plus + 1, NULL, 10);
        for (long k = start; k < start + count && k >= 1 && k <= s->nlines; k++)
            s->changed[k - 1] = 1;
    }
    free(out);
}

/* ---- running ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* Stop the child's whole process group: TERM, so the tests' traps stop
 * their servers and remove their temp dirs, then KILL what is left. */
static void stop_group(pid_t pid)
{
    kill(-pid, SIGTERM);
    for (int i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++) {
        struct timespec d = {0, 50000000L};
        nanosleep(&d, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Start ARGV in the scratch tree, its output to LOG (appended when
 * APPEND), in its own process group; its pid. */
static pid_t spawn(char *const argv[], const char *log, int append)
{
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        if (chdir(g_scratch) != 0 || !freopen(log, append ? "a" : "w", stdout) || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/* Run ARGV in the scratch tree, its output to LOG (appended when APPEND),
 * in its own process group, for at most SECS: 0 passed, 1 failed, 2 timed
 * out. */
static int run(char *const argv[], const char *log, int append, int secs)
{
    pid_t pid = g_child[0] = spawn(argv, log, append);
    double end = now_s() + secs;
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            die("waitpid: %s", strerror(errno));
        if (g_stop || now_s() > end) {
            stop_group(pid);
            g_child[0] = 0;
            return 2;
        }
        struct timespec d = {0, 100000000L};
        nanosleep(&d, NULL);
    }
    g_child[0] = 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static void write_file(const char *path, const struct src *s, int ln, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write %s: %s", path, strerror(errno));
    for (int k = 0; k < s->nlines; k++)
        fprintf(f, "%s\n", k == ln ? text : s->line[k]);
    if (fclose(f) != 0)
        die("cannot write %s", path);
}

static void cleanup(void)
{
    for (int j = 0; j < MAX_JOBS; j++)
        if (g_child[j])
            stop_group(g_child[j]);
    if (g_scratch[0] && strstr(g_scratch, "/callsight-mutate-")) {
        char *argv[] = {"rm", "-rf", g_scratch, NULL};
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            execvp(argv[0], argv);
            _exit(127);
        }
        int st = 1;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || st != 0)
            fprintf(stderr, "mutate: could not remove %s\n", g_scratch);
        g_scratch[0] = 0;
    }
}

/* The prove command for TESTS (the map's words), in the scratch tree:
 * an argv, NULL-terminated. */
static char **prove_argv(const char *tests, const char *jobs)
{
    size_t cap = 16, n = 0;
    char **argv = xmalloc(sizeof *argv * cap), *copy = xstrdup(tests), *save = NULL;
    argv[n++] = xstrdup("prove");
    argv[n++] = xasprintf("-j%s", jobs);
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        char *pat = !strncmp(w, "unit/", 5) ? xasprintf("%s/tests/%s", g_build, w + 5) : xstrdup(w);
        char *full = xasprintf("%s/%s", g_scratch, pat);
        glob_t g;
        if (glob(full, 0, NULL, &g) != 0)
            die("tests/mutate.map: %s matches no test", w);
        for (size_t i = 0; i < g.gl_pathc; i++) {
            if (n + 2 >= cap) {
                cap *= 2;
                argv = realloc(argv, sizeof *argv * cap);
                if (!argv)
                    die("out of memory");
            }
            argv[n++] = xstrdup(g.gl_pathv[i] + strlen(g_scratch) + 1);
        }
        globfree(&g);
        free(full);
        free(pat);
    }
    argv[n] = NULL;
    free(copy);
    return argv;
}

static void free_argv(char **argv)
{
    for (size_t i = 0; argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* The area of TESTS (the map's words), its list made on first use. */
static struct area *area_of(const char *tests)
{
    for (size_t i = 0; i < g_narea; i++)
        if (g_area[i].tests == tests)
            return &g_area[i];
    g_area = realloc(g_area, sizeof *g_area * (g_narea + 1));
    if (!g_area)
        die("out of memory");
    struct area *a = &g_area[g_narea++];
    char **pa = prove_argv(tests, "1");
    a->tests = tests;
    for (a->n = 0; pa[a->n + 2]; a->n++)
        ;
    a->list = xmalloc(sizeof *a->list * (a->n + 1));
    a->secs = xmalloc(sizeof *a->secs * (a->n + 1));
    a->failed = xmalloc(a->n + 1);
    for (size_t k = 0; k < a->n; k++) {
        a->list[k] = xstrdup(pa[k + 2]);
        a->secs[k] = 0;
    }
    free_argv(pa);
    return a;
}

/* The order a mutant of S runs its area's tests in: those that killed S's
 * mutants before, most kills first, then the fastest by the baseline; so a
 * mutant is mostly killed by the first test or two it runs. */
static const struct src *g_order_src;
static const struct area *g_order_area;
static int cmp_order(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    unsigned ka = g_order_src && g_order_src->kills ? g_order_src->kills[a] : 0;
    unsigned kb = g_order_src && g_order_src->kills ? g_order_src->kills[b] : 0;
    if (ka != kb)
        return ka > kb ? -1 : 1;
    double sa = g_order_area->secs[a], sb = g_order_area->secs[b];
    return sa < sb ? -1 : sa > sb ? 1 : a < b ? -1 : a > b;
}

/* Run area A's tests for a mutant of S (NULL: the baseline, every test,
 * each one's time kept), JOBS test files at once, each `prove FILE` in its
 * own process group with its own log (LOG.0, LOG.1, ...), for at most SECS
 * in all.  The first that fails stops the others: 1, and *killer the
 * test; 0 all passed; 2 out of time (or interrupted). */
static int run_area(struct area *a, const struct src *s, int jobs, const char *log, int secs, size_t *killer)
{
    size_t *order = xmalloc(sizeof *order * (a->n + 1)), next = 0;
    for (size_t k = 0; k < a->n; k++)
        order[k] = k;
    g_order_src = s;
    g_order_area = a;
    qsort(order, a->n, sizeof *order, cmp_order);
    memset(a->failed, 0, a->n);
    size_t which[MAX_JOBS];
    double began[MAX_JOBS], end = now_s() + secs;
    int running = 0, result = 0;
    if (jobs > MAX_JOBS)
        jobs = MAX_JOBS;
    for (;;) {
        for (int j = 0; j < jobs && result == 0 && next < a->n; j++) {
            if (g_child[j])
                continue;
            char *argv[] = {"prove", a->list[order[next]], NULL};
            char *lj = xasprintf("%s.%d", log, j);
            which[j] = order[next++];
            began[j] = now_s();
            g_child[j] = spawn(argv, lj, 0);
            running++;
            free(lj);
        }
        if (running == 0)
            break;
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w < 0 && errno != EINTR && errno != ECHILD)
            die("waitpid: %s", strerror(errno));
        int j = 0;
        while (w > 0 && j < jobs && g_child[j] != w)
            j++;
        if (w > 0 && j < jobs) {
            g_child[j] = 0;
            running--;
            if (!s)
                a->secs[which[j]] = now_s() - began[j];
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
                a->failed[which[j]] = 1;
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && result == 0) {
                result = 1;
                *killer = which[j];
                if (s && !g_all) { /* the others need not finish */
                    for (int k = 0; k < jobs; k++)
                        if (g_child[k]) {
                            stop_group(g_child[k]);
                            g_child[k] = 0;
                            running--;
                        }
                }
            }
            continue;
        }
        if (g_stop || now_s() > end) {
            for (int k = 0; k < jobs; k++)
                if (g_child[k]) {
                    stop_group(g_child[k]);
                    g_child[k] = 0;
                }
            free(order);
            return result ? result : 2;
        }
        struct timespec d = {0, 50000000L};
        nanosleep(&d, NULL);
    }
    free(order);
    return result;
}

/* The last lines of LOG, on stdout (why the baseline failed). */
static void show_tail(const char *log)
{
    size_t n;
    char *text = slurp_file(log, &n), *p = text + n;
    for (int lines = 0; p > text && lines <= 30; p--)
        lines += p[-1] == '\n';
    fputs(p, stdout);
    free(text);
}

/* Copy the checkout's files (tracked or not ignored, as in the working
 * tree, so a change not committed yet is what is mutated) into the
 * scratch directory, through tar: their modes and times kept. */
static void copy_tree(void)
{
    char *ls[] = {"git", "ls-files", "-z", "-co", "--exclude-standard", NULL};
    char *list = capture(ls), *lp = xasprintf("%s/.mutate.files", g_scratch);
    char *tarp = xasprintf("%s/.mutate.tar", g_scratch), *log = xasprintf("%s/.mutate.copy", g_scratch);
    FILE *f = fopen(lp, "w");
    /* -z: names end in NUL; those the working tree deleted are left out */
    for (char *p = list; *p; p += strlen(p) + 1) {
        struct stat st;
        if (f && lstat(p, &st) == 0)
            fwrite(p, 1, strlen(p) + 1, f);
    }
    if (!f || fclose(f) != 0)
        die("cannot write %s", lp);
    char *cwd = getcwd(NULL, 0);
    char *c[] = {"tar", "-C", cwd, "--null", "-T", lp, "-cf", tarp, NULL};
    char *x[] = {"tar", "-xf", tarp, NULL};
    if (!cwd || run(c, log, 0, 600) != 0 || run(x, log, 1, 600) != 0)
        die("cannot copy the checkout into %s (see %s)", g_scratch, log);
    unlink(tarp);
    unlink(lp);
    free(cwd);
    free(list);
    free(lp);
    free(tarp);
    free(log);
}

static int cmp_mut(const void *a, const void *b)
{
    const struct mutant *x = a, *y = b;
    if (x->file != y->file)
        return x->file - y->file;
    if (x->line != y->line)
        return x->line - y->line;
    return x->col != y->col ? x->col - y->col : strcmp(x->kind, y->kind);
}

/* A reproducible generator (splitmix64): the same seed, the same sample
 * on every libc. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void print_diff(const struct mutant *m, const char *what)
{
    const struct src *s = &g_src[m->file];
    const char *o = s->line[m->line - 1], *t = m->text;
    printf("%-10s %s:%d: -%s +%s\n", what, s->path, m->line, o + strspn(o, " \t"), t + strspn(t, " \t"));
}

enum { KILLED, SURVIVED, TIMEDOUT, STILLBORN, EQUIV, NSTATE };
static const char *const state_name[NSTATE] = {"killed", "survived", "timed-out", "stillborn", "equivalent"};

/* -r LOG: the verdicts an earlier run of the same sample printed ("[i/n]
 * STATE KEY (...)"), so a sample of many hours can be run in pieces, one
 * interrupted run taken up by the next.  Only lines naming a mutant of
 * this sample count; the rest of the log is ignored.  Returns how many. */
static size_t read_resume(const char *path, size_t n)
{
    char *text = slurp_file(path, NULL);
    size_t got = 0;
    char *save = NULL, key[PATH_MAX + 64];
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char st[16], k[PATH_MAX + 64];
        if (l[0] != '[' || sscanf(l, "[%*u/%*u] %15s %4159s", st, k) != 2)
            continue;
        int v = -1;
        for (int j = 0; j < NSTATE; j++)
            if (!strcmp(st, state_name[j]))
                v = j;
        for (size_t i = 0; v >= 0 && i < n; i++) {
            mutant_key(&g_mut[i], key, sizeof key);
            if (!g_mut[i].done && !strcmp(key, k)) {
                g_mut[i].done = v + 1;
                const char *b = strstr(l, ") by ");
                g_mut[i].by = b ? xstrdup(b + 1) : NULL;
                got++;
                break;
            }
        }
    }
    free(text);
    return got;
}

int main(int argc, char **argv)
{
    const char *globs[MAX_GLOBS], *keys[MAX_GLOBS], *base = NULL, *map = "tests/mutate.map", *equiv = "tests/mutate.equiv";
    int nglobs = 0, nkeys = 0, secs = 300, jobs = 2, list = 0, opt;
    long want = 0;
    uint64_t seed = 1;
    const char *resume = NULL;
    while ((opt = getopt(argc, argv, "n:s:b:f:k:m:e:t:j:r:laA")) != -1) {
        switch (opt) {
        case 'n': want = strtol(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'b': base = optarg; break;
        case 'f':
            if (nglobs == MAX_GLOBS)
                die("too many -f");
            globs[nglobs++] = optarg;
            break;
        case 'k':
            if (nkeys == MAX_GLOBS)
                die("too many -k");
            keys[nkeys++] = optarg;
            break;
        case 'm': map = optarg; break;
        case 'e': equiv = optarg; break;
        case 't': secs = atoi(optarg); break;
        case 'j': jobs = atoi(optarg); break;
        case 'r': resume = optarg; break;
        case 'l': list = 1; break;
        case 'a': g_build = "build/asan"; break;
        case 'A': g_all = 1; break;
        default:
            fprintf(stderr, "usage: mutate [-n N] [-s SEED] [-b BASE] [-f GLOB]... [-k KEY]... [-m MAP] [-e EQUIV] "
                            "[-t SECS] [-j JOBS] [-r LOG] [-a] [-A] [-l]\n");
            return 2;
        }
    }
    if (want < 0 || secs <= 0 || jobs <= 0)
        die("-n, -t and -j take positive numbers");
    read_map(map);

    /* The files: C sources of the three parts, as the working tree has them. */
    char *ls[] = {"git", "ls-files", "-co", "--exclude-standard", "--", "runtime/*.c", "stream/*.c", "src/*.c", NULL};
    char *files = capture(ls);
    char *save = NULL;
    int nomap = 0;
    for (char *p = strtok_r(files, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
        int take = nglobs == 0;
        struct stat st;
        for (int i = 0; i < nglobs; i++)
            take |= !fnmatch(globs[i], p, 0);
        if (!take || stat(p, &st) != 0)
            continue;
        const char *tests = map_tests(p);
        if (!tests) {
            printf("mutate: %s: no tests in %s, not mutated\n", p, map);
            nomap++;
            continue;
        }
        g_src = realloc(g_src, sizeof *g_src * (size_t)(g_nsrc + 1));
        if (!g_src)
            die("out of memory");
        struct src *s = &g_src[g_nsrc];
        memset(s, 0, sizeof *s);
        s->path = xstrdup(p);
        s->tests = tests;
        char *text = slurp_file(p, NULL);
        src_scan(s, text);
        free(text);
        if (base)
            read_changed(s, base);
        make_mutants(g_nsrc++);
    }
    free(files);
    int stale = read_equiv(equiv, !base);
    if (nkeys) { /* -k: those mutants alone, in the order of the tree */
        size_t kept = 0;
        char key[PATH_MAX + 64];
        for (size_t i = 0; i < g_nmut; i++) {
            mutant_key(&g_mut[i], key, sizeof key);
            for (int k = 0; k < nkeys; k++)
                if (!strcmp(key, keys[k])) {
                    g_mut[kept++] = g_mut[i];
                    break;
                }
        }
        if (kept < (size_t)nkeys)
            die("-k: %zu of the %d keys name no mutant", (size_t)nkeys - kept, nkeys);
        g_nmut = kept;
    }

    /* The sample: a Fisher-Yates shuffle's first N, then in file order so
     * each file's rebuilds come together. */
    size_t total = g_nmut, n = want && (size_t)want < g_nmut ? (size_t)want : g_nmut;
    uint64_t rs = seed;
    for (size_t i = 0; i < n && g_nmut > 1; i++) {
        size_t j = i + (size_t)(next_rand(&rs) % (g_nmut - i));
        struct mutant t = g_mut[i];
        g_mut[i] = g_mut[j];
        g_mut[j] = t;
    }
    qsort(g_mut, n, sizeof *g_mut, cmp_mut);
    printf("mutate: %zu mutants in %d files (%d without tests); running %zu (seed %llu%s%s)\n", total,
           g_nsrc, nomap, n, (unsigned long long)seed, base ? ", lines changed against " : "", base ? base : "");
    if (list) {
        char key[PATH_MAX + 64];
        for (size_t i = 0; i < n; i++) {
            mutant_key(&g_mut[i], key, sizeof key);
            print_diff(&g_mut[i], g_mut[i].equiv ? "equivalent" : "mutant");
            printf("           %s\n", key);
        }
        return 0;
    }
    if (n == 0) {
        printf("mutate: score: no mutants\n");
        return 0;
    }
    if (resume) {
        size_t got = read_resume(resume, n);
        printf("mutate: %zu of the %zu verdicts taken from %s\n", got, n, resume);
    }

    /* The scratch copy, built, and each area's tests passing unmutated. */
    const char *tmp = getenv("TMPDIR");
    snprintf(g_scratch, sizeof g_scratch, "%s/callsight-mutate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_scratch))
        die("mkdtemp: %s", strerror(errno));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    atexit(cleanup);
    copy_tree();
    char *log = xasprintf("%s/.mutate.log", g_scratch);
    char *jflag = xasprintf("-j%d", jobs);
    char *make[] = {"make", jflag, "--no-print-directory", "check-build", NULL, NULL, NULL, NULL};
    if (strcmp(g_build, "build")) { /* the ASan pass's build, as make asan-test makes it */
        make[4] = "BUILD=build/asan";
        make[5] = "SAN=1";
        make[6] = "OPT=-O1";
    }
    printf("mutate: building the scratch copy %s\n", g_scratch);
    fflush(stdout);
    if (run(make, log, 0, 3600) != 0) {
        show_tail(log);
        die("the unmutated tree does not build");
    }
    char *env = xasprintf("CALLSIGHT_BUILD=%s/%s", g_scratch, g_build);
    putenv(env);
    char *tmp_dir = xasprintf("%s/.tmp", g_scratch);
    if (mkdir(tmp_dir, 0700) != 0 || setenv("TMPDIR", tmp_dir, 1) != 0)
        die("cannot make %s", tmp_dir);
    for (size_t i = 0; i < n; i++) {
        const char *t = g_src[g_mut[i].file].tests;
        int seen = g_mut[i].equiv || g_mut[i].done;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !g_mut[k].equiv && g_src[g_mut[k].file].tests == t;
        if (seen)
            continue;
        struct area *a = area_of(t);
        double t0 = now_s();
        size_t bad = 0;
        printf("mutate: baseline: %zu tests:", a->n);
        for (size_t k = 0; k < a->n; k++)
            printf(" %s", a->list[k]);
        printf("\n");
        fflush(stdout);
        int r = run_area(a, NULL, jobs, log, secs * 4, &bad);
        if (r != 0) {
            if (r == 1) {
                printf("mutate: %s failed unmutated:\n", a->list[bad]);
                for (int j = 0; j < jobs && j < MAX_JOBS; j++) {
                    char *lj = xasprintf("%s.%d", log, j);
                    if (access(lj, R_OK) == 0)
                        show_tail(lj);
                    free(lj);
                }
            }
            die(r == 1 ? "the unmutated tree fails its tests: fix that first"
                       : "the unmutated tree's tests ran out of time (four times -t): raise it");
        }
        printf("mutate: baseline passed in %.0f s\n", now_s() - t0);
    }

    /* Each mutant alone. */
    int *state = xmalloc(sizeof *state * n);
    size_t count[NSTATE] = {0};
    for (size_t i = 0; i < n && !g_stop; i++) {
        struct mutant *m = &g_mut[i];
        const struct src *s = &g_src[m->file];
        char key[PATH_MAX + 64];
        mutant_key(m, key, sizeof key);
        double t0 = now_s();
        char why[PATH_MAX + 8] = "";
        if (m->equiv) {
            state[i] = EQUIV;
        } else if (m->done) {
            state[i] = m->done - 1;
            if (m->by)
                snprintf(why, sizeof why, "%s", m->by);
        } else {
            char *path = xasprintf("%s/%s", g_scratch, s->path);
            write_file(path, s, m->line - 1, m->text);
            if (run(make, log, 0, secs) != 0) {
                state[i] = STILLBORN;
            } else {
                struct area *a = area_of(s->tests);
                size_t killer = 0;
                int r = run_area(a, s, jobs, log, secs, &killer);
                state[i] = r == 0 ? SURVIVED : r == 1 ? KILLED : TIMEDOUT;
                if (r == 1) {
                    struct src *w = &g_src[m->file];
                    if (!w->kills) {
                        w->kills = calloc(a->n, sizeof *w->kills);
                        if (!w->kills)
                            die("out of memory");
                    }
                    w->kills[killer]++;
                    snprintf(why, sizeof why, " by %s", a->list[killer]);
                    for (size_t k = 0; g_all && k < a->n; k++)
                        if (a->failed[k] && k != killer && strlen(why) + strlen(a->list[k]) + 3 < sizeof why)
                            snprintf(why + strlen(why), sizeof why - strlen(why), ", %s", a->list[k]);
                }
            }
            write_file(path, s, -1, NULL);
            free(path);
        }
        if (g_stop)
            break;
        count[state[i]]++;
        printf("[%zu/%zu] %-10s %s (%.0f s)%s\n", i + 1, n, state_name[state[i]], key, now_s() - t0, why);
        fflush(stdout);
    }
    if (g_stop) {
        printf("mutate: interrupted\n");
        return 130;
    }

    printf("\n");
    for (size_t i = 0; i < n; i++)
        if (state[i] == SURVIVED)
            print_diff(&g_mut[i], "SURVIVED");
    size_t judged = n - count[EQUIV] - count[STILLBORN];
    size_t caught = count[KILLED] + count[TIMEDOUT];
    printf("mutate: killed %zu, timed out %zu, survived %zu, stillborn %zu, equivalent %zu, of %zu "
           "(seed %llu)%s\n",
           count[KILLED], count[TIMEDOUT], count[SURVIVED], count[STILLBORN], count[EQUIV], n,
           (unsigned long long)seed, stale ? "; tests/mutate.equiv has stale entries" : "");
    printf("mutate: score %zu/%zu = %.1f%%\n", caught, judged, judged ? 100.0 * (double)caught / (double)judged : 100.0);
    return count[SURVIVED] ? 1 : 0;
}
