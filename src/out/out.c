/*
 * out.c - labels and tree order shared by the output formats (see out.h).
 */
#include "out.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/textesc.h"

const char *out_func_name(const struct out_view *v, uint32_t id, char *buf, size_t len)
{
    if (v->funcs && v->funcs[id].name)
        return v->funcs[id].name;
    snprintf(buf, len, "0x%llx", (unsigned long long)v->a->funcs.v[id].addr);
    return buf;
}

/* Characters (UTF-8 lead bytes) in s[0..n). */
static size_t chars_in(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* Bytes of s that hold its first k characters. */
static size_t bytes_of_chars(const char *s, size_t k)
{
    size_t i = 0;
    for (size_t c = 0; s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == k)
            break;
    return i;
}

void out_func_fit(const struct out_view *v, uint32_t id, size_t width, char *buf, size_t len)
{
    char hex[32], mid[1024];
    const char *name = out_func_name(v, id, hex, sizeof hex);
    size_t n = strlen(name), chars = chars_in(name, n);
    if (width < OUT_FIT_MIN)
        width = OUT_FIT_MIN;
    if (width > sizeof mid / 4)
        width = sizeof mid / 4; /* four bytes a character at most */
    if (chars > width) {
        size_t head = (width - 3) / 2, tail = width - 3 - head;
        size_t hb = bytes_of_chars(name, head), tb = bytes_of_chars(name, chars - tail);
        snprintf(mid, sizeof mid, "%.*s...%s", (int)hb, name, name + tb);
        name = mid;
    }
    textesc(buf, len, name, TEXTESC_TERMINAL);
}

FILE *out_temp_file(const char *dir, const char *what)
{
    const char *d = dir ? dir : getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/.callsight-%s.XXXXXX", d && *d ? d : "/tmp", what);
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    FILE *f = fdopen(fd, "w+");
    if (!f)
        close(fd);
    return f;
}

#define STREAM_PID_BASE (1u << 30)

uint32_t out_process_pid(const struct analysis *a, uint32_t proc)
{
    const struct analysis_process *pr = &a->procs[proc];
    const struct analysis_source *s = &a->src[pr->src];
    if (pr->announced || s->kind != ANALYSIS_SOURCE_STREAM)
        return pr->pid;
    return STREAM_PID_BASE + (s->id & (STREAM_PID_BASE - 1));
}

void out_process_label(const struct analysis *a, uint32_t proc, char *buf, size_t len)
{
    const struct analysis_process *pr = &a->procs[proc];
    const struct analysis_source *s = &a->src[pr->src];
    if (pr->announced && s->kind == ANALYSIS_SOURCE_STREAM)
        snprintf(buf, len, "pid %u (stream %u)", pr->pid, s->id);
    else
        snprintf(buf, len, "%s %u", analysis_source_word(s), s->id);
}

/* Thread and function names are a device's: the label is escaped for the
 * terminal (folded lines are read there, and XML may hold no control byte),
 * so that a newline in a name forges no stack. */
void out_node_label(const struct out_view *v, uint32_t node, char *buf, size_t len)
{
    const struct cctree_node *n = &v->tree->v[node];
    char raw[1024];
    switch (n->kind) {
    case CCTREE_ROOT:
        snprintf(buf, len, "all");
        break;
    case CCTREE_OTHER:
        snprintf(buf, len, "[other stacks]");
        break;
    case CCTREE_LOST:
        snprintf(buf, len, "[lost frames]");
        break;
    case CCTREE_THREAD:
        analysis_thread_label(&v->a->threads[n->key], raw, sizeof raw);
        textesc(buf, len, raw, TEXTESC_TERMINAL);
        break;
    case CCTREE_FUNC:
        textesc(buf, len, out_func_name(v, n->key, raw, sizeof raw), TEXTESC_TERMINAL);
        break;
    }
}

/* Siblings' order: by kind (threads first), then threads by first sight,
 * functions by name then address. */
static int cmp_nodes(const void *pa, const void *pb, void *ctx)
{
    const struct out_view *v = ctx;
    const struct cctree_node *a = &v->tree->v[*(const uint32_t *)pa];
    const struct cctree_node *b = &v->tree->v[*(const uint32_t *)pb];
    if (a->kind != b->kind)
        return a->kind == CCTREE_THREAD ? -1 : b->kind == CCTREE_THREAD ? 1 : (int)a->kind - (int)b->kind;
    if (a->kind == CCTREE_FUNC) {
        const char *na = v->funcs ? v->funcs[a->key].name : NULL;
        const char *nb = v->funcs ? v->funcs[b->key].name : NULL;
        int c = na && nb ? strcmp(na, nb) : (nb != NULL) - (na != NULL);
        if (c)
            return c;
        uint64_t xa = v->a->funcs.v[a->key].addr, xb = v->a->funcs.v[b->key].addr;
        return xa < xb ? -1 : xa > xb;
    }
    return a->key < b->key ? -1 : a->key > b->key;
}

long out_tree_order(const struct out_view *v, uint32_t **order, uint32_t **depth)
{
    const struct cctree *t = v->tree;
    uint32_t *stack = malloc(t->n * sizeof *stack), *sdepth = malloc(t->n * sizeof *sdepth);
    *order = malloc(t->n * sizeof **order);
    *depth = malloc(t->n * sizeof **depth);
    long filled = 0;
    size_t top = 0;
    if (!stack || !sdepth || !*order || !*depth)
        goto fail;
    stack[top] = 0;
    sdepth[top++] = 0;
    while (top) {
        uint32_t node = stack[--top], d = sdepth[top];
        (*order)[filled] = node;
        (*depth)[filled++] = d;
        size_t first = top;
        for (uint32_t c = t->v[node].first_child; c != CCTREE_NONE; c = t->v[c].next_sibling) {
            stack[top] = c;
            sdepth[top++] = d + 1;
        }
        qsort_r(stack + first, top - first, sizeof *stack, cmp_nodes, (void *)v);
        /* Popped last-first: reverse so the first in order comes out first. */
        for (size_t i = first, j = top; i + 1 < j; i++, j--) {
            uint32_t tmp = stack[i];
            stack[i] = stack[j - 1];
            stack[j - 1] = tmp;
        }
    }
    free(stack);
    free(sdepth);
    return filled;
fail:
    free(stack);
    free(sdepth);
    free(*order);
    free(*depth);
    *order = *depth = NULL;
    return -1;
}

/* The trigger lines of the text report: the slow call, and its stack from
 * the outermost frame kept to the call itself. */
void out_triggers_text(FILE *out, const struct out_view *v)
{
    const struct analysis *a = v->a;
    int64_t t0 = a->have_start ? a->start_ns : a->first_ns;
    for (size_t i = 0; i < a->ntriggers; i++) {
        const struct analysis_trigger *g = &a->triggers[i];
        char thread[64], label[512], hex[32];
        uint32_t slow = g->call;
        analysis_thread_label(&a->threads[g->thread], thread, sizeof thread);
        report_label(v->funcs ? &v->funcs[slow] : NULL, (unsigned long long)a->funcs.v[slow].addr, label,
                     sizeof label);
        fprintf(out, "trigger: %s took %.3f ms, ending at %.6fs on ", label, (double)g->took_ns / 1e6,
                (double)(g->ns - t0) / 1e9);
        textesc_put(out, thread);
        fprintf(out, "; stack: %s", g->outer ? "... > " : "");
        for (uint32_t k = 0; k < g->nframes; k++) {
            textesc_put(out, g->frames[k] == UINT32_MAX ? "[entered before the trace]"
                                                        : out_func_name(v, g->frames[k], hex, sizeof hex));
            fputs(" > ", out);
        }
        textesc_put(out, out_func_name(v, slow, hex, sizeof hex));
        fputc('\n', out);
    }
    if (a->triggers_more)
        fprintf(out, "trigger: %llu more slow calls (TRACE_MARK_TRIGGER) not shown\n",
                (unsigned long long)a->triggers_more);
}

/* analyze --trigger: each slow call with its stack, one frame a line,
 * outermost first, each named with file:line. */
void out_triggers_stacks(FILE *out, const struct out_view *v)
{
    const struct analysis *a = v->a;
    for (size_t i = 0; i < a->ntriggers; i++) {
        const struct analysis_trigger *g = &a->triggers[i];
        char label[512];
        fputc('\n', out);
        if (g->outer)
            fprintf(out, "  ... %llu outer frames not known\n", (unsigned long long)g->outer);
        for (uint32_t k = 0; k <= g->nframes; k++) {
            uint32_t id = k < g->nframes ? g->frames[k] : g->call;
            if (id == UINT32_MAX)
                snprintf(label, sizeof label, "[entered before the trace]");
            else
                report_label(v->funcs ? &v->funcs[id] : NULL, (unsigned long long)a->funcs.v[id].addr, label,
                             sizeof label);
            fprintf(out, "%*s%s%s\n", 2 + 2 * (int)(k < 32 ? k : 32), "", label,
                    k == g->nframes ? "   <- the slow call" : "");
        }
    }
}
