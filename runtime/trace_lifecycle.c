/*
 * trace_lifecycle.c - start, thread exit, fork and process exit.
 *
 * trace_start, a constructor, reads the settings and sets up file or
 * stream mode (trace_setup); a thread's key destructor flushes it at its
 * exit, the fork handler makes the child a traced process of its own, and
 * atexit flushes the exiting thread and leaves the ring.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* The first entry is the program itself: its load bias, and its build-id
 * from a PT_NOTE segment (cold: once, at start). */
TR_NOINSTR static int main_program(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    unsigned char id[16] = {0};
    g_load_bias = (uint64_t)info->dlpi_addr;
    g_have_build_id = build_id_of(info, id, sizeof id) > 0;
    g_build_id[0] = name_bytes((const char *)id);
    g_build_id[1] = name_bytes((const char *)id + 8);
    return 1;
}

/* Cost of the recording path, timed into this thread's (unused) buffer;
 * the best of a few rounds, in ns per hook.  The analyzer may subtract it. */
TR_NOINSTR static uint64_t hook_measure(void)
{
    tl_state_t *t = &tl;
    uint64_t best = UINT64_MAX;
    t->buf = t->own; /* before this thread's first hook (tl_start) */
    for (int round = 0; round < 5; round++) {
        uint64_t start = clock_mono_ns();
        for (uint32_t i = 0; i < HOOK_PAIRS; i++) {
            (void)tl_record(t, 0x1000u, i, TRACE_KIND_ENTER);
            (void)tl_record(t, 0x1000u, i, TRACE_KIND_EXIT);
        }
        uint64_t took = clock_mono_ns() - start;
        best = took < best ? took : best;
        t->n = 0;
    }
    t->depth = 0;
    return (best + HOOK_PAIRS) / (2u * HOOK_PAIRS);
}

/* pthread key destructor: the thread's last flush, ending with THREAD_EXIT
 * so that a later thread reusing the tid starts from an empty stack. */
TR_NOINSTR static void tl_thread_exit(void *arg)
{
    tl_state_t *t = &tl;
    int saved = errno;
    (void)arg;
    if (atomic_load_explicit(&t->gate, memory_order_relaxed) != TL_OPEN)
        return;
    atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (!stopped()) {
        sum_snapshot(t, TRACE_SUMMARY_THREAD_EXIT); /* summary mode: its totals, before its exit marker */
        tl_push_mark(t, clock_now(), TRACE_MARK_THREAD_EXIT, 0);
        wrap_note(t);
        tl_flush(t, 1);
    }
    file_close(t);
    sum_free(t);
    file_buf_free(t);
    atomic_store_explicit(&t->gate, TL_DEAD, memory_order_relaxed);
    errno = saved;
}

/* The child of fork is a new traced process with one thread: new pid, new
 * files, fresh budget; the parent's buffered events are the parent's to
 * write; frames open at the fork are inherited, their exits not recorded. */
TR_NOINSTR static void trace_fork_child(void)
{
    tl_state_t *t = &tl;
    if (!g_started)
        return;
    g_pid = (uint32_t)getpid();
    atomic_store_explicit(&g_budget_used, 0, memory_order_relaxed);
    int budget = STOP_BUDGET; /* the budget is per process: start again */
    if (atomic_compare_exchange_strong(&g_stop, &budget, STOP_NONE))
        atomic_store_explicit(&g_capture, 1, memory_order_relaxed);
    if (t->has_fd)
        close(t->fd);
    t->has_fd = 0;
    t->seq = 0;
    t->seg_used = 0;
    wrap_fork_child();
    t->n = t->nmarks = t->ntail = 0;
    t->flush_at = tl_batch(t);
    t->flush_by = tl_flush_deadline(clock_now());
    t->lost = t->lost_wrap = 0;
    memset(t->name, 0, sizeof t->name); /* the child's files need it again */
    t->mod_list = 0;                     /* and its module list */
    atomic_flag_clear(&g_mod_busy);      /* another thread of the parent may have had it */
    atomic_store_explicit(&t->reentered, 0, memory_order_relaxed);
    t->inherited += t->depth > 0 ? (uint32_t)t->depth : 0;
    t->depth = t->batch_depth = 0;
    if (t->sum) { /* the parent's totals are the parent's: start empty */
        t->inherited += t->sum->sp;
        sum_free(t);
        t->sum = sum_alloc();
    }
    if (t->tid)
        t->tid = (uint32_t)syscall(SYS_gettid);
    if (g_ring_joined && !stopped()) {
        ring_aware_add(1);
        atomic_fetch_add_explicit(RING_U32(writers), 1, memory_order_release); /* as in ring_announce */
        atomic_store_explicit(&g_announce_due, 1, memory_order_relaxed); /* a new process */
    } else
        g_ring_joined = 0;
}

/* atexit: flush the exiting thread with a clock anchor (ticks and ns at one
 * instant, for an exact tick rate), then stop capture and leave the ring.
 * Other threads' unflushed events end here. */
TR_NOINSTR static void trace_exit(void)
{
    tl_state_t *t = &tl;
    int saved = errno;
    if (!g_started)
        return;
    int gate = atomic_load_explicit(&t->gate, memory_order_relaxed);
    if (gate != TL_BUSY) { /* not from inside a hook; DEAD: the last thread
                            * after pthread_exit, still due the anchor */
        atomic_store_explicit(&t->gate, TL_BUSY, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (gate == TL_NEW)
            tl_start(t);
        if (gate != TL_IGNORED) /* a thread TRACE_THREADS never selected aggregated nothing: no snapshot of it */
            sum_snapshot(t, TRACE_SUMMARY_PROCESS_EXIT);
        /* The anchor also says the process exited: one killed by a signal
         * never gets here, and analyze says its last events were lost.  So
         * it is written whatever the clock (ns timestamps: ts = ns). */
        if (!stopped()) {
            uint64_t ticks, ns;
            if (g_ticks)
                clock_pair(&ticks, &ns);
            else
                ticks = ns = clock_mono_ns();
            tl_push_mark(t, ticks, TRACE_MARK_CLOCK_ANCHOR, ns);
        }
        if (!stopped())
            wrap_note(t);
        tl_flush(t, 1);
        file_close(t);
        atomic_store_explicit(&t->gate, TL_DEAD, memory_order_relaxed);
    }
    (void)stop_claim(STOP_EXIT);
    ctl_close();
    if (g_ring_joined) {
        g_ring_joined = 0;
        /* release: pairs with trace_stream's acquire load of writers; all
         * this process put in the ring is visible once it sees us gone */
        atomic_fetch_sub_explicit(RING_U32(writers), 1, memory_order_release);
        ring_aware_add(-1);
    }
    errno = saved;
}

TR_NOINSTR static void trace_setup(void)
{
    uint64_t max_mb = cfg_u64("TRACE_MAX_MB", 1, CFG_MB_MAX, DEFAULT_MAX_MB);
    uint64_t seg_mb = cfg_u64("TRACE_SEG_MB", 1, CFG_MB_MAX, DEFAULT_SEG_MB);
    uint64_t shm_size = cfg_u64("TRACE_SHM_SIZE", TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY,
                                (uint64_t)TRACE_SHM_HEADER_SIZE + (UINT32_MAX & ~(TRACE_EVENT_SIZE - 1)),
                                TRACE_SHM_DEFAULT_SIZE);
    g_wait_ns = cfg_u64("TRACE_SHM_WAIT_US", 0, CFG_WAIT_US_MAX, 0) * 1000u;
    uint64_t flush_ms = cfg_u64("TRACE_FLUSH_MS", 0, FLUSH_MS_MAX, FLUSH_MS_DEFAULT);
    uint64_t sum_ms = cfg_mode();
    cfg_threads();
    int clock_mode = cfg_clock();
    const char *dir = getenv("TRACE_DIR");
    const char *shm = getenv("TRACE_SHM");

    dl_iterate_phdr(main_program, NULL);
    cfg_trigger();
    g_wrap = cfg_full();
    g_file_head = HDR_BYTES + (g_have_build_id ? EV_BYTES : 0) + (g_wrap ? EV_BYTES : 0);
    g_budget_max = max_mb * MIB;
    g_budget_soft = g_budget_max - g_file_head - EV_BYTES; /* room to say "stopped" */
    g_seg_bytes = seg_mb * MIB;
    if (g_wrap && g_seg_bytes > g_budget_max / 32u) /* many segments: each goes as a small part */
        g_seg_bytes = g_budget_max / 32u > WRAP_SEG_MIN ? g_budget_max / 32u : WRAP_SEG_MIN;
    g_pid = (uint32_t)getpid();
    clock_init(clock_mode);
    sum_clock_init();
    g_sum_every = sum_ms * (g_ticks ? g_tick_hz / 1000u : 1000000u);
    g_flush_every = flush_ms * (g_ticks ? g_tick_hz / 1000u : 1000000u);
    g_hook_ns = hook_measure();
    if (pthread_key_create(&g_key, tl_thread_exit) != 0) {
        say("cannot create a thread key; tracing off", (char *)0);
        return;
    }
    int ring = shm && *shm ? ring_attach(shm, shm_size) : 0;
    if (ring < 0 || (ring == 0 && !file_setup(dir && *dir ? dir : DEFAULT_DIR)))
        return;
    if (pthread_atfork(NULL, NULL, trace_fork_child) != 0 || atexit(trace_exit) != 0)
        say("cannot register the fork and exit handlers; traces may end early", (char *)0);
    g_started = 1;
    if (cfg_u64("TRACE_CONTROL", 0, 1, 0) && !g_ctl) /* a ring's block (trace_stream --allow-control) serves */
        ctl_open();
    if (g_ticks)
        g_hook_path = g_summary == 1 ? HOOK_SUMMARY : !g_summary && !g_trig_func ? HOOK_EVENTS : HOOK_STEP;
    atomic_store_explicit(&g_capture, 1, memory_order_release);
}

/* Priority 101: before the program's own constructors, so they are traced. */
TR_NOINSTR __attribute__((constructor(101))) static void trace_start(void)
{
    int saved = errno;
    if (cfg_enabled())
        trace_setup();
    errno = saved;
}
