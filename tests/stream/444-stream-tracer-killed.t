#!/usr/bin/env bash
# A tracer killed by SIGKILL never decrements `writers`; trace_stream still
# notices (no shared flock is left on the ring), drains what the tracer put
# in the ring, tells serve in-band (marker 22), and exits 3 with a clear
# message.  Exact: every event the tracer wrote reaches the file.  Then the
# real workload killed mid-run: trace_stream ends the same way.
source "$(dirname "$0")/../lib/lib.sh"
plan 15

need_tools ringwriter
CHECK="perl $TESTS/tools/tracecheck.pl"
SHM=/cs-test-killed-$$
track_shm $SHM

start_serve "$T/out"
ok $? "serve listens"
start_trace_stream "$B/trace_stream" "$SHM" "$T/c1.err"
client=$CLIENT_PID
"$TOOLBIN/ringwriter" --linger-ms 60000 "$SHM" 5000 > "$T/rw.out" &
rw=$!
track_pid $rw
for _ in $(seq 500); do [ -s "$T/rw.out" ] && break; sleep 0.02; done
is "$(cat "$T/rw.out")" "ringwriter: generated 5000 written 5000 dropped 0" "the tracer wrote 5000 events"
# trace_stream looks at the tracers' locks when it sees one attach, before it
# says so; a tracer dead before that look is taken for another agent's.
for _ in $(seq 500); do grep -q "tracer attached" "$T/c1.err" && break; sleep 0.02; done
kill -KILL $rw
wait $rw 2>/dev/null
wait $client
is $? 3 "trace_stream exits 3: a tracer died without detaching"
grep -q "^trace_stream: 1 tracer process died without detaching (killed?); sent what it had put in the ring" "$T/c1.err"
ok $? "and says so"
grep -Eq "^trace_stream: forwarded 5000 events in [0-9]+ chunks" "$T/c1.err"
ok $? "after forwarding all 5000 events"
[ ! -e "/dev/shm$SHM" ]
ok $? "the ring is removed"
for _ in $(seq 200); do grep -q "conn 1 closed" "$SERVE_LOG" && break; sleep 0.02; done
grep -q "^callsight serve: conn 1: 1 tracer process died without detaching (killed?)" "$SERVE_LOG"
ok $? "serve prints the vanished tracer"
is "$($CHECK "$T/out/trace.stream.1.0.bin" | tail -n 1)" "events=5000 mismatched=0 markers=22:1 tail=0" \
    "the file: all 5000 events, then the tracer-vanished marker"

# A tracer of another agent holds no liveness lock: it is never taken for dead.
SHM3=/cs-test-killed3-$$
track_shm $SHM3
start_trace_stream "$B/trace_stream" "$SHM3" "$T/c3.err"
client=$CLIENT_PID
timeout 60 "$TOOLBIN/ringwriter" --legacy 1 --linger-ms 1000 "$SHM3" 700 > "$T/rw3.out"
is "$(cat "$T/rw3.out")" "ringwriter: generated 700 written 700 dropped 0" "a lock-less tracer wrote 700 events and detached"
wait $client
is $? 0 "trace_stream was not fooled: exit 0"
grep -Eq "^trace_stream: forwarded 700 events in [0-9]+ chunks .*, dropped 0$" "$T/c3.err"
ok $? "and it forwarded all 700 events"

# The real workload, killed while it runs.
SHM2=/cs-test-killed2-$$
track_shm $SHM2
start_trace_stream "$B/trace_stream" "$SHM2" "$T/c2.err"
client=$CLIENT_PID
TRACE_ENABLE=1 TRACE_SHM=$SHM2 "$B/examples/workload" 1000 4 10 32 4 > /dev/null 2>&1 &
wl=$!
track_pid $wl
for _ in $(seq 500); do grep -q "tracer attached" "$T/c2.err" && break; sleep 0.02; done
sleep 0.3
kill -KILL $wl
wait $wl 2>/dev/null
wait $client
is $? 3 "workload killed: trace_stream exits 3"
grep -q "^trace_stream: 1 tracer process died without detaching" "$T/c2.err"
ok $? "with the same message"
wait_serve_closed 3
stop_serve
grep -q "^callsight serve: conn 3: 1 tracer process died without detaching" "$SERVE_LOG"
ok $? "serve prints it for that connection too"
[ ! -e "/dev/shm$SHM2" ]
ok $? "and the ring is removed"
exit $_failed
