#!/usr/bin/env bash
# 357-serve-evict-stream.t - a stream in the middle of its first chunk
# keeps its place (issue 29).  With --max-per-peer 2, a stream whose first
# chunk (90 KB) crawls through a 20 KB/s link while six handshake-only
# connections come from its address: before, the stream counted as idle
# until its file opened, was closed mid-chunk to make room, and its line
# said only "cut"; now it holds its place from its first chunk's header and
# arrives whole.  An admitted connection that is closed to make room says
# so in its close line.
source "$(dirname "$0")/../lib/lib.sh"
plan 6
need_tools attack streamgen rateproxy

AT=$TOOLBIN/attack
CHECK="perl $TESTS/tools/tracecheck.pl"
events_in() { $CHECK "$1" | tail -n 1 | sed 's/.*events=\([0-9]*\) .*/\1/'; }

start_serve "$T/s" --max-per-peer 2
timeout 60 "$TOOLBIN/rateproxy" "$T/proxy.port" "$SERVE_PORT" 20000 > "$T/proxy.out" &
track_pid $!
wait_file "$T/proxy.port"
timeout 60 "$TOOLBIN/streamgen" --events 20000 --chunk 20000 127.0.0.1 "$(cat "$T/proxy.port")" &
gen=$!
track_pid $gen
sleep 1 # its handshake and first chunk header are through; its frame takes about 4 s
timeout 60 "$AT" --hold-ms 3000 hello 6 127.0.0.1 "$SERVE_PORT" > "$T/hello.out"
wait $gen
ok $? "a stream sends its 90 KB first chunk over 20 KB/s while six handshake-only connections come"
wait_serve_closed 1
grep -Eq '^callsight serve: conn 1 closed \(127\.0\.0\.1:[0-9]+\): 20000 events, 1 segment, 640080 bytes written, 90341 bytes received, dropped 0$' "$SERVE_LOG"
ok $? "the stream keeps its place and arrives whole: 20000 events"
is "$(events_in "$T/s/trace.stream.1.0.bin")" 20000 "its file holds them"
is "$(cat "$T/hello.out")" "attack: hello: 6 opened, 5 closed by the server" \
    "the handshake-only ones make room for each other: one held, five closed"

# One admitted, then a newer pair from its address: the first is closed
# to make room, and its line says so.
timeout 60 "$AT" --hold-ms 4000 hello 1 127.0.0.1 "$SERVE_PORT" > "$T/first.out" &
first=$!
track_pid $first
sleep 1
timeout 60 "$AT" --hold-ms 1000 hello 2 127.0.0.1 "$SERVE_PORT" > /dev/null
wait $first
is "$(cat "$T/first.out")" "attack: hello: 1 opened, 1 closed by the server" "the first is closed for the newer two"
stop_serve
grep -Eq '^callsight serve: connection from 127\.0\.0\.1:[0-9]+ closed before sending events: 105 bytes received in 1 chunk(; [^;]*)?; evicted: its place went to a newer connection \(--max-conns, --max-per-peer\)$' "$SERVE_LOG"
r=$?
ok $r "its close line says it was evicted, and which options give more places"
[ $r = 0 ] || sed 's/^/# /' "$SERVE_LOG"
