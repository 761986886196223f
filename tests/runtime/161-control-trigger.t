#!/usr/bin/env bash
# 161-control-trigger.t - live control, `--trigger NAME>LIMIT` (issue 31
# step 3, docs/control.md): a running program's trigger rule set, replaced
# and cleared without a restart, exactly from the change on; `--reset` goes
# back to TRACE_TRIGGER's rule, `--trigger none` to no rule at all; through
# `ctl --pid` (file mode) and through serve to a flight recorder, which then
# takes a snapshot of the next slow call.
# Each phase waits 120 ms, then calls slow(i) and slo() 20 times; slow(0)
# and slow(10) take 4 ms.  A process asks at most once per 100 ms
# (TRACE_TRIGGER_GAP_MS), so a phase whose rule is slow>2ms fires exactly
# once (slow(0)), and slo, a fast function whose name is slow's prefix,
# never does:
#   phase 0 | --trigger slow>2ms | 1 | --trigger slo>2ms | 2 |
#   --off slo --trigger none | 3 | --reset | 4
# Without TRACE_TRIGGER: a trigger in phase 1 only.  With
# TRACE_TRIGGER=slow>2ms: phases 0, 1 and 4.
source "$(dirname "$0")/../lib/lib.sh"
plan 18

cat > "$T/slow.c" << 'EOF2'
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static volatile int sink;
__attribute__((noinline)) void slow(int i)
{
    struct timespec d = {0, i % 10 == 0 ? 4000000 : 0};
    if (d.tv_nsec)
        nanosleep(&d, NULL);
    sink++;
}
__attribute__((noinline)) void slo(void) { sink++; }
__attribute__((noinline)) void tick(void) { sink++; }
static volatile int done;
static void *ticker(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 1000000};
    while (!done) {
        tick();
        nanosleep(&ms, NULL);
    }
    return NULL;
}
int main(void)
{
    char line[64];
    pthread_t t;
    struct timespec gap = {0, 120000000};
    pthread_create(&t, NULL, ticker, NULL);
    for (int phase = 0;; phase++) {
        nanosleep(&gap, NULL);
        for (int i = 0; i < 20; i++) {
            slow(i);
            slo();
        }
        printf("phase %d done\n", phase);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            break;
    }
    done = 1;
    pthread_join(t, NULL);
    return 0;
}
EOF2
build_traced "$T/slow" "$T/slow.c"
UID_=$(id -u)

# phases NAME TARGET...: the program through its changes, ctl aimed at
# TARGET; ctl's lines in $T/NAME.ctl, statuses in $T/NAME.rc.
phases() {
    local name=$1 fifo=$T/$1.in; shift
    exec 3> "$fifo"
    next() { wait_in "$T/$name.out" "^phase $1 done" > /dev/null; }
    c() { "$CS" ctl "$@" >> "$T/$name.ctl" 2>&1; echo $? >> "$T/$name.rc"; }
    next 0
    c "$@" --exe "$T/slow" --trigger 'slow>2ms'
    echo >&3; next 1
    c "$@" --exe "$T/slow" --trigger 'slo>2ms'
    echo >&3; next 2
    c "$@" --exe "$T/slow" --off slo --trigger none
    echo >&3; next 3
    c "$@" --reset
    echo >&3; next 4
    exec 3>&-
}
# triggers FILE: how many slow calls of slow fired, in a report
triggers() { grep -c '^trigger: slow (slow.c:[0-9]*) took [0-9.]* ms' "$1"; }

for run in none start; do
    mkfifo "$T/$run.in"
    rule=; [ $run = start ] && rule='slow>2ms'
    TRACE_TRIGGER=$rule TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/$run" "$T/slow" < "$T/$run.in" > "$T/$run.out" &
    PID=$!
    track_pid $PID
    track_shm "/callsight-ctl-$UID_-$PID"
    phases $run --pid $PID
    wait $PID
    is "$? $(tr '\n' ' ' < "$T/$run.rc")" "0 0 0 0 0 " "TRACE_TRIGGER=$rule: the program ran, every change applied (exit 0)"
    "$CS" analyze "$T/$run" --exe "$T/slow" > "$T/$run.txt" 2>&1
    h=$(head -n 1 "$T/$run.txt")
    is "$(field unmatched_exits "$h") $(field unclosed_enters "$h")" "0 0" "TRACE_TRIGGER=$rule: no exit without its enter"
done
is "$(triggers "$T/none.txt")" 1 "no TRACE_TRIGGER: one trigger, the live rule's (phase 1)"
is "$(triggers "$T/start.txt")" 3 "TRACE_TRIGGER=slow>2ms: three (phases 0, 1, and 4 after --reset; none under slo or none)"
# each trigger in the phase it belongs to: its time against the notes' generations
gens() { sed -n 's/^note: pid [0-9]*: live control: generation \([0-9]*\) from \([0-9.]*\) s: .*/\2/p' "$1" | tr '\n' ' '; }
times() { sed -n 's/^trigger: slow .* ending at \([0-9.]*\)s .*/\1/p' "$1" | tr '\n' ' '; }
phase_of() { # FILE: the phase of each trigger (0 before generation 2, k after generation 2k)
    local g; g=$(gens "$1")
    for t in $(times "$1"); do
        echo "$t $g" | awk '{ p = 0; for (i = 2; i <= NF; i++) if ($1 > $i) p = i - 1; printf "%d ", p }'
    done
}
is "$(phase_of "$T/none.txt")" "1 " "no TRACE_TRIGGER: the trigger fired in phase 1"
is "$(phase_of "$T/start.txt")" "0 1 4 " "TRACE_TRIGGER: in phases 0, 1 and 4"
is "$(sed "s/pid [0-9]*/pid P/" "$T/none.ctl")" "callsight ctl: pid P: generation 2: recording everything, with its own trigger rule (applied)
callsight ctl: pid P: generation 4: recording everything, with its own trigger rule (applied)
callsight ctl: pid P: generation 6: recording all but 1 function, with no trigger (applied)
callsight ctl: pid P: generation 8: recording everything (applied)" "ctl says each rule"
is "$(sed -n 's/^note: pid [0-9]*: live control: generation \([0-9]*\) from [0-9.]* s: \(.*\), applied by 2 threads.*/\1 \2/p' "$T/none.txt")" \
    "2 recording everything, a trigger set live
4 recording everything, a trigger set live
6 recording all but 1 function
8 recording everything" "analyze notes which generations set a trigger"
row() { awk -v n="$2" 'NF >= 10 && $1 ~ /^[0-9]+$/ && $10 == n { print $1 }' "$1"; }
is "$(row "$T/none.txt" slow) $(row "$T/none.txt" slo)" "100 80" "counts exact: slow 100, slo 80 (off in phase 3)"

# --- through serve, to a flight recorder started without any rule ---
phases_through_serve "$T/slow" /cs161$$ --flight-recorder || exit 1
phases srv "$T/srv"
wait $P
wait $TS_PID
is "$? $(tr '\n' ' ' < "$T/srv.rc")" "0 0 0 0 0 " "through serve: trace_stream exits 0, every change applied"
wait_serve_closed 2
stop_serve
is "$(grep -c '^trace_stream: snapshot [0-9]* (a slow call (TRACE_TRIGGER))' "$T/srv.ts")" 1 \
    "the recorder took one snapshot: phase 1's slow call, under the rule set live"
"$CS" analyze "$T/srv" --exe "$T/slow" > "$T/srv.txt" 2>&1
grep -Eq '^trigger: slow \(slow.c:[0-9]+\) took [0-9.]+ ms, ending at [0-9.]+s on thread [0-9]+( \(slow\))?; stack: (\.\.\. > )?main > slow$' "$T/srv.txt"
ok $? "the snapshot holds the slow call and its stack"

# --- what --trigger refuses ---
"$CS" ctl --pid 1 --exe "$T/slow" --trigger 'slow>2' > "$T/r1" 2>&1
is "$? $(cat "$T/r1")" "2 callsight ctl: --trigger: 'slow>2' is not NAME>LIMIT (such as parse>2ms; units ns, us, ms, s) or none" \
    "a limit without its unit: a usage error"
"$CS" ctl --pid 1 --pause --trigger 'slow>2ms' > "$T/r2" 2>&1
is "$? $(cat "$T/r2")" "2 callsight ctl: --trigger is part of a whole new setting: alone, or with --off, --only, --under or --reset (try --help)" \
    "--trigger with --pause: a usage error"
mkfifo "$T/near.in"
TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/near" "$T/slow" < "$T/near.in" > "$T/near.out" &
PID=$!
track_pid $PID
track_shm "/callsight-ctl-$UID_-$PID"
exec 3> "$T/near.in"
wait_in "$T/near.out" "^phase 0 done" > /dev/null
"$CS" ctl --pid $PID --exe "$T/slow" --trigger 'sl>2ms' > "$T/r3" 2>&1
is "$? $(cat "$T/r3")" "1 callsight ctl: no function named 'sl' in $T/slow: nothing changed" "a near-miss name matches nothing: refused"
"$CS" ctl --pid $PID --exe "$T/slow" --trigger 'slow>2ms' > /dev/null 2>&1
"$CS" ctl --pid $PID --show > "$T/r4" 2>&1
is "$? $(sed 's/pid [0-9]*/pid P/' "$T/r4")" "0 callsight ctl: pid P: generation 2: recording everything, with its own trigger rule" "--show says the rule"
exec 3>&-
wait $PID
exit $_failed
