#!/usr/bin/env bash
# 163-control-threads.t - live control, `--threads GLOBS` (issue 31 step 3,
# docs/control.md): from a change on, only threads whose name matches one
# of the globs record, each deciding when it applies the change; exact
# counts, through `ctl --pid` and through serve.  Each phase the program
# starts two threads, "wk-N" calling f() 100 times and "bg-N" calling g()
# 100 times, and waits for a line between phases; a thread named "tick"
# calls tick() every millisecond, so each change is applied at once:
#   phase 0 everything | --threads 'wk-*' | 1 the wk thread only |
#   --exe ... --off f --threads 'zz*,bg-*' | 2 bg's g only | --reset | 3 everything
# so f 300 (phases 0, 1, 3) and g 300 (0, 2, 3); a near-miss glob ('wk-'
# without the star) would select nothing.
source "$(dirname "$0")/../lib/lib.sh"
plan 12

cat > "$T/thr.c" << 'EOF2'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#define NOI __attribute__((no_instrument_function))
static volatile int sink, done;
__attribute__((noinline)) void f(void) { sink++; }
__attribute__((noinline)) void g(void) { sink--; }
__attribute__((noinline)) void tick(void) { sink ^= 1; }
struct job { const char *name; void (*fn)(void); };
NOI static void *run(void *arg)
{
    struct job *j = arg;
    pthread_setname_np(pthread_self(), j->name); /* before its first hook */
    for (int i = 0; i < 100; i++)
        j->fn();
    return NULL;
}
NOI static void *ticker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "tick");
    struct timespec ms = {0, 1000000};
    while (!done) {
        tick();
        nanosleep(&ms, NULL);
    }
    return NULL;
}
NOI int main(void)
{
    char line[64], a[16], b[16];
    pthread_t t, w1, w2;
    pthread_create(&t, NULL, ticker, NULL);
    for (int phase = 0;; phase++) {
        snprintf(a, sizeof a, "wk-%d", phase);
        snprintf(b, sizeof b, "bg-%d", phase);
        struct job ja = {a, f}, jb = {b, g};
        pthread_create(&w1, NULL, run, &ja);
        pthread_create(&w2, NULL, run, &jb);
        pthread_join(w1, NULL);
        pthread_join(w2, NULL);
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
build_traced "$T/thr" "$T/thr.c"
UID_=$(id -u)
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 != "tick" { print $10, $1 }' "$1" | sort | tr '\n' ' '; }

# phases NAME TARGET...: the changes, ctl aimed at TARGET; lines in
# $T/NAME.ctl, statuses in $T/NAME.rc.
phases() {
    local name=$1; shift
    exec 3> "$T/$name.in"
    next() { wait_in "$T/$name.out" "^phase $1 done" > /dev/null; }
    c() { "$CS" ctl "$@" >> "$T/$name.ctl" 2>&1; echo $? >> "$T/$name.rc"; }
    next 0
    c "$@" --threads 'wk-*'
    echo >&3; next 1
    c "$@" --exe "$T/thr" --off f --threads 'zz*,bg-*'
    echo >&3; next 2
    c "$@" --reset
    echo >&3; next 3
    exec 3>&-
}

mkfifo "$T/pid.in"
TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/pid" "$T/thr" < "$T/pid.in" > "$T/pid.out" &
PID=$!
track_pid $PID
track_shm "/callsight-ctl-$UID_-$PID"
phases pid --pid $PID
wait $PID
ok $? "the program ran its phases"
is "$(tr '\n' ' ' < "$T/pid.rc")" "0 0 0 " "every change applied (exit 0)"
is "$(sed "s/pid [0-9]*/pid P/" "$T/pid.ctl")" "callsight ctl: pid P: generation 2: recording everything on threads 'wk-*' (applied)
callsight ctl: pid P: generation 4: recording all but 1 function on threads 'zz*,bg-*' (applied)
callsight ctl: pid P: generation 6: recording everything (applied)" "ctl says each setting with its threads"
"$CS" analyze "$T/pid" --exe "$T/thr" > "$T/pid.txt" 2>&1
is "$(counts "$T/pid.txt")" "f 300 g 300 " "exact: f on wk threads only, g on bg threads only, while selected"
h=$(head -n 1 "$T/pid.txt")
is "$(field unmatched_exits "$h") $(field unclosed_enters "$h")" "0 0" "no exit without its enter, none left open"
is "$(sed -n 's/^note: pid [0-9]*: live control: generation \([0-9]*\) from [0-9.]* s: \(.*\) (calls open.*/\1 \2/p' "$T/pid.txt")" \
    "2 recording everything, threads by name (2 left out), applied by 3 threads
4 recording all but 1 function, threads by name (2 left out), applied by 3 threads
6 recording everything, applied by 3 threads" \
    "analyze says which generations chose threads and how many each left out (the ticker and each phase's two)"

# --- through serve ---
phases_through_serve "$T/thr" /cs163$$ || exit 1
phases srv "$T/srv"
wait $P
wait $TS_PID
is "$? $(tr '\n' ' ' < "$T/srv.rc")" "0 0 0 0 " "through serve: trace_stream exits 0, every change applied"
wait_serve_closed 1
stop_serve
is "$(counts <("$CS" analyze "$T/srv" --exe "$T/thr" 2>&1))" "f 300 g 300 " "through serve: the same exact counts"
is "$(head -n 1 "$T/srv.ctl")" "callsight ctl: conn 1: generation 2: recording everything on threads 'wk-*' (applied)" \
    "the device applied the globs it was sent"

# --- what --threads refuses ---
"$CS" ctl --pid 1 --pause --threads 'wk-*' > "$T/t1" 2>&1
is "$? $(cat "$T/t1")" "2 callsight ctl: --threads is part of a whole new setting: alone, or with --off, --only, --under or --reset (try --help)" \
    "--threads with --pause: a usage error"
"$CS" ctl --pid 1 --threads "$(printf 'a%.0s' $(seq 300))" > "$T/t2" 2>&1
is "$?" "2" "globs longer than 255 bytes: a usage error"
"$CS" ctl --pid 1 --threads "$(printf 'a\tb')" > "$T/t3" 2>&1
is "$? $(cat "$T/t3")" "2 callsight ctl: --threads: globs are printable ASCII" "a control byte in the globs: refused"
exit $_failed
