/*
 * modlist.h - a thread's list of loaded modules, put back together from its
 * TRACE_KIND_MODULE records (trace.h, "loaded modules") and checked.
 *
 * The analyzer feeds every module record of a thread, in order, and says
 * when a record of another kind comes between them; a list that is whole
 * and in order comes out as an array of modules, anything else as damaged
 * with a one-line reason.  Nothing in the records is trusted: counts and
 * lengths are bounded before anything is allocated for them, and what a
 * list keeps is capped (struct modlist_budget): modules beyond a cap are
 * still read and checked, but not kept, and counted.
 */
#ifndef CALLSIGHT_MODLIST_H
#define CALLSIGHT_MODLIST_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#define MODLIST_MAX 4096u /* modules in one list; more is a damaged list */

/* What the lists of every reader that shares it may keep: at most per_list
 * modules of one list (the first ones), and max_bytes over everything the
 * readers hold at once (their modules, paths and arrays) together with
 * whatever the caller charges to it (held).  A reader gives back what it
 * held when its list is damaged or taken. */
struct modlist_budget {
    size_t per_list;
    size_t max_bytes;
    size_t held;
};

struct modlist_entry {
    uint64_t id, bias, lo, hi;  /* number, load bias, executable extent [lo, hi) */
    unsigned char build_id[TRACE_MODULE_BYTES];
    unsigned build_id_len;      /* 0: none recorded */
    int main;                   /* the program itself */
    uint64_t gone_at;           /* closed by then (the records' clock); 0: loaded (trace.h) */
    char *path;                 /* as the loader opened it, "" if none (malloc'ed) */
};

struct modlist {
    struct modlist_budget *budget; /* NULL: every module of a list kept */
    struct modlist_entry *v;    /* the modules kept of the list being read (and, once whole, the result) */
    size_t n, cap;              /* modules kept, room in v */
    size_t begun, want;         /* modules begun, announced by LIST */
    size_t held;                /* bytes this list draws on the budget */
    struct modlist_entry cur;   /* the module being read (its path is path until END) */
    int drop;                   /* ... is not kept: 0 kept, 1 beyond per_list, 2 beyond max_bytes */
    int reading;                /* between LIST and LIST_END */
    int in_module;              /* between BEGIN and END */
    int text_seen;
    int skipping;               /* after a damaged list: its rest, up to the next LIST */
    uint64_t number;            /* the process's list number */
    size_t path_len, path_cap;  /* bytes of the current module's path so far, room */
    int path_nul;               /* ... holds a NUL */
    char *path;                 /* the path being read (grown as its parts come, kept modules only) */
    uint64_t left_out;          /* LIST_END: modules the runtime could not list */
    uint64_t cut_list, cut_bytes; /* MODLIST_DONE: modules not kept, beyond per_list, beyond max_bytes */
    char why[128];              /* MODLIST_DAMAGED: the reason */
};

enum modlist_step {
    MODLIST_MORE,    /* part of a list: feed the next record */
    MODLIST_DONE,    /* the list is whole: take it with modlist_take */
    MODLIST_DAMAGED, /* not a list: why says what, once; the next LIST starts over */
    MODLIST_OOM
};

/* A reader drawing on budget (NULL: none; budget->per_list and max_bytes
 * set by the caller, held 0 before the first reader). */
void modlist_init(struct modlist *m, struct modlist_budget *budget);
void modlist_free(struct modlist *m);
/* One TRACE_KIND_MODULE record. */
enum modlist_step modlist_feed(struct modlist *m, const trace_event_t *ev);
/* A record of another kind came: a list being read is damaged (returns
 * MODLIST_DAMAGED then, else MODLIST_MORE). */
enum modlist_step modlist_interrupt(struct modlist *m);
/* The whole list's modules kept (*n of them, in the list's order), now the
 * caller's to free with modlist_entries_free; what they held is given back
 * to the budget (the caller charges what it keeps of them); m is ready for
 * the next list. */
struct modlist_entry *modlist_take(struct modlist *m, size_t *n);
void modlist_entries_free(struct modlist_entry *v, size_t n);

#endif
