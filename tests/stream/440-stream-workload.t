#!/usr/bin/env bash
# The headline feature end to end on 127.0.0.1: the 26-thread workload
# streams through the shm ring, trace_stream and serve, and analyzes exactly
# like the same workload traced to files.  Then again through a ring of
# 1 MiB, which wraps about twenty times while it is drained, with a wait
# bound so that nothing is dropped: the same exact counts.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 16

PARAMS="16 25 12 64 8"
SHM=/cs-test-stream-$$
track_shm "$SHM"
expect_counts $PARAMS > "$T/expect"
calls=$(awk '{s += $2} END {print s}' "$T/expect")

stream_workload "$B/trace_stream"
diag "$(tail -n 1 "$T/client.err")"
[ ! -e "/dev/shm$SHM" ]
ok $? "trace_stream removed the shm segment"
wait_serve_closed 1
stop_serve
ls "$T"/stream/trace.stream.*.bin > /dev/null 2>&1
ok $? "serve wrote trace.stream.<id>.<seq>.bin"

analyze_workload_stream "$T/stream" "$T/s.txt"

# The same workload in file mode: identical rows (calls and names).
TRACE_ENABLE=1 TRACE_DIR="$T/files" "$B/examples/workload" $PARAMS > /dev/null
"$CS" analyze "$T/files" --exe "$B/examples/workload" --top 0 > "$T/f.txt" 2>&1
ok $? "the same workload analyzes in file mode"
report_rows "$T/s.txt" > "$T/s.rows"; report_rows "$T/f.txt" > "$T/f.rows"
is "$(wc -l < "$T/s.rows")" "$(wc -l < "$T/expect")" "one row per function"
diff "$T/s.rows" "$T/f.rows" > "$T/rows.diff"
ok $? "streamed and file-mode reports have identical calls, names and file:line"
exact_calls "$T/s.txt"
ok $? "streamed call counts are the exact expected ones"

# --- a ring of 1 MiB for a run of 20 MB: it wraps ~20 times ---
SHM2=/cs-test-wrap-$$
track_shm "$SHM2"
start_serve "$T/wrap" --quiet
TRACE_SHM_SIZE=$((1048576 + 96)) start_trace_stream "$B/trace_stream" "$SHM2"
client=$CLIENT_PID
TRACE_ENABLE=1 TRACE_SHM=$SHM2 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$B/examples/workload" $PARAMS > /dev/null
ok $? "wrap: the workload runs through a 1 MiB ring"
wait $client
ok $? "wrap: trace_stream exits 0"
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/wrap" --exe "$B/examples/workload" --top 0 > "$T/w.txt" 2>&1
fields_are "$T/w.txt" "events threads unmatched_exits dropped" \
    "$((2 * calls)) 26 0 0" "wrap: every event arrived, none dropped, no unmatched exit"
report_rows "$T/w.txt" > "$T/w.rows"
diff "$T/w.rows" "$T/f.rows" > "$T/wrows.diff"
ok $? "wrap: the same exact rows as in file mode"
exit $_failed
