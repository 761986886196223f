#!/usr/bin/env bash
# The fuzzing corpus as a regression test: each libFuzzer harness in fuzz/,
# built without libFuzzer (fuzz/replay.c) by the same compiler and flags as
# everything else (so under ASan+UBSan in that pass of `make test`), runs
# over every committed input of its corpus without a crash or a report
# (analyze: the whole pass, fuzz/fuzz_analyze.c, over hostile trace files).
source "$(dirname "$0")/../lib/lib.sh"
plan 27

for h in stream_proto trace_reader callgraph trace_config summary stream_sums modlist analyze stream_ctl; do
    replay_corpus $h
done
exit $_failed
