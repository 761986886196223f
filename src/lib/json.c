/*
 * json.c - recursive-descent JSON reader (see json.h).  Recursion is
 * bounded by JSON_MAX_DEPTH, so no input can exhaust the stack.
 */
#include "json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *s;
    size_t len, pos;
    char *msg;
    size_t msglen;
    int failed;
};

static int fail(struct parser *p, const char *fmt, ...)
{
    size_t line = 1, col = 1;
    if (p->failed)
        return -1;
    for (size_t i = 0; i < p->pos && i < p->len; i++, col++)
        if (p->s[i] == '\n') {
            line++;
            col = 0;
        }
    int n = snprintf(p->msg, p->msglen, "line %zu column %zu: ", line, col);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < p->msglen)
        vsnprintf(p->msg + n, p->msglen - (size_t)n, fmt, ap);
    va_end(ap);
    p->failed = 1;
    return -1;
}

static void skip_space(struct parser *p)
{
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) && p->s[p->pos])
        p->pos++;
}

static int peek(struct parser *p)
{
    skip_space(p);
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int literal(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, "expected a value");
    p->pos += n;
    return 0;
}

static int hex4(struct parser *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++, p->pos++) {
        char c = p->pos < p->len ? p->s[p->pos] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return fail(p, "bad \\u escape");
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

/* Append code point cp as UTF-8. */
static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int unicode_escape(struct parser *p, char *out, size_t *n)
{
    unsigned cp, lo;
    if (hex4(p, &cp) < 0)
        return -1;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail(p, "lone surrogate in \\u escape");
        p->pos += 2;
        if (hex4(p, &lo) < 0)
            return -1;
        if (lo < 0xdc00 || lo > 0xdfff)
            return fail(p, "bad surrogate pair in \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
        return fail(p, "lone surrogate in \\u escape");
    }
    *n += put_utf8(out + *n, cp);
    return 0;
}

static int escape(struct parser *p, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char c = p->pos < p->len ? p->s[p->pos++] : 0;
    if (c == 'u')
        return unicode_escape(p, out, n);
    const char *k = c ? strchr(from, c) : NULL;
    if (!k)
        return fail(p, "bad escape in string");
    out[(*n)++] = to[k - from];
    return 0;
}

/* A string at p->pos (the opening quote), into a malloc'ed *out. */
static int string(struct parser *p, char **out)
{
    size_t start = ++p->pos, n = 0;
    /* Escapes never get longer than their source, so len bytes suffice. */
    char *buf = malloc(p->len - start + 1);
    if (!buf)
        return fail(p, "out of memory");
    while (1) {
        if (p->pos >= p->len) {
            free(buf);
            return fail(p, "unterminated string");
        }
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20) {
            free(buf);
            return fail(p, "control character in string");
        }
        p->pos++;
        if (c != '\\')
            buf[n++] = (char)c;
        else if (escape(p, buf, &n) < 0) {
            free(buf);
            return -1;
        }
    }
    p->pos++;
    buf[n] = 0;
    *out = buf;
    return 0;
}

static size_t digits(struct parser *p)
{
    size_t n = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        p->pos++;
        n++;
    }
    return n;
}

static int bad_number(struct parser *p, size_t start)
{
    p->pos = start;
    return fail(p, "bad number");
}

static int number(struct parser *p, struct json *j)
{
    size_t start = p->pos;
    int integer = 1;
    if (p->s[p->pos] == '-')
        p->pos++;
    size_t lead = p->pos;
    if (!digits(p) || (p->s[lead] == '0' && p->pos - lead > 1))
        return bad_number(p, start);
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        integer = 0;
        if (!digits(p))
            return bad_number(p, start);
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        integer = 0;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (!digits(p))
            return bad_number(p, start);
    }
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof buf) {
        p->pos = start;
        return fail(p, "number too long");
    }
    memcpy(buf, p->s + start, n);
    buf[n] = 0;
    j->type = JSON_NUMBER;
    j->num = strtod(buf, NULL);
    if (integer && buf[0] != '-') {
        errno = 0;
        j->u = strtoull(buf, NULL, 10);
        j->is_uint = errno == 0;
    }
    return 0;
}

static int value(struct parser *p, struct json *j, int depth);

/* Room for one more member of an array or object. */
static int add_item(struct parser *p, struct json *j, size_t *cap, int keyed)
{
    if (j->n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 8;
    struct json *items = realloc(j->items, c * sizeof *items);
    if (items)
        j->items = items;
    char **keys = keyed && items ? realloc(j->keys, c * sizeof *keys) : NULL;
    if (keys)
        j->keys = keys;
    if (!items || (keyed && !keys))
        return fail(p, "out of memory");
    *cap = c;
    return 0;
}

/* An object's key and its colon, into a malloc'ed *key. */
static int key(struct parser *p, char **key)
{
    if (peek(p) != '"')
        return fail(p, "expected a string key");
    if (string(p, key) < 0)
        return -1;
    if (peek(p) != ':')
        return fail(p, "expected ':'");
    p->pos++;
    return 0;
}

/* An array (keyed 0) or object (keyed 1) at p->pos, its opening bracket. */
static int members(struct parser *p, struct json *j, int depth, int keyed)
{
    const char close = keyed ? '}' : ']';
    size_t cap = 0;
    j->type = keyed ? JSON_OBJECT : JSON_ARRAY;
    p->pos++;
    if (peek(p) == close) {
        p->pos++;
        return 0;
    }
    while (1) {
        if (add_item(p, j, &cap, keyed) < 0)
            return -1;
        memset(&j->items[j->n], 0, sizeof j->items[j->n]);
        if (keyed)
            j->keys[j->n] = NULL;
        j->n++;
        if ((keyed && key(p, &j->keys[j->n - 1]) < 0) ||
            value(p, &j->items[j->n - 1], depth + 1) < 0)
            return -1;
        int c = peek(p);
        if (c != ',' && c != close)
            return fail(p, c < 0 ? "unexpected end of input"
                           : keyed ? "expected ',' or '}'" : "expected ',' or ']'");
        p->pos++;
        if (c == close)
            return 0;
    }
}

static int value(struct parser *p, struct json *j, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return fail(p, "nested deeper than %d", JSON_MAX_DEPTH);
    switch (peek(p)) {
    case '{': return members(p, j, depth, 1);
    case '[': return members(p, j, depth, 0);
    case '"': j->type = JSON_STRING; return string(p, &j->str);
    case 't': j->type = JSON_BOOL; j->boolean = 1; return literal(p, "true");
    case 'f': j->type = JSON_BOOL; return literal(p, "false");
    case 'n': j->type = JSON_NULL; return literal(p, "null");
    case -1: return fail(p, "unexpected end of input");
    default:
        if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
            return number(p, j);
        return fail(p, "expected a value");
    }
}

int json_parse(const char *text, size_t len, struct json *out, char *msg, size_t msglen)
{
    struct parser p = {text, len, 0, msg, msglen, 0};
    memset(out, 0, sizeof *out);
    if (value(&p, out, 0) == 0 && peek(&p) != -1)
        fail(&p, "unexpected text after the value");
    if (p.failed) {
        json_free(out);
        return -1;
    }
    return 0;
}

void json_free(struct json *j)
{
    for (size_t i = 0; i < j->n; i++) {
        json_free(&j->items[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->str);
    memset(j, 0, sizeof *j);
}

const struct json *json_get(const struct json *obj, const char *key)
{
    const struct json *found = NULL;
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && !strcmp(obj->keys[i], key))
            found = &obj->items[i];
    return found;
}
