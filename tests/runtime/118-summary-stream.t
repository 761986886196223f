#!/usr/bin/env bash
# 118-summary-stream.t - TRACE_MODE=summary streamed: snapshots go through
# the ring, trace_stream and serve, negotiated like the codec
# (TRACE_STREAM_FLAG_SUMMARY_OFFER, trace_wire.h).  The 26-thread workload's
# exact counts arrive, equal to event mode's, in files that say version 3,
# with far fewer bytes on the wire than its events take; a server that
# predates summaries (tests/tools/codecpeer.py ackserver: it acks the codec
# with no features) gets none, and the client says how many it held back,
# counted as dropped in its notice; a tracer killed by SIGKILL keeps every
# call up to its last snapshot.  trace_stream merges each process's threads
# into one snapshot series (sent as increments, which serve writes whole);
# --summary-threads keeps them apart; a server that takes summaries but not
# increments gets whole merged snapshots.  Through a 256 KB/s link
# (tests/tools/rateproxy.c, in a network namespace with small socket
# buffers: tests/tools/slowlink.sh) every summary arrives with nothing
# dropped, where event mode drops most events (counted).
# serve killed and restarted in the middle of a run: the merged snapshots
# after the reconnection start their increments afresh, and every call is
# still counted exactly.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 23

W=$B/examples/workload
PEER="python3 $TESTS/tools/codecpeer.py"
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$1" | sort; }
expect_counts 16 25 12 64 8 | sort > "$T/expect"
wire() { sed -n 's/^trace_stream: forwarded [0-9]* events in [0-9]* chunks (\([0-9]*\) bytes on the wire).*/\1/p' "$1"; }

TRACE_MODE=summary TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/s" --top 0 -- "$W" \
    > "$T/s.out" 2> "$T/s.err"
ok $? "callsight run --stream with TRACE_MODE=summary"
is "$(rows "$T/s.out")" "$(cat "$T/expect")" "streamed summaries: every function's exact count"
grep -Eq "^note: summary mode: [1-9][0-9]* snapshots from 1 threads" "$T/s.out"
ok $? "the 26 threads arrive merged into one series of snapshots"
"$CS" analyze "$T/s" --exe "$W" --format json -o "$T/s.json"
is "$(python3 -c 'import json,sys; print([t["name"] for t in json.load(open(sys.argv[1]))["threads"]])' "$T/s.json")" \
    "['26 threads']" "the merged series is named for the threads in it"
grep -Eq "^trace_stream: merged ([2-9][6-9]|[3-9][0-9]|[0-9]{3,}) thread snapshots into [1-9][0-9]* per-process ones \([0-9]+ increment records\)$" "$T/s.err"
ok $? "trace_stream says what it merged ($(grep '^trace_stream: merged' "$T/s.err"))"
is "$(od -An -tu4 -j8 -N4 "$(ls "$T/s"/trace.stream.*.bin | head -n 1)" | tr -d ' ')" "3" \
    "serve's file says version 3 once summaries arrive, so an older analyzer refuses it"
TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/e" --top 0 -- "$W" > "$T/e.out" 2> "$T/e.err"
is "$(rows "$T/s.out")" "$(rows "$T/e.out")" "the same counts as the events streamed"
sw=$(wire "$T/s.err")
ew=$(wire "$T/e.err")
[ -n "$sw" ] && [ -n "$ew" ] && [ $((sw * 4)) -lt "$ew" ]
ok $? "summaries take under a quarter of the events' bytes on the wire ($sw vs $ew)"

# --- --summary-threads: each thread's own snapshots ---
start_serve "$T/pt"
PSHM=/callsight-t18p-$$
track_shm "$PSHM"
timeout 60 "$B/trace_stream" --summary-threads "$PSHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/pt.err" &
pclient=$!
track_pid $pclient
wait_file "/dev/shm$PSHM"
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_SHM=$PSHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" > /dev/null
wait $pclient
stop_serve
"$CS" analyze "$T/pt" --exe "$W" --top 0 > "$T/pt.out" 2>&1
is "$(rows "$T/pt.out") $(grep -c '^note: summary mode: 26 snapshots from 26 threads' "$T/pt.out")" "$(cat "$T/expect") 1" \
    "--summary-threads: exact counts, one whole snapshot from each of the 26 threads"

# --- SIGKILL of a streaming tracer: the ring and serve keep its last snapshot ---
need_tools snapshot_victim
start_serve "$T/k"
KSHM=/callsight-t18k-$$
track_shm "$KSHM"
start_trace_stream "$B/trace_stream" "$KSHM"
kill_snapshot_victim TRACE_SHM="$KSHM"
wait "$CLIENT_PID"
is "$?" "3" "SIGKILL of the tracer: trace_stream drains what it left and exits 3 (tracers lost)"
stop_serve
"$CS" analyze "$T/k" --exe "$TOOLBIN/snapshot_victim" --top 0 > "$T/k.txt" 2>&1
is "$(calls_of work "$T/k.txt")" "10000" "every call up to its last snapshot arrived (work 10000)"
is "$(grep -c '^note: summary mode: pid [0-9]* ended without an exit (killed?)' "$T/k.txt") $(grep -c 'ended without an exit' "$T/s.out")" \
    "1 0" "the report says the run ended without an exit; a normal run's does not"

# peer_run MODE NAME: trace_stream and a small workload against a
# tests/tools/codecpeer.py server of that MODE; the peer's line in NAME.out,
# the client's stderr in NAME.err; the client's exit status.
SHM=/callsight-t18-$$
track_shm "$SHM"
peer_run() {
    local peer client st
    $PEER "$1" "$T/$2.port" > "$T/$2.out" &
    peer=$!
    track_pid $peer
    wait_file "$T/$2.port"
    timeout 60 "$B/trace_stream" "$SHM" 127.0.0.1 "$(cat "$T/$2.port")" 2> "$T/$2.err" &
    client=$!
    track_pid $client
    wait_file "/dev/shm$SHM"
    TRACE_MODE=summary TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$W" 2 2 8 16 4 > /dev/null
    wait $client
    st=$?
    wait $peer
    return $st
}

# --- a server from before summaries ---
peer_run ackserver ack
ok $? "against a server that predates summaries, trace_stream exits 0"
n=$(sed -n 's/^trace_stream: the server does not take summary snapshots .*: \([0-9]*\) summary records not sent, counted as dropped$/\1/p' "$T/ack.err")
[ -n "$n" ] && [ "$n" -gt 0 ]
ok $? "it says it held back $n summary records, counted as dropped"
grep -Eq "^flags=0xb01 chunks=(0:[0-9]+,)?1:[1-9][0-9]*,2:1(,4:[0-9]+)?,6:1 records=[0-9]+$" "$T/ack.out"
ok $? "the old server got the offers (codec, summaries, resume key), event chunks without the summaries, the drop in a notice, the key once ($(cat "$T/ack.out"))"

# --- a server that takes summaries but not their increments ---
peer_run sumserver sum
st=$?
grep -q "^trace_stream: merged [1-9][0-9]* thread snapshots" "$T/sum.err" &&
    grep -Eq "^flags=0xb01 chunks=([0-9:,]*)? records=[1-9][0-9]*$" "$T/sum.out" && ! grep -q "5:" "$T/sum.out"
ok $((st + $?)) "a server without increments gets whole merged snapshots, never a type-5 chunk ($(cat "$T/sum.out"))"

# --- through a 256 KB/s link ---
# In a network namespace of its own (tests/tools/slowlink.sh), whose small
# TCP send buffers let the link and not the kernel's buffering set the pace.
need_tools rateproxy
slow_run() { # slow_run MODE: the workload (96 iterations) over the slow link
    unshare -n bash "$TESTS/tools/slowlink.sh" "$B" "$TOOLBIN/rateproxy" "$T/slow-$1" 262144 "$1" "$W" 96
}
fwd() { sed -n "s/^trace_stream: forwarded \([0-9]*\) events .*, dropped \([0-9]*\).*/\1 \2/p" "$1"; }
slow_run events
read -r ev_fwd ev_drop < <(fwd "$T/slow-events.err")
[ -n "$ev_drop" ] && [ "$ev_drop" -gt "$ev_fwd" ]
ok $? "events at 256 KB/s: most are dropped, and counted (forwarded $ev_fwd, dropped $ev_drop)"
slow_run summary
ok $? "summaries at 256 KB/s: the run ends well"
read -r sum_fwd sum_drop < <(fwd "$T/slow-summary.err")
is "$sum_drop" "0" "summaries at 256 KB/s: none dropped ($sum_fwd records, $(cat "$T/slow-summary.proxy"))"
"$CS" analyze "$T/slow-summary" --exe "$W" --top 0 > "$T/slowsum.txt" 2>&1
is "$(rows "$T/slowsum.txt")" "$(expect_counts 96 25 12 64 8 | sort)" "every function's exact count arrived over the slow link"

# --- serve killed and restarted mid-run: cumulative snapshots lose no count ---
cat > "$T/steady.c" << 'EOF2'
#include <time.h>
static volatile unsigned sink;
static __attribute__((noinline)) void step(unsigned i) { sink += i; }
int main(void)
{
    for (int round = 0; round < 40; round++) {
        for (unsigned i = 0; i < 1000; i++)
            step(i);
        nanosleep(&(struct timespec){0, 50000000}, 0);
    }
    return 0;
}
EOF2
build_traced "$T/steady" "$T/steady.c"
RSHM=/callsight-t18r-$$
track_shm "$RSHM"
start_serve "$T/rc" --quiet
RPORT=$SERVE_PORT
"$B/trace_stream" --retry 20 --summary-ms 100 "$RSHM" 127.0.0.1 "$RPORT" 2> "$T/rc.err" &
rclient=$!
track_pid $rclient
wait_file "/dev/shm$RSHM"
TRACE_MODE=summary TRACE_SUMMARY_MS=50 TRACE_ENABLE=1 TRACE_SHM=$RSHM timeout 60 "$T/steady" &
rprog=$!
track_pid $rprog
# until serve has written merged snapshots (increments) of this connection
for _ in $(seq 250); do [ "$(stat -c %s "$T/rc/trace.stream.1.0.bin" 2>/dev/null || echo 0)" -gt 4096 ] && break; sleep 0.02; done
kill_serve
wait_in "$T/rc.err" "reconnecting for up to 20 s" > /dev/null
"$CS" serve --host 127.0.0.1 --port "$RPORT" --out "$T/rc" --quiet > "$T/rc2.log" 2>&1 &
SERVE_PID=$!
SERVE_LOG=$T/rc2.log
track_pid $SERVE_PID
wait $rprog && wait $rclient
ok $? "the program and trace_stream end well across serve's restart"
grep -q "reconnected to 127.0.0.1:$RPORT (connection 2)" "$T/rc.err"
ok $? "trace_stream reconnected to the restarted serve"
stop_serve
"$CS" analyze "$T/rc" --exe "$T/steady" --top 0 > "$T/rc.txt" 2>&1
is "$(calls_of step "$T/rc.txt") $(calls_of main "$T/rc.txt")" "40000 1" \
    "every call counted exactly across the cut (the increments started afresh on the new connection)"
exit $_failed
