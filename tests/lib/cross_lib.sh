# cross_lib.sh - one cross-compiled device end to end, for tests/cross/*.t.
# Source it after lib.sh and workload_expect.sh, then:
#
#   cross_file_mode GROUP TRIPLE QEMU TICKS
#
# installs GROUP through scripts/deps.sh when something is missing (a visible
# SKIP when that fails), cross-builds the runtime (strict C11) and
# examples/workload statically with TRIPLE-gcc, runs it under qemu-QEMU-static
# in file mode, checks that every file is little-endian with the TICKS flag
# TICKS (1: the target's counter ran, 0: CLOCK_MONOTONIC), and that
# `callsight analyze --addr2line TRIPLE-addr2line` gives the exact counts
# with every name resolved; that each file opens with the binary's build-id
# (marker 26) and a rebuild of the workload is refused.  Plans its own tests.
CROSS_PARAMS="8 12 12 64 8"

cross_tools_ok() { # TRIPLE QEMU
    command -v "$1-gcc" && command -v "$1-addr2line" && command -v "qemu-$2-static"
} > /dev/null 2>&1

# check_report REPORT THREADS: a workload report against $T/expect: the
# header (every expected call's two events, THREADS threads, nothing
# unmatched, open or dropped), every function's exact count, and every row
# named with its workload.c line.  Three tests.
check_report() {
    local r=$1 threads=$2 h calls bad=0 f want
    h=$(head -n 1 "$r"); diag "$h"
    calls=$(awk '{s += $2} END {print s}' "$T/expect")
    is "$(field events "$h") $(field threads "$h") $(field unmatched_exits "$h") $(field unclosed_enters "$h") $(field dropped "$h")" \
        "$((2 * calls)) $threads 0 0 0" \
        "events=$((2 * calls)) threads=$threads unmatched_exits=0 unclosed_enters=0 dropped=0"
    while read -r f want; do
        [ "$(calls_of "$f" "$r")" = "$want" ] || { diag "$f: $(calls_of "$f" "$r") want $want"; bad=1; }
    done < "$T/expect"
    ok $bad "every function has its exact call count"
    is "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $11 ~ /^\(workload\.c:[0-9]+\)$/' "$r" | wc -l)" \
        "$(wc -l < "$T/expect")" "every function is named, with its workload.c line, and no other rows"
}

# u32/u64 at OFFSET of FILE, read little-endian whatever the host.
le32() { local b; b=($(od -An -tx1 -j "$2" -N 4 "$1")); echo $((16#${b[3]}${b[2]}${b[1]}${b[0]})); }
le64() { local b; b=($(od -An -tx1 -j "$2" -N 8 "$1")); echo $((16#${b[7]}${b[6]}${b[5]}${b[4]}${b[3]}${b[2]}${b[1]}${b[0]})); }

cross_headers() { # DIR FLAGS: every file: magic, LE version/size/header, these flags
    local f bad=0 want_flags=$2
    for f in "$1"/trace.*.bin; do
        [ "$(head -c 7 "$f")" = MLTRACE ] &&
            [ "$(le32 "$f" 8) $(le32 "$f" 12) $(le32 "$f" 16)" = "2 32 80" ] &&
            [ "$(le32 "$f" 20)" = "$want_flags" ] ||
            { diag "$f: $(od -An -tx1 -N 40 "$f" | tr -s ' \n' ' ')"; bad=1; }
        if [ $((want_flags & 1)) = 1 ] && [ "$(le64 "$f" 32)" -le 0 ]; then diag "$f: tick_hz 0"; bad=1; fi
    done
    return $bad
}

# cross_ready GROUP TRIPLE QEMU: install GROUP through scripts/deps.sh when
# its tools are missing; if that fails, plan one visibly skipped test and
# return 1.
cross_ready() {
    local group=$1 triple=$2 qemu=$3 root
    root=$(cd "$TESTS/.." && pwd)
    cross_tools_ok "$triple" "$qemu" && "$root/scripts/deps.sh" check "$group" > /dev/null 2>&1 && return 0
    "$root/scripts/deps.sh" install "$group" > "$T/deps.out" 2>&1
    cross_tools_ok "$triple" "$qemu" && "$root/scripts/deps.sh" check "$group" > /dev/null 2>&1 && return 0
    plan 1
    skip "$triple toolchain or qemu-$qemu-static missing and 'scripts/deps.sh install $group' failed: $(tail -n 1 "$T/deps.out" 2>/dev/null)"
    return 1
}

cross_file_mode() {
    local group=$1 triple=$2 qemu=$3 ticks=$4 ROOT bin=$T/workload.$2
    ROOT=$(cd "$TESTS/.." && pwd)
    cross_ready "$group" "$triple" "$qemu" || return 0
    plan 11
    expect_counts $CROSS_PARAMS > "$T/expect"
    "$triple-gcc" -std=c11 -Wall -Wextra -pedantic -Werror -O2 -c "$DIST/trace.c" \
        -o "$T/trace.o" 2> "$T/cc1.err"
    ok $? "$triple-gcc builds the runtime, strict C11, warning-free"
    sed 's/^/# /' "$T/cc1.err"
    "$triple-gcc" -finstrument-functions -g -O2 -I"$ROOT/runtime" "$ROOT/examples/workload.c" \
        "$T/trace.o" -pthread -static -o "$bin" 2> "$T/cc2.err"
    ok $? "and the instrumented workload, statically linked"
    TRACE_ENABLE=1 TRACE_DIR="$T/files" timeout 120 "qemu-$qemu-static" "$bin" $CROSS_PARAMS \
        > "$T/run.out" 2> "$T/run.err"
    ok $? "it runs traced under qemu-$qemu-static (file mode)"
    sed 's/^/# /' "$T/run.err"
    is "$(ls "$T/files" | wc -l)" 13 "one trace file per thread (main + 12 workers)"
    cross_headers "$T/files" "$((ticks | 8))"
    ok $? "every file is little-endian (version 2, 32-byte events, 80-byte header), flags=$((ticks | 8)) (EXIT_RECORD: the runtime records its exit$( [ "$ticks" = 1 ] && echo '; TICKS: the counter clock ran, tick_hz > 0'))"
    "$CS" analyze "$T/files" --exe "$bin" --addr2line "$triple-addr2line" --top 0 \
        > "$T/a.txt" 2> "$T/a.err"
    ok $? "callsight analyze --exe BIN --addr2line $triple-addr2line exits 0"
    sed 's/^/# /' "$T/a.err"
    check_report "$T/a.txt" 13
    local id head bad=0
    id=$(readelf -n "$bin" | sed -n 's/.*Build ID: *//p')
    [ -n "$id" ] || bad=1
    for f in "$T"/files/trace.*.bin; do
        head=$(od -An -tx1 -j 80 -N 32 "$f" | tr -d ' \n')
        [ "$(le64 "$f" 88) ${head:56:2} ${head:32:16}${head:0:16}" = "26 02 ${id:0:32}" ] ||
            { diag "$f: $head, id $id"; bad=1; }
    done
    ok $bad "every file opens with the binary's build-id, packed little-endian"
    "$triple-gcc" -finstrument-functions -g -O2 -I"$ROOT/runtime" -DMAX_SORT=2048 \
        "$ROOT/examples/workload.c" "$T/trace.o" -pthread -static -o "$T/rebuilt" 2> /dev/null
    "$CS" analyze "$T/files" --exe "$T/rebuilt" --addr2line "$triple-addr2line" > /dev/null 2> "$T/r.err"
    is "$? $(grep -c "is not the traced binary: its build-id [0-9a-f]* differs from pid [0-9]*'s ${id:0:32};" "$T/r.err")" \
        "1 1" "a rebuild (-DMAX_SORT=2048) is refused: its build-id differs"
}

#   cross_stream_mode GROUP TRIPLE QEMU
#
# Streaming from the same device: the runtime, the workload and trace_stream
# built with -DTRACE_STREAM_NO_LIBZSTD (no libzstd for the target), all
# static, both run under qemu-QEMU-static sharing the ring, into the host's
# `callsight serve` on 127.0.0.1.  The client sends little-endian whatever
# the device (serve must not log a big-endian stream); the stream file is
# little-endian; analyze with TRIPLE-addr2line gives the exact counts with
# every name resolved.  Small parameters: qemu is slow.  Plans its own tests.
CROSS_STREAM_PARAMS="4 5 10 32 4"
cross_stream_mode() {
    local group=$1 triple=$2 qemu=$3 ROOT bin=$T/workload.$2 ts=$T/trace_stream.$2
    ROOT=$(cd "$TESTS/.." && pwd)
    cross_ready "$group" "$triple" "$qemu" || return 0
    plan 12
    local workers=${CROSS_STREAM_PARAMS#* }
    workers=${workers%% *}
    expect_counts $CROSS_STREAM_PARAMS > "$T/expect"
    "$triple-gcc" -O2 -c "$DIST/trace.c" -o "$T/trace.o" &&
        "$triple-gcc" -finstrument-functions -g -O2 -I"$ROOT/runtime" "$ROOT/examples/workload.c" \
            "$T/trace.o" -pthread -static -o "$bin" 2> "$T/cc1.err"
    ok $? "the runtime and the instrumented workload build for $triple, statically linked"
    sed 's/^/# /' "$T/cc1.err"
    # getaddrinfo in a static binary draws a linker warning; numeric hosts need no NSS.
    "$triple-gcc" -std=c11 -Wall -Wextra -pedantic -Werror -O2 -DTRACE_STREAM_NO_LIBZSTD \
        -o "$ts" "$DIST/trace_stream.c" -static 2> "$T/cc2.err"
    ok $? "trace_stream builds for $triple with -DTRACE_STREAM_NO_LIBZSTD (no -lzstd), static"
    grep -v 'getaddrinfo\|in function' "$T/cc2.err" | sed 's/^/# /'

    local shm=/cs-test-xstream-$qemu-$$ client
    track_shm "$shm"
    start_serve "$T/stream" --quiet
    ok $? "serve listens on a free port"
    timeout 120 "qemu-$qemu-static" "$ts" "$shm" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
    client=$!
    track_pid $client
    wait_file "/dev/shm$shm"
    TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "qemu-$qemu-static" "$bin" $CROSS_STREAM_PARAMS \
        > /dev/null 2> "$T/run.err"
    ok $? "the $triple workload runs traced with TRACE_SHM under qemu-$qemu-static"
    sed 's/^/# /' "$T/run.err"
    wait $client
    ok $? "the $triple trace_stream exits 0 once the ring drained"
    diag "$(tail -n 1 "$T/client.err")"
    wait_serve_closed 1
    stop_serve
    grep -Eq '^callsight serve: conn 1 from 127\.0\.0\.1:[0-9]+$' "$SERVE_LOG" &&
        grep -Eq '^callsight serve: conn 1 closed \(' "$SERVE_LOG" &&
        ! grep -qi 'big-endian\|error\|bad\|invalid' "$SERVE_LOG"
    ok $? "serve got a little-endian stream (no 'big-endian stream') and closed it normally"
    grep 'conn 1' "$SERVE_LOG" | sed 's/^/# /'

    local files=("$T"/stream/trace.stream.*.bin)
    is "${#files[@]} $(ls "$T/stream" | wc -l)" "1 1" "one stream file"
    cross_headers "$T/stream" 0
    ok $? "the stream file is little-endian (version 2, 32-byte events, 80-byte header), flags=0"
    "$CS" analyze "$T/stream" --exe "$bin" --addr2line "$triple-addr2line" --top 0 \
        > "$T/s.txt" 2> "$T/s.err"
    ok $? "callsight analyze --exe BIN --addr2line $triple-addr2line reads the stream"
    sed 's/^/# /' "$T/s.err"
    check_report "$T/s.txt" $((workers + 1))
}
