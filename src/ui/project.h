/*
 * project.h - the Project page's side of `callsight ui --project DIR`: the
 * project's trace.config read, a draft of it previewed by `callsight scan`,
 * `callsight select`'s subtree of a function, and a draft saved.
 *
 * The only requests of `callsight ui` that change anything on disk, so
 * they are guarded beyond the server's Host and token checks (http.c):
 * they are POSTs that must carry this run's random token in the
 * X-Callsight-Token header (which a page from elsewhere can neither read
 * nor send without the browser asking the server first, which it refuses),
 * with no Origin, or this server's.  A save names the version of
 * trace.config the draft was made from, and is refused (409) if the file
 * has changed since; it replaces the file whole (a temporary file in the
 * same directory, then rename), keeps its mode, and never writes through a
 * symlink or onto anything but a regular file.  A draft is at most
 * UI_PROJECT_MAX bytes.
 */
#ifndef CALLSIGHT_UI_PROJECT_H
#define CALLSIGHT_UI_PROJECT_H

#include <stddef.h>

#include "api.h"
#include "traces.h"

#define UI_PROJECT_MAX (64u << 10) /* trace.config, read or saved */

struct ui_project {
    char *dir;         /* realpath of the project directory, NULL: no --project */
    char *config;      /* dir/trace.config */
    const char *cc;    /* --cc, --cxx for scan and select, or NULL */
    const char *cxx;
    char token[33];    /* the POSTs' X-Callsight-Token */
};

/* Take dir (which must be a directory) and make the token.  0, or -1 with
 * err set. */
int ui_project_open(struct ui_project *p, const char *dir, const char *cc, const char *cxx, char *err,
                    size_t errlen);
void ui_project_close(struct ui_project *p);

/* GET /api/project and /api/project/select, POST /api/project/preview and
 * /api/project/save (what: "project", "project/select", ...).  post says
 * which method it was; body, len its body (POST); base the X-Callsight-Base
 * header (save).  The caller has checked the token and the origin. */
void ui_project_api(struct ui_project *p, struct ui_traces *t, const char *what, int post, const char *body,
                    size_t len, const char *base, ui_arg_fn arg, void *ctx, struct ui_reply *r);

#endif
