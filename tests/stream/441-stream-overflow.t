#!/usr/bin/env bash
# Deliberate overflow: a small ring and a drain stopped while the workload
# runs.  Events are dropped, never waited for, and every count is checked on
# its own: trace_stream's dropped, serve's device-dropped lines and the
# JSON's device_dropped are one number, and received + that number =
# generated, exactly.  Which thread lost what:
#   - the drain stopped for the whole run: no thread's later flush gets in,
#     so the threads' own loss counts cannot say (they are at most the
#     device's count, and analyze notes the difference);
#   - the drain stopped for a while, then resumed while the threads still
#     run: each thread says what it lost at the head of its next flush, and
#     the per-thread counts add up to the device's, exactly.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 18

# overflow NAME ITERS RING RESUME: the workload (ITERS iterations, 25
# workers) through a ring of RING bytes whose drain is stopped as it starts,
# and continued RESUME seconds later ("end": only once the workload is done).  Leaves
# serve's log, trace_stream's stderr, the text and the JSON report.
overflow() {
    local name=$1 iters=$2 ring=$3 resume=$4 shm=/cs-test-overflow-$1-$$
    track_shm "$shm"
    start_serve "$T/$name"
    TRACE_SHM_SIZE=$ring start_stoppable_stream "$B/trace_stream" "$shm" "$T/$name.err"
    local client=$CLIENT_PID
    kill -STOP $client
    [ "$resume" = end ] || { (sleep "$resume"; cont_if_stopped $client) & track_pid $!; }
    TRACE_ENABLE=1 TRACE_SHM=$shm timeout 60 "$B/examples/workload" $iters 25 12 64 8 > /dev/null
    ok $? "$name: the workload finishes while the drain is stopped"
    wait_stream_client $client
    ok $? "$name: trace_stream drains what is left and exits 0"
    wait_serve_closed 1
    stop_serve
    cp "$SERVE_LOG" "$T/$name.log"
    "$CS" analyze "$T/$name" --exe "$B/examples/workload" --top 5 > "$T/$name.txt" 2>&1 &&
        "$CS" analyze "$T/$name" --exe "$B/examples/workload" --format json -o "$T/$name.json"
    ok $? "$name: analyze reads what arrived"
}

# counts NAME ITERS: the checks every scenario shares; sets DEV and LOST.
counts() {
    local name=$1 calls
    calls=$(expect_counts $2 25 12 64 8 | awk '{s += $2} END {print s}')
    local h ev client serve_line serve_close json
    h=$(head -n 1 "$T/$name.txt"); diag "$h"
    ev=$(field events "$h")
    client=$(sed -n 's/^trace_stream: forwarded .*, dropped \([0-9]*\).*/\1/p' "$T/$name.err")
    # the last line, perhaps one that stands for several notices (serve says one a status interval)
    serve_line=$(sed -n 's/^callsight serve: conn 1: device dropped \([0-9]*\) events (cumulative[^)]*)$/\1/p' \
        "$T/$name.log" | tail -n 1)
    serve_close=$(sed -n 's/^callsight serve: conn 1 closed .*, dropped \([0-9]*\).*/\1/p' "$T/$name.log")
    read -r json LOST < <(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["sources"][0]
print(s["device_dropped"], s["thread_lost"])' "$T/$name.json")
    DEV=$client
    [ -n "$DEV" ] && [ "$DEV" -gt 0 ]
    ok $? "$name: trace_stream says it dropped events ($DEV)"
    is "$serve_line $serve_close $json" "$DEV $DEV $DEV" \
        "$name: serve's device-dropped line, its close line and the JSON's device_dropped say the same"
    is $((ev + DEV)) $((2 * calls)) "$name: events received + device dropped = events generated"
    is "$(field dropped "$h") $(field unmatched_exits "$h")" "$DEV 0" \
        "$name: analyze's dropped is the device's; exits orphaned by a drop are losses, not unmatched"
}

overflow stopped 8 65536 end
counts stopped 8
[ "$LOST" -le "$DEV" ]
ok $? "stopped: the threads' own loss counts ($LOST) are at most the device's ($DEV)"
if [ "$LOST" -lt "$DEV" ]; then
    grep -qx "note: stream 1: $((DEV - LOST)) of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)" "$T/stopped.txt"
else
    ! grep -q 'not attributed to a thread' "$T/stopped.txt"
fi
ok $? "stopped: analyze notes what no thread could attribute ($((DEV - LOST)))"

# Stopped for 0.3 s of a run of about a second: losses early, flushes after.
# A ring of 4 MiB fills while stopped and never again after: the threads'
# last flushes (at their exits) all get in.
overflow resumed 60 $((4194304 + 96)) 0.3
counts resumed 60
is "$LOST" "$DEV" "resumed: the threads' own loss counts add up to the device's, exactly"
! grep -q 'not attributed to a thread' "$T/resumed.txt"
ok $? "resumed: nothing is left unattributed"
exit $_failed
