/*
 * ts_ring.c - the ring reader (part of trace_stream.c): the shm ring
 * created, or a tracer's mapped and checked; the tracers' liveness by their
 * flocks; records taken from [tail, head) without the ring's lock, whole
 * batches that writers committed in a version-3 ring.  With the clock and
 * the atomic views of the shared header that the other parts use too.
 */
#include "ts_internal.h"

/* The monotonic clock in ms, and naps; every part's timing uses them. */
static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The ring header's fields are shared with the tracers: accessed as atomics. */
static _Atomic uint64_t *a64(uint64_t *p) { return (_Atomic uint64_t *)p; }
static _Atomic uint32_t *a32(uint32_t *p) { return (_Atomic uint32_t *)p; }

/* A trace-time stamp for now: the tracers' clock, by its calibration. */
static uint64_t ring_now_ts(const trace_shm_header_t *h)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (!(h->flags & TRACE_FLAG_TICKS) || h->tick_hz == 0 || ns < h->t0_ns)
        return ns;
    uint64_t d = ns - h->t0_ns;
    return h->t0_ticks + d / 1000000000u * h->tick_hz + d % 1000000000u * h->tick_hz / 1000000000u;
}

/* The magic is published last, with release; read it as one 8-byte word. */
static int magic_ok(trace_shm_header_t *h)
{
    uint64_t word = atomic_load_explicit(a64((uint64_t *)(void *)h->magic), memory_order_acquire);
    char want[8] = {0};
    memcpy(want, TRACE_SHM_MAGIC, sizeof TRACE_SHM_MAGIC - 1);
    return memcmp(&word, want, 8) == 0;
}

/* Storage bytes for a ring we create: TRACE_SHM_SIZE minus the header, in whole records. */
static int ring_capacity_from_env(uint32_t *cap)
{
    const char *s = getenv("TRACE_SHM_SIZE");
    uint64_t size = TRACE_SHM_DEFAULT_SIZE;
    if (s && *s) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-') {
            fprintf(stderr, "trace_stream: TRACE_SHM_SIZE='%s' is not a byte count\n", s);
            return -1;
        }
        size = v;
    }
    uint64_t c = size > TRACE_SHM_HEADER_SIZE ? (size - TRACE_SHM_HEADER_SIZE) / 32 * 32 : 0;
    /* capacity is a u32; a 32-bit target also bounds the mapping by size_t and off_t. */
    uint64_t max = (uint64_t)UINT32_MAX / 32 * 32;
    uint64_t sys = sizeof(off_t) < 8 || sizeof(size_t) < 8 ? (uint64_t)INT32_MAX : UINT64_MAX;
    if (sys - TRACE_SHM_HEADER_SIZE < max)
        max = (sys - TRACE_SHM_HEADER_SIZE) / 32 * 32;
    if (c < TRACE_SHM_MIN_CAPACITY || c > max) {
        fprintf(stderr,
                "trace_stream: TRACE_SHM_SIZE=%" PRIu64 " gives a ring of %" PRIu64
                " bytes; it must hold %u to %" PRIu64 " bytes after the %u-byte header\n",
                size, c, TRACE_SHM_MIN_CAPACITY, max, TRACE_SHM_HEADER_SIZE);
        return -1;
    }
    *cap = (uint32_t)c;
    return 0;
}

static int ring_map(struct ring *r, int fd, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "trace_stream: cannot map ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    r->hdr = p;
    r->data = (unsigned char *)p + TRACE_SHM_HEADER_SIZE;
    r->map_len = len;
    return 0;
}

/* The flight recorder's block at `at`: --flight-recorder's after the
 * storage, RECORDING from the start, or --allow-control's after the loss
 * table, OFF until the host turns it on; its magic goes before the
 * ring's, so a tracer that sees the ring sees the block. */
static void ring_init_recorder(struct ring *r, unsigned char *at, uint32_t state)
{
    trace_shm_recorder_t *b = (trace_shm_recorder_t *)(void *)at;
    b->version = TRACE_SHM_RECORDER_VERSION;
    b->state = state;
    memcpy(b->magic, TRACE_SHM_RECORDER_MAGIC, sizeof b->magic);
    r->rec = b;
    r->recording = state == TRACE_RECORDER_RECORDING;
}

/* The loss table after the storage (trace_shm.h); its magic, too, goes
 * before the ring's. */
static void ring_init_losses(struct ring *r)
{
    trace_shm_losses_t *l = (trace_shm_losses_t *)(void *)(r->data + r->hdr->capacity);
    l->version = TRACE_SHM_LOSSES_VERSION;
    l->slots = TRACE_SHM_LOSS_SLOTS;
    memcpy(l->magic, TRACE_SHM_LOSSES_MAGIC, sizeof l->magic);
    r->losses = l;
}

/* --allow-control: the control block in the segment's last bytes, filled
 * before the ring's magic (a tracer reads it after that, with acquire),
 * its generation 0: nothing set, everything recorded as before. */
static void ring_init_control(struct ring *r, size_t len)
{
    trace_shm_control_t *c = (trace_shm_control_t *)(void *)((unsigned char *)r->hdr + len - TRACE_CTL_SIZE);
    c->version = TRACE_CTL_VERSION;
    c->size = TRACE_CTL_SIZE;
    c->pid = (uint32_t)getpid();
    c->blocks = TRACE_CTL_HAS_RECORDER; /* the ring's recorder, right before: it may be switched */
    memcpy(c->magic, TRACE_CTL_MAGIC, sizeof c->magic);
    r->ctl = c;
}

/* A ring an earlier trace_stream --allow-control made: its block, if the
 * segment ends with one. */
static void ring_find_control(struct ring *r, uint64_t seg_size)
{
    uint64_t tail = seg_size - TRACE_SHM_HEADER_SIZE - r->hdr->capacity;
    trace_shm_control_t *c = (trace_shm_control_t *)(void *)((unsigned char *)r->hdr + seg_size - TRACE_CTL_SIZE);
    if (tail >= TRACE_CTL_SIZE + TRACE_SHM_RECORDER_SIZE && memcmp(c->magic, TRACE_CTL_MAGIC, sizeof c->magic) == 0 &&
        c->version == TRACE_CTL_VERSION && c->size == TRACE_CTL_SIZE)
        r->ctl = c;
}

/* A ring a tracer made: its loss table, if it has one (a tracer of this
 * tree or newer made it). */
static void ring_find_losses(struct ring *r, uint64_t seg_size)
{
    trace_shm_losses_t *l = (trace_shm_losses_t *)(void *)(r->data + r->hdr->capacity);
    if (seg_size - TRACE_SHM_HEADER_SIZE - r->hdr->capacity >= TRACE_SHM_LOSSES_SIZE &&
        memcmp(l->magic, TRACE_SHM_LOSSES_MAGIC, sizeof l->magic) == 0 && l->version == TRACE_SHM_LOSSES_VERSION &&
        l->slots == TRACE_SHM_LOSS_SLOTS)
        r->losses = l;
}

/* events of thread tid count as dropped: in its slot of the loss table
 * first, claimed if need be (as a tracer does: trace_shm.h), then in the
 * header's count. */
static void ring_add_dropped(struct ring *r, uint32_t tid, uint64_t events)
{
    trace_shm_losses_t *l = r->losses;
    _Atomic uint64_t *c = l ? a64(&l->other) : NULL;
    for (uint32_t i = 0; l && tid && i < TRACE_SHM_LOSS_SLOTS; i++) {
        uint32_t v = atomic_load_explicit(a32(&l->slot[i].tid), memory_order_relaxed);
        if (v == 0 && !atomic_compare_exchange_strong_explicit(a32(&l->slot[i].tid), &v, tid, memory_order_relaxed,
                                                               memory_order_relaxed) && v != tid)
            continue;
        if (v == 0 || v == tid) {
            c = a64(&l->slot[i].events);
            break;
        }
    }
    if (c) /* relaxed: counters, as the writers' own adds */
        atomic_fetch_add_explicit(c, events, memory_order_relaxed);
    atomic_fetch_add_explicit(a64(&r->hdr->dropped), events, memory_order_relaxed);
}

/* Create the ring; 1 if it exists already, -1 on error.  version: 2 or 3
 * as asked, or 0, the default: version 2 with TRACE_SHM_FEATURE_COMMIT
 * (writers that know it commit their batches, older ones copy under the
 * lock).  A recorder's is plain version 2: its writers move tail over whole
 * batches under the lock; it has the recorder's block after the storage,
 * any other the loss table. */
static int ring_create(struct ring *r, uint32_t cap, int recorder, uint32_t version)
{
    int fd = shm_open(r->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST)
        return 1;
    if (fd < 0) {
        fprintf(stderr, "trace_stream: cannot create ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    /* --group: its members' tracers may write it, nobody else (fchmod: the
     * umask has had its say over shm_open's mode). */
    if (r->share_gid >= 0 && (fchown(fd, (uid_t)-1, (gid_t)r->share_gid) != 0 || fchmod(fd, 0660) != 0)) {
        fprintf(stderr, "trace_stream: cannot give ring %s to group %ld: %s\n", r->name, r->share_gid,
                strerror(errno));
        close(fd);
        shm_unlink(r->name);
        return -1;
    }
    /* --allow-control on a ring that is not a recorder's: a recorder's
     * block after the loss table, for the host to turn on */
    int live = r->want_ctl && !recorder && version != TRACE_SHM_VERSION_COMMIT;
    size_t len = (size_t)TRACE_SHM_HEADER_SIZE + cap + (recorder ? TRACE_SHM_RECORDER_SIZE : TRACE_SHM_LOSSES_SIZE) +
                 (live ? TRACE_SHM_RECORDER_SIZE : 0) + (r->want_ctl ? TRACE_CTL_SIZE : 0);
    if (ftruncate(fd, (off_t)len) != 0) {
        fprintf(stderr, "trace_stream: cannot size ring %s to %zu bytes: %s\n", r->name, len,
                strerror(errno));
        close(fd);
        shm_unlink(r->name);
        return -1;
    }
    int rc = ring_map(r, fd, len);
    if (rc) {
        close(fd);
        shm_unlink(r->name);
        return -1;
    }
    r->fd = fd;
    /* ftruncate zero-filled everything: counters, lock and the tracer's half. */
    trace_shm_header_t *h = r->hdr;
    h->version = recorder || version != TRACE_SHM_VERSION_COMMIT ? TRACE_SHM_VERSION : TRACE_SHM_VERSION_COMMIT;
    h->capacity = cap;
    if (recorder)
        ring_init_recorder(r, r->data + cap, TRACE_RECORDER_RECORDING);
    else
        ring_init_losses(r);
    if (live) {
        ring_init_recorder(r, r->data + cap + TRACE_SHM_LOSSES_SIZE, TRACE_RECORDER_OFF);
        r->rec_live = 1;
    }
    r->mixed = !recorder && version == 0 && r->losses;
    if (r->mixed) /* before the ring's magic, as the table is */
        r->losses->features = TRACE_SHM_FEATURE_COMMIT;
    if (r->want_ctl)
        ring_init_control(r, len);
    if (r->ctl && !r->rec)
        r->ctl->blocks = 0; /* a version-3 ring: no recorder */
    char magic[8] = {0};
    memcpy(magic, TRACE_SHM_MAGIC, sizeof TRACE_SHM_MAGIC - 1);
    uint64_t word;
    memcpy(&word, magic, 8);
    atomic_store_explicit(a64((uint64_t *)(void *)h->magic), word, memory_order_release);
    r->capacity = cap;
    r->version = h->version;
    r->tail = 0;
    return 0;
}

static const char *ring_header_problem(const trace_shm_header_t *h, uint64_t seg_size)
{
    if (h->version != TRACE_SHM_VERSION_COMMIT && h->version != TRACE_SHM_VERSION)
        return "unsupported ring version";
    if (h->capacity < TRACE_SHM_MIN_CAPACITY || h->capacity % 32)
        return "capacity is not a multiple of 32 of at least the minimum";
    if ((uint64_t)TRACE_SHM_HEADER_SIZE + h->capacity > seg_size)
        return "capacity runs past the end of the segment";
    return NULL;
}

/* A ring we did not create is used only if it is ours and nobody else can
 * write it: another local user may have made it first under a name they
 * guessed, to read our events or forge records into them.  With --group,
 * also one of that group that others cannot write: only a member (or
 * root) can give a file to a group.  0 if usable. */
static int ring_owner_ok(const struct ring *r, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "trace_stream: cannot stat ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 002) == 0 &&
        ((st.st_uid == geteuid() && (st.st_mode & 020) == 0) ||
         (r->share_gid >= 0 && (long)st.st_gid == r->share_gid)))
        return 0;
    char group[80] = "";
    if (r->share_gid >= 0)
        snprintf(group, sizeof group, " or of group %ld that others cannot write", r->share_gid);
    fprintf(stderr,
            "trace_stream: refusing ring %s: owned by uid %ju with mode %04o, not a ring of uid %ju that only "
            "it can write%s; remove it (rm /dev/shm%s) if it is stale, or use another name\n",
            r->name, (uintmax_t)st.st_uid, (unsigned)(st.st_mode & 07777), (uintmax_t)geteuid(), group, r->name);
    return -1;
}

/* Map a ring someone else created; wait (bounded) until it is initialised. */
static int ring_attach(struct ring *r)
{
    int fd = shm_open(r->name, O_RDWR, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1; /* gone again: the caller retries creating it */
        fprintf(stderr, "trace_stream: cannot open ring %s: %s\n", r->name, strerror(errno));
        return -1;
    }
    if (ring_owner_ok(r, fd)) {
        close(fd);
        return -1;
    }
    struct stat st;
    int waited = 0;
    for (;;) {
        if (fstat(fd, &st) != 0) {
            fprintf(stderr, "trace_stream: cannot stat ring %s: %s\n", r->name, strerror(errno));
            close(fd);
            return -1;
        }
        if ((uint64_t)st.st_size >= TRACE_SHM_HEADER_SIZE + TRACE_SHM_MIN_CAPACITY)
            break;
        if (waited++ >= ATTACH_WAIT_MS) {
            fprintf(stderr, "trace_stream: %s exists but is too small to be a ring (%jd bytes)\n",
                    r->name, (intmax_t)st.st_size);
            close(fd);
            return -1;
        }
        sleep_ms(1);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        fprintf(stderr, "trace_stream: ring %s is too large to map here\n", r->name);
        close(fd);
        return -1;
    }
    int rc = ring_map(r, fd, (size_t)st.st_size);
    if (rc) {
        close(fd);
        return -1;
    }
    while (!magic_ok(r->hdr)) {
        if (waited++ >= ATTACH_WAIT_MS) {
            fprintf(stderr, "trace_stream: %s is not a callsight ring (no TKSHM magic)\n", r->name);
            munmap(r->hdr, r->map_len);
            close(fd);
            return -1;
        }
        sleep_ms(1);
    }
    const char *why = ring_header_problem(r->hdr, (uint64_t)st.st_size);
    if (why) {
        fprintf(stderr, "trace_stream: broken ring %s: %s\n", r->name, why);
        munmap(r->hdr, r->map_len);
        close(fd);
        return -1;
    }
    r->fd = fd;
    r->capacity = r->hdr->capacity;
    r->version = r->hdr->version;
    ring_find_losses(r, (uint64_t)st.st_size);
    /* made by an earlier trace_stream of this tree: batches among records */
    r->mixed = r->version == TRACE_SHM_VERSION && r->losses &&
               (atomic_load_explicit(a32(&r->losses->features), memory_order_relaxed) & TRACE_SHM_FEATURE_COMMIT);
    if (r->want_ctl)
        ring_find_control(r, (uint64_t)st.st_size);
    r->tail = atomic_load_explicit(a64(&r->hdr->tail), memory_order_acquire);
    return 0;
}

/* Create the ring, or map the one a tracer created first. */
static int ring_open(struct ring *r, int quiet, int recorder, uint32_t version)
{
    uint32_t cap;
    if (ring_capacity_from_env(&cap))
        return -1;
    /* Creator and tracer may race, and a ring may vanish between our two calls. */
    for (int attempt = 0; attempt < 100; attempt++) {
        int rc = ring_create(r, cap, recorder, version);
        if (rc == 1 && recorder) {
            fprintf(stderr, "trace_stream: ring %s exists already; a flight recorder needs a ring of its "
                            "own: start trace_stream before the program, or remove the segment\n", r->name);
            return -1;
        }
        if (rc == 0) {
            if (!quiet)
                fprintf(stderr, "trace_stream: created ring %s (%" PRIu32 " bytes, version %" PRIu32 ")\n",
                        r->name, cap, r->version);
            return 0;
        }
        if (rc < 0)
            return -1;
        rc = ring_attach(r);
        if (rc == 0) {
            if (!quiet)
                fprintf(stderr, "trace_stream: attached to ring %s (%" PRIu32 " bytes, version %" PRIu32 ")\n",
                        r->name, r->capacity, r->version);
            if (r->want_ctl && !r->ctl)
                fprintf(stderr, "trace_stream: --allow-control: ring %s was made by a tracer, without a control "
                                "block; no live control on it (start trace_stream before the program)\n", r->name);
            return 0;
        }
        if (rc < 0)
            return -1;
    }
    fprintf(stderr, "trace_stream: ring %s keeps appearing and vanishing\n", r->name);
    return -1;
}

static void ring_close(struct ring *r)
{
    munmap(r->hdr, r->map_len);
    close(r->fd);
    shm_unlink(r->name);
}

/*
 * Every tracer holds a shared flock on the segment for its lifetime (the
 * kernel drops it however the process ends) and takes it before it counts
 * itself in `writers`.  So while we hold the exclusive lock no tracer is
 * alive, and any `writers` left are tracers that died without detaching.
 * Tested every LIVENESS_MS while writers > 0; the lock is let go at once,
 * so a tracer attaching meanwhile waits an instant at most.  Tracers of
 * other agents (the reference implementation) hold no such lock, so death
 * is concluded only once a shared lock has been seen on this ring: a live
 * callsight tracer shows it at our first look.  Returns the number of dead
 * tracers still counted (0: all is well, or we cannot tell).
 */
static uint32_t ring_dead_writers(struct ring *r)
{
    uint64_t t = now_ms();
    if (t < r->live_at)
        return 0;
    r->live_at = t + LIVENESS_MS;
    if (atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire) == 0)
        return 0;
    if (flock(r->fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            r->lock_seen = 1;
        return 0; /* a tracer lives (or we were interrupted: look again later) */
    }
    /* acquire: a tracer that detached normally decremented with release
     * before its shared lock went; what is left is the dead ones' */
    uint32_t dead = atomic_load_explicit(a32(&r->hdr->writers), memory_order_acquire);
    flock(r->fd, LOCK_UN);
    return r->lock_seen ? dead : 0;
}

/* len bytes of storage from ring position pos (len <= capacity). */
static void ring_copy_out(const struct ring *r, uint64_t pos, unsigned char *buf, size_t len)
{
    size_t off = (size_t)(pos % r->capacity);
    size_t first = r->capacity - off < len ? r->capacity - off : len;
    memcpy(buf, r->data + off, first);
    memcpy(buf + first, r->data, len - first);
}

/*
 * Version 3: the batch header at pos (< head, both checked by the caller).
 * 1 committed, 0 still being copied, -1 broken (reported): a commit word
 * that is neither, or records that run past head.
 */
static int batch_at(const struct ring *r, uint64_t pos, uint64_t head, trace_shm_batch_t *b)
{
    _Atomic uint64_t *commit = (_Atomic uint64_t *)(void *)(r->data + pos % r->capacity);
    /* acquire: pairs with the writer's release store of the commit word,
     * so its records are seen once the word says done */
    b->commit = atomic_load_explicit(commit, memory_order_acquire);
    /* the rest was written before head covered it (our acquire load of head) */
    memcpy((unsigned char *)b + sizeof b->commit, (unsigned char *)commit + sizeof b->commit,
           sizeof *b - sizeof b->commit);
    if ((b->commit == pos || b->commit == ~pos) && b->records >= 1 &&
        b->records <= (head - pos) / TRACE_EVENT_SIZE - 1)
        return b->commit == pos;
    fprintf(stderr,
            "trace_stream: broken ring %s: the batch header at %" PRIu64 " (head %" PRIu64
            ") says commit %" PRIu64 ", %" PRIu32 " records\n",
            r->name, pos, head, b->commit, b->records);
    return -1;
}

/* Whether a tracer still lives, after an exclusive flock of the segment
 * succeeded or not (ring_dead_writers): 0 none does; 1 one does or we
 * cannot tell. */
static int ring_tracer_alive(struct ring *r)
{
    if (flock(r->fd, LOCK_EX | LOCK_NB) != 0)
        return 1;
    flock(r->fd, LOCK_UN);
    return !r->lock_seen; /* tracers that hold no lock: unknowable */
}

/*
 * Version 3: the batch at tail has stayed uncommitted.  Its writer is
 * waited for while it may live: tested a LIVENESS_MS after the batch was
 * first seen there, and every LIVENESS_MS after that.  A tid that is gone
 * (ESRCH), or no tracer alive at all, means nobody will commit it: 1, skip
 * it.  A tid we cannot test (EPERM, reused) counts as alive.
 */
static int batch_abandoned(struct ring *r, const trace_shm_batch_t *b)
{
    uint64_t t = now_ms();
    if (r->stuck_at != r->tail) {
        r->stuck_at = r->tail;
        r->stuck_ms = t;
        return 0;
    }
    if (t - r->stuck_ms < LIVENESS_MS)
        return 0;
    r->stuck_ms = t;
    if (r->vanished || !ring_tracer_alive(r))
        return 1;
    /* the tid is untrusted: 0 or a negative pid would signal a group */
    if (b->tid == 0 || b->tid > (uint32_t)INT_MAX)
        return 1;
    return kill((pid_t)b->tid, 0) != 0 && errno == ESRCH;
}

/* Version 3: a batch nobody will commit: its events count as dropped (in
 * the ring header's count, which the notices carry), and tail passes it. */
static void batch_skip(struct ring *r, const trace_shm_batch_t *b)
{
    fprintf(stderr,
            "trace_stream: ring %s: a tracer thread (tid %" PRIu32 ") died in the middle of a batch; "
            "its %" PRIu32 " events count as dropped\n",
            r->name, b->tid, b->events);
    ring_add_dropped(r, b->tid, b->events);
    r->tail += ((uint64_t)b->records + 1u) * TRACE_EVENT_SIZE;
}

/* A version-2 ring with TRACE_SHM_FEATURE_COMMIT: whether the record at
 * pos (< head) is a batch header, by the byte where a record has its kind
 * (written before head covered it). */
static int batch_marked(const struct ring *r, uint64_t pos)
{
    return r->data[pos % r->capacity + offsetof(trace_shm_batch_t, mark)] == TRACE_SHM_BATCH_MARK;
}

/* Plain records (a version-2 writer's, whole once head covers them) from
 * pos on, up to the next batch header or head, at most max bytes. */
static size_t plain_run(const struct ring *r, uint64_t pos, uint64_t head, size_t max)
{
    size_t len = 0;
    while (pos + len < head && len + TRACE_EVENT_SIZE <= max && !batch_marked(r, pos + len))
        len += TRACE_EVENT_SIZE;
    return len;
}

/*
 * Version 3 (and 2 with TRACE_SHM_FEATURE_COMMIT: plain records too, taken
 * as they are): the records of the committed batches from tail on, without
 * their headers, as many whole batches as fit in max; stops at one still
 * being copied (or skips it: batch_abandoned).  Bytes copied, -1 broken.
 */
static long ring_take_batches(struct ring *r, unsigned char *buf, size_t max, uint64_t head)
{
    size_t n = 0;
    uint64_t tail0 = r->tail;
    while (r->tail < head) {
        trace_shm_batch_t b;
        if (r->mixed && !batch_marked(r, r->tail)) {
            size_t len = plain_run(r, r->tail, head, max - n);
            if (len == 0)
                break; /* buf is full */
            ring_copy_out(r, r->tail, buf + n, len);
            n += len;
            r->tail += len;
            continue;
        }
        int done = batch_at(r, r->tail, head, &b);
        if (done < 0)
            return -1;
        if (!done) {
            if (!batch_abandoned(r, &b))
                break;
            batch_skip(r, &b);
            continue;
        }
        size_t len = (size_t)b.records * TRACE_EVENT_SIZE;
        if (len > max - n) {
            if (len <= max)
                break; /* the next take */
            fprintf(stderr, "trace_stream: broken ring %s: a batch of %" PRIu32 " records, more than a chunk\n",
                    r->name, b.records);
            return -1;
        }
        ring_copy_out(r, r->tail + TRACE_EVENT_SIZE, buf + n, len);
        n += len;
        r->tail += len + TRACE_EVENT_SIZE;
    }
    /* release: pairs with a writer's acquire load of tail, so our copies
     * are done before it reuses the room */
    if (r->tail != tail0)
        atomic_store_explicit(a64(&r->hdr->tail), r->tail, memory_order_release);
    return (long)n;
}

/* Version 3 (or 2 with commits): records (not headers) in [tail, head),
 * as the headers say; 0 for a ring whose headers do not add up. */
static uint64_t ring_records_left(const struct ring *r, uint64_t head)
{
    uint64_t pos = r->tail, records = 0;
    while (pos < head) {
        if (r->mixed && !batch_marked(r, pos)) {
            records++;
            pos += TRACE_EVENT_SIZE;
            continue;
        }
        uint32_t n; /* not the commit word, which a writer may be storing */
        memcpy(&n, r->data + pos % r->capacity + offsetof(trace_shm_batch_t, records), sizeof n);
        if (n < 1 || n > (head - pos) / TRACE_EVENT_SIZE - 1)
            return 0;
        records += n;
        pos += ((uint64_t)n + 1u) * TRACE_EVENT_SIZE;
    }
    return records;
}

/*
 * Copy up to `max` bytes of records from [tail, head) into buf and hand the
 * space back to the writers.  Returns the bytes copied, or -1 for a broken
 * ring.
 */
static long ring_take(struct ring *r, unsigned char *buf, size_t max)
{
    trace_shm_header_t *h = r->hdr;
    if (!magic_ok(h) || h->version != r->version || h->capacity != r->capacity) {
        fprintf(stderr, "trace_stream: broken ring %s: its header changed under us\n", r->name);
        return -1;
    }
    uint64_t head = atomic_load_explicit(a64(&h->head), memory_order_acquire);
    uint64_t used = head - r->tail;
    if (head < r->tail || used > r->capacity || head % TRACE_EVENT_SIZE || r->tail % TRACE_EVENT_SIZE) {
        fprintf(stderr,
                "trace_stream: broken ring %s: head %" PRIu64 ", tail %" PRIu64 ", capacity %" PRIu32
                "\n",
                r->name, head, r->tail, r->capacity);
        return -1;
    }
    if (r->version == TRACE_SHM_VERSION_COMMIT || r->mixed)
        return ring_take_batches(r, buf, max, head);
    size_t n = used < max ? (size_t)used : max;
    ring_copy_out(r, r->tail, buf, n);
    r->tail += n;
    atomic_store_explicit(a64(&h->tail), r->tail, memory_order_release);
    return (long)n;
}

static uint64_t ring_dropped(const trace_shm_header_t *h)
{
    return atomic_load_explicit(a64((uint64_t *)&h->dropped), memory_order_relaxed);
}
