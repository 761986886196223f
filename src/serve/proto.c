/*
 * proto.c - decoding and checking the trace_stream wire protocol
 * (see proto.h).  Integers are assembled from bytes in the stream's
 * order, so this works the same on any host.
 */
#include "proto.h"

#include <stdio.h>
#include <string.h>
#include <zstd_errors.h>

#include "trace.h"

/* A field in the stream's order: little-endian, or a big-endian agent's own. */
static uint32_t get32(const unsigned char *p, int big) { return big ? wire_be32(p) : wire_le32(p); }
static uint64_t get64(const unsigned char *p, int big) { return big ? wire_be64(p) : wire_le64(p); }

static void reverse(unsigned char *p, int bytes)
{
    for (int i = 0; i < bytes / 2; i++) {
        unsigned char t = p[i];
        p[i] = p[bytes - 1 - i];
        p[bytes - 1 - i] = t;
    }
}

int proto_hello_decode(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE], struct proto_hello *out,
                        char *why, size_t why_len)
{
    if (memcmp(raw + offsetof(trace_stream_handshake_t, magic), TRACE_STREAM_MAGIC, 8)) {
        snprintf(why, why_len, "not a trace_stream client (bad handshake magic)");
        return -1;
    }
    /* The version is small: one that does not fit in 16 bits is byte-swapped. */
    const unsigned char *v = raw + offsetof(trace_stream_handshake_t, version);
    int big = get32(v, 0) > 0xffffu;
    uint32_t version = get32(v, big);
    if (version != TRACE_STREAM_VERSION) {
        snprintf(why, why_len, "unsupported protocol version %u (expected %u)", (unsigned)version,
                 TRACE_STREAM_VERSION);
        return -1;
    }
    uint32_t size = get32(raw + offsetof(trace_stream_handshake_t, event_size), big);
    if (size != TRACE_EVENT_SIZE) {
        snprintf(why, why_len, "event size %u not supported (expected %u)", (unsigned)size,
                 TRACE_EVENT_SIZE);
        return -1;
    }
    out->swapped = big;
    out->flags = get32(raw + offsetof(trace_stream_handshake_t, flags), big) &
                 ~(TRACE_STREAM_FLAG_CODEC_OFFER | TRACE_STREAM_FLAG_SUMMARY_OFFER | TRACE_STREAM_FLAG_REQUEST_OFFER |
                   TRACE_STREAM_FLAG_RESUME_KEY | TRACE_STREAM_FLAG_CONTROL_OFFER |
                   TRACE_STREAM_FLAG_AUTH_OFFER); /* wire flags, never a file's */
    out->load_bias = get64(raw + offsetof(trace_stream_handshake_t, load_bias), big);
    out->tick_hz = get64(raw + offsetof(trace_stream_handshake_t, tick_hz), big);
    out->t0_ticks = get64(raw + offsetof(trace_stream_handshake_t, t0_ticks), big);
    out->t0_ns = get64(raw + offsetof(trace_stream_handshake_t, t0_ns), big);
    out->hook_ns = get64(raw + offsetof(trace_stream_handshake_t, hook_ns), big);
    return 0;
}

static int hello_flag(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE], uint32_t flag)
{
    int big = get32(raw + offsetof(trace_stream_handshake_t, version), 0) > 0xffffu;
    return (get32(raw + offsetof(trace_stream_handshake_t, flags), big) & flag) != 0;
}

int proto_hello_codec_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_CODEC_OFFER);
}

int proto_hello_summary_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_SUMMARY_OFFER);
}

int proto_hello_requests_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_REQUEST_OFFER);
}

int proto_hello_control_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_CONTROL_OFFER);
}

int proto_hello_auth_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_AUTH_OFFER);
}

int proto_hello_key_offered(const unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE])
{
    return hello_flag(raw, TRACE_STREAM_FLAG_RESUME_KEY);
}

void proto_request_encode(unsigned char out[TRACE_STREAM_REQUEST_SIZE], uint32_t seq)
{
    memset(out, 0, TRACE_STREAM_REQUEST_SIZE);
    memcpy(out + offsetof(trace_stream_request_t, magic), TRACE_STREAM_REQUEST_MAGIC,
           sizeof TRACE_STREAM_REQUEST_MAGIC - 1);
    wire_put_le32(out + offsetof(trace_stream_request_t, seq), seq);
}

void proto_chunk_decode(const unsigned char raw[TRACE_STREAM_CHUNK_HEADER_SIZE], int swapped,
                         struct proto_chunk *out)
{
    out->type = get32(raw + offsetof(trace_stream_chunk_header_t, type), swapped);
    out->raw_len = get32(raw + offsetof(trace_stream_chunk_header_t, raw_len), swapped);
    out->zstd_len = get32(raw + offsetof(trace_stream_chunk_header_t, zstd_len), swapped);
}

int proto_chunk_known(uint32_t type)
{
    return proto_chunk_has_events(type) || type == TRACE_CHUNK_NOTICE || type == TRACE_CHUNK_RESUME ||
           type == TRACE_CHUNK_TRACER_LOST || type == TRACE_CHUNK_SUMMARY_INCREMENTS ||
           type == TRACE_CHUNK_RESUME_KEY || type == TRACE_CHUNK_CONTROL_ANSWER || type == TRACE_CHUNK_AUTH_HELLO ||
           type == TRACE_CHUNK_AUTH_PROOF;
}

int proto_chunk_has_events(uint32_t type)
{
    return type == TRACE_CHUNK_EVENTS || type == TRACE_CHUNK_EVENTS_CODED;
}

void proto_ack_encode(unsigned char out[TRACE_STREAM_ACK_SIZE], uint32_t codecs, uint32_t features)
{
    memset(out, 0, TRACE_STREAM_ACK_SIZE);
    memcpy(out + offsetof(trace_stream_ack_t, magic), TRACE_STREAM_ACK_MAGIC, sizeof TRACE_STREAM_ACK_MAGIC - 1);
    wire_put_le32(out + offsetof(trace_stream_ack_t, codecs), codecs);
    wire_put_le32(out + offsetof(trace_stream_ack_t, features), features);
}

int proto_chunk_check(const struct proto_chunk *c, char *why, size_t why_len)
{
    if (!proto_chunk_known(c->type)) {
        if (c->zstd_len > PROTO_FRAME_CAP) {
            snprintf(why, why_len, "unknown chunk type %u is too long (%u bytes)", (unsigned)c->type,
                     (unsigned)c->zstd_len);
            return -1;
        }
        return 0;
    }
    if (c->raw_len > TRACE_STREAM_MAX_RAW) {
        snprintf(why, why_len, "raw_len %u exceeds the limit of %u bytes", (unsigned)c->raw_len,
                 TRACE_STREAM_MAX_RAW);
        return -1;
    }
    int records = proto_chunk_has_events(c->type) || c->type == TRACE_CHUNK_SUMMARY_INCREMENTS;
    if (records && c->raw_len % TRACE_EVENT_SIZE) {
        snprintf(why, why_len, "events length %u is not a multiple of %u", (unsigned)c->raw_len,
                 TRACE_EVENT_SIZE);
        return -1;
    }
    uint32_t fixed = c->type == TRACE_CHUNK_RESUME       ? TRACE_STREAM_RESUME_SIZE
                     : c->type == TRACE_CHUNK_RESUME_KEY ? TRACE_STREAM_RESUME_KEY_SIZE
                     : c->type == TRACE_CHUNK_CONTROL_ANSWER ? TRACE_STREAM_CTL_ANSWER_SIZE
                     : c->type == TRACE_CHUNK_AUTH_HELLO ? TRACE_STREAM_AUTH_NONCE
                     : c->type == TRACE_CHUNK_AUTH_PROOF ? TRACE_STREAM_AUTH_MAC
                                                         : 8u;
    if (!records && c->raw_len != fixed) {
        snprintf(why, why_len, "%s raw_len %u (expected %u)", c->type == TRACE_CHUNK_NOTICE ? "notice"
                 : c->type == TRACE_CHUNK_RESUME ? "resume notice"
                 : c->type == TRACE_CHUNK_RESUME_KEY ? "resume key"
                 : c->type == TRACE_CHUNK_CONTROL_ANSWER ? "control answer"
                 : c->type == TRACE_CHUNK_AUTH_HELLO ? "key hello"
                 : c->type == TRACE_CHUNK_AUTH_PROOF ? "key proof" : "tracer-lost notice",
                 (unsigned)c->raw_len, (unsigned)fixed);
        return -1;
    }
    if (c->zstd_len == 0 || c->zstd_len > ZSTD_compressBound(c->raw_len)) {
        snprintf(why, why_len, "zstd_len %u is impossible for raw_len %u (bound %zu)",
                 (unsigned)c->zstd_len, (unsigned)c->raw_len, ZSTD_compressBound(c->raw_len));
        return -1;
    }
    return 0;
}

int proto_frame_decode(ZSTD_DCtx *dctx, const void *frame, size_t zlen, void *dst, size_t raw_len,
                        char *why, size_t why_len)
{
    size_t fsize = ZSTD_findFrameCompressedSize(frame, zlen);
    if (ZSTD_isError(fsize)) {
        snprintf(why, why_len, "corrupt zstd frame: %s", ZSTD_getErrorName(fsize));
        return -1;
    }
    if (fsize != zlen) {
        snprintf(why, why_len, "%zu bytes after the zstd frame", zlen - fsize);
        return -1;
    }
    unsigned long long content = ZSTD_getFrameContentSize(frame, zlen);
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != raw_len) {
        snprintf(why, why_len, "frame holds %llu bytes, chunk header says %zu", content, raw_len);
        return -1;
    }
    /* One-shot into a raw_len buffer: a frame that expands further fails, it never allocates. */
    size_t n = ZSTD_decompressDCtx(dctx, dst, raw_len, frame, zlen);
    if (ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
        snprintf(why, why_len, "frame decompresses to more than the %zu bytes announced", raw_len);
        return -1;
    }
    if (ZSTD_isError(n)) {
        snprintf(why, why_len, "corrupt zstd frame: %s", ZSTD_getErrorName(n));
        return -1;
    }
    if (n != raw_len) {
        snprintf(why, why_len, "frame decompressed to %zu bytes, chunk header says %zu", n, raw_len);
        return -1;
    }
    return 0;
}

void proto_events_swap(unsigned char *buf, size_t len)
{
    for (size_t off = 0; off + TRACE_EVENT_SIZE <= len; off += TRACE_EVENT_SIZE) {
        unsigned char *e = buf + off;
        reverse(e + offsetof(trace_event_t, ts), 8);
        reverse(e + offsetof(trace_event_t, func), 8);
        reverse(e + offsetof(trace_event_t, call_site), 8);
        reverse(e + offsetof(trace_event_t, tid), 4);
    }
}

uint64_t proto_notice_count(const unsigned char payload[8], int swapped)
{
    return get64(payload, swapped);
}

void proto_resume_decode(const unsigned char payload[TRACE_STREAM_RESUME_SIZE], int swapped,
                          struct proto_resume *out)
{
    out->stream_id = get64(payload + offsetof(trace_stream_resume_t, stream_id), swapped);
    out->start_ns = get64(payload + offsetof(trace_stream_resume_t, start_ns), swapped);
    out->conn_seq = get32(payload + offsetof(trace_stream_resume_t, conn_seq), swapped);
    out->sent = get64(payload + offsetof(trace_stream_resume_t, sent), swapped);
    out->discarded = get64(payload + offsetof(trace_stream_resume_t, discarded), swapped);
}
