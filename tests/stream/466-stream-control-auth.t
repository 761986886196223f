#!/usr/bin/env bash
# 466-stream-control-auth.t - live control guarded by a key (issue 31 step
# 4, docs/control.md "Authentication"): with `--auth-key` on serve and
# trace_stream, control goes through, exact; every other pairing refuses
# it with a line that says why and changes nothing (a device with a key
# and a serve without, the reverse, two different keys), the stream going
# on as before; a server holding the key that sends a request with a wrong
# code, a replayed one and one without a code gets each refused
# (ctlpeer.py keyed); a key file that others may read, or too short, is
# refused by both programs at start.  The workload (tests/recorder/
# ctl_phases.c) makes 1000 calls each of f and g per phase:
#   phase 0 | --exe phases --off f (where it takes) | 1
# so f 1000 + (1000 if refused), g 2000, main 1.
source "$(dirname "$0")/../lib/lib.sh"
plan 18

need_tools ctl_phases
cp "$TOOLBIN/ctl_phases" "$T/phases"
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $10 !~ /^tick/ { print $10, $1 }' "$1" | sort | tr '\n' ' '; }
head -c 32 /dev/urandom > "$T/key" && chmod 600 "$T/key"
head -c 48 /dev/urandom > "$T/other" && chmod 600 "$T/other"

# run NAME 'SERVE-ARGS' 'STREAM-ARGS': serve and trace_stream --allow-control
# with those, the program through one `ctl --off f`; ctl's output in
# $T/NAME.ctl, its status in CTL_RC, trace_stream's in TS_RC, analyze's
# report in $T/NAME.txt.
run() {
    local name=$1 sargs=$2 targs=$3 shm=/cs466$1$$
    # shellcheck disable=SC2086 # the args are words
    start_serve "$T/$name" $sargs || return 1
    # shellcheck disable=SC2086
    stream_bg "$T/$name.ts" --allow-control $targs "$shm" 127.0.0.1 "$SERVE_PORT" || return 1
    track_shm "$shm"
    mkfifo "$T/$name.in"
    TRACE_SHM=$shm TRACE_ENABLE=1 "$T/phases" < "$T/$name.in" > "$T/$name.out" &
    local pid=$!
    track_pid $pid
    exec 3> "$T/$name.in"
    wait_in "$T/$name.out" "^phase 0 done" > /dev/null
    wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
    case "$sargs $targs" in
    *--auth-key*--auth-key*) wait_in "$SERVE_LOG" "^callsight serve: conn 1: the device (did not )?prove" > /dev/null ;;
    esac
    "$CS" ctl "$T/$name" --list > "$T/$name.list" 2>&1
    "$CS" ctl "$T/$name" --exe "$T/phases" --off f > "$T/$name.ctl" 2>&1
    CTL_RC=$?
    echo >&3
    wait_in "$T/$name.out" "^phase 1 done" > /dev/null
    exec 3>&-
    wait $pid
    wait $TS_PID
    TS_RC=$?
    wait_serve_closed 1
    stop_serve
    "$CS" analyze "$T/$name" --exe "$T/phases" > "$T/$name.txt" 2>&1
}

# --- the same key on both ends: control goes through, exact ---
run both "--auth-key $T/key" "--auth-key $T/key"
is "$CTL_RC $TS_RC $(sed 's/conn [0-9]*/conn N/' "$T/both.ctl")" \
    "0 0 callsight ctl: conn N: generation 2: recording all but 1 function (applied)" "one key on both ends: applied"
is "$(counts "$T/both.txt")" "f 1000 g 2000 main 1 " "one key on both ends: f off from phase 1, counts exact"
is "$(cat "$T/both.list")" "callsight ctl: conn 1 (key proved): takes control; nothing changed yet" "--list says the key was proved"
grep -q "^callsight serve: conn 1: the device proved the key: control is relayed to it" "$SERVE_LOG" &&
    grep -q "^trace_stream: the server proved our key" "$T/both.ts"
ok $? "each side says the other proved the key"

# --- a key on serve only: nothing is relayed to the device ---
run sonly "--auth-key $T/key" ""
is "$CTL_RC $TS_RC $(cat "$T/sonly.ctl")" \
    "3 0 callsight ctl: conn 1: its trace_stream has not proved serve's key (start it with --auth-key and the same key)" \
    "a key on serve only: ctl says the device has not proved it (exit 3)"
is "$(counts "$T/sonly.txt")" "f 2000 g 2000 main 1 " "... and nothing changed"
is "$(cat "$T/sonly.list")" "callsight ctl: conn 1: takes control, but has not proved serve's key: nothing is relayed to it (start its trace_stream with --auth-key and the same key)" \
    "... and --list says why"

# --- a key on the device only: it refuses what serve relays ---
run donly "" "--auth-key $T/key"
is "$CTL_RC $TS_RC $(cat "$T/donly.ctl")" \
    "1 0 callsight ctl: conn 1: refused: this device takes control only from a serve that proves its key (serve --auth-key); nothing changed" \
    "a key on the device only: the device refuses, and ctl says why (exit 1)"
is "$(counts "$T/donly.txt")" "f 2000 g 2000 main 1 " "... and nothing changed"
grep -q "^trace_stream: the server has no key (serve --auth-key)" "$T/donly.ts"
ok $? "... trace_stream says the server has no key"

# --- two different keys: neither proves itself to the other ---
run differ "--auth-key $T/other" "--auth-key $T/key"
is "$CTL_RC $TS_RC $(grep -c "^callsight serve: conn 1: the device proved" "$SERVE_LOG")" "3 0 0" \
    "different keys: nothing relayed (exit 3), the stream ends as usual"
grep -q "^trace_stream: the server did not prove it holds our key; no control is taken" "$T/differ.ts"
ok $? "... trace_stream says the server did not prove the key"
is "$(counts "$T/differ.txt")" "f 2000 g 2000 main 1 " "... and nothing changed"

# --- a server that holds the key, sending what no correct serve sends ---
python3 "$TESTS/tools/ctlpeer.py" keyed "$T/kp.port" "$T/key" > "$T/kp.out" 2>&1 &
KP=$!
track_pid $KP
wait_file "$T/kp.port"
stream_bg "$T/kp.ts" --allow-control --auth-key "$T/key" /cs466k$$ 127.0.0.1 "$(cat "$T/kp.port")"
track_shm /cs466k$$
mkfifo "$T/k.in"
TRACE_SHM=/cs466k$$ TRACE_ENABLE=1 "$T/phases" < "$T/k.in" > /dev/null &
K=$!
track_pid $K
exec 6> "$T/k.in"
wait_in "$T/kp.out" "^answer seq=3 " > /dev/null
exec 6>&-
wait $K
wait $TS_PID
TSK=$?
wait $KP
is "$TSK $(grep -v "^records=" "$T/kp.out" | sed "s/^flags=0x3b0[01]$/flags=0x3b00/")" "0 flags=0x3b00
proof=ok
answer seq=1 status=1 gen=0 reason=its authentication code does not match (forged, or damaged on the way)
answer seq=2 status=0 gen=2 reason=
answer seq=2 status=1 gen=0 reason=it repeats an earlier request (replayed)
answer seq=3 status=1 gen=0 reason=its authentication code does not match (forged, or damaged on the way)" \
    "a keyed server: a wrong code, a replay and no code refused, the signed request applied"

# --- key files refused at start ---
head -c 32 /dev/urandom > "$T/loose" && chmod 640 "$T/loose"
head -c 16 /dev/urandom > "$T/short" && chmod 600 "$T/short"
"$B/trace_stream" --allow-control --auth-key "$T/loose" /cs466x$$ 127.0.0.1 1 > "$T/e1" 2>&1
is "$? $(cat "$T/e1")" "2 trace_stream: --auth-key $T/loose: readable or writable by others (chmod 600 it)" \
    "trace_stream refuses a key others may read (exit 2)"
"$CS" serve --port 0 --out "$T/never" --auth-key "$T/short" > "$T/e2" 2>&1
is "$? $(cat "$T/e2")" "2 callsight serve: --auth-key $T/short: shorter than 32 bytes" "serve refuses a short key (exit 2)"
"$B/trace_stream" --auth-key "$T/key" /cs466x$$ 127.0.0.1 1 > "$T/e3" 2>&1
is "$? $(cat "$T/e3")" "2 trace_stream: --auth-key goes with --allow-control: the key guards control" \
    "trace_stream: --auth-key alone is a usage error"
# the device client as a device builds it, without -DTS_AUTH: it says how to get keys
cc -std=c11 -O1 -o "$T/ts_nokeys" "$B/dist/trace_stream.c" -lzstd 2> "$T/cc.err"
"$T/ts_nokeys" --allow-control --auth-key "$T/key" /cs466x$$ 127.0.0.1 1 > "$T/e4" 2>&1
is "$? $(cat "$T/e4")" "2 trace_stream: --auth-key: this trace_stream was built without keys; build it with -DTS_AUTH and -lcrypto on its cc line" \
    "a trace_stream built without keys refuses --auth-key and says how to build one"
exit $_failed
