#!/usr/bin/env bash
# The fuzzing corpus as a regression test: each libFuzzer harness in fuzz/,
# built without libFuzzer (fuzz/replay.c) by the same compiler and flags as
# everything else (so under ASan+UBSan in that pass of `make test`), runs
# over every committed input of its corpus without a crash or a report
# (analyze: the whole pass, fuzz/fuzz_analyze.c, over hostile trace files).
source "$(dirname "$0")/../lib/lib.sh"
plan 24

FUZZ=$TESTS/../fuzz
for h in stream_proto trace_reader callgraph trace_config summary stream_sums modlist analyze; do
    n=$(ls "$FUZZ/corpus/$h" | wc -l)
    out=$(timeout 120 "$B/fuzz/replay_$h" "$FUZZ/corpus/$h" 2> "$T/$h.err")
    ok $? "$h: the harness survives its corpus"
    is "$out" "replay: $n inputs" "$h: all $n inputs replayed"
    [ "$n" -ge 5 ]
    ok $? "$h: the corpus is not empty ($n inputs, at least 5)"
done
exit $_failed
