#!/usr/bin/env bash
# The ring's two versions (trace_shm.h) and what a version-3 ring promises
# when a writer dies in the middle of its copy:
#   a. trace_stream makes version 2 unless asked (tracers that predate 3
#      need it); --ring-version 3 makes the newer, and this tree's tracer
#      writes it: exact counts;
#   b. a version-2 ring a tracer made first (another agent's tracer, or
#      this tree's) is read as it is: exact counts;
#   c. a version neither side knows is refused by both, in one clear line,
#      and the tracer writes files instead (as one that knows only version 2
#      does with a version-3 ring);
#   d. a tracer that reserved a batch and died before committing it
#      (ringwriter --abandon) holds up neither the other writer nor the
#      reader: once the reader finds the writer gone it skips the batch,
#      counts its events as dropped and says so; everything else arrives,
#      exact, and trace_stream ends (exit 3: a tracer died attached);
#   e. the default ring: version 2 whose writers of this tree reserve and
#      commit (TRACE_SHM_FEATURE_COMMIT) while older ones copy under the
#      lock: plain records and committed batches read in order, and this
#      tree's tracer beside one built as version 2's, exact.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 28

need_tools ringwriter
RW=$TOOLBIN/ringwriter
TS=$B/trace_stream
W=$B/examples/workload
PARAMS="3 5 10 16 4"
calls=$(expect_counts $PARAMS | awk '{s += $2} END {print s}')
P=127.0.0.1:[0-9]+

# all_events WHAT: serve's files hold the workload's every event, none
# dropped or unmatched; then they go, for the next part
all_events() {
    "$CS" analyze "$T/s" --exe "$W" --top 0 > "$T/an.txt" 2>&1
    local h
    h=$(head -n 1 "$T/an.txt"); diag "$h"
    is "$(field events "$h") $(field dropped "$h") $(field unmatched_exits "$h")" "$((2 * calls)) 0 0" "$1"
    rm -f "$T"/s/trace.stream.*
}

start_serve "$T/s" --quiet
ok $? "serve listens"

# --- a. --ring-version 3 with this tree's tracer (2 is the default) ---
SHMA=/cs-test-ringv-a-$$
track_shm $SHMA
TRACE_SHM_SIZE=$RING_WHOLE_RUN timeout 60 "$TS" --ring-version 3 "$SHMA" 127.0.0.1 "$SERVE_PORT" 2> "$T/a.err" &
ca=$!
track_pid $ca
wait_in "$T/a.err" "waiting for a tracer" > /dev/null
is "$(sed -n 1p "$T/a.err")" "trace_stream: created ring $SHMA (67108768 bytes, version 3)" \
    "--ring-version 3: it says it made a version-3 ring"
is "$(od -An -tu4 -j8 -N4 "/dev/shm$SHMA" | tr -d ' ')" 3 "the ring header says version 3"
TRACE_ENABLE=1 TRACE_SHM=$SHMA TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" $PARAMS > /dev/null
ok $? "the workload runs traced into it"
wait $ca
ok $? "trace_stream drains it and exits 0"
wait_serve_closed 1
all_events "analyze: all $((2 * calls)) events through the version-3 ring, none dropped, none unmatched"

# --- b. a version-2 ring a tracer made first ---
SHMB=/cs-test-ringv-b-$$
track_shm $SHMB
timeout 60 "$RW" --create $((65536 + 96)) --version 2 "$SHMB" 1500 > "$T/b.rw"
is "$(cat "$T/b.rw")" "ringwriter: generated 1500 written 1500 dropped 0" "a tracer made a version-2 ring and wrote 1500 events"
timeout 60 "$TS" "$SHMB" 127.0.0.1 "$SERVE_PORT" 2> "$T/b.err"
ok $? "trace_stream attaches, forwards and exits 0"
grep -qx "trace_stream: attached to ring $SHMB (65536 bytes, version 2)" "$T/b.err" &&
    grep -Eq "^trace_stream: forwarded 1500 events in [0-9]+ chunks \([0-9]+ bytes on the wire\), dropped 0$" "$T/b.err"
ok $? "it read the ring as version 2: all 1500 events, dropped 0"

# --- b2. a ring this tree's tracer made itself, before any trace_stream ---
wait_serve_closed 2
rm -f "$T"/s/trace.stream.* # b's records are not the workload's
SHMB2=/cs-test-ringv-b2-$$
track_shm $SHMB2
TRACE_ENABLE=1 TRACE_SHM=$SHMB2 TRACE_SHM_SIZE=$RING_WHOLE_RUN timeout 60 "$W" $PARAMS > /dev/null 2> "$T/b2.wl.err"
is "$?:$(od -An -tu4 -j8 -N4 "/dev/shm$SHMB2" | tr -d ' ')" "0:2" \
    "the tracer, first, makes a version-2 ring, as every reader knows"
timeout 60 "$TS" "$SHMB2" 127.0.0.1 "$SERVE_PORT" 2> "$T/b2.err"
ok $? "trace_stream attaches later, forwards and exits 0"
wait_serve_closed 3
all_events "all $((2 * calls)) events through it, as version 2's batches, none dropped"

# --- c. a version nobody here knows ---
SHMC=/cs-test-ringv-c-$$
track_shm $SHMC
# magic, version 4, capacity 65536: a whole header of an unknown version
perl -e 'print pack("a8 V V", "TKSHM", 4, 65536), "\0" x (96 - 16 + 65536)' > "/dev/shm$SHMC"
TRACE_ENABLE=1 TRACE_SHM=$SHMC TRACE_DIR="$T/files" timeout 60 "$W" $PARAMS > /dev/null 2> "$T/c.wl.err"
grep -q "TRACE_SHM=$SHMC: unsupported ring version" "$T/c.wl.err" && [ -n "$(ls "$T/files")" ]
ok $? "the tracer refuses the ring in one line and writes files instead: $(head -n 1 "$T/c.wl.err")"
timeout 60 "$TS" "$SHMC" 127.0.0.1 "$SERVE_PORT" 2> "$T/c.err"
is "$?:$(cat "$T/c.err")" "1:trace_stream: broken ring $SHMC: unsupported ring version" \
    "trace_stream refuses it too, exit 1"
rm -f "/dev/shm$SHMC"

# --- d. a writer dies between reserving a batch and committing it ---
SHMD=/cs-test-ringv-d-$$
track_shm $SHMD
TRACE_SHM_SIZE=$((1048576 + 96)) timeout 60 "$TS" --ring-version 3 "$SHMD" 127.0.0.1 "$SERVE_PORT" 2> "$T/d.err" &
cd_=$!
track_pid $cd_
wait_in "$T/d.err" "waiting for a tracer" > /dev/null
timeout 60 "$RW" --abandon 100 "$SHMD" 1000 > "$T/d1.rw"
is "$(cat "$T/d1.rw")" "ringwriter: generated 1000 written 1000 dropped 0
ringwriter: reserved a batch of 100 and died" "tracer 1 wrote 1000 events, reserved 100 more and died"
timeout 60 "$RW" --first 1100 --linger-ms 1000 "$SHMD" 3000 > "$T/d2.rw" # trace_stream sees its lock: tracers here hold one
is "$(cat "$T/d2.rw")" "ringwriter: generated 3000 written 3000 dropped 0" \
    "tracer 2 writes 3000 after it, undisturbed by the batch left open"
wait $cd_
is $? 3 "trace_stream skips the dead writer's batch and ends: exit 3, a tracer died attached"
grep -Eq "^trace_stream: ring $SHMD: a tracer thread \(tid [0-9]+\) died in the middle of a batch; its 100 events count as dropped$" "$T/d.err" &&
    grep -Eq "^trace_stream: forwarded 4001 events in [0-9]+ chunks \([0-9]+ bytes on the wire\), dropped 100" "$T/d.err"
# 4001: the 4000 events and the loss table's record of the dead writer's tid (marker 40)
ok $? "it says so; forwarded 4000 and the dead writer's loss, dropped 100: $(grep -E 'died in the middle|forwarded' "$T/d.err" | tr '\n' ' ')"
wait_serve_closed 1
grep -Eq "^callsight serve: conn [0-9]+ closed \($P\): 4001 events, .*dropped 100$" "$SERVE_LOG"
ok $? "serve: 4000 events and the loss record, dropped 100: $(grep ' closed (' "$SERVE_LOG" | tail -n 1)"

# --- e. the default: version 2, whose writers of this tree commit batches ---
# Writers that know only version 2 (ringwriter without --mark, this tree's
# tracer built with -DTRACE_RING_NO_COMMIT) copy under the lock as always;
# this tree's tracer reserves and commits; the reader takes both.
SHME=/cs-test-ringv-e-$$
track_shm $SHME
TRACE_SHM_SIZE=$((1048576 + 96)) timeout 60 "$TS" "$SHME" 127.0.0.1 "$SERVE_PORT" 2> "$T/e.err" &
ce=$!
track_pid $ce
wait_in "$T/e.err" "waiting for a tracer" > /dev/null
is "$(sed -n 1p "$T/e.err") $(od -An -tu4 -j$((96 + 1048576 + 24)) -N4 "/dev/shm$SHME" | tr -d ' ')" \
    "trace_stream: created ring $SHME (1048576 bytes, version 2) 1" \
    "the default ring is version 2, its loss table offering committed batches (features 1)"
timeout 60 "$RW" --linger-ms 3000 "$SHME" 1000 > "$T/e1.rw" & # plain records; keeps trace_stream reading
e1=$!
track_pid $e1
sleep 0.2
timeout 60 "$RW" --mark 1 --first 1000 "$SHME" 1000 > "$T/e2.rw"
timeout 60 "$RW" --first 2000 "$SHME" 1000 > "$T/e3.rw"
timeout 60 "$RW" --mark 1 --batch 7 --first 3000 "$SHME" 1000 > "$T/e4.rw"
wait $e1
wait $ce
ok $? "trace_stream reads plain records and committed batches of one ring, and exits 0"
wait_serve_closed 2
f=$(ls "$T"/s/trace.stream.*.bin | tail -n 1)
is "$(perl "$TESTS/tools/tracecheck.pl" "$f" | tail -n 1 | cut -d' ' -f1,2)" "events=4000 mismatched=0" \
    "every record of the four writers arrives once, in order, with no batch header among them"
rm -f "$T"/s/trace.stream.*

# both kinds of this tree's tracer at once, through the default ring: exact
cc -std=c11 -O2 -DTRACE_RING_NO_COMMIT -c "$B/dist/trace.c" -o "$T/trace_v2.o" &&
    cc -finstrument-functions -g -O2 -fPIE -pie -I"$B/dist" -o "$T/workload_v2" "$TESTS/../examples/workload.c" \
        "$T/trace_v2.o" -pthread
ok $? "this tree's tracer built as one that knows only version 2 (-DTRACE_RING_NO_COMMIT)"
SHMF=/cs-test-ringv-f-$$
track_shm $SHMF
TRACE_SHM_SIZE=$RING_WHOLE_RUN timeout 60 "$TS" "$SHMF" 127.0.0.1 "$SERVE_PORT" 2> "$T/f.err" &
cf=$!
track_pid $cf
wait_in "$T/f.err" "waiting for a tracer" > /dev/null
tsf=$(pgrep -P $cf) # trace_stream itself, not timeout
kill -STOP $tsf # the ring keeps what they write, to be looked at: it holds the whole run
TRACE_ENABLE=1 TRACE_SHM=$SHMF TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$T/workload_v2" $PARAMS > /dev/null &
fa=$!
TRACE_ENABLE=1 TRACE_SHM=$SHMF TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" $PARAMS > /dev/null
fb=$?
wait $fa
is "$? $fb" "0 0" "the two workloads ran at once into one ring"
# records up to head whose kind byte is the batch mark: this tree's tracer committed its batches
marks=$(perl -e 'open(my $f, "<:raw", $ARGV[0]) or die; read($f, my $h, 96); my $head = unpack("Q<", substr($h, 24, 8));
    my $n = 0; for (my $at = 0; $at < $head; $at += 32) { read($f, my $r, 32); $n++ if ord(substr($r, 28, 1)) == 0xb7 }
    print $n' "/dev/shm$SHMF" 2>&1)
ok $([ "$marks" -gt 0 ]; echo $?) "this tree's tracer committed its batches ($marks headers marked in the ring)"
kill -CONT $tsf
wait $cf
ok $? "trace_stream exits 0"
wait_serve_closed 3
"$CS" analyze "$T/s" --exe "$W" --exe "$T/workload_v2" --top 0 > "$T/f.txt" 2>&1
h=$(head -n 1 "$T/f.txt"); diag "$h"
# each binary has its rows (their build-ids differ): the same counts twice
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$T/f.txt" | sort | uniq -c | awk '{ print $2, $3, $1 }' | sort)" \
    "$(expect_counts $PARAMS | awk '{ print $1, $2, 2 }' | sort)" "every function's calls, in each of the two processes, exactly"
is "$(field events "$h") $(field dropped "$h") $(field unmatched_exits "$h")" "$((4 * calls)) 0 0" \
    "all $((4 * calls)) events, none dropped, none unmatched"
stop_serve
exit $_failed
