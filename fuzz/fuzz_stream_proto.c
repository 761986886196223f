/*
 * fuzz_stream_proto.c - libFuzzer harness for serve's wire parser
 * (src/serve/proto.c): the input is what a client would send, a 64-byte
 * handshake then chunks, and is fed through the same checks serve makes
 * before it trusts a length: hello, chunk header, frame, payload decoding.
 * Buffers are the caps serve allocates per connection, never a wire length.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/proto.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ZSTD_DCtx *dctx;
static unsigned char *raw; /* PROTO_RAW_CAP bytes, as a connection has */

static void one_chunk(const struct proto_hello *hello, const struct proto_chunk *h, const uint8_t *frame)
{
    char why[PROTO_WHY_MAX];
    struct proto_resume r;
    if (!proto_chunk_known(h->type))
        return;
    if (proto_frame_decode(dctx, frame, h->zstd_len, raw, h->raw_len, why, sizeof why))
        return;
    if (h->type == TRACE_CHUNK_EVENTS && hello->swapped)
        proto_events_swap(raw, h->raw_len);
    else if (h->type == TRACE_CHUNK_RESUME)
        proto_resume_decode(raw, hello->swapped, &r);
    else if (h->type != TRACE_CHUNK_EVENTS)
        (void)proto_notice_count(raw, hello->swapped);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_hello hello;
    char why[PROTO_WHY_MAX];
    if (!dctx) {
        dctx = ZSTD_createDCtx();
        raw = malloc(PROTO_RAW_CAP);
        if (!dctx || !raw)
            abort();
    }
    if (size < TRACE_STREAM_HANDSHAKE_SIZE || proto_hello_decode(data, &hello, why, sizeof why))
        return 0;
    size_t off = TRACE_STREAM_HANDSHAKE_SIZE;
    while (size - off >= TRACE_STREAM_CHUNK_HEADER_SIZE) {
        struct proto_chunk h;
        proto_chunk_decode(data + off, hello.swapped, &h);
        off += TRACE_STREAM_CHUNK_HEADER_SIZE;
        if (proto_chunk_check(&h, why, sizeof why) || h.zstd_len > size - off)
            return 0; /* serve ends the connection here */
        one_chunk(&hello, &h, data + off);
        off += h.zstd_len;
    }
    return 0;
}
