#!/usr/bin/env bash
# Streaming from a cross-compiled aarch64 device, end to end on 127.0.0.1:
# first the way a user gets there: `callsight init --stream` and the generated
# Make wiring with CC=aarch64-linux-gnu-gcc; then
# the runtime, the workload and trace_stream (with Debian's multiarch
# libzstd-dev:arm64, linked statically) built by aarch64-linux-gnu-gcc, both
# run under qemu-aarch64-static sharing the ring, into the host's
# `callsight serve`; analyze with the target's addr2line: exact counts,
# every name resolved, the cntvct_el0 clock path (TICKS) carried through.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
source "$TESTS/lib/init_project.sh"

ROOT=$(cd "$TESTS/.." && pwd)
GROUP=stream-aarch64
if ! "$ROOT/scripts/deps.sh" check $GROUP > /dev/null 2>&1; then
    "$ROOT/scripts/deps.sh" install $GROUP > "$T/deps.out" 2>&1
fi
if ! "$ROOT/scripts/deps.sh" check $GROUP > /dev/null 2>&1; then
    plan 1
    skip "aarch64 toolchain, qemu or libzstd-dev:arm64 missing and 'scripts/deps.sh install $GROUP' failed: $(tail -n 1 "$T/deps.out" 2>/dev/null)"
    exit 0
fi
plan 14

CC=aarch64-linux-gnu-gcc
QEMU=qemu-aarch64-static
expect_counts $CROSS_PARAMS > "$T/expect"
$CC -O2 -c "$DIST/trace.c" -o "$T/trace.o" &&
    $CC -finstrument-functions -g -O2 -I"$ROOT/runtime" "$ROOT/examples/workload.c" "$T/trace.o" \
        -pthread -static -o "$T/workload.arm64" 2> "$T/cc1.err"
ok $? "the runtime and the instrumented workload build for aarch64"
# getaddrinfo in a static binary draws a linker warning; numeric hosts need no NSS.
$CC -O2 -o "$T/trace_stream.arm64" "$DIST/trace_stream.c" -lzstd -static \
    2> "$T/cc2.err"
ok $? "trace_stream builds for aarch64 with the target's libzstd"
grep -v 'getaddrinfo\|in function' "$T/cc2.err" | sed 's/^/# /'

SHM=/cs-test-xstream-$$
track_shm "$SHM"
start_serve "$T/stream" --quiet
ok $? "serve listens on a free port"
timeout 120 $QEMU "$T/trace_stream.arm64" "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 $QEMU "$T/workload.arm64" $CROSS_PARAMS > /dev/null
ok $? "the aarch64 workload runs traced with TRACE_SHM under qemu"
wait $client
ok $? "the aarch64 trace_stream exits 0 once the ring drained"
diag "$(tail -n 1 "$T/client.err")"
wait_serve_closed 1
stop_serve

f=$(ls "$T"/stream/trace.stream.*.bin 2> /dev/null | head -n 1)
[ -n "$f" ] && [ "$(le32 "$f" 20)" = 1 ] && [ "$(le64 "$f" 32)" -gt 0 ]
ok $? "the stream file carries the TICKS flag and tick_hz: the cntvct_el0 path ran"
"$CS" analyze "$T/stream" --exe "$T/workload.arm64" --addr2line aarch64-linux-gnu-addr2line \
    --top 0 > "$T/s.txt" 2> "$T/s.err"
ok $? "analyze --addr2line aarch64-linux-gnu-addr2line reads the stream"
check_report "$T/s.txt" 13


# The user's path: init --stream, paste the Make lines, cross-build with the
# generated wiring, stream a run of it through the wiring's trace_stream.
P=$T/proj
new_project "$P"
"$CS" init --stream --build make "$P" > "$T/init.out" 2>&1
pasted_lines "$T/init.out" Make | sed 's/^CALLSIGHT_PROGRAMS := .*/CALLSIGHT_PROGRAMS := app/; s/^[^ ]*_SRCS/app_SRCS/' >> "$P/Makefile"
make -C "$P" instr CC=$CC LDFLAGS=-static > "$T/make.out" 2>&1 &&
    od -An -tx1 -j 18 -N 2 "$P/app.instr" | grep -q 'b7 00' &&
    od -An -tx1 -j 18 -N 2 "$P/callsight/trace_stream" | grep -q 'b7 00'
ok $? "make instr CC=$CC LDFLAGS=-static builds app.instr and callsight/trace_stream for aarch64"
grep 'error:' "$T/make.out" | sed 's/^/# /'
SHM2=/cs-test-xstream2-$$
track_shm "$SHM2"
start_serve "$T/stream2" --quiet
timeout 120 $QEMU "$P/callsight/trace_stream" --quiet "$SHM2" 127.0.0.1 "$SERVE_PORT" 2> "$T/client2.err" &
client=$!
track_pid $client
wait_file "/dev/shm$SHM2"
(cd "$P" && TRACE_ENABLE=1 TRACE_SHM=$SHM2 TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 $QEMU ./app.instr > /dev/null)
ok $? "app.instr runs traced under qemu, streaming"
wait $client
ok $? "the wiring's trace_stream exits 0"
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/stream2" --exe "$P/app.instr" --addr2line aarch64-linux-gnu-addr2line --top 0 \
    > "$T/p.txt" 2>&1
check_counts "$T/p.txt" "init'd project streamed from aarch64"
exit $_failed
