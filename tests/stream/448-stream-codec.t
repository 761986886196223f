#!/usr/bin/env bash
# The codec (TRACE_CHUNK_EVENTS_CODED, trace_wire.h) end to end: trace_stream's
# encoder against serve's decoder bit for bit (known-random records with
# markers, odd kinds, odd tids and deep stacks, through a ring played by
# tests/tools/codecpeer.py), exact events with the codec and with --codec
# none, a server from before the codec (never acks: the client stays plain
# and loses nothing), and serve's side of the negotiation: an ack only for
# an offer, and a coded chunk without one refused.
source "$(dirname "$0")/../lib/lib.sh"
plan 24

TS=$B/trace_stream
PEER="python3 $TESTS/tools/codecpeer.py"
CHECK="perl $TESTS/tools/tracecheck.pl"
need_tools ringwriter
RW=$TOOLBIN/ringwriter
SHM=/cs-test-codec-$$
track_shm $SHM

# run_ring OUTLOG PORT N [trace_stream options]: trace_stream + ringwriter --wait
# through a 1 MiB ring; trace_stream's exit status.
run_ring() {
    local log=$1 port=$2 n=$3; shift 3
    TRACE_SHM_SIZE=$((1048576 + 96)) timeout 60 "$TS" "$@" "$SHM" 127.0.0.1 "$port" 2> "$log" &
    local c=$!
    track_pid $c
    wait_in "$log" "waiting for a tracer" > /dev/null
    timeout 60 "$RW" --wait "$SHM" "$n" > /dev/null
    wait $c
}
wire_of() { sed -n 's/.*(\([0-9]*\) bytes on the wire).*/\1/p' "$1"; }

start_serve "$T/out"
ok $? "serve listens on a free port"

# --- 1. trace_stream's encoder, serve's decoder: every bit -------------------
N=240000
$PEER ringfill "$SHM" "$T/records" "$T/c1.err" $N > "$T/fill.out" &
fill=$!
track_pid $fill
wait_file "/dev/shm$SHM"
# --summary-threads: the odd kinds include 4, whose records would otherwise
# be merged per process (test 118), not forwarded as they are.
timeout 60 "$TS" --summary-threads "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/c1.err"
ok $? "trace_stream streams a ring of $N known-random records and exits 0"
wait $fill
is "$(cat "$T/fill.out")" "ringfill: $N records" "the ring player published them all after the ack"
grep -q "^trace_stream: the server decodes coded chunks; sending them from now on$" "$T/c1.err"
ok $? "trace_stream read serve's ack"
coded=$(sed -n 's/^trace_stream: \([0-9]*\) of \([0-9]*\) event chunks coded$/\1 \2/p' "$T/c1.err")
[ -n "$coded" ] && [ "${coded% *}" -ge 1 ] && [ $(( ${coded#* } - ${coded% *} )) -le 1 ]
ok $? "every chunk after the ack went coded ($coded)"
wait_in "$SERVE_LOG" "^callsight serve: conn 1 closed" > /dev/null
grep -Eq "^callsight serve: conn 1 closed .*: $N events, 1 segment, .*dropped 0$" "$SERVE_LOG"
ok $? "serve: conn 1 closed normally with $N events"
python3 - "$T/out/trace.stream.1.0.bin" "$T/records" > "$T/cmp.out" <<'PY'
import sys
f = open(sys.argv[1], "rb").read()
want = open(sys.argv[2], "rb").read()
got = f[80 + 64:]  # after the header and serve's stream-id and key markers
print("same" if got == want else "differ at byte %d of %d/%d" % (
    next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), -1), len(got), len(want)))
PY
is "$(cat "$T/cmp.out")" "same" "serve's file holds exactly the ring's records, byte for byte"

# --- 2. exact counts with the codec, and with --codec none --------------------
run_ring "$T/c2.err" "$SERVE_PORT" 300000
ok $? "codec on: trace_stream forwards 300000 events and exits 0"
grep -Eq "^trace_stream: forwarded 300000 events in [0-9]+ chunks \([0-9]+ bytes on the wire\), dropped 0$" "$T/c2.err"
ok $? "its summary: forwarded 300000 events, dropped 0"
wait_in "$SERVE_LOG" "^callsight serve: conn 2 closed" > /dev/null
$CHECK "$T"/out/trace.stream.2.*.bin > "$T/c2.chk"
is "$(sed -n 1p "$T/c2.chk" | sed 's/ load_bias.*//')" \
    "header magic=MLTRACE version=2 event_size=32 header_size=80 flags=1" \
    "the file header's flags are the tracer's: the offer flag stays off the disk"
is "$(sed -n 2p "$T/c2.chk")" "events=300000 mismatched=0 markers= tail=0" \
    "codec on: exactly the 300000 events, in order, every field intact"

run_ring "$T/c3.err" "$SERVE_PORT" 300000 --codec none
ok $? "--codec none: trace_stream forwards 300000 events and exits 0"
grep -q "coded" "$T/c3.err"
ok $((! $?)) "--codec none: no ack read, nothing coded"
wait_in "$SERVE_LOG" "^callsight serve: conn 3 closed" > /dev/null
is "$($CHECK "$T"/out/trace.stream.3.*.bin | sed -n 2p)" "events=300000 mismatched=0 markers= tail=0" \
    "--codec none: exactly the 300000 events, every field intact"
w2=$(wire_of "$T/c2.err"); w3=$(wire_of "$T/c3.err")
diag "wire bytes: codec $w2, none $w3"
[ "$w2" -gt 0 ] && [ $((w2 * 2)) -lt "$w3" ]
ok $? "the codec more than halves the bytes on the wire"

# --- 3. a server from before the codec: never acks ----------------------------
$PEER oldserver "$T/old.port" > "$T/old.out" &
old=$!
track_pid $old
wait_file "$T/old.port"
run_ring "$T/c4.err" "$(cat "$T/old.port")" 20000
ok $? "against an old server, trace_stream exits 0"
wait $old
grep -Eq "^trace_stream: forwarded 20000 events in [0-9]+ chunks" "$T/c4.err"
ok $? "and says it forwarded all 20000 events"
got=$(cat "$T/old.out")
echo "$got" | grep -q "^flags=0xb01 "
ok $? "its handshake offered the codec, summaries and the resume key: flags 0x100, 0x200 and 0x800 besides the tracer's 0x1 ($got)"
echo "$got" | grep -Eq "^flags=0xb01 chunks=0:[0-9]+,2:1,6:1 records=20000$"
ok $? "the old server got plain event chunks only, all 20000 records"

# --- 4. serve's side of the negotiation ---------------------------------------
is "$($PEER client "$SERVE_PORT" plain)" "received 0 bytes: " \
    "a client that does not offer the codec gets nothing back"
is "$($PEER client "$SERVE_PORT" offer)" "received 16 bytes: 544b41434b0000000100000000000000" \
    "a client that offers it gets the 16-byte ack"
$PEER client "$SERVE_PORT" plain coded > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: connection from 127\.0\.0\.1:[0-9]+ closed before sending events: .*error: chunk 1: coded events, but this server did not ack the codec \(never offered\)$" > /dev/null
ok $? "a coded chunk without an ack ends its connection with a clear error (and makes no file)"

"$TS" --codec zip "$SHM" 127.0.0.1 1 2> "$T/usage.err"
is "$?:$(cat "$T/usage.err")" "2:trace_stream: --codec needs 'stack' or 'none'" "--codec takes stack or none"
stop_serve
[ ! -e "/dev/shm$SHM" ]
ok $? "no shm segment left"
exit $_failed
