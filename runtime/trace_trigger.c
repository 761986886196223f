/*
 * trace_trigger.c - TRACE_TRIGGER: a slow call of one function asks for a
 * flight-recorder snapshot.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* TRACE_TRIGGER=NAME>LIMIT: the enter and exit hooks of that one function
 * (one compare in every hook finds them) keep the clock of its open calls;
 * an exit that comes more than LIMIT after its entry writes
 * TRACE_MARK_TRIGGER after the exit and flushes at once, so that the call
 * is in the ring, and then, on a flight-recorder ring, asks trace_stream
 * for a snapshot.  At most one ask per TRACE_TRIGGER_GAP_MS per process: a
 * storm of slow calls costs a flush each that often, and the rest are
 * counted in the block's `held`. */

/* A snapshot is due, and the batch with the slow call and its stack is in
 * the ring: stop overwriting now, so that what led up to it stays however
 * late trace_stream comes for it (it turns the ring back to RECORDING when
 * it has sent it, or declines), then ask.  Without the lock the ring goes
 * on recording until the reader freezes it. */
TR_NOINSTR static TR_COLD void trig_ask(tl_state_t *t)
{
    uint32_t tid = t->tid;
    t->trig_pending = 0;
    if (ring_lock(tid)) {
        /* only a recording ring: one turned OFF streams, and one SHIPPING
         * is the reader's to turn back */
        if (atomic_load_explicit(REC_U32(state), memory_order_relaxed) == TRACE_RECORDER_RECORDING)
            atomic_store_explicit(REC_U32(state), TRACE_RECORDER_SHIPPING, memory_order_relaxed);
        ring_unlock();
    }
    /* release: pairs with the reader's acquire load; the batch with the
     * slow call went in before */
    atomic_fetch_add_explicit(REC_U64(triggers), 1, memory_order_release);
}

TR_NOINSTR static uint64_t trig_now_ms(void)
{
    return clock_mono_ns() / 1000000u;
}

/* May this slow call ask?  One per TRACE_TRIGGER_GAP_MS, whichever thread. */
TR_NOINSTR static int trig_claim(void)
{
    uint64_t now = trig_now_ms() + TRACE_TRIGGER_GAP_MS; /* + gap: 0 means never asked */
    uint64_t last = atomic_load_explicit(&g_trig_last_ms, memory_order_relaxed);
    return now - last >= TRACE_TRIGGER_GAP_MS &&
           atomic_compare_exchange_strong_explicit(&g_trig_last_ms, &last, now, memory_order_relaxed,
                                                   memory_order_relaxed);
}

/* TRACE_MARK_TRIGGER and the functions open around the slow call, into
 * the batch a flush just emptied (unless the flush was deferred: then as
 * many as the buffer has room for). */
TR_NOINSTR static void trig_write(tl_state_t *t, uint64_t at, uint64_t took)
{
    uint32_t open = t->depth > 0 ? (uint32_t)t->depth : 0, keep = 0;
    uint32_t room = g_buf_max - TL_NOTE_SLOTS > t->n ? g_buf_max - TL_NOTE_SLOTS - t->n : 0;
    if (room == 0)
        return;
    /* the innermost frames whose slot still holds their own entry (a deeper
     * call, since returned, may have taken an outer frame's slot) */
    while (keep < open && keep < TRIG_STACK && keep < room - 1 &&
           t->trig_depth[(open - 1 - keep) % TRIG_STACK] == (int32_t)(open - 1 - keep) &&
           t->trig_stack[(open - 1 - keep) % TRIG_STACK] != 0)
        keep++;
    mark_fill(&t->buf[TL_HEAD + t->n++], at, t->tid, TRACE_MARK_TRIGGER, took);
    t->nmarks++;
    for (uint32_t d = open - keep; d < open; d++) {
        mark_fill(&t->buf[TL_HEAD + t->n++], d, t->tid, TRACE_MARK_TRIGGER_FRAME, t->trig_stack[d % TRIG_STACK]);
        t->nmarks++;
    }
}

/* The hook of the trigger function just recorded its event (the last in
 * the buffer, unless tl_record did not record it).  1 when it flushed. */
TR_NOINSTR static TR_COLD int trig_step(tl_state_t *t, uint8_t kind)
{
    const trace_event_t *e = t->n ? &t->buf[TL_HEAD + t->n - 1] : NULL;
    if (!e || e->func != (uint64_t)t->trig_func || e->kind != kind)
        return 0;
    if (kind == TRACE_KIND_ENTER) {
        if (t->trig_n < TRIG_DEPTH)
            t->trig_at[t->trig_n] = e->ts;
        t->trig_n++;
        return 0;
    }
    if (t->trig_n == 0 || --t->trig_n >= TRIG_DEPTH)
        return 0; /* entered before tracing began, or too deep to be timed */
    uint64_t took = clock_span_ns(t->trig_at[t->trig_n], e->ts);
    if (took <= t->trig_ns)
        return 0;
    if (!trig_claim()) {
        if (g_rec) /* relaxed: a counter the reader only reports */
            atomic_fetch_add_explicit(REC_U64(held), 1, memory_order_relaxed);
        return 0;
    }
    uint64_t at = e->ts;
    tl_flush(t, 0); /* the slow call's exit goes in; then the trigger and its stack */
    trig_write(t, at, took);
    t->trig_pending = g_rec != NULL; /* asks once they are in (ring_flush): maybe this flush, maybe a later one */
    tl_flush(t, 0);
    return 1;
}

