/*
 * ts_auth.c - the key that guards live control (part of trace_stream.c;
 * docs/control.md, "Authentication"; the exchange is trace_wire.h's
 * TRACE_STREAM_FLAG_AUTH_OFFER).  With --auth-key the device takes control
 * only from a server that proves it holds the same pre-shared key, and only
 * requests that carry a code made with this connection's session key: one
 * that anyone could send (a server the device was pointed at by mistake, a
 * forger on the path) changes nothing.
 *
 * HMAC-SHA-256 is libcrypto's, so this part needs it only when built with
 * -DTS_AUTH (and -lcrypto on the cc line): the device client otherwise
 * stays libc, pthread and zstd, and refuses --auth-key with one line that
 * says how to build it.
 */
#include "ts_internal.h"

#ifdef TS_AUTH
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h> /* HMAC(), the one call that is not deprecated in OpenSSL 3 */
#endif

/* The key, read once at start (auth_load); never printed, never sent. */
#ifdef TS_AUTH
static unsigned char auth_key[TRACE_STREAM_AUTH_KEY_MAX];
#endif
static size_t auth_key_len; /* 0: no key, control as before keys */

/* Read the key file: an owner-only regular file of ours, 32 to 4096 bytes,
 * used as it is.  0, or -1 (said). */
static int auth_load(const char *path)
{
#ifndef TS_AUTH
    fprintf(stderr, "trace_stream: --auth-key: this trace_stream was built without keys; build it with "
                    "-DTS_AUTH and -lcrypto on its cc line\n");
    (void)path;
    return -1;
#else
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *bad = fd < 0 ? strerror(errno)
                      : fstat(fd, &st) ? strerror(errno)
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : st.st_uid != geteuid() ? "not owned by this user"
                      : (st.st_mode & 077) ? "readable or writable by others (chmod 600 it)"
                      : st.st_size < (off_t)TRACE_STREAM_AUTH_KEY_MIN ? "shorter than 32 bytes"
                      : st.st_size > (off_t)TRACE_STREAM_AUTH_KEY_MAX ? "longer than 4096 bytes"
                                                                       : NULL;
    size_t got = 0;
    while (!bad && got < (size_t)st.st_size) {
        ssize_t n = read(fd, auth_key + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            bad = n < 0 ? strerror(errno) : "it shrank while read";
        else
            got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    if (bad) {
        fprintf(stderr, "trace_stream: --auth-key %s: %s\n", path, bad);
        return -1;
    }
    auth_key_len = got;
    return 0;
#endif
}

#ifdef TS_AUTH
/* HMAC-SHA-256 of n bytes under key: 0, or -1. */
static int auth_hmac(const unsigned char *key, size_t klen, const unsigned char *msg, size_t n,
                     unsigned char out[TRACE_STREAM_AUTH_MAC])
{
    unsigned len = 0;
    return HMAC(EVP_sha256(), key, (int)klen, msg, n, out, &len) && len == TRACE_STREAM_AUTH_MAC ? 0 : -1;
}
#endif

/* A new connection: a fresh nonce, nothing proved yet.  Offered only with
 * a key and a ring that takes control. */
static void auth_new_connection(struct sender *s)
{
    memset(&s->auth, 0, sizeof s->auth);
    s->auth.offered = auth_key_len && s->ctl.block && random_bytes(s->auth.nonce, sizeof s->auth.nonce) == 0;
}

/* The head in s->peer.req is the server's TKAUTH: 1 (its body is read
 * next), or 0 when it is not one we expect (the caller ends requests). */
static int auth_head(struct sender *s)
{
    char magic[8] = {0};
    memcpy(magic, TRACE_STREAM_AUTH_MAGIC, sizeof TRACE_STREAM_AUTH_MAGIC - 1);
    if (!s->auth.acked || s->auth.heard || memcmp(s->peer.req, magic, sizeof magic) != 0 ||
        wire_le32(s->peer.req + offsetof(trace_stream_auth_t, len)) != TRACE_STREAM_AUTH_BODY)
        return 0;
    s->auth.heard = s->auth.in_body = 1;
    s->auth.got = 0;
    return 1;
}

/* n more bytes of the server's nonce and proof came; once whole, checked. */
static void auth_body_got(struct sender *s, size_t n)
{
    if ((s->auth.got += (unsigned)n) < TRACE_STREAM_AUTH_BODY)
        return;
    s->auth.in_body = 0;
#ifdef TS_AUTH
    const unsigned char *ns = s->auth.body, *proof = s->auth.body + TRACE_STREAM_AUTH_NONCE;
    unsigned char in[TRACE_STREAM_AUTH_INPUT], want[TRACE_STREAM_AUTH_MAC];
    wire_auth_input(in, TRACE_AUTH_LABEL_SERVER, s->auth.nonce, ns);
    int ok = auth_hmac(auth_key, auth_key_len, in, sizeof in, want) == 0 &&
             CRYPTO_memcmp(want, proof, sizeof want) == 0;
    wire_auth_input(in, TRACE_AUTH_LABEL_SESSION, s->auth.nonce, ns);
    ok = ok && auth_hmac(auth_key, auth_key_len, in, sizeof in, s->auth.session) == 0;
    wire_auth_input(in, TRACE_AUTH_LABEL_CLIENT, s->auth.nonce, ns);
    ok = ok && auth_hmac(auth_key, auth_key_len, in, sizeof in, s->auth.proof) == 0;
    s->auth.ok = ok;
    s->auth.proof_due = ok;
    if (!ok)
        fprintf(stderr, "trace_stream: the server did not prove it holds our key; no control is taken on "
                        "this connection\n");
    else if (!s->o->quiet)
        fprintf(stderr, "trace_stream: the server proved our key; control requests are taken, each checked\n");
#endif
}

/* Our proof, once the server's checked out: 0, or -1 fatal. */
static int auth_service(struct sender *s)
{
    if (!s->auth.proof_due || s->sock < 0)
        return 0;
    s->auth.proof_due = 0;
    return send_small(s, TRACE_CHUNK_AUTH_PROOF, s->auth.proof, sizeof s->auth.proof);
}

/* With a key, may control request seq (its head, its len bytes of body
 * with the code last) be applied?  NULL and *len less the code, or why
 * not.  Without a key every request may (as before keys). */
static const char *auth_request(struct sender *s, uint32_t seq, uint32_t *len)
{
    if (!auth_key_len)
        return NULL;
    if (!s->auth.ok)
        return "this device takes control only from a serve that proves its key (serve --auth-key)";
    if (*len < TRACE_STREAM_AUTH_MAC)
        return "it carries no authentication code";
#ifdef TS_AUTH
    /* the head is rebuilt in the room kept before the body (ts_sender.c),
     * so that one HMAC covers both */
    unsigned char *head = s->ctl.body - TRACE_STREAM_CTL_HEAD_SIZE, mac[TRACE_STREAM_AUTH_MAC];
    memset(head, 0, TRACE_STREAM_CTL_HEAD_SIZE);
    memcpy(head, TRACE_STREAM_CTL_MAGIC, sizeof TRACE_STREAM_CTL_MAGIC - 1);
    wire_put_le32(head + offsetof(trace_stream_ctl_request_t, seq), seq);
    wire_put_le32(head + offsetof(trace_stream_ctl_request_t, len), *len);
    uint32_t n = *len - TRACE_STREAM_AUTH_MAC;
    int ok = auth_hmac(s->auth.session, sizeof s->auth.session, head, TRACE_STREAM_CTL_HEAD_SIZE + n, mac) == 0;
    if (!ok || CRYPTO_memcmp(mac, s->ctl.body + n, sizeof mac) != 0)
        return "its authentication code does not match (forged, or damaged on the way)";
    if (seq <= s->auth.last_seq)
        return "it repeats an earlier request (replayed)";
    s->auth.last_seq = seq;
    *len = n;
    return NULL;
#else
    (void)seq;
    return "this trace_stream was built without keys";
#endif
}
