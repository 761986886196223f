#!/usr/bin/env bash
# 158-control-file.t - live control, step 1 (issue 31, docs/control.md):
# `callsight ctl --pid` changes what a running process started with
# TRACE_CONTROL=1 records, and every count stays exact.  The program runs
# six phases of 1000 calls each of f and g, waiting for a line on its
# stdin between phases, so each change lands between two phases:
#   phase 0 everything | --off f | 1 g only | --pause | 2 nothing |
#   --resume (f still off) | 3 g only | --reset | 4 everything |
#   --only g | 5 g only
# so f has 2000 calls, g 5000, main 1, and no exit lacks its enter (main's
# exit comes under "only g": it is recorded as its enter was): in event
# mode and in summary mode.  Each change is said in the trace (a
# note per generation), ctl's exit status says whether a thread applied
# it, and the control block is the owner's only and goes with the process.
source "$(dirname "$0")/../lib/lib.sh"
plan 24

cat > "$T/phases.c" << 'EOF2'
#include <stdio.h>
__attribute__((noinline)) int f(int x) { return x * 3 + 1; }
__attribute__((noinline)) int g(int x) { return x ^ 5; }
int main(void)
{
    char line[64];
    int s = 0;
    for (int phase = 0;; phase++) {
        for (int i = 0; i < 1000; i++)
            s += f(i) + g(i);
        printf("phase %d done\n", phase);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            break;
    }
    return s == 42;
}
EOF2
build_traced "$T/phases" "$T/phases.c"
UID_=$(id -u)

# phases MODE DIR: run the five phases with the changes between them;
# ctl's lines in $T/MODE.ctl, its exit statuses in $T/MODE.rc.
phases() {
    local mode=$1 dir=$2 fifo=$T/$1.in
    mkfifo "$fifo"
    TRACE_MODE=$mode TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$dir" "$T/phases" < "$fifo" > "$T/$mode.out" &
    PID=$!
    track_pid $PID
    track_shm "/callsight-ctl-$UID_-$PID"
    exec 3> "$fifo"
    next() { # wait (bounded) for phase $1 to be done
        local i=0
        until grep -q "^phase $1 done" "$T/$mode.out" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
    }
    written() { # wait (bounded) until ctl in the background has written generation $1
        local i=0
        until "$CS" ctl --pid $PID --show 2> /dev/null | grep -q "generation $1:" || [ $i -ge 200 ]; do
            sleep 0.05
            i=$((i + 1))
        done
    }
    next 0
    stat -c %a "/dev/shm/callsight-ctl-$UID_-$PID" > "$T/$mode.mode"
    { "$CS" ctl --pid $PID --show; echo $? >> "$T/$mode.rc"
      "$CS" ctl --pid $PID --exe "$T/phases" --off f --wait 0; echo $? >> "$T/$mode.rc"; } >> "$T/$mode.ctl" 2>&1
    echo >&3; next 1
    { "$CS" ctl --pid $PID --pause --wait 0; echo $? >> "$T/$mode.rc"; } >> "$T/$mode.ctl" 2>&1
    echo >&3; next 2
    "$CS" ctl --pid $PID --resume --wait 10000 >> "$T/$mode.ctl" 2>&1 &
    local c=$!
    written 6; echo >&3; wait $c; echo $? >> "$T/$mode.rc"; next 3
    "$CS" ctl --pid $PID --reset --wait 10000 >> "$T/$mode.ctl" 2>&1 &
    c=$!
    written 8; echo >&3; wait $c; echo $? >> "$T/$mode.rc"; next 4
    "$CS" ctl --pid $PID --exe "$T/phases" --only g --wait 10000 >> "$T/$mode.ctl" 2>&1 &
    c=$!
    written 10; echo >&3; wait $c; echo $? >> "$T/$mode.rc"; next 5
    exec 3>&-
    wait $PID
}

counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$1" | sort | tr '\n' ' '; }

phases events "$T/ev"
ok $? "event mode: the program ran its five phases"
is "$(cat "$T/events.mode")" "600" "the control block is the owner's only (mode 600)"
is "$(cat "$T/events.rc" | tr '\n' ' ')" "0 4 4 0 0 0 " \
    "ctl's exit statuses: shown 0; written while the program waited 4, twice; applied 0, three times"
is "$(sed "s/pid $PID/pid P/" "$T/events.ctl")" "callsight ctl: pid P: generation 0: recording everything
callsight ctl: pid P: generation 2: recording all but 1 function (written; no thread has applied it yet: each does at its next call)
callsight ctl: pid P: generation 4: paused (on --resume: all but 1 function) (written; no thread has applied it yet: each does at its next call)
callsight ctl: pid P: generation 6: recording all but 1 function (applied)
callsight ctl: pid P: generation 8: recording everything (applied)
callsight ctl: pid P: generation 10: recording only 1 function (applied)" "ctl says each generation, what it sets, and whether it was applied"
is "$(ls /dev/shm | grep -c "^callsight-ctl-$UID_-$PID\$")" "0" "the control block went with the process"
"$CS" analyze "$T/ev" --exe "$T/phases" > "$T/ev.txt" 2>&1
h=$(head -n 1 "$T/ev.txt")
is "$(counts "$T/ev.txt")" "f 2000 g 5000 main 1 " "event mode: f 2000 calls (phases 0 and 4), g 5000, exactly"
is "$(field unmatched_exits "$h") $(field unclosed_enters "$h") $(field events "$h")" "0 0 14002" \
    "no exit without its enter, none left open: main's enter before any change, its exit after"
is "$(grep -c "^note: pid $PID: live control: generation \([2468]\|10\) from [0-9.]* s: " "$T/ev.txt")" "5" "a note per generation"
is "$(sed -n "s/^note: pid $PID: live control: generation \([0-9]*\) from [0-9.]* s: \(.*\), applied by \(.*\) (calls.*/\1 \2 \3/p" "$T/ev.txt")" \
    "2 recording all but 1 function 1 thread
4 paused (all but 1 function when resumed) 1 thread
6 recording all but 1 function 1 thread
8 recording everything 1 thread
10 recording only 1 function 1 thread" "each says what the generation set and how many threads applied it"
"$CS" analyze "$T/ev" --exe "$T/phases" --jobs 2 > "$T/ev2.txt" 2>&1
is "$(grep 'live control' "$T/ev2.txt" | sed 's/from [0-9.]* s//')" "$(grep 'live control' "$T/ev.txt" | sed 's/from [0-9.]* s//')" \
    "--jobs 2: the same notes"

phases summary "$T/sum"
ok $? "summary mode: the program ran its five phases"
is "$(cat "$T/summary.rc" | tr '\n' ' ')" "0 4 4 0 0 0 " "the same exit statuses"
"$CS" analyze "$T/sum" --exe "$T/phases" > "$T/sum.txt" 2>&1
is "$(counts "$T/sum.txt")" "f 2000 g 5000 main 1 " "summary mode: the same exact counts"
is "$(grep -c "^note: pid [0-9]*: live control: generation \([2468]\|10\) from [0-9.]* s: " "$T/sum.txt")" "5" \
    "summary mode: a note per generation too (the markers go among the snapshots)"

# --- what ctl refuses ---
sleep 30 & S=$!
track_pid $S
"$CS" ctl --pid $S --pause > "$T/none.out" 2>&1
is "$? $(cat "$T/none.out")" "3 callsight ctl: pid $S has no control block: it is not running, or was not started with TRACE_CONTROL=1 by this user" \
    "a process without TRACE_CONTROL: exit 3, one line says why"
mkfifo "$T/r.in"
TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/r" "$T/phases" < "$T/r.in" > "$T/r.out" &
R=$!
track_pid $R
track_shm "/callsight-ctl-$UID_-$R"
exec 4> "$T/r.in"
for i in $(seq 100); do grep -q 'phase 0 done' "$T/r.out" && break; sleep 0.1; done
"$CS" ctl --pid $R --exe "$T/phases" --off nosuch > "$T/r1" 2>&1
is "$? $(cat "$T/r1")" "1 callsight ctl: no function named 'nosuch' in $T/phases: nothing changed" "a name that matches nothing: refused, exit 1"
"$CS" ctl --pid $R --exe "$TOOLBIN/wrap16" --off f > "$T/r2" 2>&1
is "$? $(grep -c "has build-id .*; pid $R runs .*: give the binary it runs" "$T/r2")" "1 1" "another binary's --exe: refused by build-id"
"$CS" ctl --pid $R --off f > "$T/r3" 2>&1
is "$?" "2" "--off without --exe: a usage error"
"$CS" ctl --pid $R --pause --reset > "$T/r4" 2>&1
is "$?" "2" "two changes at once: a usage error"
"$CS" ctl --pid $R --show > "$T/r5" 2>&1
is "$? $(cat "$T/r5")" "0 callsight ctl: pid $R: generation 0: recording everything" "nothing refused changed anything"
exec 4>&-
wait $R

# --- without TRACE_CONTROL: no block ---
TRACE_ENABLE=1 TRACE_DIR="$T/plain" "$T/phases" < /dev/null > /dev/null &
P2=$!
wait $P2
is "$(ls /dev/shm | grep -c "^callsight-ctl-$UID_-$P2\$")" "0" "without TRACE_CONTROL the process makes no control block"
is "$(counts <("$CS" analyze "$T/plain" --exe "$T/phases" 2>&1))" "f 1000 g 1000 main 1 " "and is traced as before"
# --- exec: the new image makes the block again, nothing is left behind ---
cat > "$T/execself.c" << 'EOF2'
#include <unistd.h>
__attribute__((noinline)) int f(int x) { return x + 1; }
int main(int argc, char **argv)
{
    (void)f(argc);
    if (argc == 1)
        execl(argv[0], argv[0], "again", (char *)0);
    return 0;
}
EOF2
build_traced "$T/execself" "$T/execself.c"
TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/ex" "$T/execself" 2> "$T/ex.err" &
E=$!
track_shm "/callsight-ctl-$UID_-$E"
wait $E
is "$? $(cat "$T/ex.err")" "0 " "a program that execs itself: its new image makes the control block again, without a word"
is "$(ls /dev/shm | grep -c "^callsight-ctl-$UID_-$E\$")" "0" "and no block is left once it exits (exec runs no atexit)"
exit $_failed
