/*
 * json.c - unit test of the JSON reader (src/json.c) that `callsight diff`
 * uses: values of every kind, exact 64-bit integers, escapes (UTF-8 from
 * \u, surrogate pairs), and one-line errors with line and column for
 * input that is not JSON.
 */
#include <stdio.h>
#include <string.h>

#include "lib/json.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

/* Parse s; 1 when the result is as expected (error message or success). */
static int fails_with(const char *s, const char *want)
{
    struct json j;
    char msg[256] = "";
    int rc = json_parse(s, strlen(s), &j, msg, sizeof msg);
    if (rc == 0)
        json_free(&j);
    if (rc == 0 || strcmp(msg, want) != 0)
        printf("# rc=%d msg='%s' want '%s'\n", rc, msg, want);
    return rc < 0 && strcmp(msg, want) == 0;
}

int main(void)
{
    printf("1..14\n");
    const char *doc = "{\"a\": [1, 18446744073709551615, -2, 2.5e3, true, false, null],\n"
                      " \"s\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\", \"a\": {}}";
    struct json j;
    char msg[256];
    if (!ok(json_parse(doc, strlen(doc), &j, msg, sizeof msg) == 0, "a document parses")) {
        printf("# %s\n", msg);
        return 1;
    }
    const struct json *a = &j.items[0], *s = json_get(&j, "s"), *last = json_get(&j, "a");
    ok(j.type == JSON_OBJECT && j.n == 3 && a->type == JSON_ARRAY && a->n == 7, "object and array shapes");
    ok(a->items[0].is_uint && a->items[0].u == 1 && a->items[1].is_uint &&
           a->items[1].u == 18446744073709551615ull,
       "non-negative integers exact up to 2^64-1");
    ok(!a->items[2].is_uint && a->items[2].num == -2 && !a->items[3].is_uint && a->items[3].num == 2500,
       "negative and fractional numbers as doubles");
    ok(a->items[4].type == JSON_BOOL && a->items[4].boolean && a->items[5].type == JSON_BOOL &&
           !a->items[5].boolean && a->items[6].type == JSON_NULL,
       "true, false, null");
    ok(s && s->type == JSON_STRING && !strcmp(s->str, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80"),
       "every escape; \\u to UTF-8, surrogate pair to one code point");
    ok(last && last->type == JSON_OBJECT && last->n == 0 && !json_get(&j, "none"),
       "json_get: the last of a repeated key; NULL when absent");
    json_free(&j);

    ok(fails_with("{\"a\": 1,\n \"b\" 2}", "line 2 column 6: expected ':'"), "missing colon: line and column");
    ok(fails_with("[1, 2", "line 1 column 6: unexpected end of input"), "unterminated array");
    ok(fails_with("\"a\nb\"", "line 1 column 3: control character in string"), "raw newline in a string");
    ok(fails_with("\"\\ud800x\"", "line 1 column 8: lone surrogate in \\u escape"), "lone surrogate");
    ok(fails_with("[01]", "line 1 column 2: bad number"), "leading zero");
    ok(fails_with("{} {}", "line 1 column 4: unexpected text after the value"), "two values");
    char deep[200];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    ok(fails_with(deep, "line 1 column 66: nested deeper than 64"), "nesting is bounded");
    return 0;
}
