#!/usr/bin/env bash
# callsight top on the screen (tmux) while streams arrive through serve:
# the demo workload streaming shows up while it runs, with the bytes/s its
# connection takes on the link (asked of serve), and once it ends the
# screen's call counts are analyze's and the workload's exact counts; a
# device's drop count, a connection cut (serve's gap marker) and a
# resumable stream's connection cut (serve's cut marker: its client may
# reconnect, and here does) each show on the screen within two refreshes
# of serve writing them, counted in refreshes, not seconds; a summary stream
# (TRACE_MODE=summary) fills its source's rows with the exact counts;
# choosing a source shows its functions only; q restores the terminal.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 20

EXE=$B/examples/workload RES=$B/examples/resident
PARAMS="300 2 12 64 8" # seconds of naps, so the screen sees it running
SUM_PARAMS="4 3 12 64 8"
need_tools streamgen
expect_counts $PARAMS | sort > "$T/expect"
expect_counts $SUM_PARAMS | sort > "$T/sum_expect"

start_serve "$T/live" --quiet --idle-timeout 3
mkdir -p "$T/live"
TM="tmux -L cs-top-live-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
capture_until() { pane_until top "$1"; }
refresh_now() { $TM capture-pane -p -t top | sed -n 's/.* refresh \([0-9]*\) .*/\1/p' | head -n 1; }
# source_row N: the pane's line for source N ("  N stream N  state ...")
source_row() { grep -E "^[ >] *$1 stream $1 " "$T/pane"; }
# screen_rows: "calls name file:line" of the function rows on the pane
screen_rows() { awk '/^ *calls /{f=1; next} f && $1 ~ /^[0-9]+$/ { print $1, $8, $9 }' "$T/pane" | sort; }
# closed_then_within_two N REGEX WHAT: once serve has said connection N
# closed (what it wrote is on disk then), REGEX is on the pane at most two
# refreshes after the one the pane showed at that moment: the next
# refresh to begin reads it.
closed_then_within_two() {
    wait_serve_closed "$1" || { ok 1 "$3: serve closed connection $1"; return; }
    local r1 r2
    r1=$(refresh_now)
    capture_until "$2" || { ok 1 "$3"; return; }
    r2=$(sed -n 's/.* refresh \([0-9]*\) .*/\1/p' "$T/pane" | head -n 1)
    [ -n "$r1" ] && [ -n "$r2" ] && [ "$r2" -le $((r1 + 2)) ]
    ok $? "$3 (refresh $r2, serve done by $r1)"
}

$TM new-session -d -s top -x 200 -y 50 "bash --norc --noprofile"
$TM send-keys -t top "cd '$T' && '$CS' top live --exe '$EXE' --exe '$RES' --interval 0.5; echo TOP-EXIT=\$?" Enter
capture_until "refresh [0-9]+ "
ok $? "top watches serve's empty directory"

# --- 1: the workload streams; the screen sees it while it runs ---
SHM=/cs-test-toplive-$$
track_shm "$SHM"
TRACE_SHM_SIZE=$RING_WHOLE_RUN start_trace_stream "$B/trace_stream" "$SHM"
client=$CLIENT_PID
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$EXE" $PARAMS > /dev/null &
wl=$!
track_pid $wl
capture_until " 1 stream 1 +streaming .*" && capture_until "nap \(workload\.c"
seen=$?
kill -0 $wl 2>/dev/null
ok $((seen || $?)) "while the workload runs, the screen shows stream 1 streaming and its functions"
capture_until "^[ >] *1 stream 1 +streaming +[0-9]+ +[1-9][0-9]* "
ok $? "and the bytes/s its connection takes on the link, as serve counts them"
wait $wl
ok $? "the workload ran to its end"
wait $client
wait_serve_closed 1
"$CS" analyze "$T/live" --exe "$EXE" --top 0 > "$T/a.txt" 2>&1
events=$(field events "$(head -n 1 "$T/a.txt")")
capture_until "events $events "
ok $? "the screen counts analyze's $events events"
report_rows "$T/a.txt" > "$T/a.rows"
screen_rows > "$T/s.rows"
diff "$T/a.rows" "$T/s.rows" > "$T/rows.diff"
ok $? "every function's calls, name and file:line on the screen are analyze's"
awk '{ print $2, $1 }' "$T/s.rows" | sort > "$T/s.counts"
diff "$T/expect" "$T/s.counts" > "$T/counts.diff"
ok $? "and the workload's exact counts"
capture_until "^[ >] *1 stream 1 +[a-z]+ +[0-9]+ +- "
ok $? "its connection closed, no wire figure (-)"

# --- 2: a device that dropped events ---
"$TOOLBIN/streamgen" --events 1000 --chunk 100 --notice 4242 127.0.0.1 "$SERVE_PORT" 2> "$T/gen2.err"
ok $? "a stream that reports 4242 dropped events"
closed_then_within_two 2 "^[ >] *2 stream 2 +[a-z]+ +[0-9]+ +([0-9]+|-) +4242 " \
    "its drops show in its dropped column within two refreshes"

# --- 3: a connection cut mid-chunk (serve writes a gap marker) ---
"$TOOLBIN/streamgen" --events 1000 --chunk 100 --bad trunc-chunk 127.0.0.1 "$SERVE_PORT" 2> "$T/gen3.err"
closed_then_within_two 3 "^[ >] *3 stream 3 +cut " "a cut connection shows as cut within two refreshes"

# --- 4: a resumable stream cut (serve writes a cut marker), then resumed ---
# resident keeps the ring attached (trace_stream ends when its last tracer
# leaves) while a workload runs; trace_stream stopped, serve closes its
# connection idle past --idle-timeout 3 and writes the cut marker;
# continued, it reconnects and the stream goes on in the same series,
# losing nothing: a second workload and resident's exit arrive, and the
# source's rows are both workloads' and resident's exact counts.
SHM4=/cs-test-toplive4-$$
track_shm "$SHM4"
TRACE_SHM_SIZE=$RING_WHOLE_RUN stream_bg "$T/c4.err" --retry 60 "$SHM4" 127.0.0.1 "$SERVE_PORT"
client4=$TS_PID
mkfifo "$T/go"
TRACE_ENABLE=1 TRACE_SHM=$SHM4 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$RES" < "$T/go" > "$T/res.out" &
res=$!
track_pid $res
exec 7> "$T/go"
run4() { TRACE_ENABLE=1 TRACE_SHM=$SHM4 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$EXE" $SUM_PARAMS > /dev/null; }
run4
capture_until " 4 stream 4 +(streaming|ended) "
ok $? "resident and a short workload stream as stream 4"
kill -STOP $client4
closed_then_within_two 4 "^[ >] *4 stream 4 +reconnecting " \
    "its connection cut (idle), it shows as reconnecting within two refreshes"
kill -CONT $client4
run4
echo go >&7
exec 7>&-
wait $res
wait_stream_client $client4
ok $? "trace_stream reconnected and ended with status 0 once resident left"
wait_serve_closed 5
{ awk '{ print $1, "workload.c", $2 * 2 }' "$T/sum_expect"
  printf '%s resident.c %s\n' main 1 handle 1 hash_key 777 mix 777; } | sort > "$T/four.expect"
$TM send-keys -t top 4
capture_until "functions of stream 4, by " && capture_until " 4 stream 4 +(streaming|ended) "
screen_rows | awk '{ f = $3; sub(/^\(/, "", f); sub(/:.*/, "", f); print $2, f, $1 }' | sort > "$T/four.counts"
diff "$T/four.expect" "$T/four.counts" > "$T/four.diff"
ok $? "resumed, it streams again, and its rows (4 chosen) count both workloads and resident exactly"

# --- 5: a summary stream ---
SHM5=/cs-test-toplive5-$$
track_shm "$SHM5"
TRACE_SHM_SIZE=$RING_WHOLE_RUN start_trace_stream "$B/trace_stream" "$SHM5"
client5=$CLIENT_PID
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_SHM=$SHM5 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$EXE" $SUM_PARAMS \
    > /dev/null
wait $client5
wait_serve_closed 6
capture_until " 5 stream 5 " # a key for a source top has not seen yet does nothing
$TM send-keys -t top 5
capture_until "functions of stream 5, by "
ok $? "5 chooses the summary stream's source"
capture_until "^ +[0-9]+ .* main \(workload\.c"
screen_rows | awk '{ print $2, $1 }' | sort > "$T/sum.counts"
diff "$T/sum_expect" "$T/sum.counts" > "$T/sum.diff"
ok $? "its snapshots give the rows, with the workload's exact counts and nothing of the other sources"
$TM send-keys -t top 0
capture_until "functions of every source, by "
ok $? "0 goes back to every source"

$TM send-keys -t top q
capture_until "TOP-EXIT=0"
ok $? "q quits with status 0"
is "$($TM display -p -t top '#{alternate_on}')" 0 "and the terminal is back from the alternate screen"
stop_serve
exit $_failed
