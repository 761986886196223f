/*
 * modfile.c - find a shared object's file by recorded path and build-id
 * (see modfile.h): the path, --sysroot, --debug-dir, debuginfod, each
 * candidate's build-id read (elf_buildid.c) and compared with the one the
 * module list recorded (its first 24 bytes at most: all a list carries).
 */
#include "modfile.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_buildid.h"
#include "lib/fileopen.h"
#include "trace.h"

void modfile_init(struct modfile *m, const struct modfile_where *where)
{
    memset(m, 0, sizeof *m);
    m->where = where;
}

void modfile_free(struct modfile *m)
{
    if (m->debuginfod)
        debuginfod_end(m->debuginfod);
    m->debuginfod = NULL;
}

static void hex(const unsigned char *id, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
    out[2 * len] = '\0';
}

/* 1 when file has the build-id (or none was recorded), 0 when it does not
 * (said in why), -1 when it cannot be read as ELF (said). */
static int same_build_id(const char *file, const unsigned char *id, size_t len, char *why, size_t whylen)
{
    struct elf_buildid b;
    char msg[512], mine[2 * ELF_BUILDID_MAX + 1];
    if (access(file, R_OK) != 0) {
        snprintf(why, whylen, "%s: %s", file, strerror(errno));
        return -1;
    }
    if (elf_buildid_read(file, &b, msg, sizeof msg) < 0) {
        snprintf(why, whylen, "%s", msg);
        return -1;
    }
    if (!len)
        return 1;
    /* a list carries 24 bytes at most: an id of 24 may be longer, shorter ones are whole */
    if ((len < TRACE_MODULE_BYTES ? b.len == len : b.len >= len) && !memcmp(b.id, id, len))
        return 1;
    hex(b.id, b.len < 8 ? b.len : 8, mine);
    snprintf(why, whylen, "%s has build-id %s...", file, b.len ? mine : "(none)");
    return 0;
}

static int take(const char *file, char **out)
{
    return (*out = strdup(file)) ? 0 : -2;
}

/* DIR/.build-id/ab/cdef....debug for the whole id; "" when the recorded id
 * may be cut (TRACE_MODULE_BYTES: all a list carries). */
static void debug_path(const char *dir, const unsigned char *id, size_t len, char *out, size_t outlen)
{
    char h[2 * TRACE_MODULE_BYTES + 1];
    out[0] = '\0';
    if (len < 2 || len >= TRACE_MODULE_BYTES)
        return;
    hex(id, len, h);
    snprintf(out, outlen, "%s/.build-id/%.2s/%s.debug", dir, h, h + 2);
}

/* DEBUGINFOD_URLS as it may be shown: each URL's user:password@ (which a
 * URL may carry for its server) left out, so no note or log holds it. */
static void urls_shown(const char *urls, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = urls; *p && o + 1 < len;) {
        const char *end = p + strcspn(p, " \t");
        const char *host = strstr(p, "://");
        host = host && host < end ? host + 3 : p;
        const char *at = memchr(host, '@', (size_t)(end - host));
        const char *slash = memchr(host, '/', (size_t)(end - host));
        if (at && (!slash || at < slash)) {
            /* scheme://, then what follows the credentials */
            o += (size_t)snprintf(out + o, len - o, "%.*s%.*s", (int)(host - p), p, (int)(end - at - 1), at + 1);
        } else {
            o += (size_t)snprintf(out + o, len - o, "%.*s", (int)(end - p), p);
        }
        if (o >= len)
            o = len - 1;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p && o + 1 < len)
            out[o++] = ' ';
    }
    out[o < len ? o : len - 1] = '\0';
}

/* From debuginfod, when DEBUGINFOD_URLS names servers.  0 found, -1 not. */
static int from_debuginfod(struct modfile *m, const unsigned char *id, size_t len, char **out, char *why,
                           size_t whylen)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (m->debuginfod_off || !urls || !*urls) {
        m->debuginfod_off = 1;
        return -1;
    }
    if (!len || len >= TRACE_MODULE_BYTES)
        return -1; /* none recorded, or perhaps cut: nothing to ask for */
    if (!m->debuginfod && !(m->debuginfod = debuginfod_begin())) {
        m->debuginfod_off = 1;
        snprintf(why, whylen, "debuginfod: no client");
        return -1;
    }
    char *path = NULL;
    int fd = debuginfod_find_debuginfo(m->debuginfod, id, (int)len, &path);
    if (fd < 0) {
        char shown[512];
        urls_shown(urls, shown, sizeof shown);
        snprintf(why, whylen, "debuginfod (%s): %s", shown, strerror(-fd));
        return -1;
    }
    close(fd);
    *out = path;
    return 0;
}

int modfile_find(struct modfile *m, const char *path, const unsigned char *id, size_t len, char **out,
                 char *why, size_t whylen)
{
    const struct modfile_where *w = m->where;
    char file[8192], first[700] = "", last[700] = "";
    int rc;
    *out = NULL;
    if (!path[0]) {
        snprintf(first, sizeof first, "no path was recorded");
    } else if (path[0] != '/') {
        /* The device's paths are its loader's, absolute: a relative one
         * would be looked for wherever analyze runs. */
        snprintf(first, sizeof first, "%s: not an absolute path, not looked for", path);
    } else if (w->sysroot) {
        /* The device's root on the host: the path is taken inside it only,
         * `..` and symlinks included, never on the host itself. */
        int fd = fileopen_in_root(w->sysroot, path, ELF_BUILDID_MAX_FILE, file, sizeof file, first, sizeof first);
        if (fd >= 0) {
            close(fd);
            if ((rc = same_build_id(file, id, len, first, sizeof first)) == 1)
                return take(file, out);
        }
    } else if ((rc = same_build_id(path, id, len, first, sizeof first)) == 1) {
        return take(path, out);
    }
    for (size_t i = 0; i < w->ndebug_dirs; i++) {
        debug_path(w->debug_dirs[i], id, len, file, sizeof file);
        if (file[0] && access(file, R_OK) == 0 && same_build_id(file, id, len, last, sizeof last) == 1)
            return take(file, out);
    }
    if (from_debuginfod(m, id, len, out, last, sizeof last) == 0)
        return 0;
    snprintf(why, whylen, "%s%s%s", first, last[0] ? "; " : "", last);
    return -1;
}
