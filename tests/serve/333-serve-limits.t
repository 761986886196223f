#!/usr/bin/env bash
# serve's limits: --max-conns (extra connections are told and closed),
# --allow (others closed at once, logged), --min-free-mb (new connections
# refused while the out filesystem is low), and a full disk (tmpfs): that
# connection's file stops with a marker and never a half-written header,
# and serve goes on serving.
source "$(dirname "$0")/../lib/lib.sh"
plan 16
trap 'umount "$T/tiny" 2>/dev/null; umount "$T/tiny" 2>/dev/null; cleanup' EXIT

need_tools streamgen
GEN=$TOOLBIN/streamgen
CHECK="perl $TESTS/tools/tracecheck.pl"
P=127.0.0.1:[0-9]+
# --- --max-conns 1 ---
start_serve "$T/m" --max-conns 1 --quiet
timeout 60 "$GEN" --events 4000 --chunk 1000 --pause-after 2 --paused-file "$T/paused" \
    --resume-file "$T/go" 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1 &
g=$!
track_pid $g
wait_file "$T/paused" && wait_in "$SERVE_LOG" "conn 1 from"
ok $? "one connection streaming"
printf 'TKSTREAM\002\000\000\000\040\000\000\000' > "$T/hello"
head -c 48 /dev/zero >> "$T/hello"
msg=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$SERVE_PORT; cat '$T/hello' >&3; cat <&3")
echo "$msg" | grep -Eq "^callsight serve: connection from $P refused: 1 connections already streaming \(--max-conns\)$"
ok $? "the extra connection is told why at its handshake and closed: 1 connection already streaming"
grep -Eq "^callsight serve: connection from $P refused: 1 connections already streaming \(--max-conns\)$" "$SERVE_LOG"
ok $? "and serve logs it"
touch "$T/go"
wait $g
stop_serve
is "$($CHECK "$T/m/trace.stream.1.0.bin" | tail -n 1)" "events=4000 mismatched=0 markers= tail=0" \
    "the admitted connection is untouched: all 4000 events"

# serve_100 DIR REGEX SERVE-ARGS...: serve into DIR, a stream of 100 events
# sent to it, until its log has a line matching REGEX.
serve_100() {
    local out=$1 until=$2; shift 2
    start_serve "$out" "$@"
    timeout 30 "$GEN" --events 100 --chunk 100 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1
    wait_in "$SERVE_LOG" "$until"
}

# --- --allow ---
serve_100 "$T/a" "refused: not in --allow" --allow 10.0.0.0/8,fd00::/8 --quiet
grep -Eq "^callsight serve: connection from $P refused: not in --allow$" "$SERVE_LOG"
ok $? "a peer outside --allow is closed at once, with a log line"
is "$(ls "$T/a" | wc -l)" 0 "and gets no file"
stop_serve
serve_100 "$T/a2" "conn 1 closed" --allow 192.168.0.0/16,127.0.0.0/8 --quiet
is "$($CHECK "$T/a2/trace.stream.1.0.bin" | tail -n 1)" "events=100 mismatched=0 markers= tail=0" \
    "a peer inside --allow streams as usual"
stop_serve
grep -q "warning" "$SERVE_LOG"
is $? 1 "a loopback bind prints no warning"

# --- --min-free-mb above what the filesystem has ---
serve_100 "$T/f" "refused: less than" --min-free-mb 1073741824 --quiet
grep -Eq "^callsight serve: connection from $P refused: less than 1073741824 MB free in $T/f$" "$SERVE_LOG"
ok $? "--min-free-mb: a new connection is refused while the disk is low"
is "$(ls "$T/f" | wc -l)" 0 "and gets no file"
stop_serve

# --- disk full: a 64 KiB tmpfs ---
mkdir -p "$T/tiny"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k,mode=0750 tmpfs "$T/tiny" 2>/dev/null; then
    start_serve "$T/tiny" --min-free-mb 0 --quiet
    timeout 30 "$GEN" --events 20000 --chunk 1000 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1
    wait_in "$SERVE_LOG" "conn 1 closed"
    grep -q "^callsight serve: conn 1: writing events failed: No space left on device; discarding the rest of the stream" "$SERVE_LOG"
    ok $? "disk full: serve says so and stops that connection's file"
    timeout 30 "$GEN" --events 10 --chunk 10 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1
    wait_in "$SERVE_LOG" "connection from $P closed: error|conn 2 closed"
    kill -0 $SERVE_PID
    ok $? "and keeps serving the next connection"
    bad=0
    for f in "$T"/tiny/*.bin; do
        s=$(stat -c %s "$f"); [ "$s" -ge 80 ] && [ $(((s - 80) % 32)) = 0 ] || bad=1
    done
    is $bad 0 "every file has a whole header and whole records"
    stop_serve
    umount "$T/tiny"
    # --min-free-mb mid-stream: a 4 MiB tmpfs filled up to below 1 MiB free
    # while a connection is paused; its next chunk stops its file with a
    # disk-floor marker.
    mount -t tmpfs -o size=4m,mode=0750 tmpfs "$T/tiny"
    start_serve "$T/tiny" --min-free-mb 1 --quiet
    timeout 60 "$GEN" --events 5000 --chunk 1000 --pause-after 2 --paused-file "$T/p2" \
        --resume-file "$T/go2" 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1 &
    g=$!
    track_pid $g
    wait_file "$T/p2"
    head -c $((3 * 1024 * 1024 + 512 * 1024)) /dev/zero > "$T/tiny/filler" 2>/dev/null
    sleep 1.1 # serve looks at the free space at most once a second per connection
    touch "$T/go2"
    wait $g
    wait_in "$SERVE_LOG" "conn 1 closed"
    grep -q "^callsight serve: conn 1: free space in $T/tiny is below 1 MB or 1000 inodes; discarding the rest of the stream" "$SERVE_LOG"
    ok $? "disk low mid-stream: serve says so"
    grep -Eq "^callsight serve: conn 1 closed \($P\): 2000 events, .*, 3000 events discarded \(disk low\)$" "$SERVE_LOG"
    ok $? "the 2000 events before stay, the 3000 after are counted as discarded"
    is "$($CHECK "$T/tiny/trace.stream.1.0.bin" | tail -n 1)" "events=2000 mismatched=0 markers=2:1048576 tail=0" \
        "the file ends with the disk-floor marker"
    stop_serve
    umount "$T/tiny"
else
    for _ in 1 2 3 4 5 6; do skip "disk full: cannot mount a tmpfs here (not root)"; done
fi
exit $_failed
