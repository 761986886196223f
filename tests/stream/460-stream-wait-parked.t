#!/usr/bin/env bash
# 460-stream-wait-parked.t - a trace_stream that waits for its tracer is
# never cut and never churns (issue 30).  A handshake needs the tracer's
# calibration, and serve closes a connection without one after 10 s:
# before, a client waiting 12 s was cut and reconnected ("reconnecting",
# "reconnected" lines, and one serve line every 10 s).  Now it checks the
# server once, closes that connection itself after 5 s, and connects when
# the tracer attaches: after 12 s of waiting, its stderr and serve's log
# each have one line about it, and the program's events all arrive.
source "$(dirname "$0")/../lib/lib.sh"
plan 5

WL=$B/examples/workload
SHM=/cs-test-parked-$$
track_shm "$SHM"
TRACE_ENABLE=1 TRACE_DIR="$T/files" "$WL" 2 3 10 16 4 > /dev/null
want=$(field events "$("$CS" analyze "$T/files" --exe "$WL" --top 0 | head -n 1)")

start_serve "$T/s"
stream_bg "$T/ts.err" "$SHM" 127.0.0.1 "$SERVE_PORT"
sleep 12 # past serve's 10 s handshake deadline
is "$(grep -v '^trace_stream: created ring' "$T/ts.err")" "trace_stream: connected to 127.0.0.1:$SERVE_PORT
trace_stream: waiting for a tracer on $SHM" "12 s of waiting: trace_stream said it made the ring, connected and waits, nothing more"
is "$(grep -c '^callsight serve: connection from' "$SERVE_LOG")" 1 \
    "serve: one line, for the connection that checked it is there"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$WL" 2 3 10 16 4 > /dev/null
wait_stream_client "$TS_PID"
ok $? "then the program runs, and trace_stream exits 0"
wait_serve_closed 1
stop_serve
is "$(field events "$("$CS" analyze "$T/s" --exe "$WL" --top 0 | head -n 1)")" "$want" \
    "every event arrived: $want, as in file mode"
is "$(grep -c 'reconnect' "$T/ts.err")" 0 "trace_stream never reconnected"
