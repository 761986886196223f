/*
 * naming.c - names for functions and call sites (see naming.h): which
 * file names which binary, one lookup per distinct file, and the names of
 * what no file names.
 */
#include "naming.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/elf_buildid.h"

/* One naming_resolve: the names made, functions first, then call sites. */
struct run {
    const struct naming *n;
    struct analysis *a;
    struct symbol *syms;
    size_t nsyms;
};

/* A module no --exe has: named from its own file (read/modfile.h). */
static int from_modfile(const struct naming *n, const struct analysis_bin *b)
{
    return n->nexes && n->files && b->module && !b->exe_matches;
}

const char *naming_file(const struct naming *n, const struct analysis *a, uint32_t bin, char **owned, char *why,
                        size_t len, int *oom)
{
    *owned = NULL;
    if (!n->nexes || bin == FUNCSTATS_OTHER_BIN)
        return NULL;
    if (bin >= a->nbins) /* a trace from before binaries were recorded: its program's, on trust */
        return n->exes[0].path;
    const struct analysis_bin *b = &a->bins[bin];
    const char *exe = n->exes[b->exe < n->nexes ? b->exe : 0].path;
    if (b->exe_matches || (!b->module && (!b->have_build_id || n->trust_exe)))
        return exe;
    if (from_modfile(n, b)) {
        int rc = modfile_find(n->files, b->path ? b->path : "", b->id_bytes, b->id_len, owned, why, len);
        *oom |= rc == -2;
        return rc == 0 ? *owned : NULL;
    }
    if (why && len)
        snprintf(why, len, "no --exe has its build-id");
    return NULL;
}

int naming_lookup(const struct naming *n, const char *file, const uint64_t *addrs, size_t count,
                  struct symbol *out, char *msg, size_t msglen)
{
    return n->addr2line ? symbols_resolve(n->addr2line, file, addrs, count, out, msg, msglen)
                        : symbols_dw_resolve(file, addrs, count, out, msg, msglen);
}

/* Names for the functions and call sites of one file, from one addr2line
 * run: file_of[] says which of r->syms it names.  0 ok, -1 (msg set). */
static int resolve_file(struct run *r, const char *file, const uint64_t *addrs, const char *const *file_of,
                        char *msg, size_t msglen)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nsyms; i++)
        n += file_of[i] == file;
    if (!n)
        return 0;
    uint64_t *mine = malloc(n * sizeof *mine);
    struct symbol *syms = calloc(n, sizeof *syms);
    int rc = -1;
    if (!mine || !syms)
        snprintf(msg, msglen, "out of memory");
    else {
        for (size_t i = 0, k = 0; i < r->nsyms; i++)
            if (file_of[i] == file)
                mine[k++] = addrs[i];
        rc = naming_lookup(r->n, file, mine, n, syms, msg, msglen);
    }
    for (size_t i = 0, k = 0; rc == 0 && i < r->nsyms; i++)
        if (file_of[i] == file)
            r->syms[i] = syms[k++]; /* the strings move over */
    free(mine);
    free(syms);
    return rc;
}

/* A module nothing names: its functions are "libfoo.so+0x1234", and a
 * note says why, once.  0 ok, -1 out of memory. */
static int name_unnamed(struct run *r, uint32_t bin, const char *why, const uint64_t *addrs, const uint32_t *bin_of,
                        size_t nfuncs)
{
    const struct analysis_bin *b = &r->a->bins[bin];
    const char *path = b->path ? b->path : "?", *base = strrchr(path, '/');
    char hex[33];
    size_t n = 0;
    base = base ? base + 1 : path;
    for (size_t i = 0; i < r->nsyms; i++) {
        if (bin_of[i] != bin)
            continue;
        char name[320];
        snprintf(name, sizeof name, "%s+0x%llx", base, (unsigned long long)addrs[i] + (i >= nfuncs));
        if (!(r->syms[i].name = strdup(name)))
            return -1;
        n += i < nfuncs;
    }
    if (!n)
        return 0;
    elf_buildid_hex(b->build_id, hex);
    analysis_note(r->a, r->a->procs[b->proc].src, "module %s%s%.16s%s is not named (%s): its %zu function%s shown "
                  "as %s+offset", path, b->have_build_id ? " (build-id " : "", b->have_build_id ? hex : "",
                  b->have_build_id ? "...)" : "", why, n, n == 1 ? " is" : "s are", base);
    return 0;
}

/* The files of the modules with something to name (wanted[b]) asked of
 * debuginfod all at once, before naming_file asks for each; the modules
 * its deadline cut off are counted in one note, on the first one's
 * source.  0, -1 out of memory. */
static int ask_first(const struct naming *nm, struct analysis *a, char (*wanted)[600])
{
    struct modfile_want *w = calloc(a->nbins ? a->nbins : 1, sizeof *w);
    uint32_t *bin = calloc(a->nbins ? a->nbins : 1, sizeof *bin);
    size_t n = 0, late = 0, first = 0;
    int rc = !w || !bin ? -1 : 0;
    for (size_t b = 0; !rc && b < a->nbins; b++)
        if (wanted[b][0] && from_modfile(nm, &a->bins[b])) {
            const struct analysis_bin *m = &a->bins[b];
            w[n] = (struct modfile_want){m->path ? m->path : "", m->id_bytes, m->id_len, 0};
            bin[n++] = (uint32_t)b;
        }
    if (!rc && modfile_prefetch(nm->files, w, n) < 0)
        rc = -1;
    for (size_t i = n; !rc && i-- > 0;)
        if (w[i].late) {
            late++;
            first = bin[i];
        }
    if (late)
        analysis_note(a, a->procs[a->bins[first].proc].src, "debuginfod gave no answer within the %g s deadline "
                      "for %zu module%s: shown by offset (--debuginfod-deadline gives it longer; "
                      "DEBUGINFOD_TIMEOUT bounds each request)",
                      (double)modfile_deadline_ms(nm->files) / 1000, late, late == 1 ? "" : "s");
    free(w);
    free(bin);
    return rc;
}

/* Names for every function and call site: one addr2line run per file that
 * names any.  A call site is looked up one byte before its return
 * address, inside the call. */
int naming_resolve(const struct naming *nm, struct analysis *a, const struct addrindex *sites,
                   struct symbol **out, size_t *nout, char *msg, size_t msglen)
{
    struct run run = {nm, a, NULL, 0}, *r = &run;
    const struct funcstats *fs = &a->funcs;
    size_t nsites = sites ? sites->n : 0, nbins = a->nbins ? a->nbins : 1;
    msg[0] = 0;
    r->nsyms = fs->n + nsites;
    size_t cells = r->nsyms ? r->nsyms : 1;
    uint64_t *addrs = malloc(cells * sizeof *addrs);
    uint32_t *bin_of = malloc(cells * sizeof *bin_of);
    const char **file_of = calloc(cells, sizeof *file_of), **files = calloc(nbins, sizeof *files);
    char **owned = calloc(nbins, sizeof *owned);
    char (*why)[600] = calloc(nbins, sizeof *why);
    r->syms = calloc(cells, sizeof *r->syms);
    *out = r->syms; /* the caller frees what was made, whatever happens */
    *nout = r->syms ? r->nsyms : 0;
    int rc = !addrs || !bin_of || !file_of || !files || !owned || !why || !r->syms, oom = 0;
    for (size_t i = 0; !rc && i < fs->n; i++) {
        addrs[i] = fs->v[i].addr;
        bin_of[i] = fs->v[i].bin;
    }
    for (size_t i = 0; !rc && i < nsites; i++) {
        addrs[fs->n + i] = sites->addr[i] ? sites->addr[i] - 1 : 0;
        bin_of[fs->n + i] = sites->bin[i];
    }
    for (size_t i = 0; !rc && i < r->nsyms; i++) /* only binaries with something to name are looked for */
        if (bin_of[i] < a->nbins)
            why[bin_of[i]][0] = 1;
    if (!rc && nm->files && ask_first(nm, a, why) < 0)
        rc = -1;
    for (size_t b = 0; !rc && b < a->nbins; b++)
        files[b] = why[b][0] ? naming_file(nm, a, (uint32_t)b, &owned[b], why[b], sizeof why[b], &oom) : NULL;
    rc |= oom ? -1 : 0;
    /* one run per distinct file: the first binary named from it stands for all */
    for (size_t i = 0; !rc && i < r->nsyms; i++) {
        const char *f = bin_of[i] < a->nbins ? files[bin_of[i]] : nm->exes[0].path;
        for (size_t b = 0; f && b < a->nbins; b++)
            if (files[b] && !strcmp(files[b], f)) {
                f = files[b];
                break;
            }
        file_of[i] = f;
    }
    if (!rc && fs->other != UINT32_MAX)
        file_of[fs->other] = NULL; /* the row of functions beyond --max-funcs: no address */
    for (size_t b = 0; !rc && b < a->nbins; b++) {
        int first = files[b] != NULL;
        for (size_t c = 0; first && c < b; c++)
            first = !files[c] || strcmp(files[c], files[b]) != 0;
        if (first && resolve_file(r, files[b], addrs, file_of, msg, msglen) < 0) {
            if (!a->bins[b].module) {
                rc = 1; /* the program's own --exe: the report cannot stand without it */
                break;
            }
            /* A module's file that passed for ELF but cannot be read as
             * such (a device may name anything): that module, and any that
             * share its file, by offset with a note, the report goes on. */
            const char *bad = files[b];
            for (size_t c = b; c < a->nbins; c++)
                if (files[c] && !strcmp(files[c], bad)) {
                    snprintf(why[c], sizeof why[c], "%s", msg);
                    files[c] = NULL;
                }
            msg[0] = 0;
        }
        if (!rc && !files[b] && name_unnamed(r, (uint32_t)b, why[b], addrs, bin_of, fs->n) < 0)
            rc = -1;
    }
    if (!rc && fs->other != UINT32_MAX && !(r->syms[fs->other].name = strdup("[other]")))
        rc = -1;
    for (size_t i = 0; !rc && i < r->nsyms; i++) { /* the module beside a shared object's names */
        const struct analysis_bin *b = bin_of[i] < a->nbins ? &a->bins[bin_of[i]] : NULL;
        if (!b || !b->module || !files[bin_of[i]])
            continue;
        const char *path = b->path ? b->path : "?", *slash = strrchr(path, '/');
        char name[320];
        snprintf(name, sizeof name, "%s+0x%llx", slash ? slash + 1 : path, (unsigned long long)addrs[i] + (i >= fs->n));
        if (r->syms[i].name ? !(r->syms[i].module = strdup(slash ? slash + 1 : path))
                            : !(r->syms[i].name = strdup(name))) /* its file does not name it: by offset */
            rc = -1;
    }
    if (!a->nbins && !rc && resolve_file(r, nm->exes[0].path, addrs, file_of, msg, msglen) < 0)
        rc = 1;
    if (rc > 0 && !msg[0])
        rc = -1;
    free(addrs);
    free(bin_of);
    free(file_of);
    free(files);
    for (size_t b = 0; owned && b < a->nbins; b++)
        free(owned[b]);
    free(owned);
    free(why);
    return rc;
}

