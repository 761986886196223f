/*
 * web.h - the pages `callsight ui` serves, built into callsight.
 *
 * tools/embed.c generates the table at build time from src/ui/web/ (plain
 * HTML, CSS and ES modules; see the Makefile), so the pages need no
 * network, no source tree and no build step of their own.  Each file is
 * known by its base name; data is followed by a NUL that size does not
 * count.
 */
#ifndef CALLSIGHT_UI_WEB_H
#define CALLSIGHT_UI_WEB_H

#include <stddef.h>

struct ui_web_file {
    const char *name;          /* base name, e.g. "index.html" */
    const unsigned char *data; /* size bytes, then a NUL */
    size_t size;
};

extern const struct ui_web_file ui_web_files[];
extern const size_t ui_web_count;

#endif
