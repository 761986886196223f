# lib.sh - shared helpers for callsight's end-to-end tests (bash, TAP).
#
# Source it first thing in a tests/*.t script.  It provides TAP output
# (plan/ok/is/skip), a private temp dir removed on exit, and cleanup of every
# process and shm segment a test registers, so no run leaves anything behind.

set -u
B=${CALLSIGHT_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
TESTS=$(cd "$(dirname "$0")" && pwd)
CS=$B/callsight
DIST=$B/dist # what users copy: the runtime and trace_stream as one file each, trace.h
T=$(mktemp -d "${TMPDIR:-/tmp}/callsight-test.XXXXXX")
_n=0
_failed=0
_pids=""
_shms=""

cleanup() {
    for p in $_pids; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
    for p in $_pids; do wait "$p" 2>/dev/null; done
    for s in $_shms; do rm -f "/dev/shm/${s#/}"; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

plan() { echo "1..$1"; }
ok() { # ok COND-STATUS DESCRIPTION
    _n=$((_n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $_n - $2"; else echo "not ok $_n - $2"; _failed=1; fi
}
is() { # is GOT EXPECTED DESCRIPTION
    _n=$((_n + 1))
    if [ "$1" = "$2" ]; then echo "ok $_n - $3"
    else echo "not ok $_n - $3"; echo "#   got:      '$1'"; echo "#   expected: '$2'"; _failed=1; fi
}
skip() { _n=$((_n + 1)); echo "ok $_n # SKIP $1"; }
diag() { echo "# $*"; }
track_pid() { _pids="$_pids $1"; }
track_shm() { _shms="$_shms $1"; }

# field NAME LINE: the value of NAME=value in an analyze header line.
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# calls_of FUNCTION REPORT-FILE: the calls column of FUNCTION's row.
calls_of() { awk -v f="$1" '$7 == f { print $1; exit }' "$2"; }

# start_serve OUTDIR [ARGS...]: start callsight serve on 127.0.0.1 with a free
# port; sets SERVE_PID, SERVE_PORT and SERVE_LOG.
start_serve() {
    local out=$1; shift
    SERVE_LOG=$T/serve.$RANDOM.log
    "$CS" serve --host 127.0.0.1 --port 0 --out "$out" "$@" > "$SERVE_LOG" 2>&1 &
    SERVE_PID=$!
    track_pid "$SERVE_PID"
    SERVE_PORT=""
    for _ in $(seq 200); do
        SERVE_PORT=$(sed -n '1s/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$SERVE_LOG")
        [ -n "$SERVE_PORT" ] && return 0
        sleep 0.05
    done
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
# would drop (counted: the never-stall default, test 41's and 42's
# subject).  Two seconds is generous for that, and still bounded.
RING_WAIT_EXACT=2000000

# start_trace_stream BIN SHM: start trace_stream BIN on SHM towards the running
# serve (stderr in $T/client.err), tracked, and wait until the ring exists;
# sets CLIENT_PID.  TRACE_SHM_SIZE passes through from the caller.
start_trace_stream() {
    timeout 60 "$1" "$2" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
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

# build_traced OUT SRC: SRC compiled with -finstrument-functions -g and
# linked with the runtime, which is compiled once per test without
# instrumentation (and without an ASan build's sanitizers, which an
# uninstrumented cc line could not link).
build_traced() {
    [ -f "$T/trace.o" ] || cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" || return 1
    cc -O1 -g -finstrument-functions -o "$1" "$2" "$T/trace.o" -pthread
}

# func_rows DIR EXE: "name file calls" for every row of DIR's report
# (file without folders or line), sorted.
func_rows() {
    "$CS" analyze "$1" --exe "$2" --top 0 |
        awk '$1 ~ /^[0-9]+$/ && NF >= 7 { f = $8; sub(/^\(/, "", f); sub(/:.*/, "", f); print $7, f, $1 }' | sort
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
