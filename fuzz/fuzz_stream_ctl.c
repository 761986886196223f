/*
 * fuzz_stream_ctl.c - libFuzzer harness for the parser of live-control
 * requests (trace_wire.h's wire_ctl_parse(), which trace_stream runs on
 * what a server sends): the input is a request's body.  A body the parser
 * takes must encode back to itself byte for byte (wire_ctl_encode), with
 * every bound the header promises held (at most 4,096 functions, none at
 * address 0, known flags only); anything else aborts, as a sanitizer
 * report would.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t funcs[TRACE_STREAM_CTL_FUNCS_MAX];
    struct wire_ctl q;
    if (wire_ctl_parse(data, size, &q, funcs) != NULL)
        return 0;
    if (q.nfuncs > TRACE_STREAM_CTL_FUNCS_MAX || (q.flags & ~TRACE_STREAM_CTL_FLAGS) || (q.keep && q.nfuncs))
        abort();
    /* a flight-recorder switch is a change of its own, on or off */
    if ((q.flags & TRACE_STREAM_CTL_RECORDER) &&
        (q.flags != TRACE_STREAM_CTL_RECORDER || !q.keep || q.threads[0] ||
         (q.recorder != TRACE_STREAM_CTL_RECORDER_ON && q.recorder != TRACE_STREAM_CTL_RECORDER_OFF)))
        abort();
    for (uint32_t i = 0; i < q.nfuncs; i++)
        if (!funcs[i])
            abort();
    unsigned char *again = malloc(size); /* exactly sized: ASan sees a write past it */
    if (!again || wire_ctl_encode(again, &q, funcs) != size || memcmp(again, data, size) != 0)
        abort();
    free(again);
    return 0;
}
