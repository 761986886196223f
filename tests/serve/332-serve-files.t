#!/usr/bin/env bash
# callsight serve's files: segment rotation at --seg-mb, the per-connection
# --max-mb budget (budget marker, the rest read and counted), connection ids
# that never repeat (restarts, two servers in one directory), a clean stop
# on SIGTERM mid-stream, and the periodic status line (silenced by --quiet).
source "$(dirname "$0")/../lib/lib.sh"
plan 32

need_tools streamgen
GEN=$TOOLBIN/streamgen
CHECK="perl $TESTS/tools/tracecheck.pl"
P=127.0.0.1:[0-9]+

gen() { timeout 60 "$GEN" "$@" 127.0.0.1 "$SERVE_PORT"; }
stop() { # stop SIGNAL: stop serve, return its exit status
    kill "-$1" "$SERVE_PID"
    for _ in $(seq 200); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
    wait "$SERVE_PID"
}

# --- rotation: 100000 events at 1 MiB per segment ---
start_serve "$T/rot" --seg-mb 1
gen --events 100000 --chunk 1000
ok $? "100000 events sent"
wait_in "$SERVE_LOG" "conn 1 closed" > /dev/null
grep -Eq "^callsight serve: conn 1 closed \($P\): 100000 events, 4 segments, 3200320 bytes written, [0-9]+ bytes received, dropped 0$" "$SERVE_LOG"
ok $? "close line: 100000 events in 4 segments"
files="$T/rot/trace.stream.1.0.bin $T/rot/trace.stream.1.1.bin $T/rot/trace.stream.1.2.bin $T/rot/trace.stream.1.3.bin"
is "$(stat -c %s $files | tr '\n' ' ')" "1048560 1048560 1048560 54640 " \
    "segments fill to whole records within 1 MiB (80 + 32765 x 32), the last holds the rest"
$CHECK $files > "$T/rot.chk"
is "$(grep -c "^header .* pid=1 seq=[0-3] reserved=0$" "$T/rot.chk")" 4 "each segment has its own header, pid 1, seq 0..3"
is "$(sed -n 's/.* seq=\([0-9]*\) .*/\1/p' "$T/rot.chk" | tr '\n' ' ')" "0 1 2 3 " "in order"
is "$(tail -n 1 "$T/rot.chk")" "events=100000 mismatched=0 markers= tail=0" \
    "read in seq order, the segments hold exactly the 100000 events"
stop INT; is $? 0 "serve exits 0"

# --- budget: --max-mb 1 ---
start_serve "$T/bud" --max-mb 1
gen --events 100000 --chunk 1000 --notice 42
ok $? "the client sends all 100000 events: serve keeps reading past the budget"
wait_in "$SERVE_LOG" "conn 1 closed" > /dev/null
is "$(grep -c "^callsight serve: conn 1: budget of 1 MB reached; discarding the rest of the stream$" "$SERVE_LOG")" 1 \
    "serve says once that the budget is reached"
grep -Eq "^callsight serve: conn 1 closed \($P\): 32764 events, 1 segment, 1048560 bytes written, [0-9]+ bytes received, dropped 42, 67236 events discarded \(budget reached\)$" "$SERVE_LOG"
ok $? "close line: 32764 written, 67236 discarded and counted, the device's 42 drops"
is "$(grep -c "^callsight serve: conn 1: device dropped 42 events (cumulative)$" "$SERVE_LOG")" 1 \
    "a notice after the budget is still printed"
is "$(stat -c %s "$T/bud/trace.stream.1.0.bin")" 1048560 "the file stays within 1 MiB"
is "$($CHECK "$T/bud/trace.stream.1.0.bin" | tail -n 1)" "events=32764 mismatched=0 markers=1:1048576 tail=0" \
    "it holds the first 32764 events, exact, then the budget marker (code 1, payload 1048576)"
stop TERM; is $? 0 "serve exits 0 on SIGTERM"

# --- ids never repeat: a restart into the same directory ---
start_serve "$T/bud"
gen --events 10
wait_in "$SERVE_LOG" "conn 2 closed" > /dev/null
ok $? "after a restart the next connection is conn 2"
is "$($CHECK "$T/bud/trace.stream.2.0.bin" | head -n 1 | sed 's/.* pid=/pid=/')" "pid=2 seq=0 reserved=0" \
    "its file is trace.stream.2.0.bin with pid 2"
stop INT

# ... counting on from the highest id in the directory, ignoring other names;
# two servers sharing a directory claim distinct ids (O_EXCL).
mkdir -p "$T/ids"
: > "$T/ids/trace.stream.41.3.bin"
: > "$T/ids/trace.stream.99x.0.bin"
: > "$T/ids/trace.stream.500.bin"
start_serve "$T/ids"
A_PID=$SERVE_PID A_PORT=$SERVE_PORT A_LOG=$SERVE_LOG
start_serve "$T/ids"
B_PID=$SERVE_PID B_PORT=$SERVE_PORT B_LOG=$SERVE_LOG
timeout 30 "$GEN" --events 10 127.0.0.1 "$A_PORT" && wait_in "$A_LOG" "conn 42 closed" > /dev/null
ok $? "first server: the next id after the highest in the directory (41) is 42"
timeout 30 "$GEN" --events 10 127.0.0.1 "$B_PORT" && wait_in "$B_LOG" "conn 43 closed" > /dev/null
ok $? "second server in the same directory skips 42 and takes 43"
timeout 30 "$GEN" --events 10 127.0.0.1 "$A_PORT" && wait_in "$A_LOG" "conn 44 closed" > /dev/null
ok $? "first server then skips 43 and takes 44"
is "$(cd "$T/ids" && ls trace.stream.4[2-4].0.bin | tr '\n' ' ')" \
    "trace.stream.42.0.bin trace.stream.43.0.bin trace.stream.44.0.bin " "one file per id"
SERVE_PID=$A_PID; stop INT
SERVE_PID=$B_PID; stop INT

# paused_gen EVENTS CHUNKS: the generator sends EVENTS in chunks of 1000 to
# serve and pauses after CHUNKS of them until $T/go exists; returns once
# it is paused.  Sets G.
paused_gen() {
    timeout 60 "$GEN" --events "$1" --chunk 1000 --pause-after "$2" --paused-file "$T/paused" \
        --resume-file "$T/go" 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1 &
    G=$!
    track_pid $G
    wait_file "$T/paused"
}

# --- SIGTERM while a stream is open: what arrived is written, files closed, exit 0 ---
start_serve "$T/term"
paused_gen 5000 2
wait_size "$T/term/trace.stream.1.0.bin" 64080
is "$(stat -c %s "$T/term/trace.stream.1.0.bin")" 64080 "two chunks (2000 events) arrived"
stop TERM; is $? 0 "SIGTERM with a connection open: serve exits 0"
grep -Eq "^callsight serve: conn 1 closed \($P\): 2000 events, 1 segment, 64080 bytes written, [0-9]+ bytes received, dropped 0 \(server stopping\)$" "$SERVE_LOG"
ok $? "the connection is closed cleanly and says why"
is "$($CHECK "$T/term/trace.stream.1.0.bin" | tail -n 1)" "events=2000 mismatched=0 markers= tail=0" \
    "its file is whole: the 2000 events"
is "$(tail -n 1 "$SERVE_LOG")" "callsight serve: stopped after 1 connection" "serve's last line"
touch "$T/go"
wait $G 2>/dev/null

# --- status lines: a stream that pauses 2.5 s gets one; --quiet has none ---
status_run() { # status_run DIR [serve args]: 6000 events with a pause after 3000
    rm -f "$T/paused" "$T/go"
    start_serve "$@"
    paused_gen 6000 3
    sleep 2.5
    touch "$T/go"
    wait $G
    wait_in "$SERVE_LOG" "conn 1 closed" > /dev/null
    stop INT
}
status_run "$T/status"
grep -Eq "^callsight serve: conn 1: [0-9]+ events/s, 4000 events, compression [0-9]+\.[0-9]x, dropped 0 so far$" "$SERVE_LOG"
ok $? "a status line while the connection streams: rate, events, compression, drops"
status_run "$T/quiet" --quiet
is "$(grep -c "events/s" "$SERVE_LOG")" 0 "--quiet: no status lines"
grep -Eq "^callsight serve: conn 1 closed \($P\): 6000 events" "$SERVE_LOG"
ok $? "--quiet still reports the connection"

# --- silent connections never keep a stream out: 65 from one address hold
# at most 16 places (--max-per-peer), the stalest making room for the next ---
start_serve "$T/cap"
fds=""
for _ in $(seq 65); do exec {fd}<>"/dev/tcp/127.0.0.1/$SERVE_PORT"; fds="$fds $fd"; done
gen --events 10 && wait_in "$SERVE_LOG" "conn 1 closed \($P\): 10 events" > /dev/null
ok $? "65 silent connections from the stream's own address do not keep it out"
for fd in $fds; do exec {fd}<&-; done
stop INT
is "$(tail -n 1 "$SERVE_LOG")" \
    "callsight serve: stopped after 66 connections (0 more refused; 50 closed to make room before sending events)" \
    "the 49 stalest silent ones, then one more for the stream, made room; none was refused"

# --- the output directory is created, with parents ---
"$CS" serve --host 127.0.0.1 --port 0 --out "$T/new/deep/dir" > "$T/mk.log" 2>&1 &
MK=$!
track_pid $MK
wait_in "$T/mk.log" "listening on" > /dev/null
[ -d "$T/new/deep/dir" ]
ok $? "--out DIR is created with its parents"
grep -Eq "^callsight serve: listening on 127\.0\.0\.1:[0-9]+, writing $T/new/deep/dir/$" "$T/mk.log"
ok $? "the first line says where it listens and writes"
kill -INT $MK
wait $MK
exit $_failed
