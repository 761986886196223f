/*
 * textesc.c - strings from a device or a file made safe for the output they
 * go to (see textesc.h).
 */
#include "textesc.h"

#include <string.h>

/* Bytes of the UTF-8 character at s (1-4), 0 when s does not start one
 * (an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* Bytes of the character at s that may stand as they are (0: escape s[0]). */
static size_t clean_len(const unsigned char *s, enum textesc_mode mode)
{
    size_t n = utf8_len(s);
    if (mode == TEXTESC_TERMINAL &&
        ((n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)))
        return 0; /* C0, DEL, and C1 (U+0080-U+009F: a terminal takes some as ESC sequences) */
    return n;
}

size_t textesc_clean_prefix(const char *s, enum textesc_mode mode)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n;
    while (*p && (n = clean_len(p, mode)) > 0)
        p += n;
    return (size_t)(p - (const unsigned char *)s);
}

char *textesc(char *buf, size_t len, const char *s, enum textesc_mode mode)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    if (!len)
        return buf;
    while (*p) {
        size_t n = clean_len(p, mode);
        if (n) {
            if (o + n >= len)
                break;
            memcpy(buf + o, p, n);
            o += n;
            p += n;
        } else {
            if (o + 4 >= len)
                break;
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[*p >> 4];
            buf[o++] = hex[*p & 15];
            p++;
        }
    }
    buf[o] = '\0';
    return buf;
}

void textesc_put(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = textesc_clean_prefix((const char *)p, TEXTESC_TERMINAL);
        fwrite(p, 1, n, out);
        p += n;
        if (*p)
            fprintf(out, "\\x%02x", *p++);
    }
}

void textesc_say(const char *prog, const char *msg)
{
    fprintf(stderr, "%s: ", prog);
    textesc_put(stderr, msg);
    fputc('\n', stderr);
}

void textesc_put_xml(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = clean_len(p, TEXTESC_TERMINAL);
        if (!n)
            fprintf(out, "\\x%02x", *p++);
        else if (*p == '&')
            fputs("&amp;", out), p++;
        else if (*p == '<')
            fputs("&lt;", out), p++;
        else if (*p == '>')
            fputs("&gt;", out), p++;
        else if (*p == '"')
            fputs("&quot;", out), p++;
        else
            fwrite(p, 1, n, out), p += n;
    }
}

void textesc_put_json(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    while (*s) {
        size_t n = textesc_clean_prefix(s, TEXTESC_UTF8);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '"' || c == '\\')
                fprintf(out, "\\%c", c);
            else if (c < 0x20 || c == 0x7f)
                fprintf(out, "\\u%04x", c);
            else
                fputc(c, out);
        }
        s += n;
        if (*s)
            fprintf(out, "\\\\x%02x", (unsigned char)*s++);
    }
    fputc('"', out);
}
