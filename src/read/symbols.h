/*
 * symbols.h - names and source lines for function addresses, from the traced
 * binary, by one batched addr2line process.
 *
 * All distinct addresses go to a single `addr2line -f -C -e BIN` run: they
 * are written to an unlinked temporary file that becomes its stdin, and its
 * output goes to another, so neither side can block on a full pipe.  Static
 * functions resolve too (addr2line reads debug info and the symbol table).
 * An address addr2line cannot name keeps name == NULL: the caller shows it
 * in hex, never drops it.  --addr2line may name another tool with the same
 * interface (a cross toolchain's copy).
 */
#ifndef CALLSIGHT_SYMBOLS_H
#define CALLSIGHT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct symbol {
    char *name;         /* demangled function name, NULL if unknown */
    char *file;         /* source file as addr2line prints it, NULL if unknown */
    unsigned long line; /* 0 if unknown */
    char *module;       /* the shared object's file name; NULL in a program (set by the caller) */
};

/* 0 when tool (a path, or a name looked up in PATH) is an executable file;
 * else -1 with a one-line reason in msg. */
int symbols_check_tool(const char *tool, char *msg, size_t msglen);
/*
 * Resolve n link-time addresses into out[0..n-1] (zeroed first).  0 ok; -1
 * with a one-line reason in msg when the tool cannot be run or fails (its
 * first line of stderr is quoted).
 */
int symbols_resolve(const char *tool, const char *exe, const uint64_t *addrs, size_t n,
                    struct symbol *out, char *msg, size_t msglen);
/*
 * The same with elfutils' libdw, in-process, for a file of any ELF machine
 * (symbols_dw.c): names as addr2line -f -C gives them, from DWARF scopes,
 * else the symbol table.  0 ok; -1 with a one-line reason in msg when the
 * file cannot be read.
 */
int symbols_dw_resolve(const char *file, const uint64_t *addrs, size_t n, struct symbol *out, char *msg,
                       size_t msglen);
/* 1 when file has a symbol table of its own (.symtab) or DWARF (its own
 * or a debug file's), 0 when it has neither (stripped), -1 when it cannot
 * be read. */
int symbols_dw_has_functions(const char *file);
void symbols_free(struct symbol *syms, size_t n);
/* The nm beside an addr2line ("aarch64-linux-gnu-addr2line" ->
 * "aarch64-linux-gnu-nm"; anything else -> "nm"). */
void symbols_nm_for(const char *addr2line, char *buf, size_t len);
/*
 * The link-time addresses of the functions named `name` in exe (all of
 * them: static functions of that name in several files, compiler clones
 * such as name.constprop.0), from one `nm -C --defined-only` run.  0 and a
 * malloc'ed *addrs of *n addresses (*n == 0, *addrs NULL: no function of
 * that name); -1 with a one-line reason in msg when nm fails.
 */
int symbols_find_function(const char *nm, const char *exe, const char *name, uint64_t **addrs,
                          size_t *n, char *msg, size_t msglen);
/* Does a demangled name match glob as --function and trace.config match
 * names: the whole name, or its qualified name from any "::" component on
 * (template arguments may be left out), each component a shell glob
 * (fnmatch): "insert", "RoutingTable::insert", "fi*", "*::insert"; a
 * component's tail is no match ("able::insert" is not "Table::insert"). */
int symbols_name_matches(const char *name, const char *glob);
/* Parse one pair of addr2line -f output lines into *sym.  0 ok, -1 no memory. */
int symbols_parse(const char *name_line, const char *loc_line, struct symbol *sym);

#endif
