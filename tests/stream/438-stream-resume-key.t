#!/usr/bin/env bash
# trace_stream's resume key (TRACE_STREAM_FLAG_RESUME_KEY, chunk type 6,
# runtime/trace_wire.h), seen by tests/tools/keypeer.py, a server that
# reports what came without printing the key:
#   - every main-connection handshake offers it (flag 0x800), and the key
#     chunk comes exactly once per connection, right after the first resume
#     notice; heartbeats repeat the notice, never the key;
#   - a reconnection shows the same key, another trace_stream another one;
#   - a flight recorder's snapshot connections send no resume notice, so
#     neither flag nor key;
#   - the key is in none of trace_stream's output.
source "$(dirname "$0")/../lib/lib.sh"
plan 6

need_tools ringwriter
RW=$TOOLBIN/ringwriter

# start_peer NAME ARGS...: tests/tools/keypeer.py with ARGS, its port in
# $T/NAME.port once it listens, its report in $T/NAME.out; sets peer.
start_peer() {
    python3 "$TESTS/tools/keypeer.py" "$T/$1.port" "${@:2}" > "$T/$1.out" &
    peer=$!
    track_pid $peer
    wait_file "$T/$1.port"
}

# --- a reconnection, then another trace_stream ---
# conn 1 is closed after its second chunk; the tracer that made the
# handshake come writes nothing, so nothing is in flight, and stays until
# the heartbeats have gone on conn 2.
start_peer p1 3 --close 1 --not-in "$T/k1.err" "$T/k2.err"
P1=$(cat "$T/p1.port")
SHM=/cs-test-key-$$
track_shm $SHM
stream_bg "$T/k1.err" --retry 20 --heartbeat 1 "$SHM" 127.0.0.1 "$P1"
c1=$TS_PID
ringwriter_bg --linger-ms 3500 "$SHM" 0
wait_in "$T/k1.err" "reconnected to 127.0.0.1:$P1 \(connection 2\)" > /dev/null
timeout 30 "$RW" "$SHM" 100 > /dev/null
wait $c1
is $? 0 "trace_stream reconnects after the cut and ends well"
SHM2=/cs-test-key2-$$
track_shm $SHM2
stream_bg "$T/k2.err" --retry 0 "$SHM2" 127.0.0.1 "$P1"
c2=$TS_PID
timeout 30 "$RW" "$SHM2" 50 > /dev/null
wait $c2
is $? 0 "a second trace_stream streams 50 events and ends well"
wait $peer
sed -n 1p "$T/p1.out" | grep -qx "conn 1: flags=0xb01 chunks=2,6 key=#1" &&
    sed -n 2p "$T/p1.out" | grep -Eqx "conn 2: flags=0xb01 chunks=2,6,0,2(\*[0-9]+)? key=#1"
ok $? "both connections offer the key (0xb01) and send it once, right after the first resume notice; the heartbeats after carry none; the same key" ||
    diag "$(cat "$T/p1.out")"
is "$(sed -n 3,4p "$T/p1.out")" "conn 3: flags=0xb01 chunks=2,6,0 key=#2
key in none of the 2 files" "another trace_stream has another key; neither is in trace_stream's output"

# --- a flight recorder: the main connection has the key, a snapshot none ---
start_peer p2 2 --not-in "$T/fr.err"
SHM3=/cs-test-key3-$$
track_shm $SHM3
stream_bg "$T/fr.err" --flight-recorder "$SHM3" 127.0.0.1 "$(cat "$T/p2.port")"
c3=$TS_PID
ringwriter_bg --linger-ms 1500 "$SHM3" 200
wait_in "$T/fr.err" "tracer attached" > /dev/null
kill -USR1 $c3
wait_in "$T/fr.err" "snapshot 1 \(SIGUSR1\)" > /dev/null
wait $c3
is "$?" 0 "the recorder takes its snapshot and ends well"
wait $peer
sed -n 1p "$T/p2.out" | grep -Eqx "conn 1: flags=0xf01 chunks=2,6(,[0-57-9](\*[0-9]+)?)* key=#1" &&
    sed -n 2p "$T/p2.out" | grep -Eqx "conn 2: flags=0x301 chunks=0(\*[0-9]+)? key=none" &&
    sed -n 3p "$T/p2.out" | grep -qx "key in none of the 1 files"
ok $? "main connection: the key once after its resume notice; the snapshot's: no flag, no notice, no key" ||
    diag "$(cat "$T/p2.out")"
exit $_failed
