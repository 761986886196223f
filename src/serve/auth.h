/*
 * auth.h - serve's key for live control (serve --auth-key; docs/control.md,
 * "Authentication"; the exchange is trace_wire.h's
 * TRACE_STREAM_FLAG_AUTH_OFFER).  With a key, serve relays control only to
 * a device that proved the same key, and signs every request it relays
 * with that connection's session key; the device refuses any other.
 */
#ifndef CALLSIGHT_AUTH_H
#define CALLSIGHT_AUTH_H

#include <stddef.h>

#include "trace_wire.h"

/* Read the key file (an owner-only regular file of ours, 32 to 4096
 * bytes, used as it is) once, at start.  0, or -1 with msg set. */
int auth_load(const char *path, char *msg, size_t len);

/* 1 when serve has a key. */
int auth_keyed(void);

/* One side of a connection's exchange. */
struct auth_conn {
    unsigned char client[TRACE_STREAM_AUTH_NONCE]; /* the device's nonce (its hello) */
    unsigned char server[TRACE_STREAM_AUTH_NONCE]; /* ours, random */
    unsigned char session[TRACE_STREAM_AUTH_MAC];  /* HMAC(key, LABEL_SESSION, both nonces) */
    int hello, judged, proved; /* the hello came; a proof came and was checked; it held */
};

/* The device's hello (its nonce): ours made, and the TKAUTH message to
 * send (head, our nonce, our proof) in out.  0, or -1 (no random bytes, or
 * no HMAC). */
int auth_hello(struct auth_conn *a, const unsigned char client[TRACE_STREAM_AUTH_NONCE],
               unsigned char out[sizeof(trace_stream_auth_t)]);

/* The device's proof: 1 it holds the key (a->proved set), 0 not, -1 not
 * one to judge (no hello answered yet, or a proof came before: only the
 * first counts, so a peer cannot try again on the same nonces). */
int auth_check_proof(struct auth_conn *a, const unsigned char proof[TRACE_STREAM_AUTH_MAC]);

/* The code of a control request (its 16-byte head, len counting the code,
 * then n bytes of body) under a's session key, in mac.  0, or -1. */
int auth_sign(const struct auth_conn *a, const unsigned char *msg, size_t n,
              unsigned char mac[TRACE_STREAM_AUTH_MAC]);

#endif
