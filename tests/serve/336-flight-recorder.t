#!/usr/bin/env bash
# 336-flight-recorder.t - trace_stream --flight-recorder: the ring keeps the
# most recent events (the tracers overwrite whole batches, counted), and
# only a trigger sends them, as one snapshot on a connection of its own,
# through a link of 256 KB/s (tests/tools/rateproxy.c).  The workload
# (tests/recorder/slowcall.c) makes a million fast calls and one of 50 ms:
# plain streaming through that link drops nearly all its events; with
# TRACE_TRIGGER=slow>2ms the slow call arrives with its whole stack and
# more than 1 MB of what came before it, exactly matched.  A SIGUSR1
# snapshot of a running program holds no unmatched exit (those of calls
# entered before it are counted as truncated).  A trigger storm (every call
# slow) with --max-triggers 2: two snapshots, the rest counted.
# In a private network namespace whose loopback has small TCP send buffers,
# as a device's kernel on a slow link keeps them, so that the link and not
# megabytes of kernel buffering decides what gets through (and how long
# the test takes); as tests/tools/slowlink.sh does for test 118.
if [ -z "${CALLSIGHT_T36_NETNS:-}" ]; then
    CALLSIGHT_T36_NETNS=1 exec unshare -n bash "$0" "$@"
fi
source "$(dirname "$0")/../lib/lib.sh"
plan 34
python3 "$TESTS/tools/lo_up.py" && echo "4096 16384 65536" > /proc/sys/net/ipv4/tcp_wmem ||
    { echo "Bail out! cannot bring up lo in a private network namespace"; exit 1; }

need_tools slowcall rateproxy streamgen libloop
P=$TOOLBIN/slowcall

# link NAME CONNS TS_OPTS... -- PROGRAM ARGS: serve in $T/NAME, the proxy at
# 256 KB/s for CONNS connections in front of it, trace_stream TS_OPTS on a
# fresh ring (TRACE_SHM_SIZE) through it, then the program (its stdout in
# $T/NAME.out); waits for everything to end (bounded).  trace_stream's
# stderr in $T/NAME.err.  Status: the program's and trace_stream's.
link() {
    local name=$1 conns=$2 shm=/callsight-t36-$$-$1 rc=0
    shift 2
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    start_serve "$T/$name" || return 1
    "$TOOLBIN/rateproxy" "$T/$name.port" "$SERVE_PORT" 262144 "$conns" > "$T/$name.proxy" &
    local proxy=$!
    track_pid $proxy
    for _ in $(seq 200); do [ -s "$T/$name.port" ] && break; sleep 0.05; done
    track_shm "$shm"
    "$B/trace_stream" "${opts[@]}" "$shm" 127.0.0.1 "$(cat "$T/$name.port")" 2> "$T/$name.err" &
    CLIENT_PID=$!
    track_pid $CLIENT_PID
    for _ in $(seq 500); do grep -q 'waiting for a tracer' "$T/$name.err" 2>/dev/null && break; sleep 0.02; done
    TRACE_ENABLE=1 TRACE_SHM=$shm timeout 120 "$@" > "$T/$name.out" || rc=1
    wait_stream_client $CLIENT_PID || rc=1
    for _ in $(seq 600); do kill -0 $proxy 2>/dev/null || break; sleep 0.1; done
    kill $proxy 2>/dev/null
    wait $proxy 2>/dev/null
    wait_serve_closed "$conns" || rc=1
    stop_serve
    return $rc
}

# --- plain streaming through the slow link drops most of it ---
# Without the codec: this workload's calls are so alike that the codec
# shrinks them a thousandfold, which no real program's do; zstd alone is
# nearer what a device's link meets.
TRACE_SHM_SIZE=4194304 link plain 1 --codec none -- "$P" 1000000
ok $? "plain streaming of the workload through 256 KB/s"
dropped=$(sed -n 's/.*, dropped \([0-9]*\).*/\1/p' "$T/plain.err" | tail -n 1)
awk -v d="$dropped" 'BEGIN { exit !(d > 0.9 * 6000000) }'
ok $? "plain streaming drops nearly all of the 6000000 events (over 90%) (dropped ${dropped})"

# --- the same run with the recorder and a trigger ---
TRACE_SHM_SIZE=4194304 TRACE_TRIGGER='slow>2ms' link fr 2 --codec none --flight-recorder -- "$P" 1000000
ok $? "the same run, --flight-recorder, TRACE_TRIGGER=slow>2ms"
grep -q "^trace_stream: snapshot 1 (a slow call (TRACE_TRIGGER)): " "$T/fr.err"
ok $? "trace_stream took one snapshot for the slow call"
snap=$(ls -S "$T"/fr/trace.stream.*.bin | head -n 1)
"$CS" analyze "$T/fr" --exe "$P" --top 0 > "$T/fr.txt" 2> "$T/fr.stderr"
grep -Eq "^trigger: slow \(slowcall.c:[0-9]+\) took [0-9.]+ ms, ending at [0-9.]+s on thread [0-9]+( \(slowcall\))?; stack: main > run > work > slow$" "$T/fr.txt"
ok $? "the slow call arrives with its whole stack"
took=$(sed -n 's/^trigger: slow .* took \([0-9.]*\) ms.*/\1/p' "$T/fr.txt")
awk -v t="$took" 'BEGIN { exit !(t >= 50 && t < 5000) }'
ok $? "it took at least 50 ms (${took} ms)"
# row FILE NAME: the calls column of NAME's row in a report
row() { awk -v n="$2" 'NF >= 10 && $1 ~ /^[0-9]+$/ && $(NF-1) == n { print $1 }' "$1"; }
is "$(row "$T/fr.txt" slow)" 1 "one call of slow in the report"
works=$(row "$T/fr.txt" work)
awk -v w="$works" 'BEGIN { exit !(w >= 5462) }'
ok $? "more than 1 MB of events before it: ${works} calls of work (5462 are 1 MB)"
is "$(field unmatched_exits "$(head -n 1 "$T/fr.txt")")" 0 "no unmatched exits in the snapshot"
grep -q "^note: stream [0-9]*: flight-recorder snapshot 1, taken for a slow call (TRACE_TRIGGER): what the ring held then (see trigger: below); [1-9][0-9]* older events were overwritten before it$" "$T/fr.txt"
ok $? "the report says what the snapshot is and how much was overwritten"

dev=$(sed -n 's/^trace_stream: forwarded .*, dropped \([0-9]*\).*/\1/p' "$T/fr.err")
is "$(field dropped "$(head -n 1 "$T/fr.txt")")" "$dev" \
    "dropped is the device's count, once (the snapshot's threads' losses are among it)"
"$CS" analyze "$T/fr" --exe "$P" --trigger > "$T/trig.txt" 2>&1
is "$(sed -n '/^trigger: /,$p' "$T/trig.txt" | sed 1d | sed 's/ (slowcall.c:[0-9]*)//')" "
  main
    run
      work
        slow   <- the slow call" "--trigger: the stack a frame a line"
"$CS" analyze "$T/fr" --exe "$P" --format json -o "$T/fr.json"
is "$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["triggers"]; print(len(t), t[0]["stack"], t[0]["took_ns"] >= 50000000)' "$T/fr.json")" \
    "1 ['main', 'run', 'work', 'slow'] True" "json: the trigger with its stack"

# --- SIGUSR1 while the program runs ---
# usr_snapshot NAME TS_OPTS...: the running program again, SIGUSR1 once
# (with HOW=trigger: `callsight trigger` instead, its output in $T/NAME.trig)
usr_snapshot() {
    local name=$1
    shift
    TRACE_TRIGGER= link "$name" 2 --flight-recorder "$@" -- "$P" 10000000 -1 &
    local runner=$!
    for _ in $(seq 500); do grep -q "tracer attached" "$T/$name.err" 2>/dev/null && break; sleep 0.02; done
    sleep 0.3
    if [ "${HOW:-}" = trigger ]; then
        "$CS" trigger "$T/$name" > "$T/$name.trig" 2>&1
    else
        kill -USR1 "$(pgrep -f -- "trace_stream .*/callsight-t36-$$-$name 127.0.0.1" | head -n 1)"
    fi
    wait $runner
}
usr_snapshot usr
ok $? "a running program, SIGUSR1 to trace_stream"
"$CS" analyze "$T/usr" --exe "$P" --top 0 > "$T/usr.txt" 2>&1
is "$(field unmatched_exits "$(head -n 1 "$T/usr.txt")") $(grep -c '^note: stream [0-9]*: flight-recorder snapshot 1, taken for SIGUSR1' "$T/usr.txt")" "0 1" \
    "a consistent snapshot: no unmatched exits, said to be SIGUSR1's"
"$CS" analyze "$T/usr" --exe "$P" --trigger > "$T/usr-trig.out" 2> "$T/usr-trig.err"
is "$? $(cat "$T/usr-trig.err")" "1 callsight analyze: --trigger: no call in these traces fired TRACE_TRIGGER; they hold 1 flight-recorder snapshot (the first, stream 2, taken for SIGUSR1): analyze without --trigger reports what it holds" \
    "--trigger on a SIGUSR1 snapshot: no slow call in it, and it says where the snapshot is"
w=$(row "$T/usr.txt" work) s=$(row "$T/usr.txt" step)
# each work() calls step() once: a work() cut at either end of the
# snapshot may leave its step() whole, so step() has 0 to 2 more
awk -v w="$w" -v s="$s" 'BEGIN { exit !(w > 1000 && s - w >= 0 && s - w <= 2) }'
ok $? "whole calls: ${w} of work, ${s} of step"

usr_snapshot after --after 300
read -r ring all < <(sed -n 's/^trace_stream: snapshot 1 (SIGUSR1): \([0-9]*\) records of the ring, \([0-9]*\) in all, .*/\1 \2/p' "$T/after.err")
ok $([ -n "$ring" ] && [ "$all" -gt "$ring" ]; echo $?) "--after 300: the snapshot goes on past the ring's contents (${ring:-?} of ${all:-?} records)"

# --- the host asks: callsight trigger, through serve ---
HOW=trigger usr_snapshot host
is "$(cat "$T/host.trig")" "callsight trigger: snapshot requested of 1 connection (conn 1)" \
    "callsight trigger: serve passes the request down the recorder's connection"
"$CS" analyze "$T/host" --exe "$P" --top 0 > "$T/host.txt" 2>&1
is "$(field unmatched_exits "$(head -n 1 "$T/host.txt")") $(grep -c '^note: stream 2: flight-recorder snapshot 1, taken for callsight trigger: ' "$T/host.txt") $(cat "$T"/serve.*.log | grep -c '^callsight serve: conn 1: snapshot requested (callsight trigger)$')" \
    "0 1 1" "the snapshot arrives as its own series, named for the request; serve said it passed it on"
"$CS" trigger "$T/nowhere" > /dev/null 2> "$T/nowhere.err"
is "$? $(wc -l < "$T/nowhere.err") $(grep -c '^callsight trigger: no serve is listening in ' "$T/nowhere.err")" "1 1 1" \
    "no serve in that directory: exit 1, one line"
start_serve "$T/plainsrv"
timeout 30 "$TOOLBIN/streamgen" --events 10 --pause-after 1 --paused-file "$T/sg.paused" --resume-file "$T/sg.go" \
    127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1 &
sg=$!
wait_file "$T/sg.paused"
"$CS" trigger "$T/plainsrv" > /dev/null 2> "$T/plainsrv.err"
is "$? $(grep -c 'no flight recorder is connected' "$T/plainsrv.err")" "1 1" \
    "a serve whose client is no flight recorder: nobody to ask, exit 1"
touch "$T/sg.go"
wait $sg
stop_serve

# --- a trace_stream that cannot be a recorder says so ---
: > "/dev/shm/callsight-t36-$$-taken"
track_shm "/callsight-t36-$$-taken"
"$B/trace_stream" --flight-recorder "/callsight-t36-$$-taken" 127.0.0.1 1 > /dev/null 2> "$T/taken.err"
is "$? $(grep -c 'a flight recorder needs a ring of its own' "$T/taken.err")" "1 1" "a ring that exists already: refused with one line"
"$B/trace_stream" --after 5 /x 127.0.0.1 1 > /dev/null 2> "$T/after.err"
is "$? $(cat "$T/after.err")" "2 trace_stream: --after and --max-triggers go with --flight-recorder" "--after alone: a usage error"

# --- a trigger storm: every call slow ---
TRACE_TRIGGER='slow>500us' link storm 3 --flight-recorder --max-triggers 2 -- "$P" 400 0 storm
ok $? "400 calls of 1 ms, each one slow, --max-triggers 2"
is "$(ls "$T"/storm/trace.stream.*.bin | wc -l)" 3 "two snapshots, and the heartbeat connection"
line=$(grep "^trace_stream: flight recorder: " "$T/storm.err")
echo "$line" | grep -Eq "^trace_stream: flight recorder: 2 snapshots \(0 failed\), .* triggers not taken: [1-9][0-9]* over --max-triggers, [1-9][0-9]* slow calls within 100 ms of another$"
ok $? "the rest counted by trace_stream: $line"
"$CS" analyze "$T/storm" --exe "$P" --top 0 > "$T/storm.txt" 2>&1
grep -Eq "^note: stream [0-9]+: flight recorder: triggers that took no snapshot: [1-9][0-9]* over trace_stream's --max-triggers, [1-9][0-9]* slow calls within 100 ms of one that did$" "$T/storm.txt"
ok $? "and in-band: analyze reports them"

# --- the Perfetto timeline marks the triggers and the snapshots ---
"$CS" analyze "$T/storm" --exe "$P" --format perfetto -o "$T/storm.pf" 2> "$T/pf.err" &&
    protoc --decode=callsight_test.Trace -I "$TESTS/tools" perfetto_subset.proto < "$T/storm.pf" > "$T/storm.dec" 2>> "$T/pf.err" &&
    python3 "$TESTS/tools/perfetto_check.py" < "$T/storm.dec" > "$T/storm.events" 2>> "$T/pf.err"
# (how many slow calls asked inside the two snapshots varies, from 2 up: the report says)
rc=$?
asked=$(grep -c '^trigger: slow ' "$T/storm.txt")
is "$rc $(grep -c ' I trigger: a call took [0-9.]* ms$' "$T/storm.events") $(grep -c ' I flight-recorder snapshot [12]$' "$T/storm.events") $([ "$asked" -ge 2 ] && echo some)" \
    "0 $asked 2 some" "perfetto: an instant for each snapshot and for each slow call that asked"

# recorder_run NAME PROGRAM ARGS...: serve in $T/NAME, trace_stream
# --flight-recorder straight to it (stderr in $T/NAME.err), and PROGRAM in
# the background on its ring; returns once the tracer attached, with
# CLIENT_PID and PROG_PID set.
recorder_run() {
    local name=$1 shm=/callsight-t36-$$-$1
    shift
    start_serve "$T/$name"
    track_shm $shm
    "$B/trace_stream" --flight-recorder "$shm" 127.0.0.1 "$SERVE_PORT" 2> "$T/$name.err" &
    CLIENT_PID=$!
    track_pid $CLIENT_PID
    for _ in $(seq 500); do grep -q 'waiting for a tracer' "$T/$name.err" 2>/dev/null && break; sleep 0.02; done
    TRACE_ENABLE=1 TRACE_SHM=$shm "$@" > /dev/null &
    PROG_PID=$!
    track_pid $PROG_PID
    for _ in $(seq 500); do grep -q "tracer attached" "$T/$name.err" && break; sleep 0.02; done
}

# --- the traced program dies: its last moments are sent ---
recorder_run death "$P" 100000000 -1
sleep 0.3
kill -KILL $PROG_PID
wait $PROG_PID 2>/dev/null
wait_stream_client $CLIENT_PID
is "$? $(grep -c '^trace_stream: snapshot 1 (a tracer died): ' "$T/death.err")" "3 1" \
    "SIGKILL to the program: trace_stream sends the ring it left and exits 3"
wait_serve_closed 2
stop_serve
"$CS" analyze "$T/death" --exe "$P" --top 0 > "$T/death.txt" 2>&1
is "$(grep -c '^note: stream [0-9]*: flight-recorder snapshot 1, taken for a tracer that died: ' "$T/death.txt") $(field unmatched_exits "$(head -n 1 "$T/death.txt")")" \
    "1 0" "analyze names it, and it holds no unmatched exit"

# --- a shared object's functions are named in a snapshot taken long after
#     the program's start: threads write their module list again as the
#     ring is overwritten ---
recorder_run lib "$TOOLBIN/libloop" 400000
sleep 0.5
kill -USR1 $CLIENT_PID
wait $PROG_PID
wait_stream_client $CLIENT_PID
wait_serve_closed 2
stop_serve
"$CS" analyze "$T/lib" --exe "$TOOLBIN/libloop" --top 0 > "$T/lib.txt" 2>&1
over=$(sed -n 's/^note: stream [0-9]*: flight-recorder snapshot 1, taken for SIGUSR1: what the ring held then; \([0-9]*\) older.*/\1/p' "$T/lib.txt")
named=$(awk '$1 ~ /^[0-9]+$/ && NF >= 11 && $11 == "[libw.so]" { print $10 }' "$T/lib.txt" | sort | tr '\n' ' ')
ok $([ "${over:-0}" -gt 4000000 ] && [ "$named" = "w_inner w_outer " ]; echo $?) \
    "after ${over:-?} events overwritten, the snapshot still names libw.so's functions (${named})"

# --- file mode, NAME as a link-time address, and values that are not one ---
addr=$(nm "$P" | awk '$3 == "slow" { print "0x" $1 }')
TRACE_ENABLE=1 TRACE_DIR="$T/file" TRACE_TRIGGER="$addr>2ms" "$P" 100000 > /dev/null 2> "$T/file.err"
"$CS" analyze "$T/file" --exe "$P" --trigger > "$T/file.txt" 2>&1
is "$? $(wc -c < "$T/file.err") $(grep -Ec '^trigger: slow \(slowcall.c:[0-9]+\) took [0-9.]+ ms, .*; stack: main > run > work > slow$' "$T/file.txt")" \
    "0 0 1" "file mode, TRACE_TRIGGER=$addr>2ms: the slow call and its stack, no warning"
TRACE_ENABLE=1 TRACE_DIR="$T/bad" TRACE_TRIGGER='slow>2' "$P" 10 > /dev/null 2> "$T/bad.err"
TRACE_ENABLE=1 TRACE_DIR="$T/bad" TRACE_TRIGGER='nosuch>2ms' "$P" 10 > /dev/null 2>> "$T/bad.err"
is "$(cat "$T/bad.err")" "callsight: TRACE_TRIGGER=slow>2 is not NAME>LIMIT (such as parse>2ms; units ns, us, ms, s); no trigger
callsight: TRACE_TRIGGER: no function nosuch in this program's symbols; no trigger" "a limit without a unit, a name not in the program: one line each"
