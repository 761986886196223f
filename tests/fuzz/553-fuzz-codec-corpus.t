#!/usr/bin/env bash
# The coded-chunk decoder's fuzzing corpus as a regression test, the way
# tests/fuzz/552-fuzz-corpus.t replays the other harnesses: fuzz/fuzz_stream_codec.c
# built without libFuzzer (fuzz/replay.c), by the same compiler and flags as
# everything else (so under ASan+UBSan in that pass of `make test`), runs
# over every committed input; each must decode and code back to itself.
source "$(dirname "$0")/../lib/lib.sh"
plan 3

CORPUS=$TESTS/../fuzz/corpus/stream_codec
n=$(ls "$CORPUS" | wc -l)
out=$(timeout 120 "$B/fuzz/replay_stream_codec" "$CORPUS" 2> "$T/replay.err")
ok $? "stream_codec: the harness survives its corpus"
is "$out" "replay: $n inputs" "stream_codec: all $n inputs replayed"
[ "$n" -ge 5 ]
ok $? "stream_codec: the corpus is not empty ($n inputs, at least 5)"
exit $_failed
