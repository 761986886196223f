/*
 * trace.c - callsight's runtime, compiled into the traced program.
 *
 * `cc -finstrument-functions` makes every instrumented function call
 * __cyg_profile_func_enter on entry and __cyg_profile_func_exit on return.
 * This file implements the two hooks and everything around them:
 *
 *   hook:  stamp the clock, append a 32-byte event to this thread's buffer
 *          (thread-local: no lock, no allocation, no I/O)
 *   flush: when the buffer is full, when its batch is TRACE_FLUSH_MS old
 *          (judged at a hook, by the clock it reads anyway), when the
 *          thread exits, at process exit
 *     file mode    append to TRACE_DIR/trace.<pid>.<tid>.<seq>.bin, one
 *                  series of segments per thread, within a per-process budget
 *     stream mode  (TRACE_SHM=/name) copy the batch into a POSIX shared-memory
 *                  ring that trace_stream (stream/) drains off the device;
 *                  the process holds a shared flock on the ring while it
 *                  lives (trace_stream's proof that it did not die), and a
 *                  ring lock left by a dead holder is taken over
 *
 * The layouts are fixed by trace.h (event, file header, marker codes) and
 * trace_shm.h (ring header).  Everything is configured once, in a
 * constructor, from the environment; the program calls nothing.
 *
 * The rules kept here (DEVELOPERS.md): the traced program never waits on us
 * for long; when a sink cannot keep up we drop and count, in-band, so loss is
 * never silent; every wait and every buffer is bounded.
 *
 * Build with one cc line, C11, libc and pthread only, and never with
 * -finstrument-functions: the hooks must not trace themselves.
 *
 * How it is assembled: in the source tree (runtime/) this file is the list
 * of the runtime's parts, each a file by concern, included in order after
 * the one private header (trace_internal.h: tunables, process-wide and
 * per-thread state), so that the runtime is one translation unit: every
 * function static, the hooks' steps inlined into the hooks.  It compiles
 * as it is (cc -c runtime/trace.c).  What users copy is the same unit
 * flattened by tools/flatten.c into one file (build/dist/trace.c: the
 * parts in place of their #include lines), which needs only trace.h
 * beside it.
 */
#include "trace_internal.h"

#include "trace_messages.c"    /* say(): one line on stderr */
#include "trace_clock.c"       /* ticks or CLOCK_MONOTONIC */
#include "trace_thread.c"      /* a thread's buffer, its record, its head markers */
#include "trace_file.c"        /* file mode, its budget, TRACE_FULL=wrap, the stop */
#include "trace_ring.c"        /* stream mode: the shm ring's writer and attach */
#include "trace_flush.c"       /* tl_flush: a batch to its sink */
#include "trace_summary.c"     /* TRACE_MODE=summary's tables and snapshots */
#include "trace_trigger.c"     /* TRACE_TRIGGER */
#include "trace_control.c"     /* TRACE_CONTROL: live control's block, applied at the hooks */
#include "trace_hooks.c"       /* the two hooks and their paths */
#include "trace_config.c"      /* the environment, read once */
#include "trace_modules.c"     /* the loaded-modules list */
#include "trace_lifecycle.c"   /* start, thread exit, fork, exit */
