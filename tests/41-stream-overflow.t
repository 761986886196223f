#!/usr/bin/env bash
# Deliberate overflow: a small ring and a drain stopped while the workload
# runs.  Events are dropped, never waited for; serve prints the count,
# analyze reports it, and received + dropped = generated, exactly.
source "$(dirname "$0")/lib.sh"
source "$TESTS/workload_expect.sh"
plan 8

PARAMS="8 25 12 64 8"
SHM=/cs-test-overflow-$$
track_shm "$SHM"
calls=$(expect_counts $PARAMS | awk '{s += $2} END {print s}')

start_serve "$T/out"
ok $? "serve listens"
TRACE_SHM_SIZE=65536 timeout 60 "$B/trace_stream" "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
kill -STOP $client
TRACE_ENABLE=1 TRACE_SHM=$SHM timeout 60 "$B/examples/workload" $PARAMS > /dev/null
ok $? "the workload finishes while the drain is stopped"
kill -CONT $client
wait $client
ok $? "trace_stream drains what is left and exits 0"
diag "$(tail -n 1 "$T/client.err")"
wait_serve_closed 1
stop_serve
grep -q 'dropped [1-9][0-9]* events' "$SERVE_LOG"
ok $? "serve printed the device's drop count"
grep 'dropped' "$SERVE_LOG" | tail -n 1 | sed 's/^/# /'

"$CS" analyze "$T/out" --exe "$B/examples/workload" --top 5 > "$T/a.txt" 2>&1
ok $? "analyze exits 0"
h=$(head -n 1 "$T/a.txt"); diag "$h"
ev=$(field events "$h"); dr=$(field dropped "$h")
[ "$dr" -gt 0 ]
ok $? "analyze reports drops (dropped=$dr)"
is $((ev + dr)) $((2 * calls)) "events received + dropped = events generated"
is "$(field unmatched_exits "$h")" 0 "exits orphaned by a drop are losses, not unmatched exits"
exit $_failed
