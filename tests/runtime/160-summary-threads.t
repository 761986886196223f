#!/usr/bin/env bash
# 160-summary-threads.t - TRACE_THREADS with TRACE_MODE=summary (issue 32:
# options together): only the threads whose names match are aggregated, and
# what they call once named is counted exactly, as test 116 checks it for
# events; a glob that matches no thread aggregates nothing.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 4

PARAMS="4 8 10 32 4" # 8 workers; 3 of them match
GLOBS='worker-0[13],nothing-*,worker-06'
W=$B/examples/workload
# per worker, from workload.c's table with 1 worker: all but the main
# thread's functions and worker_main (its enter came before the name)
expect_counts 4 1 10 32 4 | grep -vE '^(main|spawn_workers|join_workers|arg_int|worker_main) ' |
    awk '{print $1, $2 * 3}' | sort > "$T/expect"

TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/s" TRACE_THREADS=$GLOBS timeout 60 "$W" $PARAMS > /dev/null
ok $? "the workload runs in summary mode with TRACE_THREADS=$GLOBS"
"$CS" analyze "$T/s" --exe "$W" --top 0 > "$T/s.txt" 2>&1
is "$(field threads "$(head -n 1 "$T/s.txt")")" "3" "the three selected threads, not the main thread TRACE_THREADS left out"
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {print $10, $1}' "$T/s.txt" | sort)" "$(cat "$T/expect")" \
    "exact counts of what they called once named, nothing of the others"
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/none" TRACE_THREADS='nobody' timeout 60 "$W" 2 2 8 16 4 > /dev/null
"$CS" analyze "$T/none" --exe "$W" --top 0 > "$T/n.txt" 2>&1
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10' "$T/n.txt" | wc -l)" 0 "TRACE_THREADS=nobody: no function aggregated"
exit $_failed
