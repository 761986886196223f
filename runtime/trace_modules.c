/*
 * trace_modules.c - loaded modules: the list of shared objects each thread
 * writes into its records.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

/* The list of loaded objects that each thread writes into its own records
 * (trace.h, "loaded modules").  dl_iterate_phdr's add and remove counters
 * say cheaply, at every flush, whether the set changed; only then is it
 * read again, by one thread at a time.  A flush that finds another thread
 * at the table waits for it, briefly (MOD_WAIT_NS, in the flush's tracer
 * time), so that a thread's first list comes before its first events
 * however threads start; past that it goes on without, and writes the
 * list at a later flush.  In stream mode a list goes into the ring in one
 * put, so a full ring never tears it.  The table is fixed (no malloc); a
 * path longer than MOD_PATH_MAX - 1 is cut, and the analyzer then finds
 * no file by it.
 * Each thread writes the list at its first flush and again whenever the
 * table's number moved past the one it last wrote.
 *
 * A plugin opened and closed between two flushes of a thread would be in
 * none of its lists, though the thread's batch holds its calls.  So the
 * runtime hears of every dlopen and dlclose as it happens: it defines both
 * (the program's own definitions come first in the loader's search, so
 * every caller in the process gets them; the real ones come from
 * dlsym(RTLD_NEXT)) and reads the set again right after each.  A module
 * that went is kept in a small table of closed ones (MOD_GONE_MAX) with
 * the time it went, and each thread's next list carries the closed
 * modules it may have run code of (those closed since its last list, or
 * since it began), marked closed and with that time: so a reader names a
 * call by the module that was there at the call's time, and two plugins
 * loaded in turn at one address stay two.  More closed modules than the
 * table keeps between two lists of a thread are counted as left out.
 * The other way to hear of loads, the loader's _dl_debug_state
 * breakpoint, needs a debugger's ptrace; LD_AUDIT needs an environment
 * setting and a library of its own (docs/runtime.md).  A program that
 * defines dlopen itself, or a runtime built with -DTRACE_NO_DL_HOOKS,
 * sees changes at flushes only, as before. */

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Nonzero when [vaddr, vaddr + len) lies in a loaded segment: only then is
 * a note readable in memory. */
TR_NOINSTR static int build_id_mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_filesz &&
            vaddr - ph->p_vaddr <= ph->p_filesz - len)
            return 1;
    }
    return 0;
}

#define MOD_MAX 128u        /* modules tracked at once; more are counted, not listed */
#define MOD_PATH_MAX 256u   /* bytes of a path kept, NUL included */
#define MOD_CHUNK 32u       /* records written at a time from the stack */
#define MOD_RECS_EACH (4u + (MOD_PATH_MAX + TRACE_MODULE_BYTES - 2u) / TRACE_MODULE_BYTES) /* a module's, at most */
_Static_assert(MOD_RECS_EACH + 1u <= MOD_CHUNK, "a chunk holds LIST or LIST_END and a whole module");
#define MOD_WAIT_NS 2000000u /* a flush waits this long at most for another's list */
#define MOD_GONE_MAX 32u    /* closed modules kept for the threads' next lists */
#define MOD_DL_WAIT_NS 100000000u /* dlopen/dlclose wait this long at most for the table */

typedef struct mod_info {
    uint64_t id, bias, lo, hi; /* number, load bias, executable extent [lo, hi) */
    unsigned char build_id[TRACE_MODULE_BYTES];
    uint8_t build_id_len;
    uint8_t main;              /* the program itself */
    uint16_t path_len;
    char path[MOD_PATH_MAX];
} mod_info_t;

/* The table, twice: a reading fills the one not in use and then makes it
 * current, so a thread writing a list chunk by chunk (file mode) that one
 * change overtakes finishes the list it began, whole. */
static mod_info_t g_mods_tab[2][MOD_MAX], g_mods_scan[MOD_MAX];
static uint32_t g_nmods_tab[2], g_nmods_scan;
static unsigned g_mods_cur; /* the current one (under g_mod_busy) */
#define g_mods (g_mods_tab[g_mods_cur])
#define g_nmods (g_nmods_tab[g_mods_cur])
static uint64_t g_mods_left_out;             /* objects beyond MOD_MAX at the last reading */
static uint64_t g_mod_next_id = 1;
static _Atomic uint64_t g_mod_list;          /* the table's number: 0 until first read */
static _Atomic unsigned long long g_mod_adds, g_mod_subs; /* the loader's counters it was read at */
static atomic_flag g_mod_busy = ATOMIC_FLAG_INIT; /* one thread reads or copies the table at a time */
/* Closed modules: the k-th to go (k = 1, 2, ...) at g_gone[(k - 1) % MOD_GONE_MAX],
 * g_mod_gone of them so far (under g_mod_busy). */
static struct mod_gone {
    mod_info_t m;
    uint64_t at; /* clock_now() once it had gone */
} g_gone[MOD_GONE_MAX];
static trace_event_t g_mod_recs[2u + (MOD_MAX + MOD_GONE_MAX) * MOD_RECS_EACH]; /* a whole list, for the ring
                                                                              * (under g_mod_busy) */

/* The GNU build-id among the notes at p (size bytes, in memory, so in our
 * own byte order): up to `cap` bytes into out; its full length, 0 if none.
 * Names and descriptors are padded to 4 bytes, or to 8 in a segment
 * aligned to 8. */
TR_NOINSTR static uint32_t build_id_in_notes(const unsigned char *p, uint64_t size, uint64_t align, unsigned char *out,
                                  uint32_t cap)
{
    uint64_t pad = align == 8 ? 7u : 3u, off = 0;
    while (size - off >= 12u) {
        uint32_t nh[3]; /* namesz, descsz, type */
        memcpy(nh, p + off, sizeof nh);
        uint64_t name = off + 12u, desc = name + (((uint64_t)nh[0] + pad) & ~pad);
        if (desc > size || nh[1] > size - desc)
            return 0;
        if (nh[2] == NT_GNU_BUILD_ID && nh[0] == 4u && memcmp(p + name, "GNU", 4) == 0 && nh[1] > 0) {
            memcpy(out, p + desc, nh[1] < cap ? nh[1] : cap);
            return nh[1];
        }
        off = desc + (((uint64_t)nh[1] + pad) & ~pad);
        if (off > size)
            return 0;
    }
    return 0;
}

/* The object's build-id from its PT_NOTE segments: its length, 0 if none. */
TR_NOINSTR static uint32_t build_id_of(const struct dl_phdr_info *info, unsigned char *out, uint32_t cap)
{
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint32_t len;
        if (ph->p_type == PT_NOTE && build_id_mapped(info, ph->p_vaddr, ph->p_filesz) &&
            (len = build_id_in_notes((const unsigned char *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr),
                                     ph->p_filesz, ph->p_align, out, cap)) > 0)
            return len;
    }
    return 0;
}

/* One object into g_mods_scan: its extent, build-id and path. */
TR_NOINSTR static int mod_scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    mod_info_t m;
    memset(&m, 0, sizeof m);
    m.bias = (uint64_t)info->dlpi_addr;
    m.lo = UINT64_MAX;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t lo = m.bias + ph->p_vaddr, hi = lo + ph->p_memsz;
        m.lo = lo < m.lo ? lo : m.lo;
        m.hi = hi > m.hi ? hi : m.hi;
    }
    if (m.lo >= m.hi)
        return 0; /* no code: nothing of it can be named */
    uint32_t len = build_id_of(info, m.build_id, sizeof m.build_id);
    m.build_id_len = (uint8_t)(len < TRACE_MODULE_BYTES ? len : TRACE_MODULE_BYTES);
    m.main = g_nmods_scan == 0 && g_mods_left_out == 0; /* the first is the program */
    const char *name = info->dlpi_name;
    ssize_t n = 0;
    if (m.main && (!name || !*name)) {
        n = readlink("/proc/self/exe", m.path, sizeof m.path - 1); /* cold: after a change only */
        n = n > 0 ? n : 0;
    } else if (name) {
        size_t l = strlen(name);
        n = (ssize_t)(l < sizeof m.path - 1 ? l : sizeof m.path - 1);
        memcpy(m.path, name, (size_t)n);
    }
    m.path_len = (uint16_t)n;
    if (g_nmods_scan >= MOD_MAX) {
        g_mods_left_out++;
        return 0;
    }
    g_mods_scan[g_nmods_scan++] = m;
    return 0;
}

/* The loader's add and remove counters, from its first object. */
TR_NOINSTR static int mod_counters(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *c = data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1; /* a loader without them: the set is read once, at start */
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

/* A module read again keeps its number when it is the same mapping. */
TR_NOINSTR static uint64_t mod_id_of(const mod_info_t *m)
{
    for (uint32_t i = 0; i < g_nmods; i++) {
        const mod_info_t *o = &g_mods[i];
        if (o->bias == m->bias && o->lo == m->lo && o->hi == m->hi && o->path_len == m->path_len &&
            memcmp(o->path, m->path, m->path_len) == 0 && o->build_id_len == m->build_id_len &&
            memcmp(o->build_id, m->build_id, m->build_id_len) == 0)
            return o->id;
    }
    return g_mod_next_id++;
}

/* The modules of the last reading that this one (g_mods_scan) lacks have
 * gone: into the closed table, at `at`. */
TR_NOINSTR static void mod_retire(uint64_t at)
{
    for (uint32_t i = 0; i < g_nmods; i++) {
        uint32_t j = 0;
        while (j < g_nmods_scan && g_mods_scan[j].id != g_mods[i].id)
            j++;
        if (j < g_nmods_scan || g_mods[i].main)
            continue;
        uint64_t k = atomic_load_explicit(&g_mod_gone, memory_order_relaxed);
        g_gone[k % MOD_GONE_MAX] = (struct mod_gone){g_mods[i], at};
        atomic_store_explicit(&g_mod_gone, k + 1, memory_order_relaxed);
    }
}

/* Reads the set of loaded objects again if the loader's counters moved
 * since the last reading (or there was none).  Called with g_mod_busy. */
TR_NOINSTR static void mod_refresh(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(mod_counters, c);
    uint64_t list = atomic_load_explicit(&g_mod_list, memory_order_relaxed);
    if (list && c[0] == atomic_load_explicit(&g_mod_adds, memory_order_relaxed) &&
        c[1] == atomic_load_explicit(&g_mod_subs, memory_order_relaxed))
        return;
    g_nmods_scan = 0;
    g_mods_left_out = 0;
    dl_iterate_phdr(mod_scan_one, NULL);
    for (uint32_t i = 0; i < g_nmods_scan; i++)
        g_mods_scan[i].id = mod_id_of(&g_mods_scan[i]);
    mod_retire(clock_now());
    unsigned next = 1u - g_mods_cur;
    memcpy(g_mods_tab[next], g_mods_scan, g_nmods_scan * sizeof *g_mods_scan);
    g_nmods_tab[next] = g_nmods_scan;
    g_mods_cur = next;
    atomic_store_explicit(&g_mod_adds, c[0], memory_order_relaxed);
    atomic_store_explicit(&g_mod_subs, c[1], memory_order_relaxed);
    atomic_store_explicit(&g_mod_list, list + 1, memory_order_relaxed);
}

TR_NOINSTR static void mod_fill(trace_event_t *e, uint32_t tid, uint8_t part, uint8_t count, uint64_t ts, uint64_t func,
                     uint64_t site)
{
    mark_fill(e, ts, tid, func, site); /* the same fields, then the kind and parts */
    e->kind = TRACE_KIND_MODULE;
    e->pad[0] = part;
    e->pad[1] = count;
}

/* Up to 24 bytes as three words, byte i at bits 8i (trace.h). */
TR_NOINSTR static void mod_words(const unsigned char *b, uint32_t n, uint64_t w[3])
{
    unsigned char tmp[TRACE_MODULE_BYTES] = {0};
    memcpy(tmp, b, n);
    for (int k = 0; k < 3; k++)
        w[k] = name_bytes((const char *)tmp + 8 * k);
}

static int mod_take(void);

/* One module's records (at most MOD_RECS_EACH) into rec; how many.  gone:
 * when it was seen closed, 0 while it is loaded. */
TR_NOINSTR static uint32_t mod_records(const mod_info_t *m, uint64_t gone, uint32_t tid, trace_event_t *rec)
{
    uint32_t n = 0;
    uint64_t w[3];
    mod_fill(&rec[n++], tid, TRACE_MODULE_BEGIN, 0, m->id, m->bias,
             m->main ? TRACE_MODULE_MAIN : gone ? TRACE_MODULE_GONE : 0);
    mod_fill(&rec[n++], tid, TRACE_MODULE_TEXT, 0, m->id, m->lo, m->hi);
    if (m->build_id_len) {
        mod_words(m->build_id, m->build_id_len, w);
        mod_fill(&rec[n++], tid, TRACE_MODULE_BUILD_ID, m->build_id_len, w[0], w[1], w[2]);
    }
    for (uint32_t at = 0; at < m->path_len; at += TRACE_MODULE_BYTES) {
        uint32_t k = m->path_len - at < TRACE_MODULE_BYTES ? m->path_len - at : TRACE_MODULE_BYTES;
        mod_words((const unsigned char *)m->path + at, k, w);
        mod_fill(&rec[n++], tid, TRACE_MODULE_PATH, (uint8_t)k, w[0], w[1], w[2]);
    }
    mod_fill(&rec[n++], tid, TRACE_MODULE_END, 0, m->id, m->path_len, gone);
    return n;
}

/* The closed modules thread t's next list carries: from *first to
 * g_mod_gone (under g_mod_busy); those the table no longer holds are
 * counted in *missed. */
TR_NOINSTR static uint64_t mod_gone_since(const tl_state_t *t, uint64_t *first, uint64_t *missed)
{
    uint64_t end = atomic_load_explicit(&g_mod_gone, memory_order_relaxed), from = t->mod_gone;
    from = from > end ? end : from;
    *missed = 0;
    if (end - from > MOD_GONE_MAX) {
        *missed = end - from - MOD_GONE_MAX;
        from = end - MOD_GONE_MAX;
    }
    *first = from;
    return end - from;
}

/* The i-th module of a list of table tab's modules and then closed ones
 * from `first`. */
TR_NOINSTR static uint32_t mod_records_at(unsigned tab, uint32_t i, uint64_t first, uint32_t tid, trace_event_t *rec)
{
    if (i < g_nmods_tab[tab])
        return mod_records(&g_mods_tab[tab][i], 0, tid, rec);
    const struct mod_gone *g = &g_gone[(first + (i - g_nmods_tab[tab])) % MOD_GONE_MAX];
    return mod_records(&g->m, g->at ? g->at : 1, tid, rec);
}

TR_NOINSTR static void mod_release(void)
{
    atomic_flag_clear_explicit(&g_mod_busy, memory_order_release);
}

/* The table as records into sink, a chunk at a time: each chunk is made
 * with g_mod_busy held (on entry) and written with it released, so that
 * other threads wait for a copy, never for a write.  A reading meanwhile
 * fills the other table, so the list goes on from the one it began with;
 * two readings (or a closed module's slot taken) tear it.  Returns with it
 * released; 0 when the whole list went, else nonzero (the sink failed, or
 * the table changed twice or stayed busy meanwhile: the part written is
 * torn, and the list is due again). */
TR_NOINSTR static int mod_write(tl_state_t *t, mod_sink_t sink, uint64_t list)
{
    trace_event_t rec[MOD_CHUNK];
    uint64_t now = clock_now(), first, missed, left_out = g_mods_left_out;
    unsigned tab = g_mods_cur;
    uint64_t ngone = mod_gone_since(t, &first, &missed);
    uint32_t n = 0, i = 0, nmods = g_nmods_tab[tab] + (uint32_t)ngone;
    mod_fill(&rec[n++], t->tid, TRACE_MODULE_LIST, 0, now, list, nmods);
    for (;;) {
        while (i < nmods && n + MOD_RECS_EACH <= MOD_CHUNK)
            n += mod_records_at(tab, i++, first, t->tid, rec + n);
        int last = i == nmods && n < MOD_CHUNK;
        if (last)
            mod_fill(&rec[n++], t->tid, TRACE_MODULE_LIST_END, 0, now, list, left_out + missed);
        mod_release();
        if (sink(t, rec, n) || last)
            return !last;
        n = 0;
        if (!mod_take())
            return -1;
        uint64_t at = atomic_load_explicit(&g_mod_list, memory_order_relaxed);
        if (at != list && (at != list + 1 || ngone == MOD_GONE_MAX)) {
            mod_release();
            return -1;
        }
    }
}

/* g_mod_busy, waiting for it (yielding) for at most MOD_WAIT_NS: its
 * holder reads the loader's list or copies a chunk of it.  0 if not had. */
TR_NOINSTR static int mod_take(void)
{
    uint64_t begin = 0;
    while (atomic_flag_test_and_set_explicit(&g_mod_busy, memory_order_acquire)) {
        uint64_t now = clock_mono_ns();
        if (!begin)
            begin = now;
        else if (now - begin > MOD_WAIT_NS)
            return 0;
        sched_yield();
    }
    return 1;
}

/* The ring's way: the whole list in one put, made and put with
 * g_mod_busy held (a put is a copy under the ring's lock), so that a full
 * ring never tears it: it goes whole, or at a later flush.  Returns with
 * g_mod_busy released; 0 when it went. */
TR_NOINSTR static int mod_write_whole(tl_state_t *t, mod_sink_t sink, uint64_t list)
{
    uint64_t now = clock_now(), first, missed;
    uint32_t n = 0, nmods = g_nmods + (uint32_t)mod_gone_since(t, &first, &missed);
    mod_fill(&g_mod_recs[n++], t->tid, TRACE_MODULE_LIST, 0, now, list, nmods);
    for (uint32_t i = 0; i < nmods; i++)
        n += mod_records_at(g_mods_cur, i, first, t->tid, g_mod_recs + n);
    mod_fill(&g_mod_recs[n++], t->tid, TRACE_MODULE_LIST_END, 0, now, list, g_mods_left_out + missed);
    int rc = sink(t, g_mod_recs, n);
    mod_release();
    return rc;
}

/* At a flush, before its batch: the thread's list when the set changed
 * since it last wrote one (whole: in one sink call, for the ring; else a
 * chunk at a time).  0 when none was due or it went; nonzero when the
 * sink failed (it is due again at the next flush). */
/* Bytes a whole module list can take (TRACE_FULL=wrap keeps room for one). */
TR_NOINSTR static uint64_t mod_list_room(void)
{
    return sizeof g_mod_recs;
}

TR_NOINSTR static int mod_flush(tl_state_t *t, mod_sink_t sink, int whole)
{
    if (!mod_take())
        return 0; /* another thread has had the table too long: this one looks next time */
    mod_refresh();
    uint64_t list = atomic_load_explicit(&g_mod_list, memory_order_relaxed);
    if (list == t->mod_list) {
        mod_release();
        return 0;
    }
    uint64_t gone = atomic_load_explicit(&g_mod_gone, memory_order_relaxed);
    int rc = whole ? mod_write_whole(t, sink, list) : mod_write(t, sink, list); /* both release it */
    if (rc == 0) {
        t->mod_list = list;
        t->mod_gone = gone;
    }
    return rc;
}

#ifndef TRACE_NO_DL_HOOKS
/* Right after a dlopen or dlclose: the set read again, so that a module
 * that comes and goes between two flushes is seen, and one that went is
 * kept with the time it went.  Cold (the loader's own work is far
 * slower); waits at most MOD_DL_WAIT_NS for a flush copying the table. */
TR_NOINSTR static void mod_dl_changed(void)
{
    if (!g_started || stopped())
        return;
    uint64_t begin = clock_mono_ns();
    while (atomic_flag_test_and_set_explicit(&g_mod_busy, memory_order_acquire)) {
        if (clock_mono_ns() - begin > MOD_DL_WAIT_NS)
            return; /* seen at a flush instead */
        sched_yield();
    }
    mod_refresh();
    mod_release();
}

/* The loader's function of that name, or NULL. */
TR_NOINSTR static void *mod_dl_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

TR_NOINSTR void *dlopen(const char *file, int mode)
{
    void *(*real)(const char *, int) = NULL, *p = mod_dl_next("dlopen");
    memcpy(&real, &p, sizeof real); /* ISO C has no object-to-function cast */
    if (!real)
        return NULL;
    int saved;
    void *h = real(file, mode);
    saved = errno;
    if (h)
        mod_dl_changed();
    errno = saved;
    return h;
}

TR_NOINSTR int dlclose(void *handle)
{
    int (*real)(void *) = NULL;
    void *p = mod_dl_next("dlclose");
    memcpy(&real, &p, sizeof real);
    if (!real)
        return -1;
    int rc = real(handle), saved = errno;
    mod_dl_changed();
    errno = saved;
    return rc;
}
#endif

