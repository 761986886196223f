/*
 * trace_reader.c - unit test of src/read/trace_reader.c on synthetic files it
 * writes itself: little- and big-endian files, header_size above 80, tick
 * conversion with and without the exit anchor, truncation, foreign headers,
 * tail seeking, and reads that cross the reader's buffer; the batch reader
 * against the one-at-a-time one; and the tick conversion against the plain
 * double-precision formula it must reproduce bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/trace_reader.h"
#include "scratch.h"
#include "unit.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static char dir[160]; /* scratch_make: under $TMPDIR */
static char path[256];

/* A growing byte buffer that the test fills in either byte order. */
static unsigned char file[1 << 20];
static size_t flen;
static int big;

static void put(uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        int shift = big ? 8 * (bytes - 1 - i) : 8 * i;
        file[flen++] = (unsigned char)(v >> shift);
    }
}

struct hdr {
    const char *magic;
    uint32_t version, event_size, header_size, flags;
    uint64_t bias, hz, t0_ticks, t0_ns;
    uint32_t pid, seq;
};

static struct hdr default_hdr(void)
{
    return (struct hdr){"MLTRACE", 2, 32, 80, 0, 0x5000, 0, 0, 0, 1234, 7};
}

static void begin(const struct hdr *h)
{
    flen = 0;
    big = !!(h->flags & TRACE_FLAG_BIGENDIAN);
    memset(file, 0, 8);
    memcpy(file, h->magic, strlen(h->magic) < 8 ? strlen(h->magic) : 8);
    flen = 8;
    put(h->version, 4);
    put(h->event_size, 4);
    put(h->header_size, 4);
    put(h->flags, 4);
    put(h->bias, 8);
    put(h->hz, 8);
    put(h->t0_ticks, 8);
    put(h->t0_ns, 8);
    put(99, 8); /* hook_ns */
    put(h->pid, 4);
    put(h->seq, 4);
    put(0, 8);
    while (flen < h->header_size)
        file[flen++] = 0xa5; /* what a reader that assumes 80 would misread */
}

static void event(uint64_t ts, uint64_t func, uint64_t site, uint32_t tid, uint8_t kind)
{
    put(ts, 8);
    put(func, 8);
    put(site, 8);
    put(tid, 4);
    file[flen++] = kind;
    put(0, 3);
}

static const char *save(const char *name)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(file, 1, flen, f) != flen || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

static struct trace_reader r;
static char msg[128];

/* Open name and expect failure whose message contains `want`. */
static void expect_reject(const char *name, const char *want, const char *what)
{
    int rc = trace_reader_open(&r, save(name), msg, sizeof msg);
    if (rc == 0)
        trace_reader_close(&r);
    else if (!strstr(msg, want))
        printf("# message: %s\n", msg);
    ok(rc < 0 && strstr(msg, want) != NULL, what);
}

/* Headers the reader must refuse: the default header with the nonzero
 * fields here in its place, the file cut to cut_at bytes unless that is -1,
 * and the words the refusal must say. */
struct bad_header {
    const char *magic;
    uint32_t version, event_size, header_size;
    long cut_at;
    const char *name, *want, *what;
};
static const struct bad_header bad_headers[] = {
    {"NOTRACE", 0, 0, 0, -1, "magic.bin", "bad magic", "bad magic rejected"},
    {NULL, 4, 0, 0, -1, "version.bin", "version", "version 4 rejected"},
    {NULL, 0, 40, 0, -1, "esize.bin", "event size", "event_size 40 rejected"},
    {NULL, 0, 0, 64, -1, "hsize.bin", "header_size", "header_size below 80 rejected"},
    {NULL, 0, 0, 81, -1, "hsize81.bin", "header_size neither 80 nor a multiple of 32",
     "header_size 81 rejected: every record would be misread"},
    {NULL, 0, 0, 136, -1, "hsize136.bin", "header_size neither 80 nor a multiple of 32",
     "header_size 136 rejected"},
    {NULL, 0, 0, 0, 50, "short.bin", "truncated header", "file shorter than the header rejected"},
    {NULL, 0, 0, 4096, 200, "short2.bin", "truncated header", "file shorter than header_size rejected"},
    {NULL, 0, 0, 4096, 0, "empty.bin", "empty", "empty file rejected"},
};

static void sample_events(void)
{
    event(1000, 0x401000, 0x401234, 77, TRACE_KIND_ENTER);
    event(2500, 0x401000, 0x401234, 77, TRACE_KIND_EXIT);
    event(3000, TRACE_MARK_THREAD_RESYNC, 0xfffffffe00000003ull, 77, TRACE_KIND_MARKER);
}

static int read_sample(const char *name)
{
    trace_event_t ev[4];
    int n = 0, good;
    if (trace_reader_open(&r, save(name), msg, sizeof msg) < 0) {
        printf("# %s: %s\n", name, msg);
        return 0;
    }
    while (n < 4 && trace_reader_next(&r, &ev[n]) == TRACE_READER_EVENT)
        n++;
    good = n == 3 && ev[0].ts == 1000 && ev[0].func == 0x401000 && ev[0].call_site == 0x401234 &&
           ev[0].tid == 77 && ev[0].kind == TRACE_KIND_ENTER && ev[1].ts == 2500 &&
           ev[1].kind == TRACE_KIND_EXIT && ev[2].func == TRACE_MARK_THREAD_RESYNC &&
           ev[2].call_site == 0xfffffffe00000003ull && ev[2].kind == TRACE_KIND_MARKER &&
           r.hdr.pid == 1234 && r.hdr.seq == 7 && r.hdr.load_bias == 0x5000 &&
           trace_reader_ns(&r, ev[1].ts) == 2500;
    trace_reader_close(&r);
    return good;
}

/* The conversion as trace_reader first did it (nearbyint of the elapsed
 * ticks times the rate, saturated): the fast one must give the same ns for
 * every input. */
static int64_t reference_ns(uint64_t t0_ticks, uint64_t t0_ns, double per_tick, uint64_t ts)
{
    double d = ts >= t0_ticks ? (double)(ts - t0_ticks) * per_tick : -(double)(t0_ticks - ts) * per_tick;
    int64_t base = t0_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)t0_ns;
    d = nearbyint(d);
    if (d >= 9.2e18 || (d > 0 && (int64_t)d > INT64_MAX - base))
        return INT64_MAX;
    if (d <= -9.2e18)
        return INT64_MIN;
    return base + (int64_t)d;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void) { return unit_xorshift(&rng); }

/* Timestamps a conversion meets: around t0, on either side of where the
 * result reaches 2^51 ns from t0_ns (the fast path's limit) and 2^63 ticks
 * (the signed difference's), halfway cases, and anything at all. */
static uint64_t probe_ts(uint64_t t0, double per_tick, unsigned i)
{
    uint64_t edge = (uint64_t)(2251799813685248.0 / per_tick < 1.8e19 ? 2251799813685248.0 / per_tick : 0);
    uint64_t jitter = next_rand() % 4096;
    switch (i % 8) {
    case 0:
        return t0 + jitter;
    case 1:
        return t0 - jitter;
    case 2:
        return t0 + edge - 2048 + jitter;
    case 3:
        return t0 - edge - 2048 + jitter;
    case 4:
        return t0 + (1ull << 63) - 2048 + jitter;
    case 5:
        return t0 + (next_rand() >> (next_rand() % 64));
    case 6:
        return t0 - (next_rand() >> (next_rand() % 64));
    default:
        return next_rand();
    }
}

/* Convert `probes` timestamps under one clock (header, and an exit anchor
 * when anchor_ticks is not 0), one by one and then as records read in
 * batches (whose conversion has a path of its own near t0); 1 when every
 * one matches the reference. */
static int clock_matches(uint64_t hz, uint64_t t0_ticks, uint64_t t0_ns, uint64_t anchor_ticks,
                         uint64_t anchor_ns, unsigned probes)
{
    static uint64_t probed[20000];
    struct hdr h = default_hdr();
    h.flags = TRACE_FLAG_TICKS;
    h.hz = hz;
    h.t0_ticks = t0_ticks;
    h.t0_ns = t0_ns;
    begin(&h);
    if (trace_reader_open(&r, save("clock.bin"), msg, sizeof msg) < 0)
        return 0;
    if (anchor_ticks)
        trace_reader_set_anchor(&r, anchor_ticks, anchor_ns);
    double per_tick = r.ns_per_tick;
    int good = 1;
    for (unsigned i = 0; i < probes; i++) {
        uint64_t ts = probed[i] = probe_ts(t0_ticks, per_tick, i);
        int64_t want = reference_ns(t0_ticks, t0_ns, per_tick, ts), got = trace_reader_ns(&r, ts);
        if (got != want && good) {
            printf("# hz %llu t0 %llu/%llu ts %llu: %lld, want %lld\n", (unsigned long long)hz,
                   (unsigned long long)t0_ticks, (unsigned long long)t0_ns, (unsigned long long)ts,
                   (long long)got, (long long)want);
            good = 0;
        }
    }
    trace_reader_close(&r);
    begin(&h);
    for (unsigned i = 0; i < probes; i++)
        event(probed[i], 1, 2, 3, TRACE_KIND_ENTER);
    if (trace_reader_open(&r, save("clock.bin"), msg, sizeof msg) < 0)
        return 0;
    if (anchor_ticks)
        trace_reader_set_anchor(&r, anchor_ticks, anchor_ns);
    struct trace_reader_batch b;
    unsigned n = 0;
    while (trace_reader_next_batch(&r, &b) == TRACE_READER_EVENT)
        for (size_t i = 0; i < b.n && n < probes; i++, n++) {
            int64_t want = reference_ns(t0_ticks, t0_ns, per_tick, probed[n]);
            if (b.ns[i] != want && good) {
                printf("# batch: hz %llu t0 %llu/%llu ts %llu: %lld, want %lld\n", (unsigned long long)hz,
                       (unsigned long long)t0_ticks, (unsigned long long)t0_ns, (unsigned long long)probed[n],
                       (long long)b.ns[i], (long long)want);
                good = 0;
            }
        }
    trace_reader_close(&r);
    return good && n == probes;
}

static int conversions_match(void)
{
    /* 2 GHz and 4 GHz make exact halves and quarters: ties round to even. */
    static const uint64_t hzs[] = {1, 3, 7, 1000, 999999937, 1000000000, 2000000000, 2100000000,
                                   2399999999, 4000000000u, 1ull << 40, UINT64_MAX};
    static const uint64_t t0s[] = {0, 1000, 1ull << 62, UINT64_MAX - 5};
    /* t0_ns around where the fast path stops being safe (INT64_MAX - 2^51). */
    static const uint64_t t0_nss[] = {0, 5000000000ull, INT64_MAX - (1ull << 51),
                                      INT64_MAX - (1ull << 51) + 1, INT64_MAX, UINT64_MAX};
    int good = 1;
    for (size_t a = 0; a < sizeof hzs / sizeof *hzs; a++)
        for (size_t b = 0; b < sizeof t0s / sizeof *t0s; b++)
            for (size_t c = 0; c < sizeof t0_nss / sizeof *t0_nss; c++)
                good &= clock_matches(hzs[a], t0s[b], t0_nss[c], 0, 0, 2000);
    /* Exit anchors: rates that are no 1e9 / hz, some far from 1. */
    good &= clock_matches(2100000000, 1000, 5000000000ull, 1000 + 2100000007ull, 6000000000ull, 20000);
    good &= clock_matches(3, 10, 10, 13, 1000000000000ull, 20000);
    good &= clock_matches(1000, 1ull << 40, 1, (1ull << 40) + (1ull << 50), 2, 20000);
    return good;
}

/* A long file in ticks, in either byte order, with a partial last record. */
static void long_ticks_file(int bigendian)
{
    struct hdr h = default_hdr();
    h.header_size = 96; /* longer than 80: the reader skips the rest */
    h.flags = TRACE_FLAG_TICKS | (bigendian ? TRACE_FLAG_BIGENDIAN : 0);
    h.hz = 2100000000;
    h.t0_ticks = 5000;
    h.t0_ns = 7000000000ull;
    begin(&h);
    for (uint64_t i = 0; i < 10000; i++)
        event(i * 7, i, ~i, (uint32_t)i, (uint8_t)(i % 3));
    memset(file + flen, 0x11, 5);
    flen += 5;
}

/* The batch reader hands out what the one-at-a-time reader does, with each
 * record's ns, and ends the same way. */
static int batch_matches_next(const char *name, int mix)
{
    static trace_event_t want[10000];
    struct trace_reader_batch b;
    enum trace_reader_status st;
    size_t n = 0, got = 0, batches = 0, singles = 0;
    int good = 1;
    trace_reader_open(&r, save(name), msg, sizeof msg);
    while (n < 10000 && trace_reader_next(&r, &want[n]) == TRACE_READER_EVENT)
        n++;
    trace_reader_close(&r);
    trace_reader_open(&r, path, msg, sizeof msg);
    for (;;) {
        if (mix && got % 3 == 1) { /* one record the other way now and then */
            trace_event_t ev;
            b.n = 0;
            if ((st = trace_reader_next(&r, &ev)) != TRACE_READER_EVENT)
                break;
            good &= got < n && memcmp(&ev, &want[got], sizeof ev) == 0;
            got++;
            singles++;
        }
        if ((st = trace_reader_next_batch(&r, &b)) != TRACE_READER_EVENT)
            break;
        batches++;
        for (size_t i = 0; i < b.n; i++, got++)
            good &= got < n && memcmp(&b.ev[i], &want[got], sizeof b.ev[i]) == 0 &&
                    b.ns[i] == trace_reader_ns(&r, want[got].ts);
    }
    good &= b.n == 0 && st == TRACE_READER_TRUNCATED && r.trailing == 5;
    trace_reader_close(&r);
    return good && n == 10000 && got == n && batches > 1 && (singles > 0) == mix;
}

int main(void)
{
    struct hdr h;
    trace_event_t ev;
    if (!scratch_make(dir, sizeof dir, "callsight-reader")) {
        perror("mkdtemp");
        return 1;
    }
    printf("1..32\n");

    h = default_hdr();
    begin(&h);
    sample_events();
    ok(read_sample("le.bin"), "little-endian file: header and every event field");

    h.flags = TRACE_FLAG_BIGENDIAN;
    begin(&h);
    sample_events();
    ok(read_sample("be.bin"), "big-endian file: every field byte-swapped");
    ok(r.swap == 1, "big-endian file detected as such");

    h = default_hdr();
    h.header_size = 160;
    begin(&h);
    sample_events();
    ok(read_sample("hdr160.bin"), "header_size 160: the extra bytes are skipped");

    h.flags = TRACE_FLAG_BIGENDIAN;
    h.header_size = 96;
    begin(&h);
    sample_events();
    ok(read_sample("be96.bin"), "big-endian with header_size 96");

    /* Ticks: 2 GHz, anchored at 1000 ticks = 5 s. */
    h = default_hdr();
    h.flags = TRACE_FLAG_TICKS;
    h.hz = 2000000000;
    h.t0_ticks = 1000;
    h.t0_ns = 5000000000ull;
    begin(&h);
    event(3000, 1, 0, 1, TRACE_KIND_ENTER);
    trace_reader_open(&r, save("ticks.bin"), msg, sizeof msg);
    ok(trace_reader_ns(&r, 3000) == 5000001000ll, "ticks: 2000 ticks at 2 GHz after t0 = t0_ns + 1000");
    ok(trace_reader_ns(&r, 0) == 4999999500ll, "ticks: before t0 counts backwards");
    ok(trace_reader_ns(&r, 1000 + 6000000000ull) == 8000000000ll, "ticks: 3 s later");
    /* The exit anchor says 4e9 ticks took 1 s: 4 GHz really. */
    ok(trace_reader_set_anchor(&r, 1000 + 4000000000ull, 6000000000ull) == 0 &&
           trace_reader_ns(&r, 1000 + 2000000000ull) == 5500000000ll,
       "exit anchor: the rate across the two anchors replaces tick_hz");
    ok(trace_reader_set_anchor(&r, 500, 6000000000ull) < 0 &&
           trace_reader_ns(&r, 1000 + 2000000000ull) == 5500000000ll,
       "an anchor before t0 is refused");
    trace_reader_close(&r);

    h = default_hdr();
    begin(&h);
    event(123, 1, 0, 1, TRACE_KIND_ENTER);
    trace_reader_open(&r, save("ns.bin"), msg, sizeof msg);
    ok(trace_reader_set_anchor(&r, 1000, 2000) < 0 && trace_reader_ns(&r, 123) == 123,
       "tick_hz 0: ts are ns, anchors ignored");
    trace_reader_close(&r);

    /* Truncation: two whole records and 17 bytes of a third. */
    h = default_hdr();
    begin(&h);
    event(1, 1, 0, 1, TRACE_KIND_ENTER);
    event(2, 1, 0, 1, TRACE_KIND_EXIT);
    memset(file + flen, 0x11, 17);
    flen += 17;
    trace_reader_open(&r, save("trunc.bin"), msg, sizeof msg);
    int n = 0;
    enum trace_reader_status st;
    while ((st = trace_reader_next(&r, &ev)) == TRACE_READER_EVENT)
        n++;
    ok(n == 2 && st == TRACE_READER_TRUNCATED && r.trailing == 17,
       "truncated file: whole records read, then TRUNCATED with 17 trailing bytes");
    trace_reader_close(&r);

    /* Foreign and malformed headers. */
    h = default_hdr();
    h.version = TRACE_FILE_VERSION_SUMMARY;
    begin(&h);
    int v3 = trace_reader_open(&r, save("summary.bin"), msg, sizeof msg);
    if (v3 == 0)
        trace_reader_close(&r);
    ok(v3 == 0, "version 3 (summary snapshots) opens");
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        const struct bad_header *b = &bad_headers[i];
        h = default_hdr();
        if (b->magic)
            h.magic = b->magic;
        if (b->version)
            h.version = b->version;
        if (b->event_size)
            h.event_size = b->event_size;
        if (b->header_size)
            h.header_size = b->header_size;
        begin(&h);
        if (b->cut_at >= 0)
            flen = (size_t)b->cut_at;
        expect_reject(b->name, b->want, b->what);
    }
    h = default_hdr();
    begin(&h);
    file[20] |= 0x04; /* claims big-endian, written little-endian */
    expect_reject("flag.bin", "byte order", "BIGENDIAN flag contradicting the header rejected");

    /* Tail seeking, with a partial record at the end. */
    h = default_hdr();
    begin(&h);
    for (uint64_t i = 0; i < 10; i++)
        event(i, 0x1000 + i, 0, 1, TRACE_KIND_ENTER);
    file[flen++] = 0;
    trace_reader_open(&r, save("tail.bin"), msg, sizeof msg);
    trace_reader_seek_tail(&r, 3 * 32 + 5);
    n = 0;
    int first = -1;
    while (trace_reader_next(&r, &ev) == TRACE_READER_EVENT)
        if (n++ == 0)
            first = (int)ev.ts;
    ok(n == 3 && first == 7, "seek_tail: the last 3 whole records");
    trace_reader_seek_tail(&r, 1 << 20);
    n = 0;
    while (trace_reader_next(&r, &ev) == TRACE_READER_EVENT)
        n++;
    ok(n == 10, "seek_tail beyond the file: all records");
    trace_reader_close(&r);

    /* A file several buffers long, in both byte orders. */
    for (int b = 0; b < 2; b++) {
        h = default_hdr();
        h.header_size = 96; /* longer than 80: the reader skips the rest */
        h.flags = b ? TRACE_FLAG_BIGENDIAN : 0;
        begin(&h);
        for (uint64_t i = 0; i < 10000; i++)
            event(i * 3, i, ~i, (uint32_t)i, (uint8_t)(i % 3));
        trace_reader_open(&r, save("long.bin"), msg, sizeof msg);
        uint64_t i = 0;
        int good = 1;
        while ((st = trace_reader_next(&r, &ev)) == TRACE_READER_EVENT) {
            good &= ev.ts == i * 3 && ev.func == i && ev.call_site == ~i && ev.tid == (uint32_t)i &&
                    ev.kind == i % 3;
            i++;
        }
        trace_reader_close(&r);
        ok(good && i == 10000 && st == TRACE_READER_END,
           b ? "10000 big-endian events across buffer refills" : "10000 events across buffer refills");
    }

    ok(conversions_match(), "ticks to ns, one by one and in batches: the same as the double-precision formula, ties and limits too");

    for (int b = 0; b < 2; b++) {
        long_ticks_file(b);
        ok(batch_matches_next(b ? "batch-be.bin" : "batch-le.bin", 0),
           b ? "batches of a big-endian file: the same events and ns as one at a time"
             : "batches: the same events and ns as one at a time, then TRUNCATED");
    }
    long_ticks_file(0);
    ok(batch_matches_next("batch-mix.bin", 1), "batches and single records mixed: none lost or repeated");

    h = default_hdr();
    begin(&h);
    trace_reader_open(&r, save("batch-empty.bin"), msg, sizeof msg);
    struct trace_reader_batch batch;
    ok(trace_reader_next_batch(&r, &batch) == TRACE_READER_END && batch.n == 0,
       "batch of a file with no records: END, nothing handed out");
    trace_reader_close(&r);

    return scratch_remove(dir) == 0 ? 0 : 1;
}
