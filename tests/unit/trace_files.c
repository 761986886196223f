/*
 * trace_files.c - unit test of trace file discovery and grouping
 * (src/read/trace_files.c): name parsing, series by (pid, tid) and stream id,
 * segments in seq order (numerically), loose files, duplicates, errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/trace_files.h"
#include "scratch.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static char dir[160]; /* scratch_make: under $TMPDIR */

static void touch(const char *name)
{
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f || fclose(f) != 0)
        exit(1);
}

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int main(void)
{
    enum trace_series_kind k;
    uint32_t id, tid, seq;
    printf("1..13\n");

    ok(trace_files_parse_name("trace.12.34.5.bin", &k, &id, &tid, &seq) && k == TRACE_SERIES_LOCAL &&
           id == 12 && tid == 34 && seq == 5,
       "trace.<pid>.<tid>.<seq>.bin");
    ok(trace_files_parse_name("trace.stream.7.2.bin", &k, &id, &tid, &seq) &&
           k == TRACE_SERIES_STREAM && id == 7 && seq == 2,
       "trace.stream.<id>.<seq>.bin");
    ok(trace_files_parse_name("trace.stream.7.bin", &k, &id, &tid, &seq) && id == 7 && seq == 0,
       "trace.stream.<id>.bin is segment 0");
    ok(trace_files_parse_name("trace.4294967295.1.0.bin", &k, &id, &tid, &seq) && id == 4294967295u,
       "u32 max accepted");
    ok(!trace_files_parse_name("trace.4294967296.1.0.bin", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("trace.1.2.3.4.bin", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("trace.1.bin", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("trace.1.2.0.bin.zst", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("trace.-1.2.0.bin", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("trace.stream.x.0.bin", &k, &id, &tid, &seq) &&
           !trace_files_parse_name("notes.txt", &k, &id, &tid, &seq),
       "other names rejected");

    if (!scratch_make(dir, sizeof dir, "callsight-files"))
        return 1;
    touch("trace.10.11.10.bin");
    touch("trace.10.11.2.bin");
    touch("trace.10.11.0.bin");
    touch("trace.10.10.0.bin");
    touch("trace.9.9.0.bin");
    touch("trace.stream.3.1.bin");
    touch("trace.stream.3.0.bin");
    touch("README");
    touch("other.bin");

    struct trace_files tf;
    char msg[256], p[300];
    trace_files_init(&tf);
    long n = trace_files_add(&tf, dir, msg, sizeof msg);
    ok(n == 7, "directory: the 7 trace files, other names ignored");
    snprintf(p, sizeof p, "%s/trace.9.9.0.bin", dir);
    trace_files_add(&tf, p, msg, sizeof msg);
    snprintf(p, sizeof p, "%s/other.bin", dir);
    ok(trace_files_add(&tf, p, msg, sizeof msg) == 1, "a file named explicitly is taken whatever its name");
    ok(trace_files_group(&tf) == 0 && tf.nseries == 5, "5 series: pid 9, pid 10 x2 threads, stream 3, loose");
    const struct trace_series *s = tf.series;
    ok(s[0].kind == TRACE_SERIES_LOCAL && s[0].id == 9 && s[0].nsegs == 1 && s[1].id == 10 &&
           s[1].tid == 10 && s[2].id == 10 && s[2].tid == 11,
       "series sorted by pid then tid; a file reached twice counted once");
    ok(s[2].nsegs == 3 && s[2].segs[0].seq == 0 && s[2].segs[1].seq == 2 && s[2].segs[2].seq == 10 &&
           !strcmp(base(s[2].segs[2].path), "trace.10.11.10.bin"),
       "segments in numeric seq order (0, 2, 10)");
    ok(s[3].kind == TRACE_SERIES_STREAM && s[3].id == 3 && s[3].nsegs == 2 && s[3].segs[0].seq == 0,
       "stream series");
    ok(s[4].kind == TRACE_SERIES_LOOSE && !strcmp(base(s[4].segs[0].path), "other.bin"), "loose file last");
    trace_files_free(&tf);

    trace_files_init(&tf);
    snprintf(p, sizeof p, "%s/nonexistent", dir);
    ok(trace_files_add(&tf, p, msg, sizeof msg) < 0 && strstr(msg, "No such file"),
       "missing path: error naming it");
    trace_files_free(&tf);

    return scratch_remove(dir) == 0 ? 0 : 1;
}
