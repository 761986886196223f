#!/usr/bin/env bash
# slowlink.sh - run by tests/runtime/118-summary-stream.t under `unshare -n`: a
# private network namespace whose loopback has small TCP send buffers, as a
# device's kernel on a slow link would keep them, so that the link and not
# a few MB of kernel buffering decides what gets through.
#
#   slowlink.sh BUILD RATEPROXY OUT RATE MODE PROGRAM ARGS...
#
# Brings lo up, caps net.ipv4.tcp_wmem at 64 KiB (this namespace only),
# starts serve (files in OUT), RATEPROXY (tests/tools/rateproxy.c) at RATE bytes/s in
# front of it, trace_stream on a 4 MiB ring through the proxy, and runs
# PROGRAM with TRACE_MODE=MODE.  Writes trace_stream's stderr to OUT.err
# and the proxy's line to OUT.proxy; everything it starts ends before it
# returns.  Exit status: 0, or 1 with a line on stderr.
set -u
B=$1 PROXY=$2 OUT=$3 RATE=$4 MODE=$5
shift 5
python3 "$(dirname "$0")/lo_up.py" || { echo "slowlink: cannot bring lo up" >&2; exit 1; }
echo "4096 16384 65536" > /proc/sys/net/ipv4/tcp_wmem || exit 1
mkdir -p "$OUT"
"$B/callsight" serve --host 127.0.0.1 --port 0 --out "$OUT" --quiet > "$OUT.serve" 2>&1 &
serve=$!
port=$("$(dirname "$0")/../../scripts/serve-port.sh" "$OUT.serve") ||
    { echo "slowlink: serve did not start" >&2; kill $serve; exit 1; }
"$PROXY" "$OUT.port" "$port" "$RATE" > "$OUT.proxy" &
proxy=$!
for _ in $(seq 200); do [ -s "$OUT.port" ] && break; sleep 0.05; done
shm=/callsight-slowlink-$$
TRACE_SHM_SIZE=4194304 timeout 120 "$B/trace_stream" "$shm" 127.0.0.1 "$(cat "$OUT.port")" 2> "$OUT.err" &
client=$!
for _ in $(seq 500); do [ -e "/dev/shm$shm" ] && break; sleep 0.01; done
TRACE_MODE=$MODE TRACE_ENABLE=1 TRACE_SHM=$shm timeout 120 "$@" > /dev/null
rc=$?
wait $client || rc=1
wait $proxy || rc=1
kill -INT $serve
wait $serve
rm -f "/dev/shm$shm"
exit $rc
