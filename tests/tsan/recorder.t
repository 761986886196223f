#!/usr/bin/env bash
# Run by `make tsan-test` (tests/tsan/tsan.mk): the flight recorder under
# ThreadSanitizer.  The workload's 26 threads overwrite a small recording
# ring while trace_stream --flight-recorder (also under TSan) takes three
# snapshots on SIGUSR1, freezing and thawing the ring under its lock each
# time.  No TSan report, everyone exits 0, three snapshots arrive, and
# none holds an unmatched exit (calls cut at a snapshot's start are
# truncated, not unmatched).
source "$(dirname "$0")/../lib/lib.sh"
plan 6

TB=${TSAN_BUILD:?run through make tsan-test}
SHM=/cs-test-tsanfr-$$
track_shm $SHM
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"

start_serve "$T/out" --quiet
ok $? "serve listens"
# not under timeout(1), whose own SIGUSR1 would end it: wait_stream_client bounds it
TRACE_SHM_SIZE=$((262144 + 96)) "$TB/trace_stream" --flight-recorder --max-triggers 3 \
    "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
# enough work to outlast three snapshots a second apart under TSan
TRACE_ENABLE=1 TRACE_SHM=$SHM timeout 300 "$TB/workload" 400 25 10 32 4 > /dev/null 2> "$T/w.err" &
w=$!
track_pid $w
for _ in $(seq 500); do grep -q "tracer attached" "$T/client.err" && break; sleep 0.02; done
for k in 1 2 3; do
    sleep 0.5
    kill -USR1 $client
    for _ in $(seq 1500); do grep -q "^trace_stream: snapshot $k " "$T/client.err" && break; sleep 0.02; done
done
wait $w; rw=$?
wait_stream_client $client; rc=$?
is "$rw $rc" "0 0" "the TSan workload and trace_stream exit 0 (66 would be a TSan report)"
cat "$T/w.err" "$T/client.err" > "$T/all.err"
is "$(grep -c "WARNING: ThreadSanitizer" "$T/all.err")" 0 "no ThreadSanitizer report"
grep -m 20 -A 12 "WARNING: ThreadSanitizer" "$T/all.err" | sed 's/^/# /'
is "$(grep -c "^trace_stream: snapshot [123] (SIGUSR1): " "$T/client.err")" 3 "three snapshots sent"
wait_serve_closed 4
stop_serve
bad=0 n=0
for f in "$T"/out/trace.stream.*.bin; do
    "$CS" analyze "$f" --exe "$TB/workload" > "$T/a.txt" 2>&1 || bad=1
    grep -q "flight-recorder snapshot" "$T/a.txt" || continue
    n=$((n + 1))
    [ "$(field unmatched_exits "$(head -n 1 "$T/a.txt")")" = 0 ] || { bad=1; diag "$(head -n 3 "$T/a.txt")"; }
done
is "$n" 3 "analyze finds the three snapshots"
is "$bad" 0 "no snapshot holds an unmatched exit"
exit $_failed
