/*
 * trace_flush.c - a batch sent on: to the thread's file or into the ring.
 *
 * tl_flush is the one way out of a thread's buffer, for every mode: the
 * module list first when it changed, then the batch, then the flush's own
 * time noted in the records that follow.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR static int mod_to_file(tl_state_t *t, trace_event_t *ev, uint32_t count)
{
    return file_append(t, ev, count, g_budget_soft) == 0 ? 0 : -1;
}

TR_NOINSTR static int mod_to_ring(tl_state_t *t, trace_event_t *ev, uint32_t count)
{
    return ring_put(ev, count, 0, t->tid) ? 0 : -1;
}

/* TRACE_FULL=wrap: any segment may be the oldest left, so each must stand
 * alone: a batch that will not fit starts the next segment here, before
 * the module list and the head markers are chosen, so that it begins with
 * them (the list, the thread's name) again. */
TR_NOINSTR static void wrap_rotate(tl_state_t *t)
{
    uint64_t batch = (TL_HEAD + t->n + t->ntail) * EV_BYTES + mod_list_room();
    if (!t->has_fd || t->seg_used + batch <= g_seg_bytes)
        return;
    file_close(t);
    t->mod_list = 0;
    memset(t->name, 0, sizeof t->name);
}

/* Flight recorder: a thread's module list and name, written at its first
 * flush, are overwritten like everything else, and a snapshot without them
 * names no shared object's function; without its PROCESS marker and the
 * process's announcement, analyze cannot tell its process, and reported
 * one process as two (the threads it could place and those it could not).
 * So a thread writes them all again once an eighth of the ring has been
 * overwritten since it last did: any snapshot then holds them for all but
 * the oldest eighth of its records (which analyze places by the markers
 * later in the snapshot).  One relaxed load per flush. */
TR_NOINSTR static void rec_say_again(tl_state_t *t)
{
    uint64_t over = atomic_load_explicit(REC_U64(overwritten), memory_order_relaxed);
    if (over - t->rec_said_at < g_ring_cap / EV_BYTES / 8u)
        return;
    t->rec_said_at = over;
    t->pid_sent = 0;
    t->rec_announce = 1;
    t->mod_list = 0;
    memset(t->name, 0, sizeof t->name);
}

/* Sends the batch (and any tail markers) to the sink, then starts a new
 * batch.  Cold; keeps errno for the program.  After a stop, discards.
 * Unless it is the thread's last, the flush notes its own time in the
 * records that follow (tl_note_tracer), deferred or not. */
TR_NOINSTR static TR_COLD void tl_flush(tl_state_t *t, int final)
{
    int saved = errno;
    uint64_t start = clock_now(), waited = 0;
    if (!stopped()) {
        if (g_ring) {
            if (g_rec)
                rec_say_again(t);
            (void)mod_flush(t, mod_to_ring, 1); /* failed: due again next time */
            if (!ring_flush(t, final, &waited)) {
                tl_note_tracer(t, start, waited); /* deferred: the batch stays */
                /* tried again after RING_RETRY_EVENTS more events or a
                 * period from now, not at every hook from here on */
                t->flush_by = tl_flush_deadline(clock_now());
                errno = saved;
                return;
            }
        } else {
            if (g_wrap)
                wrap_rotate(t);
            (void)mod_flush(t, mod_to_file, 0); /* failed: the batch's own write says why */
            file_flush(t);
        }
    }
    t->flush_at = tl_batch(t);
    t->n = t->nmarks = 0;
    t->ntail = 0;
    t->batch_depth = t->depth;
    if (!final && !stopped())
        tl_note_tracer(t, start, waited);
    /* from the flush's end: a flush slower than the period (a long
     * TRACE_SHM_WAIT_US) is not followed by another at the next hook */
    t->flush_by = tl_flush_deadline(clock_now());
    errno = saved;
}

