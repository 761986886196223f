/*
 * symbols.c - unit test of addr2line output parsing (src/read/symbols.c) and of
 * the tool check.  The real addr2line run is tested end to end.
 */
#include <stdio.h>
#include <string.h>

#include "out/report.h"
#include "read/symbols.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static const char *label(const char *name, const char *loc, unsigned long long addr)
{
    static char buf[256];
    struct symbol s;
    symbols_parse(name, loc, &s);
    report_label(&s, addr, buf, sizeof buf);
    symbols_free(&s, 1);
    return buf;
}

int main(void)
{
    char msg[256];
    printf("1..9\n");
    ok(!strcmp(label("compute\n", "/src/app/work.c:42\n", 0x1139), "compute (work.c:42)"),
       "name (basename:line)");
    ok(!strcmp(label("helper\n", "/src/x.c:7 (discriminator 3)\n", 1), "helper (x.c:7)"),
       "discriminator dropped");
    ok(!strcmp(label("ns::f(int)\n", "??:0\n", 1), "ns::f(int)"), "no line info: just the name");
    ok(!strcmp(label("g\n", "/a/b.c:?\n", 1), "g"), "line '?': just the name");
    ok(!strcmp(label("??\n", "??:0\n", 0x4011a6), "0x4011a6"), "unresolved: hex address");
    ok(!strcmp(label("k\n", "c:\\w\\k.c:12\n", 1), "k (c:\\w\\k.c:12)"), "colon in the path: last one splits");
    ok(symbols_check_tool("sh", msg, sizeof msg) == 0, "tool found in PATH");
    ok(symbols_check_tool("/nonexistent/addr2line", msg, sizeof msg) < 0 &&
           strstr(msg, "/nonexistent/addr2line"),
       "missing tool by path: error naming it");
    ok(symbols_check_tool("callsight-no-such-tool", msg, sizeof msg) < 0, "missing tool by name");
    return 0;
}
