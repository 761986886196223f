/*
 * hook_reach.h - whether a binary's hooks call the hooks again: its runtime
 * was compiled with -finstrument-functions.
 *
 * A runtime whose own functions carry hooks (an old trace.c, from before
 * every function of it was marked no_instrument_function, built in the
 * one cc line with the program) recurses at the first hook and crashes
 * with TRACE_ENABLE=1.  The check reads the binary's disassembly (objdump
 * -d, one run, read as it comes): the functions that __cyg_profile_func_enter
 * and __cyg_profile_func_exit call, directly or through others (calls and
 * tail jumps to a symbol), and whether one of them, or a hook itself, calls
 * a hook.  Calls through pointers are not followed: the runtime makes none
 * on a hook's way.
 */
#ifndef CALLSIGHT_HOOK_REACH_H
#define CALLSIGHT_HOOK_REACH_H

#include <stddef.h>

/*
 * Run objdump on exe.  1: the hooks reach a hook (culprit: the first
 * function found calling one, *ncalling how many do); 0: they do not (or
 * the binary has no hooks); -1: objdump could not tell (msg says why).
 */
int hook_reach_check(const char *objdump, const char *exe, char *culprit, size_t len, size_t *ncalling,
                     char *msg, size_t msglen);
/* The objdump beside an addr2line (aarch64-linux-gnu-addr2line ->
 * aarch64-linux-gnu-objdump), else objdump. */
void hook_reach_objdump_for(const char *addr2line, char *buf, size_t len);

#endif
