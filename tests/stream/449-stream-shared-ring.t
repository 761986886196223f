#!/usr/bin/env bash
# Several processes into one ring: three different instrumented programs
# (examples/resident, a daemon that stays attached; examples/workload; and
# examples/forker, whose child joins the ring as a process of its own) write
# one shm ring that one trace_stream drains into one serve connection.  Each
# process announces itself in-band (pid, load bias, build-id), and analyze,
# given --exe once per program, names every function from its own binary:
# exact counts for all of them, two hash_key rows (resident's and
# workload's), no unmatched exits, nothing dropped.  A build-id that no
# --exe has is refused, and a tracer on another clock is turned away from
# the ring (it writes files instead) rather than mixing timestamps.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 17

PARAMS="4 5 10 16 4"
WL=$B/examples/workload RES=$B/examples/resident FRK=$B/examples/forker
SHM=/cs-test-shared-$$
track_shm "$SHM"

# The exact counts: "function file calls", one line each, sorted.
{
    expect_counts $PARAMS | awk '{print $1, "workload.c", $2}'
    printf '%s resident.c %s\n' main 1 handle 1 hash_key 777 mix 777
    printf '%s forker.c %s\n' main 1 fork_and_work 1 child_work 1 leaf 500
} | sort > "$T/expect"

# "function file calls" from a text report, sorted.
table_of() {
    awk '$1 ~ /^[0-9]+$/ && NF == 11 { f = $11; sub(/^\(/, "", f); sub(/:.*/, "", f); print $10, f, $1 }' "$1" | sort
}

start_serve "$T/s" --quiet
start_trace_stream "$B/trace_stream" "$SHM"
client=$CLIENT_PID

# The daemon: attached until told to go, so the ring has a writer while the
# others come and go (trace_stream ends when the last writer leaves).
mkfifo "$T/go"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$RES" < "$T/go" > "$T/res.out" 2> "$T/res.err" &
res=$!
track_pid $res
exec 7> "$T/go"
for _ in $(seq 200); do grep -q ready "$T/res.out" && break; sleep 0.05; done
grep -q ready "$T/res.out"
ok $? "resident attached to the ring and did its work"

# A tracer whose clock is not the ring's is refused, says why, and falls
# back to files with exact counts.
flags=$(od -An -tu4 -j48 -N4 "/dev/shm$SHM" | tr -d ' ')
if [ $((flags & 1)) -eq 1 ]; then other=mono; else other=tsc; fi
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_CLOCK=$other TRACE_DIR="$T/files" timeout 60 "$FRK" \
    > /dev/null 2> "$T/clock.err"
if [ "$other" = tsc ] && grep -q "no tick counter" "$T/clock.err"; then
    skip "this machine has no tick counter: every tracer uses mono, none can differ"
    skip "(the fallback files follow from the refusal above)"
else
    grep -q "^callsight: TRACE_SHM=$SHM: the processes already writing it use another clock" "$T/clock.err"
    ok $? "TRACE_CLOCK=$other against a ring on the other clock is refused: $(head -n 1 "$T/clock.err")"
    "$CS" analyze "$T/files" --exe "$FRK" --top 0 > "$T/files.txt" 2>&1
    is "$(table_of "$T/files.txt" | tr '\n' ' ')" "$(grep forker.c "$T/expect" | tr '\n' ' ')" \
        "the refused tracer wrote trace files instead, exact counts"
fi

# Two more programs into the ring at once, while resident stays.
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$WL" $PARAMS > /dev/null &
wl=$!
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$FRK" > /dev/null &
frk=$!
wait $wl
st_wl=$?
wait $frk
ok $((st_wl | $?)) "workload and forker ran traced into the same ring"
echo go >&7
exec 7>&-
wait $res
ok $? "resident left when told"
wait $client
ok $? "trace_stream exits 0 once the last of them detached"
diag "$(tail -n 1 "$T/client.err")"
wait_serve_closed 1
stop_serve
is "$(ls "$T"/s/trace.stream.*.bin | wc -l)" 1 "one stream, one file: every process in one connection"

"$CS" analyze "$T/s" --exe "$WL" --exe "$RES" --exe "$FRK" --top 0 > "$T/all.txt" 2> "$T/all.err"
ok $? "analyze with one --exe per program"
fields_are "$T/all.txt" "threads unmatched_exits unclosed_enters dropped" \
    "9 0 0 0" "9 threads (6 + 2 + 1), no unmatched exits, nothing open, nothing dropped"
table_of "$T/all.txt" > "$T/got"
diff "$T/expect" "$T/got" > "$T/table.diff"
ok $? "every function of all three programs named from its own binary, exact counts"
[ -s "$T/table.diff" ] && diag "$(head -n 20 "$T/table.diff")"
grep -q "^note: stream 1: 4 processes: pid [0-9]* (resident), " "$T/all.txt" &&
    [ "$(grep -o '([a-z]*)' <(grep '^note: stream 1: 4 processes' "$T/all.txt") | sort | tr '\n' ' ')" = \
      "(forker) (forker) (resident) (workload) " ]
ok $? "a note names the four processes and what each ran: $(grep '^note: stream' "$T/all.txt")"

"$CS" analyze "$T/s" --exe "$FRK" --exe "$RES" --exe "$WL" --top 0 > "$T/rev.txt" 2>&1
is "$(table_of "$T/rev.txt" | md5sum)" "$(md5sum < "$T/got")" "the order of the --exe options does not matter"

"$CS" analyze "$T/s" --exe "$WL" --exe "$RES" --exe "$FRK" --format json -o "$T/all.json"
is "$(grep -o '"name": "hash_key".*"binary": "[a-z]*"' "$T/all.json" | sed 's/.*"binary": //' | sort | tr '\n' ' ')" \
    '"resident" "workload" ' "json: the two hash_key rows carry their binaries"

# --function is looked up in every --exe: both programs' hash_key subtrees.
"$CS" analyze "$T/s" --exe "$WL" --exe "$RES" --exe "$FRK" --function hash_key --top 0 > "$T/fn.txt" 2>&1
is "$(table_of "$T/fn.txt" | tr '\n' ' ')" \
    "$(grep -E '^(hash_key|mix) ' "$T/expect" | tr '\n' ' ')" \
    "--function hash_key selects the hash_key of both binaries (and resident's mix under it)"

# The timeline shows them as the processes they were: one process track per
# announced pid, each thread under its own.
"$CS" analyze "$T/s" --exe "$WL" --exe "$RES" --exe "$FRK" --format perfetto -o "$T/all.pf" &&
    protoc --decode=callsight_test.Trace -I "$TESTS/tools" perfetto_subset.proto < "$T/all.pf" > "$T/pf.txt"
ok $? "perfetto: written and decoded by protoc"
pids=$(grep '^note: stream 1: 4 processes' "$T/all.txt" | grep -o 'pid [0-9]*' | awk '{print $2}' | sort -n | tr '\n' ' ')
is "$(grep -A2 'process {' "$T/pf.txt" | sed -n 's/.*pid: \([0-9]*\).*/\1/p' | sort -n | tr '\n' ' ')" "$pids" \
    "perfetto: one process track per pid in the ring ($pids)"

"$CS" analyze "$T/s" --exe "$WL" --exe "$FRK" > "$T/short.txt" 2> "$T/short.err"
st=$?
grep -q "^callsight analyze: pid [0-9]* in stream 1 was traced from build-id [0-9a-f]\{32\}, which no --exe has; give --exe once for each program that ran (or --force)$" "$T/short.err"
ok $((st != 1 || $? || $(wc -l < "$T/short.err") != 1 || $(wc -c < "$T/short.txt") != 0)) \
    "a program without its --exe is refused, one line, no report: $(cat "$T/short.err")"

# Overlapping link-time addresses are what makes per-binary keys matter.
lo_hi() { nm --defined-only "$1" | awk '$2 ~ /^[tT]$/ { print $1 }' | sort | sed -n '1p;$p' | tr '\n' ' '; }
diag "text ranges: workload $(lo_hi "$WL")resident $(lo_hi "$RES")forker $(lo_hi "$FRK")"
exit $_failed
