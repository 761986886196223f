/*
 * graph.c - read GCC's -fcallgraph-info files into one call graph (see
 * graph.h).
 *
 * A file is read whole (bounded), its quoted strings unescaped in place, its
 * nodes and edges collected, then resolved: nodes first, because an edge
 * may name a node written after it.
 */
#include "graph.h"
#include "lib/fileopen.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDIRECT_TITLE "__indirect_call"
#define NO_FUNC UINT32_MAX - 1 /* in a unit's map: the indirect placeholder */

struct item {        /* one node or edge line, its strings in the file's buffer */
    int is_edge;
    const char *a;   /* node: title; edge: sourcename */
    const char *b;   /* node: label; edge: targetname */
    const char *c;   /* edge: label (the call site) */
    int declared;    /* node: shape ellipse, no body here */
    unsigned line;
};

struct unit_read {
    struct item *items;
    size_t n, cap;
    const char *title;
    struct strmap local;  /* title -> function index, for this unit */
};

void graph_free(struct graph *g)
{
    for (size_t i = 0; i < g->nf; i++) {
        free(g->f[i].key);
        free(g->f[i].name);
        free(g->f[i].plain);
        free(g->f[i].label);
        free(g->f[i].file);
        free(g->f[i].indirect_at);
    }
    for (size_t i = 0; i < g->nu; i++) {
        free(g->u[i].source);
        free(g->u[i].funcs);
    }
    free(g->f);
    free(g->u);
    free(g->callee);
    free(g->edges);
    strmap_free(&g->by_key);
    memset(g, 0, sizeof *g);
}

/* v (of *cap elements of sz bytes), grown if needed to hold n + 1; NULL
 * when it cannot be (v is then unchanged). */
static void *room_for(void *v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return v;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = c < SIZE_MAX / sz ? realloc(v, c * sz) : NULL;
    if (p)
        *cap = c;
    return p;
}

/* ---- the name GCC's exclude list matches ---- */

static int is_operator_at(const char *s, size_t i)
{
    return !strncmp(s + i, "operator", 8) && (i == 0 || s[i - 1] == ':' || s[i - 1] == ' ') &&
           !((s[i + 8] >= 'a' && s[i + 8] <= 'z') || (s[i + 8] >= 'A' && s[i + 8] <= 'Z') ||
             (s[i + 8] >= '0' && s[i + 8] <= '9') || s[i + 8] == '_');
}

/* Where the parameter list of "RET NAME(PARAMS) QUALS" opens: the '(' that
 * matches the last ')'; len when there is none (a C label). */
static size_t params_open(const char *s, size_t len)
{
    size_t close = len;
    while (close > 0 && s[close - 1] != ')')
        close--;
    if (!close)
        return len;
    int depth = 0;
    for (size_t i = close; i-- > 0;) {
        if (s[i] == ')')
            depth++;
        else if (s[i] == '(' && --depth == 0)
            return i;
    }
    return len;
}

/* s[from..to) into out, template arguments left out when strip (not an
 * operator's own < or >). */
static size_t copy_name(const char *s, size_t from, size_t to, int strip, char *out, size_t len, size_t o)
{
    int depth = 0;
    for (size_t i = from; i < to && o + 1 < len; i++) {
        if (is_operator_at(s, i)) {
            for (; i < to && o + 1 < len; i++)
                out[o++] = s[i];
            break;
        }
        char c = s[i];
        if (strip && c == '<')
            depth++;
        else if (strip && c == '>' && depth > 0)
            depth--;
        else if (!depth)
            out[o++] = c;
    }
    out[o] = '\0';
    return o;
}

/* Where the last component of s[0..end) starts: after the last "::"
 * outside <>, or at "operator". */
static size_t last_component(const char *s, size_t start, size_t end)
{
    size_t at = start;
    int depth = 0;
    for (size_t i = start; i < end; i++) {
        if (is_operator_at(s, i))
            return i > start && s[i - 1] == ':' ? i : at;
        if (s[i] == '<')
            depth++;
        else if (s[i] == '>' && depth > 0)
            depth--;
        else if (!depth && s[i] == ':' && s[i + 1] == ':')
            at = i + 2;
    }
    return at;
}

void graph_visible_name(const char *label, char *out, size_t len, int plain)
{
    size_t n = strcspn(label, "\n");
    const char *with = strstr(label, " [with ");
    if (with && (size_t)(with - label) < n)
        n = (size_t)(with - label);
    size_t end = params_open(label, n);
    if (end == n) { /* C: the label is the identifier */
        snprintf(out, len, "%.*s", (int)n, label);
        return;
    }
    /* The name starts after the last space outside <> and () before it,
     * or at "operator" (whose own spaces belong to it: "operator new"). */
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i < end; i++) {
        char c = label[i];
        if (is_operator_at(label, i))
            break;
        if (c == '<' || c == '(')
            depth++;
        else if ((c == '>' || c == ')') && depth > 0)
            depth--;
        else if (c == ' ' && depth == 0)
            start = i + 1;
    }
    /* GCC names a function template's instance without its arguments, and
     * a class template's member with its class's (A<int>::get). */
    size_t last = last_component(label, start, end);
    size_t o = copy_name(label, start, last, plain, out, len, 0);
    copy_name(label, last, end, 1, out, len, o);
}

const char *graph_match_text(const char *name)
{
    /* The label spells a class template's arguments as parameters (A<T>,
     * [with T = int]); after the last '>' the text is as GCC prints it. */
    const char *cut = name, *op = NULL;
    for (const char *p = name; *p; p++)
        if (is_operator_at(name, (size_t)(p - name))) {
            op = p;
            break;
        }
    for (const char *p = name; *p && (!op || p < op); p++)
        if (*p == '>')
            cut = p + 1;
    return cut;
}

/* ---- parsing one file ---- */

/* Does a line start at s with what only begins a line of the file: an
 * item, the graph's closing '}', or nothing (a blank line, the end)? */
static int starts_line(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return !*s || *s == '\n' || *s == '}' || !strncmp(s, "node:", 5) || !strncmp(s, "edge:", 5) ||
           !strncmp(s, "graph:", 6);
}

/* Does the '"' at q close a value?  GCC writes names into the file as they
 * are, so a source named a"b.c puts a bare '"' inside one, and a source
 * whose name holds a newline breaks the value over lines: a quote closes
 * only where the file's syntax goes on after it, with the end of the item,
 * blanks and the next field's name and its ':', or the end of the line
 * and a line that starts as only a line of the file can. */
static int closes_value(const char *q)
{
    const char *s = q + 1;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    if (!*s || *s == '}')
        return 1;
    if (*s == '\n')
        return starts_line(s + 1);
    if (s == q + 1)
        return 0;
    const char *w = s;
    while ((*s >= 'a' && *s <= 'z') || *s == '_')
        s++;
    if (s == w)
        return 0;
    while (*s == ' ' || *s == '\t') /* "shape : ellipse" */
        s++;
    return *s == ':';
}

/* A quoted string at *p (which points at its opening quote), as it is in
 * the file (GCC escapes nothing in a name: a source named c\\nd.c is
 * written so), NUL-terminated in place; *p is left after it, *lines counts
 * the newlines it held.  NULL when it does not close. */
static char *take_quoted(char **p, unsigned *lines)
{
    char *start = *p + 1, *s = start;
    for (; *s && !(*s == '"' && closes_value(s)); s++)
        *lines += *s == '\n';
    if (*s != '"')
        return NULL;
    *p = s + 1;
    *s = '\0';
    return start;
}

/* A node's label is "NAME\\nFILE:LINE:COL", the two characters \\n between
 * them written by GCC: made one newline, which no function name holds, so
 * the first newline splits the label even when the file's name holds
 * another or a backslash. */
static void split_label(char *label)
{
    char *sep = strstr(label, "\\n");
    if (sep) {
        *sep = '\n';
        memmove(sep + 1, sep + 2, strlen(sep + 2) + 1);
    }
}

static void skip_blanks(char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\r')
        (*p)++;
}

/* The fields of "KIND: { f: v f: v ... }" from *p (after the '{'), up to
 * the end of its line (*lines counts those its values broke over).  0 ok,
 * -1 malformed. */
static int take_fields(char **p, struct item *it, const char **title, unsigned *lines)
{
    for (;;) {
        skip_blanks(p);
        if (**p == '}' || **p == '\n' || !**p) {
            if (**p == '}')
                (*p)++;
            return 0;
        }
        char *word = *p;
        while (**p && **p != ':' && **p != ' ' && **p != '\n')
            (*p)++;
        size_t wlen = (size_t)(*p - word);
        skip_blanks(p);
        if (**p != ':')
            return -1;
        (*p)++;
        skip_blanks(p);
        char *v;
        if (**p == '"') {
            if (!(v = take_quoted(p, lines)))
                return -1;
        } else { /* a bare value: shape : ellipse */
            v = *p;
            while (**p && **p != ' ' && **p != '}' && **p != '\n')
                (*p)++;
            it->declared |= wlen == 5 && !strncmp(word, "shape", 5);
            continue;
        }
        if (wlen == 5 && !strncmp(word, "title", 5))
            *(title ? title : &it->a) = v;
        else if (wlen == 5 && !strncmp(word, "label", 5) && it->is_edge)
            it->c = v;
        else if (wlen == 5 && !strncmp(word, "label", 5)) {
            split_label(v);
            it->b = v;
        }
        else if (wlen == 10 && !strncmp(word, "sourcename", 10))
            it->a = v;
        else if (wlen == 10 && !strncmp(word, "targetname", 10))
            it->b = v;
    }
}

/* Collect the file's nodes and edges into r.  0 ok; -1 with *why, *at. */
static int parse_file(char *buf, struct unit_read *r, const char **why, unsigned *at)
{
    unsigned no = 0;
    for (char *p = buf; *p;) {
        no++;
        *at = no;
        skip_blanks(&p);
        struct item it = {0, NULL, NULL, NULL, 0, no};
        const char *kinds[] = {"graph:", "node:", "edge:"};
        size_t k = 0;
        while (k < 3 && strncmp(p, kinds[k], strlen(kinds[k])))
            k++;
        if (k < 3) {
            p += strlen(kinds[k]);
            skip_blanks(&p);
            it.is_edge = k == 2;
            if (*p++ != '{' || take_fields(&p, &it, k == 0 ? &r->title : NULL, &no) < 0) {
                *why = "expected KIND: { name: \"value\" ... }";
                return -1;
            }
            if (k == 0 && !r->title) {
                *why = "a graph with no title";
                return -1;
            }
            if (k > 0 && (!it.a || !it.b)) {
                *why = k == 1 ? "a node needs a title and a label" : "an edge needs a sourcename and a targetname";
                return -1;
            }
            if (k > 0 && r->n >= GRAPH_MAX_EDGES) {
                *why = "too many nodes and edges";
                return -1;
            }
            if (k > 0) {
                struct item *items = room_for(r->items, &r->cap, r->n, sizeof it);
                if (!items) {
                    *why = "out of memory";
                    return -1;
                }
                r->items = items;
                r->items[r->n++] = it;
            }
        } else if (*p == '}') {
            p++;
        } else if (*p != '\n' && *p) {
            *why = "expected graph:, node:, edge: or }";
            return -1;
        }
        skip_blanks(&p);
        if (*p && *p != '\n') {
            *why = "more after the closing }";
            return -1;
        }
        if (*p)
            p++;
    }
    if (!r->title) {
        *why = "no graph: { title: ... } (not a -fcallgraph-info file?)";
        return -1;
    }
    return 0;
}

/* ---- resolving ---- */

/* "NAME\nFILE:LINE:COL" -> the file and line (none: "" and 0). */
static void split_location(const char *label, char *file, size_t flen, unsigned *line)
{
    const char *nl = strchr(label, '\n');
    file[0] = '\0';
    *line = 0;
    if (!nl)
        return;
    const char *loc = nl + 1, *c2 = strrchr(loc, ':');
    const char *c1 = c2 ? c2 : NULL;
    while (c1 && c1 > loc && c1[-1] != ':')
        c1--;
    if (!c2 || c1 == loc)
        return;
    c1--; /* the ':' before LINE */
    *line = (unsigned)strtoul(c1 + 1, NULL, 10);
    /* A unit named like an option went to the compiler as ./NAME
     * (graph_build.c): its functions are in NAME. */
    if (c1 - loc > 2 && loc[0] == '.' && loc[1] == '/' && (loc[2] == '-' || loc[2] == '@'))
        loc += 2;
    snprintf(file, flen, "%.*s", (int)(c1 - loc), loc);
}

/* The function keyed `key`, added (declared only) when new.  Its index, or
 * SIZE_MAX out of memory or past the bound. */
static size_t func_of(struct graph *g, const char *key, const char *label)
{
    uint32_t v;
    if (strmap_get(&g->by_key, key, &v))
        return v;
    struct graph_func *all = g->nf < GRAPH_MAX_FUNCS ? room_for(g->f, &g->capf, g->nf, sizeof *g->f) : NULL;
    if (!all)
        return SIZE_MAX;
    g->f = all;
    char file[4096], name[4096], plain[4096];
    struct graph_func *f = &g->f[g->nf];
    memset(f, 0, sizeof *f);
    split_location(label, file, sizeof file, &f->line);
    graph_visible_name(label, name, sizeof name, 0);
    graph_visible_name(label, plain, sizeof plain, 1);
    f->key = strdup(key);
    f->name = strdup(name);
    f->plain = strdup(plain);
    f->label = strndup(label, strcspn(label, "\n"));
    f->file = strdup(file);
    if (!f->key || !f->name || !f->plain || !f->label || !f->file ||
        strmap_put(&g->by_key, f->key, (uint32_t)g->nf) < 0) {
        free(f->key);
        free(f->name);
        free(f->plain);
        free(f->label);
        free(f->file);
        return SIZE_MAX;
    }
    return g->nf++;
}

/* A node: its function found or added, marked defined when it has a body
 * here.  0 or -1 (out of memory). */
static int add_node(struct graph *g, struct unit_read *r, struct graph_unit *u, const struct item *it)
{
    if (!strcmp(it->a, INDIRECT_TITLE))
        return strmap_put(&r->local, it->a, NO_FUNC);
    size_t plen = strlen(r->title);
    int local = !strncmp(it->a, r->title, plen) && it->a[plen] == ':';
    char key[8192], file[4096];
    unsigned line;
    split_location(it->b, file, sizeof file, &line);
    if (local)
        snprintf(key, sizeof key, "%s:%u:%s", file, line, it->a + plen + 1);
    else
        snprintf(key, sizeof key, "%s", it->a);
    size_t i = func_of(g, key, it->b);
    if (i == SIZE_MAX)
        return -1;
    struct graph_func *f = &g->f[i];
    if (!it->declared && !f->defined) {
        char *df = strdup(file);
        if (!df)
            return -1;
        free(f->file);
        f->file = df;
        f->line = line;
        f->defined = 1;
    }
    if (!it->declared) {
        size_t *funcs = room_for(u->funcs, &u->cap, u->n, sizeof *u->funcs);
        if (!funcs)
            return -1;
        u->funcs = funcs;
        u->funcs[u->n++] = i;
    }
    return strmap_put(&r->local, it->a, (uint32_t)i);
}

static int add_edge(struct graph *g, struct unit_read *r, const struct item *it, const char **why)
{
    uint32_t from, to;
    if (!strmap_get(&r->local, it->a, &from) || from == NO_FUNC) {
        *why = "an edge from a function the file does not define";
        return -1;
    }
    if (!strmap_get(&r->local, it->b, &to)) { /* named by the edge alone */
        size_t i = func_of(g, it->b, it->b);
        if (i == SIZE_MAX || strmap_put(&r->local, it->b, (uint32_t)i) < 0) {
            *why = "out of memory";
            return -1;
        }
        to = (uint32_t)i;
    }
    if (to == NO_FUNC) {
        struct graph_func *f = &g->f[from];
        if (!f->indirect++ && it->c && !(f->indirect_at = strdup(it->c))) {
            *why = "out of memory";
            return -1;
        }
        return 0;
    }
    size_t *edges = g->nedges < GRAPH_MAX_EDGES
                        ? room_for(g->edges, &g->capedges, g->nedges, 2 * sizeof *g->edges) : NULL;
    if (!edges) {
        *why = g->nedges >= GRAPH_MAX_EDGES ? "more calls than the graph holds" : "out of memory";
        return -1;
    }
    g->edges = edges;
    g->edges[2 * g->nedges] = from;
    g->edges[2 * g->nedges + 1] = to;
    g->nedges++;
    return 0;
}

/* One unit from its text (NUL-terminated, changed in place). */
static int add_text(struct graph *g, const char *source, const char *name, char *buf, char *err, size_t errlen)
{
    struct unit_read r = {NULL, 0, 0, NULL, {0}};
    const char *why = NULL;
    unsigned at = 0;
    struct graph_unit *units = room_for(g->u, &g->capu, g->nu, sizeof *g->u);
    if (!units) {
        why = "out of memory";
    } else {
        g->u = units;
        struct graph_unit *u = &g->u[g->nu];
        memset(u, 0, sizeof *u);
        if (!(u->source = strdup(source)))
            why = "out of memory";
        else
            g->nu++;
    }
    if (!why && parse_file(buf, &r, &why, &at) == 0) {
        struct graph_unit *u = &g->u[g->nu - 1];
        for (size_t i = 0; !why && i < r.n; i++)
            if (!r.items[i].is_edge && add_node(g, &r, u, &r.items[i]) < 0) {
                why = g->nf >= GRAPH_MAX_FUNCS ? "more functions than the graph holds" : "out of memory";
                at = r.items[i].line;
            }
        for (size_t i = 0; !why && i < r.n; i++)
            if (r.items[i].is_edge && add_edge(g, &r, &r.items[i], &why) < 0)
                at = r.items[i].line;
    }
    if (why)
        snprintf(err, errlen, "%s:%u: %s", name, at, why);
    free(r.items);
    strmap_free(&r.local);
    return why ? -1 : 0;
}

int graph_add_unit(struct graph *g, const char *source, const char *ci_path, char *err, size_t errlen)
{
    char *buf;
    size_t n;
    if (fileopen_read(ci_path, GRAPH_MAX_FILE, &buf, &n, err, errlen) < 0)
        return -1;
    if (memchr(buf, '\0', n)) {
        snprintf(err, errlen, "%s: a NUL byte: not a call graph file", ci_path);
        free(buf);
        return -1;
    }
    int rc = add_text(g, source, ci_path, buf, err, errlen);
    free(buf);
    return rc;
}

int graph_add_text(struct graph *g, const char *source, const char *name, const char *text, size_t len, char *err,
                   size_t errlen)
{
    char *buf = len < GRAPH_MAX_FILE ? malloc(len + 1) : NULL;
    if (!buf || memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: %s", name, !buf ? "too large or out of memory" : "a NUL byte: not a call graph file");
        free(buf);
        return -1;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    int rc = add_text(g, source, name, buf, err, errlen);
    free(buf);
    return rc;
}

static int cmp_pair(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

int graph_finish(struct graph *g)
{
    free(g->callee);
    g->callee = malloc((g->nedges ? g->nedges : 1) * sizeof *g->callee);
    if (!g->callee)
        return -1;
    if (g->nedges)
        qsort(g->edges, g->nedges, 2 * sizeof *g->edges, cmp_pair);
    for (size_t i = 0; i < g->nf; i++)
        g->f[i].nout = 0;
    size_t n = 0;
    for (size_t e = 0; e < g->nedges; e++) {
        size_t from = g->edges[2 * e], to = g->edges[2 * e + 1];
        if (e && from == g->edges[2 * e - 2] && to == g->edges[2 * e - 1])
            continue; /* the same call written twice */
        if (!g->f[from].nout)
            g->f[from].out = n;
        g->f[from].nout++;
        g->callee[n++] = to;
    }
    return 0;
}

int graph_reach(const struct graph *g, size_t root, int depth, unsigned char *mark)
{
    /* Breadth first, so each function is reached at its least depth; bit 2
     * of mark is "queued in this walk", cleared at the end. */
    size_t *queue = malloc(g->nf * sizeof *queue);
    int *level = malloc(g->nf * sizeof *level);
    if (!queue || !level) {
        free(queue);
        free(level);
        return -1;
    }
    size_t head = 0, tail = 0;
    unsigned char *seen = mark;
    seen[root] |= 3;
    queue[tail++] = root;
    level[root] = 0;
    while (head < tail) {
        size_t at = queue[head++];
        if (depth >= 0 && level[at] >= depth)
            continue;
        const struct graph_func *f = &g->f[at];
        for (size_t k = 0; k < f->nout; k++) {
            size_t to = g->callee[f->out + k];
            if (seen[to] & 2)
                continue;
            seen[to] |= 3;
            level[to] = level[at] + 1;
            queue[tail++] = to;
        }
    }
    for (size_t i = 0; i < g->nf; i++)
        mark[i] &= 1;
    free(queue);
    free(level);
    return 0;
}
