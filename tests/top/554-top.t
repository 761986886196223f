#!/usr/bin/env bash
# callsight top: on a finished serve directory (the demo workload streamed
# through trace_stream and serve), --once shows analyze's functions with
# analyze's call counts and times; a copy whose file is cut mid-record is
# read to its last whole record, as analyze reads it; and the full-screen
# view, driven in tmux, shows the functions, reads on when the cut file is
# completed, sorts, chooses a source, and restores the terminal on q and on
# SIGINT.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 31

PARAMS="4 3 12 64 8"
EXE=$B/examples/workload
SHM=/cs-test-top-$$
track_shm "$SHM"
expect_counts $PARAMS > "$T/expect"

start_serve "$T/stream" --quiet
TRACE_SHM_SIZE=$RING_WHOLE_RUN start_trace_stream "$B/trace_stream" "$SHM"
client=$CLIENT_PID
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$EXE" $PARAMS > /dev/null
wait $client
wait_serve_closed 1
stop_serve
ls "$T"/stream/trace.stream.*.bin > /dev/null 2>&1
ok $? "the workload streamed through serve into trace.stream.*.bin"

"$CS" analyze "$T/stream" --exe "$EXE" --top 0 > "$T/a.txt" 2>&1
events=$(field events "$(head -n 1 "$T/a.txt")")
# analyze's rows (report_rows): calls, name, file:line; top's columns 1, 8 and 9 are those
trows() { awk '/^ *calls /{f=1; next} f && $1 ~ /^[0-9]+$/ { print $1, $8, $9 }' "$1" | sort; }

"$CS" top "$T/stream" --once --top 0 --exe "$EXE" > "$T/t.txt" 2> "$T/t.err"
ok $? "top --once exits 0"
is "$(sed -n 's/.* events \([0-9]*\) .*/\1/p' "$T/t.txt")" "$events" "its header counts analyze's $events events"
is "$(grep -c '^ *[0-9]* stream ' "$T/t.txt")" 1 "one source, the stream"
report_rows "$T/a.txt" > "$T/a.rows"; trows "$T/t.txt" > "$T/t.rows"
is "$(wc -l < "$T/t.rows")" "$(wc -l < "$T/expect")" "one row per function of the workload"
diff "$T/a.rows" "$T/t.rows" > "$T/rows.diff"
ok $? "calls, names and file:line are analyze's, row for row"
bad=0
while read -r f want; do
    got=$(awk -v f="$f" '$2 == f { print $1 }' "$T/t.rows")
    [ "$got" = "$want" ] || { diag "$f: $got want $want"; bad=1; }
done < "$T/expect"
ok $bad "and the workload's exact call counts"
# --once makes analyze's pre-passes (exit clock anchors): times are analyze's
# (from analyze's json, in top's units and digits: the text table rounds percentiles)
atimes() { "$CS" analyze "$1" --exe "$EXE" --top 0 --format json | python3 -c 'import json, os, sys
for f in json.load(sys.stdin)["functions"]:
    print(f["name"], "(%s:%d)" % (os.path.basename(f["file"]), f["line"]), f["calls"], "%.3f" % (f["self_ns"] / 1e6),
          "%.3f" % (f["incl_ns"] / 1e6), "%.3f" % (f["max_ns"] / 1e3), "%.3f" % (f["p99_ns"] / 1e3))' | sort; }
ttimes() { awk '/^ *calls /{f=1; next} f && $1 ~ /^[0-9]+$/ { print $8, $9, $1, $3, $4, $6, $7 }' "$1" | sort; }
diff <(atimes "$T/stream") <(ttimes "$T/t.txt") > "$T/times.diff"
ok $? "self, inclusive, longest and p99 times are analyze's to the last digit"

# --- a file cut in the middle of a record ---
mkdir "$T/cut"
src=$(ls "$T"/stream/trace.stream.*.bin | head -n 1)
name=$(basename "$src")
size=$(stat -c %s "$src")
keep=$((80 + ((size - 80) / 32 / 2) * 32 + 13)) # half the records and 13 bytes of the next
head -c "$keep" "$src" > "$T/cut/$name"
"$CS" analyze "$T/cut" --exe "$EXE" > "$T/ca.txt" 2> "$T/ca.err"
cut_events=$(field events "$(head -n 1 "$T/ca.txt")")
"$CS" top "$T/cut" --once --exe "$EXE" > "$T/ct.txt" 2> "$T/ct.err"
ok $? "top --once reads a file cut mid-record"
is "$(sed -n 's/.* events \([0-9]*\) .*/\1/p' "$T/ct.txt")" "$cut_events" \
    "to its last whole record: analyze's $cut_events events"
grep -q "truncated: partial last record (13 bytes) ignored" "$T/ct.err"
ok $? "and says the 13 bytes of the torn record, as analyze does"

# --- an --exe that is not the traced program (another build-id) ---
"$CS" top "$T/stream" --once --top 0 --exe "$B/examples/resident" > "$T/x.txt" 2> "$T/x.err"
ok $? "top --once with another program's --exe still shows the trace"
is "$(trows "$T/x.txt" | awk '$2 !~ /^0x[0-9a-f]+$/' | wc -l)" 0 \
    "every function by address, none named from the wrong binary"
grep -Eq "^callsight top: the traced program's build-id [0-9a-f]{16}\.\.\. is no --exe's: its functions by address$" "$T/x.err"
ok $? "and it says why, once ($(head -n 1 "$T/x.err"))"

# --- mistakes a user makes ---
mkdir "$T/empty"
"$CS" top "$T/empty" --once > /dev/null 2> "$T/e.err"
is "$?:$(cat "$T/e.err")" "1:callsight top: no trace files in $T/empty" "--once on a directory without traces: exit 1, says so"
"$CS" top "$T/stream" --once --source 2 > /dev/null 2> "$T/e.err"
is "$?:$(cat "$T/e.err")" "1:callsight top: --source 2: $T/stream has 1 source" "--source past the sources: exit 1, says how many"
"$CS" top "$T/stream" --once --source 0 > /dev/null 2> "$T/e.err"
is "$?:$(cat "$T/e.err")" "2:callsight top: --source 0: sources are numbered from 1 (the # column)" "--source 0: a usage error"
"$CS" top "$T/stream" --once --exe "$TESTS/top/554-top.t" > /dev/null 2> "$T/e.err"
grep -q "^callsight top: warning: --exe $TESTS/top/554-top.t: not an ELF file" "$T/e.err"
ok $? "an --exe that is no ELF file is said at the start ($(head -n 1 "$T/e.err"))"

# --- the screen, in a real terminal ---
TM="tmux -L cs-top-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
capture_until() { pane_until top "$1"; }
$TM new-session -d -s top -x 200 -y 50 "bash --norc --noprofile"
$TM send-keys -t top "cd '$T' && '$CS' top cut --exe '$EXE'; echo TOP-EXIT=\$?" Enter
capture_until "nap \(workload\.c"
ok $? "the screen shows the workload's functions"
is "$($TM display -p -t top '#{alternate_on}')" 1 "in the terminal's alternate screen"
# an 80-column terminal: the least telling numbers give way to the names
$TM resize-window -t top -x 80 -y 40
capture_until "^ +calls +self_ms +self_ms/int  function \(file:line\)$"
ok $? "80 columns: p99, incl, max and calls/s give way; calls, self and self/int stay"
grep -Eq "^ +[0-9]+ .* nap \(workload\.c:[0-9]+\)$" "$T/pane"
ok $? "and a function's name and file:line fit whole"
$TM resize-window -t top -x 200 -y 50
# the rest of the cut file arrives: the next refreshes read it on, whole records only
tail -c +$((keep + 1)) "$src" >> "$T/cut/$name"
capture_until "events $events "
ok $? "after the file is completed, the screen counts all $events events"
# a file top cannot read: said on the screen's bottom line, not lost
head -c 200 /dev/urandom > "$T/cut/trace.stream.9.0.bin"
capture_until "trace\.stream\.9\.0\.bin: [a-z ()]+; skipped"
ok $? "a damaged file's one line shows at the bottom of the screen"
rm "$T/cut/trace.stream.9.0.bin"
$TM send-keys -t top s
capture_until "by self:"
ok $? "s sorts by the next column (total self time)"
$TM send-keys -t top Tab
capture_until "functions of stream [0-9]+, by self:"
ok $? "tab chooses the first source"
$TM send-keys -t top q
capture_until "TOP-EXIT=0"
ok $? "q quits with status 0"
is "$($TM display -p -t top '#{alternate_on}')" 0 "and the terminal is back from the alternate screen"
$TM send-keys -t top "clear; '$CS' top cut; echo TOP-EXIT=\$?" Enter
capture_until "0x[0-9a-f]+"
ok $? "without --exe the functions are shown by address"
$TM send-keys -t top C-c
capture_until "TOP-EXIT=0"
ok $? "SIGINT ends it too, with status 0"
is "$($TM display -p -t top '#{alternate_on}')" 0 "and restores the terminal"
exit $_failed
