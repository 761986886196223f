/*
 * files.c - unit tests (TAP) of serve's trace-file writer,
 * src/serve/files.c: headers, rotation at exact record boundaries, the
 * budget marker and discarded counts, serve markers, ids counted on from
 * the directory, and a failing write (RLIMIT_FSIZE) that leaves the file
 * valid and ends with a write-error marker.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/files.h"
#include "trace.h"
#include "scratch.h"
#include "trace_wire.h"

static int n_test, failed;
static char dir[160]; /* scratch_make: under $TMPDIR */

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

/* Read a whole file into buf; its size, or -1. */
static long slurp(uint32_t id, uint32_t seq, unsigned char *buf, size_t cap)
{
    char path[256];
    snprintf(path, sizeof path, "%s/trace.stream.%u.%u.bin", dir, (unsigned)id, (unsigned)seq);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long n = (long)fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void events(unsigned char *buf, size_t n, uint64_t first)
{
    memset(buf, 0, n * 32);
    for (size_t i = 0; i < n; i++) {
        uint64_t ts = 100 + first + i;
        for (int b = 0; b < 8; b++)
            buf[i * 32 + b] = (unsigned char)(ts >> (8 * b));
        buf[i * 32 + 28] = (unsigned char)(i % 2);
    }
}

static const struct proto_hello hello = {0, TRACE_FLAG_TICKS | TRACE_FLAG_BIGENDIAN, 0x1000, 1000000, 7, 8, 9};

static void test_header_and_markers(void)
{
    struct files f;
    char err[FILES_ERR_MAX];
    static unsigned char buf[1 << 16];
    ok(files_open(&f, dir, 1 << 20, 1 << 20, &hello, err, sizeof err) == 0 && f.id == 6,
       "first id counts on from the highest in the directory (5 -> 6)");
    events(buf, 10, 0);
    files_append(&f, buf, 10);
    files_mark(&f, TRACE_MARK_DEVICE_DROPPED, 55);
    files_close(&f);
    long n = slurp(6, 0, buf, sizeof buf);
    ok(n == 80 + 11 * 32, "header + 10 events + 1 marker");
    ok(!memcmp(buf, "MLTRACE\0", 8) && wire_le32(buf + 8) == 2 && wire_le32(buf + 12) == 32 &&
           wire_le32(buf + 16) == 80,
       "magic, version 2, event size 32, header size 80");
    ok(wire_le32(buf + 20) == TRACE_FLAG_TICKS, "flags keep TICKS and never BIGENDIAN: we write little-endian");
    ok(wire_le64(buf + 24) == 0x1000 && wire_le64(buf + 32) == 1000000 && wire_le64(buf + 40) == 7 &&
           wire_le64(buf + 48) == 8 && wire_le64(buf + 56) == 9,
       "calibration copied from the handshake");
    ok(wire_le32(buf + 64) == 6 && wire_le32(buf + 68) == 0 && wire_le64(buf + 72) == 0, "pid = id, seq 0, reserved 0");
    const unsigned char *m = buf + 80 + 10 * 32;
    ok(wire_le64(m) == 109 && wire_le64(m + 8) == TRACE_MARK_DEVICE_DROPPED && wire_le64(m + 16) == 55 &&
           wire_le32(m + 24) == 0 && m[28] == TRACE_KIND_MARKER,
       "marker: ts of the last event, code, payload, tid 0, kind 2");
}

static void test_rotation_and_budget(void)
{
    struct files f;
    char err[FILES_ERR_MAX];
    static unsigned char buf[1 << 16];
    /* Segments of 80 + 10 records; budget for 3 headers and 25 records. */
    ok(files_open(&f, dir, 80 + 10 * 32, 3 * 80 + 25 * 32, &hello, err, sizeof err) == 0 &&
           f.id == 7,
       "next connection gets id 7");
    events(buf, 100, 0);
    enum files_news news = files_append(&f, buf, 15);
    ok(news == FILES_OK && files_segments(&f) == 2, "15 records: a full segment and 5 in the next");
    news = files_append(&f, buf + 15 * 32, 85);
    ok(news == FILES_BUDGET_REACHED, "the budget is reached once");
    ok(f.events == 24 && f.discarded == 76, "24 written (one record kept for the marker), 76 discarded");
    ok(f.total_bytes == 3 * 80 + 25 * 32, "the files fill the budget exactly");
    ok(files_append(&f, buf, 10) == FILES_OK && f.discarded == 86,
       "later records are discarded and counted, no news");
    files_close(&f);
    long a = slurp(7, 0, buf, sizeof buf), b = slurp(7, 1, buf, sizeof buf);
    long c = slurp(7, 2, buf, sizeof buf);
    ok(a == 400 && b == 400 && c == 80 + 5 * 32, "segments: 10, 10 and 4 records + marker");
    const unsigned char *m = buf + 80 + 4 * 32;
    ok(wire_le64(m + 8) == TRACE_MARK_BUDGET && wire_le64(m + 16) == 3 * 80 + 25 * 32 && wire_le64(m) == 100 + 23,
       "last record: budget marker with the budget, at the last event's ts");
    ok(wire_le32(buf + 68) == 2, "third segment's header says seq 2");
}

static void test_write_failure(void)
{
    struct files f;
    char err[FILES_ERR_MAX];
    static unsigned char buf[1 << 16];
    struct rlimit old, lim;
    ok(files_open(&f, dir, 1 << 20, 1 << 20, &hello, err, sizeof err) == 0, "open id 8");
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1000; /* the 40 records below pass it part-way */
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    events(buf, 40, 0);
    enum files_news news = files_append(&f, buf, 40);
    setrlimit(RLIMIT_FSIZE, &old);
    ok(news == FILES_WRITE_FAILED && strstr(f.error, "writing events failed"),
       "a failing write is reported with its reason");
    ok(f.events == 0 && f.discarded == 40, "nothing counted as written, the 40 counted as discarded");
    files_close(&f);
    long n = slurp(8, 0, buf, sizeof buf);
    ok(n == 80 + 32, "the partial write is cut back; the file is its header and one marker");
    ok(wire_le64(buf + 88) == TRACE_MARK_WRITE_ERROR && wire_le64(buf + 96) == EFBIG,
       "the marker says the write failed, with errno");
}

int main(void)
{
    char err[FILES_ERR_MAX], path[256];
    if (!scratch_make(dir, sizeof dir, "callsight-unit-sf"))
        return 1;
    snprintf(path, sizeof path, "%s/trace.stream.5.2.bin", dir);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof path, "%s/trace.stream.77.bin", dir); /* not ours: no seq */
    fclose(fopen(path, "w"));
    ok(files_init_dir(dir, err, sizeof err) == 0, "init an existing directory");
    test_header_and_markers();
    test_rotation_and_budget();
    test_write_failure();
    printf("1..%d\n", n_test);
    if (scratch_remove(dir) != 0)
        return 1;
    return failed;
}
