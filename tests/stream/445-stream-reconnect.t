#!/usr/bin/env bash
# The link dies mid-stream (serve closes a connection idle past
# --idle-timeout while trace_stream is stopped, so it cannot send its
# --heartbeat).  Meanwhile a tracer writes into the ring, and trace_stream,
# continued, reads the server's end before it takes anything from the ring:
# the ring keeps those events for the next connection, nothing is sent into
# the dead socket.  trace_stream reconnects, sends a fresh handshake and
# its stream identity with its totals; serve continues the same file series
# and states the gap's exact size, 0: received = generated, every event in
# order (the writers continue one sequence, --first).  Then SIGTERM:
# trace_stream sends what the ring holds and exits 0.
source "$(dirname "$0")/../lib/lib.sh"
plan 34

need_tools ringwriter
RW=$TOOLBIN/ringwriter
CHECK="perl $TESTS/tools/tracecheck.pl"
SHM=/cs-test-reconnect-$$
track_shm $SHM
start_serve "$T/out" --idle-timeout 3 --quiet
ok $? "serve listens with --idle-timeout 3"
TRACE_SHM_SIZE=$((1048576 + 96)) "$B/trace_stream" --retry 20 --heartbeat 1 "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/c.err" &
client=$!
track_pid $client
wait_in "$T/c.err" "waiting for a tracer"
# Tracer A: 1000 events, then it stays attached until we are done.
"$RW" --linger-ms 20000 "$SHM" 1000 > "$T/a.out" &
rwa=$!
track_pid $rwa
F0=$T/out/trace.stream.1.0.bin
# header, the stream-id and key markers that start the series, 1000 events
wait_size "$F0" 32144
is "$(stat -c %s "$F0")" 32144 "the first 1000 events arrived"
kill -STOP $client
wait_in "$SERVE_LOG" "conn 1 closed.*idle: nothing received for 3 s"
ok $? "serve closes the silent connection after --idle-timeout"
# Tracer B writes 2000 events while the link is dead.
timeout 30 "$RW" --first 1000 "$SHM" 2000 > "$T/b.out"
is "$(cat "$T/b.out")" "ringwriter: generated 2000 written 2000 dropped 0" "2000 more events in the ring"
kill -CONT $client
wait_in "$T/c.err" "reconnected to 127.0.0.1:$SERVE_PORT \(connection 2\)"
ok $? "trace_stream reconnects"
wait_in "$SERVE_LOG" "resumed"
grep -q "^callsight serve: conn 1: stream [0-9a-f]\{16\} resumed (connection 2): 0 events lost in the gap (0 discarded on the device while disconnected, 0 lost in flight)$" "$SERVE_LOG"
ok $? "serve states the gap's exact size: 0 (the ring kept the 2000 for the new connection)"
# Tracer C: 500 events on the new connection.
timeout 30 "$RW" --first 3000 "$SHM" 500 > "$T/c.out"
is "$(cat "$T/c.out")" "ringwriter: generated 500 written 500 dropped 0" "500 events after the reconnection"
F1=$T/out/trace.stream.1.1.bin
wait_size "$F1" $((80 + 2501 * 32))
# Quiet for longer than --idle-timeout: the heartbeat keeps the link.
sleep 4
is "$(grep -c "idle: nothing received" "$SERVE_LOG")" 1 "a quiet stream with --heartbeat 1 outlives --idle-timeout 3"
kill -TERM $client
wait $client
is $? 0 "SIGTERM: trace_stream sends what the ring holds and exits 0"
kill $rwa 2>/dev/null
stop_serve
is "$($CHECK "$F0" | tail -n 1)" "events=1000 mismatched=0 markers=23:1000 tail=0" \
    "segment 0: the first connection's 1000 events, then the cut"
is "$($CHECK --first 1000 "$F1" | tail -n 1)" "events=2500 mismatched=0 markers=24:0 tail=0" \
    "segment 1 continues the series: resumed, no gap, then the 2000 the ring kept and the 500 after, in order"
is "$($CHECK "$F1" | head -n 1 | sed 's/.* pid=\([0-9]*\) seq=\([0-9]*\).*/\1 \2/')" "1 1" "same connection id, next seq"
e0=$($CHECK "$F0" | sed -n 's/.*events=\([0-9]*\) .*/\1/p'); e1=$($CHECK "$F1" | sed -n 's/.*events=\([0-9]*\) .*/\1/p')
gap=$(sed -n 's/.*: \([0-9]*\) events lost in the gap.*/\1/p' "$SERVE_LOG")
is $((e0 + e1 + gap)) 3500 "received ($e0 + $e1) + gap ($gap) = generated (3500)"
is "$(ls "$T/out" | wc -l)" 2 "no other files"

# --- serve killed and restarted into the same directory: it finds the
# stream's series on disk by the stream-id marker that starts it, continues
# it, and counts the gap exactly from the records there.  SIGKILL: serve
# closes nothing and writes no cut marker.  While it is down, the ring keeps
# what tracer B writes, and the restarted serve gets it all.
SHM2=/cs-test-reconnect2-$$
track_shm $SHM2
start_serve "$T/r1" --quiet
PORT1=$SERVE_PORT
stream_bg "$T/c2.err" --retry 20 --heartbeat 1 "$SHM2" 127.0.0.1 "$PORT1"
client=$TS_PID
ringwriter_bg --linger-ms 30000 "$SHM2" 1000
rwa=$RW_PID
wait_size "$T/r1/trace.stream.1.0.bin" 32144
kill_serve
wait_in "$T/c2.err" "reconnecting for up to 20 s"
timeout 30 "$RW" --first 1000 "$SHM2" 2000 > /dev/null
used=$(ring_used "$SHM2")
is "$used" 64000 "while serve is down the ring keeps tracer B's 2000 events (64000 bytes), untaken"
restart_serve "$PORT1" "$T/r1" --quiet
wait_in "$T/c2.err" "reconnected to 127.0.0.1:$PORT1 \(connection 2\)"
ok $? "trace_stream reconnects to the restarted serve"
wait_in "$SERVE_LOG" "resumed"
grep -Eq "^callsight serve: conn 1: stream [0-9a-f]{16} resumed \(connection 2\): 0 events lost in the gap \(0 discarded on the device while disconnected, 0 lost in flight\)$" "$SERVE_LOG"
ok $? "the restarted serve finds the stream on disk and states the gap's exact size: 0"
timeout 30 "$RW" --first 3000 "$SHM2" 300 > /dev/null
kill -TERM $client
wait $client
is $? 0 "trace_stream exits 0 on SIGTERM"
kill $rwa 2>/dev/null
wait_serve_closed 1
stop_serve
R0=$T/r1/trace.stream.1.0.bin R1=$T/r1/trace.stream.1.1.bin
is "$($CHECK --ids "$R0" | tail -n 1)" "events=1000 mismatched=0 markers=25,36 tail=0" \
    "segment 0: the stream-id marker, then the 1000 events serve wrote before it was killed"
is "$($CHECK "$R1" | head -n 1 | sed 's/.* pid=\([0-9]*\) seq=\([0-9]*\).*/\1 \2/')" "1 1" \
    "the restarted serve continues the same series at the next seq"
gap=$(sed -n 's/.*: \([0-9]*\) events lost in the gap.*/\1/p' "$SERVE_LOG")
is "$($CHECK --first 1000 "$R1" | tail -n 1)" "events=2300 mismatched=0 markers=24:0 tail=0" \
    "segment 1: resumed without a gap, then the 2000 the ring kept and the 300 new events, in order"
e0=$($CHECK "$R0" | sed -n 's/.*events=\([0-9]*\) .*/\1/p'); e1=$($CHECK "$R1" | sed -n 's/.*events=\([0-9]*\) .*/\1/p')
is $((e0 + e1 + gap)) 3300 "across the restart: received ($e0 + $e1) + gap ($gap) = generated (3300)"
is "$(ls "$T/r1" | wc -l)" 2 "no other files in the restarted serve's directory"
"$CS" analyze "$T/r1" --exe "$RW" > "$T/an1.out" 2> "$T/an1.err"
is "$?:$(cat "$T/an1.err")" "0:" "analyze reads the series across the restart without complaint"
is "$(head -n 1 "$T/an1.out" | sed 's/.*\(events=[0-9]*\) .*\(dropped=[0-9]*\)$/\1 \2/')" \
    "events=3300 dropped=0" "analyze: all 3300 events arrived, nothing dropped"

# --- serve restarted before any tracer came: nothing lost, nothing to say ---
SHM4=/cs-test-reconnect4-$$
track_shm $SHM4
start_serve "$T/w1" --quiet
PORT4=$SERVE_PORT
stream_bg "$T/c4.err" --retry 20 "$SHM4" 127.0.0.1 "$PORT4"
client=$TS_PID
stop_serve
wait_in "$T/c4.err" "reconnecting for up to 20 s"
restart_serve "$PORT4" "$T/w2" --quiet
wait_in "$T/c4.err" "reconnected to 127.0.0.1:$PORT4 \\(connection 1\\)"
ok $? "trace_stream reconnects while still waiting for its tracer"
timeout 30 "$RW" "$SHM4" 800 > /dev/null
wait $client
is $? 0 "the tracer came and went; trace_stream exits 0"
wait_serve_closed 1
stop_serve
is "$($CHECK "$T/w2/trace.stream.1.0.bin" | tail -n 1)" "events=800 mismatched=0 markers= tail=0" \
    "the restarted serve has all 800 events and no gap marker" ||
    diag "$(ls -la "$T/w2"; cat "$SERVE_LOG" "$T/c4.err")"

# --- the server never comes back: --retry bounds the trying, loss is said;
# the 200 events the ring kept for a connection that never came are lost:
# exit 4 (events lost to the link) ---
SHM3=/cs-test-reconnect3-$$
track_shm $SHM3
start_serve "$T/g" --quiet
stream_bg "$T/c3.err" --retry 3 "$SHM3" 127.0.0.1 "$SERVE_PORT"
client=$TS_PID
ringwriter_bg --linger-ms 30000 "$SHM3" 100
rwa=$RW_PID
wait_in "$SERVE_LOG" "conn 1 from"
kill -KILL $SERVE_PID
wait_in "$T/c3.err" "reconnecting for up to 3 s"
timeout 30 "$RW" "$SHM3" 200 > /dev/null
wait $client
is $? 4 "--retry 3 and no server: trace_stream gives up and exits 4 (events lost to the link)"
is "$(tail -n 1 "$T/c3.err")" "trace_stream: gave up reconnecting to 127.0.0.1:$SERVE_PORT after 3 s; 200 events lost: 200 left in the ring, 0 discarded, 0 dropped by the tracers while disconnected" \
    "saying exactly how many events were lost, and how"
[ ! -e "/dev/shm$SHM3" ]
ok $? "the ring is removed"
kill $rwa 2>/dev/null

# --- analyze reads the first part's two connections as one stream ---
"$CS" analyze "$T/out" --exe "$RW" > "$T/an.out" 2> "$T/an.err"
is "$?:$(cat "$T/an.err")" "0:" "analyze reads the resumed series without complaint"
is "$(head -n 1 "$T/an.out" | sed 's/.*\(events=[0-9]*\) .*\(dropped=[0-9]*\)$/\1 \2/')" \
    "events=3500 dropped=0" "analyze: all 3500 events arrived, nothing dropped"
is "$(grep '^note: ' "$T/an.out" | grep -e 'gap' -e 'resumed')" \
    'note: stream 1: stream resumed 1 time(s) after its connection was cut' \
    "analyze notes the resume, and no gap"
exit $_failed
