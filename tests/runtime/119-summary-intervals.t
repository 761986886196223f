#!/usr/bin/env bash
# 119-summary-intervals.t - summary traces over time: analyze --format json
# carries each function's calls and time per interval, and --since/--until
# choose the intervals that end inside the window.  A program that calls
# a() for 300 ms and then b() for 300 ms, with exactly known counts: every
# call is in exactly one interval, the phases show in order, and a window
# on either side of the change holds exactly what the series says; in file
# and in stream mode.  Hostile summary records sent through serve are
# counted as damaged and not used, in their own connection only; summary
# increments (TRACE_CHUNK_SUMMARY_INCREMENTS) are written whole, and
# malformed ones close their connection with one line.
source "$(dirname "$0")/../lib/lib.sh"
plan 25

cat > "$T/phases.c" << 'EOF2'
#include <stdio.h>
#include <time.h>
static long na, nb;
static __attribute__((noinline)) void a(void) { na++; }
static __attribute__((noinline)) void b(void) { nb++; }
static __attribute__((no_instrument_function)) double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
int main(void)
{
    double t = now();
    while (now() - t < 0.3)
        for (int i = 0; i < 1000; i++)
            a();
    t = now();
    while (now() - t < 0.3)
        for (int i = 0; i < 1000; i++)
            b();
    printf("a=%ld b=%ld\n", na, nb);
    return 0;
}
EOF2
build_traced "$T/phases" "$T/phases.c"
P=$T/phases

# series.py JSON: "a=N b=N" per function from the table, then each interval as
# "from_ms:a=N,b=N", then checks: every call in one interval, from_ns a
# multiple of width_ns, intervals rising.
cat > "$T/series.py" << 'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
tot = {f["name"]: f["calls"] for f in d["functions"]}
iv = d["intervals"]
w = iv["width_ns"]
seen, rows, last = {}, [], -1
good = iv["dropped"] == 0
for s in iv["series"]:
    good &= s["from_ns"] % w == 0 and s["from_ns"] > last
    last = s["from_ns"]
    c = {f["name"]: f["calls"] for f in s["functions"]}
    for k, v in c.items():
        seen[k] = seen.get(k, 0) + v
    rows.append("%d:a=%d,b=%d" % (s["from_ns"] // w, c.get("a", 0), c.get("b", 0)))
good &= seen == tot
print("a=%d b=%d" % (tot.get("a", 0), tot.get("b", 0)))
print("consistent" if good else "inconsistent")
print(" ".join(rows))
EOF2
series() { python3 "$T/series.py" "$1"; }

TRACE_MODE=summary TRACE_SUMMARY_MS=20 TRACE_ENABLE=1 TRACE_DIR="$T/f" "$P" > "$T/f.out"
ok $? "the two-phase program runs with TRACE_MODE=summary"
"$CS" analyze "$T/f" --exe "$P" --format json --interval 100ms -o "$T/f.json"
ok $? "analyze --format json --interval 100ms"
series "$T/f.json" > "$T/f.series"
is "$(sed -n 1p "$T/f.series")" "$(cat "$T/f.out")" "exact totals of a and b"
is "$(sed -n 2p "$T/f.series")" "consistent" \
    "every call of each function is in exactly one interval; intervals are multiples of the width, rising"
read -r -a IV < <(sed -n 3p "$T/f.series")
diag "intervals: ${IV[*]}"
# first and last interval of each phase
fa=-1 la=-1 fb=-1 lb=-1
for r in "${IV[@]}"; do
    k=${r%%:*} ca=${r#*:a=} ca=${ca%%,*} cb=${r##*,b=}
    [ "$ca" -gt 0 ] && { [ $fa -lt 0 ] && fa=$k; la=$k; }
    [ "$cb" -gt 0 ] && { [ $fb -lt 0 ] && fb=$k; lb=$k; }
done
[ "$fa" -ge 0 ] && [ "$fa" -lt "$fb" ] && [ "$la" -le "$fb" ] && [ "$lb" -gt "$la" ]
ok $? "the series shows a's phase before b's (a: $fa..$la, b: $fb..$lb)"
[ "${#IV[@]}" -ge 5 ]
ok $? "600 ms at 100 ms a interval: at least 5 intervals (${#IV[@]})"

# Windows on either side of b's first interval hold exactly the series' part.
sum_a() { # sum_a before|after: a's calls in the intervals before b's first, or from it on
    local s=0 r k ca
    for r in "${IV[@]}"; do
        k=${r%%:*} ca=${r#*:a=} ca=${ca%%,*}
        if { [ "$1" = before ] && [ "$k" -lt "$fb" ]; } || { [ "$1" = after ] && [ "$k" -ge "$fb" ]; }; then
            s=$((s + ca))
        fi
    done
    echo $s
}
cut_ms=$((fb * 100))
"$CS" analyze "$T/f" --exe "$P" --format json --interval 100ms --until "${cut_ms}ms" -o "$T/until.json"
is "$(series "$T/until.json" | sed -n 1p)" "a=$(sum_a before) b=0" \
    "--until ${cut_ms}ms: exactly the calls of the intervals before it"
"$CS" analyze "$T/f" --exe "$P" --format json --interval 100ms --since "${cut_ms}ms" -o "$T/since.json"
is "$(series "$T/since.json" | sed -n 1p)" "a=$(sum_a after) b=$(sed -n 's/.*b=//p' "$T/f.out")" \
    "--since ${cut_ms}ms: exactly the calls of the intervals from it on"
is "$(series "$T/since.json" | sed -n 2p)" "consistent" "the window's series holds exactly its totals"
"$CS" analyze "$T/f" --exe "$P" --since "${cut_ms}ms" > "$T/since.txt"
grep -q "^note: summary mode: [0-9]* snapshots from 1 threads end inside the window ([1-9][0-9]* more are not selected)" "$T/since.txt"
ok $? "the report says which snapshots the window chose"
is "$(field functions "$(head -n 1 "$T/since.txt")")" "$(field functions "$("$CS" analyze "$T/f" --exe "$P" | head -n 1)")" \
    "the header describes all input whatever the window (functions)"
nb=$(sed -n 's/.*b=//p' "$T/f.out") na=$(sed -n 's/a=\([0-9]*\).*/\1/p' "$T/f.out")
is "$(sed -n 's/^filter: since=[0-9.]*s: //p' "$T/since.txt")" "$(($(sum_a after) + nb + 1)) of $((na + nb + 1)) calls selected" \
    "the filter line counts the window's calls (main's one ends in it) of all the calls"
span=$(field span "$(head -n 1 "$T/since.txt")")
awk -v s="${span%s}" 'BEGIN { exit !(s >= 0.6 && s < 60) }'
ok $? "span covers the run (${span})"

# --- errors ---
"$CS" analyze "$T/f" --exe "$P" --interval 0 > /dev/null 2> "$T/iv0.err"
is "$? $(cat "$T/iv0.err")" "2 callsight analyze: --interval needs a time of at least 1ms, such as 1, 500ms, not '0'" \
    "--interval 0: a usage error"
TRACE_ENABLE=1 TRACE_DIR="$T/e" "$P" > /dev/null
"$CS" analyze "$T/e" --exe "$P" --interval 1s > /dev/null 2> "$T/ive.err"
is "$? $(cat "$T/ive.err")" "1 callsight analyze: --interval is for summary traces (TRACE_MODE=summary); these hold events" \
    "--interval on event traces: refused with one line"
"$CS" analyze "$T/e" --exe "$P" --format json -o "$T/e.json"
is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["intervals"])' "$T/e.json")" "None" \
    "event traces: intervals is null"

# --- stream mode ---
TRACE_MODE=summary TRACE_SUMMARY_MS=20 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 \
    "$CS" run --stream --dir "$T/s" --format json --interval 100ms -o "$T/s.json" -- "$P" > "$T/s.out" 2> "$T/s.err"
ok $? "callsight run --stream, summary mode, json"
series "$T/s.json" > "$T/s.series"
is "$(sed -n 1,2p "$T/s.series" | tr '\n' ' ')" "$(cat "$T/s.out") consistent " \
    "streamed: exact totals, every call in one interval"

# --- hostile summary records through serve ---
python3 - "$T/bad.rec" << 'EOF2'
import struct, sys
def r(part, ts, func, site, tid=7):
    return struct.pack("<QQQIBBBB", ts, func, site, tid, 4, part, 0, 0)
def snap(seq, calls, bucket=50, nfn=1, parts=None, end=True):
    out = r(1, 1000 * seq, seq, nfn)
    out += r(2, 50 * calls, 0x401000, calls) + r(3, 50 * calls, 50, 50)
    out += r(4, calls, 0, bucket << 32 | 0xffffffff) + r(5, 0, 0, 0)
    return out + (r(6, 1000 * seq + 500, seq, 0) if end else b"")
data = snap(1, 10)                 # whole
data += snap(2, 5)                 # calls went down
data += snap(3, 20, bucket=5000)   # a bucket past the last
data += snap(4, 30, end=False)     # torn: the next BEGIN comes first
data += snap(5, 30, nfn=1000000)   # says more functions than it holds
data += snap(6, 40)                # whole again: 40 calls in all
open(sys.argv[1], "wb").write(data)
EOF2
need_tools streamgen
start_serve "$T/h"
# serve names a connection's file when its first chunk is written, so the
# second connection starts only once the first has closed: otherwise, on a
# busy machine, it can take the lower id.
timeout 30 "$TOOLBIN/streamgen" --events 0 --records "$T/bad.rec" 127.0.0.1 "$SERVE_PORT" &&
    wait_serve_closed 1 &&
    timeout 30 "$TOOLBIN/streamgen" --events 3000 127.0.0.1 "$SERVE_PORT" &&
    wait_serve_closed 2
ok $? "a connection with hostile summary records, then one with events"
stop_serve
"$CS" analyze "$(ls "$T"/h/trace.stream.*.bin | head -n 1)" --exe "$P" --top 0 > "$T/h.txt" 2> "$T/h.err"
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $1 }' "$T/h.txt") $(grep -c '^note: summary mode: 4 snapshots were torn or damaged' "$T/h.txt")" \
    "40 1" "hostile snapshots: 4 damaged and not used, the last whole one counted"
perl "$TESTS/tools/tracecheck.pl" "$(ls "$T"/h/trace.stream.*.bin | sed -n 2p)" > "$T/h2.check"
is "$(sed -n 2p "$T/h2.check")" "events=3000 mismatched=0 markers= tail=0" "the next connection's 3000 events are intact"

# --- summary increments: written whole; malformed ones end their connection ---
start_serve "$T/inc"
timeout 30 "$TOOLBIN/streamgen" --increments "$TESTS/../fuzz/corpus/stream_sums/two-snapshots" 127.0.0.1 "$SERVE_PORT" &&
    wait_serve_closed 1 &&
    timeout 30 "$TOOLBIN/streamgen" --increments "$TESTS/../fuzz/corpus/stream_sums/bucket-out-of-order" 127.0.0.1 "$SERVE_PORT" &&
    wait_serve_closed 2 &&
    timeout 30 "$TOOLBIN/streamgen" --events 3000 127.0.0.1 "$SERVE_PORT" &&
    wait_serve_closed 3
ok $? "good increments, bad increments, then events: three connections"
stop_serve
"$CS" analyze "$T/inc/trace.stream.1.0.bin" --exe "$P" --top 0 > "$T/inc1.txt" 2>&1
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $1 }' "$T/inc1.txt" | sort -n | tr '\n' ' ')" "3 12 " \
    "increments written as whole snapshots: 0x1000 10+2 calls, 0x2000 3"
is "$(python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read()[80:]
print([struct.unpack_from("<Q", d, i + 16)[0] for i in range(0, len(d), 32) if d[i + 28] == 4 and d[i + 29] == 1])' \
    "$T/inc/trace.stream.1.0.bin")" "[1, 2]" "each whole snapshot lists every function once (1, then 2)"
grep -q "^callsight serve: conn 2 closed .*; error: chunk 1: summary increments, thread 2147483649: bucket 40 out of place$" "$SERVE_LOG" &&
    grep -q "^callsight serve: conn 3 closed .*: 3000 events, .*dropped 0$" "$SERVE_LOG"
ok $? "a bucket out of place: that connection closes with one line; the next is whole"
