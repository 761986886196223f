/*
 * json.h - a small JSON reader, for `callsight diff` to read back the
 * reports of `analyze --format json`.
 *
 * The whole text is parsed into a tree of values (RFC 8259: objects,
 * arrays, strings with every escape, numbers, true, false, null).
 * Non-negative integers that fit in 64 bits are kept exactly; other numbers
 * as doubles.  Nothing in the input is trusted: nesting deeper than
 * JSON_MAX_DEPTH, a bad escape, a control character in a string, trailing
 * bytes, or running out of input is an error with a one-line message
 * giving the line and column.
 */
#ifndef CALLSIGHT_JSON_H
#define CALLSIGHT_JSON_H

#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 64

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
    enum json_type type;
    int boolean;
    double num;
    int is_uint;      /* a non-negative integer, exactly u */
    uint64_t u;
    char *str;        /* JSON_STRING, NUL-terminated (a \u0000 ends it early) */
    struct json *items; /* JSON_ARRAY elements, JSON_OBJECT values */
    char **keys;        /* JSON_OBJECT keys, parallel to items */
    size_t n;
};

/* Parse text[0..len).  0 ok (free with json_free); -1 with msg set. */
int json_parse(const char *text, size_t len, struct json *out, char *msg, size_t msglen);
void json_free(struct json *j);
/* The value of key in an object (the last one when repeated), or NULL. */
const struct json *json_get(const struct json *obj, const char *key);

#endif
