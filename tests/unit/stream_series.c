/*
 * resume.c - unit tests (TAP) of src/serve/resume.c, which finds a
 * resumable stream's file series on disk after serve restarted: the
 * stream-id marker names the series, received counts the device records
 * (not serve's own markers, not a torn last record) over every segment of
 * every series of the stream, and a series that stopped writing makes the
 * count inexact.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "serve/resume.h"
#include "serve/files.h"
#include "trace.h"
#include "scratch.h"

static int n_test, failed;
static char dir[160]; /* scratch_make: under $TMPDIR */
static const struct proto_hello hello = {0, TRACE_FLAG_TICKS, 0x1000, 1000000, 7, 8, 9};

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

/* n device records: enter/exit alternating, and every fifth a device marker (tid 7). */
static void append(struct files *f, size_t n)
{
    unsigned char buf[64 * 32];
    memset(buf, 0, sizeof buf);
    for (size_t i = 0; i < n; i++) {
        buf[i * 32] = (unsigned char)(i + 1);
        buf[i * 32 + 24] = 7;
        buf[i * 32 + 28] = i % 5 == 4 ? TRACE_KIND_MARKER : (unsigned char)(i % 2);
        buf[i * 32 + 8] = i % 5 == 4 ? TRACE_MARK_THREAD_EXIT : 0;
    }
    files_append(f, buf, n);
}

/* A new series for stream (sid, start) with `events` records in segments of 8 records. */
static uint32_t new_series(uint64_t sid, uint64_t start, size_t events, uint64_t budget)
{
    struct files f;
    char err[FILES_ERR_MAX];
    if (files_open(&f, dir, 80 + 8 * 32, budget, &hello, err, sizeof err))
        return 0;
    files_mark_at(&f, TRACE_MARK_STREAM_ID, sid, start);
    resume_index_add(sid, start, f.id, 0, 0); /* as serve does */
    append(&f, events);
    files_mark(&f, TRACE_MARK_DEVICE_DROPPED, 3);
    files_mark(&f, TRACE_MARK_STREAM_CUT, events);
    files_close(&f);
    return f.id;
}

/* Continue series id at seq as a resumed connection would, with a torn record at the end. */
static uint32_t continue_series(uint32_t id, uint32_t seq, size_t events)
{
    struct files f;
    char err[FILES_ERR_MAX], path[256];
    if (files_continue(&f, dir, 80 + 8 * 32, 1 << 20, &hello, id, seq, err, sizeof err))
        return 0;
    files_mark(&f, TRACE_MARK_STREAM_RESUMED, 9);
    files_mark(&f, TRACE_MARK_STREAM_GAP, 9);
    append(&f, events);
    files_close(&f);
    snprintf(path, sizeof path, "%s/trace.stream.%u.%u.bin", dir, (unsigned)id, (unsigned)f.seq);
    FILE *fp = fopen(path, "ab");
    if (fp) {
        fwrite("torn", 1, 4, fp);
        fclose(fp);
    }
    return f.seq + 1;
}

static void test_found_and_counted(void)
{
    struct resume_found s;
    uint32_t a = new_series(0xa1, 100, 20, 1 << 20);
    uint32_t next = continue_series(a, 4, 11);
    ok(resume_find(files_dir_fd(), 0xa1, 100, 0, 0, &s) == 0 && s.found && s.exact, "stream a is found, exactly");
    ok(s.file_id == a && s.next_seq == next, "continue its series after its last segment");
    ok(s.received == 31, "received: 20 + 11 device records, not serve's markers nor a torn record");
    ok(resume_find(files_dir_fd(), 0xa1, 101, 0, 0, &s) == 0 && !s.found, "same id, other start time: not found");
    ok(resume_find(files_dir_fd(), 0xb2, 100, 0, 0, &s) == 0 && !s.found, "other id: not found");
}

static void test_two_series_and_budget(void)
{
    struct resume_found s;
    uint32_t c1 = new_series(0xc3, 5, 6, 1 << 20);
    uint32_t c2 = new_series(0xc3, 5, 9, 1 << 20);
    ok(resume_find(files_dir_fd(), 0xc3, 5, 0, 0, &s) == 0 && s.found && s.exact && s.file_id == c2 && c2 > c1 &&
           s.received == 15,
       "a stream with two series: both counted, the newer continued");
    new_series(0xd4, 6, 40, 80 + 20 * 32);
    ok(resume_find(files_dir_fd(), 0xd4, 6, 0, 0, &s) == 0 && s.found && !s.exact,
       "a series that reached its budget: its count is not exact");
}

int main(void)
{
    char err[FILES_ERR_MAX];
    struct resume_found s;
    if (!scratch_make(dir, sizeof dir, "callsight-unit-ss"))
        return 1;
    ok(files_init_dir(dir, err, sizeof err) == 0, "init an empty directory");
    ok(resume_find(files_dir_fd(), 1, 1, 0, 0, &s) == 0 && !s.found, "nothing in an empty directory");
    test_found_and_counted();
    test_two_series_and_budget();
    uint64_t left = 9;
    ok(resume_index_build(files_dir_fd(), &left) == 0 && left == 0, "the index built from the directory");
    ok(resume_find(files_dir_fd(), 0xc3, 5, 0, 0, &s) == 0 && s.found && s.received == 15,
       "finds what serve added as it went");
    ok(resume_find(files_dir_fd(), 0xc3, 5, 77, 1, &s) == 0 && !s.found && s.refused,
       "a claim with a key for a series started without one is refused, not counted");
    ok(resume_index_build(-1, &left) == -1, "a directory that cannot be read: -1");
    printf("1..%d\n", n_test);
    if (scratch_remove(dir) != 0)
        return 1;
    return failed;
}
