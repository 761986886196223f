/*
 * control.c - serve's control socket, both ends (see control.h): serve
 * listens in its output directory and hands a snapshot request to the
 * connections of flight recorders (conn_request_snapshot); `callsight
 * trigger` connects, asks and prints the answer.  Every read and write is
 * bounded by a poll timeout, so neither end waits for a stuck peer.
 */
#include "control.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"

#define CONTROL_WAIT_MS 1000 /* serve: for a client's request line */
#define REQUEST_WAIT_MS 5000 /* trigger: for serve's answer */
#define CONTROL_MAX_IDS 64   /* ids named in one answer */
#define CTL_REPLY_WAIT_MS 8000 /* ctl: for serve's answer (serve waits for the device's, bounded) */

static int control_path(const char *dir, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path, sizeof a->sun_path, "%s/%s", dir, CONTROL_SOCKET_NAME);
    return n < 0 || (size_t)n >= sizeof a->sun_path ? -1 : 0;
}

/* Someone answers on the socket at a: a live serve. */
static int control_alive(const struct sockaddr_un *a)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int alive = fd >= 0 && connect(fd, (const struct sockaddr *)a, sizeof *a) == 0;
    if (fd >= 0)
        close(fd);
    return alive;
}

int control_listen(const char *dir, char *err, size_t errlen)
{
    struct sockaddr_un a;
    if (control_path(dir, &a)) {
        snprintf(err, errlen, "the path %s/%s is too long for a UNIX socket", dir, CONTROL_SOCKET_NAME);
        return -1;
    }
    if (control_alive(&a)) {
        snprintf(err, errlen, "another serve listens on %s", a.sun_path);
        return -1;
    }
    unlink(a.sun_path); /* a stale one, left by a serve that was killed */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old = umask(077);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0;
    umask(old);
    if (!ok) {
        snprintf(err, errlen, "%s: %s", a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One line from fd within ms in all (however slowly it comes), without
 * its newline; 0, or -1. */
static int read_line(int fd, char *line, size_t len, int ms)
{
    size_t got = 0;
    long until = now_ms() + ms;
    while (got + 1 < len) {
        struct pollfd p = {fd, POLLIN, 0};
        long left = until - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        ssize_t n = recv(fd, line + got, 1, 0);
        if (n <= 0)
            return -1;
        if (line[got] == '\n') {
            line[got] = 0;
            return 0;
        }
        got++;
    }
    return -1;
}

static void answer(int fd, const char *line)
{
    (void)send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* "wire": one line per connection writing a file, after a count; one
 * send, so a reader that went away costs nothing. */
static void answer_wire(int fd)
{
    static struct conn_wire w[CONTROL_MAX_CONNS];
    static char text[32 + CONTROL_MAX_CONNS * 32];
    size_t n = conn_wire(w, CONTROL_MAX_CONNS);
    int used = snprintf(text, sizeof text, "wire %zu\n", n);
    for (size_t i = 0; i < n && used > 0 && (size_t)used < sizeof text; i++)
        used += snprintf(text + used, sizeof text - (size_t)used, "%u %llu\n", (unsigned)w[i].id,
                         (unsigned long long)w[i].bytes);
    answer(fd, text);
}

/* LEN bytes of body within ms, then the request relayed (conn_control). */
static void serve_ctl(int fd, unsigned long id, unsigned long len)
{
    static unsigned char body[TRACE_STREAM_CTL_BODY_MAX];
    char line[CONTROL_LINE_MAX];
    if (len > sizeof body) {
        snprintf(line, sizeof line, "refused %lu a request of %lu bytes (at most %u)\n", id, len,
                 TRACE_STREAM_CTL_BODY_MAX);
        answer(fd, line);
        return;
    }
    long until = now_ms() + CONTROL_WAIT_MS;
    for (size_t got = 0; got < len;) {
        struct pollfd p = {fd, POLLIN, 0};
        long left = until - now_ms();
        ssize_t n = left > 0 && poll(&p, 1, (int)left) > 0 ? recv(fd, body + got, len - got, 0) : -1;
        if (n <= 0)
            return; /* late or gone: nothing was sent on */
        got += (size_t)n;
    }
    struct conn_ctl_result r;
    int rc = conn_control((uint32_t)id, body, len, &r);
    const trace_stream_ctl_answer_t *a = &r.answer;
    if (rc == CONN_CTL_APPLIED || rc == CONN_CTL_PENDING)
        snprintf(line, sizeof line, "%s %u %llu %llu %u %u\n", rc == CONN_CTL_APPLIED ? "applied" : "pending",
                 (unsigned)r.id, (unsigned long long)a->gen, (unsigned long long)a->applied, (unsigned)a->flags,
                 (unsigned)a->nfuncs);
    else if (rc == CONN_CTL_REFUSED)
        snprintf(line, sizeof line, "refused %u %s\n", (unsigned)r.id, r.why);
    else
        snprintf(line, sizeof line, "unreachable %s\n", r.why);
    answer(fd, line);
}

static void answer_ctl_list(int fd)
{
    static struct conn_ctl_entry e[CONTROL_MAX_CONNS];
    static char text[32 + CONTROL_MAX_CONNS * 96];
    size_t n = conn_ctl_list(e, CONTROL_MAX_CONNS);
    int used = snprintf(text, sizeof text, "ctl-list %zu\n", n);
    for (size_t i = 0; i < n && used > 0 && (size_t)used < sizeof text; i++)
        used += snprintf(text + used, sizeof text - (size_t)used, "%u %d %d %llu %llu %u %u\n", (unsigned)e[i].id,
                         e[i].takes, e[i].answered, (unsigned long long)e[i].last.gen,
                         (unsigned long long)e[i].last.applied, (unsigned)e[i].last.flags,
                         (unsigned)e[i].last.nfuncs);
    answer(fd, text);
}

void control_serve_one(int lfd)
{
    char line[CONTROL_LINE_MAX];
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return;
    unsigned long id;
    char tail;
    if (read_line(fd, line, sizeof line, CONTROL_WAIT_MS) != 0) {
        close(fd);
        return;
    }
    if (!strcmp(line, "wire")) {
        answer_wire(fd);
        close(fd);
        return;
    }
    if (!strcmp(line, "ctl-list")) {
        answer_ctl_list(fd);
        close(fd);
        return;
    }
    unsigned long len;
    if (sscanf(line, "ctl %lu %lu%c", &id, &len, &tail) == 2 && id <= UINT32_MAX) {
        serve_ctl(fd, id, len);
        close(fd);
        return;
    }
    if (sscanf(line, "snapshot %lu%c", &id, &tail) != 1 || id > UINT32_MAX) {
        answer(fd, "error the request is not 'snapshot ID', 'wire', 'ctl ID LEN' or 'ctl-list'\n");
        close(fd);
        return;
    }
    uint32_t ids[CONTROL_MAX_IDS];
    size_t takers = 0, n = conn_request_snapshot((uint32_t)id, ids, CONTROL_MAX_IDS, &takers);
    int used = n ? snprintf(line, sizeof line, "ok %zu ", n) : snprintf(line, sizeof line, "none %zu", takers);
    for (size_t i = 0; i < n && used > 0 && (size_t)used < sizeof line - 16; i++)
        used += snprintf(line + used, sizeof line - (size_t)used, "%s%u", i ? "," : "", (unsigned)ids[i]);
    if (used > 0 && (size_t)used < sizeof line - 1)
        snprintf(line + used, sizeof line - (size_t)used, "\n");
    answer(fd, line);
    close(fd);
}

void control_close(int lfd, const char *dir)
{
    struct sockaddr_un a;
    if (lfd < 0)
        return;
    close(lfd);
    if (control_path(dir, &a) == 0)
        unlink(a.sun_path);
}

/* Connected to the serve listening in dir, the request line sent: the
 * socket, or -1 with why in err. */
static int control_ask(const char *dir, const char *request, char *err, size_t errlen)
{
    struct sockaddr_un a;
    if (control_path(dir, &a)) {
        snprintf(err, errlen, "the path %s/%s is too long for a UNIX socket", dir, CONTROL_SOCKET_NAME);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        snprintf(err, errlen, "no serve is listening in %s (%s: %s)", dir, a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* Only a serve of our own user (or root) is asked: serve refuses a
     * directory another user owns or may write, but whoever owns the one
     * named here could listen there and answer `applied` for a change that
     * never happened (or take the request's function list). */
    struct ucred cr;
    socklen_t crl = sizeof cr;
    int known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) == 0;
    if (!known || (cr.uid != geteuid() && cr.uid != 0)) {
        snprintf(err, errlen, "%s is not a serve of this user (uid %ld listens there): not asked", a.sun_path,
                 known ? (long)cr.uid : -1L);
        close(fd);
        return -1;
    }
    if (send(fd, request, strlen(request), MSG_NOSIGNAL) != (ssize_t)strlen(request)) {
        snprintf(err, errlen, "serve in %s did not take the request", dir);
        close(fd);
        return -1;
    }
    return fd;
}

int control_request(const char *dir, uint32_t id, char *reply, size_t len)
{
    char line[64];
    snprintf(line, sizeof line, "snapshot %u\n", (unsigned)id);
    int fd = control_ask(dir, line, reply, len);
    if (fd < 0)
        return -1;
    int rc = read_line(fd, reply, len, REQUEST_WAIT_MS);
    if (rc)
        snprintf(reply, len, "serve in %s did not answer", dir);
    close(fd);
    return rc;
}

/* The count line of a 'wire' answer, then that many "ID BYTES" lines, the
 * first max of them into out.  How many lines came, or -1 for a malformed
 * or late answer. */
static long read_wire(int fd, struct conn_wire *out, size_t max, int wait_ms)
{
    char line[64], tail;
    unsigned long n, id;
    unsigned long long bytes;
    if (read_line(fd, line, sizeof line, wait_ms) != 0 || sscanf(line, "wire %lu%c", &n, &tail) != 1 ||
        n > CONTROL_MAX_CONNS)
        return -1;
    for (unsigned long i = 0; i < n; i++) {
        if (read_line(fd, line, sizeof line, wait_ms) != 0 ||
            sscanf(line, "%lu %llu%c", &id, &bytes, &tail) != 2 || id > UINT32_MAX)
            return -1;
        if (i < max)
            out[i] = (struct conn_wire){(uint32_t)id, bytes};
    }
    return (long)n;
}

long control_wire(const char *dir, struct conn_wire *out, size_t max, int wait_ms, char *err,
                  size_t errlen)
{
    int fd = control_ask(dir, "wire\n", err, errlen);
    if (fd < 0)
        return -1;
    long got = read_wire(fd, out, max, wait_ms);
    close(fd);
    if (got < 0) {
        snprintf(err, errlen, "serve in %s did not answer 'wire' (an older serve?)", dir);
        return -1;
    }
    return (size_t)got < max ? got : (long)max;
}

int control_ctl(const char *dir, uint32_t id, const unsigned char *body, size_t len, char *reply, size_t rlen)
{
    char line[64];
    snprintf(line, sizeof line, "ctl %u %zu\n", (unsigned)id, len);
    int fd = control_ask(dir, line, reply, rlen);
    if (fd < 0)
        return -1;
    if (send(fd, body, len, MSG_NOSIGNAL) != (ssize_t)len) {
        snprintf(reply, rlen, "serve in %s did not take the request", dir);
        close(fd);
        return -1;
    }
    int rc = read_line(fd, reply, rlen, CTL_REPLY_WAIT_MS);
    if (rc)
        snprintf(reply, rlen, "serve in %s did not answer (an older serve?)", dir);
    close(fd);
    return rc;
}

int control_ctl_list(const char *dir, char *text, size_t len)
{
    char line[128], tail;
    unsigned long n;
    int fd = control_ask(dir, "ctl-list\n", text, len);
    if (fd < 0)
        return -1;
    size_t used = 0;
    int rc = read_line(fd, line, sizeof line, REQUEST_WAIT_MS) || sscanf(line, "ctl-list %lu%c", &n, &tail) != 1 ||
             n > CONTROL_MAX_CONNS ? -1 : 0;
    text[0] = 0;
    for (unsigned long i = 0; rc == 0 && i < n; i++) {
        if (read_line(fd, line, sizeof line, REQUEST_WAIT_MS)) {
            rc = -1;
            break;
        }
        int k = snprintf(text + used, len - used, "%s\n", line);
        if (k > 0 && (size_t)k < len - used)
            used += (size_t)k;
    }
    close(fd);
    if (rc)
        snprintf(text, len, "serve in %s did not answer 'ctl-list' (an older serve?)", dir);
    return rc;
}
