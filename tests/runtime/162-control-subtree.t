#!/usr/bin/env bash
# 162-control-subtree.t - live control, `--under NAME [--depth D]` (issue
# 31 step 3, docs/control.md): from a change on, only calls inside a call
# of NAME are recorded, at most D levels below it, exactly; through
# `ctl --pid` (file mode, events and summary) and through serve (`ctl DIR`).
# The program calls top() -> a() -> b() -> c() and other() -> a() -> ...
# 100 times per phase, waiting for a line between phases, while a ticker
# thread calls tick() every millisecond (so each change is applied while
# the main thread waits):
#   phase 0 everything | --under top --depth 1 | 1 top, a under it |
#   --under top --depth 0 | 2 top alone | --under top | 3 top a b c under it |
#   --reset | 4 everything
# so top 500, a 600 (200 + 100 + 100 + 200), b 500, c 500, other 200.
source "$(dirname "$0")/../lib/lib.sh"
plan 14

cat > "$T/tree.c" << 'EOF2'
#include <pthread.h>
#include <stdio.h>
#include <time.h>
static volatile int sink;
__attribute__((noinline)) void c(void) { sink++; }
__attribute__((noinline)) void b(void) { c(); }
__attribute__((noinline)) void a(void) { b(); }
__attribute__((noinline)) void top(void) { a(); }
__attribute__((noinline)) void other(void) { a(); }
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
    pthread_create(&t, NULL, ticker, NULL);
    for (int phase = 0;; phase++) {
        for (int i = 0; i < 100; i++) {
            top();
            other();
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
build_traced "$T/tree" "$T/tree.c"
UID_=$(id -u)
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 !~ /^tick/ { print $10, $1 }' "$1" | sort | tr '\n' ' '; }
WANT="a 600 b 500 c 500 main 1 other 200 top 500 "

# phases NAME TARGET...: the program through its changes, ctl aimed at
# TARGET (--pid P, or a serve directory); lines in $T/NAME.ctl, statuses in $T/NAME.rc.
phases() {
    local name=$1 fifo=$T/$1.in; shift
    exec 3> "$fifo"
    next() { wait_in "$T/$name.out" "^phase $1 done" > /dev/null; }
    c() { "$CS" ctl "$@" >> "$T/$name.ctl" 2>&1; echo $? >> "$T/$name.rc"; }
    next 0
    c "$@" --exe "$T/tree" --under top --depth 1
    echo >&3; next 1
    c "$@" --exe "$T/tree" --under top --depth 0
    echo >&3; next 2
    c "$@" --exe "$T/tree" --under top
    echo >&3; next 3
    c "$@" --reset
    echo >&3; next 4
    exec 3>&-
}

for mode in events summary; do
    mkfifo "$T/$mode.in"
    TRACE_MODE=$mode TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/$mode" "$T/tree" < "$T/$mode.in" > "$T/$mode.out" &
    PID=$!
    track_pid $PID
    track_shm "/callsight-ctl-$UID_-$PID"
    phases $mode --pid $PID
    wait $PID
    ok $? "$mode mode: the program ran its phases"
    is "$(tr '\n' ' ' < "$T/$mode.rc")" "0 0 0 0 " "$mode: every change applied (exit 0)"
    "$CS" analyze "$T/$mode" --exe "$T/tree" > "$T/$mode.txt" 2>&1
    is "$(counts "$T/$mode.txt")" "$WANT" "$mode mode: exactly the subtree of each phase"
done
is "$(sed "s/pid [0-9]*/pid P/" "$T/events.ctl")" "callsight ctl: pid P: generation 2: recording only calls under 1 function (at most 1 level below it) (applied)
callsight ctl: pid P: generation 4: recording only calls under 1 function (at most 0 levels below it) (applied)
callsight ctl: pid P: generation 6: recording only calls under 1 function (all levels) (applied)
callsight ctl: pid P: generation 8: recording everything (applied)" "ctl says what each change records"
h=$(head -n 1 "$T/events.txt")
is "$(field unmatched_exits "$h") $(field unclosed_enters "$h")" "0 0" "no exit without its enter, none left open"
is "$(sed -n 's/^note: pid [0-9]*: live control: generation \([0-9]*\) from [0-9.]* s: \(.*\), applied by 2 threads.*/\1 \2/p' "$T/events.txt")" \
    "2 recording only calls under 1 function (at most 1 level below it)
4 recording only calls under 1 function (at most 0 levels below it)
6 recording only calls under 1 function (all levels)
8 recording everything" "analyze notes each subtree setting, applied by both threads"

# --- through serve: the same from the host ---
phases_through_serve "$T/tree" /cs162$$ || exit 1
phases srv "$T/srv"
wait $P
wait $TS_PID
is "$? $(tr '\n' ' ' < "$T/srv.rc")" "0 0 0 0 0 " "through serve: trace_stream exits 0, every change applied"
wait_serve_closed 1
stop_serve
is "$(counts <("$CS" analyze "$T/srv" --exe "$T/tree" 2>&1))" "$WANT" "through serve: the same exact subtrees"
is "$(head -n 3 "$T/srv.ctl")" "callsight ctl: conn 1: generation 2: recording only calls under 1 function (at most 1 level below it) (applied)
callsight ctl: conn 1: generation 4: recording only calls under 1 function (at most 0 levels below it) (applied)
callsight ctl: conn 1: generation 6: recording only calls under 1 function (all levels) (applied)" "the device answers with the depth it applied"

# --- what --under refuses ---
"$CS" ctl --pid 1 --exe "$T/tree" --under top --under a > "$T/u1" 2>&1
is "$?" "2" "--under twice: a usage error"
"$CS" ctl --pid 1 --exe "$T/tree" --off top --depth 1 > "$T/u2" 2>&1
is "$? $(cat "$T/u2")" "2 callsight ctl: --depth goes with --under (try --help)" "--depth without --under: a usage error"
exit $_failed
