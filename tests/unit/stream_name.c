/*
 * segname.c - unit test of serve's file names (src/serve/segname.c):
 * what segname_path makes, segname_parse reads back; ids of 0,
 * numbers past 32 bits, missing parts and other files' names are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "serve/segname.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static int refused(const char *name)
{
    uint32_t id = 7, seq = 7;
    return !segname_parse(name, &id, &seq) && id == 7 && seq == 7;
}

int main(void)
{
    printf("1..8\n");
    char path[64];
    uint32_t id = 0, seq = 0;
    ok(segname_path(path, sizeof path, "/out", 4294967295u, 12) == 0 &&
           !strcmp(path, "/out/trace.stream.4294967295.12.bin"),
       "path: dir/trace.stream.<id>.<seq>.bin");
    ok(segname_parse(strrchr(path, '/') + 1, &id, &seq) && id == 4294967295u && seq == 12,
       "parse reads back what path made, the largest id included");
    ok(segname_parse("trace.stream.3.0.bin", &id, &seq) && id == 3 && seq == 0, "seq 0");
    errno = 0;
    ok(segname_path(path, 20, "/out", 1, 0) == -1 && errno == ENAMETOOLONG,
       "a path that does not fit: -1, ENAMETOOLONG");
    ok(refused("trace.stream.0.0.bin"), "id 0 is not a connection");
    ok(refused("trace.stream.4294967296.0.bin") && refused("trace.stream.1.4294967296.bin"),
       "numbers past 32 bits");
    ok(refused("trace.stream.1.bin") && refused("trace.stream..0.bin") && refused("trace.stream.1.0.bin.tmp") &&
           refused("trace.stream.1.-1.bin") && refused("trace.stream.+1.0.bin"),
       "missing, empty, signed or trailing parts");
    ok(refused("trace.100.101.0.bin") && refused("notes.txt") && refused(""),
       "file mode's names and other files");
    return 0;
}
