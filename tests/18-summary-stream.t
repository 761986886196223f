#!/usr/bin/env bash
# 18-summary-stream.t - TRACE_MODE=summary streamed: snapshots go through
# the ring, trace_stream and serve, negotiated like the codec
# (TRACE_STREAM_FLAG_SUMMARY_OFFER, trace_shm.h).  The 26-thread workload's
# exact counts arrive, equal to event mode's, in files that say version 3,
# with far fewer bytes on the wire than its events take; a server that
# predates summaries (tests/tools/codecpeer.py ackserver: it acks the codec
# with no features) gets none, and the client says how many it held back,
# counted as dropped in its notice; a tracer killed by SIGKILL keeps every
# call up to its last snapshot.
source "$(dirname "$0")/lib.sh"
source "$TESTS/workload_expect.sh"
plan 11

W=$B/examples/workload
PEER="python3 $TESTS/tools/codecpeer.py"
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 7 { print $7, $1 }' "$1" | sort; }
expect_counts 16 25 12 64 8 | sort > "$T/expect"
wire() { sed -n 's/^trace_stream: forwarded [0-9]* events in [0-9]* chunks (\([0-9]*\) bytes on the wire).*/\1/p' "$1"; }

TRACE_MODE=summary TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/s" --top 0 -- "$W" \
    > "$T/s.out" 2> "$T/s.err"
ok $? "callsight run --stream with TRACE_MODE=summary"
is "$(rows "$T/s.out")" "$(cat "$T/expect")" "streamed summaries: every function's exact count"
grep -q "^note: summary mode: 26 snapshots from 26 threads" "$T/s.out"
ok $? "one whole snapshot from each of the 26 threads"
is "$(od -An -tu4 -j8 -N4 "$(ls "$T/s"/trace.stream.*.bin | head -n 1)" | tr -d ' ')" "3" \
    "serve's file says version 3 once summaries arrive, so an older analyzer refuses it"
TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/e" --top 0 -- "$W" > "$T/e.out" 2> "$T/e.err"
is "$(rows "$T/s.out")" "$(rows "$T/e.out")" "the same counts as the events streamed"
sw=$(wire "$T/s.err")
ew=$(wire "$T/e.err")
[ -n "$sw" ] && [ -n "$ew" ] && [ $((sw * 4)) -lt "$ew" ]
ok $? "summaries take under a quarter of the events' bytes on the wire ($sw vs $ew)"

# --- SIGKILL of a streaming tracer: the ring and serve keep its last snapshot ---
build_traced "$T/kill" "$TESTS/tools/snapshot_victim.c"
start_serve "$T/k"
KSHM=/callsight-t18k-$$
track_shm "$KSHM"
start_trace_stream "$B/trace_stream" "$KSHM"
TRACE_MODE=summary TRACE_SUMMARY_MS=50 TRACE_ENABLE=1 TRACE_SHM=$KSHM "$T/kill" > "$T/kill.out" &
victim=$!
track_pid $victim
for _ in $(seq 100); do grep -q done "$T/kill.out" 2>/dev/null && break; sleep 0.05; done
sleep 0.4 # several snapshots after the work is done
kill -KILL $victim
wait $victim 2>/dev/null
wait "$CLIENT_PID"
is "$?" "3" "SIGKILL of the tracer: trace_stream drains what it left and exits 3 (tracers lost)"
stop_serve
"$CS" analyze "$T/k" --exe "$T/kill" --top 0 > "$T/k.txt" 2>&1
is "$(calls_of work "$T/k.txt")" "10000" "every call up to its last snapshot arrived (work 10000)"

# --- a server from before summaries ---
SHM=/callsight-t18-$$
track_shm "$SHM"
$PEER ackserver "$T/ack.port" > "$T/ack.out" &
peer=$!
track_pid $peer
wait_file "$T/ack.port"
timeout 60 "$B/trace_stream" "$SHM" 127.0.0.1 "$(cat "$T/ack.port")" 2> "$T/ack.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" 2 2 8 16 4 > /dev/null
wait $client
ok $? "against a server that predates summaries, trace_stream exits 0"
wait $peer
n=$(sed -n 's/^trace_stream: the server does not take summary snapshots .*: \([0-9]*\) summary records not sent, counted as dropped$/\1/p' "$T/ack.err")
[ -n "$n" ] && [ "$n" -gt 0 ]
ok $? "it says it held back $n summary records, counted as dropped"
grep -Eq "^flags=0x301 chunks=(0:[0-9]+,)?1:[1-9][0-9]*,2:1(,4:[0-9]+)? records=[0-9]+$" "$T/ack.out"
ok $? "the old server got both offers, event chunks without the summaries, and the drop in a notice ($(cat "$T/ack.out"))"
exit $_failed
