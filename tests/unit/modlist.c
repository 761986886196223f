/*
 * modlist.c - unit test of the module-list reader (src/read/modlist.c):
 * a whole list comes out with every module's number, bias, extent,
 * build-id and path (paths over several PATH records, and none); each
 * way a list can be damaged (torn by other records, cut short, a new list
 * inside one, counts and lengths out of bounds, parts out of order, a NUL
 * in a path) is damaged with its reason, and the next whole list is read;
 * with a budget, a list keeps what its caps allow and counts the rest.
 */
#include <stdio.h>
#include <string.h>

#include "read/modlist.h"
#include "unit.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static struct modlist m;

static enum modlist_step put(uint8_t part, uint8_t count, uint64_t ts, uint64_t func, uint64_t site)
{
    trace_event_t ev = unit_record_event(TRACE_KIND_MODULE, part, count, ts, func, site);
    return modlist_feed(&m, &ev);
}

/* Up to 24 bytes as the three words of a BUILD_ID or PATH record. */
static enum modlist_step put_bytes(uint8_t part, const char *s, size_t n)
{
    uint64_t w[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++)
        w[i / 8] |= (uint64_t)(unsigned char)s[i] << (8 * (i % 8));
    return put(part, (uint8_t)n, w[0], w[1], w[2]);
}

/* Module id at bias with a path: BEGIN, TEXT, BUILD_ID "abcd", PATH..., END.
 * MODLIST_MORE at every step, or the first other step. */
static enum modlist_step put_module(uint64_t id, uint64_t bias, const char *path, int main)
{
    enum modlist_step st;
    size_t len = strlen(path);
    if ((st = put(TRACE_MODULE_BEGIN, 0, id, bias, main ? TRACE_MODULE_MAIN : 0)) != MODLIST_MORE ||
        (st = put(TRACE_MODULE_TEXT, 0, id, bias + 0x1000, bias + 0x2000)) != MODLIST_MORE ||
        (st = put_bytes(TRACE_MODULE_BUILD_ID, "abcd", 4)) != MODLIST_MORE)
        return st;
    for (size_t at = 0; at < len; at += TRACE_MODULE_BYTES)
        if ((st = put_bytes(TRACE_MODULE_PATH, path + at, len - at < 24 ? len - at : 24)) != MODLIST_MORE)
            return st;
    return put(TRACE_MODULE_END, 0, id, len, 0);
}

static void test_whole(void)
{
    const char *longpath = "/usr/lib/x86_64-linux-gnu/callsight/plugins/libexample.so.1";
    ok(put(TRACE_MODULE_LIST, 0, 100, 3, 2) == MODLIST_MORE, "LIST opens a list of 2");
    ok(put_module(1, 0x400000, "", 1) == MODLIST_MORE, "the program, with no path");
    ok(put_module(5, 0x7f0000000000, longpath, 0) == MODLIST_MORE, "a library with a path over 3 records");
    ok(put(TRACE_MODULE_LIST_END, 0, 101, 3, 4) == MODLIST_DONE, "LIST_END with the same number: whole");
    size_t n;
    struct modlist_entry *v = modlist_take(&m, &n);
    ok(n == 2 && v[0].id == 1 && v[0].main && v[0].bias == 0x400000 && v[0].path[0] == 0,
       "module 1: the program, its bias, no path");
    ok(v[1].id == 5 && !v[1].main && v[1].lo == 0x7f0000001000 && v[1].hi == 0x7f0000002000 &&
       !strcmp(v[1].path, longpath), "module 5: extent and the whole path");
    ok(v[1].build_id_len == 4 && !memcmp(v[1].build_id, "abcd", 4), "module 5: its build-id");
    ok(m.left_out == 4 && m.number == 3, "the list's number, and 4 modules the runtime left out");
    modlist_entries_free(v, n);
}

/* The list is damaged with a reason containing `why`. */
static void expect_damaged(enum modlist_step st, const char *why, const char *what)
{
    ok(st == MODLIST_DAMAGED && strstr(m.why, why) != NULL, what);
    if (st != MODLIST_DAMAGED || !strstr(m.why, why))
        printf("# step %d, why: %s\n", (int)st, m.why);
}

static void test_damaged(void)
{
    put(TRACE_MODULE_LIST, 0, 1, 4, 1);
    put_module(1, 0x1000, "/a", 0);
    expect_damaged(modlist_interrupt(&m), "torn", "another record inside a list: torn");
    ok(modlist_interrupt(&m) == MODLIST_MORE, "outside a list, other records are no news");

    put(TRACE_MODULE_LIST, 0, 1, 5, 1);
    expect_damaged(put(TRACE_MODULE_LIST_END, 0, 1, 5, 0), "before all its modules", "a list cut short");
    put(TRACE_MODULE_LIST, 0, 1, 6, 1);
    expect_damaged(put(TRACE_MODULE_LIST, 0, 1, 7, 1), "inside another", "a list inside a list");
    ok(put_module(2, 0x1000, "/b", 0) == MODLIST_MORE && put(TRACE_MODULE_LIST_END, 0, 1, 7, 0) == MODLIST_DONE,
       "... the inner one is read on, whole");
    size_t n;
    struct modlist_entry *v = modlist_take(&m, &n);
    ok(n == 1 && !strcmp(v[0].path, "/b"), "... and holds its one module");
    modlist_entries_free(v, n);

    expect_damaged(put(TRACE_MODULE_LIST, 0, 1, 8, MODLIST_MAX + 1), "more modules", "too many modules");
    modlist_free(&m);
    modlist_init(&m, NULL); /* a reader that never saw a LIST */
    expect_damaged(put(TRACE_MODULE_BEGIN, 0, 1, 0, 0), "outside a list", "BEGIN outside a list");
    put(TRACE_MODULE_LIST, 0, 1, 9, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    expect_damaged(put(TRACE_MODULE_PATH, 1, 0, 0, 0), "out of order", "PATH before TEXT");
    put(TRACE_MODULE_LIST, 0, 1, 10, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    expect_damaged(put(TRACE_MODULE_TEXT, 0, 3, 0x2000, 0x2000), "empty", "an empty extent");
    put(TRACE_MODULE_LIST, 0, 1, 11, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    put(TRACE_MODULE_TEXT, 0, 3, 0x1000, 0x2000);
    expect_damaged(put(TRACE_MODULE_BUILD_ID, 25, 0, 0, 0), "bad length", "a build-id of 25 bytes");
    put(TRACE_MODULE_LIST, 0, 1, 12, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    put(TRACE_MODULE_TEXT, 0, 3, 0x1000, 0x2000);
    enum modlist_step st = MODLIST_MORE;
    for (int i = 0; i < 200 && st == MODLIST_MORE; i++)
        st = put_bytes(TRACE_MODULE_PATH, "aaaaaaaaaaaaaaaaaaaaaaaa", 24);
    expect_damaged(st, "too long", "a path longer than TRACE_MODULE_PATH_MAX");
    put(TRACE_MODULE_LIST, 0, 1, 13, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    put(TRACE_MODULE_TEXT, 0, 3, 0x1000, 0x2000);
    put_bytes(TRACE_MODULE_PATH, "a\0b", 3);
    expect_damaged(put(TRACE_MODULE_END, 0, 3, 3, 0), "NUL", "a NUL inside a path");
    put(TRACE_MODULE_LIST, 0, 1, 14, 1);
    put(TRACE_MODULE_BEGIN, 0, 3, 0x1000, 0);
    put(TRACE_MODULE_TEXT, 0, 3, 0x1000, 0x2000);
    put_bytes(TRACE_MODULE_PATH, "/x", 2);
    expect_damaged(put(TRACE_MODULE_END, 0, 3, 5, 0), "does not match", "END with the wrong path length");
    put(TRACE_MODULE_LIST, 0, 1, 15, 1);
    expect_damaged(put(12, 0, 0, 0, 0), "unknown part", "an unknown part");
    ok(put(TRACE_MODULE_BEGIN, 0, 1, 0, 0) == MODLIST_MORE && put(TRACE_MODULE_END, 0, 1, 0, 0) == MODLIST_MORE &&
       put(TRACE_MODULE_LIST_END, 0, 1, 15, 0) == MODLIST_MORE, "the rest of a damaged list is skipped, not said again");
    put(TRACE_MODULE_LIST, 0, 1, 16, 0);
    expect_damaged(put(TRACE_MODULE_LIST_END, 0, 1, 17, 0), "another list's number", "LIST_END with another number");
    test_whole(); /* and a whole list after all that */
}

/* What a list costs is what came, not what its LIST claims: a LIST of
 * 4,096 modules with one module after it holds room for a few (issue 29:
 * 20,000 threads each claiming 4,096 took 180 MB). */
static void test_claims(void)
{
    ok(put(TRACE_MODULE_LIST, 0, 1, 20, MODLIST_MAX) == MODLIST_MORE && m.cap == 0 && m.v == NULL,
       "a LIST claiming the most modules reserves nothing");
    ok(put_module(1, 0x1000, "/p", 0) == MODLIST_MORE && m.n == 1 && m.cap == 8,
       "its first module: room for 8");
    expect_damaged(put(TRACE_MODULE_LIST, 0, 1, 21, MODLIST_MAX + 1), "more modules than any",
                   "a LIST claiming more than MODLIST_MAX is damaged");
    ok(m.v == NULL && m.cap == 0, "and holds nothing");
}

/* A budget (issue 29): a list keeps its first per_list modules and what
 * max_bytes has room for; the rest are read, checked and counted, and what
 * a list held goes back when it is taken or damaged. */
static void test_budget(void)
{
    static struct modlist_budget b = {2, 1u << 20, 0}; /* outlives m's use of it */
    size_t n;
    modlist_free(&m);
    modlist_init(&m, &b);
    put(TRACE_MODULE_LIST, 0, 1, 30, 3);
    for (uint64_t id = 1; id <= 3; id++)
        put_module(id, 0x10000 * id, "/lib/x.so", 0);
    ok(b.held > 0 && b.held == m.held, "a list being read charges the budget");
    ok(put(TRACE_MODULE_LIST_END, 0, 1, 30, 0) == MODLIST_DONE && m.n == 2 && m.cut_list == 1 && m.cut_bytes == 0,
       "per_list 2: a list of 3 is whole, 2 kept, 1 counted");
    struct modlist_entry *v = modlist_take(&m, &n);
    ok(n == 2 && v[0].id == 1 && v[1].id == 2 && !strcmp(v[1].path, "/lib/x.so") && b.held == 0,
       "its first two modules taken, the budget given back");
    modlist_entries_free(v, n);
    b.max_bytes = 0;
    put(TRACE_MODULE_LIST, 0, 1, 31, 2);
    put_module(1, 0x10000, "/lib/x.so", 0);
    put_module(2, 0x20000, "", 0);
    ok(put(TRACE_MODULE_LIST_END, 0, 1, 31, 0) == MODLIST_DONE && m.n == 0 && m.cut_bytes == 2 && b.held == 0,
       "max_bytes 0: the list is whole, nothing kept, both counted");
    v = modlist_take(&m, &n);
    modlist_entries_free(v, n);
    b.max_bytes = 1u << 20;
    put(TRACE_MODULE_LIST, 0, 1, 32, 2);
    put_module(1, 0x10000, "/lib/x.so", 0);
    expect_damaged(modlist_interrupt(&m), "torn", "a torn list with a budget");
    ok(b.held == 0 && m.held == 0, "gives back what it held");
    modlist_free(&m);
    modlist_init(&m, NULL);
}

/* A closed module (trace.h: BEGIN says GONE, END carries the time it
 * went): read with its time; without one the list is damaged. */
static void test_gone(void)
{
    ok(put(TRACE_MODULE_LIST, 0, 100, 7, 2) == MODLIST_MORE, "a list of 2, one of them closed");
    put_module(1, 0x400000, "", 1);
    put(TRACE_MODULE_BEGIN, 0, 9, 0x7f0000000000, TRACE_MODULE_GONE);
    put(TRACE_MODULE_TEXT, 0, 9, 0x7f0000001000, 0x7f0000002000);
    put_bytes(TRACE_MODULE_PATH, "/p/codec_a.so", 13);
    ok(put(TRACE_MODULE_END, 0, 9, 13, 123456) == MODLIST_MORE, "the closed module's END with its time");
    ok(put(TRACE_MODULE_LIST_END, 0, 101, 7, 0) == MODLIST_DONE, "whole");
    size_t n;
    struct modlist_entry *v = modlist_take(&m, &n);
    ok(n == 2 && v[0].gone_at == 0 && v[1].gone_at == 123456 && !v[1].main && !strcmp(v[1].path, "/p/codec_a.so"),
       "the program loaded, module 9 closed by 123456");
    modlist_entries_free(v, n);
    put(TRACE_MODULE_LIST, 0, 200, 8, 1);
    put(TRACE_MODULE_BEGIN, 0, 9, 0x7f0000000000, TRACE_MODULE_GONE);
    put(TRACE_MODULE_TEXT, 0, 9, 0x7f0000001000, 0x7f0000002000);
    expect_damaged(put(TRACE_MODULE_END, 0, 9, 0, 0), "closed module's time is missing",
                   "a closed module without its time: damaged");
    modlist_free(&m);
    modlist_init(&m, NULL);
}

int main(void)
{
    modlist_init(&m, NULL);
    test_whole();
    test_gone();
    test_damaged();
    test_claims();
    test_budget();
    modlist_free(&m);
    printf("1..%d\n", test_no);
    return 0;
}
