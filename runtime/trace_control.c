/*
 * trace_control.c - live control (docs/control.md, issue 31): with
 * TRACE_CONTROL=1 the process makes an owner-only control block
 * (trace_shm.h) that `callsight ctl --pid PID` writes; on a ring that
 * trace_stream --allow-control made, the block in the ring's segment
 * (found by ring_open), which trace_stream writes for the host.  Every hook
 * applies what it says: paused, these functions off, or only these.
 *
 * Without either nothing here runs: the hooks pay one test of
 * g_ctl.  With it, ctl_path, inlined into the hooks, costs one acquire
 * load of the generation (a line that changes only when control does) and
 * the depth's bit, and, while a setting with functions is applied, one
 * probe of its table.  A thread applies a new generation at its next hook, and writes
 * TRACE_MARK_CONTROL there.  The decision for a call is made at its enter
 * and kept with its frame (one bit per depth), so its exit is recorded
 * exactly when its enter was: a change never leaves an exit unmatched or
 * an enter open.  Frames deeper than CTL_DEPTH are always recorded.
 */

/* A block under our name already: this pid's, so its maker is gone or is
 * this process before an exec (exec runs no atexit).  Removed when it is a
 * regular segment of our uid; anyone else's is left, and refused. */
TR_NOINSTR static int ctl_stale(const char *name)
{
    struct stat st;
    int fd = shm_open(name, O_RDONLY | O_NOFOLLOW, 0), ok;
    if (fd < 0)
        return 0;
    ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
    close(fd);
    return ok && shm_unlink(name) == 0;
}

/* The segment, made once at start: the block filled, magic last.  Said
 * once when it cannot be made; the program is traced as without it. */
TR_NOINSTR static void ctl_open(void)
{
    char uid[21], pid[21];
    const char *u = num((uint64_t)geteuid(), uid), *p = num((uint64_t)getpid(), pid);
    size_t n = strlen(u), m = strlen(p);
    memcpy(g_ctl_name, "/callsight-ctl-", 15);
    memcpy(g_ctl_name + 15, u, n);
    g_ctl_name[15 + n] = '-';
    memcpy(g_ctl_name + 16 + n, p, m + 1);
    int fd = shm_open(g_ctl_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST && ctl_stale(g_ctl_name)) /* our own, left by this pid's image before an exec */
        fd = shm_open(g_ctl_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    const char *why = fd < 0 ? strerror(errno) : NULL;
    void *map = MAP_FAILED;
    if (!why && (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)TRACE_CTL_SIZE) != 0))
        why = strerror(errno);
    if (!why && (map = mmap(NULL, TRACE_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        why = strerror(errno);
    if (fd >= 0)
        close(fd);
    if (why) {
        if (fd >= 0)
            shm_unlink(g_ctl_name);
        say("TRACE_CONTROL=1: cannot make the control block ", g_ctl_name, ": ", why,
            "; traced without live control", (char *)0);
        return;
    }
    trace_shm_control_t *c = map;
    c->version = TRACE_CTL_VERSION;
    c->size = TRACE_CTL_SIZE;
    c->load_bias = g_load_bias;
    c->build_id[0] = g_build_id[0];
    c->build_id[1] = g_build_id[1];
    c->pid = (uint32_t)getpid();
    char mg[8];
    uint64_t magic;
    memcpy(mg, TRACE_CTL_MAGIC, 8); /* 8 chars, no NUL */
    memcpy(&magic, mg, sizeof magic);
    /* release: pairs with ctl's acquire load of the magic (ctlblock_open):
     * whoever sees it sees the fields above */
    atomic_store_explicit((_Atomic uint64_t *)(void *)c->magic, magic, memory_order_release);
    g_ctl = c;
}

/* At exit: the segment goes, unless this is a forked child, which shares
 * its parent's block and leaves it to the parent. */
TR_NOINSTR static void ctl_close(void)
{
    if (g_ctl && g_ctl_name[0] && g_ctl->pid == (uint32_t)getpid()) /* not a ring's: trace_stream's to remove */
        shm_unlink(g_ctl_name);
}

/* Whether func is in the applied setting's table: at most
 * TRACE_CTL_PROBE_MAX slots, whatever the writer put there. */
TR_NOINSTR static TR_HOT_INLINE int ctl_listed(const tl_state_t *t, uintptr_t func)
{
    const uint64_t *tab = g_ctl->funcs[t->ctl_buf];
    uint64_t key = (uint64_t)func - g_load_bias; /* link-time: the same in every process of the program */
    uint32_t i = trace_ctl_slot(key);
    for (uint32_t k = 0; k < TRACE_CTL_PROBE_MAX; k++, i = (i + 1u) & (TRACE_CTL_SLOTS - 1u)) {
        uint64_t v = atomic_load_explicit((_Atomic uint64_t *)&tab[i], memory_order_relaxed);
        if (v == key)
            return 1;
        if (!v)
            return 0;
    }
    return 0;
}

/* TRACE_CTL_UNDER: whether a call entered at depth d is outside the
 * subtree (the function's outermost open call and the levels below it). */
TR_NOINSTR static TR_HOT_INLINE int ctl_outside(tl_state_t *t, uintptr_t func, uint32_t d)
{
    if (!t->ctl_in) {
        if ((uint64_t)func - g_load_bias != t->ctl_under)
            return 1;
        t->ctl_in = d + 1u;
    }
    return d + 1u - t->ctl_in > t->ctl_levels;
}

/* A new generation, at this hook: its setting taken, said in-band. */
TR_NOINSTR static TR_COLD void ctl_apply(tl_state_t *t, uint64_t gen)
{
    uint32_t b = (uint32_t)(gen / 2u) & 1u;
    const trace_ctl_setting_t *s = &g_ctl->setting[b];
    uint32_t flags = atomic_load_explicit((_Atomic uint32_t *)&s->flags, memory_order_relaxed);
    uint32_t nf = atomic_load_explicit((_Atomic uint32_t *)&s->nfuncs, memory_order_relaxed);
    uint64_t b0 = atomic_load_explicit((_Atomic uint64_t *)&s->build_id[0], memory_order_relaxed);
    uint64_t b1 = atomic_load_explicit((_Atomic uint64_t *)&s->build_id[1], memory_order_relaxed);
    t->ctl_buf = b;
    t->ctl_flags = flags & (TRACE_CTL_PAUSED | TRACE_CTL_OFF | TRACE_CTL_ONLY | TRACE_CTL_UNDER);
    if (t->ctl_flags & TRACE_CTL_UNDER) {
        t->ctl_flags &= ~(TRACE_CTL_OFF | TRACE_CTL_ONLY); /* not together: the writer refuses that */
        t->ctl_under = atomic_load_explicit((_Atomic uint64_t *)&s->under, memory_order_relaxed);
        t->ctl_levels = atomic_load_explicit((_Atomic uint32_t *)&s->under_depth, memory_order_relaxed);
        nf = t->ctl_levels > 0xfffeu ? 0xffffu : t->ctl_levels; /* the marker says the depth */
    }
    t->ctl_in = 0; /* a subtree begins at the function's next call */
    /* Functions named in another program (a ring's processes may run
     * several): none of ours is off, and none of ours is among "only". */
    if ((t->ctl_flags & (TRACE_CTL_OFF | TRACE_CTL_ONLY | TRACE_CTL_UNDER)) && (b0 | b1) &&
        (b0 != g_build_id[0] || b1 != g_build_id[1]))
        t->ctl_flags = (t->ctl_flags & TRACE_CTL_OFF)
                           ? t->ctl_flags & ~(TRACE_CTL_OFF | TRACE_CTL_ONLY)
                           : (t->ctl_flags & ~(TRACE_CTL_ONLY | TRACE_CTL_UNDER)) | TRACE_CTL_PAUSED;
    /* The trigger: the setting's, in place of TRACE_TRIGGER's, if it names
     * this program (or none); its calls open now are not timed (trig_n). */
    uintptr_t tf = g_trig_func;
    uint64_t tn = g_trig_ns;
    if (flags & TRACE_CTL_TRIGGER) {
        uint64_t f = atomic_load_explicit((_Atomic uint64_t *)&s->trig_func, memory_order_relaxed);
        tn = atomic_load_explicit((_Atomic uint64_t *)&s->trig_ns, memory_order_relaxed);
        tf = f && tn && (!(b0 | b1) || (b0 == g_build_id[0] && b1 == g_build_id[1])) ? (uintptr_t)(f + g_load_bias) : 0;
    }
    /* The mode of the calls entered from here on: the setting's, else
     * TRACE_MODE's; never with TRACE_MODE=both (each call is both there).
     * A thread's first summary gets its table now, once (no hook pays for
     * it again); without one, or without room to say the switch, it stays
     * in the mode it is in. */
    int mode = g_summary == 2             ? t->ctl_mode
               : (flags & TRACE_CTL_MODE) ? atomic_load_explicit((_Atomic uint32_t *)&s->mode,
                                                                 memory_order_relaxed) == TRACE_CTL_MODE_SUMMARY
                                          : g_summary == 1;
    if (mode && !t->sum)
        t->sum = sum_alloc();
    if (mode != t->ctl_mode && t->sum && g_buf_max - TL_NOTE_SLOTS <= t->n + 2u)
        tl_flush(t, 0); /* room for the two markers */
    if (mode != t->ctl_mode && (!t->sum || g_buf_max - TL_NOTE_SLOTS <= t->n + 2u))
        mode = t->ctl_mode;
    int switched = mode != t->ctl_mode;
    t->ctl_switched |= switched;
    t->ctl_mode = mode;
    if (g_summary == 2 || mode)
        tf = 0; /* for calls recorded as events only, as TRACE_TRIGGER */
    if (tf != t->trig_func)
        t->trig_n = 0;
    t->trig_func = tf;
    t->trig_ns = tn;
    tl_paths(t); /* tl_step times the trigger's calls */
    uint32_t shown = t->ctl_flags | (flags & TRACE_CTL_TRIGGER && tf ? TRACE_CTL_TRIGGER : 0); /* what the marker says */
    if (flags & TRACE_CTL_THREADS) { /* a thread whose name matches none records nothing */
        char globs[TRACE_CTL_THREADS_MAX + 1];
        memcpy(globs, s->threads, TRACE_CTL_THREADS_MAX);
        globs[TRACE_CTL_THREADS_MAX] = '\0';
        shown |= TRACE_CTL_THREADS;
        if (!tl_name_in(globs)) {
            t->ctl_flags |= TRACE_CTL_PAUSED;
            shown |= TRACE_CTL_MARK_LEFT_OUT;
        }
    }
    t->ctl_gen = gen;
    _Atomic uint64_t *applied = (_Atomic uint64_t *)&g_ctl->applied;
    uint64_t a = atomic_load_explicit(applied, memory_order_relaxed);
    while (a < gen && !atomic_compare_exchange_weak_explicit(applied, &a, gen, memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
    if (g_buf_max - TL_NOTE_SLOTS <= t->n + 1u)
        tl_flush(t, 0);
    if (g_buf_max - TL_NOTE_SLOTS <= t->n + 1u)
        return; /* the flush was deferred and the buffer is full: no room to say it */
    trace_event_t *e = &t->buf[TL_HEAD + t->n++];
    mark_fill(e, clock_now(), t->tid, TRACE_MARK_CONTROL, gen);
    e->pad[0] = (uint8_t)shown;
    if (!(t->ctl_flags & TRACE_CTL_UNDER))
        nf = nf > TRACE_CTL_FUNCS_MAX ? TRACE_CTL_FUNCS_MAX : nf;
    e->pad[1] = (uint8_t)(nf & 0xffu);
    e->pad[2] = (uint8_t)(nf >> 8 & 0xffu);
    t->nmarks++;
    if (switched) { /* room was made for it above */
        mark_fill(&t->buf[TL_HEAD + t->n++], clock_now(), t->tid, TRACE_MARK_MODE,
                  gen << 8 | (mode ? TRACE_CTL_MODE_SUMMARY : TRACE_CTL_MODE_EVENTS));
        t->nmarks++;
    }
}

/* The path this enter or exit takes (enum hook_path), or -1 when it is not
 * to be recorded.  An odd generation is none a writer publishes: kept to
 * the one applied.  Once the thread's mode has switched, each call's mode
 * is kept with its frame as its skip bit is: its exit goes the way its
 * enter went.  Frames deeper than CTL_DEPTH, and exits of frames open
 * before the thread's first hook, are recorded in TRACE_MODE's mode. */
TR_NOINSTR static TR_HOT_INLINE int ctl_path(tl_state_t *t, uintptr_t func, uint8_t kind)
{
    uint64_t gen = atomic_load_explicit((_Atomic uint64_t *)&g_ctl->gen, memory_order_acquire);
    if (TR_UNLIKELY(gen != t->ctl_gen) && !(gen & 1u))
        ctl_apply(t, gen);
    uint32_t d = t->ctl_depth;
    int start = g_summary == 1;
    if (kind == TRACE_KIND_ENTER) {
        t->ctl_depth = d + 1u;
        if (d >= CTL_DEPTH)
            return t->ctl_path[start];
        uint32_t f = t->ctl_flags;
        int skip = f && ((f & TRACE_CTL_PAUSED) ||
                         ((f & TRACE_CTL_UNDER) && ctl_outside(t, func, d)) ||
                         ((f & (TRACE_CTL_OFF | TRACE_CTL_ONLY)) &&
                          ((f & TRACE_CTL_OFF) ? ctl_listed(t, func) : !ctl_listed(t, func))));
        uint64_t bit = (uint64_t)1 << (d & 63u);
        t->ctl_skip[d >> 6] = skip ? t->ctl_skip[d >> 6] | bit : t->ctl_skip[d >> 6] & ~bit;
        if (TR_UNLIKELY(t->ctl_switched))
            t->ctl_sum[d >> 6] = t->ctl_mode != start ? t->ctl_sum[d >> 6] | bit : t->ctl_sum[d >> 6] & ~bit;
        return skip ? -1 : t->ctl_path[t->ctl_mode];
    }
    if (d == 0)
        return t->ctl_path[start]; /* a frame open before the thread's first hook here: as without control */
    t->ctl_depth = --d;
    if (t->ctl_in == d + 1u)
        t->ctl_in = 0; /* the subtree's call returns: outside again */
    if (d >= CTL_DEPTH)
        return t->ctl_path[start];
    if (t->ctl_skip[d >> 6] >> (d & 63u) & 1u)
        return -1;
    if (TR_LIKELY(!t->ctl_switched))
        return t->ctl_path[start];
    return t->ctl_path[start ^ (int)(t->ctl_sum[d >> 6] >> (d & 63u) & 1u)];
}
