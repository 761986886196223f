#!/usr/bin/env bash
# A ring lock left held (as by a tracer killed inside its critical section):
# the traced workload still finishes in bounded time, and every event it
# could not put in the ring is counted as dropped.
source "$(dirname "$0")/lib.sh"
source "$TESTS/workload_expect.sh"
plan 6

PARAMS="2 25 10 32 4"
SHM=/cs-test-lock-$$
track_shm "$SHM"
calls=$(expect_counts $PARAMS | awk '{s += $2} END {print s}')

start_serve "$T/out" --quiet
ok $? "serve listens"
timeout 60 "$B/trace_stream" "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
# Grab the lock (offset 20) for a holder that will never release it.
for _ in $(seq 100); do [ "$(stat -c %s "/dev/shm$SHM")" -gt 96 ] && break; sleep 0.02; done
perl -e 'open(my $f, "+<", $ARGV[0]) or die; seek($f, 20, 0); print $f pack("V", 999999); close $f' "/dev/shm$SHM"
ok $? "a foreign holder takes the ring lock"
TRACE_ENABLE=1 TRACE_SHM=$SHM timeout 60 "$B/examples/workload" $PARAMS > /dev/null
ok $? "the workload finishes in bounded time despite the held lock"
wait $client
sleep 0.2
stop_serve
"$CS" analyze "$T/out" --exe "$B/examples/workload" > "$T/a.txt" 2>&1
ok $? "analyze reads what arrived"
h=$(head -n 1 "$T/a.txt"); diag "$h"
is "$(field dropped "$h")" $((2 * calls)) "every event was counted as dropped"
is "$(field events "$h")" 0 "and none reached the ring"
exit $_failed
