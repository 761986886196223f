/*
 * hostile.c - test helper: writes the hostile trace files of issue #21, the
 * shapes that once made `callsight analyze` run out of memory or time, each
 * around a small legitimate part whose every count is known, so a test can
 * show both that analyze stays within its bounds and that nothing of the
 * legitimate part is lost.
 *
 *   hostile resync OUT PAIRS LOST TIDS   serve's stream file: PAIRS times a
 *                                        lost-events marker (payload LOST)
 *                                        and a resync claiming depth 2^31-1,
 *                                        on TIDS threads (tid 100, 101, ...)
 *   hostile tids OUT N                   N threads (tid 1000...) of one call each
 *   hostile funcs OUT N                  one thread calling N distinct functions
 *   hostile deep OUT N                   one thread nesting one function N deep
 *   hostile kinds OUT N                  N records of unknown kinds (6..255)
 *                                        among N / 99 calls
 *   hostile wrap OUT                     two lost markers of 2^63 events each
 *   hostile modules OUT THREADS N [paths] [distinct]
 *                                        THREADS threads (tid 3000...) each
 *                                        listing the same N modules, each with
 *                                        its own build-id (or, with paths, its
 *                                        own path /m/K and none), then calling
 *                                        into the first; distinct: thread T's
 *                                        modules end T bytes short, so no two
 *                                        threads' lists are the same
 *   hostile procmods OUT PROCS N         thread 3000 lists N modules, then
 *                                        names PROCS processes (pids 2...),
 *                                        calling into the first after each
 *
 * Every file also holds the legitimate part: thread 1 calls function 0x1000
 * three times (10 ns each).  Timestamps are ns; functions are the given
 * addresses with load bias 0, so they name nothing: tests read the counts.
 * Written little-endian as the runtime and serve write them (trace.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_wire.h"

static FILE *out;
static uint64_t now = 1000;

static void rec(uint8_t kind, uint32_t tid, uint64_t func, uint64_t site)
{
    unsigned char r[TRACE_EVENT_SIZE] = {0};
    wire_put_le64(r, now++);
    wire_put_le64(r + 8, func);
    wire_put_le64(r + 16, site);
    wire_put_le32(r + 24, tid);
    r[28] = kind;
    if (fwrite(r, sizeof r, 1, out) != 1) {
        perror("hostile: write");
        exit(1);
    }
}

static void header(uint32_t pid)
{
    unsigned char h[TRACE_FILE_HEADER_SIZE] = {0};
    memcpy(h, TRACE_FILE_MAGIC, 8);
    wire_put_le32(h + 8, TRACE_FILE_VERSION);
    wire_put_le32(h + 12, TRACE_EVENT_SIZE);
    wire_put_le32(h + 16, TRACE_FILE_HEADER_SIZE);
    wire_put_le32(h + 64, pid);
    fwrite(h, sizeof h, 1, out);
}

/* A module-list record: its part in pad[0], pad[1] as trace.h says. */
static void modrec(uint8_t part, uint32_t tid, uint64_t ts, uint64_t func, uint64_t site, uint8_t pad1)
{
    unsigned char r[TRACE_EVENT_SIZE] = {0};
    wire_put_le64(r, ts);
    wire_put_le64(r + 8, func);
    wire_put_le64(r + 16, site);
    wire_put_le32(r + 24, tid);
    r[28] = TRACE_KIND_MODULE;
    r[29] = part;
    r[30] = pad1;
    if (fwrite(r, sizeof r, 1, out) != 1) {
        perror("hostile: write");
        exit(1);
    }
}

static void call(uint32_t tid, uint64_t func);

static void modules(unsigned long threads, unsigned long n, int paths, int distinct)
{
    for (unsigned long t = 0; t < threads; t++) {
        uint32_t tid = (uint32_t)(3000 + t);
        modrec(TRACE_MODULE_LIST, tid, now++, 1, n, 0);
        for (unsigned long k = 1; k <= n; k++) {
            uint64_t lo = 0x10000000 + 0x1000 * k;
            modrec(TRACE_MODULE_BEGIN, tid, k, 0, 0, 0);
            modrec(TRACE_MODULE_TEXT, tid, k, lo, lo + 0x1000 - (distinct ? t % 0x1000 : 0), 0);
            if (paths) {
                char p[TRACE_MODULE_BYTES + 1] = {0};
                int len = snprintf(p, sizeof p, "/m/%lu", k);
                uint64_t w[3] = {0, 0, 0};
                for (int i = 0; i < len; i++)
                    w[i / 8] |= (uint64_t)(unsigned char)p[i] << (8 * (i % 8));
                modrec(TRACE_MODULE_PATH, tid, w[0], w[1], w[2], (uint8_t)len);
                modrec(TRACE_MODULE_END, tid, k, (uint64_t)len, 0, 0);
            } else {
                modrec(TRACE_MODULE_BUILD_ID, tid, k, 0xb1d, 0, 20);
                modrec(TRACE_MODULE_END, tid, k, 0, 0, 0);
            }
        }
        modrec(TRACE_MODULE_LIST_END, tid, now++, 1, 0, 0);
        call(tid, 0x10001010);
    }
}

/* One thread's list of n modules by build-id, then procs process markers
 * naming pids 2, 3, ...: each binds the thread to a new process, whose
 * latest list its list becomes, and a call into the first module. */
static void procmods(unsigned long procs, unsigned long n)
{
    const uint32_t tid = 3000;
    modrec(TRACE_MODULE_LIST, tid, now++, 1, n, 0);
    for (unsigned long k = 1; k <= n; k++) {
        uint64_t lo = 0x10000000 + 0x1000 * k;
        modrec(TRACE_MODULE_BEGIN, tid, k, 0, 0, 0);
        modrec(TRACE_MODULE_TEXT, tid, k, lo, lo + 0x1000, 0);
        modrec(TRACE_MODULE_BUILD_ID, tid, k, 0xb1d, 0, 20);
        modrec(TRACE_MODULE_END, tid, k, 0, 0, 0);
    }
    modrec(TRACE_MODULE_LIST_END, tid, now++, 1, 0, 0);
    for (unsigned long p = 0; p < procs; p++) {
        rec(TRACE_KIND_MARKER, tid, TRACE_MARK_PROCESS, 2 + p);
        call(tid, 0x10001010);
    }
}

static void call(uint32_t tid, uint64_t func)
{
    rec(TRACE_KIND_ENTER, tid, func, 0);
    now += 9;
    rec(TRACE_KIND_EXIT, tid, func, 0);
}

static void legit(void)
{
    for (int i = 0; i < 3; i++)
        call(1, 0x1000);
}

static void resync(unsigned long pairs, uint64_t lost, unsigned long tids)
{
    for (unsigned long i = 0; i < pairs; i++) {
        uint32_t tid = (uint32_t)(100 + i % tids);
        rec(TRACE_KIND_MARKER, tid, TRACE_MARK_THREAD_LOST, lost);
        rec(TRACE_KIND_MARKER, tid, TRACE_MARK_THREAD_RESYNC, (uint64_t)INT32_MAX << 32);
    }
}

static void deep(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        rec(TRACE_KIND_ENTER, 2, 0x2000, 0);
        now++;
    }
    for (unsigned long i = 0; i < n; i++) {
        now++;
        rec(TRACE_KIND_EXIT, 2, 0x2000, 0);
    }
}

static void kinds(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        if (i % 99 == 0)
            call(3, 0x3000);
        rec((uint8_t)(6 + i % 250), 3, 0x3000, 0);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: hostile resync|tids|funcs|deep|kinds|wrap|modules|procmods OUT [ARGS]\n");
        return 2;
    }
    const char *what = argv[1];
    unsigned long n = argc > 3 ? strtoul(argv[3], NULL, 0) : 0;
    if (!(out = fopen(argv[2], "wb"))) {
        perror(argv[2]);
        return 1;
    }
    header(1);
    legit();
    if (!strcmp(what, "resync") && argc == 6)
        resync(n, strtoull(argv[4], NULL, 0), strtoul(argv[5], NULL, 0));
    else if (!strcmp(what, "tids"))
        for (unsigned long i = 0; i < n; i++)
            call((uint32_t)(1000 + i), 0x1000);
    else if (!strcmp(what, "funcs"))
        for (unsigned long i = 0; i < n; i++)
            call(2, 0x100000 + 16 * i);
    else if (!strcmp(what, "deep"))
        deep(n);
    else if (!strcmp(what, "kinds"))
        kinds(n);
    else if (!strcmp(what, "modules") && argc >= 5 && argc <= 7) {
        int paths = 0, distinct = 0;
        for (int i = 5; i < argc; i++) {
            paths |= !strcmp(argv[i], "paths");
            distinct |= !strcmp(argv[i], "distinct");
        }
        if (paths + distinct != argc - 5) {
            fprintf(stderr, "hostile: modules: paths or distinct, not %s\n", argv[argc - 1]);
            return 2;
        }
        modules(n, strtoul(argv[4], NULL, 0), paths, distinct);
    }
    else if (!strcmp(what, "procmods") && argc == 5)
        procmods(n, strtoul(argv[4], NULL, 0));
    else if (!strcmp(what, "wrap"))
        for (int i = 0; i < 2; i++) {
            rec(TRACE_KIND_MARKER, 4, TRACE_MARK_THREAD_LOST, (uint64_t)1 << 63);
            rec(TRACE_KIND_MARKER, 4, TRACE_MARK_THREAD_RESYNC, 0);
        }
    else {
        fprintf(stderr, "hostile: unknown or incomplete: %s\n", what);
        return 2;
    }
    legit();
    if (fclose(out) != 0) {
        perror(argv[2]);
        return 1;
    }
    return 0;
}
