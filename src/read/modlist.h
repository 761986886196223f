/*
 * modlist.h - a thread's list of loaded modules, put back together from its
 * TRACE_KIND_MODULE records (trace.h, "loaded modules") and checked.
 *
 * The analyzer feeds every module record of a thread, in order, and says
 * when a record of another kind comes between them; a list that is whole
 * and in order comes out as an array of modules, anything else as damaged
 * with a one-line reason.  Nothing in the records is trusted: counts and
 * lengths are bounded before anything is allocated for them.
 */
#ifndef CALLSIGHT_MODLIST_H
#define CALLSIGHT_MODLIST_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define MODLIST_MAX 4096u /* modules in one list; more is a damaged list */

struct modlist_entry {
    uint64_t id, bias, lo, hi;  /* number, load bias, executable extent [lo, hi) */
    unsigned char build_id[TRACE_MODULE_BYTES];
    unsigned build_id_len;      /* 0: none recorded */
    int main;                   /* the program itself */
    char *path;                 /* as the loader opened it, "" if none (malloc'ed) */
};

struct modlist {
    struct modlist_entry *v;    /* the list being read (and, once whole, the result) */
    size_t n, want, cap;        /* modules begun, announced by LIST, room in v */
    int reading;                /* between LIST and LIST_END */
    int in_module;              /* between BEGIN and END */
    int text_seen;
    int skipping;               /* after a damaged list: its rest, up to the next LIST */
    uint64_t number;            /* the process's list number */
    size_t path_len, path_cap;  /* bytes of the current module's path so far, room */
    char *path;                 /* the path being read (grown as its parts come) */
    uint64_t left_out;          /* LIST_END: modules the runtime could not list */
    char why[128];              /* MODLIST_DAMAGED: the reason */
};

enum modlist_step {
    MODLIST_MORE,    /* part of a list: feed the next record */
    MODLIST_DONE,    /* the list is whole: take it with modlist_take */
    MODLIST_DAMAGED, /* not a list: why says what, once; the next LIST starts over */
    MODLIST_OOM
};

void modlist_init(struct modlist *m);
void modlist_free(struct modlist *m);
/* One TRACE_KIND_MODULE record. */
enum modlist_step modlist_feed(struct modlist *m, const trace_event_t *ev);
/* A record of another kind came: a list being read is damaged (returns
 * MODLIST_DAMAGED then, else MODLIST_MORE). */
enum modlist_step modlist_interrupt(struct modlist *m);
/* The whole list's modules (*n of them), now the caller's to free with
 * modlist_entries_free; m is ready for the next list. */
struct modlist_entry *modlist_take(struct modlist *m, size_t *n);
void modlist_entries_free(struct modlist_entry *v, size_t n);

#endif
