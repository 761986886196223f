/*
 * http.c - the web server of `callsight ui` (see http.h).  Every request is
 * checked before it is routed: its method, the length of its URL, its Host
 * header, the token, its query parameters; then it is a page from web.h or
 * a question for api.c.  Every answer carries headers that keep a page
 * from being framed, sniffed or made to load anything from elsewhere.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"
#include "lib/peeruid.h"
#include "lib/textesc.h"
#include "live.h"
#include "project.h"
#include "web.h"

struct ui_server {
    struct MHD_Daemon *d;
    struct ui_traces *t;
    struct ui_project *p;  /* the Project page's, dir NULL without --project */
    int fd;
    int check_host;        /* 0 when bound to a wildcard address */
    char hosts[3][300];    /* the Host headers taken */
    char token[33];        /* "" on loopback */
    unsigned port;         /* the port it listens on */
    atomic_uint refused;   /* connections of other users (accept_peer) */
};

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            return a->s6_addr[12] == 127;
        return IN6_IS_ADDR_LOOPBACK(a);
    }
    return 0;
}

/*
 * Every user of the machine can connect to 127.0.0.1, and on loopback no
 * token is asked for: so a connection from this machine is taken only from
 * this user's own sockets (or root's), as a ring or a control socket is
 * its owner's alone.  Peers elsewhere need the URL's token instead.
 */
static enum MHD_Result accept_peer(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct ui_server *s = cls;
    if (!is_loopback(addr))
        return MHD_YES;
    uid_t uid = (uid_t)-1;
    int known = peeruid_tcp(addr, addrlen, s->port, "/proc/net", &uid) == 0;
    if (known && (uid == geteuid() || uid == 0))
        return MHD_YES;
    if (atomic_fetch_add(&s->refused, 1) < 5) {
        char who[32];
        snprintf(who, sizeof who, known ? "uid %u" : "a user not found", (unsigned)uid);
        fprintf(stderr, "callsight ui: refused a connection from another user of this machine (%s): only uid %u "
                        "is served\n", who, (unsigned)geteuid());
    }
    return MHD_NO;
}

static int is_wildcard(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    return sa->sa_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static int make_token(char *hex)
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return 0;
}

static int listen_on(struct ui_server *s, const char *host, const char *port, char *url, size_t urllen, char *err,
                     size_t errlen)
{
    struct addrinfo hints = {0}, *ai;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "%s port %s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int one = 1;
    s->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(s->fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s->fd, 64) < 0) {
        snprintf(err, errlen, "%s port %s: %s", host, port, strerror(errno));
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char num[INET6_ADDRSTRLEN], lit[INET6_ADDRSTRLEN + 2];
    unsigned p;
    if (getsockname(s->fd, (struct sockaddr *)&ss, &sl) < 0) {
        snprintf(err, errlen, "getsockname: %s", strerror(errno));
        return -1;
    }
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, num, sizeof num);
        snprintf(lit, sizeof lit, "[%s]", num);
        p = ntohs(a->sin6_port);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, num, sizeof num);
        snprintf(lit, sizeof lit, "%s", num);
        p = ntohs(a->sin_port);
    }
    int loop = is_loopback((struct sockaddr *)&ss);
    s->check_host = !is_wildcard((struct sockaddr *)&ss);
    snprintf(s->hosts[0], sizeof s->hosts[0], "%s:%u", lit, p);
    snprintf(s->hosts[1], sizeof s->hosts[1], "%.200s:%u", strchr(host, ':') ? lit : host, p);
    if (loop)
        snprintf(s->hosts[2], sizeof s->hosts[2], "localhost:%u", p);
    if (!loop && make_token(s->token) < 0) {
        snprintf(err, errlen, "getrandom: %s", strerror(errno));
        return -1;
    }
    snprintf(url, urllen, "http://%s/%s%s", s->check_host ? s->hosts[1] : s->hosts[0], s->token,
             s->token[0] ? "/" : "");
    return 0;
}

/* ---- answers ---- */

static void add_headers(struct MHD_Response *r, const char *type)
{
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
}

static enum MHD_Result send_reply(struct MHD_Connection *c, int status, const char *type, void *body, size_t len,
                                  enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    add_headers(r, type);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result refuse(struct MHD_Connection *c, int status, const char *why)
{
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f)
        return MHD_NO;
    fputs("{\"error\": ", f);
    textesc_put_json(f, why);
    fputs("}\n", f);
    if (fclose(f) != 0)
        return MHD_NO;
    return send_reply(c, status, "application/json", body, len, MHD_RESPMEM_MUST_FREE);
}

static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && !strcmp(dot, ".html"))
        return "text/html; charset=utf-8";
    if (dot && !strcmp(dot, ".css"))
        return "text/css; charset=utf-8";
    if (dot && !strcmp(dot, ".js"))
        return "text/javascript; charset=utf-8";
    return "application/octet-stream";
}

static enum MHD_Result send_page(struct MHD_Connection *c, const char *name)
{
    for (size_t i = 0; i < ui_web_count; i++)
        if (!strcmp(ui_web_files[i].name, name))
            return send_reply(c, 200, type_of(name), (void *)ui_web_files[i].data, ui_web_files[i].size,
                              MHD_RESPMEM_PERSISTENT);
    return refuse(c, 404, "no such page");
}

/* ---- the Live page's stream ---- */

static const char *get_arg(void *ctx, const char *name);

static ssize_t live_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = ui_live_read(cls, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void live_free(void *cls)
{
    ui_live_close(cls);
}

static enum MHD_Result send_live(struct ui_server *s, struct MHD_Connection *c)
{
    const char *name = get_arg(c, "t");
    char err[256];
    int status = 400;
    struct ui_trace *tr = name ? ui_traces_find(s->t, name, &status, err, sizeof err) : NULL;
    if (!tr)
        return refuse(c, status, name ? err : "t: the trace, N or N/DIR (see /api/traces)");
    struct ui_live *l = ui_live_open(s->t, tr);
    if (!l)
        return refuse(c, 503, "4 live streams are open already");
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, live_reader, l, live_free);
    if (!r) {
        ui_live_close(l);
        return MHD_NO;
    }
    add_headers(r, "text/event-stream; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- checks ---- */

struct argcheck {
    unsigned n;
    int too_long;
};

static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct argcheck *a = cls;
    (void)kind;
    a->n++;
    if (strlen(key) > 32 || (value && strlen(value) > UI_ARG_LEN_MAX))
        a->too_long = 1;
    return MHD_YES;
}

static const char *get_arg(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static int token_ok(const char *got, const char *want, size_t n)
{
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(got[i] ^ want[i]);
    return diff == 0;
}

static int host_ok(const struct ui_server *s, const char *host)
{
    if (!s->check_host)
        return 1;
    if (!host)
        return 0;
    for (size_t i = 0; i < 3; i++)
        if (s->hosts[i][0] && !strcasecmp(host, s->hosts[i]))
            return 1;
    return 0;
}

/* A POST's Origin, when the browser sends one, must be this server: a
 * form or a script on another site's page cannot change anything here
 * (the token already keeps them out; this refuses them before the body). */
static int origin_ok(const struct ui_server *s, const char *origin)
{
    if (!origin)
        return 1;
    if (strncmp(origin, "http://", 7))
        return 0;
    if (!s->check_host) /* a wildcard address: any name may reach it, the URL token guards */
        return 1;
    return host_ok(s, origin + 7);
}

/* Sec-Fetch-Site, which browsers send with every request: an API request
 * made by another site's page (an <img>, a form, a script: cross-site or
 * same-site) is refused, even a GET, since every answer may start an
 * analysis or the compiler, and the subtree writes the call graph's files
 * into the project.  Clients that send none (curl, scripts) are taken. */
static int fetch_site_ok(const char *site)
{
    return !site || !strcmp(site, "same-origin") || !strcmp(site, "none");
}

static int project_token_ok(const struct ui_server *s, struct MHD_Connection *c)
{
    const char *tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Callsight-Token");
    return tok && strlen(tok) == 32 && s->p->dir && token_ok(tok, s->p->token, 32);
}

/* A POST's body as it arrives, at most UI_PROJECT_MAX bytes kept; more is
 * counted as too large and refused when the body has ended. */
struct body {
    size_t len;
    int over;
    char data[UI_PROJECT_MAX];
};

static void request_done(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    free(*req_cls);
    *req_cls = NULL;
}

/* POST /api/project/preview and /save: checked, its body gathered, then
 * answered by project.c.  Only these take a body. */
static enum MHD_Result handle_post(struct ui_server *s, struct MHD_Connection *c, const char *rest,
                                   const char *upload_data, size_t *upload_data_size, void **req_cls)
{
    struct body *b = *req_cls;
    if (!b) { /* the headers: everything is checked before a byte of the body is read */
        if (strcmp(rest, "/api/project/preview") && strcmp(rest, "/api/project/save"))
            return refuse(c, 405, "GET and HEAD only here");
        if (!s->p->dir)
            return refuse(c, 404, "no project: start callsight ui with --project DIR");
        if (!project_token_ok(s, c))
            return refuse(c, 403, "a change needs this run's token in X-Callsight-Token (GET /api/project)");
        if (!origin_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin")))
            return refuse(c, 403, "a change must come from this server's own page (Origin)");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > UI_PROJECT_MAX)
            return refuse(c, 413, "a trace.config of at most 64 KiB");
        if (!(b = calloc(1, sizeof *b)))
            return MHD_NO;
        *req_cls = b;
        return MHD_YES;
    }
    if (*upload_data_size) { /* a piece of the body */
        size_t n = *upload_data_size;
        if (b->over || n > sizeof b->data - b->len)
            b->over = 1;
        else {
            memcpy(b->data + b->len, upload_data, n);
            b->len += n;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (b->over)
        return refuse(c, 413, "a trace.config of at most 64 KiB");
    struct ui_reply r;
    ui_project_api(s->p, s->t, rest + 5, 1, b->data, b->len,
                   MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Callsight-Base"), get_arg, c, &r);
    if (!r.body)
        return refuse(c, 500, "out of memory");
    return send_reply(c, r.status, r.type, r.body, r.len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls)
{
    struct ui_server *s = cls;
    int post = !strcmp(method, "POST");
    (void)version;
    const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (!post && (*upload_data_size || (clen && strcmp(clen, "0")) ||
                  MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding")))
        return refuse(c, 413, "no request bodies here");
    if (strcmp(method, "GET") && strcmp(method, "HEAD") && !post)
        return refuse(c, 405, "GET, HEAD and the Project page's POSTs only");
    if (strlen(url) > UI_URL_MAX)
        return refuse(c, 414, "URL too long");
    if (!host_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host")))
        return refuse(c, 421, "the Host header does not name this server");
    const char *rest = url;
    size_t tl = strlen(s->token);
    if (tl) {
        if (strlen(url) < tl + 2 || url[0] != '/' || !token_ok(url + 1, s->token, tl) || url[tl + 1] != '/')
            return refuse(c, 403, "this server needs the token it printed in the URL");
        rest = url + tl + 1;
    }
    struct argcheck a = {0, 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_arg, &a);
    if (a.n > UI_ARGS_MAX || a.too_long)
        return refuse(c, 414, "too many or too long query parameters");
    if (!strncmp(rest, "/api/", 5) && !fetch_site_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site")))
        return refuse(c, 403, "the API answers this server's own pages only (Sec-Fetch-Site)");
    if (post)
        return handle_post(s, c, rest, upload_data, upload_data_size, req_cls);
    if (!strcmp(rest, "/api/project/select") && !project_token_ok(s, c))
        return refuse(c, 403, "the subtree runs the compiler: it needs this run's token in X-Callsight-Token "
                              "(GET /api/project)");
    if (!strcmp(rest, "/api/project") || !strncmp(rest, "/api/project/", 13)) {
        struct ui_reply r;
        ui_project_api(s->p, s->t, rest + 5, 0, NULL, 0, NULL, get_arg, c, &r);
        if (!r.body)
            return refuse(c, 500, "out of memory");
        return send_reply(c, r.status, r.type, r.body, r.len, MHD_RESPMEM_MUST_FREE);
    }
    if (!strcmp(rest, "/"))
        return send_page(c, "index.html");
    if (!strcmp(rest, "/api/live"))
        return send_live(s, c);
    if (!strncmp(rest, "/api/", 5)) {
        struct ui_reply r;
        ui_api(s->t, rest + 5, get_arg, c, &r);
        if (!r.body)
            return refuse(c, 500, "out of memory");
        return send_reply(c, r.status, r.type, r.body, r.len, MHD_RESPMEM_MUST_FREE);
    }
    if (strchr(rest + 1, '/'))
        return refuse(c, 404, "no such page");
    return send_page(c, rest + 1);
}

int ui_server_start(struct ui_server **out, struct ui_traces *t, struct ui_project *p, const char *host,
                    const char *port, char *url, size_t urllen, char *err, size_t errlen)
{
    struct ui_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->t = t;
    s->p = p;
    s->fd = -1;
    if (p->dir && make_token(p->token) < 0) {
        snprintf(err, errlen, "getrandom: %s", strerror(errno));
        free(s);
        return -1;
    }
    if (listen_on(s, host, port, url, urllen, err, errlen) < 0) {
        if (s->fd >= 0)
            close(s->fd);
        free(s);
        return -1;
    }
    struct sockaddr_storage self;
    socklen_t selflen = sizeof self;
    if (getsockname(s->fd, (struct sockaddr *)&self, &selflen) == 0)
        s->port = ntohs(self.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&self)->sin6_port
                                                   : ((struct sockaddr_in *)&self)->sin_port);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, accept_peer, s, handle,
                            s, MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)UI_CONNS_MAX,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)UI_CONNS_MAX,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)UI_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
                            MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "cannot start the web server (libmicrohttpd)");
        close(s->fd);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void ui_server_stop(struct ui_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d); /* closes the listening socket too */
    free(s);
}
