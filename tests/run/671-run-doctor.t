#!/usr/bin/env bash
# 671-run-doctor.t - `callsight run` and `callsight doctor` as a new user runs
# them.  run: the demo workload's report is the manual steps' (exact counts)
# in file mode and with --stream; earlier traces are removed, saying so; the
# program's output and exit status are its own; a missing program, one that
# crashes, --timeout and Ctrl-C give their status and the partial report;
# nothing is left behind (no process, shm segment or temp file).  doctor:
# all [ok] for the workload, and a [FAIL] with exit 1 for a missing binary,
# an addr2line of another architecture, a /dev/shm too small for the ring
# (a small tmpfs in a mount namespace), a trace dir that is not writable (a
# read-only bind mount) and a trace.config that selects nothing.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 37

W=$B/examples/workload
R=$B/examples/resident
export TMPDIR=$T/tmp # run must make no temporary file: this stays empty
mkdir -p "$TMPDIR"
cd "$T" || exit 1
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$1" | sort; }
expect_counts 16 25 12 64 8 | sort > "$T/expect"
# leftovers: processes and shm segments of a run whose trace dir is $1.
# (the rings named in this test's stderr files only: other tests' runs may
# be going on beside it)
leftovers() {
    local r
    { pgrep -f -- "--out $1"
      for r in $(sed -n 's/.*shm ring \(\/callsight-run-[0-9a-f-]*\).*/\1/p' "$T"/*.err | sort -u); do
          pgrep -f "trace_stream $r"; ls /dev/shm | grep -x "${r#/}"
      done; } 2>/dev/null | tr '\n' ' '
}

# --- run, file mode, against the manual steps ---
"$CS" run --dir "$T/r1" --top 0 -- "$W" > "$T/run1.out" 2> "$T/run1.err"
ok $? "run: exits 0 on the workload"
TRACE_ENABLE=1 TRACE_DIR="$T/m1" "$W" > /dev/null && "$CS" analyze "$T/m1" --exe "$W" --top 0 > "$T/man1.out"
is "$(counts "$T/run1.out")" "$(counts "$T/man1.out")" "run: the same functions and counts as the manual steps"
is "$(counts "$T/run1.out")" "$(sort "$T/expect")" "run: and they are the workload's exact counts"
grep -q "^workload: iters=16" "$T/run1.out"
ok $? "run: the program's own output is on stdout, as it is"
grep -qx "callsight run: $W exited with status 0 after [0-9.]* s" "$T/run1.err"
ok $? "run: says how the program ended"
"$CS" run --dir "$T/r1" --top 3 -- "$W" > /dev/null 2> "$T/run1b.err"
grep -qx "callsight run: removed 26 earlier trace files from $T/r1/" "$T/run1b.err"
ok $? "run again: the 26 earlier trace files are removed, saying so"
is "$(ls "$T/r1" | wc -l | tr -d ' ')" "26" "and the directory holds this run's files only"

# --- run --stream: the device pipeline on 127.0.0.1 ---
# The ring waits for room (bounded) so that a busy machine drops nothing:
# exact counts are this check's subject, the never-stall default test 441's.
TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/r2" --top 0 -- "$W" > "$T/run2.out" 2> "$T/run2.err"
ok $? "run --stream: exits 0"
is "$(counts "$T/run2.out")" "$(counts "$T/man1.out")" "run --stream: the same counts as the manual file-mode steps"
# (the ring's bounded wait may have been used on a busy machine: serve says so)
grep -Eq "^callsight serve: conn 1 closed \(127.0.0.1:[0-9]+\): [0-9]+ events, .* dropped 0(, tracers waited [0-9.]+ ms for the ring in [0-9]+ flushes)?$" "$T/run2.err"
ok $? "run --stream: serve's lines are shown, nothing dropped"
ls "$T/r2" | grep -q '^trace\.stream\.[0-9]*\.0\.bin$'
ok $? "run --stream: serve's files are in --dir"
is "$(leftovers "$T/r2")" "" "run --stream: no serve, trace_stream or shm segment left"

# --- failures: missing, crash, timeout, Ctrl-C ---
"$CS" run --dir "$T/r3" -- ./no-such-program > /dev/null 2> "$T/missing.err"
is "$? $(cat "$T/missing.err")" "127 callsight run: ./no-such-program: No such file or directory" \
    "run: a missing program: 127 and one line"
"$CS" run --dir "$T/r3" -- no-such-program-in-path > /dev/null 2> "$T/missing2.err"
is "$? $(cat "$T/missing2.err")" "127 callsight run: no-such-program-in-path: not found in PATH" \
    "run: one not in PATH: 127 and one line"

cat > "$T/crash.c" << 'EOF'
#include <signal.h>
#include <stdio.h>
static volatile int sink;
static __attribute__((noinline)) void work(int i) { sink += i; }
int main(void)
{
    for (int i = 0; i < 20000; i++)
        work(i);
    printf("crash: about to fault\n");
    fflush(stdout);
    raise(SIGSEGV);
    return 0;
}
EOF
build_traced "$T/crash" "$T/crash.c"
"$CS" run --dir "$T/r4" --top 0 -- "$T/crash" > "$T/crash.out" 2> "$T/crash.err"
is "$?" "139" "run: a program that crashes: its status, 128 + SIGSEGV"
grep -q "callsight run: $T/crash was killed by signal 11 (Segmentation fault) after [0-9.]* s; the report covers what was traced" "$T/crash.err"
ok $? "run: says which signal"
work=$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 == "work" { print $1 }' "$T/crash.out")
[ -n "$work" ] && [ "$work" -gt 0 ] && [ "$work" -le 20000 ]
ok $? "run: the partial report: work's calls flushed before the fault ($work of 20000)"

# resident waits for a line on stdin: a FIFO that we hold open, never written.
# The partial report below is what full batches flushed (511 mix): no
# TRACE_FLUSH_MS, so a preemption longer than its period mid-work cannot
# move that line.
mkfifo "$T/hold"
exec 7<> "$T/hold"
TRACE_FLUSH_MS=0 "$CS" run --dir "$T/r5" --timeout 1 --top 0 -- "$R" < "$T/hold" > "$T/to.out" 2> "$T/to.err"
is "$?" "143" "run --timeout 1: SIGTERM ends the program, and its status is returned"
grep -qx "callsight run: --timeout 1 s reached: SIGTERM to $R (pid [0-9]*)" "$T/to.err"
ok $? "run --timeout: says so"
is "$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 == "mix" { print $1 }' "$T/to.out")" "511" "run --timeout: the partial report, what the program had flushed"

# Ctrl-C: the terminal signals the whole foreground process group.
set -m
"$CS" run --stream --dir "$T/r6" --top 0 -- "$R" < "$T/hold" > "$T/int.out" 2> "$T/int.err" &
job=$!
set +m
for _ in $(seq 200); do grep -q "tracer attached" "$T/int.err" 2>/dev/null && break; sleep 0.05; done
sleep 0.3
kill -INT -- "-$job" 2>/dev/null
wait "$job"
is "$?" "130" "run --stream, Ctrl-C: 128 + SIGINT"
grep -q "was killed by signal 2 (Interrupt)" "$T/int.err"
ok $? "run --stream, Ctrl-C: the program stopped as without run"
sent=$(sed -n 's/^trace_stream: forwarded \([0-9]*\) events.*/\1/p' "$T/int.err")
got=$(sed -n 's/^callsight serve: conn 1 closed ([^)]*): \([0-9]*\) events.*/\1/p' "$T/int.err")
[ -n "$sent" ] && [ "$sent" = "$got" ]
ok $? "run --stream, Ctrl-C: trace_stream drained the ring to serve before both stopped ($sent sent, $got written)"
"$CS" analyze "$T/r6" --exe "$R" --top 0 > "$T/int-man.out" 2> /dev/null
is "$(counts "$T/int.out")" "$(counts "$T/int-man.out")" "run --stream, Ctrl-C: the partial report is analyze's of what serve wrote"
is "$(leftovers "$T/r6")" "" "run --stream, Ctrl-C: no serve, trace_stream or shm segment left"
is "$(ls -A "$TMPDIR" | wc -l | tr -d ' ')" "0" "run: no temporary file left, in any of the runs"
is "$(pgrep -f "^$R" | tr '\n' ' ')" "" "run: no program left running after --timeout and Ctrl-C"

# --- doctor ---
"$CS" doctor --exe "$W" --trace-dir "$T/dtr" > "$T/doc.out" 2>&1
ok $? "doctor: exit 0 for the workload"
is "$(grep -c '^\[FAIL\]' "$T/doc.out") $(grep -c '^\[ok\]   \(binary\|symbols\)' "$T/doc.out")" "0 3" \
    "doctor: the binary's ELF, build-id, runtime, symbols and line info [ok]"
"$CS" doctor --exe "$T/nope" > "$T/doc2.out" 2>&1
is "$? $(grep '^\[FAIL\]' "$T/doc2.out")" "1 [FAIL] binary: $T/nope: No such file or directory" "doctor: a missing binary"

command -v arm-linux-gnueabihf-addr2line > /dev/null || "$TESTS/../scripts/deps.sh" install cross-armhf > "$T/deps.out" 2>&1
"$CS" doctor --exe "$W" --addr2line arm-linux-gnueabihf-addr2line > "$T/doc3.out" 2>&1
is "$? $(grep -c '^\[FAIL\] symbols: arm-linux-gnueabihf-addr2line and arm-linux-gnueabihf-nm cannot read .*file format not recognized' "$T/doc3.out")" \
    "1 1" "doctor: an addr2line of another architecture (32-bit ARM's, on this machine's binary) is a FAIL saying so"

TRACE_SHM_SIZE=1000000000000000 "$CS" doctor > "$T/doc4b.out" 2>&1
is "$? $(grep -c '^\[FAIL\] shm: /dev/shm has [0-9]* KiB free and the ring needs 976562500000 KiB (TRACE_SHM_SIZE)' "$T/doc4b.out")" "1 1" \
    "doctor: a ring (TRACE_SHM_SIZE) larger than /dev/shm's free space"
if unshare -m true 2> /dev/null; then
    unshare -m sh -c "mount -t tmpfs -o size=1m tmpfs /dev/shm && '$CS' doctor" > "$T/doc4.out" 2>&1
    is "$? $(grep -c '^\[FAIL\] shm: /dev/shm has 1024 KiB free and the ring needs 16384 KiB' "$T/doc4.out")" "1 1" \
        "doctor: a /dev/shm too small for the default ring (1 MiB, as a container might give)"
    mkdir -p "$T/ro"
    unshare -m sh -c "mount --bind '$T/ro' '$T/ro' && mount -o remount,ro,bind '$T/ro' && '$CS' doctor --trace-dir '$T/ro'" > "$T/doc5.out" 2>&1
    is "$? $(grep -c "^\[FAIL\] trace dir: $T/ro is not writable: Read-only file system" "$T/doc5.out")" "1 1" \
        "doctor: a trace dir that is not writable"
    unshare -m sh -c "mount --bind '$T/ro' '$T/ro' && mount -o remount,ro,bind '$T/ro' && '$CS' run --dir '$T/ro' -- '$W'" > /dev/null 2> "$T/run-ro.err"
    is "$? $(cat "$T/run-ro.err")" "1 callsight run: $T/ro: the trace directory is not writable: Read-only file system" \
        "run: a trace dir that is not writable: one line, before the program runs"
else
    ok 1 "unshare -m is not permitted here: the small /dev/shm and the read-only trace dir cannot be made"
    ok 1 "unshare -m is not permitted here"
    ok 1 "unshare -m is not permitted here"
fi

mkdir -p "$T/proj" && printf 'int main(void) { return 0; }\n' > "$T/proj/main.c"
printf 'include nothing/\n' > "$T/proj/trace.config"
"$CS" doctor "$T/proj" > "$T/doc6.out" 2>&1
is "$? $(grep '^\[FAIL\] trace.config' "$T/doc6.out")" \
    "1 [FAIL] trace.config: selects none of the 1 sources in $T/proj: nothing would be traced (callsight scan says why)" \
    "doctor PROJECT: a trace.config that selects nothing"
"$CS" doctor --exe "$W" --addr2line no-such-addr2line > "$T/doc7.out" 2>&1
is "$? $(grep -c '^\[ok\]   binary: .* is ELF with a build-id' "$T/doc7.out") $(grep -c '^\[note\] binary: the runtime and symbol checks need that tool, and are skipped' "$T/doc7.out")" \
    "1 1 1" "doctor: no such addr2line: a FAIL, the checks that need no tool still made, the rest said to be skipped"
exec 7>&-
exit $_failed
