#!/usr/bin/env bash
# 675-run-stream-options.t - `callsight run` passes the device's settings
# through, so a new user needs no second terminal: --summary (TRACE_MODE=
# summary) gives the workload's exact counts in file mode and through the
# pipeline; --stream-opt hands trace_stream its own options (--summary-
# threads keeps the 26 threads apart; --level=1 split into two arguments);
# --flight-recorder with --trigger NAME>LIMIT sends the slow call with its
# stack, --max-triggers reaches trace_stream, --triggered-only is analyze's
# --trigger; bad values are usage errors (exit 2, one line) and a value
# trace_stream refuses is its own line and exit 1; nothing is left behind.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 20

need_tools slowcall
W=$B/examples/workload
P=$TOOLBIN/slowcall
cd "$T" || exit 1
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$1" | sort; }
expect_counts 16 25 12 64 8 | sort > "$T/expect"
# leftovers: this test's serves, and the trace_streams and segments of the
# rings its runs named (other tests' runs may be going on beside it).
leftovers() {
    local r
    { pgrep -f -- "--out $T/"
      for r in $(sed -n 's/.*shm ring \(\/callsight-run-[0-9a-f-]*\).*/\1/p' "$T"/*.err | sort -u); do
          pgrep -f "trace_stream .*$r"; ls /dev/shm | grep -x "${r#/}"
      done; } 2>/dev/null | tr '\n' ' '
}
export TRACE_SHM_WAIT_US=$RING_WAIT_EXACT # exact counts through the ring (see test 671)

# --- --summary, file mode and stream mode ---
"$CS" run --summary --dir "$T/s1" --top 0 -- "$W" > "$T/s1.out" 2> "$T/s1.err"
ok $? "run --summary: exits 0"
is "$(counts "$T/s1.out")" "$(cat "$T/expect")" "run --summary: the workload's exact counts from summaries"
grep -qx "callsight run: tracing $W (file mode; summaries (TRACE_MODE=summary))" "$T/s1.err" &&
    grep -q "^note: summary mode: 26 snapshots from 26 threads" "$T/s1.out"
ok $? "run --summary: says it, and the report is summary mode's (26 threads' snapshots)"
timeout 120 "$CS" run --summary --stream --dir "$T/s2" --top 0 -- "$W" > "$T/s2.out" 2> "$T/s2.err"
ok $? "run --summary --stream: exits 0"
is "$(counts "$T/s2.out")" "$(cat "$T/expect")" "run --summary --stream: the same exact counts through trace_stream"
grep -q "^note: summary mode: 1 of those are a process's threads merged on the device" "$T/s2.out"
ok $? "run --summary --stream: trace_stream merged the threads (its default)"

# --- --stream-opt: trace_stream's own options ---
timeout 120 "$CS" run --summary --stream-opt --summary-threads --stream-opt --level=1 --dir "$T/s3" --top 0 -- "$W" \
    > "$T/s3.out" 2> "$T/s3.err"
ok $? "run --stream-opt --summary-threads --stream-opt --level=1: exits 0 (and implies --stream)"
is "$(sed -n 's/^events=0 threads=\([0-9]*\) .*/\1/p' "$T/s3.out") $(counts "$T/s3.out" | md5sum)" \
    "26 $(md5sum < "$T/expect")" "--summary-threads reached trace_stream: 26 threads kept apart, exact counts"
grep -q "trace_stream, serve on 127.0.0.1; summaries" "$T/s3.err"
ok $? "stream mode, said so"
"$CS" run --stream-opt --no-such-option --dir "$T/s4" -- "$W" > /dev/null 2> "$T/s4.err"
is "$? $(grep -c "^trace_stream: unknown option '--no-such-option'" "$T/s4.err")" "1 1" \
    "an option trace_stream does not know: its own line, and run exits 1"

# --- the flight recorder and a trigger ---
timeout 120 "$CS" run --flight-recorder --trigger 'slow>2ms' --dir "$T/f1" --top 0 -- "$P" 20000 > "$T/f1.out" 2> "$T/f1.err"
ok $? "run --flight-recorder --trigger 'slow>2ms': exits 0"
grep -q "^trace_stream: snapshot 1 (a slow call (TRACE_TRIGGER)): " "$T/f1.err" &&
    grep -q "; trigger slow>2ms; flight recorder)$" "$T/f1.err"
ok $? "trace_stream took one snapshot for the slow call"
is "$(grep -Ec "^trigger: slow \(slowcall.c:[0-9]+\) took [0-9.]+ ms, ending at [0-9.]+s on thread [0-9]+( \(slowcall\))?; stack: main > run > work > slow$" "$T/f1.out") $(awk '$1 ~ /^[0-9]+$/ && $10 == "slow" { print $1 }' "$T/f1.out")" \
    "1 1" "the report has the slow call once, with its whole stack"
timeout 120 "$CS" run --flight-recorder --trigger 'slow>2ms' --triggered-only --dir "$T/f2" -- "$P" 20000 > "$T/f2.out" 2> "$T/f2.err"
is "$? $(grep -c -- '<- the slow call' "$T/f2.out") $(grep -c 'calls.*incl_ms' "$T/f2.out")" "0 1 0" \
    "--triggered-only: only the triggered call's stack, no table"
timeout 120 "$CS" run --flight-recorder --trigger 'slow>500us' --max-triggers 1 --dir "$T/f3" --top 0 -- "$P" 200 0 storm \
    > "$T/f3.out" 2> "$T/f3.err"
grep -Eq "^trace_stream: flight recorder: 1 snapshot \(0 failed\), .* triggers not taken: [1-9][0-9]* over --max-triggers" "$T/f3.err"
ok $? "--max-triggers 1 reached trace_stream: one snapshot of a storm, the rest counted"
"$CS" run --flight-recorder --after -5 --dir "$T/f4" -- "$P" 10 > /dev/null 2> "$T/f4.err"
is "$? $(grep -c '^trace_stream: --after' "$T/f4.err")" "1 1" "--after reaches trace_stream, which refuses -5 itself"

# --- usage errors: exit 2, one line, nothing run ---
"$CS" run --trigger -- "$W" > /dev/null 2> "$T/u1.err"
is "$? $(cat "$T/u1.err")" "2 callsight run: --trigger needs NAME>LIMIT, e.g. 'parse>2ms' (--triggered-only is analyze's --trigger)" \
    "--trigger without NAME>LIMIT"
"$CS" run --after 5 -- "$W" > /dev/null 2> "$T/u2.err"
is "$? $(cat "$T/u2.err")" "2 callsight run: --after goes with --flight-recorder" "--after without --flight-recorder"
"$CS" run --stream-opt level=1 -- "$W" > /dev/null 2> "$T/u3.err"
is "$? $(cat "$T/u3.err")" "2 callsight run: --stream-opt needs one of trace_stream's options, --NAME or --NAME=VALUE, not 'level=1'" \
    "--stream-opt without the leading --: nothing positional reaches trace_stream"

is "$(leftovers)" "" "no serve, trace_stream or shm segment left"
