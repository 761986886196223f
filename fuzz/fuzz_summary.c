/*
 * fuzz_summary.c - libFuzzer harness for the summary snapshot reader
 * (src/analysis/summary.c): the input is a run of 32-byte records, taken
 * as one thread's kind-4 records (TRACE_MODE=summary), each fed to
 * summary_record as the analysis pass would, and every whole snapshot
 * walked as the pass walks it: minus the one before, bucket by bucket.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct summary_budget budget = {0, 0};
    struct summary_thread st;
    volatile uint64_t sink = 0;
    summary_init(&st, &budget);
    for (size_t at = 0; at + sizeof(trace_event_t) <= size; at += sizeof(trace_event_t)) {
        trace_event_t ev;
        memcpy(&ev, data + at, sizeof ev);
        ev.kind = TRACE_KIND_SUMMARY;
        int got = summary_record(&st, &ev);
        if (got < 0)
            break;
        for (size_t i = 0, j = 0; got && i < st.done.nfn; i++) {
            struct summary_delta d;
            summary_delta(&st, i, &j, &d);
            sink += d.calls + d.incl_ns + d.self_ns;
            for (size_t k = 0, b = 0; k < d.fn->nb; k++)
                sink += summary_delta_bucket(&st, &d, k, &b);
        }
    }
    (void)sink;
    summary_free(&st);
    if (budget.held)
        __builtin_trap(); /* every byte held is given back */
    return 0;
}
