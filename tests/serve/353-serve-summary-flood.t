#!/usr/bin/env bash
# 353-serve-summary-flood.t - summary increments must not amplify
# (issue 29): an increment that changes nothing writes nothing, so a
# few wire bytes cannot rewrite a whole snapshot into the file again.
source "$(dirname "$0")/../lib/lib.sh"
plan 4
need_tools streamgen

# One snapshot with a function, then an empty one (no function listed,
# META and END's kind unchanged), as planes (trace_wire.h).
python3 - "$T/empty.inc" "$T/over.inc" << 'EOF2'
import struct, sys
def planes(recs, path):
    n = len(recs)
    open(path, "wb").write(bytes(recs[i][k] for k in range(32) for i in range(n)))
def r(part, ts, func, site, pad1=0):
    return struct.pack("<QQQIBBBB", ts, func, site, 2, 4, part, pad1, 0)
recs = [r(1, 100, 1, 1), r(2, 500, 0x1000, 10), r(3, 400, 10, 90),
        r(4, 10, 0, 40 << 32 | 0xffffffff), r(5, 0, 0, 0), r(6, 600, 1, 0),
        r(1, 700, 2, 0), r(5, 0, 0, 0), r(6, 800, 2, 0)]
planes(recs, sys.argv[1])
# 10 calls, but buckets that count 11 of them
planes([r(1, 100, 1, 1), r(2, 500, 0x1000, 10), r(3, 400, 10, 90),
        r(4, 10, 1, 40 << 32 | 41), r(5, 0, 0, 0), r(6, 600, 1, 0)], sys.argv[2])
EOF2
start_serve "$T/out"
timeout 30 "$TOOLBIN/streamgen" --increments "$T/empty.inc" 127.0.0.1 "$SERVE_PORT" && wait_serve_closed 1
ok $? "a snapshot, then an empty increment: one connection"
stop_serve
is "$(python3 -c 'import sys
d = open(sys.argv[1], "rb").read()[80:]
print(sum(1 for i in range(0, len(d), 32) if d[i + 28] == 4 and d[i + 29] == 6))' \
    "$T/out/trace.stream.1.0.bin")" "1" "the empty increment wrote nothing: one whole snapshot in the file"

start_serve "$T/over"
timeout 30 "$TOOLBIN/streamgen" --increments "$T/over.inc" 127.0.0.1 "$SERVE_PORT" && wait_serve_closed 1
ok $? "buckets counting more calls than the function's: one connection"
stop_serve
grep -q "^callsight serve: conn 1 closed .*; error: chunk 1: summary increments, thread 2: buckets count more calls than the function's 10$" "$SERVE_LOG"
ok $? "buckets above the call count: that connection closes with one line"
