#!/usr/bin/env bash
# 560-top-rates-zero.t - callsight top's per-interval figures go to zero
# when the work stops (issue 32: a per-interval figure computed from
# totals passed the other top tests).  A program streams through serve,
# calling work() 1500 times over about 2 s, then waits, alive and
# connected; later it exits.  On the screen: while it works, work's
# calls/s, its self ms in the last interval and its source's events/s are
# above zero; once it waits, both
# are 0, its self ms in the last interval 0.000, the source idle, while the
# totals stay; once it has exited and its last batch arrived, work's calls
# are exactly 1500 and every rate is 0 again, the source ended.
source "$(dirname "$0")/../lib/lib.sh"
plan 6

cat > "$T/busy.c" << 'EOF2'
#include <stdio.h>
#include <time.h>
static volatile int sink;
__attribute__((noinline)) void work(void) { sink++; }
int main(void)
{
    char line[16];
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 1500; i++) {
        work();
        nanosleep(&ms, NULL);
    }
    printf("busy done\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 0;
    return 0;
}
EOF2
build_traced "$T/busy" "$T/busy.c"

start_serve "$T/live" --quiet
TM="tmux -L cs-top-zero-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
$TM new-session -d -s top -x 200 -y 50 "bash --norc --noprofile"
$TM send-keys -t top "cd '$T' && '$CS' top live --exe '$T/busy' --interval 0.5; echo TOP-EXIT=\$?" Enter
pane_until top "refresh [0-9]+ " > /dev/null

SHM=/cs560-$$
track_shm "$SHM"
start_trace_stream "$B/trace_stream" "$SHM"
mkfifo "$T/busy.in"
TRACE_ENABLE=1 TRACE_SHM=$SHM "$T/busy" < "$T/busy.in" > "$T/busy.out" &
P=$!
track_pid $P
exec 3> "$T/busy.in"
# a function row: calls calls/s self_ms incl_ms self_ms/int max_us p99_us function (file:line)
row() { echo "^ +$1 +$2 +[0-9.]+ +[0-9.]+ +$3 +[0-9.]+ +[0-9.]+ +work \(busy\.c:[0-9]+\)"; }
pane_until top "$(row '[0-9]+' '[1-9][0-9]*' '([1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*)')" > /dev/null
w=$?
grep -q "busy done" "$T/busy.out"
ok $(( w || ! $? )) "while it works: work's calls/s and its self ms in the last interval above zero"
pane_until top "^[ >] *1 stream 1 +streaming +[1-9][0-9]* " > /dev/null
ok $? "and its source streaming, events/s above zero"

wait_in "$T/busy.out" "^busy done" > /dev/null
pane_until top "$(row '[0-9]+' 0 '0\.000')" > /dev/null
ok $? "once it waits: calls/s 0 and self ms in the last interval 0.000, its total kept"
pane_until top "^[ >] *1 stream 1 +idle +0 " > /dev/null
ok $? "and its source idle (connected, quiet) at 0 events/s"

exec 3>&-
wait $P
wait_stream_client "$CLIENT_PID"
wait_serve_closed 1
pane_until top "$(row 1500 0 '0\.000')" > /dev/null
ok $? "it exited: exactly 1500 calls, and every rate back at 0"
pane_until top "^[ >] *1 stream 1 +ended +0 " > /dev/null
ok $? "its source ended at 0 events/s"
$TM send-keys -t top q
exit $_failed
