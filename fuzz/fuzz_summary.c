/*
 * fuzz_summary.c - libFuzzer harness for the summary snapshot reader
 * (src/analysis/summary.c): the input is a run of 32-byte records, taken
 * as one thread's kind-4 records (TRACE_MODE=summary), each fed to
 * summary_record as the analysis pass would, then the last whole snapshot
 * walked as summary_commit walks it.
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
    struct summary_thread st;
    memset(&st, 0, sizeof st);
    for (size_t at = 0; at + sizeof(trace_event_t) <= size; at += sizeof(trace_event_t)) {
        trace_event_t ev;
        memcpy(&ev, data + at, sizeof ev);
        ev.kind = TRACE_KIND_SUMMARY;
        if (summary_record(&st, &ev) < 0)
            break;
    }
    volatile uint64_t sink = 0;
    if (st.have_done)
        for (size_t i = 0; i < st.done.nfn; i++)
            for (size_t k = 0; k < st.done.fn[i].nb; k++)
                sink += st.done.b[st.done.fn[i].b0 + k].count + st.done.b[st.done.fn[i].b0 + k].index;
    (void)sink;
    summary_free(&st);
    return 0;
}
