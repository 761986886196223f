/*
 * out_callers.h - `--format callers`: the hottest call sites.
 *
 *   events=... (the header line and notes, as in the text report)
 *
 *        calls      incl_ms      self_ms  call site -> function
 *         4800      131.220       17.020  do_iteration (workload.c:131) -> fib (workload.c:50)
 *
 * One row per (call site, callee), most inclusive time first; --top N
 * rows (default 20, 0 all).  The call site is the line of the call in the
 * caller (resolved at the return address minus one, so that it names the
 * call, not the line after it); the caller is the function that line is
 * in.  A site addr2line cannot name (e.g. in a library) is shown in hex.
 */
#ifndef CALLSIGHT_OUT_CALLERS_H
#define CALLSIGHT_OUT_CALLERS_H

#include <stdio.h>

#include "out.h"

/* 0 ok, -1 out of memory. */
int out_callers_write(FILE *out, const struct out_view *v);

#endif
