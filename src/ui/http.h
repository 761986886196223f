/*
 * http.h - the web server of `callsight ui`, on libmicrohttpd: the pages
 * built into callsight (web.h) and the JSON API (api.h).
 *
 * Safe by default: it binds where it is told (127.0.0.1 unless told
 * otherwise); it answers only requests whose Host header names the address
 * and port it serves (a DNS-rebinding page's requests name the attacker's
 * host), unless bound to a wildcard address; bound anywhere but loopback,
 * every URL must begin with a random token the server prints; it takes
 * GET and HEAD, and POST only for the Project page's changes (project.h:
 * a second token in a header, the Origin checked, a bounded body), URLs
 * and query parameters of bounded size, and a bounded number of
 * connections, each with a timeout.
 */
#ifndef CALLSIGHT_UI_HTTP_H
#define CALLSIGHT_UI_HTTP_H

#include <stddef.h>

#include "project.h"
#include "traces.h"

#define UI_URL_MAX 1024    /* a request's URL, query included */
#define UI_ARGS_MAX 16     /* query parameters */
#define UI_ARG_LEN_MAX 256 /* one parameter's value */
#define UI_CONNS_MAX 32    /* connections at once */
#define UI_TIMEOUT_S 30    /* an idle connection is closed after this */

struct ui_server;

/* Listen on host:port (port "0": any free one) and serve t, and p's
 * project when p->dir is set (its POST token made here).  The URL to open
 * (with the token when there is one) in url.  0, or -1 with err set. */
int ui_server_start(struct ui_server **s, struct ui_traces *t, struct ui_project *p, const char *host,
                    const char *port, char *url, size_t urllen, char *err, size_t errlen);
void ui_server_stop(struct ui_server *s);

#endif
