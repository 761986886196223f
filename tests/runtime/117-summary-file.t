#!/usr/bin/env bash
# 117-summary-file.t - TRACE_MODE=summary in file mode: the hooks aggregate on
# the device and write snapshots, and analyze reports them.  Exact counts on
# the 26-thread workload, equal to event mode's; across fork and reused
# tids; calls beyond TRACE_SUMMARY_FUNCS and deeper than TRACE_SUMMARY_DEPTH
# counted in notes, with exact numbers; a program killed by SIGKILL keeps
# every count up to its last snapshot, and a torn snapshot at a file's end
# is reported and not used; outputs that need call paths, --function and
# directories mixing both kinds are refused with one line (time windows
# and the series: test 119).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 31

W=$B/examples/workload
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$1" | sort; }
note() { grep -c "^note: summary mode: $1" "$2"; }

TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/s" "$W" > /dev/null
ok $? "the workload runs with TRACE_MODE=summary"
"$CS" analyze "$T/s" --exe "$W" --top 0 > "$T/s.txt" 2> "$T/s.err"
ok $? "analyze reads the summary files"
expect_counts 16 25 12 64 8 | sort > "$T/expect"
is "$(rows "$T/s.txt")" "$(cat "$T/expect")" "exact counts of every function, from the device's aggregates"
h=$(head -n 1 "$T/s.txt")
is "$(field threads "$h") $(field functions "$h")" "26 15" "26 threads, 15 functions"
is "$(note "26 snapshots from 26 threads; calls, times, min and max are exact" "$T/s.txt")" "1" \
    "the report says what the numbers are"
TRACE_ENABLE=1 TRACE_DIR="$T/e" "$W" > /dev/null && "$CS" analyze "$T/e" --exe "$W" --top 0 > "$T/e.txt"
is "$(rows "$T/s.txt")" "$(rows "$T/e.txt")" "the same counts as event mode"
is "$(od -An -tu4 -j8 -N4 "$(ls "$T/s"/*.bin | head -n 1)" | tr -d ' ')" "3" \
    "summary files say version 3, so an older reader refuses them"
[ "$(du -sk "$T/s" | cut -f1)" -lt "$(du -sk "$T/e" | cut -f1)" ]
ok $? "summaries take less room than the events ($(du -sk "$T/s" | cut -f1) KB, $(du -sk "$T/e" | cut -f1) KB)"

# --- fork and reused tids ---
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/fork" "$B/examples/forker" > /dev/null
"$CS" analyze "$T/fork" --exe "$B/examples/forker" --top 0 > "$T/fork.txt" 2>&1
got=$(for f in main fork_and_work child_work leaf; do echo "$f=$(calls_of $f "$T/fork.txt")"; done | tr '\n' ' ')
is "$got" "main=1 fork_and_work=1 child_work=1 leaf=500 " "fork: the child starts empty, nothing counted twice"
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/reuse" unshare --pid --fork --mount-proc \
        "$B/examples/tidreuse" > "$T/reuse.out"
    "$CS" analyze "$T/reuse" --exe "$B/examples/tidreuse" --top 0 > "$T/reuse.txt" 2>&1
    got=$(for f in main run_generation thread_main leaf; do echo "$f=$(calls_of $f "$T/reuse.txt")"; done | tr '\n' ' ')
    is "$got" "main=1 run_generation=6 thread_main=6 leaf=6000 " "reused tids: each thread's totals kept, none overwritten"
else
    ok 1 "tid reuse needs root and unshare --pid"
fi

# --- bounds: the table and the shadow stack ---
cat > "$T/many.c" << 'EOF'
#include <stdio.h>
#include <stdlib.h>
#define F(n) static __attribute__((noinline)) int f##n(int x) { return x + n; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15) F(16) F(17) F(18) F(19)
static int (*const fs[20])(int) = {f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19};
static __attribute__((noinline)) int deep(int n) { return n ? deep(n - 1) + 1 : 0; }
int main(int argc, char **argv)
{
    int s = 0, d = argc > 1 ? atoi(argv[1]) : 0;
    for (int r = 0; r < 10; r++)
        for (int i = 0; i < 20; i++)
            s += fs[i](r);
    s += deep(d);
    printf("many: %d\n", s);
    return 0;
}
EOF
build_traced "$T/many" "$T/many.c"
TRACE_MODE=summary TRACE_SUMMARY_FUNCS=16 TRACE_ENABLE=1 TRACE_DIR="$T/tmany" "$T/many" 0 > /dev/null
"$CS" analyze "$T/tmany" --exe "$T/many" --top 0 > "$T/many.txt" 2>&1
# A function takes its place at its first return: f0..f15 fill the 16;
# f16..f19 (10 calls each), deep and main (1 each) do not fit.
grep -q "^note: summary mode: 42 calls of functions beyond the device's table (TRACE_SUMMARY_FUNCS) were counted but not attributed; no row shown misses any; a larger TRACE_SUMMARY_FUNCS (up to 65536, the default) attributes them$" "$T/many.txt"
ok $? "TRACE_SUMMARY_FUNCS=16: the 42 calls of the 6 functions that did not fit are counted in a note"
is "$(rows "$T/many.txt" | awk '{s += $2} END {print NR, s}')" "16 160" \
    "and the 16 that fit have their exact counts (f0..f15, 10 calls each)"
TRACE_MODE=summary TRACE_SUMMARY_DEPTH=16 TRACE_ENABLE=1 TRACE_DIR="$T/deep" "$T/many" 40 > /dev/null
"$CS" analyze "$T/deep" --exe "$T/many" --top 0 > "$T/deep.txt" 2>&1
grep -q "^note: summary mode: 26 calls deeper than the device's shadow stack (TRACE_SUMMARY_DEPTH) were not timed" "$T/deep.txt"
ok $? "TRACE_SUMMARY_DEPTH=16: 41 nested calls under main, the 26 beyond 16 frames counted as not timed"
is "$(calls_of deep "$T/deep.txt")" "15" "and the 15 within the stack are counted and timed"

# --- SIGKILL, and a torn snapshot ---
need_tools snapshot_victim
kill_snapshot_victim TRACE_DIR="$T/k"
"$CS" analyze "$T/k" --exe "$TOOLBIN/snapshot_victim" --top 0 > "$T/k.txt" 2>&1
is "$(calls_of work "$T/k.txt")" "10000" "SIGKILL: every call up to the last snapshot is there (work 10000)"
n=$(grep -o '^note: summary mode: [0-9]* snapshots' "$T/k.txt" | grep -o '[0-9]*')
[ "${n:-0}" -ge 3 ]
ok $? "SIGKILL: the run was covered by $n snapshots, every TRACE_SUMMARY_MS"
is "$(grep -c "^note: summary mode: pid $VICTIM_PID ended without an exit (killed?)" "$T/k.txt") $(grep -c 'ended without an exit' "$T/s.txt")" \
    "1 0" "SIGKILL: the report says the run ended without an exit; a normal run's does not"
f=$(ls "$T/k"/*.bin)
size=$(stat -c %s "$f")
truncate -s $((size - 64)) "$f" # the last snapshot loses its END
"$CS" analyze "$T/k" --exe "$TOOLBIN/snapshot_victim" --top 0 > "$T/torn.txt" 2>&1
is "$(note "1 snapshots were torn or damaged" "$T/torn.txt") $(calls_of work "$T/torn.txt")" "1 10000" \
    "a torn last snapshot is reported and not used; the one before holds every count"

# --- the tracer's time: every write slowed to 50 ms (tests/tools/slowwrite.c) ---
cat > "$T/slow.c" << 'EOF2'
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static __attribute__((noinline)) void tick(void) { usleep(1000); }
static __attribute__((noinline)) void outer(void)
{
    for (int i = 0; i < 100; i++)
        tick();
}
int main(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    outer();
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("outer_wall_us=%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000);
    return 0;
}
EOF2
need_tools slowwrite.so
build_traced "$T/slow" "$T/slow.c"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD=$TOOLBIN/slowwrite.so SLOWWRITE_MS=50 \
    TRACE_MODE=summary TRACE_SUMMARY_MS=20 TRACE_ENABLE=1 TRACE_DIR="$T/tslow" "$T/slow" > "$T/slow.out"
"$CS" analyze "$T/tslow" --exe "$T/slow" --top 0 > "$T/slow.txt" 2>&1
wall=$(sed -n 's/^outer_wall_us=//p' "$T/slow.out")
tracer=$(sed -n 's/^note: summary mode: tracer time excluded from function times: \([0-9.]*\) ms.*/\1/p' "$T/slow.txt")
incl=$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 == "outer" { print $2 }' "$T/slow.txt")
diag "outer: wall ${wall} us, incl ${incl} ms, tracer ${tracer} ms excluded"
awk -v w="$wall" -v t="$tracer" -v i="$incl" 'BEGIN { exit !(t >= 100 && i * 1000 <= w - 0.9 * t * 1000) }'
ok $? "snapshots taken inside outer() (>= 2 slow writes) are the tracer's time, not outer's"

# --- refusals ---
echo "an older report" > "$T/x.folded"
"$CS" analyze "$T/s" --exe "$W" --format folded -o "$T/x.folded" 2> "$T/folded.err"
is "$? $(cat "$T/folded.err")" "1 callsight analyze: summary traces hold totals, not call paths: this --format needs event traces (TRACE_MODE=events)" \
    "--format folded on summaries: refused with one line"
is "$(cat "$T/x.folded") $(ls "$T" | grep -c 'x.folded.')" "an older report 0" "the refusal leaves an existing -o file as it was, and no temporary one"
"$CS" analyze "$T/s" --exe "$W" -o /dev/null && [ -c /dev/null ] && ! ls /dev | grep -q '^null\.'
ok $? "-o /dev/null is written to, never renamed over"
"$CS" analyze "$T/s" --exe "$W" --keep-tracer-time > /dev/null 2> "$T/keep.err"
is "$? $(cat "$T/keep.err")" "1 callsight analyze: --keep-tracer-time needs event traces: in summary traces the device took the tracer's time out" \
    "--keep-tracer-time on summaries: refused with one line"
"$CS" analyze "$T/s" --exe "$W" --function fib > /dev/null 2> "$T/func.err"
is "$? $(cat "$T/func.err")" "1 callsight analyze: --function needs event traces: summary traces hold each function's totals, not its callees" \
    "--function on summaries: refused with one line"
mkdir -p "$T/mix" && cp "$T/s"/*.bin "$T/e"/*.bin "$T/mix/" 2>/dev/null
# two runs: analyze reports one of them (test 250); --all-runs asks for the mix
"$CS" analyze "$T/mix" --exe "$W" --all-runs > /dev/null 2> "$T/mix.err"
is "$? $(cat "$T/mix.err")" "1 callsight analyze: the traces mix events and summaries (TRACE_MODE=summary): analyze each from a directory of its own" \
    "a directory of events and summaries: never silently mixed"
# --- percentiles end to end: the same calls as events and as summaries ---
# TRACE_MODE=both records each call both ways, from one clock reading at
# each hook; the exact order statistics
# come from the events (tests/tools/sumcheck.py), the estimates from the
# summaries alone, which analyze reads once the kinds are split.
cat > "$T/spread.c" << 'EOF2'
#include <stdint.h>
#include <time.h>
static __attribute__((no_instrument_function)) uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static __attribute__((no_instrument_function)) void spin(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}
static __attribute__((noinline)) void uniform(uint64_t ns) { spin(ns); }
static __attribute__((noinline)) void bimodal(uint64_t ns) { spin(ns); }
static __attribute__((noinline)) void heavy(uint64_t ns) { spin(ns); }
int main(void)
{
    uint32_t x = 12345;
    for (int i = 0; i < 300; i++) {
        x = x * 1103515245u + 12345u;
        uniform(10000 + (x >> 8) % 50000);                  /* 10..60 us */
        bimodal(i % 5 ? 15000 : 120000);                    /* 80% at 15 us, 20% at 120 us */
        heavy(5000 + (uint64_t)5000 * ((x >> 4) % 64 == 0 ? 40 : (x >> 12) % 4)); /* a long tail */
    }
    return 0;
}
EOF2
build_traced "$T/spread" "$T/spread.c"
TRACE_MODE=both TRACE_SUMMARY_MS=0 TRACE_ENABLE=1 TRACE_DIR="$T/both" "$T/spread"
ok $? "TRACE_MODE=both: one run, each call as an event and in the summary"
python3 "$TESTS/tools/sumcheck.py" split "$T/both" "$T/both-sum" > "$T/exact.txt"
ok $? "the events' exact order statistics, and the summaries alone in a directory of their own"
"$CS" analyze "$T/both-sum" --exe "$T/spread" --format json -o "$T/both.json"
python3 "$TESTS/tools/sumcheck.py" compare "$T/exact.txt" "$T/both.json" > "$T/cmp.txt"
ok $? "every p50, p90 and p99 within 2% of the exact order statistic, min and max exact: $(tr '\n' ' ' < "$T/cmp.txt")"
is "$(grep -c . "$T/exact.txt")" "4" "four functions compared (main, uniform, bimodal, heavy)"
# The same with a flush every 1 ms (TRACE_FLUSH_MS=1): the event batches'
# flushes come inside main, and their time leaves the summary's frames as
# it leaves the events' (marker 29), so main's min and max stay exact.
TRACE_FLUSH_MS=1 TRACE_MODE=both TRACE_SUMMARY_MS=0 TRACE_ENABLE=1 TRACE_DIR="$T/both1" "$T/spread"
python3 "$TESTS/tools/sumcheck.py" split "$T/both1" "$T/both1-sum" > "$T/exact1.txt" &&
    "$CS" analyze "$T/both1-sum" --exe "$T/spread" --format json -o "$T/both1.json" &&
    python3 "$TESTS/tools/sumcheck.py" compare "$T/exact1.txt" "$T/both1.json" > "$T/cmp1.txt"
ok $? "TRACE_FLUSH_MS=1: flushes inside main taken out of the summary too, min and max exact: $(tr '\n' ' ' < "$T/cmp1.txt")"
n=$(python3 - "$T/both1" << 'PY'
import glob, struct, sys
n = 0
for f in glob.glob(sys.argv[1] + "/*.bin"):
    d = open(f, "rb").read()
    hs = struct.unpack_from("<I", d, 16)[0]
    for i in range(hs, len(d) - 31, 32):
        func, kind = struct.unpack_from("<Q", d, i + 8)[0], d[i + 28]
        n += kind == 2 and func == 29
print(n)
PY
)
ok $(( n >= 3 ? 0 : 1 )) "and there were such flushes ($n tracer-time markers)"

exit $_failed
