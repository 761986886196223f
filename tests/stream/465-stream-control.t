#!/usr/bin/env bash
# 465-stream-control.t - live control over the link (issue 31 step 2,
# docs/control.md): `callsight ctl DIR` reaches a device's trace_stream
# --allow-control through serve, every change keeps counts exact, and
# whatever cannot take control says so.  The program runs six phases of
# 1000 calls each of f and g, waiting for a line on its stdin between
# phases, while a second thread calls tick() every millisecond (so a change
# is applied, and answered, while the main thread waits):
#   phase 0 everything | --off f | 1 g only | --pause | 2 nothing |
#   --resume (f still off) | 3 g only | --reset | 4 everything |
#   --only g | 5 g only
# so f has 2000 calls and g 5000, in event mode and in summary mode.
# Then: a trace_stream without --allow-control, one built before control
# existed, a serve that predates it (codecpeer.py), forged requests through
# serve's socket, and a hostile server (ctlpeer.py).
source "$(dirname "$0")/../lib/lib.sh"
plan 27

need_tools ctl_phases
cp "$TOOLBIN/ctl_phases" "$T/phases" # the workload (tests/recorder/ctl_phases.c)

counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 !~ /^tick/ { print $10, $1 }' "$1" | sort | tr '\n' ' '; }

# phases MODE: serve in $T/MODE, trace_stream --allow-control, the program
# through its five changes; ctl's lines in $T/MODE.ctl, statuses in $T/MODE.rc.
phases() {
    local mode=$1 fifo=$T/$1.in shm=/cs465$1$$
    start_serve "$T/$mode" || return 1
    stream_bg "$T/$mode.ts" --allow-control "$shm" 127.0.0.1 "$SERVE_PORT" || return 1
    track_shm "$shm"
    mkfifo "$fifo"
    TRACE_MODE=$mode TRACE_SHM=$shm TRACE_ENABLE=1 "$T/phases" < "$fifo" > "$T/$mode.out" &
    PID=$!
    track_pid $PID
    exec 3> "$fifo"
    next() { wait_in "$T/$mode.out" "^phase $1 done" > /dev/null; }
    c() { "$CS" ctl "$T/$mode" "$@" >> "$T/$mode.ctl" 2>&1; echo $? >> "$T/$mode.rc"; }
    next 0
    wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
    c --list
    c --exe "$T/phases" --off f
    echo >&3; next 1
    c --pause
    echo >&3; next 2
    c --resume
    echo >&3; next 3
    c --reset
    echo >&3; next 4
    c --conn 1 --exe "$T/phases" --only g
    echo >&3; next 5
    exec 3>&-
    wait $PID
    wait $TS_PID
    TS_RC=$?
    wait_serve_closed 1
    stop_serve
}

phases events
is "$? $TS_RC" "0 0" "event mode: the program ran its phases, trace_stream exited 0"
is "$(tr '\n' ' ' < "$T/events.rc")" "0 0 0 0 0 0 " "ctl's exit statuses: listed, then five changes applied (the ticker applies each)"
is "$(cat "$T/events.ctl")" "callsight ctl: conn 1: takes control; nothing changed yet
callsight ctl: conn 1: generation 2: recording all but 1 function (applied)
callsight ctl: conn 1: generation 4: paused (on --resume: all but 1 function) (applied)
callsight ctl: conn 1: generation 6: recording all but 1 function (applied)
callsight ctl: conn 1: generation 8: recording everything (applied)
callsight ctl: conn 1: generation 10: recording only 1 function (applied)" "ctl says each generation, what it sets, that it was applied"
is "$(grep -c '^callsight serve: conn 1: control: applied$' "$SERVE_LOG")" "5" "serve says each change it relayed"
"$CS" analyze "$T/events" --exe "$T/phases" > "$T/ev.txt" 2>&1
h=$(head -n 1 "$T/ev.txt")
is "$(counts "$T/ev.txt")" "f 2000 g 5000 main 1 " "event mode through the link: f 2000 calls (phases 0 and 4), g 5000, exactly"
is "$(field unmatched_exits "$h") $(field unclosed_enters "$h") $(field dropped "$h")" "0 0 0" \
    "no exit without its enter, none left open, nothing dropped"
is "$(grep -c "^note: stream 1: live control: generation \([2468]\|10\) from [0-9.]* s: .*, applied by 2 threads" "$T/ev.txt")" "5" \
    "a note per generation, each applied by both threads"

phases summary
is "$? $TS_RC" "0 0" "summary mode: the program ran its phases, trace_stream exited 0"
is "$(tr '\n' ' ' < "$T/summary.rc")" "0 0 0 0 0 0 " "the same exit statuses"
"$CS" analyze "$T/summary" --exe "$T/phases" > "$T/sum.txt" 2>&1
is "$(counts "$T/sum.txt")" "f 2000 g 5000 main 1 " "summary mode through the link: the same exact counts"
is "$(grep -c "^note: stream 1: live control: generation \([2468]\|10\) from [0-9.]* s: .*, applied by 2 threads" "$T/sum.txt")" "5" \
    "summary mode through the link: a note per generation, carried with the merged snapshots"

# --- who cannot take control says so ---
start_serve "$T/plain" || exit 1
stream_bg "$T/plain.ts" /cs465p$$ 127.0.0.1 "$SERVE_PORT"
track_shm /cs465p$$
mkfifo "$T/p.in"
TRACE_SHM=/cs465p$$ TRACE_ENABLE=1 "$T/phases" < "$T/p.in" > "$T/p.out" &
P=$!
track_pid $P
exec 4> "$T/p.in"
wait_in "$T/p.out" "phase 0 done" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
"$CS" ctl "$T/plain" --pause > "$T/p1" 2>&1
is "$? $(cat "$T/p1")" "3 callsight ctl: no connection takes control (start trace_stream with --allow-control)" \
    "a trace_stream without --allow-control: exit 3, and the way to allow it"
"$CS" ctl "$T/plain" --conn 1 --pause > "$T/p2" 2>&1
is "$? $(cat "$T/p2")" "3 callsight ctl: conn 1: trace_stream did not offer control (start it with --allow-control)" \
    "--conn N of it: the same, named"
"$CS" ctl "$T/plain" --conn 99 --pause > "$T/p3" 2>&1
is "$? $(cat "$T/p3")" "3 callsight ctl: no connection 99 is writing now (ended, or never was)" "a connection that is not there: exit 3"
"$CS" ctl "$T/plain" --list > "$T/p4" 2>&1
is "$? $(cat "$T/p4")" "0 callsight ctl: conn 1: takes no control (its trace_stream runs without --allow-control, or predates it)" \
    "--list says which connections take control"
exec 4>&-
wait $P
wait $TS_PID
is "$?" "0" "and it streamed as before"
wait_serve_closed 1
stop_serve
"$CS" ctl "$T/plain" --pause > "$T/p5" 2>&1
is "$? $(grep -c '^callsight ctl: no serve is listening in ' "$T/p5")" "3 1" "no serve in DIR: exit 3"
"$CS" ctl "$T/plain" --pid 1 --pause > "$T/p6" 2>&1
is "$?" "2" "--pid with DIR: a usage error"

# --- forged and truncated requests through serve's socket change nothing ---
start_serve "$T/forge" || exit 1
stream_bg "$T/forge.ts" --allow-control /cs465f$$ 127.0.0.1 "$SERVE_PORT"
track_shm /cs465f$$
mkfifo "$T/f.in"
TRACE_SHM=/cs465f$$ TRACE_ENABLE=1 "$T/phases" < "$T/f.in" > "$T/f.out" &
F=$!
track_pid $F
exec 5> "$T/f.in"
wait_in "$T/f.out" "phase 0 done" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
python3 - "$T/forge/.callsight-serve.sock" > "$T/f1" << 'EOF2'
import socket, struct, sys
def ask(data):
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.sendall(data)
    out = b""
    while True:
        part = s.recv(4096)
        if not part: break
        out += part
    print(out.decode().strip() or "(nothing)")
ask(b"ctl 0 56\n" + struct.pack("<IIII2QQII", 2, 3, 0, 0, 0, 0, 0, 0, 0) + b"x" * 8)  # says 3 functions, holds 1
ask(b"ctl 0 99999\n")                                                     # longer than any request
ask(b"ctl 0 100\n" + b"y" * 10)                                           # cut short
ask(b"ctl 0 48\n" + struct.pack("<IIII2QQII", 0x100, 0, 0, 0, 0, 0, 0, 0, 0))          # a flag nobody knows
EOF2
is "$(cat "$T/f1")" "refused 1 its count of functions does not match its length
refused 0 a request of 99999 bytes (at most 33095)
(nothing)
refused 1 it sets flags this trace_stream does not know" "forged requests: refused by the device or by serve, a short one dropped"
"$CS" ctl "$T/forge" --list > "$T/f2" 2>&1
is "$(cat "$T/f2")" "callsight ctl: conn 1: generation 0: recording everything (applied)" "nothing changed: still generation 0"
exec 5>&-
wait $F
wait $TS_PID
is "$?" "0" "the stream went on and ended as usual"
wait_serve_closed 1
stop_serve
is "$(counts <("$CS" analyze "$T/forge" --exe "$T/phases" 2>&1))" "f 1000 g 1000 main 1 " "every call recorded"

# --- a hostile server: bad requests refused, an oversized one ends the reading, never the stream ---
python3 "$TESTS/tools/ctlpeer.py" hostile "$T/hp.port" > "$T/hp.out" 2>&1 &
HP=$!
track_pid $HP
wait_file "$T/hp.port"
stream_bg "$T/hp.ts" --allow-control /cs465h$$ 127.0.0.1 "$(cat "$T/hp.port")"
track_shm /cs465h$$
mkfifo "$T/h.in"
TRACE_SHM=/cs465h$$ TRACE_ENABLE=1 "$T/phases" < "$T/h.in" > /dev/null &
H=$!
track_pid $H
exec 6> "$T/h.in"
wait_in "$T/hp.ts" "no more requests are taken" > /dev/null # the ticker's chunks keep it reading
wait_in "$T/hp.out" "^answer seq=3 " > /dev/null
exec 6>&-
wait $H
wait $TS_PID
TSH=$?
wait $HP
fwd=$(sed -n 's/^trace_stream: forwarded \([0-9]*\) events.*/\1/p' "$T/hp.ts")
is "$TSH $(grep -v "^records=" "$T/hp.out" | sed "s/^flags=0x1b0[01]$/flags=0x1b00/")" "0 flags=0x1b00
answer seq=1 status=1 gen=0 reason=its count of functions does not match its length
answer seq=2 status=0 gen=2 reason=
answer seq=3 status=1 gen=0 reason=it names a function at address 0" \
    "the device answers each whole request: two refused, the valid one applied"
is "$(grep -c 'control request of 2147483647 bytes (at most 33095); no more requests are taken' "$T/hp.ts") $(sed -n 's/^records=//p' "$T/hp.out")" \
    "1 $fwd" "an oversized one ends the reading of requests, and every record still arrived"

# --- an older serve: trace_stream --allow-control streams as before ---
python3 "$TESTS/tools/codecpeer.py" oldserver "$T/old.port" > "$T/old.out" 2>&1 &
OP=$!
track_pid $OP
wait_file "$T/old.port"
stream_bg "$T/old.ts" --allow-control /cs465o$$ 127.0.0.1 "$(cat "$T/old.port")"
track_shm /cs465o$$
TRACE_SHM=/cs465o$$ TRACE_ENABLE=1 "$T/phases" < /dev/null > /dev/null
wait $TS_PID
TSO=$?
wait $OP
fwd=$(sed -n 's/^trace_stream: forwarded \([0-9]*\) events.*/\1/p' "$T/old.ts")
is "$TSO $(sed -n 's/.*records=//p' "$T/old.out")" "0 $fwd" "an older serve (no ack): every record arrives, exit 0"
# --- a trace_stream built before live control (the tree at 943a592) ---
if git -C "$TESTS/.." cat-file -e 943a592 2> /dev/null; then
    mkdir "$T/oldts"
    git -C "$TESTS/.." archive 943a592 stream runtime | tar -x -C "$T/oldts"
    cc -std=c11 -O1 -Iruntime -o "$T/oldts/trace_stream" "$T/oldts/stream/trace_stream.c" -lzstd 2> "$T/oldts.err" ||
        diag "$(cat "$T/oldts.err")"
    start_serve "$T/older" || exit 1
    "$T/oldts/trace_stream" /cs465t$$ 127.0.0.1 "$SERVE_PORT" 2> "$T/older.ts" &
    OT=$!
    track_pid $OT
    track_shm /cs465t$$
    wait_in "$T/older.ts" "waiting for a tracer" > /dev/null
    mkfifo "$T/o.in"
    TRACE_SHM=/cs465t$$ TRACE_ENABLE=1 "$T/phases" < "$T/o.in" > "$T/o.out" &
    O=$!
    track_pid $O
    exec 7> "$T/o.in"
    wait_in "$T/o.out" "phase 0 done" > /dev/null
    wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
    "$CS" ctl "$T/older" --conn 1 --pause > "$T/o1" 2>&1
    is "$? $(cat "$T/o1")" "3 callsight ctl: conn 1: trace_stream did not offer control (start it with --allow-control)" \
        "an older trace_stream: told apart, exit 3"
    exec 7>&-
    wait $O
    wait $OT
    OTRC=$?
    wait_serve_closed 1
    stop_serve
    is "$OTRC $(counts <("$CS" analyze "$T/older" --exe "$T/phases" 2>&1))" "0 f 1000 g 1000 main 1 " \
        "and it streams to this serve exactly as before"
else
    skip "no git history here: the older trace_stream cannot be built"
    skip "no git history here"
fi
exit $_failed
