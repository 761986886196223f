#!/usr/bin/env bash
# 335-serve-defaults.t - what serve's --help and docs/streaming.md promise,
# shown:
#   - its defaults: 0.0.0.0:9001, 4096 MB per connection in 256 MB segments,
#     64 connections (16 per address), a 300 s idle timeout, a 1024 MB
#     free-space floor.  Serve
#     runs with no options in a network namespace of its own (unshare -n),
#     so its port 9001 on every address is reachable by nothing at all;
#   - --idle-timeout cuts a client still waiting for its tracer (it has
#     sent no handshake yet); the client reconnects, and when the tracer
#     comes, offers the codec again, gets it, and streams every event.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 8

if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    unshare -n bash -c '
        "$1" serve --out "$2/def" > "$2/def.log" 2>&1 &
        p=$!
        for _ in $(seq 200); do [ "$(grep -c . "$2/def.log")" -ge 2 ] && break; sleep 0.02; done
        kill -INT $p; wait $p' _ "$CS" "$T"
    ok $? "serve with no options starts and stops cleanly (in its own network namespace)"
    is "$(sed -n 1p "$T/def.log")" "callsight serve: listening on 0.0.0.0:9001, writing $T/def/" \
        "default address 0.0.0.0:9001"
    is "$(sed -n 2p "$T/def.log")" \
        "callsight serve: limits: 4096 MB of files per connection in 256 MB segments, 65536 MB in all, at most 64 connections (16 per address), idle timeout 300 s, free-space floor 1024 MB and 1000 inodes, summary totals 64 MB in all, snapshot timeout 60 s" \
        "default limits: 4096 MB, 256 MB segments, 65536 MB in all, 64 connections, 16 per address, a 300 s idle timeout, 1024 MB and 1000 inodes floor, 64 MB of summary totals, a 60 s snapshot timeout"
else
    for _ in 1 2 3; do skip "defaults: needs root and unshare -n for a network namespace of its own"; done
fi

# --- the idle timeout and a client still waiting for its tracer ---
PARAMS="2 2 8 16 4"
calls=$(expect_counts $PARAMS | awk '{s += $2} END {print s}')
SHM=/cs-test-idle-$$
track_shm "$SHM"
start_serve "$T/out" --idle-timeout 2
start_trace_stream "$B/trace_stream" "$SHM"
client=$CLIENT_PID
for _ in $(seq 300); do grep -q 'idle: nothing received for 2 s' "$SERVE_LOG" && break; sleep 0.05; done
grep -q "^callsight serve: connection from 127.0.0.1:[0-9]* closed: error: reading the handshake failed: idle: nothing received for 2 s$" "$SERVE_LOG"
ok $? "serve cuts a client that has sent no handshake for --idle-timeout"
# The tracer comes once the client is connected again, so that this
# connection, not the ring kept across a reconnection (tests 439 and 445),
# carries the events.
for _ in $(seq 300); do grep -q '^trace_stream: reconnected' "$T/client.err" && break; sleep 0.02; done
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$B/examples/workload" $PARAMS > /dev/null
wait $client
ok $? "the client reconnected, streamed and exits 0"
grep -q '^trace_stream: reconnected to 127.0.0.1:' "$T/client.err" &&
    grep -q '^trace_stream: the server decodes coded chunks; sending them from now on$' "$T/client.err"
ok $? "after the cut it reconnects and offers the codec again, which serve acks"
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/out" --exe "$B/examples/workload" > "$T/a.txt" 2>&1
h=$(head -n 1 "$T/a.txt"); diag "$h"
is "$(field events "$h") $(field dropped "$h") $(field unmatched_exits "$h")" "$((2 * calls)) 0 0" \
    "every event arrived over the new connection"
grep -q '^trace_stream: [1-9][0-9]* of [0-9]* event chunks coded$' "$T/client.err"
ok $? "and went coded: $(grep 'event chunks coded' "$T/client.err")"
exit $_failed
