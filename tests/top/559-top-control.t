#!/usr/bin/env bash
# 559-top-control.t - live control from `callsight top`'s screen (issue 31
# step 5, docs/control.md): P pauses the device's capture, R resumes it, X
# resets, O turns the first row's function off, through serve as `callsight ctl DIR` does, and the answer shows
# on the bottom line; counts stay exact.  The program runs phases of 1000
# calls each of f and g, waiting for a line between them, while a ticker
# thread calls tick() every millisecond (so each change is applied at once):
#   phase 0 everything | P | 1 nothing | R | 2 everything | X | 3 everything
# so f 3000, g 3000.  A source that takes no control says so.
source "$(dirname "$0")/../lib/lib.sh"
plan 10
command -v tmux > /dev/null || { for _ in $(seq 8); do skip "tmux is not installed (scripts/deps.sh installs it)"; done; exit 0; }

need_tools ctl_phases
cp "$TOOLBIN/ctl_phases" "$T/phases" # the workload (tests/recorder/ctl_phases.c)
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 !~ /^tick/ { print $10, $1 }' "$1" | sort | tr '\n' ' '; }

start_serve "$T/live" || exit 1
TM="tmux -L cs-top-ctl-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
# before any fifo is open here: the tmux server must not hold a writer's end
$TM new-session -d -s top -x 200 -y 40 "bash --norc --noprofile"
stream_bg "$T/ts.err" --allow-control /cs559$$ 127.0.0.1 "$SERVE_PORT"
track_shm /cs559$$
mkfifo "$T/in"
TRACE_SHM=/cs559$$ TRACE_ENABLE=1 "$T/phases" < "$T/in" > "$T/out" &
P=$!
track_pid $P
exec 3> "$T/in"
wait_in "$T/out" "phase 0 done" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
$TM send-keys -t top "cd '$T' && '$CS' top live --exe '$T/phases' --interval 0.5; echo TOP-EXIT=\$?" Enter
pane_until top "refresh [0-9]+ " > /dev/null
$TM send-keys -t top P
pane_until top "pause: conn 1 applied it \(generation 2\)"
ok $? "P: the device paused, its answer on the bottom line"
echo >&3; wait_in "$T/out" "phase 1 done" > /dev/null
$TM send-keys -t top R
pane_until top "resume: conn 1 applied it \(generation 4\)"
ok $? "R: resumed"
echo >&3; wait_in "$T/out" "phase 2 done" > /dev/null
$TM send-keys -t top X
pane_until top "reset: conn 1 applied it \(generation 6\)"
ok $? "X: reset"
echo >&3; wait_in "$T/out" "phase 3 done" > /dev/null
# O: the first row's function off (tick, the ticker's: the only one with
# calls in the interval); its calls stop growing on the screen
# the default sort is by the interval's self time: once phase 3's calls are
# a refresh behind, the ticker's tick is the first row
first_row() { $TM capture-pane -p -t top | awk '/^ *calls /{ getline; print $(NF-1); exit }'; }
for _ in $(seq 100); do [ "$(first_row)" = tick ] && break; sleep 0.1; done
$TM send-keys -t top O
pane_until top "off tick \(ctl_phases.c:[0-9]+\) \(1 function\): conn 1 applied it \(generation 8\)"
ok $? "O: the first row's function (tick) off, the answer on the bottom line"
tick_calls() { $TM capture-pane -p -t top | awk '$NF ~ /^\(/ && $(NF-1) == "tick" { print $1 }'; }
sleep 1.5
t1=$(tick_calls)
sleep 1.5
t2=$(tick_calls)
[ -n "$t1" ] && [ "$t1" = "$t2" ]
ok $? "tick's calls stop growing once it is off ($t1, then $t2)"
exec 3>&-
wait $P
wait $TS_PID
is "$?" "0" "trace_stream exits 0"
wait_serve_closed 1
"$CS" analyze "$T/live" --exe "$T/phases" > "$T/a.txt" 2>&1
is "$(counts "$T/a.txt")" "f 3000 g 3000 main 1 " "exact: nothing recorded while paused from the screen"
is "$(grep -c '^note: stream 1: live control: generation [2468] ' "$T/a.txt")" "4" "analyze notes the four changes"

# --- a stream that takes no control: the screen says why ---
stream_bg "$T/ts2.err" /cs559b$$ 127.0.0.1 "$SERVE_PORT"
track_shm /cs559b$$
mkfifo "$T/in2"
TRACE_SHM=/cs559b$$ TRACE_ENABLE=1 "$T/phases" < "$T/in2" > "$T/out2" &
P2=$!
track_pid $P2
exec 4> "$T/in2"
wait_in "$T/out2" "phase 0 done" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 2 from " > /dev/null
$TM send-keys -t top P
pane_until top "pause: no connection takes control \(start trace_stream with --allow-control\)"
ok $? "P with no connection taking control: the way to allow it, on the bottom line"
exec 4>&-
wait $P2
$TM send-keys -t top q
pane_until top "TOP-EXIT=0"
ok $? "q quits, exit 0"
stop_serve
exit $_failed
