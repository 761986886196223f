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
 *
 * A module is read into cur and appended to the list at its END, if the
 * budget allows: its first per_list modules, while what every reader holds
 * stays within max_bytes.  The others are read and checked all the same
 * (a list is whole or damaged whatever was kept of it) and counted.  What a
 * list holds (its array's room and its paths' room) is charged while it is
 * read and given back all at once when it is damaged or taken.
 */
#include "modlist.h"

#include "lib/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void modlist_init(struct modlist *m, struct modlist_budget *budget)
{
    memset(m, 0, sizeof *m);
    m->budget = budget;
}

void modlist_entries_free(struct modlist_entry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].path);
    free(v);
}

/* bytes more fit in the budget. */
static int fits(const struct modlist *m, size_t bytes)
{
    const struct modlist_budget *b = m->budget;
    return !b || (b->held <= b->max_bytes && bytes <= b->max_bytes - b->held);
}

static void charge(struct modlist *m, size_t bytes)
{
    if (m->budget) {
        m->budget->held += bytes;
        m->held += bytes;
    }
}

/* What the list held goes back to the budget, with the path's room (which
 * it was charged to). */
static void refund(struct modlist *m)
{
    if (m->budget)
        m->budget->held -= m->held < m->budget->held ? m->held : m->budget->held;
    m->held = 0;
    free(m->path);
    m->path = NULL;
    m->path_cap = 0;
}

static void drop_list(struct modlist *m)
{
    modlist_entries_free(m->v, m->n);
    refund(m);
    m->v = NULL;
    m->n = m->cap = m->begun = m->want = 0;
    m->reading = m->in_module = 0;
}

void modlist_free(struct modlist *m)
{
    drop_list(m);
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
    m->n = m->cap = m->begun = 0;
    m->cut_list = m->cut_bytes = 0;
    m->want = (size_t)ev->call_site;
    m->number = ev->func;
    m->reading = 1;
    m->skipping = 0;
    return MODLIST_MORE;
}

static enum modlist_step on_begin(struct modlist *m, const trace_event_t *ev)
{
    if (m->in_module || m->begun >= m->want)
        return damaged(m, m->in_module ? "a module begins inside another" : "more modules than its list said");
    struct modlist_entry *e = &m->cur;
    memset(e, 0, sizeof *e);
    m->begun++;
    m->drop = m->budget && m->n >= m->budget->per_list;
    e->id = ev->ts;
    e->bias = ev->func;
    e->main = ev->call_site == TRACE_MODULE_MAIN;
    e->gone_at = ev->call_site == TRACE_MODULE_GONE; /* its time comes at END */
    m->in_module = 1;
    m->text_seen = 0;
    m->path_len = 0;
    m->path_nul = 0;
    return MODLIST_MORE;
}

static enum modlist_step on_part(struct modlist *m, const trace_event_t *ev, unsigned part)
{
    struct modlist_entry *e = &m->cur;
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
    m->path_nul |= memchr(b, '\0', count) != NULL; /* said at its END, where the path is whole */
    /* The path's room grows with its parts (one byte for the NUL ahead),
     * within the budget. */
    while (!m->drop && m->path_len + count + 1 > m->path_cap) {
        size_t was = m->path_cap;
        if (!fits(m, was ? was : 64))
            m->drop = 2;
        else if (vec_grow(&m->path, &m->path_cap, m->path_cap, 1, 64) < 0)
            return MODLIST_OOM;
        else
            charge(m, m->path_cap - was);
    }
    if (!m->drop)
        memcpy(m->path + m->path_len, b, count);
    m->path_len += count;
    return MODLIST_MORE;
}

/* The module read becomes the list's next, if it is kept: its path (the
 * room it was read into, charged already) goes with it. */
static enum modlist_step keep_module(struct modlist *m)
{
    size_t room = m->n < m->cap ? 0 : (m->cap ? m->cap : 8) * sizeof *m->v;
    if (!m->drop && (!fits(m, room + (m->path ? 0 : 1))))
        m->drop = 2;
    if (m->drop) {
        m->cut_list += m->drop == 1;
        m->cut_bytes += m->drop == 2;
        return MODLIST_MORE;
    }
    size_t was = m->cap;
    if (vec_grow(&m->v, &m->cap, m->n, sizeof *m->v, 8) < 0)
        return MODLIST_OOM;
    charge(m, (m->cap - was) * sizeof *m->v);
    if (!m->path) {
        if (!(m->path = malloc(1)))
            return MODLIST_OOM;
        charge(m, 1);
    }
    m->path[m->path_len] = '\0';
    m->cur.path = m->path;
    m->path = NULL;
    m->path_cap = 0;
    m->v[m->n++] = m->cur;
    return MODLIST_MORE;
}

static enum modlist_step on_end(struct modlist *m, const trace_event_t *ev)
{
    struct modlist_entry *e = &m->cur;
    if (!m->text_seen || ev->ts != e->id || ev->func != m->path_len)
        return damaged(m, "a module's end does not match its beginning or its path");
    if (m->path_nul)
        return damaged(m, "a module's path holds a NUL byte");
    if (e->gone_at && !ev->call_site)
        return damaged(m, "a closed module's time is missing");
    if (e->gone_at)
        e->gone_at = ev->call_site; /* closed by then */
    m->in_module = 0;
    return keep_module(m);
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
        if (m->in_module || m->begun != m->want)
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
    refund(m);
    m->v = NULL;
    m->n = m->cap = m->begun = m->want = 0;
    return v;
}
