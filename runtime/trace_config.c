/*
 * trace_config.c - the runtime's settings, read from the environment.
 *
 * From the environment, once, at start (trace_setup).  A bad value gets one
 * line and the default.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR static int cfg_enabled(void)
{
    const char *v = getenv("TRACE_ENABLE");
    if (v && strcmp(v, "1") == 0)
        return 1;
    if (v && *v && strcmp(v, "0") != 0)
        say("TRACE_ENABLE=", v, " is not 0 or 1; tracing off", (char *)0);
    return 0;
}

TR_NOINSTR static uint64_t cfg_u64(const char *name, uint64_t min, uint64_t max, uint64_t def)
{
    const char *v = getenv(name), *p = v;
    uint64_t x = 0;
    if (!v || !*v)
        return def;
    for (; *p >= '0' && *p <= '9' && x <= (UINT64_MAX - 9) / 10; p++)
        x = x * 10 + (uint64_t)(*p - '0');
    if (*p == '\0' && x >= min && x <= max)
        return x;
    char a[21], b[21], c[21];
    say(name, "=", v, " is not a whole number from ", num(min, a), " to ", num(max, b), "; using ", num(def, c),
        (char *)0);
    return def;
}

/* TRACE_THREADS=GLOB[,GLOB...]: only threads whose name matches are traced. */
/* TRACE_MODE and the summary settings; TRACE_SUMMARY_MS (0: snapshots at
 * thread and process exit only). */
TR_NOINSTR static uint64_t cfg_mode(void)
{
    const char *m = getenv("TRACE_MODE");
    if (m && !strcmp(m, "summary"))
        g_summary = 1;
    else if (m && !strcmp(m, "both")) /* events and summaries, to check one against the other */
        g_summary = 2;
    else if (m && *m && strcmp(m, "events"))
        say("TRACE_MODE=", m, ": expected events, summary or both; events", (char *)0);
    g_sum_funcs = (uint32_t)cfg_u64("TRACE_SUMMARY_FUNCS", 16, 65536, 65536);
    g_sum_depth = (uint32_t)cfg_u64("TRACE_SUMMARY_DEPTH", 16, 65536, 256);
    return cfg_u64("TRACE_SUMMARY_MS", 0, 3600000u, 1000u);
}

TR_NOINSTR static void cfg_threads(void)
{
    const char *v = getenv("TRACE_THREADS");
    if (!v || !*v)
        return;
    if (strlen(v) > THREADS_MAX) {
        char n[21];
        say("TRACE_THREADS is longer than ", num(THREADS_MAX, n), " bytes; tracing every thread", (char *)0);
        return;
    }
    strcpy(g_threads, v);
}

/* TRACE_TRIGGER's function by name: the program's own symbol table, read
 * once from its file at start (the hooks never look anything up).  Its
 * link-time address plus the load bias, or 0. */
TR_NOINSTR static uint64_t trig_symbol_in(const unsigned char *f, uint64_t size, const char *name)
{
    const ElfW(Ehdr) *eh = (const void *)f;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        eh->e_shoff > size || (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size - eh->e_shoff)
        return 0;
    const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
    for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size ||
                sh[i].sh_size > size - sh[i].sh_offset)
                continue;
            const ElfW(Shdr) *str = &sh[sh[i].sh_link];
            if (str->sh_offset > size || str->sh_size > size - str->sh_offset)
                continue;
            const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
            for (uint64_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
                if ((sym[k].st_info & 0xf) == STT_FUNC && sym[k].st_value && sym[k].st_name < str->sh_size &&
                    strncmp((const char *)f + str->sh_offset + sym[k].st_name, name,
                            str->sh_size - sym[k].st_name) == 0)
                    return (uint64_t)sym[k].st_value + g_load_bias;
        }
    return 0;
}

TR_NOINSTR static uint64_t trig_symbol(const char *name)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint64_t addr = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
        void *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f != MAP_FAILED) {
            addr = trig_symbol_in(f, (uint64_t)st.st_size, name);
            munmap(f, (size_t)st.st_size);
        }
    }
    close(fd);
    return addr;
}

/* LIMIT of TRACE_TRIGGER: a number and ns, us, ms or s; 0 when it is not one. */
TR_NOINSTR static uint64_t trig_limit(const char *v)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    static const struct { const char *unit; uint64_t ns; } units[] = {
        {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    for (unsigned i = 0; end != v && !errno && i < sizeof units / sizeof *units; i++)
        if (strcmp(end, units[i].unit) == 0 && n <= UINT64_MAX / units[i].ns)
            return (uint64_t)n * units[i].ns;
    return 0;
}

/* TRACE_TRIGGER=NAME>LIMIT (NAME may be a link-time address, 0x...). */
TR_NOINSTR static void cfg_trigger(void)
{
    const char *v = getenv("TRACE_TRIGGER");
    if (!v || !*v)
        return;
    const char *gt = strrchr(v, '>');
    char name[256];
    if (!gt || gt == v || (size_t)(gt - v) >= sizeof name || (g_trig_ns = trig_limit(gt + 1)) == 0) {
        say("TRACE_TRIGGER=", v, " is not NAME>LIMIT (such as parse>2ms; units ns, us, ms, s); no trigger",
            (char *)0);
        return;
    }
    if (g_summary) {
        say("TRACE_TRIGGER is for event traces, not TRACE_MODE=summary; no trigger", (char *)0);
        return;
    }
    memcpy(name, v, (size_t)(gt - v));
    name[gt - v] = 0;
    uint64_t addr = 0;
    if (strncmp(name, "0x", 2) == 0) {
        char *end;
        addr = strtoull(name + 2, &end, 16);
        addr = *end || end == name + 2 || addr == 0 ? 0 : addr + g_load_bias;
    } else
        addr = trig_symbol(name);
    if (addr == 0)
        say("TRACE_TRIGGER: no function ", name, " in this program's symbols; no trigger", (char *)0);
    g_trig_func = (uintptr_t)addr;
}

/* TRACE_FULL: what a full TRACE_MAX_MB does in file mode. */
TR_NOINSTR static int cfg_full(void)
{
    const char *v = getenv("TRACE_FULL");
    if (!v || !*v || strcmp(v, "stop") == 0)
        return 0;
    if (strcmp(v, "wrap") == 0)
        return 1;
    say("TRACE_FULL=", v, " is not stop or wrap; stopping when full", (char *)0);
    return 0;
}

TR_NOINSTR static int cfg_clock(void)
{
    const char *v = getenv("TRACE_CLOCK");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return CLOCK_AUTO;
    if (strcmp(v, "tsc") == 0)
        return CLOCK_TSC;
    if (strcmp(v, "mono") == 0)
        return CLOCK_MONO;
    say("TRACE_CLOCK=", v, " is not auto, tsc or mono; using auto", (char *)0);
    return CLOCK_AUTO;
}

