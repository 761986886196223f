/*
 * trace_hooks.c - the two hooks the compiler calls, and what each hook does.
 *
 * __cyg_profile_func_enter and __cyg_profile_func_exit (the last lines)
 * test the one capture flag and inline tl_hook, which closes the thread's
 * gate and takes one of the paths chosen at start: events with the tick
 * counter, summaries, or tl_step for everything else.  A new thread, a
 * hook inside a hook and a thread TRACE_THREADS leaves out go through
 * tl_hook_slow.  The hot paths are TR_HOT_INLINE all the way down (see
 * tl_record_at, sum_enter, sum_exit), so a hook calls nothing unless a
 * flush or a snapshot is due.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* A summary-mode hook, its clock read: the table, and a snapshot when due.
 * always_inline: tl_hook's summary path is then one function per hook,
 * the exit's lookup and adds included, with no call unless one is due. */
TR_NOINSTR static TR_HOT_INLINE void sum_step(tl_state_t *t, uintptr_t func, uint8_t kind, uint64_t now)
{
    if (kind == TRACE_KIND_ENTER ? sum_enter(t, func, now) : sum_exit(t, func, now))
        sum_snapshot(t, 0);
}

/* Every hook the inlined paths of tl_hook do not take: the mono clock,
 * TRACE_TRIGGER, TRACE_MODE=both, a new thread's first.  Out of line, so
 * that its registers and checks are not paid for on those paths.  Live
 * control's decision comes before it (tl_hook, tl_step_ctl). */
TR_NOINSTR static __attribute__((noinline)) void tl_step(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind,
                                                         int path)
{
    /* the mode: TRACE_MODE's (1 summary, 2 both), or the one live control chose */
    int mode = path == HOOK_STEP ? g_summary : path == HOOK_SUMMARY || path == HOOK_STEP_SUM;
    if (mode) {
        if (TR_UNLIKELY(!t->sum))
            return;
        uint64_t now = clock_now();
        sum_step(t, func, kind, now);
        if (mode == 1)
            return;
        uint32_t n = t->n; /* TRACE_MODE=both: the event gets the summary's clock reading */
        int full = tl_record(t, func, site, kind);
        if (t->n != n)
            t->buf[TL_HEAD + t->n - 1].ts = now;
        if (full)
            tl_flush(t, 0);
        return;
    }
    int full = tl_record(t, func, site, kind);
    if (TR_UNLIKELY(t->trig_func != 0)) {
        if (kind == TRACE_KIND_ENTER && t->depth > 0) {
            t->trig_stack[(uint32_t)(t->depth - 1) % TRIG_STACK] = func;
            t->trig_depth[(uint32_t)(t->depth - 1) % TRIG_STACK] = t->depth - 1;
        }
        if (func == t->trig_func && trig_step(t, kind))
            return;
    }
    if (full)
        tl_flush(t, 0);
}

/* tl_step behind live control, for the hooks that do not take tl_hook's
 * own paths (a thread's first, one TRACE_THREADS has just selected). */
TR_NOINSTR static void tl_step_ctl(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    int path = g_ctl ? ctl_path(t, func, kind) : HOOK_STEP;
    if (path >= 0)
        tl_step(t, func, site, kind, path);
}

/* TRACE_THREADS: does this thread's name match one of the globs? */
TR_NOINSTR static int tl_name_selected(void)
{
    return tl_name_in(g_threads);
}

/* A thread TRACE_THREADS does not select (yet): its hooks only keep its
 * depth, and now and then look at its name, every hook at first (threads
 * are named as they start) and then ever less often.  Once the name
 * matches, the thread is traced from this hook on; the frames open now
 * are inherited, as across fork: their exits are not recorded, so no exit
 * is left unmatched.  Once traced, always traced.  A signal handler's
 * hooks in here come in whole pairs and leave the depth as it was. */
TR_NOINSTR static TR_COLD void tl_hook_ignored(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    int32_t depth = t->ig_depth;
    if (++t->ig_hooks >= t->ig_next) {
        if (t->ig_hooks >= IGNORED_EAGER && t->ig_gap < IGNORED_GAP_MAX)
            t->ig_gap *= 2;
        t->ig_next = t->ig_hooks + t->ig_gap;
        atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (tl_name_selected()) {
            t->inherited += depth > 0 ? (uint32_t)depth : 0;
            t->depth = t->batch_depth = 0;
            atomic_store_explicit(&t->reentered, 0, memory_order_relaxed);
            tl_step_ctl(t, func, site, kind);
            atomic_signal_fence(memory_order_seq_cst);
            atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
            return;
        }
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&t->gate, TL_IGNORED, memory_order_relaxed);
    }
    depth += kind == TRACE_KIND_ENTER ? 1 : -1;
    t->ig_depth = depth > 0 ? depth : 0;
}

/* Gate closed: a new thread (start it), a hook inside a hook (drop and
 * count), a thread TRACE_THREADS does not select (yet), or a thread that
 * already flushed its exit (ignore). */
TR_NOINSTR static TR_COLD void tl_hook_slow(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    int gate = atomic_load_explicit(&t->gate, memory_order_relaxed);
    if (gate == TL_BUSY)
        atomic_fetch_add_explicit(&t->reentered, 1, memory_order_relaxed);
    if (gate == TL_IGNORED) {
        tl_hook_ignored(t, func, site, kind);
        return;
    }
    if (gate != TL_NEW)
        return;
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    tl_start(t);
    if (g_threads[0] && !tl_name_selected()) {
        t->ig_depth = kind == TRACE_KIND_ENTER;
        t->ig_hooks = 0;
        t->ig_next = t->ig_gap = 1;
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&t->gate, TL_IGNORED, memory_order_relaxed);
        return;
    }
    tl_step_ctl(t, func, site, kind);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
}

/* always_inline: each of the two hooks gets its own copy, its kind a
 * constant, so the enter hook carries no exit code and the reverse. */
TR_NOINSTR static TR_HOT_INLINE void tl_hook(uintptr_t func, uintptr_t site, uint8_t kind)
{
    tl_state_t *t = &tl;
    if (TR_UNLIKELY(atomic_load_explicit(&t->gate, memory_order_relaxed) != TL_OPEN)) {
        tl_hook_slow(t, func, site, kind);
        return;
    }
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    /* signal fences: a handler on this thread sees the gate closed before
     * any buffer write, and open only after the last */
    atomic_signal_fence(memory_order_seq_cst);
    /* The common paths are inlined here, whole: one value for every choice
     * made at start, the counter read directly, and no call (with its
     * saved registers) unless a flush or snapshot is due. */
    int path = g_hook_path;
    if (TR_UNLIKELY(g_ctl != NULL)) /* live control: not recorded (-1), or the call's path */
        path = ctl_path(t, func, kind);
    if (TR_LIKELY(path == HOOK_EVENTS)) {
        if (TR_UNLIKELY(tl_record_at(t, func, site, kind, CLOCK_HAS_TICKS)))
            tl_flush(t, 0);
    } else if (path == HOOK_SUMMARY && TR_LIKELY(t->sum != NULL))
        sum_step(t, func, kind, clock_ticks());
    else if (path >= 0)
        tl_step(t, func, site, kind, path);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->gate, TL_OPEN, memory_order_relaxed);
}

TR_NOINSTR void __cyg_profile_func_enter(void *func, void *call_site)
{
    if (atomic_load_explicit(&g_capture, memory_order_relaxed))
        tl_hook((uintptr_t)func, (uintptr_t)call_site, TRACE_KIND_ENTER);
}

TR_NOINSTR void __cyg_profile_func_exit(void *func, void *call_site)
{
    if (atomic_load_explicit(&g_capture, memory_order_relaxed))
        tl_hook((uintptr_t)func, (uintptr_t)call_site, TRACE_KIND_EXIT);
}

