/*
 * textesc.h - strings from a device or a file made safe for the output they
 * go to.
 *
 * Function names, module paths, thread names and labels come from traces
 * and binaries nobody vouches for: an ESC byte there would drive the
 * user's terminal, a newline would forge a report line, and bytes that are
 * not UTF-8 make an SVG ill-formed and a JSON string impossible (jansson
 * refuses them).  Each writer passes such a string through one of these:
 * what may not appear is shown as \xNN (four printable characters), so
 * nothing is lost and the output stays one line per row.
 */
#ifndef CALLSIGHT_TEXTESC_H
#define CALLSIGHT_TEXTESC_H

#include <stddef.h>
#include <stdio.h>

enum textesc_mode {
    TEXTESC_TERMINAL, /* text and terminals: control bytes (C0, DEL, C1) and non-UTF-8 as \xNN */
    TEXTESC_UTF8      /* JSON and the like: only bytes that are not UTF-8 as \xNN */
};

/* The bytes of s that need no escape in mode: s is safe as it is when this
 * is strlen(s). */
size_t textesc_clean_prefix(const char *s, enum textesc_mode mode);

/* s escaped into buf (len bytes, NUL-terminated, cut at a whole character
 * or escape when it does not fit).  Returns buf. */
char *textesc(char *buf, size_t len, const char *s, enum textesc_mode mode);

/* s escaped for the terminal, written to out. */
void textesc_put(FILE *out, const char *s);

/* "prog: msg" and a newline on stderr, msg escaped for the terminal: an
 * error message may quote a file or function name. */
void textesc_say(const char *prog, const char *msg);

/* s escaped as XML character data or an attribute value (&amp; &lt; &gt;
 * &quot;, then as TEXTESC_TERMINAL: XML may hold no control character),
 * written to out. */
void textesc_put_xml(FILE *out, const char *s);

/* s as a JSON string with its quotes (NULL: null), written to out: UTF-8
 * stays as it is, a quote and a backslash are escaped, a control character
 * is \u00NN, and a byte that is not UTF-8 becomes the four characters \xNN
 * (written \\xNN), so that the document is valid JSON and nothing is lost. */
void textesc_put_json(FILE *out, const char *s);

#endif
