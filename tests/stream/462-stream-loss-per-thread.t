#!/usr/bin/env bash
# Which thread lost what, exactly, when no thread ever flushes again: the
# drain is stopped for the whole run of 25 workers through a 64 KiB ring,
# so every thread's later flushes find the ring full and none of them can
# say what it lost in a THREAD_LOST marker.  The ring's loss table
# (trace_shm.h) counts each thread's drops as they happen; trace_stream
# sends it in-band (TRACE_MARK_THREAD_DROPPED), and analyze's per-thread
# losses, in the text notes and in the JSON's threads, add up to the
# device's dropped count exactly, with no "not attributed" note.  The same
# with a ring the tracer made (before trace_stream started), and with more
# threads than the table has slots.  A ring in the
# format before the table (no block after the storage, as an older tracer
# or trace_stream makes it) gives today's output: the threads' markers
# only, and the note for the rest; so does a ring with the table that a
# tracer predating it writes.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 32
RING=65536
WL="8 25 12 64 8" # the workload's arguments: iterations, workers, sizes

# old_ring SHM: the segment as a ring maker before the loss table left it:
# the 96-byte header (TKSHM, version 2, capacity) and the storage, no more.
old_ring() {
    python3 - "$1" $RING <<'EOF'
import os, struct, sys
cap = (int(sys.argv[2]) - 96) // 32 * 32
fd = os.open("/dev/shm/" + sys.argv[1].lstrip("/"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.ftruncate(fd, 96 + cap)
os.pwrite(fd, struct.pack("=II", 2, cap), 8)
os.pwrite(fd, b"TKSHM\0\0\0", 0)
os.close(fd)
EOF
}

# scenario NAME HOW: the workload through a stopped drain; HOW is "client"
# (trace_stream makes the ring, then is stopped), "tracer" (the workload
# makes it and runs to the end before trace_stream starts) or "old" (an
# old-format ring made first).  Leaves the text and JSON reports, and
# trace_stream's stderr.
scenario() {
    local name=$1 how=$2 shm=/cs-test-lossthr-$1-$$ client
    track_shm "$shm"
    start_serve "$T/$name"
    [ "$how" = old ] && old_ring "$shm"
    if [ "$how" = tracer ]; then
        TRACE_SHM_SIZE=$RING TRACE_ENABLE=1 TRACE_SHM=$shm timeout 60 "$B/examples/workload" $WL >/dev/null
        ok $? "$name: the workload finishes with nobody draining its ring"
        TRACE_SHM_SIZE=$RING start_stoppable_stream "$B/trace_stream" "$shm" "$T/$name.err"
        client=$CLIENT_PID
    else
        TRACE_SHM_SIZE=$RING start_stoppable_stream "$B/trace_stream" "$shm" "$T/$name.err"
        client=$CLIENT_PID
        kill -STOP $client
        TRACE_ENABLE=1 TRACE_SHM=$shm timeout 60 "$B/examples/workload" $WL >/dev/null
        ok $? "$name: the workload finishes while the drain is stopped"
    fi
    wait_stream_client $client
    ok $? "$name: trace_stream drains what is left and exits 0"
    wait_serve_closed 1
    stop_serve
    "$CS" analyze "$T/$name" --exe "$B/examples/workload" --top 5 >"$T/$name.txt" 2>&1 &&
        "$CS" analyze "$T/$name" --exe "$B/examples/workload" --format json -o "$T/$name.json"
    ok $? "$name: analyze reads what arrived"
}

# losses NAME: sets DEV (trace_stream's dropped count) and GOT:
# "device_dropped thread_lost sum-of-threads'-lost threads-that-lost
# sum-of-the-text-notes" from the reports.
losses() {
    local name=$1 text
    DEV=$(sed -n 's/^trace_stream: forwarded .*, dropped \([0-9]*\).*/\1/p' "$T/$name.err")
    text=$(sed -n -e 's/^note: stream 1: .* lost \([0-9]*\) events (.*/\1/p' \
        -e "s/^note: stream 1: threads the ring's loss table had no slot for lost \([0-9]*\) events$/\1/p" \
        "$T/$name.txt" | awk '{s += $1} END {print s + 0}')
    GOT=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
s = r["sources"][0]
lost = [t.get("lost", 0) for t in r["threads"]]
print(s["device_dropped"], s["thread_lost"], sum(lost) + s.get("others_lost", 0), sum(1 for n in lost if n), sys.argv[2])' \
        "$T/$name.json" "$text")
}

# exact NAME: the checks of a ring with the loss table.
exact() {
    local name=$1 got calls
    calls=$(expect_counts $WL | awk '{s += $2} END {print s}')
    losses "$name"
    got=$GOT
    diag "$name: device_dropped thread_lost threads' sum threads-that-lost text-sum: $got"
    [ -n "$DEV" ] && [ "$DEV" -gt 0 ]
    ok $? "$name: trace_stream says it dropped events ($DEV)"
    read -r dev tl sum nthr text <<<"$got" # nthr: the caller's too
    is "$dev $tl $sum $text" "$DEV $DEV $DEV $DEV" \
        "$name: device_dropped, thread_lost, the JSON threads' losses and the text's per-thread notes all say $DEV"
    [ "$nthr" -ge "$2" ]
    ok $? "$name: at least $2 threads are named with their loss ($nthr threads lost events)"
    ! grep -q 'not attributed to a thread' "$T/$name.txt"
    ok $? "$name: no 'not attributed' note"
    is "$(field dropped "$(head -n 1 "$T/$name.txt")") $(($(field events "$(head -n 1 "$T/$name.txt")") + DEV))" \
        "$DEV $((2 * calls))" "$name: analyze's dropped is the device's; received + dropped = generated"
}

scenario client client
exact client 25

scenario tracer tracer
exact tracer 25

# More threads than the table has slots (252): 256 workers and main.  Each
# of 252 is named; the others' drops are theirs together, in one note.
WL="1 256 12 64 8"
scenario crowd client
exact crowd 252
n=$(sed -n "s/^note: stream 1: threads the ring's loss table had no slot for lost \([0-9]*\) events$/\1/p" "$T/crowd.txt")
others=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sources"][0].get("others_lost"))' "$T/crowd.json")
# (a thread without a slot that flushes again after its loss names its own
# markers' count, so more than 252 may be named; the sums are exact either way)
[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" = "$others" ] && [ "$nthr" -ge 252 ]
ok $? "crowd: 252 threads or more have a count of their own ($nthr), the rest ($n) is noted together, the JSON's others_lost too ($others)"
WL="8 25 12 64 8"

# The ring before the table: each thread's markers only (a thread whose
# later flushes never got in could not say), the rest noted, as before.
scenario old old
losses old
got=$GOT
diag "old: device_dropped thread_lost threads' sum threads-that-lost text-sum: $got"
read -r dev tl sum nthr text <<<"$got"
[ -n "$DEV" ] && [ "$DEV" -gt 0 ] && [ "$dev" = "$DEV" ] && [ "$tl" -lt "$DEV" ] && [ "$sum" = "$tl" ] &&
    [ "$text" = "$tl" ]
ok $? "old: the device's count is $DEV, the threads' own counts ($tl) less, the same in text and JSON"
grep -qx "note: stream 1: $((DEV - tl)) of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)" "$T/old.txt"
ok $? "old: analyze notes what no thread could attribute ($((DEV - tl)))"

# A tracer that predates the table writing a ring that has one: ringwriter
# plays it (it counts its drops in `dropped` only, and writes no markers).
# Nothing is attributed to a thread by mistake; the note says it all.
shm=/cs-test-lossthr-pre-$$
track_shm "$shm"
start_serve "$T/pre"
TRACE_SHM_SIZE=$RING start_stoppable_stream "$B/trace_stream" "$shm" "$T/pre.err"
client=$CLIENT_PID
kill -STOP $client
timeout 60 "$TOOLBIN/ringwriter" "$shm" 5000 >"$T/pre.rw"
wait_stream_client $client
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/pre" --exe "$TOOLBIN/ringwriter" --top 0 >"$T/pre.txt" 2>&1 &&
    "$CS" analyze "$T/pre" --exe "$TOOLBIN/ringwriter" --format json -o "$T/pre.json"
rwd=$(sed -n 's/^ringwriter: generated 5000 written [0-9]* dropped \([0-9]*\)$/\1/p' "$T/pre.rw")
losses pre
read -r dev tl sum nthr text <<<"$GOT"
[ -n "$rwd" ] && [ "$rwd" -gt 0 ]
is "$DEV $dev $tl $sum $nthr $text" "$rwd $rwd 0 0 0 0" \
    "pre: the ring's $rwd drops are the device's, and no thread is given any of them"
grep -qx "note: stream 1: $rwd of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)" "$T/pre.txt"
ok $? "pre: analyze notes them all as not attributed"
exit $_failed
