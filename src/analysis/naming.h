/*
 * naming.h - names for the analysis' functions and call sites, from the
 * binaries that ran: the one place that says which file names which
 * binary, and looks the addresses up there, for analyze and top alike.
 *
 * A program is named from its --exe (the one with its build-id, else the
 * first); a shared object from the --exe with its build-id, else (when the
 * caller has a modfile) from its own file, found by path and build-id
 * (read/modfile.h).  A program whose build-id no --exe has is named from
 * an --exe only when the caller trusts it (analyze has checked the
 * build-ids, or was told --force); else it stays unnamed (top).
 * Addresses are looked up in one run per distinct file, through addr2line
 * (read/symbols.h) or libdw.
 */
#ifndef CALLSIGHT_NAMING_H
#define CALLSIGHT_NAMING_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "read/addrindex.h"
#include "read/modfile.h"
#include "read/symbols.h"

struct naming {
    const struct analysis_exe *exes; /* --exe, in the order given */
    size_t nexes;
    const char *addr2line;  /* this tool, or NULL: libdw */
    struct modfile *files;  /* shared objects' own files; NULL: only an --exe names them */
    int trust_exe;          /* a program no --exe's build-id matches is named from its --exe all the same */
};

/* The file binary bin of a is named from, or NULL when none names it (why
 * says so, if why).  *owned is what to free; *oom set when memory ran out. */
const char *naming_file(const struct naming *n, const struct analysis *a, uint32_t bin, char **owned, char *why,
                        size_t len, int *oom);

/* The names of count addresses of file, into out[] (the caller frees them
 * with symbols_free).  0, or -1 with why in msg. */
int naming_lookup(const struct naming *n, const char *file, const uint64_t *addrs, size_t count,
                  struct symbol *out, char *msg, size_t msglen);

/* analyze: names for every function of a, then every call site in sites
 * (NULL: none), into *syms (a->funcs.n + sites->n of them, the caller
 * frees them).  A module nothing names gets "libfoo.so+0x1234" names and a
 * note in a saying why; a function of a named module the file does not
 * name, the same; the "[other]" row its word.  0; -1 out of memory; 1
 * when a lookup failed (msg says why). */
int naming_resolve(const struct naming *n, struct analysis *a, const struct addrindex *sites,
                   struct symbol **syms, size_t *nsyms, char *msg, size_t msglen);

#endif
