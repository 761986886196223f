#!/usr/bin/env bash
# A ring lock left held.  By a tracer killed inside its critical section (the
# holder's tid no longer exists): the first writer that gives up waiting
# takes the lock over, and every event flows.  By a live process that never
# lets go: the traced workload still finishes in bounded time, and every
# event it could not put in the ring is counted as dropped, exactly.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 12

PARAMS="2 25 10 32 4"
calls=$(expect_counts $PARAMS | awk '{s += $2} END {print s}')

# run_held NAME HOLDER: stream the workload while the ring's lock (offset 20)
# holds HOLDER; analyze's header line ends up in $T/NAME.txt.
run_held() {
    local name=$1 holder=$2 shm=/cs-test-lock-$1-$$
    track_shm "$shm"
    start_serve "$T/$name" --quiet
    ok $? "$name: serve listens"
    timeout 60 "$B/trace_stream" "$shm" 127.0.0.1 "$SERVE_PORT" 2> "$T/$name.err" &
    local client=$!
    track_pid $client
    wait_file "/dev/shm$shm"
    for _ in $(seq 100); do [ "$(stat -c %s "/dev/shm$shm")" -gt 96 ] && break; sleep 0.02; done
    perl -e 'open(my $f, "+<", $ARGV[0]) or die; seek($f, 20, 0); print $f pack("V", $ARGV[1]); close $f' \
        "/dev/shm$shm" "$holder"
    ok $? "$name: holder $holder takes the ring lock"
    TRACE_ENABLE=1 TRACE_SHM=$shm timeout 60 "$B/examples/workload" $PARAMS > /dev/null
    ok $? "$name: the workload finishes in bounded time despite the held lock"
    wait $client
    wait_serve_closed 1
    stop_serve
    "$CS" analyze "$T/$name" --exe "$B/examples/workload" > "$T/$name.txt" 2>&1
    ok $? "$name: analyze reads what arrived"
}

# A tid that surely no longer exists: a process that has just exited.
dead=$(sh -c 'echo $$')
run_held dead "$dead"
h=$(head -n 1 "$T/dead.txt"); diag "$h"
is "$(field dropped "$h")" 0 "dead holder: the lock was recovered, nothing dropped"
is "$(field events "$h")" $((2 * calls)) "dead holder: every event reached the ring"

# A live holder that never lets go.
sleep 300 &
live=$!
track_pid $live
run_held live "$live"
h=$(head -n 1 "$T/live.txt"); diag "$h"
is "$(field dropped "$h")" $((2 * calls)) "live holder: every event was counted as dropped"
is "$(field events "$h")" 0 "live holder: and none reached the ring"
exit $_failed
