/*
 * trace_thread.c - a thread's buffer: recording an event, and the markers
 * around a batch.
 *
 * The state itself (tl_state_t, one per thread in TLS) is in
 * trace_internal.h.  Here: the hot path's record (tl_record_at), a
 * thread's start, the loss it counts, and the head markers (process,
 * thread name, loss) a flush puts before its batch.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR static void mark_fill(trace_event_t *e, uint64_t ts, uint32_t tid, uint64_t code, uint64_t payload)
{
    memset(e, 0, sizeof *e);
    e->ts = ts;
    e->func = code;
    e->call_site = payload;
    e->tid = tid;
    e->kind = TRACE_KIND_MARKER;
}

/* A marker to go out after the buffered events, with the next flush. */
TR_NOINSTR static void tl_push_mark(tl_state_t *t, uint64_t ts, uint64_t code, uint64_t payload)
{
    if (t->ntail < TL_TAIL)
        mark_fill(&t->buf[TL_HEAD + t->n + t->ntail++], ts, t->tid, code, payload);
}

/* Nanoseconds between two clock_now() readings (0 if they run backwards). */
TR_NOINSTR static uint64_t clock_span_ns(uint64_t from, uint64_t to)
{
    uint64_t d = to > from ? to - from : 0;
    if (!g_ticks)
        return d;
    /* in two parts, so that d * 1e9 cannot overflow */
    return d / g_tick_hz * 1000000000u + d % g_tick_hz * 1000000000u / g_tick_hz;
}

/* The flush that began at `start` is over: say so in the thread's records,
 * at this point of its sequence (after the event whose hook flushed), so
 * the analyzer takes the time out of the frames open here
 * (TRACE_MARK_TRACER_TIME), and how much of it went on waiting for the ring
 * (TRACE_MARK_TRACER_WAIT).  Every caller leaves TL_NOTE_SLOTS free. */
TR_NOINSTR static void tl_note_tracer(tl_state_t *t, uint64_t start, uint64_t waited_ns)
{
    uint64_t took = clock_span_ns(start, clock_now());
    /* the summary's open frames leave out the same time the events' do
     * (TRACE_MODE=both; a flush a snapshot makes is counted there) */
    if (t->sum && !t->sum_writing)
        sum_tracer_time(t, took);
    mark_fill(&t->buf[TL_HEAD + t->n++], start, t->tid, TRACE_MARK_TRACER_TIME, took);
    t->nmarks++;
    if (waited_ns) {
        mark_fill(&t->buf[TL_HEAD + t->n++], start, t->tid, TRACE_MARK_TRACER_WAIT, waited_ns);
        t->nmarks++;
    }
}

/* The clock at which a batch begun at `now` is due out whatever its size
 * (TRACE_FLUSH_MS later); UINT64_MAX when only full batches go. */
TR_NOINSTR static uint64_t tl_flush_deadline(uint64_t now)
{
    return g_flush_every && now <= UINT64_MAX - g_flush_every ? now + g_flush_every : UINT64_MAX;
}

/* The hot path proper: depth, clock, 32 bytes.  Returns nonzero when a
 * flush is due: the buffer is full, or its batch is older than
 * TRACE_FLUSH_MS.  The age costs one compare of the clock just read, so an
 * idle thread costs nothing: its next hook, whenever it comes, flushes.
 * An exit from a frame inherited across fork is not recorded, so the
 * child's trace holds only the frames it entered. */
TR_NOINSTR static inline int tl_record_at(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind, int ticks)
{
    if (kind == TRACE_KIND_ENTER)
        t->depth++;
    else if (TR_UNLIKELY(t->depth == 0 && t->inherited > 0)) {
        t->inherited--;
        return 0;
    } else
        t->depth--;
    trace_event_t *e = &t->buf[TL_HEAD + t->n++];
    uint64_t now = ticks ? clock_ticks() : clock_now();
    e->ts = now;
    e->func = (uint64_t)func;
    e->call_site = (uint64_t)site;
    e->tid = t->tid;
    e->kind = kind;
    e->pad[0] = e->pad[1] = e->pad[2] = 0;
    return (t->n >= t->flush_at) | (now >= t->flush_by); /* |: no second branch */
}

/* `ticks` is a constant at every call: 1 only where g_ticks is known set
 * (tl_hook's events path), so that path reads the counter without testing
 * g_ticks again. */
TR_NOINSTR static inline int tl_record(tl_state_t *t, uintptr_t func, uintptr_t site, uint8_t kind)
{
    return tl_record_at(t, func, site, kind, 0);
}

/* Events per batch for this thread: file mode's larger once it has one. */
TR_NOINSTR static uint32_t tl_batch(const tl_state_t *t)
{
    return t->buf != t->own ? FILE_BUF_EVENTS : g_batch;
}

/* The paths of a thread under live control (tl_hook), for its calls
 * recorded as events and as summaries, given its trigger: tl_hook's
 * inlined ones where they do (the tick clock, no trigger), else tl_step's
 * in that mode; TRACE_MODE=both keeps tl_step's both ways. */
TR_NOINSTR static void tl_paths(tl_state_t *t)
{
    t->ctl_path[0] = g_summary == 2 ? HOOK_STEP : g_ticks && !t->trig_func ? HOOK_EVENTS : HOOK_STEP_EV;
    t->ctl_path[1] = g_summary == 2 ? HOOK_STEP : g_ticks ? HOOK_SUMMARY : HOOK_STEP_SUM;
}

/* First event of a thread: its tid, and the key whose destructor will flush
 * it at thread exit (key values are only set per thread, so here). */
TR_NOINSTR static void tl_start(tl_state_t *t)
{
    int saved = errno;
    t->tid = (uint32_t)syscall(SYS_gettid);
    if (!t->buf) /* TLS starts zeroed; a forked child keeps what its parent had */
        t->buf = t->own;
    t->flush_at = tl_batch(t);
    t->flush_by = tl_flush_deadline(clock_now());
    /* modules closed before its first event are none of its business */
    t->mod_gone = atomic_load_explicit(&g_mod_gone, memory_order_relaxed);
    if (g_summary && !t->sum)
        t->sum = sum_alloc();
    if (!t->ctl_gen) { /* a forked child keeps its parent thread's */
        t->trig_func = g_trig_func;
        t->trig_ns = g_trig_ns;
        t->ctl_mode = g_summary == 1;
        tl_paths(t);
    }
    (void)pthread_setspecific(g_key, t);
    errno = saved;
}

/* Hooks dropped by the gate come in whole enter/exit pairs (the handler ran
 * to completion inside one hook), so the depth around them is unchanged. */
TR_NOINSTR static uint64_t tl_take_reentered(tl_state_t *t)
{
    uint32_t r = atomic_exchange_explicit(&t->reentered, 0, memory_order_relaxed);
    if (r && t->lost == 0)
        t->lost_low = t->lost_after = t->batch_depth;
    t->lost += r;
    return r;
}

/* The buffered batch is lost: remember how many events and the depths the
 * analyzer needs to repair its stack (cold: walks the batch). */
TR_NOINSTR static void tl_note_drop(tl_state_t *t)
{
    int32_t d = t->batch_depth, low = d;
    for (uint32_t i = 0; i < t->n; i++) {
        uint8_t kind = t->buf[TL_HEAD + i].kind;
        if (kind == TRACE_KIND_ENTER)
            d++;
        else if (kind == TRACE_KIND_EXIT && --d < low)
            low = d;
    }
    if (t->lost == 0 || low < t->lost_low)
        t->lost_low = low;
    t->lost_after = d;
    t->lost += t->n - t->nmarks;
}

/* The thread's name into t->name_out; nonzero when it is not the one last
 * written out (names are usually set after a thread's first events, so
 * every flush looks: one system call per batch, off the hot path). */
TR_NOINSTR static int tl_name_changed(tl_state_t *t)
{
    memset(t->name_out, 0, sizeof t->name_out);
#if defined(__linux__)
    if (prctl(PR_GET_NAME, t->name_out, 0, 0, 0) != 0)
        return 0;
    t->name_out[sizeof t->name_out - 1] = 0;
#endif
    return t->name_out[0] && memcmp(t->name_out, t->name, sizeof t->name) != 0;
}

/* Eight name bytes as a little-endian integer (trace.h, THREAD_NAME), so
 * they read the same after any byte swapping of the field. */
TR_NOINSTR static uint64_t name_bytes(const char *s)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | (unsigned char)s[i];
    return v;
}

/* Puts the head markers just before the batch.  Stream mode, where several
 * processes may share the ring: PROCESS in a thread's first flush (and its
 * first after a fork), and with it, until this process has sent them once,
 * LOAD_BIAS and BUILD_ID: the process's announcement, so every record of it
 * that follows can be told apart and symbolized against its own binary.
 * Then THREAD_NAME when the name is new, THREAD_LOST and THREAD_RESYNC when
 * something was lost since the last good flush.  Returns the index the
 * flush starts at. */
TR_NOINSTR static uint32_t tl_head_marks(tl_state_t *t)
{
    uint32_t first = TL_HEAD;
    uint64_t ts = t->n ? t->buf[TL_HEAD].ts : clock_now();
    if (t->lost) {
        uint64_t depths = (uint64_t)(uint32_t)t->lost_after << 32 | (uint32_t)t->lost_low;
        mark_fill(&t->buf[TL_HEAD - 2], ts, t->tid, TRACE_MARK_THREAD_LOST, t->lost);
        mark_fill(&t->buf[TL_HEAD - 1], ts, t->tid, TRACE_MARK_THREAD_RESYNC, depths);
        first = TL_HEAD - 2;
    }
    if (tl_name_changed(t)) {
        first--;
        mark_fill(&t->buf[first], name_bytes(t->name_out + 8), t->tid, TRACE_MARK_THREAD_NAME,
                  name_bytes(t->name_out));
    }
    t->carries_announce = g_ring && (t->rec_announce || atomic_load_explicit(&g_announce_due, memory_order_relaxed));
    t->carries_pid = g_ring && (t->carries_announce || t->pid_sent != g_pid);
    if (t->carries_announce && g_have_build_id)
        mark_fill(&t->buf[--first], g_build_id[1], t->tid, TRACE_MARK_BUILD_ID, g_build_id[0]);
    if (t->carries_announce)
        mark_fill(&t->buf[--first], ts, t->tid, TRACE_MARK_LOAD_BIAS, g_load_bias);
    if (t->carries_pid)
        mark_fill(&t->buf[--first], ts, t->tid, TRACE_MARK_PROCESS, g_pid);
    return first;
}

/* The head markers went out: the loss is reported, the name known, and the
 * process announced (another thread may have done it too: harmless). */
TR_NOINSTR static void tl_head_sent(tl_state_t *t)
{
    if (t->carries_announce)
        atomic_store_explicit(&g_announce_due, 0, memory_order_relaxed);
    if (t->carries_announce)
        t->rec_announce = 0;
    if (t->carries_pid)
        t->pid_sent = g_pid;
    t->lost = 0;
    if (t->name_out[0])
        memcpy(t->name, t->name_out, sizeof t->name);
}

/* Whether this thread's name (as prctl keeps it, 15 bytes) matches one of
 * globs, comma-separated (TRACE_THREADS, and live control's threads). */
TR_NOINSTR static int tl_name_in(const char *globs)
{
    char name[17] = {0};
#if defined(__linux__)
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
        return 0;
#endif
    char copy[THREADS_MAX + 1];
    size_t n = strnlen(globs, THREADS_MAX);
    memcpy(copy, globs, n);
    copy[n] = '\0';
    for (char *g = copy, *end; g; g = end) {
        end = strchr(g, ',');
        if (end)
            *end++ = '\0';
        if (*g && fnmatch(g, name, 0) == 0)
            return 1;
    }
    return 0;
}
