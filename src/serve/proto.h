/*
 * proto.h - decoding and checking the trace_stream wire protocol.
 *
 * The layouts are in runtime/trace_wire.h.  These functions trust nothing
 * they are given: every length is checked against the protocol's limits
 * before it is used, so a connection's memory is bounded by the caps below
 * and never by a number read from the wire.  Streams from agents that send
 * their native big-endian order are recognised by the handshake and
 * converted: integers handed back are in host order, event records are
 * rewritten as little-endian bytes (the trace-file order) whatever the host.
 *
 * Failures come back as a one-line reason in the caller's buffer.
 */
#ifndef CALLSIGHT_PROTO_H
#define CALLSIGHT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "trace_wire.h"

/* Buffer sizes a connection needs: the largest raw chunk and its largest frame. */
#define PROTO_RAW_CAP ((size_t)TRACE_STREAM_MAX_RAW)
#define PROTO_FRAME_CAP ZSTD_COMPRESSBOUND(TRACE_STREAM_MAX_RAW)

#define PROTO_WHY_MAX 160

/* A checked handshake, in host order. */
struct proto_hello {
    int swapped; /* the peer sends big-endian: every later integer is swapped too */
    uint32_t flags; /* the tracer's TRACE_FLAG_*, for the file headers (no wire flags) */
    uint64_t load_bias, tick_hz, t0_ticks, t0_ns, hook_ns;
};

/* 1 when a handshake (accepted by proto_hello_decode) offers the codec. */
int proto_hello_codec_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);
/* 1 when it offers summary snapshots (TRACE_STREAM_FLAG_SUMMARY_OFFER). */
int proto_hello_summary_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);
/* Whether it takes live-control requests (TRACE_STREAM_FLAG_CONTROL_OFFER). */
int proto_hello_control_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);
/* Whether it offers to take snapshot requests (TRACE_STREAM_FLAG_REQUEST_OFFER). */
int proto_hello_requests_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);
/* Whether it holds a key for control (TRACE_STREAM_FLAG_AUTH_OFFER): its hello follows its intro. */
int proto_hello_auth_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);

/* 1 when the handshake says a TRACE_CHUNK_RESUME_KEY follows the first resume notice. */
int proto_hello_key_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE]);
/* A snapshot request, little-endian. */
void proto_request_encode(unsigned char out[TRACE_STREAM_REQUEST_SIZE], uint32_t seq);

/* A chunk header, in host order. */
struct proto_chunk {
    uint32_t type, raw_len, zstd_len;
};

/* A TRACE_CHUNK_RESUME payload, in host order. */
struct proto_resume {
    uint64_t stream_id, start_ns;
    uint32_t conn_seq;
    uint64_t sent, discarded;
};

/* 0 and *out filled, or -1 with the reason. */
int proto_hello_decode(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE], struct proto_hello *out,
                        char *why, size_t why_len);

void proto_chunk_decode(const unsigned char raw[TRACE_STREAM_CHUNK_HEADER_SIZE], int swapped,
                         struct proto_chunk *out);

/* 1 for the chunk types this server acts on. */
int proto_chunk_known(uint32_t type);

/* 1 for chunk types that carry event records (plain or coded). */
int proto_chunk_has_events(uint32_t type);

/* The ack a server sends a client that offered the codec or summaries
 * (trace_stream_ack_t): the codecs and TRACE_ACK_* features it takes. */
void proto_ack_encode(unsigned char out[TRACE_STREAM_ACK_SIZE], uint32_t codecs, uint32_t features);

/*
 * Check a chunk header's lengths before reading its payload: for known types
 * raw_len within the limit (a multiple of 32 for events, plain or coded, 8 for a notice or a
 * tracer-lost notice, 40 for a resume notice) and
 * 0 < zstd_len <= zstd's bound for raw_len; for unknown types only that
 * zstd_len fits the frame buffer.  0 ok, -1 with the reason.
 */
int proto_chunk_check(const struct proto_chunk *c, char *why, size_t why_len);

/*
 * Decompress a frame of exactly zlen bytes into exactly raw_len bytes of dst
 * (which holds at least raw_len).  The frame must be one whole zstd frame
 * with nothing after it.  0 ok, -1 with the reason.
 */
int proto_frame_decode(ZSTD_DCtx *dctx, const void *frame, size_t zlen, void *dst, size_t raw_len,
                        char *why, size_t why_len);

/* Rewrite the big-endian records of a swapped stream as little-endian, in place. */
void proto_events_swap(unsigned char *buf, size_t len);

void proto_resume_decode(const unsigned char payload[TRACE_STREAM_RESUME_SIZE], int swapped,
                          struct proto_resume *out);

/* A notice payload's dropped-event count (also: a tracer-lost notice's process count). */
uint64_t proto_notice_count(const unsigned char payload[8], int swapped);

#endif
