/*
 * symbols_dw.c - names and source lines for addresses with elfutils'
 * libdw, in-process (see symbols.h, symbols_dw_resolve).
 *
 * libdwfl reads the file (any ELF machine and byte order: a cross target's
 * binary needs no binutils of its own) and its DWARF, and names an address
 * as addr2line -f -C does: the innermost function scope holding it, by its
 * linkage name when DWARF has one (C++), else the symbol table's symbol
 * that holds it (C and static functions: a clone keeps its symbol's name,
 * fib.constprop.0, and an inlined C function's address is the function it
 * was inlined into), else the scope's DWARF name.  The symbol table is
 * looked up in a sorted copy (libdwfl's own lookup searches from the start
 * each time: 19 s for 20,000 functions, docs/performance.md).  C++ names
 * are demangled by libstdc++'s __cxa_demangle, loaded when the machine has
 * libstdc++ (a C++ program's host does): else left mangled.
 */
#include "symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef char *(*demangle_fn)(const char *name, char *buf, size_t *len, int *status);

/* __cxa_demangle, or NULL when there is no libstdc++ to take it from. */
static demangle_fn demangler(void)
{
    static int tried;
    static demangle_fn fn;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        void *p = h ? dlsym(h, "__cxa_demangle") : NULL;
        memcpy(&fn, &p, sizeof fn); /* ISO C has no cast from an object pointer to a function's */
    }
    return fn;
}

/* name demangled when it is a C++ one and can be, else a copy; NULL oom. */
static char *demangled(const char *name)
{
    demangle_fn fn = strncmp(name, "_Z", 2) == 0 ? demangler() : NULL;
    int status = -1;
    char *d = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (d && status == 0)
        return d;
    free(d);
    return strdup(name);
}

static const char *string_attr(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute at;
    return dwarf_formstring(dwarf_attr_integrate(die, name, &at));
}

/* Room for one more element of size bytes in *v (n used of *cap).  -1 oom. */
static int room_for_one(void *vp, size_t n, size_t *cap, size_t size)
{
    void **v = vp;
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

/* In a table sorted by address whose elements (size bytes) begin with
 * their Dwarf_Addr lo: how many have lo <= a (the one at the result - 1
 * is the last such). */
static size_t count_lo_upto(const void *v, size_t n, size_t size, Dwarf_Addr a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        Dwarf_Addr at;
        memcpy(&at, (const char *)v + mid * size, sizeof at);
        if (at <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * Every function scope of the module (subprograms and inlined
 * subroutines, with each range they cover), read once and sorted by
 * address: dwarf_getscopes walks a unit from its root for every address,
 * which for a unit of 20,000 functions took a minute.
 */
struct fntab {
    struct fn_entry {
        Dwarf_Addr lo, hi; /* lo first: count_lo_upto */
        const char *linkage; /* demangle this (libdw's string), or NULL */
        const char *name;    /* the DWARF name, or NULL */
        int top;             /* a subprogram not inside another function */
        int inlined;         /* an inlined subroutine */
        Dwarf_Addr entry;    /* where the function begins (its first range may be elsewhere: .cold) */
    } *v;
    size_t n, cap;
    int built;
};
_Static_assert(offsetof(struct fn_entry, lo) == 0, "count_lo_upto reads lo first");

/* The unit is C++: its scopes without a linkage name go by their symbol. */
static int is_cplusplus(Dwarf_Die *cu)
{
    int lang = cu ? dwarf_srclang(cu) : -1;
    return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 || lang == DW_LANG_C_plus_plus_11 ||
           lang == DW_LANG_C_plus_plus_14;
}

static int fn_order(const void *pa, const void *pb)
{
    const struct fn_entry *x = pa, *y = pb;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi > y->hi ? -1 : x->hi < y->hi; /* the outer first: inner ones are found first from the right */
}

static int fn_add(struct fntab *t, Dwarf_Die *die, int top, int inlined)
{
    Dwarf_Addr base, lo, hi;
    const char *linkage = string_attr(die, DW_AT_linkage_name);
    if (!linkage)
        linkage = string_attr(die, DW_AT_MIPS_linkage_name);
    const char *name = string_attr(die, DW_AT_name);
    Dwarf_Addr entry = 0;
    if (dwarf_entrypc(die, &entry) != 0)
        entry = 0;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (room_for_one(&t->v, t->n, &t->cap, sizeof *t->v) < 0)
            return -1;
        t->v[t->n++] = (struct fn_entry){lo, hi, linkage, name, top, inlined, entry};
    }
    return 0;
}

/* die's children, and theirs, into t; in_fn: inside a function. -1 oom. */
static int fn_walk(struct fntab *t, Dwarf_Die *die, int in_fn, int depth)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(die, &child) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&child), fn = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
        if (fn && fn_add(t, &child, tag == DW_TAG_subprogram && !in_fn, tag == DW_TAG_inlined_subroutine) < 0)
            return -1;
        if (fn_walk(t, &child, in_fn || fn, depth + 1) < 0)
            return -1;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static int fntab_build(Dwfl_Module *mod, struct fntab *t)
{
    Dwarf_Addr b;
    t->built = 1;
    for (Dwarf_Die *cu = dwfl_module_nextcu(mod, NULL, &b); cu; cu = dwfl_module_nextcu(mod, cu, &b))
        if (fn_walk(t, cu, 0, 0) < 0)
            return -1;
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, fn_order);
    return 0;
}

/* The innermost function scope holding a (a file address), or NULL. */
static const struct fn_entry *fn_at(const struct fntab *t, Dwarf_Addr a)
{
    size_t lo = count_lo_upto(t->v, t->n, sizeof *t->v, a);
    for (size_t i = lo, steps = 0; i-- > 0 && steps < 4096; steps++) {
        if (a >= t->v[i].lo && a < t->v[i].hi)
            return &t->v[i];
        if (t->v[i].top)
            break; /* functions do not nest: nothing further left holds a */
    }
    return NULL;
}

struct symtab {
    struct sym_entry {
        GElf_Addr lo, hi; /* lo first: count_lo_upto */
        const char *name;
    } *v;
    size_t n;
    int built;
};
_Static_assert(offsetof(struct sym_entry, lo) == 0, "count_lo_upto reads lo first");

static int by_lo(const void *pa, const void *pb)
{
    const struct sym_entry *x = pa, *y = pb;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The module's function symbols, sorted (built on first need).  -1 oom. */
static int symtab_build(Dwfl_Module *mod, struct symtab *t)
{
    int n = dwfl_module_getsymtab(mod);
    t->built = 1;
    if (n <= 0)
        return 0;
    if (!(t->v = malloc((size_t)n * sizeof *t->v)))
        return -1;
    for (int i = 0; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (name && *name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF)
            t->v[t->n++] = (struct sym_entry){addr, addr + (sym.st_size ? sym.st_size : 1), name};
    }
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, by_lo);
    return 0;
}

static const struct sym_entry *symtab_at(const struct symtab *t, GElf_Addr a)
{
    size_t lo = count_lo_upto(t->v, t->n, sizeof *t->v, a);
    for (size_t i = lo, steps = 0; i-- > 0 && steps < 64; steps++) /* past symbols inside another */
        if (a < t->v[i].hi)
            return &t->v[i];
    /* in the alignment padding after one: addr2line names it too */
    return lo && a - t->v[lo - 1].hi < 64 ? &t->v[lo - 1] : NULL;
}

static const Dwfl_Callbacks offline = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* Every unit's address ranges, sorted, for files without .debug_aranges
 * (clang writes none unless asked, and libdw 0.188 looks only there). */
struct cuspans {
    struct cuspan {
        Dwarf_Addr lo, hi; /* lo first: count_lo_upto */
        Dwarf_Die *cu; /* libdwfl's, valid until dwfl_end */
    } *v;
    size_t n, cap;
    int built;
};
_Static_assert(offsetof(struct cuspan, lo) == 0, "count_lo_upto reads lo first");

static int by_span(const void *pa, const void *pb)
{
    const struct cuspan *x = pa, *y = pb;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* -1 oom. */
static int cuspans_build(Dwfl_Module *mod, struct cuspans *c)
{
    Dwarf_Addr b, base, lo, hi;
    c->built = 1;
    for (Dwarf_Die *cu = dwfl_module_nextcu(mod, NULL, &b); cu; cu = dwfl_module_nextcu(mod, cu, &b)) {
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
            if (room_for_one(&c->v, c->n, &c->cap, sizeof *c->v) < 0)
                return -1;
            c->v[c->n++] = (struct cuspan){lo, hi, cu};
        }
    }
    if (c->n)
        qsort(c->v, c->n, sizeof *c->v, by_span);
    return 0;
}

/* The compilation unit holding a (a file address): by .debug_aranges, else
 * by the units' own ranges.  NULL: none (or out of memory: *oom). */
static Dwarf_Die *cu_of(Dwfl_Module *mod, Dwarf_Addr a, Dwarf_Addr bias, struct cuspans *c, int *oom)
{
    Dwarf_Addr b;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, a + bias, &b);
    if (cu)
        return cu;
    if (!c->built && cuspans_build(mod, c) < 0) {
        *oom = 1;
        return NULL;
    }
    size_t lo = count_lo_upto(c->v, c->n, sizeof *c->v, a);
    for (size_t i = lo; i-- > 0 && i + 8 >= lo;) /* ranges may nest or overlap a little */
        if (a >= c->v[i].lo && a < c->v[i].hi)
            return c->v[i].cu;
    return NULL;
}

/* One address (a file address; bias makes it libdwfl's) into *out.  -1 oom. */
/* What one file's lookups build once. */
struct tables {
    struct symtab syms;
    struct cuspans cus;
    struct fntab fns;
};

/*
 * One address (a file address; bias makes it libdwfl's) into *out, named
 * as addr2line -f -C does: the innermost function scope's linkage name
 * when DWARF has one; else, for a function (not inlined code) of a C++
 * unit, the symbol holding the address (a static function's DWARF name
 * lacks namespace and parameters); else the scope's DWARF name (C: a clone such as fib.constprop.0 is fib,
 * inlined code, a .cold part); else the symbol holding the address, or in
 * the padding after it.  -1 oom.
 */
static int resolve_one(Dwfl_Module *mod, GElf_Addr a, GElf_Addr bias, struct tables *tb, struct symbol *out)
{
    int oom = 0;
    Dwarf_Die *cu = cu_of(mod, a, bias, &tb->cus, &oom);
    if (oom || (!tb->fns.built && fntab_build(mod, &tb->fns) < 0))
        return -1;
    const struct fn_entry *f = fn_at(&tb->fns, a);
    const char *s = f ? f->linkage : NULL;
    if (!s) {
        if (!tb->syms.built && symtab_build(mod, &tb->syms) < 0)
            return -1;
        const struct sym_entry *sym = symtab_at(&tb->syms, a + bias);
        if (f && f->name && (!sym || f->inlined || !is_cplusplus(cu)))
            s = f->name; /* C: clones too (fib.constprop.0 is fib), inlined code, a .cold part */
        else
            s = sym ? sym->name : NULL; /* C++ without a linkage name (static): the symbol's full name */
    }
    if (s && !(out->name = demangled(s)))
        return -1;
    Dwarf_Line *line = cu ? dwarf_getsrc_die(cu, a) : NULL;
    int lineno = 0;
    const char *src = line && dwarf_lineno(line, &lineno) == 0 ? dwarf_linesrc(line, NULL, NULL) : NULL;
    if (src && lineno > 0) {
        /* as addr2line prints it: a relative name joined to the unit's directory */
        const char *dir = src[0] != '/' ? string_attr(cu, DW_AT_comp_dir) : NULL;
        size_t len = strlen(src) + (dir ? strlen(dir) + 1 : 0) + 1;
        if (!(out->file = malloc(len)))
            return -1;
        snprintf(out->file, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", src);
        out->line = (unsigned long)lineno;
    }
    return 0;
}

int symbols_dw_resolve(const char *file, const uint64_t *addrs, size_t n, struct symbol *out, char *msg,
                       size_t msglen)
{
    if (!n)
        return 0;
    memset(out, 0, n * sizeof *out);
    Dwfl *dwfl = dwfl_begin(&offline);
    Dwfl_Module *mod = dwfl ? dwfl_report_offline(dwfl, "", file, -1) : NULL;
    GElf_Addr bias = 0;
    if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0 || !dwfl_module_getelf(mod, &bias)) {
        snprintf(msg, msglen, "%s: %s", file, access(file, R_OK) ? strerror(errno) : dwfl_errmsg(-1));
        dwfl_end(dwfl);
        return -1;
    }
    struct tables tb;
    memset(&tb, 0, sizeof tb);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (resolve_one(mod, addrs[i], bias, &tb, &out[i]) < 0) {
            snprintf(msg, msglen, "out of memory");
            rc = -1;
        }
    free(tb.syms.v);
    free(tb.cus.v);
    free(tb.fns.v);
    dwfl_end(dwfl);
    if (rc)
        symbols_free(out, n);
    return rc;
}

int symbols_dw_has_functions(const char *file)
{
    Dwfl *dwfl = dwfl_begin(&offline);
    Dwfl_Module *mod = dwfl ? dwfl_report_offline(dwfl, "", file, -1) : NULL;
    GElf_Addr bias = 0;
    Elf *elf = NULL;
    int found = -1;
    if (mod && dwfl_report_end(dwfl, NULL, NULL) == 0 && (elf = dwfl_module_getelf(mod, &bias))) {
        /* a .symtab of its own: .dynsym alone (what strip leaves) names only exports */
        found = 0;
        for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !found; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            found = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
        }
        /* or DWARF from a debug file libdwfl found for it */
        Dwarf_Addr b2;
        found = found || dwfl_module_getdwarf(mod, &b2) != NULL;
    }
    dwfl_end(dwfl);
    return found;
}
