/*
 * fuzz_modlist.c - libFuzzer harness for the module-list reader
 * (src/read/modlist.c, trace.h "loaded modules"): the input is whole
 * 32-byte records of one thread; module records are fed, any other kind
 * interrupts a list, as the analyzer does, and every whole list taken is
 * walked (paths read to their NUL) and freed.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "read/modlist.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct modlist m;
    volatile size_t seen = 0;
    modlist_init(&m, NULL);
    for (size_t off = 0; off + TRACE_EVENT_SIZE <= size; off += TRACE_EVENT_SIZE) {
        trace_event_t ev;
        memcpy(&ev, data + off, sizeof ev);
        enum modlist_step st = ev.kind == TRACE_KIND_MODULE ? modlist_feed(&m, &ev) : modlist_interrupt(&m);
        if (st == MODLIST_DONE) {
            size_t n;
            struct modlist_entry *v = modlist_take(&m, &n);
            for (size_t i = 0; i < n; i++)
                seen += strlen(v[i].path) + v[i].build_id_len + (v[i].lo < v[i].hi);
            modlist_entries_free(v, n);
        } else if (st == MODLIST_DAMAGED)
            seen += strlen(m.why);
        else if (st == MODLIST_OOM)
            break;
    }
    modlist_free(&m);
    (void)seen;
    return 0;
}
