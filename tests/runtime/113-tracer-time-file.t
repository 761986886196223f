#!/usr/bin/env bash
# 113-tracer-time-file.t - file mode: the time a thread spends writing its
# buffer out is the tracer's, not the function's it interrupted.  Every
# write is slowed to SLOW ms by an LD_PRELOAD shim (tests/tools/slowwrite.c);
# the report's short functions (well under SLOW/2 each, untraced) must show
# no max that holds a write, and the note must account for every slow write.
# With --keep-tracer-time (counted as before) the same trace does show the
# writes inside those functions, so the check can fail.  The Perfetto
# timeline shows each flush as a slice.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 8

SLOW=50
PARAMS="40 2 12 64 8" # 2 workers: ~125,000 events, a dozen or more flushes of 8192 (file mode's batch)
need_tools slowwrite.so

# An ASan workload would refuse a preloaded library ahead of its runtime.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    LD_PRELOAD=$TOOLBIN/slowwrite.so SLOWWRITE_MS=$SLOW TRACE_ENABLE=1 TRACE_DIR="$T/tr" \
    timeout 120 "$B/examples/workload" $PARAMS > /dev/null
ok $? "the workload runs traced with every write slowed to $SLOW ms"

"$CS" analyze "$T/tr" --exe "$B/examples/workload" --format json -o "$T/net.json" &&
    "$CS" analyze "$T/tr" --exe "$B/examples/workload" --format json --keep-tracer-time -o "$T/kept.json" &&
    "$CS" analyze "$T/tr" --exe "$B/examples/workload" > "$T/net.txt"
ok $? "analyze reads it, with and without --keep-tracer-time"

expect_counts $PARAMS | sort > "$T/expect"
# maxes FILE: short_maxes, then the source's tracer sums.
maxes() {
    short_maxes "$1"
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["sources"][0]
print("tracer", s["tracer_flushes"], s["tracer_ns"])' "$1"
}
maxes "$T/net.json" > "$T/net"
maxes "$T/kept.json" > "$T/kept"
sed 's/^/# /' "$T/net"

# Exact counts are untouched by the exclusion.
is "$(grep -v ^tracer "$T/net" | awk '{print $1, $2}')" \
   "$(grep -wE "$(echo $WORKLOAD_SHORT | tr ' ' '|')" "$T/expect")" "exact call counts of the short functions"

half=$((SLOW * 1000000 / 2))
is "$(grep -v ^tracer "$T/net" | awk -v h=$half '$3 >= h {print $1}' | tr '\n' ' ')" "" \
    "no short function's max holds a $SLOW ms write"
worst=$(grep -v ^tracer "$T/kept" | awk 'BEGIN {m = 0} $3 > m {m = $3} END {print m}')
[ "$worst" -ge $((SLOW * 1000000)) ]
ok $? "with --keep-tracer-time the writes show inside them (worst max $worst ns)"

# Every flush wrote at least once, each write slept SLOW ms: the excluded
# total covers them all.
read -r _ flushes tracer_ns < <(grep ^tracer "$T/net")
[ "$flushes" -ge 10 ] && [ "$tracer_ns" -ge $((flushes * SLOW * 1000000)) ]
ok $? "the note's total covers every slow write: $flushes flushes, $tracer_ns ns"
grep -qx "note: pid [0-9]*: tracer time excluded from function times: [0-9.]* ms in $flushes flushes" "$T/net.txt"
ok $? "the text report says how much tracer time was excluded, in how many flushes"

# The timeline keeps real time: each flush is a slice of its own there.
"$CS" analyze "$T/tr" --exe "$B/examples/workload" --format perfetto -o "$T/pf" &&
    protoc --decode=callsight_test.Trace -I "$TESTS/tools" perfetto_subset.proto <"$T/pf" |
    python3 "$TESTS/tools/perfetto_check.py" >"$T/timeline" 2>"$T/err"
is "$(grep -c ' B \[callsight flush\]$' "$T/timeline") $(wc -c <"$T/err")" "$flushes 0" \
    "perfetto: a valid timeline with one [callsight flush] slice per flush"
exit $_failed
