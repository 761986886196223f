#!/usr/bin/env bash
# 164-control-mode.t - live control, `--mode events|summary` (issue 31 step
# 3, docs/control.md): a running program switched between events and
# summaries and back, each call counted once (in the mode it began in), so
# analyze reports both kinds of rows with exact totals; in file mode from
# either TRACE_MODE, and through serve.  The workload
# (tests/recorder/ctl_phases.c) makes 1000 calls each of f and g per phase:
#   phase 0 | --mode summary | 1 | --reset | 2 | --mode summary --off g | 3 |
#   --mode events | 4
# so f 5000, g 4000 (off in phase 3), main 1, whatever the mode of each.
source "$(dirname "$0")/../lib/lib.sh"
plan 20

need_tools ctl_phases
cp "$TOOLBIN/ctl_phases" "$T/phases"
UID_=$(id -u)
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 !~ /^tick/ { print $10, $1 }' "$1" | sort | tr '\n' ' '; }
WANT="f 5000 g 4000 main 1 "

# phases NAME TARGET...: the program through its changes; ctl's lines in
# $T/NAME.ctl, statuses in $T/NAME.rc.
phases() {
    local name=$1 fifo=$T/$1.in; shift
    exec 3> "$fifo"
    next() { wait_in "$T/$name.out" "^phase $1 done" > /dev/null; }
    c() { "$CS" ctl "$@" >> "$T/$name.ctl" 2>&1; echo $? >> "$T/$name.rc"; }
    next 0
    c "$@" --mode summary
    echo >&3; next 1
    c "$@" --reset
    echo >&3; next 2
    c "$@" --exe "$T/phases" --off g --mode summary
    echo >&3; next 3
    c "$@" --mode events
    echo >&3; next 4
    exec 3>&-
}
# notes FILE: each generation's words
notes() { sed -n 's/^note: [a-z]* [0-9]*: live control: generation \([0-9]*\) from [0-9.]* s: \(.*\), applied by 2 threads.*/\1 \2/p' "$1"; }

for start in events summary; do
    mkfifo "$T/$start.in"
    TRACE_MODE=$start TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/$start" "$T/phases" < "$T/$start.in" > "$T/$start.out" &
    PID=$!
    track_pid $PID
    track_shm "/callsight-ctl-$UID_-$PID"
    phases $start --pid $PID
    wait $PID
    is "$? $(tr '\n' ' ' < "$T/$start.rc")" "0 0 0 0 0 " "TRACE_MODE=$start: the program ran, every change applied (exit 0)"
    "$CS" analyze "$T/$start" --exe "$T/phases" > "$T/$start.txt" 2>&1
    is "$?" 0 "TRACE_MODE=$start: analyze takes events and summaries of a switched trace (exit 0)"
    is "$(counts "$T/$start.txt")" "$WANT" "TRACE_MODE=$start: exact totals across the switches"
    h=$(head -n 1 "$T/$start.txt")
    is "$(field unmatched_exits "$h") $(field unclosed_enters "$h")" "0 0" "TRACE_MODE=$start: no exit without its enter, none left open"
done
is "$(notes "$T/events.txt")" "2 recording everything, 2 threads switched to summaries
4 recording everything, 2 threads switched to events
6 recording all but 1 function, 2 threads switched to summaries
8 recording everything, 2 threads switched to events" "from events: analyze notes each switch"
is "$(notes "$T/summary.txt")" "2 recording everything
4 recording everything
6 recording all but 1 function
8 recording everything, 2 threads switched to events" "from summary: only the switch to events is one"
grep -q '^note: summary mode: ' "$T/events.txt"
ok $? "from events: the summary phases' snapshots are read (a summary note)"
is "$(sed "s/pid [0-9]*/pid P/" "$T/events.ctl")" "callsight ctl: pid P: generation 2: recording everything, as summaries (applied)
callsight ctl: pid P: generation 4: recording everything (applied)
callsight ctl: pid P: generation 6: recording all but 1 function, as summaries (applied)
callsight ctl: pid P: generation 8: recording everything, as events (applied)" "ctl says the mode of each change"
vers=$(for f in "$T"/events/trace.*.bin; do od -An -tu4 -j8 -N4 "$f"; done | tr -d ' ' | sort -u | tr '\n' ' ')
is "$vers" "3 " "each event file that took a snapshot says TRACE_FILE_VERSION_SUMMARY (an older analyzer refuses it)"
"$CS" analyze "$T/events" --exe "$T/phases" --format json > "$T/events.json" 2>&1
is "$(python3 -c 'import json, sys
for c in json.load(open(sys.argv[1]))["control"]:
    print(c["source"], c["generation"], ",".join(c["set"]), c["functions"], c["mode"], c["threads_applied"],
          c["threads_switched"], c["at_ns"] >= 0)' "$T/events.json")" "pid 2 mode 0 summary 2 2 True
pid 4 mode 0 events 2 2 True
pid 6 off,mode 1 summary 2 2 True
pid 8 mode 0 events 2 2 True" "JSON: each generation, what it set, the mode it switched to and how many threads did"
"$CS" analyze "$T/events" --exe "$T/phases" --format folded > "$T/fold" 2>&1
is "$? $(cat "$T/fold")" "1 callsight analyze: summary traces hold totals, not call paths: this --format needs event traces (TRACE_MODE=events)" \
    "a format of call paths is refused: the summarized phases have none"

# --- through serve ---
phases_through_serve "$T/phases" /cs164$$ || exit 1
phases srv "$T/srv"
wait $P
wait $TS_PID
is "$? $(tr '\n' ' ' < "$T/srv.rc")" "0 0 0 0 0 " "through serve: trace_stream exits 0, every change applied"
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/srv" --exe "$T/phases" > "$T/srv.txt" 2>&1
is "$(counts "$T/srv.txt")" "$WANT" "through serve: the same exact totals"
is "$(notes "$T/srv.txt" | sed 's/ .*\(switched to [a-z]*\)$/ \1/')" "2 switched to summaries
4 switched to events
6 switched to summaries
8 switched to events" "through serve: every switch noted"

# --- what --mode refuses ---
"$CS" ctl --pid 1 --mode trace > "$T/r1" 2>&1
is "$? $(cat "$T/r1")" "2 callsight ctl: --mode: 'trace' is not events or summary" "--mode of neither: a usage error"
"$CS" ctl --pid 1 --resume --mode summary > "$T/r2" 2>&1
is "$? $(cat "$T/r2")" "2 callsight ctl: --mode is part of a whole new setting: alone, or with --off, --only, --under or --reset (try --help)" \
    "--mode with --resume: a usage error"
exit $_failed
