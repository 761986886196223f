/*
 * fuzz_analyze.c - libFuzzer harness for analyze's whole pass
 * (src/analysis/analysis.c and everything it feeds): the input is a whole
 * trace file, read as serve's file of one stream (every thread demuxed from
 * it), through the pre-passes and the main pass with the calling-context
 * tree and call sites as sinks, then the notes and the tree's totals, as
 * `callsight analyze` does before naming anything.  The caps are set low
 * (threads, functions, frames, stacks, modules of a list and the bytes of
 * module lists) so that inputs reach what is beyond them; a hostile input
 * must not take more memory or time than they allow.
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

#include "analysis/analysis.h"
#include "analysis/callsites.h"
#include "analysis/cctree.h"
#include "out/notes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_note(void *ctx, const char *note)
{
    (void)note;
    ++*(size_t *)ctx;
}

static void analyze(char *path)
{
    static const struct analysis_exe exe = {"fuzz.instr", 0, {0, 0}};
    struct trace_segment seg = {path, 0};
    struct trace_series series = {TRACE_SERIES_STREAM, 1, 0, &seg, 1};
    struct trace_files tf = {NULL, 0, 0, &series, 1, 0};
    struct analysis a;
    struct cctree tree;
    struct callsites sites;
    size_t notes = 0;

    analysis_init(&a, NULL, "fuzz");
    analysis_set_exes(&a, &exe, 1);
    a.max_threads = 64;
    a.max_depth = 256;
    a.funcs.max = 512;
    a.modules.per_list = 16;
    a.modules.max_bytes = 4096;
    if (cctree_init(&tree, 4096) < 0)
        abort();
    callsites_init(&sites, &a.funcs);
    if (analysis_add_sink(&a, cctree_sink(&tree)) < 0 || analysis_add_sink(&a, callsites_sink(&sites)) < 0)
        abort();
    analysis_prepare(&a, &tf);
    analysis_run_series(&a, &series);
    analysis_finish(&a);
    notes_each(&a, count_note, &notes);
    uint64_t *tot = cctree_totals(&tree);
    free(tot);
    free(callsites_by_incl(&sites));
    free(funcstats_by_self(&a.funcs));
    (void)analysis_dropped(&a);
    (void)analysis_span(&a);
    callsites_free(&sites);
    cctree_free(&tree);
    analysis_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz_analyze", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();
    analyze(path);
    return 0;
}
