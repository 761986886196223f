#!/usr/bin/env bash
# profile.sh - the profiles behind docs/performance.md's "why" for each
# missed target: where the time goes, by `perf record` (cpu-clock sampling,
# which works on virtual machines without hardware counters).
#
#   bench/profile.sh BUILD       (after `make bench`, which builds BUILD/bench)
#
# Prints, per case, the top symbols (or, for the whole-machine cases, the
# share of each process).  Needs perf (Debian: linux-perf).  Like run.sh it
# works on 127.0.0.1 with a free port and removes every process, shm segment
# and file it makes.
set -u

BUILD=${1:?usage: bench/profile.sh BUILD}
B=$(cd "$BUILD" && pwd)
BB=$B/bench
CS=$B/callsight
WL=$B/examples/workload
T=$(mktemp -d "${TMPDIR:-/tmp}/callsight-profile.XXXXXX")
SHM=/callsight-profile-$$
pids=""

cleanup() {
    for p in $pids; do kill "$p" 2> /dev/null; done
    for p in $pids; do wait "$p" 2> /dev/null; done
    rm -f /dev/shm"$SHM"*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "profile: $*" >&2; exit 1; }
calc() { awk "BEGIN { printf \"%s\", ($1) }"; }
command -v perf > /dev/null || die "perf is not installed (apt-get install linux-perf)"
perf stat -e cpu-clock true > /dev/null 2>&1 || die "perf cannot sample here (perf_event_paranoid?)"

# top FILE N [PERF-REPORT-OPTIONS...]: the N heaviest lines of a perf report.
top() {
    local f=$1 n=$2
    shift 2
    [ $# -gt 0 ] || set -- --sort dso,sym
    perf report -i "$f" --stdio "$@" 2> /dev/null | grep -v '^#' | grep -v '^$' | head -n "$n"
}
heading() { printf '\n== %s\n' "$*"; }

"$CS" serve --host 127.0.0.1 --port 0 --out "$T/srv" --quiet > "$T/serve.log" 2>&1 &
SERVE=$!
pids="$pids $SERVE"
PORT=$("$(dirname "$0")/../scripts/serve-port.sh" "$T/serve.log") || die "serve did not start"

# serve_cpu: serve's CPU seconds so far (user + sys, from /proc).
serve_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$SERVE/stat"; }

# stream_start [ENV...]: trace_stream (under bench/runstat, for its CPU time)
# on a new ring $SHM.N in the background.
n=0
stream_start() {
    n=$((n + 1))
    env "$@" "$BB/runstat" "$T/ts.rusage" "$B/trace_stream" --quiet "$SHM.$n" 127.0.0.1 "$PORT" 2> "$T/ts.err" &
    TSP=$!
    pids="$pids $TSP"
    for _ in $(seq 500); do [ -e "/dev/shm$SHM.$n" ] && return 0; sleep 0.01; done
    die "trace_stream did not start"
}
stream_wait() {
    wait "$TSP"
    pids=${pids% $TSP}
    tail -n 1 "$T/ts.err"
    rm -f "$T"/srv/trace.stream.*
}

CALLS=5000000
heading "1. hooks + ring copy alone: hookbench, 1 thread, a ring that holds the run, no consumer during it"
TRACE_ENABLE=1 TRACE_SHM="$SHM.solo" TRACE_SHM_SIZE=$((CALLS * 64 + 16777216)) \
    perf record -q -e cpu-clock -F 10000 -o "$T/p1" "$BB/hookbench-instr" --calls $CALLS
rm -f "/dev/shm$SHM.solo"
top "$T/p1" 12
echo "-- where the enter hook's samples fall (the instruction after rdtsc carries its cost):"
perf annotate -i "$T/p1" --stdio -s __cyg_profile_func_enter 2> /dev/null |
    awk '$1 ~ /^[0-9.]+$/ && $1 + 0 >= 3 { print }' | head -n 8

heading "2. file mode: hookbench, 1 thread"
TRACE_ENABLE=1 TRACE_DIR="$T/files" TRACE_MAX_MB=1000000 \
    perf record -q -e cpu-clock -F 10000 -o "$T/p2" "$BB/hookbench-instr" --calls $CALLS
rm -rf "$T/files"
top "$T/p2" 12

heading "3. stream mode live, hookbench 1 thread: who had the CPUs (kernel CPU times, not samples)"
stream_start
s0=$(serve_cpu)
TRACE_ENABLE=1 TRACE_SHM="$SHM.$n" "$BB/hookbench-instr" --calls $CALLS > "$T/hb.out"
stream_wait
cat "$T/hb.out"
awk -v s="$(calc "$(serve_cpu) - $s0")" '
    FILENAME ~ /hb.out/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
    FILENAME ~ /rusage/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] } }
    END {
        w = f["wall_ns"] / 1e9
        printf "traced thread: %.2f s CPU in %.2f s of its loop (%.0f%% of the time on a CPU)\n", f["cpu_ns"] / 1e9, w, 100 * f["cpu_ns"] / f["wall_ns"]
        printf "trace_stream:  %.2f s CPU (%.0f%% of one CPU over the loop)\n", (r["user_us"] + r["sys_us"]) / 1e6, 100 * (r["user_us"] + r["sys_us"]) / 1e6 / w
        printf "serve:         %.2f s CPU (%.0f%% of one CPU over the loop)\n", s, 100 * s / w
    }' "$T/hb.out" "$T/ts.rusage"

heading "4. where trace_stream's and serve's time goes, at 8M events/s (1 paced producer thread)"
stream_start
TSC=$(pgrep -P "$TSP" -n) # trace_stream itself, runstat's child
perf record -q -e cpu-clock -F 5000 -p "$TSC" -o "$T/p4t" 2> /dev/null &
PT=$!
perf record -q -e cpu-clock -F 5000 -p "$SERVE" -o "$T/p4s" 2> /dev/null &
PS=$!
pids="$pids $PT $PS"
TRACE_ENABLE=1 TRACE_SHM="$SHM.$n" "$BB/hookbench-instr" --light --seconds 2 --rate 8000000
stream_wait
kill -INT $PS
wait $PT $PS
pids=${pids% $PT $PS}
echo "-- trace_stream, by library (libzstd: compression):"
top "$T/p4t" 4 --sort dso
echo "-- serve, by library (libzstd: decompression; kernel: socket reads, file writes):"
top "$T/p4s" 4 --sort dso
top "$T/p4s" 5 --sort dso,sym

heading "5. analyze: a 10-million-event trace of the demo workload, per-thread files"
TRACE_ENABLE=1 TRACE_DIR="$T/an" TRACE_MAX_MB=1000000 "$WL" 254 25 12 64 8 > /dev/null
perf record -q -e cpu-clock -F 10000 -o "$T/p5" "$CS" analyze "$T/an" --exe "$WL" --top 3 > /dev/null
top "$T/p5" 15

heading "6. serve ingest: one connection sending that trace as a stream (bench/streamsend)"
perf record -q -e cpu-clock -F 10000 -p "$SERVE" -o "$T/p6" &
PERF=$!
pids="$pids $PERF"
sleep 0.5
"$BB/streamsend" 127.0.0.1 "$PORT" "$T"/an/trace.*.bin
kill -INT "$PERF"
wait "$PERF"
pids=${pids% $PERF}
top "$T/p6" 5 --sort dso
top "$T/p6" 8 --sort dso,sym

heading "7. 8 producer threads at 7.5M events/s (S2's first failure): the producer's own time"
stream_start
TRACE_ENABLE=1 TRACE_SHM="$SHM.$n" perf record -q -e cpu-clock -F 20000 -o "$T/p7" \
    "$BB/hookbench-instr" --light --threads 8 --seconds 2 --rate 7500000
stream_wait
top "$T/p7" 8
echo "-- inside ring_put (the copy into the ring, and the lock's spin if it shows):"
perf annotate -i "$T/p7" --stdio -s ring_put 2> /dev/null | awk '$1 ~ /^[0-9.]+$/ && $1 + 0 >= 2 { print }' | head -n 6
