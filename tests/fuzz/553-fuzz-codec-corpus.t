#!/usr/bin/env bash
# The coded-chunk decoder's fuzzing corpus as a regression test, the way
# tests/fuzz/552-fuzz-corpus.t replays the other harnesses: fuzz/fuzz_stream_codec.c
# built without libFuzzer (fuzz/replay.c), by the same compiler and flags as
# everything else (so under ASan+UBSan in that pass of `make test`), runs
# over every committed input; each must decode and code back to itself.
source "$(dirname "$0")/../lib/lib.sh"
plan 3

replay_corpus stream_codec
exit $_failed
