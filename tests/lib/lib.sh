# lib.sh - shared helpers for callsight's end-to-end tests (bash, TAP).
#
# Source it first thing in a tests/<topic>/*.t script.  It provides TAP output
# (plan/ok/is/skip), a private temp dir removed on exit, and cleanup of every
# process and shm segment a test registers, so no run leaves anything behind.

set -u
# TESTS is tests/ (this file sits in tests/lib/), whichever folder the test is in.
TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${CALLSIGHT_BUILD:-$(cd "$TESTS/.." && pwd)/build}
CS=$B/callsight
DIST=$B/dist # what users copy: the runtime and trace_stream as one file each, trace.h
TOOLBIN=$B/tests/tools # the helper programs make builds (tests/tools/, tests/recorder/)
T=$(mktemp -d "${TMPDIR:-/tmp}/callsight-test.XXXXXX")
_n=0
_failed=0
_pids=""
_shms=""

cleanup() {
    for p in $_pids; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
    for p in $_pids; do wait "$p" 2>/dev/null; done
    # A check failed: what serve said goes out with it (as TAP comments), so
    # that a failure seen only on another machine (CI) can be read there.
    if [ "$_failed" = 1 ]; then
        for f in "$T"/serve.*.log; do
            [ -f "$f" ] || continue
            echo "# the last lines of $(basename "$f"):"
            tail -n 25 "$f" | cut -c1-300 | sed 's/^/#   /'
        done
    fi
    for s in $_shms; do rm -f "/dev/shm/${s#/}"; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

plan() { echo "1..$1"; }
# ok and is return what they found (0 passed), so that `ok ... || diag ...`
# says more exactly when a check failed.
ok() { # ok COND-STATUS DESCRIPTION
    _n=$((_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $_n - $2"; return 0; fi
    echo "not ok $_n - $2"; _failed=1; return 1
}
is() { # is GOT EXPECTED DESCRIPTION
    _n=$((_n + 1))
    if [ "$1" = "$2" ]; then echo "ok $_n - $3"; return 0; fi
    echo "not ok $_n - $3"; echo "#   got:      '$1'"; echo "#   expected: '$2'"; _failed=1; return 1
}
skip() { _n=$((_n + 1)); echo "ok $_n # SKIP $1"; }
diag() { echo "# $*"; }
track_pid() { _pids="$_pids $1"; }
track_shm() { _shms="$_shms $1"; }

# field NAME LINE: the value of NAME=value in an analyze header line.
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# calls_of FUNCTION REPORT-FILE: the calls column of FUNCTION's row.
calls_of() { awk -v f="$1" '$1 ~ /^(>=)?[0-9]+$/ && $10 == f { print $1; exit }' "$2"; }

# start_serve OUTDIR [ARGS...]: start callsight serve on 127.0.0.1 with a free
# port; sets SERVE_PID, SERVE_PORT and SERVE_LOG.
start_serve() {
    local out=$1; shift
    SERVE_LOG=$T/serve.$RANDOM.log
    "$CS" serve --host 127.0.0.1 --port 0 --out "$out" "$@" > "$SERVE_LOG" 2>&1 &
    SERVE_PID=$!
    track_pid "$SERVE_PID"
    SERVE_PORT=$("$TESTS/../scripts/serve-port.sh" "$SERVE_LOG") && return 0
    diag "serve did not start: $(cat "$SERVE_LOG")"
    return 1
}

# A ring that holds a whole test run (the demo workload is 20 MB of
# records): tests about exactness end to end use it, since under ASan on two
# busy vCPUs the drain can fall behind a 16 MiB ring (counted drops: test
# 41's subject).  How fast the drain keeps up is bench's (S1-S3), not a test's.
RING_WHOLE_RUN=67108864

# TRACE_SHM_WAIT_US for the tests that assert exactness through the ring
# (dropped=0, exact counts): on a busy machine a writer holding the ring's
# lock can be preempted for tens of ms, and without a wait the others
# would drop (counted: the never-stall default, test 441's and 442's
# subject).  Two seconds is generous for that, and still bounded.
RING_WAIT_EXACT=2000000

# start_trace_stream BIN SHM [ERR]: start trace_stream BIN on SHM towards the
# running serve (stderr in ERR, default $T/client.err), tracked, and wait
# until the ring exists; sets CLIENT_PID.  TRACE_SHM_SIZE passes through
# from the caller.
start_trace_stream() {
    timeout 60 "$1" "$2" 127.0.0.1 "$SERVE_PORT" 2> "${3:-$T/client.err}" &
    CLIENT_PID=$!
    track_pid "$CLIENT_PID"
    wait_file "/dev/shm$2"
}

# start_stoppable_stream BIN SHM ERR: trace_stream BIN on SHM towards the
# running serve, stderr in ERR, tracked, not under timeout(1), so that SIGSTOP
# reaches trace_stream itself; returns once the ring is whole (it says it
# waits for a tracer: stopped before, it may not have written the header
# yet).  Sets CLIENT_PID.  TRACE_SHM_SIZE passes through from the caller.
start_stoppable_stream() {
    "$1" "$2" 127.0.0.1 "$SERVE_PORT" 2> "$3" &
    CLIENT_PID=$!
    track_pid "$CLIENT_PID"
    for _ in $(seq 500); do grep -q 'waiting for a tracer' "$3" && break; sleep 0.02; done
}

# phases_through_serve PROGRAM SHM [OPTION...]: the live-control tests' set-up
# through serve: serve in $T/srv, trace_stream --allow-control (and the
# OPTIONs) on the ring SHM, stderr in $T/srv.ts, and PROGRAM, a phases
# workload reading a line from $T/srv.in between phases (fd 3 is opened on
# it here, so the program starts; the caller's phases function reopens and
# closes it), its stdout in $T/srv.out.  Returns once phase 0 is done and
# serve has listed the connection; sets P (the program) and TS_PID.
phases_through_serve() {
    local prog=$1 shm=$2
    shift 2
    start_serve "$T/srv" || return 1
    rm -f "/dev/shm$shm"
    track_shm "$shm"
    stream_bg "$T/srv.ts" "$@" --allow-control "$shm" 127.0.0.1 "$SERVE_PORT" || return 1
    mkfifo "$T/srv.in"
    TRACE_SHM=$shm TRACE_ENABLE=1 "$prog" < "$T/srv.in" > "$T/srv.out" &
    P=$!
    track_pid $P
    exec 3> "$T/srv.in"
    wait_in "$T/srv.out" "phase 0 done" > /dev/null &&
        wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
}

# stream_bg ERR ARGS...: trace_stream with ARGS (options, shm, host, port)
# in the background, stderr in ERR, tracked; returns once it waits for a
# tracer (its ring is whole).  Sets TS_PID.  Variables set before the call
# (TRACE_SHM_SIZE=...) pass through.
stream_bg() {
    local err=$1; shift
    "$B/trace_stream" "$@" 2> "$err" &
    TS_PID=$!
    track_pid "$TS_PID"
    wait_in "$err" "waiting for a tracer"
}

# ringwriter_bg ARGS...: tests/tools/ringwriter with ARGS in the background,
# its output dropped, tracked.  Sets RW_PID.
ringwriter_bg() {
    "$TOOLBIN/ringwriter" "$@" > /dev/null &
    RW_PID=$!
    track_pid "$RW_PID"
}

# cont_if_stopped PID: SIGCONT, but only to a process that is stopped
# (state T).  One sent to a running process can race its exit and wake it
# from LeakSanitizer's ptrace stop, leaving the two waiting for each other
# for good, as the ASan pass once showed.
cont_if_stopped() {
    [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = T ] && kill -CONT "$1" 2>/dev/null
    return 0
}

# wait_stream_client PID: continue that trace_stream if stopped and wait
# for it, at most 60 s (then it is killed and the wait fails); its exit
# status.
wait_stream_client() {
    cont_if_stopped "$1"
    for _ in $(seq 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$1" 2>/dev/null; then
        diag "trace_stream still running after 60 s: killed"
        kill -KILL "$1"
        wait "$1"
        return 1
    fi
    wait "$1"
}

# wait_serve_closed N: wait (bounded: 60 s, for a large stream written
# under ASan on a busy machine) until serve has logged N closed
# connections, so stopping it cannot cut one that is still being written.
wait_serve_closed() {
    for _ in $(seq 3000); do
        [ "$(grep -Ec '^callsight serve: conn [0-9]+ closed' "$SERVE_LOG")" -ge "$1" ] && return 0
        sleep 0.02
    done
    return 1
}

# wait_in FILE REGEX: wait (bounded: 10 s) for a line matching REGEX in
# FILE; when none comes, say so and show the file.
wait_in() {
    for _ in $(seq 500); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
    diag "no line matching /$2/ in $1:"; sed 's/^/#   /' "$1" 2>/dev/null
    return 1
}

# stop_serve: SIGINT, then wait (bounded: 30 s, then SIGKILL) for it to
# exit: it writes what it has first, which on a busy machine takes a while.
stop_serve() {
    kill -INT "$SERVE_PID" 2>/dev/null
    for _ in $(seq 600); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID" 2>/dev/null
}

# restart_serve PORT DIR [ARGS...]: serve again on PORT (one a serve had,
# which trace_stream reconnects to) into DIR; sets SERVE_PID and SERVE_LOG
# and returns once it listens.
restart_serve() {
    local port=$1 out=$2; shift 2
    SERVE_LOG=$T/serve.$RANDOM.log
    "$CS" serve --host 127.0.0.1 --port "$port" --out "$out" "$@" > "$SERVE_LOG" 2>&1 &
    SERVE_PID=$!
    track_pid "$SERVE_PID"
    wait_in "$SERVE_LOG" "listening on" > /dev/null
}

# ring_used SHM: head - tail of the ring SHM, in bytes (trace_shm.h: the
# two little-endian u64 at offset 24).
ring_used() {
    perl -e 'open(my $f, "<", $ARGV[0]) or die; seek($f, 24, 0); read($f, my $b, 16);
             my ($h, $t) = unpack("Q< Q<", $b); print $h - $t' "/dev/shm$1"
}

# kill_serve: serve killed (SIGKILL: no last words, as in a crash) and reaped.
kill_serve() {
    kill -KILL "$SERVE_PID"
    wait "$SERVE_PID" 2> /dev/null
}

# build_traced OUT SRC: SRC compiled with -finstrument-functions -g and
# linked with the runtime, which is compiled once per test without
# instrumentation (and without an ASan build's sanitizers, which an
# uninstrumented cc line could not link).
build_traced() {
    [ -f "$T/trace.o" ] || cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" || return 1
    cc -O1 -g -finstrument-functions -o "$1" "$2" "$T/trace.o" -pthread
}

# kill_snapshot_victim VAR=VALUE...: tests/tools/snapshot_victim traced in
# summary mode (a snapshot every 50 ms) with these variables added (where
# its records go), killed with SIGKILL once its work is done and several
# snapshots have followed; its output in $T/kill.out.  Sets VICTIM_PID.
kill_snapshot_victim() {
    env "$@" TRACE_MODE=summary TRACE_SUMMARY_MS=50 TRACE_ENABLE=1 "$TOOLBIN/snapshot_victim" > "$T/kill.out" &
    VICTIM_PID=$!
    track_pid $VICTIM_PID
    for _ in $(seq 100); do grep -q done "$T/kill.out" 2>/dev/null && break; sleep 0.05; done
    sleep 0.4 # several snapshots after the work is done
    kill -KILL $VICTIM_PID
    wait $VICTIM_PID 2>/dev/null
}

# replay_corpus HARNESS: fuzz/corpus/HARNESS replayed through the harness
# built without libFuzzer (fuzz/fuzz.mk's replay_HARNESS): it survives every
# input, replays them all, and the corpus has at least 5.  Three checks.
replay_corpus() {
    local dir=$TESTS/../fuzz/corpus/$1 n out
    n=$(ls "$dir" | wc -l)
    out=$(timeout 120 "$B/fuzz/replay_$1" "$dir" 2> "$T/$1.err")
    ok $? "$1: the harness survives its corpus"
    is "$out" "replay: $n inputs" "$1: all $n inputs replayed"
    [ "$n" -ge 5 ]
    ok $? "$1: the corpus is not empty ($n inputs, at least 5)"
}

# need_tools NAME...: the helper programs the test drives, built by make
# (check-build) into $TOOLBIN with this pass's compiler and flags.
need_tools() {
    for _t in "$@"; do
        [ -e "$TOOLBIN/$_t" ] || { echo "Bail out! $TOOLBIN/$_t is not built (make check-build)"; exit 1; }
    done
}

# stream_through DIR SHM CMD...: CMD run traced (stdout dropped; further
# TRACE_* from the caller's environment) through a ring SHM (tracked) that
# trace_stream drains into a serve writing DIR; returns once trace_stream
# has ended, serve has closed the connection and has been stopped.
stream_through() {
    local dir=$1 shm=$2 client
    shift 2
    track_shm "$shm"
    start_serve "$dir" --quiet
    start_trace_stream "$B/trace_stream" "$shm"
    client=$CLIENT_PID
    TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$@" > /dev/null
    wait_stream_client "$client"
    wait_serve_closed 1
    stop_serve
}

# fields_are REPORT "NAME..." WANT WHAT: the values of those fields of
# REPORT's header line (shown as a diag), space-separated, are WANT.
fields_are() {
    local h got="" f
    h=$(head -n 1 "$1"); diag "$h"
    for f in $2; do got="$got $(field "$f" "$h")"; done
    is "${got# }" "$3" "$4"
}

# same_output WHAT GOT ERR < expected: the command exited 0 ($rc), said
# nothing on ERR, and GOT is exactly the expected text.
same_output() {
    cat >"$T/want"
    if [ "$rc" = 0 ] && [ ! -s "$3" ] && diff "$T/want" "$2" >"$T/diff"; then
        ok 0 "$1"
    else
        diag "rc=$rc"; sed 's/^/# /' "$3" "$T/diff"
        ok 1 "$1"
    fi
}

# report_rows REPORT: "calls name (file:line)" of every row of a text
# report, sorted.
report_rows() { awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1, $10, $11 }' "$1" | sort; }

# func_rows DIR EXE: "name file calls" for every row of DIR's report
# (file without folders or line), sorted.
func_rows() {
    "$CS" analyze "$1" --exe "$2" --top 0 |
        awk '$1 ~ /^[0-9]+$/ && NF >= 10 { f = $11; sub(/^\(/, "", f); sub(/:.*/, "", f); print $10, f, $1 }' | sort
}

# wait_size PATH BYTES: wait (bounded: 10 s) until PATH is BYTES long.
wait_size() {
    for _ in $(seq 500); do [ "$(stat -c %s "$1" 2>/dev/null)" = "$2" ] && return 0; sleep 0.02; done
    return 1
}

# wait_file PATH: wait (bounded) until PATH exists.
wait_file() {
    for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.02; done
    return 1
}

# pane_until TARGET REGEX: wait (bounded: 30 s) until the tmux pane TARGET,
# on the tmux server the caller's $TM names, shows REGEX; the last capture
# is in $T/pane, and shown when REGEX never came.
pane_until() {
    for _ in $(seq 150); do
        $TM capture-pane -p -t "$1" > "$T/pane" 2>/dev/null
        grep -Eq -- "$2" "$T/pane" && return 0
        sleep 0.2
    done
    diag "no /$2/ on the pane:"
    sed 's/^/#   /' "$T/pane"
    return 1
}
