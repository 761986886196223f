#!/usr/bin/env bash
# While trace_stream cannot send (refused, cut, reconnecting) the ring keeps
# what the tracers write, and the next connection sends it; only once the
# ring is full do the writers drop new events, counted as device drops.
#   a. refused at start: serve comes up within --retry, after the traced
#      workload has ended; every event arrives, exact counts, exit 0;
#   b. a link cut with two chunks in flight (tests/tools/holdproxy.py
#      withholds them, then resets both sides): the gap is exactly those
#      records, as serve and analyze say; what the tracer writes during the
#      outage all arrives;
#   c. an outage longer than the ring holds: the ring keeps 2048 of 10000,
#      the writers' 7952 drops are counted exactly by trace_stream, serve
#      and analyze, and trace_stream exits 4 (events lost to the link);
#   d. SIGTERM while disconnected: it ends at once, says what stays in the
#      ring, exit 4.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 30

need_tools ringwriter
RW=$TOOLBIN/ringwriter
CHECK="perl $TESTS/tools/tracecheck.pl"
TS=$B/trace_stream
W=$B/examples/workload

# term_stream PID ERR STATUS WHAT LAST WHAT2: SIGTERM to trace_stream PID,
# which exits STATUS (checked as WHAT) with LAST as the last line of ERR,
# its chunk and byte counts aside (checked as WHAT2).
term_stream() {
    kill -TERM "$1"
    wait "$1"
    is $? "$3" "$4"
    is "$(tail -n 1 "$2" | sed 's/in [0-9]* chunks ([0-9]* bytes/in N chunks (N bytes/')" "$5" "$6"
}
# the events count of a tracecheck line
events_of() { sed -n 's/.*events=\([0-9]*\) .*/\1/p'; }

# --- a. refused at start, the workload ends before serve comes ---
PARAMS="4 25 12 64 8"
expect_counts $PARAMS > "$T/expect"
calls=$(awk '{s += $2} END {print s}' "$T/expect")
start_serve "$T/a" --quiet && stop_serve # a port that was free a moment ago: now nobody listens
PA=$SERVE_PORT
SHMA=/cs-test-outage-a-$$
track_shm $SHMA
TRACE_SHM_SIZE=$RING_WHOLE_RUN "$TS" --retry 20 "$SHMA" 127.0.0.1 "$PA" 2> "$T/a.err" &
ca=$!
track_pid $ca
wait_in "$T/a.err" "retrying for up to 20 s" > /dev/null
is "$(sed -n 2,3p "$T/a.err")" "trace_stream: cannot connect to 127.0.0.1:$PA: Connection refused
trace_stream: retrying for up to 20 s; meanwhile the ring keeps what the tracers write (once it is full they drop new events, counted)" \
    "refused at start: it says so and keeps trying within --retry"
TRACE_ENABLE=1 TRACE_SHM=$SHMA TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" $PARAMS > /dev/null
ok $? "the workload runs and ends while nobody listens"
is "$(od -An -tu8 -j32 -N16 "/dev/shm$SHMA" | tr -s ' ' | sed 's/^ //')" "0 0" \
    "the ring holds it all, untaken (tail 0), nothing dropped"
restart_serve "$PA" "$T/a" --quiet
wait $ca
is $? 0 "serve comes up within --retry: trace_stream sends the ring and exits 0"
grep -qx "trace_stream: connected to 127.0.0.1:$PA (connection 1); lost to the link so far: 0 events discarded, 0 dropped by the tracers while disconnected" "$T/a.err"
ok $? "it says it connected, and that the link cost nothing"
fwd=$(sed -n 's/^trace_stream: forwarded \([0-9]*\) events in [0-9]* chunks ([0-9]* bytes on the wire), dropped 0$/\1/p' "$T/a.err")
wait_serve_closed 1
stop_serve
# the tracers may have waited for the ring's lock (TRACE_SHM_WAIT_US): serve sums that at the end
grep -Eq "^callsight serve: conn 1 closed \(127.0.0.1:[0-9]+\): $fwd events, 1 segment, .* dropped 0(, tracers waited [0-9.]+ ms for the ring in [0-9]+ flushes)?$" "$SERVE_LOG"
ok $? "serve received the $fwd records trace_stream forwarded, dropped 0"
"$CS" analyze "$T/a" --exe "$W" --top 0 > "$T/a.txt" 2>&1
h=$(head -n 1 "$T/a.txt"); diag "$h"
is "$(field events "$h") $(field dropped "$h") $(field unmatched_exits "$h")" "$((2 * calls)) 0 0" \
    "analyze: all $((2 * calls)) events, none dropped, none unmatched"
exact_calls "$T/a.txt"
ok $? "every function's exact call count"

# --- b. a cut with two chunks in flight ---
SHMB=/cs-test-outage-b-$$
track_shm $SHMB
start_serve "$T/b" --quiet
mkdir "$T/ctl"
python3 "$TESTS/tools/holdproxy.py" "$T/proxy.port" "$SERVE_PORT" "$T/ctl" &
track_pid $!
wait_file "$T/proxy.port"
PB=$(cat "$T/proxy.port")
TRACE_SHM_SIZE=$((1048576 + 96)) stream_bg "$T/b.err" --retry 20 "$SHMB" 127.0.0.1 "$PB"
cb=$TS_PID
ringwriter_bg --linger-ms 30000 "$SHMB" 1000
F0=$T/b/trace.stream.1.0.bin F1=$T/b/trace.stream.1.1.bin
wait_size "$F0" 32144
is "$(stat -c %s "$F0")" 32144 "the first 1000 events reached serve"
touch "$T/ctl/hold"
timeout 30 "$RW" --first 1000 --batch 1000 "$SHMB" 1000 > /dev/null
for _ in $(seq 500); do [ "$(cat "$T/ctl/held" 2>/dev/null)" = 1000 ] && break; sleep 0.02; done
timeout 30 "$RW" --first 2000 --batch 1000 "$SHMB" 1000 > /dev/null
for _ in $(seq 500); do [ "$(cat "$T/ctl/held" 2>/dev/null)" = 2000 ] && break; sleep 0.02; done
is "$(cat "$T/ctl/held") $(ring_used $SHMB)" "2000 0" "2000 more events left the ring and sit in the link"
touch "$T/ctl/cut"
wait_in "$T/b.err" "reconnecting for up to 20 s" > /dev/null
# serve opens the new connection's file, and says how it resumed, at its first events
timeout 30 "$RW" --first 3000 "$SHMB" 500 > /dev/null
wait_in "$SERVE_LOG" "resumed" > /dev/null
grep -qx "callsight serve: conn 1: stream [0-9a-f]\{16\} resumed (connection 2): 2000 events lost in the gap (0 discarded on the device while disconnected, 2000 lost in flight)" "$SERVE_LOG"
ok $? "serve: the gap is exactly the 2000 in flight"
wait_size "$F1" $((80 + 502 * 32))
term_stream $cb "$T/b.err" 0 \
    "SIGTERM: trace_stream sends the rest and exits 0 (what a cut loses in flight only serve can count)" \
    "trace_stream: forwarded 3500 events in N chunks (N bytes on the wire), dropped 0, 2 connections, lost to the link: 0 discarded, 0 dropped by the tracers while disconnected" \
    "its last line: 3500 handed to the link, 2 connections, nothing lost on the device"
wait_serve_closed 2
stop_serve
is "$($CHECK "$F0" | tail -n 1)" "events=1000 mismatched=0 markers=23:1000 tail=0" "segment 0: 1000 events, then the cut"
is "$($CHECK --first 3000 "$F1" | tail -n 1)" "events=500 mismatched=0 markers=24:2000,19:2000 tail=0" \
    "segment 1: resumed with the gap of 2000, then the 500 after, in order"
"$CS" analyze "$T/b" --exe "$RW" > "$T/b.txt" 2> "$T/b.an.err"
is "$?:$(cat "$T/b.an.err") $(head -n 1 "$T/b.txt" | sed 's/.*\(events=[0-9]*\) .*\(dropped=[0-9]*\)$/\1 \2/')" \
    "0: events=1500 dropped=2000" "analyze: 1500 arrived, the gap's 2000 counted as dropped, as serve says"
is "$(grep -c -x -e 'note: stream 1: stream gap: 2000 events lost in transit' \
    -e 'note: stream 1: stream resumed 1 time(s) after its connection was cut' "$T/b.txt")" 2 \
    "analyze notes the gap of 2000 and the resume"

# --- c. an outage longer than the ring holds ---
SHMC=/cs-test-outage-c-$$
track_shm $SHMC
start_serve "$T/c" --quiet
PC=$SERVE_PORT
TRACE_SHM_SIZE=$((65536 + 96)) stream_bg "$T/c.err" --retry 20 "$SHMC" 127.0.0.1 "$PC"
cc_=$TS_PID
ringwriter_bg --linger-ms 30000 "$SHMC" 1000
G0=$T/c/trace.stream.1.0.bin G1=$T/c/trace.stream.1.1.bin
wait_size "$G0" 32144
kill_serve
wait_in "$T/c.err" "reconnecting for up to 20 s" > /dev/null
timeout 30 "$RW" --first 1000 "$SHMC" 10000 > "$T/c.rw"
is "$(cat "$T/c.rw") $(ring_used $SHMC)" "ringwriter: generated 10000 written 2048 dropped 7952 65536" \
    "serve down: the 64 KiB ring keeps 2048 of 10000, the writer drops 7952 (counted)"
restart_serve "$PC" "$T/c" --quiet
wait_in "$T/c.err" "reconnected to 127.0.0.1:$PC" > /dev/null
is "$(grep "reconnected to" "$T/c.err")" \
    "trace_stream: reconnected to 127.0.0.1:$PC (connection 2); lost to the link so far: 0 events discarded, 7952 dropped by the tracers while disconnected" \
    "trace_stream reconnects and says what the outage cost"
wait_size "$G1" $((80 + 2050 * 32))
term_stream $cc_ "$T/c.err" 4 \
    "trace_stream exits 4: events were lost because the connection was cut" \
    "trace_stream: forwarded 3048 events in N chunks (N bytes on the wire), dropped 7952, 2 connections, lost to the link: 0 discarded, 7952 dropped by the tracers while disconnected" \
    "its last line: the 3048 the ring held, 7952 dropped while disconnected"
wait_serve_closed 1
stop_serve
grep -qx "callsight serve: conn 1: stream [0-9a-f]\{16\} resumed (connection 2): 0 events lost in the gap (0 discarded on the device while disconnected, 0 lost in flight)" "$SERVE_LOG" &&
    grep -qx "callsight serve: conn 1: device dropped 7952 events (cumulative)" "$SERVE_LOG" &&
    grep -Eq "^callsight serve: conn 1 closed \(127.0.0.1:[0-9]+\): 2048 events, .*, dropped 7952$" "$SERVE_LOG"
ok $? "the restarted serve: no gap, the device's 7952 drops, 2048 events on this connection"
is "$($CHECK --first 1000 "$G1" | tail -n 1)" "events=2048 mismatched=0 markers=24:0,18:7952 tail=0" \
    "segment 1: resumed without a gap, the 2048 the ring kept, in order, then the drop count"
"$CS" analyze "$T/c" --exe "$RW" > "$T/c.txt" 2> "$T/c.an.err"
is "$?:$(cat "$T/c.an.err") $(head -n 1 "$T/c.txt" | sed 's/.*\(events=[0-9]*\) .*\(dropped=[0-9]*\)$/\1 \2/')" \
    "0: events=3048 dropped=7952" "analyze: 3048 arrived, 7952 dropped: 11000 generated"
e0=$($CHECK "$G0" | tail -n 1 | events_of); e1=$($CHECK "$G1" | tail -n 1 | events_of)
is $((e0 + e1 + 7952)) 11000 "received ($e0 + $e1) + dropped (7952) = generated (11000)"

# --- d. SIGTERM while disconnected ---
SHMD=/cs-test-outage-d-$$
track_shm $SHMD
start_serve "$T/d" --quiet
stream_bg "$T/d.err" --retry 20 "$SHMD" 127.0.0.1 "$SERVE_PORT"
cd_=$TS_PID
ringwriter_bg --linger-ms 30000 "$SHMD" 100
wait_in "$T/d.err" "tracer attached" > /dev/null
wait_size "$T/d/trace.stream.1.0.bin" $((80 + 101 * 32))
kill_serve
wait_in "$T/d.err" "reconnecting for up to 20 s" > /dev/null
timeout 30 "$RW" --first 100 "$SHMD" 500 > /dev/null
kill -TERM $cd_
for _ in $(seq 250); do kill -0 $cd_ 2>/dev/null || break; sleep 0.02; done
kill -0 $cd_ 2>/dev/null
ok $((! $?)) "SIGTERM while disconnected: trace_stream ends at once (within 5 s, not --retry's 20)"
wait $cd_
is $? 4 "and exits 4"
is "$(tail -n 1 "$T/d.err")" \
    "trace_stream: stopped while disconnected; 500 events lost: 500 left in the ring, 0 discarded, 0 dropped by the tracers while disconnected" \
    "saying exactly what is lost: the 500 the ring held"
[ ! -e "/dev/shm$SHMD" ]
ok $? "the ring is removed"
is "$(ls "$T/a" "$T/b" "$T/c" "$T/d" | grep -c '^trace\.stream')" 6 "no other files"
exit $_failed
