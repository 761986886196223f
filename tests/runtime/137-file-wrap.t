#!/usr/bin/env bash
# 137-file-wrap.t - TRACE_FULL=wrap in file mode: the process keeps only the
# most recent TRACE_MAX_MB of all its threads' segments.  16 threads make
# 12.8 M events into an 8 MiB budget: the files stay within it, the report
# covers the end of the run (the main thread's last call), says how much
# was discarded, and events kept + discarded (+ dropped, counted) = events
# made, exactly; calls
# entered in a removed segment are reported as truncated, never as
# unmatched exits.
source "$(dirname "$0")/../lib/lib.sh"
plan 9

need_tools wrap16
P=$TOOLBIN/wrap16

TRACE_ENABLE=1 TRACE_DIR="$T/w" TRACE_FULL=wrap TRACE_MAX_MB=8 "$P" 200000 > "$T/w.out" 2> "$T/w.err"
is "$? $(cat "$T/w.out") $(cat "$T/w.err")" "0 tick=3200000 last=17 " "16 threads, TRACE_FULL=wrap TRACE_MAX_MB=8"
bytes=$(cat "$T"/w/trace.*.bin | wc -c)
awk -v b="$bytes" 'BEGIN { exit !(b > 4 * 1048576 && b <= 8 * 1048576) }'
ok $? "the files hold the budget: $bytes bytes of at most 8388608"
"$CS" analyze "$T/w" --exe "$P" --top 0 > "$T/w.txt" 2>&1
head=$(head -n 1 "$T/w.txt")
# A batch that finds the whole budget in the threads' open segments (a slow
# pass, ASan on a loaded machine) is dropped and counted: the sum below
# holds with it, so nothing is ever lost silently.
dropped=$(field dropped "$head")
is "$(field unmatched_exits "$head")" 0 "no unmatched exit"
gone=$(sed -n 's/^note: pid [0-9]*: TRACE_FULL=wrap: \([0-9]*\) older events were discarded to stay within TRACE_MAX_MB; the trace kept spans [0-9.]* s up to the end of the run$/\1/p' "$T/w.txt")
ok $([ -n "$gone" ] && [ "$gone" -gt 0 ]; echo $?) "the report says what was discarded (${gone:-nothing})"
# 16 x 200000 x (tick + tock) x 2, + 16 workers, 17 last(), main: enters and exits
is "$(($(field events "$head") + ${gone:-0} + ${dropped:-0}))" $((16 * 200000 * 4 + 16 * 2 + 17 * 2 + 2)) \
    "events kept + discarded + dropped = events made"
pid=$(sed -n 's/^note: pid \([0-9]*\): TRACE_FULL=wrap.*/\1/p' "$T/w.txt")
"$CS" analyze "$T/w" --exe "$P" --top 0 --thread "$pid" > "$T/main.txt" 2>&1
is "$(awk 'NF >= 10 && $1 ~ /^[0-9]+$/ && $(NF-1) == "last" { print $1 }' "$T/main.txt")" 1 \
    "the end of the run is there: the main thread's last() call"
is "$(grep -c 'at stream gaps\|orphaned' "$T/w.txt")" 0 \
    "calls entered in removed segments are not called orphaned exits of a stream gap (they are truncated)"

# 1 MiB for 16 threads: the budget is often all in their open segments, so
# batches are dropped, and some of the THREAD_LOST markers that would say so
# are in segments removed later, or never get in: each such event is counted
# as discarded, so the sum still holds exactly.
TRACE_ENABLE=1 TRACE_DIR="$T/s" TRACE_FULL=wrap TRACE_MAX_MB=1 "$P" 200000 > /dev/null 2>&1
"$CS" analyze "$T/s" --exe "$P" --top 0 > "$T/s.txt" 2>&1
head=$(head -n 1 "$T/s.txt")
gone=$(sed -n 's/^note: pid [0-9]*: TRACE_FULL=wrap: \([0-9]*\) older events were discarded.*/\1/p' "$T/s.txt")
is "$(($(field events "$head") + ${gone:-0} + $(field dropped "$head")))" $((16 * 200000 * 4 + 16 * 2 + 17 * 2 + 2)) \
    "a budget too small for 16 open segments: kept + discarded + dropped = made, still exactly"

TRACE_ENABLE=1 TRACE_DIR="$T/b" TRACE_FULL=bogus TRACE_MAX_MB=8 "$P" 10 > /dev/null 2> "$T/b.err"
is "$(cat "$T/b.err")" "callsight: TRACE_FULL=bogus is not stop or wrap; stopping when full" "a bad TRACE_FULL: one line"
