#!/usr/bin/env bash
# 463-stream-advice.t - a run that loses most of its events is told what
# would help, from what it measured: the demo workload through a 1 MiB ring
# whose drain is stopped while it runs (as test 441) drops most events.
# trace_stream's last lines say the share and the levers; analyze's notes
# (text and JSON) give the exact counts, the rates over the span, the
# busiest functions by name (fib first: its calls are most of the
# workload's), and summary mode; following it, the same run with
# TRACE_MODE=summary drops nothing and has the exact counts, and there is
# no advice.  A run that drops nothing has none either.  A program given a
# TRACE_SHM no trace_stream has made says what becomes of the ring.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 14

W=$B/examples/workload
# stopped NAME [ENV=VALUE...]: the workload through a 1 MiB ring whose drain
# is stopped until it is done; serve in $T/NAME, trace_stream's stderr in $T/NAME.err.
stopped() {
    local name=$1 shm=/cs-test-advice-$1-$$
    shift
    track_shm "$shm"
    start_serve "$T/$name" --quiet
    TRACE_SHM_SIZE=1048576 start_stoppable_stream "$B/trace_stream" "$shm" "$T/$name.err"
    local client=$CLIENT_PID
    kill -STOP $client
    env "$@" TRACE_ENABLE=1 TRACE_SHM=$shm timeout 60 "$W" > /dev/null
    cont_if_stopped $client
    wait_stream_client $client
    wait_serve_closed 1
    stop_serve
}

stopped events
"$CS" analyze "$T/events" --exe "$W" --top 3 > "$T/events.txt" 2> "$T/events.stderr" &&
    "$CS" analyze "$T/events" --exe "$W" --format json -o "$T/events.json"
ok $? "the overflowed run: analyze reads what arrived"
h=$(head -n 1 "$T/events.txt"); diag "$h"
ev=$(field events "$h"); dr=$(field dropped "$h")
pct=$(awk -v d="$dr" -v e="$ev" 'BEGIN { printf "%.1f", 100 * d / (d + e) }')
awk -v p="$pct" 'BEGIN { exit !(p > 50) }'
ok $? "most events were dropped ($pct%)"
read -r fw tdr < <(sed -n 's/^trace_stream: forwarded \([0-9]*\) events .*, dropped \([0-9]*\)$/\1 \2/p' "$T/events.err")
tpct=$(awk -v d="$tdr" -v e="$fw" 'BEGIN { printf "%.1f", 100 * d / (d + e) }') # its records, markers too
grep -qx "trace_stream: $tpct% of the events were dropped: TRACE_MODE=summary counts every call on the device at a few KB/s; \`callsight analyze\` names the functions that made most (leave them out in trace.config); a bigger TRACE_SHM_SIZE or a TRACE_SHM_WAIT_US rides out bursts" "$T/events.err"
ok $? "trace_stream's last lines say the share and the levers"
grep -Eqx "note: advice: $pct% of the events were dropped \($dr of $((dr + ev))\): over the [0-9]+\.[0-9]{3} s traced the program made [0-9.]+ [kM] events/s and the trace kept [0-9.]+ k?/s" "$T/events.txt"
ok $? "analyze: the exact counts and the rates"
grep -qx "note: advice: TRACE_MODE=summary (callsight run --summary) counts every call exactly on the device and sends a few KB/s, however fast the program calls" "$T/events.txt"
ok $? "analyze: summary mode, and how to ask for it"
grep -Eqx "note: advice: [0-9]+ functions? made (9[0-9]|100)% of the calls kept: fib \([0-9]+%\)(, [a-z_]+ \([0-9]+%\))*; trace.config's exclude-func NAME leaves (it|them) out \(callsight scan lists what is traced\)" "$T/events.txt"
ok $? "analyze: the busiest functions by name, fib first, with their shares"
is "$(grep -c '^note: advice: ' "$T/events.txt")" 4 "four lines of advice, the last for bursts"
is "$(python3 -c 'import json, sys
print(sum(n.startswith("advice: ") for n in json.load(open(sys.argv[1]))["notes"]))' "$T/events.json")" 4 \
    "the JSON's notes carry the same four"

# --- following it: summary mode through the same stopped ring ---
stopped summary TRACE_MODE=summary
"$CS" analyze "$T/summary" --exe "$W" --top 0 > "$T/summary.txt" 2> "$T/summary.stderr"
ok $? "summary mode, the same stopped ring: analyze reads it"
h=$(head -n 1 "$T/summary.txt"); diag "$h"
is "$(field dropped "$h") $(cat "$T/summary.txt" "$T/summary.err" | grep -c 'advice: \|were dropped')" "0 0" \
    "summary mode drops nothing, and there is no advice"
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$T/summary.txt" | sort)" "$(expect_counts 16 25 12 64 8 | sort)" \
    "summary mode: the workload's exact counts"

# --- a run that drops nothing: no advice ---
stream_through "$T/plain" /cs-test-advice-plain-$$ "$W"
"$CS" analyze "$T/plain" --exe "$W" --top 3 > "$T/plain.txt" 2>&1
is "$(field dropped "$(head -n 1 "$T/plain.txt")") $(grep -c 'advice: ' "$T/plain.txt")" "0 0" "nothing dropped: no advice"

# --- no trace_stream: the program makes the ring, and says what becomes of it ---
made=/cs-test-adv-made-$$
track_shm "$made"
TRACE_ENABLE=1 TRACE_SHM=$made "$W" 1 2 5 8 2 > /dev/null 2> "$T/made.err"
is "$? $(cat "$T/made.err") $(ls /dev/shm | grep -c "^${made#/}\$")" \
    "0 callsight: TRACE_SHM=$made: no trace_stream had made this ring, so the program made it (16 MiB): it keeps events until a trace_stream $made HOST PORT drains it, then drops new ones, counted; only trace_stream removes it (or rm /dev/shm$made) 1" \
    "TRACE_SHM without a trace_stream: one line says the program made the ring, what becomes of it, and how to remove it"
noslash=cs-test-adv-noslash-$$
track_shm "/$noslash"
TRACE_ENABLE=1 TRACE_SHM=$noslash "$W" 1 2 5 8 2 > /dev/null 2> "$T/noslash.err"
is "$? $(head -n 1 "$T/noslash.err") $(ls /dev/shm | grep -c "^$noslash\$")" \
    "0 callsight: TRACE_SHM=$noslash: a ring's name starts with '/'; taken as /$noslash 1" \
    "TRACE_SHM without its leading '/': said, and the ring is /$noslash"
