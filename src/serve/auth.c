/*
 * auth.c - serve's key for live control: the key read once, the device's
 * hello answered with our nonce and proof, its proof checked, and each
 * relayed request signed (auth.h).  HMAC-SHA-256 and random bytes are
 * libcrypto's, as the resume key's hash is.
 */
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char key[TRACE_STREAM_AUTH_KEY_MAX];
static size_t key_len; /* 0: no key */

int auth_load(const char *path, char *msg, size_t len)
{
    /* Opened as trace_stream opens its key (ts_auth.c): never through a
     * symbolic link, whose target someone who may write the key's
     * directory chooses among our own files (one whose bytes they know
     * would be a key they hold); O_NONBLOCK, so a FIFO put there is
     * refused, never waited on.  The cap is said in bytes: fileopen's
     * "larger than 0 MB" said nothing. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
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
        ssize_t n = read(fd, key + got, (size_t)st.st_size - got);
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
        OPENSSL_cleanse(key, sizeof key);
        snprintf(msg, len, "--auth-key %s: %s", path, bad);
        return -1;
    }
    key_len = got;
    return 0;
}

int auth_keyed(void)
{
    return key_len != 0;
}

static int hmac(const unsigned char *k, size_t klen, const unsigned char *msg, size_t n,
                unsigned char out[TRACE_STREAM_AUTH_MAC])
{
    unsigned got = 0;
    return HMAC(EVP_sha256(), k, (int)klen, msg, n, out, &got) && got == TRACE_STREAM_AUTH_MAC ? 0 : -1;
}

int auth_hello(struct auth_conn *a, const unsigned char client[TRACE_STREAM_AUTH_NONCE],
               unsigned char out[sizeof(trace_stream_auth_t)])
{
    unsigned char in[TRACE_STREAM_AUTH_INPUT];
    memcpy(a->client, client, TRACE_STREAM_AUTH_NONCE);
    if (!key_len || RAND_bytes(a->server, sizeof a->server) != 1)
        return -1;
    memset(out, 0, sizeof(trace_stream_auth_t));
    memcpy(out, TRACE_STREAM_AUTH_MAGIC, sizeof TRACE_STREAM_AUTH_MAGIC - 1);
    wire_put_le32(out + offsetof(trace_stream_auth_t, len), TRACE_STREAM_AUTH_BODY);
    memcpy(out + offsetof(trace_stream_auth_t, nonce), a->server, sizeof a->server);
    wire_auth_input(in, TRACE_AUTH_LABEL_SERVER, a->client, a->server);
    if (hmac(key, key_len, in, sizeof in, out + offsetof(trace_stream_auth_t, proof)))
        return -1;
    wire_auth_input(in, TRACE_AUTH_LABEL_SESSION, a->client, a->server);
    if (hmac(key, key_len, in, sizeof in, a->session))
        return -1;
    a->hello = 1;
    return 0;
}

int auth_check_proof(struct auth_conn *a, const unsigned char proof[TRACE_STREAM_AUTH_MAC])
{
    unsigned char in[TRACE_STREAM_AUTH_INPUT], want[TRACE_STREAM_AUTH_MAC];
    if (!a->hello || a->judged)
        return -1; /* a proof with no hello answered, or a second one: ignored */
    wire_auth_input(in, TRACE_AUTH_LABEL_CLIENT, a->client, a->server);
    a->proved = hmac(key, key_len, in, sizeof in, want) == 0 && CRYPTO_memcmp(want, proof, sizeof want) == 0;
    a->judged = 1;
    return a->proved;
}

int auth_sign(const struct auth_conn *a, const unsigned char *msg, size_t n, unsigned char mac[TRACE_STREAM_AUTH_MAC])
{
    return hmac(a->session, sizeof a->session, msg, n, mac);
}
