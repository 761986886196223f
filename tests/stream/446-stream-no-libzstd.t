#!/usr/bin/env bash
# A device with only a C compiler and libc: trace_stream built with
# -DTRACE_STREAM_NO_LIBZSTD (no zstd.h, no -lzstd) sends zstd frames of raw
# blocks, which serve decodes unchanged; the workload streamed through it
# analyzes with the exact counts of tests/stream/440-stream-workload.t.  It never
# offers the codec, and codes nothing even for a server that acks anyway.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 15

R=$(cd "$TESTS/.." && pwd)
PEER="python3 $TESTS/tools/codecpeer.py"
PARAMS="16 25 12 64 8"
SHM=/cs-test-nozstd-$$
track_shm "$SHM"
expect_counts $PARAMS > "$T/expect"
calls=$(awk '{s += $2} END {print s}' "$T/expect")

# The client as a device would build it: its one file beside trace.h.
mkdir -p "$T/dev"
cp "$DIST/trace_stream.c" "$R/runtime/trace.h" "$T/dev/"
(cd "$T/dev" && cc -std=c11 -Wall -Wextra -pedantic -Werror -O2 -DTRACE_STREAM_NO_LIBZSTD \
    -o trace_stream trace_stream.c)
ok $? "cc -O2 -DTRACE_STREAM_NO_LIBZSTD -o trace_stream trace_stream.c (no -lzstd)"
n=$(cd "$T/dev" && cc -E -DTRACE_STREAM_NO_LIBZSTD trace_stream.c | grep -c 'zstd\.h')
needed=$(readelf -d "$T/dev/trace_stream" | grep -c 'NEEDED.*zstd')
is "$n $needed" "0 0" "it includes no zstd.h and links no libzstd"

stream_workload "$T/dev/trace_stream"
summary=$(tail -n 1 "$T/client.err")
diag "$summary"
wait_serve_closed 1
stop_serve
grep -Eq '^callsight serve: conn 1 closed \(' "$SERVE_LOG" && ! grep -qi 'error\|bad\|invalid' "$SERVE_LOG"
ok $? "serve decoded every raw-block frame and closed the connection normally"

analyze_workload_stream "$T/stream" "$T/s.txt"
is "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' "$T/s.txt" | wc -l)" "$(wc -l < "$T/expect")" "one row per function"
exact_calls "$T/s.txt"
ok $? "streamed call counts are the exact expected ones"

# A server that acks the codec whatever the handshake says (no correct one
# does): the client neither offered it nor codes a single chunk.
$PEER ackserver "$T/ack.port" > "$T/ack.out" &
peer=$!
track_pid $peer
wait_file "$T/ack.port"
TRACE_SHM_SIZE=$((1048576 + 96)) timeout 60 "$T/dev/trace_stream" "$SHM" 127.0.0.1 "$(cat "$T/ack.port")" \
    2> "$T/ack.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$B/examples/workload" 2 2 8 16 4 \
    > /dev/null
wait $client
ok $? "against a server that acks anyway, trace_stream exits 0"
wait $peer
got=$(cat "$T/ack.out")
echo "$got" | grep -q "^flags=0xa01 "
ok $? "its handshake does not offer the codec, only summaries (0x200) and the resume key (0x800) ($got)"
echo "$got" | grep -Eq "^flags=0xa01 chunks=0:[0-9]+,2:1,6:1 records=[0-9]+$"
ok $? "it sent plain events chunks, its resume notice and key, no coded chunk"

# The cost: raw blocks add 3 bytes per 128 KiB and 9 per frame to the 32
# bytes of each record, so the wire carries just over 32 bytes per record.
fwd=$(echo "$summary" | sed -n 's/^trace_stream: forwarded \([0-9]*\) events in [0-9]* chunks (\([0-9]*\) bytes on the wire).*/\1 \2/p')
set -- $fwd
[ -n "${2:-}" ] && [ "$2" -ge $((32 * $1)) ] && [ "$2" -le $((33 * $1 + 4096)) ]
ok $? "bytes on the wire per record: $(awk -v e="${1:-1}" -v b="${2:-0}" 'BEGIN { printf "%.2f", b / e }')"
exit $_failed
