#!/usr/bin/env bash
# Run by `make tsan-test` (tests/tsan/tsan.mk): callsight analyze built with
# -fsanitize=thread reads the workload's per-thread files with --jobs 3 in
# every format that uses the jobs (the threads that read series into their
# own analyses, joined and merged by the caller), and one thread's file
# alone, one series cut into parts read at once: no TSan report, and the
# output is --jobs 1's.
source "$(dirname "$0")/../lib/lib.sh"
plan 5

TB=${TSAN_BUILD:?run through make tsan-test}
TCS=$TB/host/callsight
WL=$B/examples/workload
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"

TRACE_ENABLE=1 TRACE_DIR="$T/files" "$WL" 2 25 12 64 8 > /dev/null || echo "Bail out! workload failed"
for f in text folded callers; do
    "$TCS" analyze "$T/files" --exe "$WL" --format "$f" --top 0 --jobs 1 > "$T/one" 2> "$T/one.err"
    CALLSIGHT_JOBS_STATS=1 "$TCS" analyze "$T/files" --exe "$WL" --format "$f" --top 0 --jobs 3 > "$T/three" 2> "$T/three.err"
    rc=$?
    cmp -s "$T/one" "$T/three"
    is "rc=$rc same=$? $(sed -n 's/.*: jobs /jobs /p' "$T/three.err")" "rc=0 same=0 jobs 3, merged 2, read again 0" \
        "$f: --jobs 3 under TSan, no report, the same output"
done
"$TCS" analyze "$T/files" --exe "$WL" --format json --jobs 3 --max-funcs 2 > "$T/capped" 2> "$T/capped.err"
is "rc=$? $(grep -c WARNING "$T/capped.err")" "rc=0 0" "json with a cap (jobs read again) under TSan: no report"

# One series (the busiest thread's file alone): its parts read at once.
mkdir "$T/series1"
cp "$T/files/$(ls -S "$T/files" | head -n 1)" "$T/series1/"
"$TCS" analyze "$T/series1" --exe "$WL" --top 0 --jobs 1 > "$T/one1" 2> "$T/one1.err"
CALLSIGHT_JOBS_STATS=1 "$TCS" analyze "$T/series1" --exe "$WL" --top 0 --jobs 3 > "$T/one3" 2> "$T/one3.err"
rc=$?
cmp -s "$T/one1" "$T/one3"
is "rc=$rc same=$? $(sed -n 's/.*: jobs /jobs /p' "$T/one3.err")" "rc=0 same=0 jobs 3, merged 2, read again 0" \
    "one series in 3 parts under TSan, no report, the same output"
