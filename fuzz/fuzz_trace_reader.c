/*
 * fuzz_trace_reader.c - libFuzzer harness for the trace-file reader
 * (src/read/trace_reader.c): the input is a whole trace file.  It is put in a
 * memfd and read the way analyze reads files: open (header checks), every
 * event with its time in ns, an exit anchor when one turns up, and a tail
 * seek.
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "read/trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct trace_reader reader; /* 64 KiB: not on the stack */

static void read_all(const char *path)
{
    char msg[256];
    trace_event_t ev;
    if (trace_reader_open(&reader, path, msg, sizeof msg))
        return;
    enum trace_reader_status st;
    while ((st = trace_reader_next(&reader, &ev)) == TRACE_READER_EVENT) {
        (void)trace_reader_ns(&reader, ev.ts);
        if (ev.kind == TRACE_KIND_MARKER && ev.func == TRACE_MARK_CLOCK_ANCHOR)
            (void)trace_reader_set_anchor(&reader, ev.ts, ev.call_site);
    }
    if (trace_reader_seek_tail(&reader, 3 * TRACE_EVENT_SIZE) == 0)
        while (trace_reader_next(&reader, &ev) == TRACE_READER_EVENT)
            ;
    trace_reader_close(&reader);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz_trace", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    read_all(path);
    return 0;
}
