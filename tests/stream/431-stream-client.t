#!/usr/bin/env bash
# trace_stream end to end with callsight serve, the tracer played by
# tests/tools/ringwriter.c (it speaks the ring protocol of trace_shm.h):
# exact event counts through a wrapping ring, the tracer arriving first,
# drops under a stopped client with received + dropped == generated, a
# big-endian client, SIGINT, and the failures a user meets (no server,
# server gone, not a ring, a broken ring).  Every shm segment is removed.
source "$(dirname "$0")/../lib/lib.sh"
plan 51

TS=$B/trace_stream
need_tools ringwriter streamgen
RW=$TOOLBIN/ringwriter
CHECK="perl $TESTS/tools/tracecheck.pl"
HEADER_WANT="header magic=MLTRACE version=2 event_size=32 header_size=80 flags=1 load_bias=4096 tick_hz=3000000000 t0_ticks=111 t0_ns=222 hook_ns=33"
SHM=/cs-test-client-$$
track_shm $SHM
P=127.0.0.1:[0-9]+

shm_gone() { [ ! -e "/dev/shm${1:-$SHM}" ]; }

# start_client LOG [ENV...]: trace_stream on $SHM in the background -> CLIENT
# (no timeout wrapper: the tests signal trace_stream itself; wait_client bounds it).
start_client() {
    local log=$1; shift
    env "$@" "$TS" ${TS_ARGS:-} "$SHM" 127.0.0.1 "${PORT:-$SERVE_PORT}" 2> "$log" &
    CLIENT=$!
    track_pid $CLIENT
}
# wait_client: its exit status, killing it after 60 s.
wait_client() {
    for _ in $(seq 600); do kill -0 $CLIENT 2>/dev/null || break; sleep 0.1; done
    kill -KILL $CLIENT 2>/dev/null
    wait $CLIENT
}
# stop_client: SIGSTOP it and wait until it is really stopped.
stop_client() {
    kill -STOP $CLIENT
    for _ in $(seq 500); do grep -q '^State:.*stopped' /proc/$CLIENT/status && return 0; sleep 0.01; done
    return 1
}

start_serve "$T/out"
ok $? "serve listens on a free port"

# --- 1. 300000 events through a 1 MiB ring: wraps ~9 times, nothing lost ---
start_client "$T/c1.err" TRACE_SHM_SIZE=$((1048576 + 96))
wait_in "$T/c1.err" "waiting for a tracer on $SHM" > /dev/null
is "$(sed -n 1p "$T/c1.err")" "trace_stream: created ring $SHM (1048576 bytes, version 2)" \
    "trace_stream creates the ring: TRACE_SHM_SIZE minus the 96-byte header"
timeout 60 "$RW" --wait "$SHM" 300000 > "$T/rw1.out"
is "$(cat "$T/rw1.out")" "ringwriter: generated 300000 written 300000 dropped 0" "the tracer wrote 300000 events"
wait_client
ok $? "trace_stream exits 0 once the tracer detached and the ring drained"
grep -Eq "^trace_stream: forwarded 300000 events in [0-9]+ chunks \([0-9]+ bytes on the wire\), dropped 0$" "$T/c1.err"
ok $? "its summary: forwarded 300000 events, dropped 0"
shm_gone
ok $? "trace_stream removed the shm segment"
wait_in "$SERVE_LOG" "^callsight serve: conn 1 closed" > /dev/null
# header, the stream-id and key markers serve starts the series with, the events
grep -Eq "^callsight serve: conn 1 closed \($P\): 300000 events, 1 segment, 9600144 bytes written, [0-9]+ bytes received, dropped 0$" "$SERVE_LOG"
ok $? "serve: conn 1 closed normally with 300000 events"
$CHECK "$T/out/trace.stream.1.0.bin" > "$T/c1.chk"
is "$(sed -n 1p "$T/c1.chk")" "$HEADER_WANT pid=1 seq=0 reserved=0" \
    "file header carries the ring's calibration (flags, bias, clock, hook cost)"
is "$(sed -n 2p "$T/c1.chk")" "events=300000 mismatched=0 markers= tail=0" \
    "the file holds exactly the 300000 events, in order, every field intact"
wire=$(sed -n 's/.*(\([0-9]*\) bytes on the wire).*/\1/p' "$T/c1.err")
got=$(sed -n 's/.* \([0-9]*\) bytes received.*/\1/p' <(grep "conn 1 closed" "$SERVE_LOG"))
is "$got" "$wire" "serve received exactly the bytes trace_stream says it sent"

# --- 2. the tracer came and went before trace_stream started ---
# RING32: a version-3 ring that holds exactly 32 batches of 64 events, each
# with its 32-byte header (trace_shm.h), so 2048 events fill it.
RING32=$((32 * 65 * 32))
timeout 60 "$RW" --create $((RING32 + 96)) "$SHM" 5000 > "$T/rw2.out"
is "$(cat "$T/rw2.out")" "ringwriter: generated 5000 written 2048 dropped 2952" \
    "a tracer alone with a 65 KiB ring it created keeps 2048 events and drops the rest"
start_client "$T/c2.err"
wait_client
ok $? "trace_stream attaches to the ring the tracer left, forwards it and exits 0"
is "$(sed -n 1p "$T/c2.err")" "trace_stream: attached to ring $SHM ($RING32 bytes, version 3)" "it says it attached"
grep -Eq "^trace_stream: forwarded 2048 events in 1 chunks \([0-9]+ bytes on the wire\), dropped 2952$" "$T/c2.err"
ok $? "its summary: 2048 forwarded, 2952 dropped"
shm_gone
ok $? "the ring is removed, though the tracer created it"
wait_in "$SERVE_LOG" "^callsight serve: conn 2 closed" > /dev/null
is "$($CHECK "$T/out/trace.stream.2.0.bin" | sed -n 2p)" "events=2048 mismatched=0 markers=18:2952 tail=0" \
    "serve file: the 2048 events, then the drop count as marker 18"

# --- 3. drops: trace_stream stopped, small ring, received + dropped == generated ---
# (the version-3 ring trace_stream makes when asked, sized as part 2's)
TS_ARGS="--ring-version 3" start_client "$T/c3.err" TRACE_SHM_SIZE=$((RING32 + 96))
wait_in "$T/c3.err" "waiting for a tracer" > /dev/null
stop_client
timeout 60 "$RW" --batch 64 "$SHM" 10000 > "$T/rw3.out"
is "$(cat "$T/rw3.out")" "ringwriter: generated 10000 written 2048 dropped 7952" \
    "with the client stopped the ring fills: 2048 kept, 7952 dropped"
kill -CONT $CLIENT
wait_client
ok $? "trace_stream drains after SIGCONT and exits 0"
grep -Eq "^trace_stream: forwarded 2048 events in 1 chunks \([0-9]+ bytes on the wire\), dropped 7952$" "$T/c3.err"
ok $? "its summary: 2048 forwarded, 7952 dropped"
wait_in "$SERVE_LOG" "^callsight serve: conn 3 closed" > /dev/null
is "$(grep -c "^callsight serve: conn 3: device dropped 7952 events (cumulative)$" "$SERVE_LOG")" 1 \
    "serve prints the device's drop count"
grep -Eq "^callsight serve: conn 3 closed \($P\): 2048 events, .* dropped 7952$" "$SERVE_LOG"
ok $? "serve's close line: 2048 events, dropped 7952"
read -r ev mark < <($CHECK "$T/out/trace.stream.3.0.bin" | sed -n 's/^events=\([0-9]*\) mismatched=0 markers=18:\([0-9]*\) tail=0$/\1 \2/p')
is "$((ev + mark))" 10000 "received ($ev) + dropped ($mark) == generated (10000)"
shm_gone
ok $? "ring removed"

# --- 4. a big-endian client (agents of other implementations send their order) ---
timeout 30 "$TOOLBIN/streamgen" --big-endian --events 3000 --chunk 700 --notice 9 127.0.0.1 "$SERVE_PORT"
ok $? "a big-endian stream is sent"
wait_in "$SERVE_LOG" "^callsight serve: conn 4 closed" > /dev/null
grep -Eq "^callsight serve: conn 4 from $P \(big-endian stream, written little-endian\)$" "$SERVE_LOG"
ok $? "serve recognises the big-endian handshake"
is "$(grep -c "^callsight serve: conn 4: device dropped 9 events (cumulative)$" "$SERVE_LOG")" 1 \
    "its big-endian notice is read right"
$CHECK "$T/out/trace.stream.4.0.bin" > "$T/c4.chk"
is "$(sed -n 1p "$T/c4.chk")" "$HEADER_WANT pid=4 seq=0 reserved=0" "file header is little-endian with the right values"
is "$(sed -n 2p "$T/c4.chk")" "events=3000 mismatched=0 markers=18:9 tail=0" \
    "all 3000 events converted to little-endian, every field exact"

# --- 5. SIGINT: send what the ring holds, then exit, though the tracer stays ---
start_client "$T/c5.err"
wait_in "$T/c5.err" "waiting for a tracer" > /dev/null
stop_client
timeout 60 "$RW" --linger-ms 20000 "$SHM" 4000 > "$T/rw5.out" &
RW5=$!
track_pid $RW5
wait_in "$T/rw5.out" "^ringwriter: generated 4000 written 4000 dropped 0$"
ok $? "a tracer wrote 4000 events and stays attached"
kill -INT $CLIENT
kill -CONT $CLIENT
wait_client
ok $? "SIGINT: trace_stream exits 0 while the tracer is still attached"
grep -Eq "^trace_stream: forwarded 4000 events in 1 chunks .*, dropped 0$" "$T/c5.err"
ok $? "after sending the 4000 events the ring held"
shm_gone
ok $? "ring removed"
kill $RW5 2>/dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 5 closed" > /dev/null
is "$($CHECK "$T/out/trace.stream.5.0.bin" | sed -n 2p)" "events=4000 mismatched=0 markers= tail=0" \
    "serve has all 4000"

# --- 6. server gone while streaming, reconnection off (--retry 0) ---
"$CS" serve --host 127.0.0.1 --port 0 --out "$T/out2" > "$T/serve2.log" 2>&1 &
S2=$!
track_pid $S2
wait_in "$T/serve2.log" "listening on" > /dev/null
PORT2=$(sed -n '1s/.*listening on [0-9.]*:\([0-9]*\),.*/\1/p' "$T/serve2.log")
TS_ARGS="--retry 0" PORT=$PORT2 start_client "$T/c6.err"
wait_in "$T/c6.err" "waiting for a tracer" > /dev/null
timeout 60 "$RW" --linger-ms 20000 "$SHM" 1000 > "$T/rw6.out" &
RW6=$!
track_pid $RW6
wait_in "$T/serve2.log" "conn 1 from" > /dev/null
# serve has read the 1000 events before it dies: killed with bytes unread,
# its socket would reset, and what was sent would be lost (exit 3, not 1)
for _ in $(seq 300); do
    $CHECK "$T"/out2/trace.stream.1.*.bin 2> /dev/null | tail -n 1 | grep -q "^events=1000 " && break
    sleep 0.1
done
kill -KILL $S2
wait $S2 2>/dev/null
wait_client
is $? 1 "trace_stream --retry 0 exits 1 when the server goes away"
is "$(tail -n 1 "$T/c6.err")" "trace_stream: the server closed the connection" "with a clear message"
shm_gone
ok $? "ring removed"
kill $RW6 2>/dev/null

# --- 7. nobody listening (the port of the server just killed) ---
timeout 30 "$TS" --retry 0 "$SHM" 127.0.0.1 "$PORT2" 2> "$T/c7.err"
is $? 1 "trace_stream --retry 0 exits 1 at once when it cannot connect"
is "$(tail -n 1 "$T/c7.err")" "trace_stream: cannot connect to 127.0.0.1:$PORT2: Connection refused" \
    "with a clear message"
shm_gone
ok $? "and leaves no ring behind"
# By default it keeps trying (--retry), as after a cut; no tracer came, nothing was lost: 1.
timeout 30 "$TS" --retry 1 "$SHM" 127.0.0.1 "$PORT2" 2> "$T/c7b.err"
is $? 1 "trace_stream --retry 1 gives up after a second of refused connects and exits 1"
is "$(sed -n '2p;$p' "$T/c7b.err")" "trace_stream: cannot connect to 127.0.0.1:$PORT2: Connection refused
trace_stream: gave up reconnecting to 127.0.0.1:$PORT2 after 1 s; 0 events lost: 0 left in the ring, 0 discarded, 0 dropped by the tracers while disconnected" \
    "saying it could not connect, and at the end that nothing was lost"

# --- 8. a segment that is not a ring is reported and left alone ---
BAD=/cs-test-notring-$$
track_shm $BAD
head -c 4096 /dev/zero > "/dev/shm$BAD"
timeout 30 "$TS" "$BAD" 127.0.0.1 "$SERVE_PORT" 2> "$T/c8.err"
is $? 1 "trace_stream refuses a segment without the ring magic"
is "$(tail -n 1 "$T/c8.err")" "trace_stream: $BAD is not a callsight ring (no TKSHM magic)" "with a clear message"
[ -e "/dev/shm$BAD" ]
ok $? "and does not remove what is not its ring"
perl -e 'print pack("a8 L< L< x80", "TKSHM", 2, 3000), "\0" x 4000' > "/dev/shm$BAD"
timeout 30 "$TS" "$BAD" 127.0.0.1 "$SERVE_PORT" 2> "$T/c8b.err"
is $? 1 "trace_stream refuses a ring whose capacity is not whole records"
is "$(tail -n 1 "$T/c8b.err")" "trace_stream: broken ring $BAD: capacity is not a multiple of 32 of at least the minimum" \
    "with a clear message"

# --- 9. a ring whose head runs ahead of its tail by more than its capacity ---
perl -e 'print pack("a8 L< L< x80", "TKSHM", 2, 4096), "\0" x 4096' > "/dev/shm$BAD"
SHM=$BAD start_client "$T/c9.err"
wait_in "$T/c9.err" "waiting for a tracer" > /dev/null
perl -e 'open(my $f, "+<", $ARGV[0]) or die; seek($f, 24, 0); print $f pack("Q<", 1 << 40); close $f' "/dev/shm$BAD"
wait_client
is $? 1 "trace_stream stops at a broken ring"
is "$(tail -n 1 "$T/c9.err")" "trace_stream: broken ring $BAD: head 1099511627776, tail 0, capacity 4096" \
    "and says what is wrong with it"

# --- usage ---
"$TS" --help | grep -q -- "--level N"
ok $? "trace_stream --help describes the options"
"$TS" 2> /dev/null
is $? 2 "trace_stream without arguments is a usage error"

kill -INT "$SERVE_PID"
wait "$SERVE_PID"
is $? 0 "serve exits 0"
exit $_failed
