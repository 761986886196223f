/*
 * textesc.c - unit test of src/lib/textesc.c: control bytes, DEL, C1 and
 * bytes that are not UTF-8 shown as \xNN for a terminal; only the bytes
 * that are not UTF-8 for JSON (and JSON strings written whole); XML's & < > ", no control character; valid
 * UTF-8 kept whole, also where a buffer cuts.
 */
#include <stdio.h>
#include <string.h>

#include "lib/textesc.h"

static int test_no;
static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
}

static int is(const char *in, enum textesc_mode mode, const char *want)
{
    char buf[256];
    textesc(buf, sizeof buf, in, mode);
    if (strcmp(buf, want))
        printf("# got '%s' want '%s'\n", buf, want);
    return !strcmp(buf, want);
}

/* xml: 0 terminal, 1 XML, 2 JSON. */
static int put_is(const char *in, int xml, const char *want)
{
    char buf[256] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    if (!f)
        return 0;
    if (xml == 2)
        textesc_put_json(f, in);
    else if (xml)
        textesc_put_xml(f, in);
    else
        textesc_put(f, in);
    fclose(f);
    if (strcmp(buf, want))
        printf("# got '%s' want '%s'\n", buf, want);
    return !strcmp(buf, want);
}

int main(void)
{
    ok(is("plain_name(int) [libw.so]", TEXTESC_TERMINAL, "plain_name(int) [libw.so]"), "plain text as it is");
    ok(is("a\x1b[2Jb", TEXTESC_TERMINAL, "a\\x1b[2Jb"), "ESC shown as \\x1b: no terminal sequence");
    ok(is("line\nforged 1 2 3", TEXTESC_TERMINAL, "line\\x0aforged 1 2 3"), "a newline cannot forge a line");
    ok(is("t\tab\x7f", TEXTESC_TERMINAL, "t\\x09ab\\x7f"), "tab and DEL too");
    ok(is("c1 \xc2\x9b" "31m", TEXTESC_TERMINAL, "c1 \\xc2\\x9b31m"), "C1 (U+009B, CSI) escaped, both its bytes");
    ok(is("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", TEXTESC_TERMINAL, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
       "valid UTF-8 of 2, 3 and 4 bytes kept");
    ok(is("\xff\xfe/lib", TEXTESC_TERMINAL, "\\xff\\xfe/lib"), "bytes that are not UTF-8 escaped");
    ok(is("\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82", TEXTESC_TERMINAL,
          "\\xc0\\xaf \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80 \\xe2\\x82"),
       "overlong, surrogate, past U+10FFFF and cut-short sequences escaped byte by byte");
    ok(is("a\nb\xff", TEXTESC_UTF8, "a\nb\\xff"), "for JSON: a newline kept (JSON escapes it), \\xff not");
    ok(textesc_clean_prefix("abc\x01", TEXTESC_TERMINAL) == 3 && textesc_clean_prefix("abc", TEXTESC_TERMINAL) == 3,
       "clean prefix: up to the first byte to escape");
    char small[6];
    textesc(small, sizeof small, "ab\xc3\xa9\xc3\xa9", TEXTESC_TERMINAL);
    ok(!strcmp(small, "ab\xc3\xa9"), "a short buffer cuts at a whole character");
    textesc(small, sizeof small, "ab\x1b", TEXTESC_TERMINAL);
    ok(!strcmp(small, "ab"), "and never inside an escape");
    ok(put_is("x\x1by", 0, "x\\x1by"), "textesc_put writes the same");
    ok(put_is("<a href=\"q\">&\x01\xff</a>", 1, "&lt;a href=&quot;q&quot;&gt;&amp;\\x01\\xff&lt;/a&gt;"),
       "XML: & < > and quote escaped, no control byte, valid UTF-8 only");
    ok(put_is("q\"b\\\x1b\x01\x7f\xff\xfe\xc3\xa9\n", 2, "\"q\\\"b\\\\\\u001b\\u0001\\u007f\\\\xff\\\\xfe\xc3\xa9\\u000a\""),
       "JSON: quote, backslash and control bytes escaped, not UTF-8 as \\\\xNN, UTF-8 kept");
    ok(put_is(NULL, 2, "null"), "JSON: NULL is null");
    printf("1..%d\n", test_no);
    return 0;
}
