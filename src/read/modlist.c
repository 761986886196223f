/*
 * modlist.c - a thread's module list from its TRACE_KIND_MODULE records.
 *
 * A small state machine over the order trace.h gives: LIST, then for each
 * module BEGIN, TEXT, an optional BUILD_ID, PATH records, END, and last
 * LIST_END repeating LIST's number.  Any other order, a count or length out
 * of bounds, or a record of another kind inside a list makes the list
 * damaged, said once (its other records are skipped up to the next LIST):
 * the reader keeps the thread's previous list, so a torn list costs names,
 * never counts.
 */
#include "modlist.h"

#include "lib/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void modlist_init(struct modlist *m)
{
    memset(m, 0, sizeof *m);
}

void modlist_entries_free(struct modlist_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].path);
    free(v);
}

static void drop_list(struct modlist *m)
{
    modlist_entries_free(m->v, m->n);
    m->v = NULL;
    m->n = m->want = m->cap = 0;
    m->reading = m->in_module = 0;
}

void modlist_free(struct modlist *m)
{
    drop_list(m);
    free(m->path);
    m->path = NULL;
    m->path_cap = 0;
}

/* The list is damaged: said once; its other records are skipped up to
 * the next LIST. */
static enum modlist_step damaged(struct modlist *m, const char *why)
{
    snprintf(m->why, sizeof m->why, "%s", why);
    drop_list(m);
    m->skipping = 1;
    return MODLIST_DAMAGED;
}

/* Up to 24 bytes, byte i at bits 8i of the three words (trace.h). */
static void unpack(const trace_event_t *ev, unsigned char out[TRACE_MODULE_BYTES])
{
    const uint64_t w[3] = {ev->ts, ev->func, ev->call_site};
    for (unsigned i = 0; i < TRACE_MODULE_BYTES; i++)
        out[i] = (unsigned char)(w[i / 8] >> (8 * (i % 8)));
}

static enum modlist_step on_list(struct modlist *m, const trace_event_t *ev)
{
    if (m->reading) { /* the last one is torn; this one is read on */
        enum modlist_step st = damaged(m, "a module list begins inside another (torn)");
        return on_list(m, ev) == MODLIST_OOM ? MODLIST_OOM : st;
    }
    if (ev->call_site > MODLIST_MAX)
        return damaged(m, "a module list says it has more modules than any program loads");
    /* Room grows with the modules that come, not with the count a LIST
     * claims: a record of 32 bytes must not reserve 4,096 entries. */
    m->v = NULL;
    m->cap = 0;
    m->want = (size_t)ev->call_site;
    m->number = ev->func;
    m->reading = 1;
    m->skipping = 0;
    return MODLIST_MORE;
}

static enum modlist_step on_begin(struct modlist *m, const trace_event_t *ev)
{
    if (m->in_module || m->n >= m->want)
        return damaged(m, m->in_module ? "a module begins inside another" : "more modules than its list said");
    if (vec_grow(&m->v, &m->cap, m->n, sizeof *m->v, 8) < 0)
        return MODLIST_OOM;
    struct modlist_entry *e = &m->v[m->n++];
    memset(e, 0, sizeof *e);
    e->id = ev->ts;
    e->bias = ev->func;
    e->main = ev->call_site == TRACE_MODULE_MAIN;
    m->in_module = 1;
    m->text_seen = 0;
    m->path_len = 0;
    return MODLIST_MORE;
}

static enum modlist_step on_part(struct modlist *m, const trace_event_t *ev, unsigned part)
{
    struct modlist_entry *e = &m->v[m->n - 1];
    unsigned count = ev->pad[1];
    if (part == TRACE_MODULE_TEXT) {
        if (m->text_seen || ev->ts != e->id || ev->func >= ev->call_site)
            return damaged(m, "a module's code extent is out of place or empty");
        e->lo = ev->func;
        e->hi = ev->call_site;
        m->text_seen = 1;
        return MODLIST_MORE;
    }
    if (!m->text_seen)
        return damaged(m, "a module's records are out of order");
    if (part == TRACE_MODULE_BUILD_ID) {
        if (e->build_id_len || m->path_len || count == 0 || count > TRACE_MODULE_BYTES)
            return damaged(m, "a module's build-id is out of place or of a bad length");
        unpack(ev, e->build_id);
        e->build_id_len = count;
        return MODLIST_MORE;
    }
    if (count == 0 || count > TRACE_MODULE_BYTES || m->path_len + count > TRACE_MODULE_PATH_MAX)
        return damaged(m, "a module's path is too long or a part of it is of a bad length");
    unsigned char b[TRACE_MODULE_BYTES];
    unpack(ev, b);
    /* The path's room grows with its parts (one byte for the NUL ahead). */
    while (m->path_len + count + 1 > m->path_cap)
        if (vec_grow(&m->path, &m->path_cap, m->path_cap, 1, 64) < 0)
            return MODLIST_OOM;
    memcpy(m->path + m->path_len, b, count);
    m->path_len += count;
    return MODLIST_MORE;
}

static enum modlist_step on_end(struct modlist *m, const trace_event_t *ev)
{
    struct modlist_entry *e = &m->v[m->n - 1];
    if (!m->text_seen || ev->ts != e->id || ev->func != m->path_len)
        return damaged(m, "a module's end does not match its beginning or its path");
    if (m->path_len && memchr(m->path, '\0', m->path_len))
        return damaged(m, "a module's path holds a NUL byte");
    if (!(e->path = malloc(m->path_len + 1)))
        return MODLIST_OOM;
    if (m->path_len)
        memcpy(e->path, m->path, m->path_len);
    e->path[m->path_len] = '\0';
    m->in_module = 0;
    return MODLIST_MORE;
}

enum modlist_step modlist_feed(struct modlist *m, const trace_event_t *ev)
{
    unsigned part = ev->pad[0];
    if (part == TRACE_MODULE_LIST)
        return on_list(m, ev);
    if (!m->reading)
        return m->skipping ? MODLIST_MORE : damaged(m, "a module record outside a list");
    switch (part) {
    case TRACE_MODULE_BEGIN:
        return on_begin(m, ev);
    case TRACE_MODULE_TEXT:
    case TRACE_MODULE_BUILD_ID:
    case TRACE_MODULE_PATH:
        return m->in_module ? on_part(m, ev, part) : damaged(m, "a module record outside a module");
    case TRACE_MODULE_END:
        return m->in_module ? on_end(m, ev) : damaged(m, "a module's end without its beginning");
    case TRACE_MODULE_LIST_END:
        if (m->in_module || m->n != m->want)
            return damaged(m, "a module list ends before all its modules did");
        if (ev->func != m->number)
            return damaged(m, "a module list ends with another list's number");
        m->left_out = ev->call_site;
        m->reading = 0;
        return MODLIST_DONE;
    default:
        return damaged(m, "a module record of an unknown part");
    }
}

enum modlist_step modlist_interrupt(struct modlist *m)
{
    if (!m->reading)
        return MODLIST_MORE;
    return damaged(m, "a module list is cut by other records (torn)");
}

struct modlist_entry *modlist_take(struct modlist *m, size_t *n)
{
    struct modlist_entry *v = m->v;
    *n = m->n;
    m->v = NULL;
    m->n = m->want = m->cap = 0;
    return v;
}
