#!/usr/bin/env bash
# demo.sh - callsight's main job, end to end on this machine (make demo).
#
# Streams the bundled 26-thread workload off "the device" exactly as a user
# would: callsight serve on 127.0.0.1, trace_stream draining a shm ring, the
# workload traced with TRACE_SHM, then the analyze report.  Also shows file
# mode for comparison.  Every process and the shm segment are cleaned up,
# also when interrupted.  DEMO_DIR (default demo-traces) is where traces go;
# DEMO_ARGS, the streamed workload's parameters (see examples/workload.c).
set -u
BUILD=${1:-build}
B=$(cd "$BUILD" && pwd)
OUT=${DEMO_DIR:-demo-traces}
SHM=/callsight-demo-$$
serve_pid=""
client_pid=""

cleanup() {
    [ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null
    wait 2>/dev/null
    rm -f "/dev/shm${SHM}"
}
trap cleanup EXIT
trap 'echo "demo: interrupted"; exit 130' INT TERM
step() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT"

step "1. file mode: trace the workload to local files"
echo "\$ TRACE_ENABLE=1 TRACE_DIR=$OUT/files $BUILD/examples/workload"
TRACE_ENABLE=1 TRACE_DIR="$OUT/files" "$B/examples/workload" || die "workload failed"
echo "\$ callsight analyze $OUT/files --exe $BUILD/examples/workload --top 8"
"$B/callsight" analyze "$OUT/files" --exe "$B/examples/workload" --top 8 || die "analyze failed"

step "2. streaming: start callsight serve on 127.0.0.1 (any free port)"
"$B/callsight" serve --host 127.0.0.1 --port 0 --out "$OUT/stream" --quiet > "$OUT/serve.log" 2>&1 &
serve_pid=$!
port=$("$(dirname "$0")/serve-port.sh" "$OUT/serve.log") || die "serve did not start: $(cat "$OUT/serve.log")"
head -n 1 "$OUT/serve.log"

step "3. on the device: trace_stream drains the shm ring $SHM to 127.0.0.1:$port"
echo "\$ trace_stream $SHM 127.0.0.1 $port &"
"$B/trace_stream" "$SHM" 127.0.0.1 "$port" &
client_pid=$!

step "4. run the workload with TRACE_SHM: no disk or network I/O in the traced process"
echo "\$ TRACE_ENABLE=1 TRACE_SHM=$SHM $BUILD/examples/workload ${DEMO_ARGS:-}"
# shellcheck disable=SC2086 # DEMO_ARGS: the workload's parameters, split
TRACE_ENABLE=1 TRACE_SHM="$SHM" "$B/examples/workload" ${DEMO_ARGS:-} || die "workload failed"
wait "$client_pid" || die "trace_stream failed"
client_pid=""
sleep 0.2 # let serve log the closed connection
kill -INT "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
serve_pid=""
echo "-- serve said:"
sed 's/^/   /' "$OUT/serve.log"

step "5. analyze the streamed trace on the host, symbols from the same binary"
echo "\$ callsight analyze $OUT/stream --exe $BUILD/examples/workload --top 12"
"$B/callsight" analyze "$OUT/stream" --exe "$B/examples/workload" --top 12 || die "analyze failed"
printf '\ndemo: done; traces are in %s/\n' "$OUT"
