/*
 * fuzz_stream_codec.c - libFuzzer harness for the decoder of coded event
 * chunks (trace_wire.h's wire_codec_decode(), which serve runs; its
 * encoder is trace_stream's): the input is a chunk's payload after
 * zstd, as a client could send it; its whole records are decoded the way
 * serve does, into a buffer of exactly their size.  The coding is a
 * bijection, so the decoded records must also code back to the input: a
 * mismatch aborts, as a sanitizer report would.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct wire_codec *codec;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!codec && !(codec = calloc(1, sizeof *codec)))
        abort();
    size_t n = size / TRACE_EVENT_SIZE, len = n * TRACE_EVENT_SIZE;
    /* Exactly-sized buffers, so that ASan sees any access past them. */
    unsigned char *out = malloc(len ? len : 1), *again = malloc(len ? len : 1);
    if (!out || !again)
        abort();
    wire_codec_decode(codec, data, out, n);
    wire_codec_encode(codec, out, again, n);
    if (memcmp(again, data, len) != 0)
        abort();
    free(out);
    free(again);
    return 0;
}
