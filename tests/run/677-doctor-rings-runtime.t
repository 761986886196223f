#!/usr/bin/env bash
# 677-doctor-rings-runtime.t - two things doctor said nothing of (issue 38).
# A runtime compiled with -finstrument-functions (trace.c from before every
# function of it was marked no_instrument_function, in the one cc line with
# the program: here today's trace.c with that mark taken out) crashes at
# the first hook, and doctor said "runtime linked in"; now its hooks are
# found calling the hooks (objdump), a [FAIL] with the fix, at -O0 and -O2,
# and the runtime as shipped, built the same way, is [ok].  A ring a
# program made for itself (TRACE_SHM with no trace_stream) stays in
# /dev/shm after it ends; doctor lists such stale rings with their rm line
# ([FAIL] when it is TRACE_SHM's), and not a ring a tracer or a waiting
# trace_stream has open, nor a file that only looks like one.
source "$(dirname "$0")/../lib/lib.sh"
plan 12

cp "$DIST/trace.c" "$DIST/trace.h" "$T/"
sed 's/^#define TR_NOINSTR __attribute__((no_instrument_function))$/#define TR_NOINSTR/' "$T/trace.c" > "$T/old_trace.c"
is "$(grep -c '^#define TR_NOINSTR$' "$T/old_trace.c")" 1 "an old-style runtime: its functions carry hooks"
for o in 0 2; do
    cc -O$o -g -finstrument-functions -I"$T" -o "$T/bad$o" "$TESTS/../examples/workload.c" "$T/old_trace.c" -pthread
    cc -O$o -g -finstrument-functions -I"$T" -o "$T/good$o" "$TESTS/../examples/workload.c" "$T/trace.c" -pthread
    "$CS" doctor --exe "$T/bad$o" --trace-dir "$T/dtr" > "$T/bad$o.out" 2>&1
    rc=$?
    line=$(grep '^\[FAIL\] binary:' "$T/bad$o.out")
    diag "$line"
    is "$rc $(echo "$line" | grep -c "^\[FAIL\] binary: callsight's runtime in $T/bad$o was compiled with -finstrument-functions: its hooks call the hooks again (through [a-z_]*\( and others\)\?), so the program crashes once TRACE_ENABLE=1; compile trace.c without it (cc -c trace.c -o trace.o, as \`make instrument\` does), or take this callsight's trace.c (callsight init), every function of which is marked no_instrument_function$")" \
        "1 1" "-O$o: an instrumented runtime is a FAIL with the fix"
    "$CS" doctor --exe "$T/good$o" --trace-dir "$T/dtr" > "$T/good$o.out" 2>&1
    is "$? $(grep -c "^\[ok\]   binary: callsight's runtime is linked in, its own functions without hooks$" "$T/good$o.out")" "0 1" \
        "-O$o: the runtime as shipped, in the same one cc line: ok"
done
strip -o "$T/stripped" "$T/good2"
"$CS" doctor --exe "$T/stripped" --trace-dir "$T/dtr" > "$T/stripped.out" 2>&1
is "$? $(grep -c '^\[FAIL\] binary: ' "$T/stripped.out") $(grep -c "^\[FAIL\] binary: $T/stripped is stripped (no symbol table): doctor cannot tell whether the callsight runtime is linked in" "$T/stripped.out")" "1 1 1" \
    "a stripped binary: one FAIL that says it is stripped, not that it lacks the runtime"

# --- stale rings ---
shm=callsight-t677-$$
track_shm /$shm-stale
TRACE_ENABLE=1 TRACE_SHM=/$shm-stale TRACE_SHM_SIZE=1048576 "$B/examples/forker" > /dev/null 2> "$T/made.err"
is "$(grep -c 'so the program made it' "$T/made.err") $([ -f /dev/shm/$shm-stale ] && echo left)" "1 left" \
    "a program that made its own ring leaves it in /dev/shm"
"$CS" doctor --trace-dir "$T/dtr" > "$T/d1.out" 2>&1
rc=$?
line=$(grep "/dev/shm/$shm-stale" "$T/d1.out")
diag "$line"
is "$rc $(echo "$line" | grep -c "^\[note\] shm: /dev/shm/$shm-stale is a stale callsight ring (1028 KiB, [0-9]* bytes of events never read, last written [0-9-]* [0-9:]*): no tracer or trace_stream has it open any more; remove it: rm /dev/shm/$shm-stale$")" \
    "0 1" "doctor names the stale ring with its rm line (a note)"
TRACE_SHM=/$shm-stale "$CS" doctor --trace-dir "$T/dtr" > "$T/d2.out" 2>&1
is "$? $(grep -c "^\[FAIL\] shm: /dev/shm/$shm-stale is a stale .*, and it is TRACE_SHM's: a program started now would write it for no reader; remove it: rm /dev/shm/$shm-stale$" "$T/d2.out")" \
    "1 1" "the stale ring TRACE_SHM names: a FAIL"
[ -f /dev/shm/$shm-stale ]
ok $? "doctor removed nothing"

# a ring a tracer holds while it runs, and one a trace_stream waits on
start_serve "$T/srv" # before the FIFO below: it must not hold its write end
track_shm /$shm-live
mkfifo "$T/in"
TRACE_ENABLE=1 TRACE_SHM=/$shm-live TRACE_SHM_SIZE=1048576 "$B/examples/resident" < "$T/in" > "$T/res.out" 2>&1 &
res=$!
track_pid $res
exec 7> "$T/in" # resident stays until this closes
for _ in $(seq 500); do grep -q 'resident: ready' "$T/res.out" && break; sleep 0.02; done
track_shm /$shm-wait
"$B/trace_stream" /$shm-wait 127.0.0.1 "$SERVE_PORT" 2> "$T/ts.err" &
ts=$!
track_pid $ts
for _ in $(seq 500); do grep -q 'waiting for a tracer' "$T/ts.err" && break; sleep 0.02; done
# a file that only looks like a ring: another magic
printf 'NOTSHM\0\0%088d' 0 > /dev/shm/$shm-fake
track_shm /$shm-fake
"$CS" doctor --trace-dir "$T/dtr" > "$T/d3.out" 2>&1
is "$(grep -c "/dev/shm/$shm-stale is a stale" "$T/d3.out") $(grep -c "/dev/shm/$shm-\(live\|wait\|fake\)" "$T/d3.out") $(ls /dev/shm | grep -c "^$shm-\(live\|wait\|fake\)$") $(grep -c 'waiting for a tracer' "$T/ts.err") $(grep -c 'resident: ready' "$T/res.out")" "1 0 3 1 1" \
    "a ring a live tracer holds, one a trace_stream has open, and a file of another magic: not stale"
diag "$(grep 'shm:' "$T/d3.out")"
exec 7>&-
kill $ts 2>/dev/null
wait $res $ts 2>/dev/null
stop_serve
rm -f /dev/shm/$shm-stale /dev/shm/$shm-live /dev/shm/$shm-wait /dev/shm/$shm-fake
"$CS" doctor --help | grep -q 'stale'
ok $? "--help says what doctor checks in /dev/shm"
exit $_failed
