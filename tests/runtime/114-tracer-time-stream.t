#!/usr/bin/env bash
# 114-tracer-time-stream.t - stream mode with TRACE_SHM_WAIT_US, the bounded
# wait a user may prefer to dropping:
#   - another process holds the ring's lock for a second (tests/tools/
#     lockhog.c, a preempted tracer): flushes wait for it, nothing is dropped, counts are
#     exact, no short function's max holds a wait (with --keep-tracer-time
#     one does), and serve and analyze both say how long tracers waited;
#   - trace_stream stopped (SIGSTOP) for less than the bound: the writers
#     wait for room and nothing is lost;
#   - stopped for longer than the bound: each flush waits that long, then
#     drops and counts, exactly as without the option.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 19

PARAMS="16 2 12 64 8"
expect_counts $PARAMS | sort > "$T/expect"
calls=$(awk '{s += $2} END {print s}' "$T/expect")
# all_exact REPORT WHAT NAME: REPORT's header has every event, none dropped
# or unmatched (checked as WHAT), and its rows the exact counts.  Two checks.
all_exact() {
    local h
    h=$(head -n 1 "$1"); diag "$h"
    is "$(field events "$h") $(field dropped "$h") $(field unmatched_exits "$h")" "$((2 * calls)) 0 0" "$2"
    is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {print $10, $1}' "$1" | sort)" "$(cat "$T/expect")" \
        "$3: exact call counts for every function"
}
need_tools lockhog

# stream NAME WAIT_US RING_BYTES [BEFORE-CMD]: the workload through a ring of
# RING_BYTES with TRACE_SHM_WAIT_US=WAIT_US; BEFORE-CMD is eval'ed once the
# ring exists, with $SHM and $CLIENT (trace_stream's pid) set.  Leaves
# serve's log in $T/NAME.log and the trace in $T/NAME/.
stream() {
    local name=$1 wait=$2 ring=$3 before=${4:-} shm=/cs-test-wait-$1-$$
    track_shm "$shm"
    start_serve "$T/$name"
    TRACE_SHM_SIZE=$ring start_stoppable_stream "$B/trace_stream" "$shm" "$T/$name.err"
    local client=$CLIENT_PID
    SHM=$shm CLIENT=$client
    eval "$before"
    TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_SHM_WAIT_US=$wait timeout 120 "$B/examples/workload" $PARAMS > /dev/null
    local rc=$?
    wait_stream_client "$client" || rc=1
    wait_serve_closed 1
    stop_serve
    cp "$SERVE_LOG" "$T/$name.log"
    return $rc
}


# ---- the lock held for HOLD ms as the workload starts, a bound of 5 s:
# each worker's first flush (inside a short function: nearly all its
# events are theirs) waits for it ----
HOLD=1000
hog_start() {
    "$TOOLBIN/lockhog" "$SHM" $HOLD 100000 $((HOLD / 1000 + 1)) > "$T/hog.out" &
    track_pid $!
    for _ in $(seq 500); do grep -q '^lockhog: holding' "$T/hog.out" && return; sleep 0.01; done
}
stream hog 5000000 "$RING_WHOLE_RUN" hog_start
ok $? "hog: the workload runs while another process holds the lock for $HOLD ms"
"$CS" analyze "$T/hog" --exe "$B/examples/workload" --top 0 > "$T/hog.txt" &&
    "$CS" analyze "$T/hog" --exe "$B/examples/workload" --format json -o "$T/hog.json" &&
    "$CS" analyze "$T/hog" --exe "$B/examples/workload" --format json --keep-tracer-time -o "$T/hogk.json"
ok $? "hog: analyze reads the stream"
all_exact "$T/hog.txt" "hog: every event arrived, none dropped" "hog"
short_maxes "$T/hog.json" > "$T/hog.max"
short_maxes "$T/hogk.json" > "$T/hogk.max"
half=$((HOLD * 1000000 / 2))
is "$(awk -v h=$half '$3 >= h {print $1}' "$T/hog.max" | tr '\n' ' ')" "" \
    "hog: no short function's max holds a wait for the lock"
worst=$(awk 'BEGIN {m = 0} $3 > m {m = $3} END {print m}' "$T/hogk.max")
[ "$worst" -ge "$half" ]
ok $? "hog: with --keep-tracer-time the waits show inside them (worst max $worst ns)"
note=$(grep '^note: stream 1: tracers waited' "$T/hog.txt")
diag "$note"
[[ $note =~ ^note:\ stream\ 1:\ tracers\ waited\ [0-9.]+\ ms\ for\ the\ ring\ in\ ([0-9]+)\ flushes ]] &&
    [ "${BASH_REMATCH[1]}" -ge 1 ]
ok $? "hog: analyze says how long tracers waited, in how many flushes"
grep -q "^callsight serve: conn 1 closed .*, tracers waited [0-9.]* ms for the ring in ${BASH_REMATCH[1]} flushes" "$T/hog.log"
ok $? "hog: serve's close line says the same"
grep -q '^note: stream 1: tracer time excluded from function times: ' "$T/hog.txt"
ok $? "hog: the tracer time excluded is noted"

# ---- trace_stream stopped for 0.5 s, a bound of 20 s: nothing lost ----
# stop_client SECONDS: trace_stream stopped now, continued SECONDS later.
stop_client() {
    kill -STOP "$CLIENT"
    (sleep "$1"; cont_if_stopped "$CLIENT") &
    track_pid $!
}
stream pause 20000000 $((1048576 + 96)) 'stop_client 0.5'
ok $? "pause: the workload runs while trace_stream is stopped for 0.5 s"
"$CS" analyze "$T/pause" --exe "$B/examples/workload" --top 0 > "$T/pause.txt"
ok $? "pause: analyze reads the stream"
all_exact "$T/pause.txt" "pause: stopped for less than the bound, every event arrived" "pause"
grep -q '^note: stream 1: tracers waited [0-9.]* ms for the ring in [0-9]* flushes' "$T/pause.txt"
ok $? "pause: the writers waited for room, and that is reported"

# ---- stopped for 1.5 s, a bound of 100 ms: drops, counted exactly ----
stream long 100000 $((1048576 + 96)) 'stop_client 1.5'
ok $? "long: the workload finishes while trace_stream is stopped for 1.5 s"
"$CS" analyze "$T/long" --exe "$B/examples/workload" > "$T/long.txt"
ok $? "long: analyze reads the stream"
h=$(head -n 1 "$T/long.txt"); diag "$h"
ev=$(field events "$h")
dr=$(field dropped "$h")
[ "$dr" -gt 0 ] && [ $((ev + dr)) -eq $((2 * calls)) ]
ok $? "long: stopped past the bound, events dropped ($dr) and received + dropped = generated"
dev=$(grep -o 'dropped [0-9]*$' <(grep "conn 1 closed" "$T/long.log" | sed 's/, tracers waited.*//') | awk '{print $2}')
is "$dev" "$dr" "long: serve's device-dropped count is analyze's"
grep -q '^note: stream 1: tracers waited [0-9.]* ms for the ring in [0-9]* flushes' "$T/long.txt"
ok $? "long: the time waited before dropping is reported"
exit $_failed
