#!/usr/bin/env bash
# 116-trace-threads.t - TRACE_THREADS=GLOB[,GLOB...]: only the threads whose
# name matches are traced, in file mode and through the ring.  The
# workload's workers name themselves (worker-NN) inside worker_main, so
# each starts being traced in the middle of that call: its exit is not
# recorded and nothing is left unmatched, and everything it calls after
# is counted exactly.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 8

PARAMS="4 8 10 32 4" # 8 workers; 3 of them match
GLOBS='worker-0[13],nothing-*,worker-06'
W=$B/examples/workload
# per worker, from the table of workload.c with 1 worker: all but the main
# thread's functions, and worker_main (its enter came before the name)
expect_counts 4 1 10 32 4 | grep -vE '^(main|spawn_workers|join_workers|arg_int|worker_main) ' |
    awk '{print $1, $2 * 3}' | sort > "$T/expect"

# check MODE REPORT JSON: the three workers, nobody else, exact counts.
check() {
    local mode=$1 h
    h=$(head -n 1 "$2"); diag "$h"
    is "$(field threads "$h") $(field unmatched_exits "$h") $(field unclosed_enters "$h") $(field dropped "$h")" \
        "3 0 0 0" "$mode: three threads traced, no unmatched exit, nothing unclosed or dropped"
    is "$(python3 -c 'import json, sys
print(" ".join(sorted(t["name"] for t in json.load(open(sys.argv[1]))["threads"])))' "$3")" \
        "worker-01 worker-03 worker-06" "$mode: exactly the threads whose names match"
    is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {print $10, $1}' "$2" | sort)" "$(cat "$T/expect")" \
        "$mode: exact counts of what they called once traced"
}

TRACE_ENABLE=1 TRACE_DIR="$T/files" TRACE_THREADS=$GLOBS timeout 60 "$W" $PARAMS > /dev/null
ok $? "file mode: the workload runs with TRACE_THREADS=$GLOBS"
"$CS" analyze "$T/files" --exe "$W" --top 0 > "$T/f.txt" 2>&1 &&
    "$CS" analyze "$T/files" --exe "$W" --format json -o "$T/f.json"
check "file mode" "$T/f.txt" "$T/f.json"

SHM=/cs-test-threads-$$
track_shm "$SHM"
start_serve "$T/stream" --quiet
start_trace_stream "$B/trace_stream" "$SHM"
client=$CLIENT_PID
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT TRACE_THREADS=$GLOBS timeout 60 "$W" $PARAMS > /dev/null
wait $client
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/stream" --exe "$W" --top 0 > "$T/s.txt" 2>&1 &&
    "$CS" analyze "$T/stream" --exe "$W" --format json -o "$T/s.json"
check "stream mode" "$T/s.txt" "$T/s.json"

# A glob that matches no thread: nothing is traced.
TRACE_ENABLE=1 TRACE_DIR="$T/none" TRACE_THREADS='nobody' timeout 60 "$W" 2 2 8 16 4 > /dev/null
"$CS" analyze "$T/none" --exe "$W" > "$T/n.txt" 2>&1
is "$(field events "$(head -n 1 "$T/n.txt")")" 0 "TRACE_THREADS=nobody: no thread traced, no event"
exit $_failed
