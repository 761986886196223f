#!/usr/bin/env bash
# callsight serve against malformed streams: while one good stream is open
# (paused halfway), every kind of broken client connects in turn.  Each must
# close only its own connection with a one-line reason, keep what it had
# written valid (events plus a stream-gap marker), allocate no file before a
# valid handshake, and leave the good stream's file with exactly the events
# sent.  Protocol bytes come from tests/tools/streamgen.c.
source "$(dirname "$0")/../lib/lib.sh"
plan 39

need_tools streamgen
GEN=$TOOLBIN/streamgen
CHECK="perl $TESTS/tools/tracecheck.pl"
HEADER_WANT="header magic=MLTRACE version=2 event_size=32 header_size=80 flags=1 load_bias=4096 tick_hz=3000000000 t0_ticks=111 t0_ns=222 hook_ns=33"

# wait_log REGEX: wait (bounded) until serve's log has a line matching REGEX.
wait_log() {
    for _ in $(seq 500); do grep -Eq -- "$1" "$SERVE_LOG" && return 0; sleep 0.02; done
    diag "no line matching /$1/ in:"; sed 's/^/#   /' "$SERVE_LOG"
    return 1
}
count_log() { grep -Ec -- "$1" "$SERVE_LOG"; }

start_serve "$T/out"
ok $? "serve listens on a free port"
P=127.0.0.1:[0-9]+

# The good stream: 10 chunks of 1000 events, paused after the 5th until $T/go.
timeout 60 "$GEN" --events 10000 --chunk 1000 --pause-after 5 --paused-file "$T/paused" \
    --resume-file "$T/go" 127.0.0.1 "$SERVE_PORT" > "$T/good.out" 2>&1 &
GOOD=$!
track_pid $GOOD
wait_file "$T/paused" && wait_log "^callsight serve: conn 1 from $P$"
ok $? "good stream connected as conn 1 and paused mid-stream"

# A connection that is open but silent has no file; one that closes says so.
exec 3<>"/dev/tcp/127.0.0.1/$SERVE_PORT"
sleep 0.2
is "$(ls "$T/out" | wc -l)" 1 "a connection without a handshake allocates no file"
exec 3<&-
wait_log "^callsight serve: connection from $P closed before sending a handshake$"
ok $? "a connection closed before its handshake is reported as such"

# bad MODE REGEX: run one broken client to its end and expect exactly one line.
bad() {
    timeout 30 "$GEN" --events 100 --chunk 100 --bad "$1" 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1
    wait_log "$2" > /dev/null
    is "$(count_log "$2")" 1 "$1: closes its own connection, one line with the reason"
}

# Refused at the handshake: named by peer, no connection id, no file.
bad magic "^callsight serve: connection from $P closed: error: not a trace_stream client \(bad handshake magic\)$"
bad version "^callsight serve: connection from $P closed: error: unsupported protocol version 3 \(expected 2\)$"
bad event-size "^callsight serve: connection from $P closed: error: event size 24 not supported \(expected 32\)$"
bad trunc-handshake "^callsight serve: connection from $P closed: error: truncated handshake \(40 of 64 bytes\)$"

# Broken after a valid handshake and one good chunk of 100 events: conns 2-8.
CLOSED="closed \($P\): 100 events, 1 segment, 3312 bytes written, [0-9]+ bytes received, dropped 0;"
bad trunc-chunk "^callsight serve: conn 2 $CLOSED cut: connection ended inside chunk 2 \([0-9]+ of [0-9]+ bytes\)$"
bad oversize "^callsight serve: conn 3 $CLOSED error: chunk 2: raw_len 4194336 exceeds the limit of 4194304 bytes$"
bad corrupt "^callsight serve: conn 4 $CLOSED error: chunk 2: corrupt zstd frame: .+$"
bad not32 "^callsight serve: conn 5 $CLOSED error: chunk 2: events length 3201 is not a multiple of 32$"
bad lenmismatch "^callsight serve: conn 6 $CLOSED error: chunk 2: frame holds 3200 bytes, chunk header says 3168$"
bad trailing "^callsight serve: conn 7 $CLOSED error: chunk 2: [0-9]+ bytes after the zstd frame$"
bad bomb "^callsight serve: conn 8 $CLOSED error: chunk 2: frame decompresses to more than the 4096 bytes announced$"

# What the broken connections wrote stays valid: their 100 events, then the gap marker.
for id in 2 3 4 5 6 7 8; do
    $CHECK "$T/out/trace.stream.$id.0.bin" > "$T/bad$id.chk"
done
is "$(cat "$T"/bad[2-8].chk | grep -c '^events=100 mismatched=0 markers=19:0 tail=0$')" 7 \
    "each broken stream's file: its 100 events, exact, then one stream-gap marker"
is "$(ls "$T/out" | wc -l)" 8 "files only for connections with a valid handshake (1-8)"

# The good stream lived through all of it.
is "$(count_log "^callsight serve: conn 1 closed")" 0 "the good stream is still open"
kill -0 "$SERVE_PID" 2>/dev/null
ok $? "serve is still running"
touch "$T/go"
wait $GOOD
ok $? "the good stream's client sent everything and exits 0"
wait_log "^callsight serve: conn 1 closed" > /dev/null
is "$(count_log "^callsight serve: conn 1 closed \($P\): 10000 events, 1 segment, 320080 bytes written, [0-9]+ bytes received, dropped 0$")" 1 \
    "good stream closes normally: 10000 events, 320080 bytes"
$CHECK "$T/out/trace.stream.1.0.bin" > "$T/good.chk"
is "$(sed -n 1p "$T/good.chk")" "$HEADER_WANT pid=1 seq=0 reserved=0" \
    "good file header: calibration from the handshake, pid = connection id 1, seq 0"
is "$(sed -n 2p "$T/good.chk")" "events=10000 mismatched=0 markers= tail=0" \
    "good file holds exactly the 10000 events sent, in order, nothing else"
is "$(stat -c %s "$T/out/trace.stream.1.0.bin")" 320080 "good file is 80 + 10000 x 32 bytes"

# A notice and an unknown chunk type in a good stream.
timeout 30 "$GEN" --events 3000 --chunk 1000 --unknown-after 1 --notice 77 127.0.0.1 "$SERVE_PORT"
ok $? "a stream with an unknown chunk type and a drop notice is sent"
wait_log "^callsight serve: conn 9 closed" > /dev/null
is "$(count_log "^callsight serve: conn 9: warning: skipping chunk of unknown type 99 \(100 bytes\)")" 1 \
    "unknown chunk type: one warning"
is "$(count_log "^callsight serve: conn 9: device dropped 77 events \(cumulative\)$")" 1 "notice: printed"
is "$(count_log "^callsight serve: conn 9 closed \($P\): 3000 events, .*, dropped 77, 1 unknown chunks skipped$")" 1 \
    "close line counts the drop and the skipped chunk"
is "$($CHECK "$T/out/trace.stream.9.0.bin" | sed -n 2p)" "events=3000 mismatched=0 markers=18:77 tail=0" \
    "unknown chunk skipped, every event kept, drop recorded in-band (marker 18, payload 77)"

# Oversized lengths must not make serve allocate: a header announcing 4 GiB.
printf 'TKSTREAM\002\000\000\000\040\000\000\000' > "$T/huge"
head -c 48 /dev/zero >> "$T/huge"
printf '\000\000\000\000\377\377\377\377\377\377\377\377' >> "$T/huge"
timeout 10 bash -c "cat '$T/huge' > /dev/tcp/127.0.0.1/$SERVE_PORT"
wait_log "^callsight serve: connection from $P closed before sending events: 76 bytes received in 0 chunks; error: chunk 1: raw_len" > /dev/null
is "$(count_log "^callsight serve: connection from $P closed before sending events: 76 bytes received in 0 chunks; error: chunk 1: raw_len 4294967295 exceeds the limit of 4194304 bytes$")" 1 \
    "a chunk announcing 4 GiB is refused from its header, and no file is made for it"

# Unknown chunk types are bounded too.
printf 'TKSTREAM\002\000\000\000\040\000\000\000' > "$T/unk"
head -c 48 /dev/zero >> "$T/unk"
printf '\310\000\000\000\000\000\000\000\377\377\377\177' >> "$T/unk"
timeout 10 bash -c "cat '$T/unk' > /dev/tcp/127.0.0.1/$SERVE_PORT"
wait_log "^callsight serve: connection from $P closed before sending events: .*unknown chunk type 200" > /dev/null
is "$(count_log "^callsight serve: connection from $P closed before sending events: 76 bytes received in 0 chunks; error: chunk 1: unknown chunk type 200 is too long \(2147483647 bytes\)$")" 1 \
    "an unknown chunk type longer than any frame is refused"
is "$(ls "$T/out" | grep -c '^trace\.stream\.1[01]\.')" 0 "neither made a file"

# Stop: exit 0, files closed, nothing more.
kill -INT "$SERVE_PID"
for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
wait "$SERVE_PID"
is $? 0 "serve exits 0 on SIGINT"
is "$(tail -n 1 "$SERVE_LOG")" "callsight serve: stopped after 16 connections" "and says how many it served"
is "$(grep -c . "$SERVE_LOG")" 30 "serve printed nothing unexpected (30 lines: where, its limits, 27 about connections, stopped)"

# --help and usage errors.
"$CS" serve --help | grep -q -- '--max-mb N'
ok $? "serve --help describes the options"
"$CS" serve --port 70000 2> "$T/usage.err"
is $? 2 "a bad --port is a usage error (exit 2)"
is "$(cat "$T/usage.err")" "callsight serve: --port needs a number from 0 to 65535" "with a clear message"
"$CS" serve --bogus 2> /dev/null
is $? 2 "an unknown option is a usage error"
exit $_failed
