/*
 * trace_ring.c - stream mode: the writer's side of the shared-memory ring.
 *
 * Putting batches into the ring (bounded lock, version 2 or 3), and
 * attaching to it at start (create or open, check, announce, hold the
 * liveness flock).
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* Protocol (trace_shm.h): writers serialize on `lock` for a bounded time
 * and publish head past whole batches; in a version-2 ring they copy the
 * batch while they hold the lock, in a version-3 ring (and a version-2
 * ring with TRACE_SHM_FEATURE_COMMIT, trace_stream's default) they only
 * reserve its room there (a batch header) and copy and commit it after
 * letting the lock go, so that a writer that loses its CPU mid-copy holds
 * up nobody but the reader.  The one reader, trace_stream, loads head with acquire,
 * copies, stores tail with release.  Shared fields are reached as C11
 * atomics through these casts. */

#define RING_U32(field) ((_Atomic uint32_t *)(void *)&g_ring->field)
#define RING_U64(field) ((_Atomic uint64_t *)(void *)&g_ring->field)

/* Fault the storage in at attach: a page fault inside the critical section
 * would make other writers give up and drop. */
#ifdef MAP_POPULATE
#define RING_MAP_FLAGS (MAP_SHARED | MAP_POPULATE)
#else
#define RING_MAP_FLAGS MAP_SHARED
#endif

/* Cold: the loss table (trace_shm.h): the slot of tid, claimed if it has
 * none and one is free; &other when every slot is taken.  Bounded: one
 * look at each slot. */
TR_NOINSTR static TR_COLD _Atomic uint64_t *ring_loss_counter(uint32_t tid)
{
    for (uint32_t i = 0; i < TRACE_SHM_LOSS_SLOTS && tid; i++) {
        _Atomic uint32_t *owner = (_Atomic uint32_t *)(void *)&g_losses->slot[i].tid;
        /* relaxed: the tid is only a key; the counts are counters */
        uint32_t v = atomic_load_explicit(owner, memory_order_relaxed);
        if (v == 0 && !atomic_compare_exchange_strong_explicit(owner, &v, tid, memory_order_relaxed,
                                                               memory_order_relaxed) && v != tid)
            continue; /* another thread claimed it first */
        if (v == 0 || v == tid)
            return (_Atomic uint64_t *)(void *)&g_losses->slot[i].events;
    }
    return (_Atomic uint64_t *)(void *)&g_losses->other;
}

/* events of thread tid are lost: in its slot of the loss table first (so
 * the table never holds more than `dropped`), then in `dropped`. */
TR_NOINSTR static void ring_add_dropped(uint32_t tid, uint64_t events)
{
    if (g_losses) /* relaxed: a counter, final for the reader once we detach, as `dropped` */
        atomic_fetch_add_explicit(ring_loss_counter(tid), events, memory_order_relaxed);
    /* relaxed: a counter only; it is ordered for the reader by our later
     * release of `writers` (trace_exit) */
    atomic_fetch_add_explicit(RING_U64(dropped), events, memory_order_relaxed);
}

TR_NOINSTR static void ring_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
    __asm__ __volatile__("yield");
#endif
}

/* Cold: we gave up waiting for the lock.  If its holder's thread no longer
 * exists (killed inside its critical section), take the lock over from it:
 * the CAS succeeds only if nobody else did first.  The dead holder either
 * published head or not; storage past head is unpublished, so the ring is
 * consistent either way.  A holder we cannot check (EPERM) or a reused tid
 * counts as alive, and we drop as before: never worse than waiting. */
TR_NOINSTR static TR_COLD int ring_lock_recover(uint32_t tid)
{
    _Atomic uint32_t *lock = RING_U32(lock);
    uint32_t holder = atomic_load_explicit(lock, memory_order_relaxed);
    if (holder == 0 || holder > (uint32_t)INT_MAX)
        return 0;
    if (kill((pid_t)holder, 0) == 0 || errno != ESRCH)
        return 0;
    /* acquire: as in ring_lock; whatever the dead holder published is seen */
    return atomic_compare_exchange_strong_explicit(lock, &holder, tid ? tid : 1u, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Bounded: a holder killed inside its critical section leaves the lock
 * taken forever, and on one core spinning would starve a live holder; so
 * spin a little, yield a little, then give up (the caller drops). */
TR_NOINSTR static int ring_lock(uint32_t tid)
{
    _Atomic uint32_t *lock = RING_U32(lock);
    for (uint32_t i = 0; i < RING_SPINS + RING_YIELDS; i++) {
        uint32_t free_value = 0;
        /* acquire: pairs with the release store in ring_put that freed the
         * lock, so the previous holder's head and storage writes are seen */
        if (atomic_load_explicit(lock, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(lock, &free_value, tid ? tid : 1u, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
        if (i < RING_SPINS)
            ring_pause();
        else
            sched_yield();
    }
    return ring_lock_recover(tid);
}

/* capacity is a multiple of 32, so a wrap falls between two records. */
TR_NOINSTR static void ring_copy(uint64_t pos, const void *src, uint64_t len)
{
    uint32_t off = (uint32_t)(pos % g_ring_cap);
    uint64_t first = g_ring_cap - off < len ? g_ring_cap - off : len;
    memcpy(g_ring_data + off, src, (size_t)first);
    if (len > first)
        memcpy(g_ring_data, (const unsigned char *)src + first, (size_t)(len - first));
}

#define REC_U32(field) ((_Atomic uint32_t *)(void *)&g_rec->field)
#define REC_U64(field) ((_Atomic uint64_t *)(void *)&g_rec->field)

/* Flight recorder, RECORDING, lock held: move tail over the oldest whole
 * batches until `bytes` fit (trace_shm.h).  The batch records are read from
 * shared memory, so each is checked; one that does not describe a batch
 * inside [tail, head) gives up on them all: tail = head.  The new tail. */
TR_NOINSTR static uint64_t ring_overwrite(uint64_t tail, uint64_t head, uint64_t bytes)
{
    uint64_t over = 0;
    while (head - tail > g_ring_cap - bytes) {
        trace_event_t b;
        memcpy(&b, g_ring_data + tail % g_ring_cap, sizeof b);
        uint64_t recs = (uint32_t)b.call_site;
        if (b.kind != TRACE_KIND_MARKER || b.func != TRACE_MARK_BATCH || recs == 0 ||
            recs > (head - tail) / EV_BYTES) {
            over += (head - tail) / EV_BYTES; /* records, not only events: unknowable */
            tail = head;
            break;
        }
        over += b.call_site >> 32;
        tail += recs * EV_BYTES;
    }
    /* relaxed: a counter, read by the reader under the lock */
    atomic_fetch_add_explicit(REC_U64(overwritten), over, memory_order_relaxed);
    /* relaxed: only lock holders write tail while RECORDING; the next one
     * is ordered after us by our release of the lock */
    atomic_store_explicit(RING_U64(tail), tail, memory_order_relaxed);
    return tail;
}

/* ThreadSanitizer sees the threads of one process only.  In a version-3
 * ring what orders a writer's copy after an earlier writer's commit of the
 * same bytes is the reader, in another process (it acquires the commit,
 * then releases tail, which the later writer acquires), so TSan would call
 * the two a race.  Under TSan only, a writer releases a token before its
 * commit (a store TSan is told to skip) and acquires it with tail: the
 * reader's part, in a form TSan sees.  Nothing of it in other builds. */
#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif
#ifdef RING_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
static char g_tsan_reader;
#define RING_TSAN_ACQUIRE() __tsan_acquire(&g_tsan_reader)
#define RING_TSAN_RELEASE() __tsan_release(&g_tsan_reader)
#define RING_TSAN_SKIP_BEGIN() __tsan_ignore_thread_begin()
#define RING_TSAN_SKIP_END() __tsan_ignore_thread_end()
#else
#define RING_TSAN_ACQUIRE() ((void)0)
#define RING_TSAN_RELEASE() ((void)0)
#define RING_TSAN_SKIP_BEGIN() ((void)0)
#define RING_TSAN_SKIP_END() ((void)0)
#endif

/* Lock held: let it go (release: pairs with the next writer's acquire CAS
 * in ring_lock). */
TR_NOINSTR static void ring_unlock(void)
{
    atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
}

/* Version 3, lock held: reserve room for a batch header and count records,
 * let the lock go, then copy and commit (trace_shm.h).  0 when there is
 * too little room. */
TR_NOINSTR static int ring_put_commit(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid)
{
    uint64_t bytes = (count + 1u) * EV_BYTES;
    if (count == 0) {
        ring_unlock();
        return 1; /* nothing to put; a header of no records would read as a broken ring */
    }
    /* acquire: pairs with the reader's release store of tail, as in ring_put */
    uint64_t tail = atomic_load_explicit(RING_U64(tail), memory_order_acquire);
    RING_TSAN_ACQUIRE();
    /* relaxed: only lock holders write head */
    uint64_t head = atomic_load_explicit(RING_U64(head), memory_order_relaxed);
    uint64_t used = head - tail; /* untrusted: a broken ring reads as full */
    int fits = used <= g_ring_cap && bytes <= g_ring_cap - used;
    _Atomic uint64_t *commit = (_Atomic uint64_t *)(void *)(g_ring_data + head % g_ring_cap);
    if (fits) {
        trace_shm_batch_t b = {0, count, events, tid, 0, 0, g_ring_mark, {0, 0, 0}};
        memcpy((unsigned char *)commit + sizeof b.commit, (const unsigned char *)&b + sizeof b.commit,
               sizeof b - sizeof b.commit);
        /* relaxed: published by the release store of head just below */
        atomic_store_explicit(commit, ~head, memory_order_relaxed);
        /* release: pairs with the reader's acquire load of head, so the
         * header above is seen with the room it describes */
        atomic_store_explicit(RING_U64(head), head + bytes, memory_order_release);
    }
    ring_unlock();
    if (!fits)
        return 0;
    ring_copy(head + EV_BYTES, ev, bytes - EV_BYTES);
    RING_TSAN_RELEASE();
    RING_TSAN_SKIP_BEGIN();
    /* release: pairs with the reader's acquire load of this commit word,
     * so the records copied above are seen once it reads the position */
    atomic_store_explicit(commit, head, memory_order_release);
    RING_TSAN_SKIP_END();
    return 1;
}

/* Copies count records (`events` of them enter/exit) into the ring; 0 when
 * the lock could not be had or there is too little room.  A ring with a
 * flight recorder that is not OFF gets them as one batch, copied under the
 * lock, and while it is RECORDING there is always room: the oldest batches
 * make it.  Its state is read under the lock, so a reader that turns it
 * on knows that every put after that is such a batch (trace_shm.h). */
TR_NOINSTR static int ring_put(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid)
{
    trace_event_t batch;
    if (!ring_lock(tid))
        return 0;
    /* relaxed: written under the lock we hold, by the reader or a tracer */
    uint32_t state = g_rec ? atomic_load_explicit(REC_U32(state), memory_order_relaxed) : TRACE_RECORDER_OFF;
    if (g_ring_commit && state == TRACE_RECORDER_OFF)
        return ring_put_commit(ev, count, events, tid);
    int batched = g_rec && state != TRACE_RECORDER_OFF;
    uint64_t bytes = (count + (uint32_t)batched) * EV_BYTES;
    /* acquire: pairs with the reader's release store of tail, so the bytes
     * it has finished copying out are free before we overwrite them */
    uint64_t tail = atomic_load_explicit(RING_U64(tail), memory_order_acquire);
    /* relaxed: only lock holders write head; ring_lock's acquire ordered us
     * after the previous holder's store */
    uint64_t head = atomic_load_explicit(RING_U64(head), memory_order_relaxed);
    uint64_t used = head - tail; /* untrusted: a broken ring reads as full */
    if (state == TRACE_RECORDER_RECORDING && used <= g_ring_cap && bytes <= g_ring_cap)
        used = head - ring_overwrite(tail, head, bytes);
    int fits = used <= g_ring_cap && bytes <= g_ring_cap - used;
    if (fits && batched) {
        mark_fill(&batch, count ? ev[0].ts : clock_now(), tid, TRACE_MARK_BATCH,
                  (uint64_t)events << 32 | (count + 1u));
        ring_copy(head, &batch, EV_BYTES);
        head += EV_BYTES;
        bytes -= EV_BYTES;
    }
    if (fits) {
        ring_copy(head, ev, bytes);
        /* release: pairs with the reader's acquire load of head, so the
         * records copied above are visible before the new head is */
        atomic_store_explicit(RING_U64(head), head + bytes, memory_order_release);
    }
    ring_unlock();
    return fits;
}

/* ring_put, and while the lock is busy or the ring full, again for up to
 * wait_ns in all: each try spins and yields for the lock (ring_lock), and
 * between tries the thread sleeps, 10 us at first, doubling to 1 ms, the
 * last sleep cut to what is left, so the bound holds to a sleep's slack.
 * *waited gets the time spent past the first try.  wait_ns is 0 (never
 * wait) unless the user chose TRACE_SHM_WAIT_US, or the flush is a thread's
 * last, which has no later one to defer to. */
TR_NOINSTR static int ring_put_wait(const trace_event_t *ev, uint32_t count, uint32_t events, uint32_t tid,
                         uint64_t wait_ns, uint64_t *waited)
{
    *waited = 0;
    if (ring_put(ev, count, events, tid))
        return 1;
    if (wait_ns == 0)
        return 0;
    uint64_t begin = clock_mono_ns(), nap = RING_NAP_FIRST_NS;
    for (;;) {
        uint64_t spent = clock_mono_ns() - begin;
        if (spent >= wait_ns) {
            *waited = spent;
            return 0;
        }
        uint64_t d = nap < wait_ns - spent ? nap : wait_ns - spent;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
        nap = nap * 2 < RING_NAP_MAX_NS ? nap * 2 : RING_NAP_MAX_NS;
        if (ring_put(ev, count, events, tid)) {
            *waited = clock_mono_ns() - begin;
            return 1;
        }
    }
}

/* A thread's last flush lost its events: still try to get its notes (gap,
 * thread exit, clock anchor) out, since no later flush will carry them. */
TR_NOINSTR static void ring_put_marks_only(tl_state_t *t)
{
    memmove(&t->buf[TL_HEAD], &t->buf[TL_HEAD + t->n], t->ntail * sizeof(trace_event_t));
    t->n = t->nmarks = 0;
    uint32_t first = tl_head_marks(t);
    if (ring_put(&t->buf[first], TL_HEAD - first + t->ntail, 0, t->tid))
        tl_head_sent(t);
}

/* Loss accounting keeps: events in the ring + `dropped` = events recorded.
 * Markers are never counted in `dropped`.  Without TRACE_SHM_WAIT_US a
 * batch that cannot go in is kept and tried again after more events, and
 * dropped when the buffer has no room left; with it, the flush waits up to
 * that long and then drops.  *waited: ns spent waiting (ring_put_wait). */
static void trig_ask(tl_state_t *t);

TR_NOINSTR static int ring_flush(tl_state_t *t, int final, uint64_t *waited)
{
    uint64_t reentered = tl_take_reentered(t);
    if (reentered)
        ring_add_dropped(t->tid, reentered);
    uint32_t first = tl_head_marks(t);
    uint32_t count = TL_HEAD - first + t->n + t->ntail;
    uint64_t wait = final && g_wait_ns < RING_FINAL_WAIT_NS ? RING_FINAL_WAIT_NS : g_wait_ns;
    *waited = 0;
    int put = count == 0 || ring_put_wait(&t->buf[first], count, t->n - t->nmarks, t->tid, wait, waited);
    if (final) {
        /* A signal handler's hooks the gate dropped while this last flush
         * waited: no later flush will count them. */
        uint64_t late = tl_take_reentered(t);
        if (late)
            ring_add_dropped(t->tid, late);
    }
    if (put) {
        tl_head_sent(t);
        if (t->trig_pending && count) /* the slow call and its stack are in: now ask */
            trig_ask(t);
        return 1;
    }
    if (t->n == t->nmarks)
        return 1; /* no events: only notes of earlier flushes are lost */
    if (!final && g_wait_ns == 0 && t->n + TL_NOTE_SLOTS + RING_RETRY_EVENTS(g_batch) <= g_buf_max) {
        /* The lock was busy (its holder preempted, most likely) or the
         * reader is behind: keep the batch and try again a little later. */
        t->flush_at = t->n + TL_NOTE_SLOTS + RING_RETRY_EVENTS(g_batch);
        return 0;
    }
    ring_add_dropped(t->tid, t->n - t->nmarks);
    tl_note_drop(t);
    t->trig_pending = 0; /* a slow call's batch that is lost asks for nothing (its loss is counted) */
    if (t->ntail)
        ring_put_marks_only(t);
    return 1;
}

/* A batch of at most a quarter of the ring leaves room for other threads'
 * batches and for the reader to be behind; a batch larger than the ring
 * could never go in at all. */
TR_NOINSTR static void ring_use(void *map, uint32_t cap, size_t map_len)
{
    g_ring = map;
    g_ring_map_len = map_len;
    g_ring_data = (unsigned char *)map + TRACE_SHM_HEADER_SIZE;
    g_ring_cap = cap;
    g_batch = TRACE_BUF_EVENTS / 2u;
    if (cap / TRACE_EVENT_SIZE / 8u < g_batch)
        g_batch = cap / TRACE_EVENT_SIZE / 8u; /* >= 8: capacity >= 64 records */
    g_buf_max = 2u * g_batch;
}

/* Back to file mode after a ring that was mapped could not be joined. */
TR_NOINSTR static void ring_unuse(void)
{
    munmap(g_ring, g_ring_map_len);
    g_ring = NULL;
    g_rec = NULL;
    g_rec_live = NULL;
    g_losses = NULL;
    g_ring_data = NULL;
    g_ring_cap = 0;
    g_ring_commit = 0;
    g_ring_mark = 0;
    g_batch = TRACE_BUF_EVENTS;
    g_buf_max = TRACE_BUF_EVENTS;
}

TR_NOINSTR static uint64_t ring_magic(void)
{
    char m[8] = TRACE_SHM_MAGIC;
    uint64_t v;
    memcpy(&v, m, sizeof v);
    return v;
}

/* We made the segment: size it, fill the header, publish the magic last. */
TR_NOINSTR static const char *ring_create(int fd, uint64_t size)
{
    uint64_t cap = (size - TRACE_SHM_HEADER_SIZE) & ~(EV_BYTES - 1);
    uint64_t len = TRACE_SHM_HEADER_SIZE + cap + TRACE_SHM_LOSSES_SIZE; /* the loss table after the storage */
    if (len > SIZE_MAX)
        return "TRACE_SHM_SIZE is too large for this machine";
    if (ftruncate(fd, (off_t)len) != 0)
        return strerror(errno);
    void *map = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, RING_MAP_FLAGS, fd, 0);
    if (map == MAP_FAILED)
        return strerror(errno);
    trace_shm_header_t *h = map; /* all zero after ftruncate */
    h->version = TRACE_SHM_VERSION; /* what every tracer and trace_stream reads; 3 is trace_stream's to offer */
    h->capacity = (uint32_t)cap;
    g_ring_commit = 0; /* so its batches are written as version 2's: the reader may know only that */
    g_ring_mark = 0;
    trace_shm_losses_t *l = (trace_shm_losses_t *)(void *)((unsigned char *)map + TRACE_SHM_HEADER_SIZE + cap);
    l->version = TRACE_SHM_LOSSES_VERSION;
    l->slots = TRACE_SHM_LOSS_SLOTS;
    memcpy(l->magic, TRACE_SHM_LOSSES_MAGIC, sizeof l->magic); /* before the ring's magic */
    /* release: pairs with an opener's acquire load of the magic (ring_open,
     * trace_stream): whoever sees it sees version and capacity */
    atomic_store_explicit((_Atomic uint64_t *)(void *)h->magic, ring_magic(), memory_order_release);
    ring_use(map, (uint32_t)cap, (size_t)len);
    g_losses = l;
    return NULL;
}

TR_NOINSTR static void ring_sleep_1ms(void)
{
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
}

/* The segment's size once it is large enough for a ring, 0 on timeout. */
TR_NOINSTR static uint64_t ring_wait_size(int fd, uint64_t deadline)
{
    struct stat st;
    while (fstat(fd, &st) == 0) {
        if ((uint64_t)st.st_size >= TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY)
            return (uint64_t)st.st_size;
        if (clock_mono_ns() > deadline)
            break;
        ring_sleep_1ms();
    }
    return 0;
}

/* NULL when the header of a published ring fits a segment of `size`;
 * *cap and *version are read once (the header may change under us). */
TR_NOINSTR static const char *ring_check(trace_shm_header_t *h, uint64_t size, uint64_t deadline, uint32_t *cap,
                              uint32_t *version)
{
    uint64_t magic;
    /* acquire: pairs with the creator's release store of the magic, so the
     * version and capacity read below are the ones it wrote */
    while ((magic = atomic_load_explicit((_Atomic uint64_t *)(void *)h->magic, memory_order_acquire)) == 0 &&
           clock_mono_ns() <= deadline)
        ring_sleep_1ms();
    if (magic == 0)
        return "no ring header appeared in time";
    if (magic != ring_magic())
        return "not a callsight ring (bad magic)";
    *version = h->version;
    if (*version != TRACE_SHM_VERSION_COMMIT && *version != TRACE_SHM_VERSION)
        return "unsupported ring version";
    *cap = h->capacity;
    if (*cap < TRACE_SHM_MIN_CAPACITY || *cap % TRACE_EVENT_SIZE != 0 || TRACE_SHM_HEADER_SIZE + (uint64_t)*cap > size)
        return "its capacity does not fit the segment";
    return NULL;
}

/* The block after the storage (`room` bytes of it mapped), if its magic
 * is there: the flight recorder's, or the loss table.  The creator wrote
 * it before the ring's magic, which ring_check read with acquire. */
TR_NOINSTR static void ring_find_block(unsigned char *block, size_t room, uint32_t version)
{
    trace_shm_recorder_t *r = (trace_shm_recorder_t *)(void *)block;
    trace_shm_losses_t *l = (trace_shm_losses_t *)(void *)block;
    if (version == TRACE_SHM_VERSION && room >= TRACE_SHM_RECORDER_SIZE &&
        memcmp(r->magic, TRACE_SHM_RECORDER_MAGIC, sizeof r->magic) == 0 &&
        r->version == TRACE_SHM_RECORDER_VERSION)
        g_rec = r;
    else if (room >= TRACE_SHM_LOSSES_SIZE && memcmp(l->magic, TRACE_SHM_LOSSES_MAGIC, sizeof l->magic) == 0 &&
             l->version == TRACE_SHM_LOSSES_VERSION && l->slots == TRACE_SHM_LOSS_SLOTS)
        g_losses = l;
}

/* trace_stream --allow-control's block at the segment's end: obeyed when its
 * magic, version and size are right (written before the ring's magic,
 * which ring_check read with acquire).  1 found. */
TR_NOINSTR static int ring_find_control(unsigned char *at)
{
    trace_shm_control_t *c = (trace_shm_control_t *)(void *)at;
    if (memcmp(c->magic, TRACE_CTL_MAGIC, sizeof c->magic) != 0 || c->version != TRACE_CTL_VERSION ||
        c->size != TRACE_CTL_SIZE)
        return 0;
    g_ctl = c;
    /* relaxed: written before the ring's magic, as the rest of the block.
     * -DTRACE_RING_NO_LIVE_RECORDER builds a tracer that never looks (the
     * tests' tracer of the tree before it) */
#ifndef TRACE_RING_NO_LIVE_RECORDER
    if (atomic_load_explicit((_Atomic uint32_t *)(void *)&c->blocks, memory_order_relaxed) & TRACE_CTL_HAS_RECORDER) {
        trace_shm_recorder_t *r = (trace_shm_recorder_t *)(void *)(at - TRACE_SHM_RECORDER_SIZE);
        if (memcmp(r->magic, TRACE_SHM_RECORDER_MAGIC, sizeof r->magic) == 0 &&
            r->version == TRACE_SHM_RECORDER_VERSION)
            g_rec_live = r; /* the caller checked the segment has room for it */
    }
#endif
    return 1;
}

/* Someone else made the segment, maybe a moment ago: wait a bounded time
 * for its size and magic, check the header, then map what it describes. */
TR_NOINSTR static const char *ring_open(int fd)
{
    uint64_t deadline = clock_mono_ns() + RING_OPEN_WAIT_NS;
    uint64_t size = ring_wait_size(fd, deadline);
    if (size == 0)
        return "the segment exists but is too small for a ring";
    uint32_t cap = 0, version = 0;
    trace_shm_header_t *h = mmap(NULL, sizeof *h, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return strerror(errno);
    const char *why = ring_check(h, size, deadline, &cap, &version);
    munmap(h, sizeof *h);
    if (why)
        return why;
    /* trace_stream --flight-recorder made the segment of a version-2 ring
     * longer for its block, a creator of this tree for its loss table, and
     * trace_stream --allow-control longer still, for the control block in
     * its last TRACE_CTL_SIZE bytes */
    size_t len = TRACE_SHM_HEADER_SIZE + (size_t)cap, tail = (size_t)(size - len);
    int ctl = tail >= TRACE_CTL_SIZE + TRACE_SHM_RECORDER_SIZE; /* maybe: its magic says */
    size_t room = tail >= TRACE_SHM_LOSSES_SIZE ? TRACE_SHM_LOSSES_SIZE : tail;
    size_t maplen = ctl ? (size_t)size : len + room;
    void *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, RING_MAP_FLAGS, fd, 0);
    if (map == MAP_FAILED)
        return strerror(errno);
    ring_use(map, cap, maplen);
    g_ring_commit = version == TRACE_SHM_VERSION_COMMIT;
    if (ctl && ring_find_control((unsigned char *)map + size - TRACE_CTL_SIZE))
        room = tail - TRACE_CTL_SIZE >= TRACE_SHM_LOSSES_SIZE ? TRACE_SHM_LOSSES_SIZE : tail - TRACE_CTL_SIZE;
    if (room)
        ring_find_block((unsigned char *)map + len, room, version);
    /* The control block's recorder: a --flight-recorder ring's own (found
     * above too), or one after the loss table that starts OFF; a version-3
     * ring has none that counts (its writers cannot copy under the lock). */
    if (g_rec_live && version != TRACE_SHM_VERSION)
        g_rec_live = NULL;
    if (g_rec_live && g_rec && g_rec != g_rec_live)
        g_rec_live = NULL; /* two blocks that disagree: the one older tracers use */
    if (g_rec_live)
        g_rec = g_rec_live;
    /* A version-2 ring whose reader takes committed batches among plain
     * records (trace_shm.h); never a flight recorder's, whose writers move
     * tail over plain batches.  -DTRACE_RING_NO_COMMIT builds a tracer that
     * writes as one that knows only version 2 (the tests' older writer). */
#ifndef TRACE_RING_NO_COMMIT
    if (version == TRACE_SHM_VERSION && g_losses && (!g_rec || g_rec == g_rec_live) &&
        (atomic_load_explicit((_Atomic uint32_t *)&g_losses->features, memory_order_relaxed) &
         TRACE_SHM_FEATURE_COMMIT)) {
        g_ring_commit = 1;
        g_ring_mark = TRACE_SHM_BATCH_MARK;
    }
#endif
    return NULL;
}

/* A switchable recorder's `aware` (trace_shm.h): +1 before we count in
 * `writers`, -1 after we count out, so the reader never sees more writers
 * that know it than it counts. */
TR_NOINSTR static void ring_aware_add(int d)
{
    if (g_rec_live) /* relaxed: the reader reads it only to refuse a switch */
        atomic_fetch_add_explicit((_Atomic uint32_t *)(void *)&g_rec_live->aware, (uint32_t)d, memory_order_relaxed);
}

/* Counts us as a writer; trace_stream sends its handshake only once it sees
 * one.  The first writer's clock and bias go in the lower half, which the
 * handshake carries.  A tracer joining a ring that others already write
 * leaves it alone: its own bias and build-id go in-band (tl_head_marks),
 * and its timestamps only need the same clock, which is checked here.
 * Under the ring's lock, so two tracers attaching at once cannot both take
 * themselves for the first.  If the lock stays taken (a holder stuck in
 * its critical section) we join without it: every flush will fail and be
 * counted as dropped while it is stuck, which is the loss to report, and
 * the race it would have prevented needs two tracers starting together on
 * top of that.  NULL, or why we cannot join. */
TR_NOINSTR static const char *ring_announce(void)
{
    uint32_t flags = g_ticks ? TRACE_FLAG_TICKS : 0;
    int locked = ring_lock(g_pid);
    const char *why = NULL;
    if (atomic_load_explicit(RING_U32(writers), memory_order_relaxed) == 0) {
        g_ring->flags = flags;
        g_ring->pad = 0;
        g_ring->load_bias = g_load_bias;
        g_ring->tick_hz = g_tick_hz;
        g_ring->t0_ticks = g_t0_ticks;
        g_ring->t0_ns = g_t0_ns;
        g_ring->hook_ns = g_hook_ns;
    } else if ((g_ring->flags & TRACE_FLAG_TICKS) != flags)
        why = "the processes already writing it use another clock (give them all the same TRACE_CLOCK)";
    if (!why) {
        /* release: pairs with trace_stream's acquire load of writers, so the
         * lower half above is complete when it reads it */
        ring_aware_add(1);
        atomic_fetch_add_explicit(RING_U32(writers), 1, memory_order_release);
        g_ring_joined = 1;
        atomic_store_explicit(&g_announce_due, 1, memory_order_relaxed);
    }
    if (locked) /* release: pairs with the next writer's acquire CAS in ring_lock */
        atomic_store_explicit(RING_U32(lock), 0, memory_order_release);
    return why;
}

/* A shared flock on the segment, held until this process (and any child
 * forked with the descriptor) ends: the kernel drops it however we die, so
 * trace_stream, trying an exclusive lock now and then, learns that tracers
 * counted in `writers` are gone when no shared lock is left.  Taken before we
 * count as a writer.  trace_stream holds its exclusive lock only for an
 * instant, so a bounded number of tries suffices. */
TR_NOINSTR static const char *ring_hold_liveness(int fd)
{
    uint64_t deadline = clock_mono_ns() + RING_OPEN_WAIT_NS;
    while (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || clock_mono_ns() > deadline)
            return "cannot hold a shared lock on the ring";
        ring_sleep_1ms();
    }
    return NULL;
}

/* TRACE_SHM_GROUP=GROUP (a name or a number): the ring may be shared with
 * that group's users.  Its gid, -1 when unset, -2 (said) when no such
 * group: the user asked for a shared ring we cannot make. */
TR_NOINSTR static long ring_share_gid(const char *name)
{
    const char *v = getenv("TRACE_SHM_GROUP"), *p = v;
    if (!v || !*v)
        return -1;
    long gid = 0;
    for (; *p >= '0' && *p <= '9' && gid < 1L << 31; p++)
        gid = gid * 10 + (*p - '0');
    if (*p == '\0' && gid < 1L << 31)
        return gid;
    struct group gr, *found = NULL;
    char buf[16384];
    if (getgrnam_r(v, &gr, buf, sizeof buf, &found) == 0 && found)
        return (long)found->gr_gid;
    say("TRACE_SHM=", name, ": TRACE_SHM_GROUP=", v, " is no group's name or number; tracing off", (char *)0);
    return -2;
}

/* A ring we did not create is written only if it is ours and nobody else
 * can write it: another local user may have made it first under a name
 * they guessed, to read our events or forge records into them.  With
 * TRACE_SHM_GROUP, also one of that group that others cannot write: only
 * a member (or root) can give a file to a group.  Else we say so and run
 * untraced: falling back to files would still trace a program whose user
 * asked for a ring.  0 if usable. */
TR_NOINSTR static int ring_owner_ok(const char *name, int fd, long share_gid)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        say("TRACE_SHM=", name, ": cannot stat the ring: ", strerror(errno), "; tracing off", (char *)0);
        return -1;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 002) == 0 &&
        ((st.st_uid == geteuid() && (st.st_mode & 020) == 0) || (share_gid >= 0 && (long)st.st_gid == share_gid)))
        return 0;
    char uid[21], mode[21], me[21], gid[21];
    say("TRACE_SHM=", name, ": refusing the ring: owned by uid ", num(st.st_uid, uid), " with mode ",
        num_base(st.st_mode & 07777, 8, 4, mode), ", not a ring of uid ", num(geteuid(), me),
        " that only it can write", share_gid >= 0 ? " or of group " : "",
        share_gid >= 0 ? num((uint64_t)share_gid, gid) : "", share_gid >= 0 ? " that others cannot write" : "",
        "; tracing off (remove /dev/shm", name, " if it is stale)", (char *)0);
    return -1;
}

/* Attaches TRACE_SHM, creating it when absent: 1 attached, 0 the caller
 * falls back to files (why said once), -1 a ring not ours: tracing off.
 * The segment is the client's to unlink, except one we created and could
 * not set up (it never had a magic). */
TR_NOINSTR static int ring_attach(const char *name, uint64_t size)
{
    const char *why;
    if (name[0] != '/') /* glibc takes it as /name; say so, so that trace_stream is started with the same */
        say("TRACE_SHM=", name, ": a ring's name starts with '/'; taken as /", name, (char *)0);
    long share_gid = ring_share_gid(name);
    if (share_gid == -2)
        return -1;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600), made = fd >= 0;
    if (fd >= 0) {
        /* shared: its group's tracers and trace_stream may open it (fchmod:
         * the umask has had its say over shm_open's mode) */
        why = share_gid >= 0 && (fchown(fd, (uid_t)-1, (gid_t)share_gid) != 0 || fchmod(fd, 0660) != 0)
                  ? strerror(errno)
                  : ring_create(fd, size);
        if (why)
            shm_unlink(name);
    } else if (errno == EEXIST) {
        fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0 && ring_owner_ok(name, fd, share_gid)) {
            close(fd);
            return -1;
        }
        why = fd >= 0 ? ring_open(fd) : strerror(errno);
    } else
        why = strerror(errno);
    if (!why)
        why = ring_hold_liveness(fd);
    if (!why)
        why = ring_announce();
    if (why) {
        if (g_ring)
            ring_unuse();
        if (fd >= 0)
            close(fd); /* drops our shared lock too: we never counted as a writer */
        say("TRACE_SHM=", name, ": ", why, "; writing trace files instead", (char *)0);
        return 0;
    }
    g_ring_fd = fd;
    if (made) { /* no trace_stream yet: say what becomes of the events and of the segment */
        char mb[24];
        say("TRACE_SHM=", name, ": no trace_stream had made this ring, so the program made it (",
            num((size + (1u << 20) - 1) >> 20, mb), " MiB): it keeps events until a trace_stream ", name,
            " HOST PORT drains it, then drops new ones, counted; only trace_stream removes it (or rm /dev/shm",
            name[0] == '/' ? "" : "/", name, ")", (char *)0);
    }
    return 1;
}

