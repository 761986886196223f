#!/usr/bin/env bash
# 468-stream-control-recorder.t - live control, `ctl DIR --recorder on|off`
# (issue 31 step 3, docs/control.md): a streaming device's ring turned
# into a flight recorder and back without a restart.  While it records,
# the main series has a hole made on purpose, a slow call (TRACE_TRIGGER)
# comes as a snapshot of its own, and analyze counts every call exactly
# once and no exit as unmatched.  The program, one thread, in phases:
#   phase 0: 40 x (slow, slo)                  streaming
#   --recorder on
#   phase 1: slow(-1), 40 ms, then 40 x (slow, slo)
#   (the snapshot of the slow call is sent)
#   phase 2: BIG x slo, then 40 x (slow, slo)
#   --recorder off
#   phase 3: 40 x (slow, slo)                  streaming again
# Every enter and exit the program made is in the main series, in a
# snapshot, overwritten on the device, or dropped there, each counted:
# their sum is exactly what it made.  A thread's events reach the ring
# when its buffer is flushed, so which side of a switch a few of them land
# on is the buffer's to say; none is lost for it.
source "$(dirname "$0")/../lib/lib.sh"
plan 20

cat > "$T/rec.c" << 'EOF2'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile int sink;
__attribute__((noinline)) void slow(int i)
{
    struct timespec d = {0, i < 0 ? 40000000 : 0};
    if (d.tv_nsec)
        nanosleep(&d, NULL);
    sink++;
}
__attribute__((noinline)) void slo(void) { sink++; }
int main(void)
{
    char line[64];
    int big = getenv("REC_BIG") ? atoi(getenv("REC_BIG")) : 0;
    for (int phase = 0;; phase++) {
        if (phase == 1)
            slow(-1);
        for (int i = 0; i < 40; i++) {
            slow(i);
            slo();
        }
        for (int i = 0; phase == 2 && i < big; i++)
            slo();
        printf("phase %d done\n", phase);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            break;
    }
    return 0;
}
EOF2
build_traced "$T/rec" "$T/rec.c"

# run NAME BIG SIZE [PROG]: the phases through serve (SIZE: TRACE_SHM_SIZE
# of the ring trace_stream makes), into $T/NAME and $T/NAME.ts; ctl's
# lines in $T/NAME.ctl, its statuses and trace_stream's in $T/NAME.rc.
run() {
    local name=$1 prog=${4:-$T/rec} conns=2
    export REC_BIG=$2 TRACE_TRIGGER='slow>15ms' TRACE_SHM_SIZE=$3
    phases_through_serve "$prog" /cs468$$ || return 1
    c() { "$CS" ctl "$T/srv" "$@" >> "$T/$name.ctl" 2>&1; echo $? >> "$T/$name.rc"; }
    c --recorder on
    [ "$name" = big ] && c --recorder on # already on: applied, nothing to do
    echo >&3; wait_in "$T/srv.out" "^phase 1 done" > /dev/null
    if [ "$name" = old ]; then
        conns=1
    else
        wait_in "$T/srv.ts" "^trace_stream: snapshot 1 " > /dev/null
    fi
    echo >&3; wait_in "$T/srv.out" "^phase 2 done" > /dev/null
    c --recorder off
    echo >&3; wait_in "$T/srv.out" "^phase 3 done" > /dev/null
    exec 3>&-
    wait $P
    wait $TS_PID
    echo $? >> "$T/$name.rc"
    wait_serve_closed $conns
    stop_serve
    mv "$T/srv" "$T/$name"
    mv "$T/srv.ts" "$T/$name.ts"
    rm -f "$T/srv.in" "$T/srv.out"
    unset REC_BIG TRACE_TRIGGER TRACE_SHM_SIZE
    "$CS" analyze "$T/$name" --exe "$prog" > "$T/$name.txt" 2>&1
}
# total FILE FUNC: calls of FUNC in a report, summed over its rows (each
# source its own process: the main series and each snapshot)
total() { awk -v f="$2" 'NF >= 10 && $1 ~ /^[0-9]+$/ && $10 == f { n += $1 } END { print n + 0 }' "$1"; }
overwritten() { sed -n 's/.*; \([0-9]*\) events were overwritten on the device before.*/\1/p' "$1"; }

# --- a ring large enough that nothing is overwritten ---
run big 0 1048576
is "$(tr '\n' ' ' < "$T/big.rc")" "0 0 0 0 " "ctl applied each switch (exit 0), trace_stream exits 0"
is "$(cat "$T/big.ctl")" "callsight ctl: conn 1: flight recorder on (applied: the ring keeps its most recent events; snapshots come as series of their own)
callsight ctl: conn 1: flight recorder on (applied: the ring keeps its most recent events; snapshots come as series of their own)
callsight ctl: conn 1: flight recorder off (applied: streaming)" "ctl says each switch"
is "$(grep -c '^trace_stream: flight recorder on (live control)' "$T/big.ts") $(grep -c '^trace_stream: snapshot [0-9]* (a slow call (TRACE_TRIGGER))' "$T/big.ts") $(grep -c '^trace_stream: flight recorder off (live control): 0 events overwritten' "$T/big.ts")" \
    "1 1 1" "trace_stream: on once (the second asked for nothing), one snapshot of the slow call, off with nothing overwritten"
h=$(head -n 1 "$T/big.txt")
is "$(field unmatched_exits "$h") $(field dropped "$h")" "0 0" "no exit without its enter, nothing dropped"
is "$(total "$T/big.txt" slow) $(total "$T/big.txt" slo)" "161 160" "every call counted once: slow 161, slo 160 (main series and snapshot together)"
grep -Eq '^note: stream 1: flight recorder turned on 1 time by live control \(first at [0-9.]+ s\): what the device recorded then came only as snapshots \(series of their own\); 0 events were overwritten on the device before they were shipped\.  A hole made on purpose, not loss: calls open across it are truncated$' "$T/big.txt"
ok $? "analyze notes the hole in the main series as made on purpose"
grep -Eq '^trigger: slow \(rec.c:[0-9]+\) took [0-9.]+ ms, ending at [0-9.]+s on thread [0-9]+ \(rec\); stack: main > slow$' "$T/big.txt"
ok $? "the snapshot holds the slow call and its stack"
grep -q '^note: stream 2: flight-recorder snapshot 1, taken for a slow call (TRACE_TRIGGER)' "$T/big.txt"
ok $? "the snapshot is a series of its own"

# --- a small ring: most of phase 2 is overwritten on the device ---
run small 20000 65536
is "$(tr '\n' ' ' < "$T/small.rc")" "0 0 0 " "small ring: both switches applied, trace_stream exits 0"
h=$(head -n 1 "$T/small.txt")
o=$(overwritten "$T/small.txt")
is "$(field unmatched_exits "$h")" 0 "small ring: no exit without its enter"
ok $(( ${o:-0} > 30000 ? 0 : 1 )) "small ring: most of phase 2's 40,160 events were overwritten ($o)"
is "$(sed -n 's/^trace_stream: flight recorder off (live control): \([0-9]*\) events overwritten.*/\1/p' "$T/small.ts")" "$o" \
    "trace_stream and analyze say the same count"
is "$(( $(field events "$h") + o + $(field dropped "$h") ))" $(( 2 * (1 + 1 + 4 * 80 + 20000) )) \
    "exact: events analyzed + overwritten + dropped = every enter and exit the program made"
"$CS" analyze "$T/small" --exe "$T/rec" --format json 2> /dev/null | python3 -c '
import json, sys
src = json.load(sys.stdin)["sources"]
print(" ".join("%d:%d:%d" % (s["id"], s["recorder_on"], s["recorder_overwritten"]) for s in src if "recorder_on" in s),
      sum(1 for s in src if s["id"] != 1 and "recorder_on" not in s) >= 1)' > "$T/small.json"
is "$(cat "$T/small.json")" "1:1:$o True" "the JSON: the main series had the recorder on once, with that count; the snapshots none"

# --- a tracer of the tree before (-DTRACE_RING_NO_LIVE_RECORDER) on the ring ---
cc -O2 -DTRACE_RING_NO_LIVE_RECORDER -c -o "$T/trace_old.o" "$DIST/trace.c" &&
    cc -O1 -g -finstrument-functions -o "$T/rec_old" "$T/rec.c" "$T/trace_old.o" -pthread
run old 0 1048576 "$T/rec_old"
is "$(tr '\n' ' ' < "$T/old.rc")" "1 0 0 " "a tracer that predates it: on is refused (exit 1), off applies (it is off), trace_stream exits 0"
is "$(head -n 1 "$T/old.ctl")" "callsight ctl: conn 1: refused: a tracer writing the ring predates the live flight recorder: it stays off; nothing changed" \
    "the refusal says why"
is "$(total "$T/old.txt" slow) $(total "$T/old.txt" slo) $(grep -c '^trace_stream: snapshot' "$T/old.ts")" "161 160 0" \
    "its stream went on whole: every call in the main series, no snapshot"

# --- usage ---
"$CS" ctl --pid 1 --recorder on > "$T/u1" 2>&1
is "$? $(cat "$T/u1")" "2 callsight ctl: --recorder goes with DIR: a device's ring, through serve (try --help)" "--recorder with --pid: a usage error"
"$CS" ctl "$T" --recorder of > "$T/u2" 2>&1
is "$? $(cat "$T/u2")" "2 callsight ctl: --recorder: 'of' is not on or off" "a near-miss value: a usage error"
"$CS" ctl "$T" --recorder on --mode events > "$T/u3" 2>&1
is "$? $(cat "$T/u3")" "2 callsight ctl: --recorder is a change of its own: without --threads, --trigger or --mode (try --help)" \
    "--recorder with --mode: a usage error"
exit $_failed
