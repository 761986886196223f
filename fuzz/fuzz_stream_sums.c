/*
 * fuzz_stream_sums.c - libFuzzer harness for serve's summary increments
 * (src/serve/sums.c, TRACE_CHUNK_SUMMARY_INCREMENTS): the input is
 * cut into two chunk payloads of whole records, taken in turn by one
 * connection's state as serve's writer takes them, and every whole record
 * written is read back.  After an error the connection is over, as in serve.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/sums.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int put(void *ctx, const unsigned char *records, size_t n)
{
    uint64_t *sum = ctx;
    for (size_t i = 0; i < n * TRACE_EVENT_SIZE; i++)
        *sum += records[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sums *s = sums_new();
    char why[160];
    volatile uint64_t sum = 0;
    uint64_t got = 0;
    if (!s)
        return 0;
    size_t n = size / TRACE_EVENT_SIZE, first = n / 2;
    if (sums_take(s, data, first, 1, put, &got, why, sizeof why) == 0)
        (void)sums_take(s, data + first * TRACE_EVENT_SIZE, n - first, 2, put, &got, why, sizeof why);
    sum = got;
    (void)sum;
    sums_free(s);
    if (sums_held_all() != 0) /* every byte accounted is given back */
        abort();
    return 0;
}
