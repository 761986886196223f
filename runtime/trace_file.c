/*
 * trace_file.c - file mode: trace files, their budget, and the stop of capture.
 *
 * Capture stops for the whole process once (stop_claim: the budget is spent,
 * a write failed, or the process exits).  TRACE_FULL=wrap keeps the newest
 * segments within the budget instead.  Then the files themselves.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR static int stopped(void)
{
    return atomic_load_explicit(&g_stop, memory_order_acquire) != STOP_NONE;
}

/* Stops capture for the whole process; nonzero for the caller that stopped
 * it first, which alone writes the stop marker. */
TR_NOINSTR static int stop_claim(int reason)
{
    int none = STOP_NONE;
    int won = atomic_compare_exchange_strong_explicit(&g_stop, &none, reason, memory_order_acq_rel,
                                                      memory_order_acquire);
    atomic_store_explicit(&g_capture, 0, memory_order_relaxed);
    return won;
}

/* ---- TRACE_FULL=wrap ---------------------------------------------------------
 * The budget (TRACE_MAX_MB) holds the most recent part of the whole
 * process's trace: segments are small (a 32nd of the budget), every closed
 * one joins one queue in the order they closed, and a flush that finds the
 * budget spent removes the oldest (any thread's) until its bytes fit.  Each
 * new segment starts with TRACE_MARK_WRAP: the events removed so far, which
 * every thread's last flush repeats; readers take the largest.  The queue
 * is the only shared state, under a mutex held for a few stores and never
 * across I/O (the unlink happens after). */
#define WRAP_SEGS 4096u

typedef struct wrap_seg {
    uint32_t tid, seq;
    uint64_t bytes, events;
} wrap_seg_t;

static wrap_seg_t g_wrap_q[WRAP_SEGS];
static uint32_t g_wrap_first, g_wrap_n;
static pthread_mutex_t g_wrap_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_wrap_discarded; /* events in the segments removed */
/* Events of batches dropped for want of room (the budget all in open
 * segments) whose THREAD_LOST has not reached a file yet: a thread whose
 * later flushes never get in would otherwise lose them silently.  They
 * count as discarded until their marker is written (wrap_gone). */
static _Atomic uint64_t g_wrap_unsaid;

/* What TRACE_MARK_WRAP says has gone: the segments removed, and the drops
 * no marker in a file says yet. */
TR_NOINSTR static uint64_t wrap_gone(void)
{
    return atomic_load_explicit(&g_wrap_discarded, memory_order_relaxed) +
           atomic_load_explicit(&g_wrap_unsaid, memory_order_relaxed);
}

static void file_path(char *out, uint32_t tid, uint32_t seq);

/* Remove the oldest closed segment; 0 when there is none. */
TR_NOINSTR static int wrap_reclaim(void)
{
    wrap_seg_t s;
    pthread_mutex_lock(&g_wrap_lock);
    int have = g_wrap_n > 0;
    if (have) {
        s = g_wrap_q[g_wrap_first];
        g_wrap_first = (g_wrap_first + 1) % WRAP_SEGS;
        g_wrap_n--;
    }
    pthread_mutex_unlock(&g_wrap_lock);
    if (!have)
        return 0;
    char path[sizeof g_dir + FILE_NAME_ROOM];
    file_path(path, s.tid, s.seq);
    unlink(path);
    atomic_fetch_add_explicit(&g_wrap_discarded, s.events, memory_order_relaxed);
    atomic_fetch_sub_explicit(&g_budget_used, s.bytes, memory_order_relaxed);
    return 1;
}

/* A segment was closed: it may go when room is needed.  A full queue
 * makes its oldest go now. */
TR_NOINSTR static void wrap_enqueue(uint32_t tid, uint32_t seq, uint64_t bytes, uint64_t events)
{
    for (;;) {
        pthread_mutex_lock(&g_wrap_lock);
        if (g_wrap_n < WRAP_SEGS) {
            g_wrap_q[(g_wrap_first + g_wrap_n++) % WRAP_SEGS] = (wrap_seg_t){tid, seq, bytes, events};
            pthread_mutex_unlock(&g_wrap_lock);
            return;
        }
        pthread_mutex_unlock(&g_wrap_lock);
        (void)wrap_reclaim();
    }
}

/* A thread's last flush says how much has gone in all so far. */
TR_NOINSTR static void wrap_note(tl_state_t *t)
{
    uint64_t gone = wrap_gone();
    if (g_wrap && gone)
        tl_push_mark(t, clock_now(), TRACE_MARK_WRAP, gone);
}

/* fork: the child's files are its own, and so is its queue. */
TR_NOINSTR static void wrap_fork_child(void)
{
    pthread_mutex_init(&g_wrap_lock, NULL); /* another thread may have held it at the fork */
    g_wrap_first = g_wrap_n = 0;
    atomic_store_explicit(&g_wrap_discarded, 0, memory_order_relaxed);
    atomic_store_explicit(&g_wrap_unsaid, 0, memory_order_relaxed);
}

/* Reserves bytes of the process budget before they are written, so that
 * concurrent threads together never pass `limit`. */
TR_NOINSTR static int budget_take(uint64_t bytes, uint64_t limit)
{
    uint64_t used = atomic_load_explicit(&g_budget_used, memory_order_relaxed);
    do {
        if (bytes > limit || used > limit - bytes)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&g_budget_used, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return 1;
}

/* ---- file mode -------------------------------------------------------------
 * Each thread writes its own series trace.<pid>.<tid>.<seq>.bin: an 80-byte
 * header, then its events.  A segment is never larger than TRACE_SEG_MB and
 * never overwritten; all files of the process fit in TRACE_MAX_MB. */

#define FILE_OVER_BUDGET (-1)

TR_NOINSTR static void file_to_le(trace_event_t *ev, uint32_t count)
{
#ifdef TR_BIG_ENDIAN
    for (uint32_t i = 0; i < count; i++) {
        ev[i].ts = __builtin_bswap64(ev[i].ts);
        ev[i].func = __builtin_bswap64(ev[i].func);
        ev[i].call_site = __builtin_bswap64(ev[i].call_site);
        ev[i].tid = __builtin_bswap32(ev[i].tid);
    }
#else
    (void)ev;
    (void)count;
#endif
}

TR_NOINSTR static void file_header(trace_file_header_t *h, uint32_t seq)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, TRACE_FILE_MAGIC, sizeof h->magic);
    h->version = g_summary ? TRACE_FILE_VERSION_SUMMARY : TRACE_FILE_VERSION;
    h->event_size = TRACE_EVENT_SIZE;
    h->header_size = TRACE_FILE_HEADER_SIZE;
    h->flags = (g_ticks ? TRACE_FLAG_TICKS : 0) | TRACE_FLAG_EXIT_RECORD |
               (wrap_gone() ? TRACE_FLAG_WRAPPED : 0);
    h->load_bias = g_load_bias;
    h->tick_hz = g_tick_hz;
    h->t0_ticks = g_t0_ticks;
    h->t0_ns = g_t0_ns;
    h->hook_ns = g_hook_ns;
    h->pid = g_pid;
    h->seq = seq;
#ifdef TR_BIG_ENDIAN
    h->version = __builtin_bswap32(h->version);
    h->event_size = __builtin_bswap32(h->event_size);
    h->header_size = __builtin_bswap32(h->header_size);
    h->flags = __builtin_bswap32(h->flags);
    h->load_bias = __builtin_bswap64(h->load_bias);
    h->tick_hz = __builtin_bswap64(h->tick_hz);
    h->t0_ticks = __builtin_bswap64(h->t0_ticks);
    h->t0_ns = __builtin_bswap64(h->t0_ns);
    h->hook_ns = __builtin_bswap64(h->hook_ns);
    h->pid = __builtin_bswap32(h->pid);
    h->seq = __builtin_bswap32(h->seq);
#endif
}

TR_NOINSTR static char *file_put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* g_dir is at most sizeof g_dir - FILE_NAME_ROOM long (checked at start). */
TR_NOINSTR static void file_path(char *out, uint32_t tid, uint32_t seq)
{
    char nb[21];
    char *p = file_put(out, g_dir);
    p = file_put(p, "/trace.");
    p = file_put(p, num(g_pid, nb));
    p = file_put(p, ".");
    p = file_put(p, num(tid, nb));
    p = file_put(p, ".");
    p = file_put(p, num(seq, nb));
    p = file_put(p, ".bin");
    *p = '\0';
}

/* Returns 0 or an errno.  Writes at an explicit offset, so that after a
 * failure the file can be cut back to whole records and written on. */
TR_NOINSTR static int file_pwrite_all(int fd, const void *buf, uint64_t len, uint64_t off)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t w = pwrite(fd, p, (size_t)len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        len -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* A segment's first bytes: its header, then BUILD_ID when the program has
 * one, so that every file names the binary it came from.  Returns the
 * length (g_file_head). */
TR_NOINSTR static uint64_t file_head(tl_state_t *t, unsigned char *out)
{
    trace_file_header_t h;
    file_header(&h, t->seq);
    memcpy(out, &h, sizeof h);
    uint64_t len = sizeof h;
    trace_event_t m;
    if (g_have_build_id) {
        mark_fill(&m, g_build_id[1], t->tid, TRACE_MARK_BUILD_ID, g_build_id[0]);
        file_to_le(&m, 1);
        memcpy(out + len, &m, sizeof m);
        len += sizeof m;
    }
    if (g_wrap) {
        mark_fill(&m, clock_now(), t->tid, TRACE_MARK_WRAP, wrap_gone());
        file_to_le(&m, 1);
        memcpy(out + len, &m, sizeof m);
    }
    return g_file_head;
}

/* Creates the thread's next segment with its head.  O_EXCL: a name that
 * exists (an earlier thread with the same tid, an older run with the same
 * pid) is skipped for the next seq, never overwritten.  0 or an errno. */
TR_NOINSTR static int file_open(tl_state_t *t)
{
    char path[sizeof g_dir + FILE_NAME_ROOM];
    for (uint32_t tries = 0; tries < FILE_MAX_TRIES; tries++, t->seq++) {
        file_path(path, t->tid, t->seq);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return errno;
        unsigned char head[HDR_BYTES + 2 * EV_BYTES];
        int err = file_pwrite_all(fd, head, file_head(t, head), 0);
        if (err) {
            close(fd);
            unlink(path); /* ours, and a torn header helps no reader */
            return err;
        }
        t->fd = fd;
        t->has_fd = 1;
        t->seg_used = g_file_head;
        t->seg_events = 0;
        t->seg_summary = g_summary != 0;
        return 0;
    }
    return EEXIST;
}

TR_NOINSTR static void file_close(tl_state_t *t)
{
    if (!t->has_fd)
        return;
    close(t->fd);
    if (g_wrap)
        wrap_enqueue(t->tid, t->seq, t->seg_used, t->seg_events);
    t->has_fd = 0;
    t->seq++;
    t->seg_used = 0;
}

/* Live control switched an event trace's thread to summaries: the first
 * batch with a snapshot makes its segment's head say
 * TRACE_FILE_VERSION_SUMMARY (as serve's files do), so that an analyzer
 * that predates summaries refuses it instead of misreading it. */
TR_NOINSTR static TR_COLD void file_mark_summary(tl_state_t *t, const trace_event_t *ev, uint32_t count)
{
    uint32_t i = 0;
    while (i < count && ev[i].kind != TRACE_KIND_SUMMARY)
        i++;
    if (i == count)
        return;
    uint32_t v = TRACE_FILE_VERSION_SUMMARY;
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    if (file_pwrite_all(t->fd, le, sizeof le, offsetof(trace_file_header_t, version)) == 0)
        t->seg_summary = 1;
}

/* Appends events to the thread's segment, rotating at TRACE_SEG_MB, the
 * bytes (and any new head) reserved against `limit` first.  Returns 0,
 * FILE_OVER_BUDGET or an errno; a failed write leaves whole records only. */
TR_NOINSTR static int file_append(tl_state_t *t, trace_event_t *ev, uint32_t count, uint64_t limit)
{
    uint64_t bytes = count * EV_BYTES;
    if (t->has_fd && t->seg_used > g_file_head && t->seg_used + bytes > g_seg_bytes)
        file_close(t);
    while (!budget_take(bytes + (t->has_fd ? 0 : g_file_head), limit)) {
        if (!g_wrap)
            return FILE_OVER_BUDGET;
        if (wrap_reclaim())
            continue;
        if (!t->has_fd || t->seg_used == g_file_head)
            return FILE_OVER_BUDGET; /* the budget is all in other threads' open segments */
        file_close(t); /* ours is the oldest left: it goes next */
    }
    if (!t->has_fd) {
        int err = file_open(t);
        if (err)
            return err;
    }
    if (TR_UNLIKELY(t->sum != NULL) && !t->seg_summary)
        file_mark_summary(t, ev, count);
    uint64_t stands_for = 0; /* TRACE_FULL=wrap: the enter/exit events this batch holds or says were lost */
    for (uint32_t i = 0; g_wrap && i < count; i++) {
        stands_for += ev[i].kind == TRACE_KIND_ENTER || ev[i].kind == TRACE_KIND_EXIT;
        if (ev[i].kind == TRACE_KIND_MARKER && ev[i].func == TRACE_MARK_THREAD_LOST)
            stands_for += ev[i].call_site;
        if (ev[i].kind == TRACE_KIND_MARKER && ev[i].func == TRACE_MARK_WRAP) /* a last flush's total: as of */
            ev[i].call_site = wrap_gone(); /* now */
    }
    file_to_le(ev, count);
    int err = file_pwrite_all(t->fd, ev, bytes, t->seg_used);
    if (err) {
        if (ftruncate(t->fd, (off_t)t->seg_used) != 0) {
            /* nothing more to do: the marker below may still land */
        }
        return err;
    }
    t->seg_used += bytes;
    t->seg_events += stands_for;
    return 0;
}

/* Capture ends for the process; the thread that ends it says why, in-band.
 * The marker fits: the soft budget keeps room for a head and one event,
 * and a failed write leaves its own reservation unused. */
TR_NOINSTR static void file_stop(tl_state_t *t, int reason, uint64_t code, uint64_t payload)
{
    char nb[21];
    if (!stop_claim(reason))
        return;
    int err = reason == STOP_WRITE && !t->has_fd ? (int)payload : 0;
    if (!err) {
        trace_event_t m;
        mark_fill(&m, clock_now(), t->tid, code, payload);
        err = file_append(t, &m, 1, g_budget_max);
    }
    if (reason == STOP_WRITE)
        say("writing trace files in ", g_dir, " failed: ", strerror((int)payload),
            "; capture stopped", (char *)0);
    else if (err)
        say("TRACE_MAX_MB=", num(g_budget_max / MIB, nb), " reached; capture stopped, but its marker ",
            "could not be written: ", err > 0 ? strerror(err) : "no room", (char *)0);
}

/* Once a thread in file mode has filled a batch, its batches grow to
 * FILE_BUF_EVENTS (see there); a thread whose flushes are partial (its
 * exit, TRACE_FLUSH_MS) keeps the small one.  Not with TRACE_FULL=wrap,
 * whose segments are sized in small batches, nor for summaries alone,
 * whose snapshots are small.  No memory: the TLS buffer, as before. */
TR_NOINSTR static void file_buf_grow(tl_state_t *t)
{
    if (t->buf != t->own || t->n < t->flush_at || g_wrap || g_summary == 1)
        return;
    void *m = mmap(NULL, (TL_HEAD + FILE_BUF_EVENTS + TL_TAIL) * sizeof(trace_event_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        t->buf = m;
}

/* Thread exit: the larger buffer unmapped, once its last batch is out. */
TR_NOINSTR static void file_buf_free(tl_state_t *t)
{
    if (t->buf && t->buf != t->own)
        munmap(t->buf, (TL_HEAD + FILE_BUF_EVENTS + TL_TAIL) * sizeof(trace_event_t));
    t->buf = t->own;
}

/* The batch is written; nothing in the buffer outlives the flush (the
 * caller starts the next batch at 0), so it may change buffers here. */
TR_NOINSTR static void file_flush(tl_state_t *t)
{
    tl_take_reentered(t);
    uint32_t first = tl_head_marks(t);
    uint32_t count = TL_HEAD - first + t->n + t->ntail;
    if (count == 0)
        return;
    int r = file_append(t, &t->buf[first], count, g_budget_soft);
    file_buf_grow(t);
    if (r == 0 && t->lost_wrap) { /* its THREAD_LOST is in a file now: said there */
        atomic_fetch_sub_explicit(&g_wrap_unsaid, t->lost_wrap, memory_order_relaxed);
        t->lost_wrap = 0;
    }
    if (r == 0)
        tl_head_sent(t);
    else if (r == FILE_OVER_BUDGET && g_wrap) {
        uint64_t before = t->lost;
        tl_note_drop(t); /* the budget is all in open segments: this batch goes, counted (THREAD_LOST) */
        t->lost_wrap += t->lost - before;
        atomic_fetch_add_explicit(&g_wrap_unsaid, t->lost - before, memory_order_relaxed);
    }
    else if (r == FILE_OVER_BUDGET)
        file_stop(t, STOP_BUDGET, TRACE_MARK_BUDGET, g_budget_max);
    else
        file_stop(t, STOP_WRITE, TRACE_MARK_WRITE_ERROR, (uint64_t)r);
}

/* g_dir = dir made absolute, without trailing slashes; 0 if it cannot be. */
TR_NOINSTR static int file_absolute(const char *dir)
{
    size_t len = 0, room = sizeof g_dir - FILE_NAME_ROOM;
    while (dir[0] == '.' && dir[1] == '/')
        dir += 2;
    if (dir[0] != '/') {
        if (!getcwd(g_dir, room)) {
            say("TRACE_DIR=", dir, ": no working directory: ", strerror(errno), "; tracing off", (char *)0);
            return 0;
        }
        len = strlen(g_dir);
        if (len > 1)
            g_dir[len++] = '/';
    }
    if (strlen(dir) >= room - len) {
        say("TRACE_DIR=", dir, ": path too long; tracing off", (char *)0);
        return 0;
    }
    strcpy(g_dir + len, dir);
    for (len = strlen(g_dir); len > 1 && g_dir[len - 1] == '/';)
        g_dir[--len] = '\0';
    return 1;
}

/* mkdir -p g_dir; NULL or why it is not a directory we can write in. */
TR_NOINSTR static const char *file_make_dir(void)
{
    struct stat st;
    for (char *p = g_dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(g_dir, 0777); /* the checks below decide */
        *p = '/';
    }
    if (mkdir(g_dir, 0777) != 0 && errno != EEXIST)
        return strerror(errno);
    if (stat(g_dir, &st) != 0)
        return strerror(errno);
    if (!S_ISDIR(st.st_mode))
        return "not a directory";
    if (access(g_dir, W_OK | X_OK) != 0)
        return strerror(errno);
    return NULL;
}

/* TRACE_DIR is made absolute at start, so a later chdir cannot scatter
 * files, and created if missing.  One line on stderr when it cannot be. */
TR_NOINSTR static int file_setup(const char *dir)
{
    if (!file_absolute(dir))
        return 0;
    const char *why = file_make_dir();
    if (why)
        say("TRACE_DIR=", g_dir, ": ", why, "; tracing off", (char *)0);
    return why == NULL;
}

