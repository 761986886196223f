#!/usr/bin/env bash
# TRACE_FLUSH_MS: a thread's partial batch goes out once it is that old, at
# the thread's next hook, so a program that has gone quiet has its events
# on the host (serve's files, or TRACE_DIR) while it still runs, which is
# what callsight top watches.  examples/resident does its work (3110
# events: fewer than a file-mode batch of 2048 plus one more, and not a
# whole number of stream batches), sleeps SETTLE_MS, makes one call,
# settle(), whose entry is the hook that comes after the period, and then
# waits for a line on stdin.  While it waits, analyze counts exactly:
#   - with a period shorter than SETTLE_MS (and with the default, 100 ms,
#     shorter than 300): everything, main's and settle's entries included,
#     none of their exits (3112 events, 2 calls open);
#   - with TRACE_FLUSH_MS=0 (the old way, full batches only): file mode
#     one batch of 2048 events; stream mode three of half a buffer, 1024
#     records, the second and third each beginning with the flush note
#     (tracer time) of the one before, so 1024 + 1023 + 1023 = 3070 events.
# After the line, every run has all 3114 events, exact counts.  A bad
# value gets the runtime's usual line, and the default.
# No timing is asserted: the sleep only has to outlast the period, and
# every wait for the files is a bounded poll for a count.
source "$(dirname "$0")/../lib/lib.sh"
plan 25
unset TRACE_FLUSH_MS

RES=$B/examples/resident
SMALL=20   # TRACE_FLUSH_MS of the runs that flush by age
SETTLE=300 # resident's sleep before settle(): well past SMALL and the default
WAITING="events=3112 open=2 handle 1 hash_key 777 mix 777 "
DONE="events=3114 open=0 handle 1 hash_key 777 main 1 mix 777 settle 1 "

# summary DIR: events, calls open, then "function calls" of every function
# with completed calls, sorted, on one line.
summary() {
    "$CS" analyze "$1" --exe "$RES" --top 0 > "$T/sum.txt" 2> "$T/sum.err" || return 1
    local h
    h=$(head -n 1 "$T/sum.txt")
    printf 'events=%s open=%s ' "$(field events "$h")" "$(field unclosed_enters "$h")"
    awk 'NR > 1 && $1 ~ /^[0-9]+$/ && NF >= 10 && $1 > 0 { print $10, $1 }' "$T/sum.txt" | sort | tr '\n' ' '
}

# events_in DIR: analyze's event count of DIR so far (0 before any file).
events_in() {
    ls "$1"/trace.*.bin > /dev/null 2>&1 || { echo 0; return; }
    local e
    e=$(field events "$("$CS" analyze "$1" --exe "$RES" --top 0 2> /dev/null | head -n 1)")
    echo "${e:-0}"
}

# run_case NAME MODE WANT [VAR=VALUE...]: resident SETTLE in MODE (file or
# stream) with the given environment; once it is waiting, polls (bounded)
# until DIR holds WANT events, then sets $NAME_wait to the summary; tells
# it to go and sets $NAME_done to the final one, $NAME_err to its stderr.
run_case() {
    local name=$1 mode=$2 want=$3 dir=$T/$1 shm=/cs-test-flush-$1-$$ res client=""
    shift 3
    mkdir -p "$dir"
    if [ "$mode" = stream ]; then
        track_shm "$shm"
        start_serve "$dir" --quiet
        start_trace_stream "$B/trace_stream" "$shm"
        client=$CLIENT_PID
        set -- "$@" TRACE_SHM="$shm" TRACE_SHM_WAIT_US=$RING_WAIT_EXACT
    else
        set -- "$@" TRACE_DIR="$dir"
    fi
    mkfifo "$T/$name.go"
    env "$@" TRACE_ENABLE=1 timeout 60 "$RES" $SETTLE < "$T/$name.go" > "$T/$name.out" 2> "$T/$name.err" &
    res=$!
    track_pid $res
    exec 7> "$T/$name.go"
    wait_in "$T/$name.out" '^resident: ready$'
    for _ in $(seq 300); do
        [ "$(events_in "$dir")" -ge "$want" ] && break
        sleep 0.05
    done
    printf -v "${name}_wait" '%s' "$(summary "$dir")"
    echo go >&7
    exec 7>&-
    wait $res
    printf -v "${name}_status" '%s' $?
    if [ -n "$client" ]; then
        wait_stream_client "$client"
        printf -v "${name}_status" '%s' "$(( ${name}_status | $? ))"
        wait_serve_closed 1
        stop_serve
    fi
    printf -v "${name}_done" '%s' "$(summary "$dir")"
    printf -v "${name}_err" '%s' "$(cat "$T/$name.err")"
}

# ---- (a) stream mode, through trace_stream and serve ----
run_case stream_on stream 3112 TRACE_FLUSH_MS=$SMALL
is "$stream_on_status" 0 "stream, TRACE_FLUSH_MS=$SMALL: resident, trace_stream exit 0"
is "$stream_on_wait" "$WAITING" "stream, TRACE_FLUSH_MS=$SMALL: while it waits, all its work is in serve's file"
is "$stream_on_done" "$DONE" "stream, TRACE_FLUSH_MS=$SMALL: after it ends, exact counts"
is "$stream_on_err" "" "stream, TRACE_FLUSH_MS=$SMALL: nothing on stderr"
is "$(grep -c "dropped 0" "$T/client.err")" 1 "stream, TRACE_FLUSH_MS=$SMALL: nothing dropped: $(tail -n 1 "$T/client.err")"

# ---- (b) stream mode, full batches only ----
run_case stream_off stream 3070 TRACE_FLUSH_MS=0
is "$stream_off_status" 0 "stream, TRACE_FLUSH_MS=0: resident, trace_stream exit 0"
is "${stream_off_wait%% *}" "events=3070" "stream, TRACE_FLUSH_MS=0: while it waits, only the three full batches"
is "$stream_off_done" "$DONE" "stream, TRACE_FLUSH_MS=0: after it ends, exact counts"
is "$(grep -c "dropped 0" "$T/client.err")" 1 "stream, TRACE_FLUSH_MS=0: nothing dropped"

# ---- (c) file mode ----
run_case file_on file 3112 TRACE_FLUSH_MS=$SMALL
is "$file_on_status" 0 "files, TRACE_FLUSH_MS=$SMALL: resident exit 0"
is "$file_on_wait" "$WAITING" "files, TRACE_FLUSH_MS=$SMALL: while it waits, all its work is in TRACE_DIR"
is "$file_on_done" "$DONE" "files, TRACE_FLUSH_MS=$SMALL: after it ends, exact counts"
is "$file_on_err" "" "files, TRACE_FLUSH_MS=$SMALL: nothing on stderr"

run_case file_off file 2048 TRACE_FLUSH_MS=0
is "$file_off_status" 0 "files, TRACE_FLUSH_MS=0: resident exit 0"
is "${file_off_wait%% *}" "events=2048" "files, TRACE_FLUSH_MS=0: while it waits, only the one full batch"
is "$file_off_done" "$DONE" "files, TRACE_FLUSH_MS=0: after it ends, exact counts"

run_case file_default file 3112
is "$file_default_status" 0 "files, TRACE_FLUSH_MS unset: resident exit 0"
is "$file_default_wait" "$WAITING" "files, TRACE_FLUSH_MS unset: the default (100) flushed it while it waits"
is "$file_default_done" "$DONE" "files, TRACE_FLUSH_MS unset: after it ends, exact counts"

# ---- (d) bad values: the runtime's one line, then the default ----
run_case file_bad file 3112 TRACE_FLUSH_MS=soon
is "$file_bad_err" "callsight: TRACE_FLUSH_MS=soon is not a whole number from 0 to 60000; using 100" \
    "TRACE_FLUSH_MS=soon: one line, naming the value, the range and the default"
is "$file_bad_wait" "$WAITING" "TRACE_FLUSH_MS=soon: the default flushed it while it waits"
is "$file_bad_done" "$DONE" "TRACE_FLUSH_MS=soon: after it ends, exact counts"

TRACE_ENABLE=1 TRACE_DIR="$T/big" TRACE_FLUSH_MS=60001 timeout 60 "$RES" < /dev/null > /dev/null 2> "$T/big.err"
ok $? "TRACE_FLUSH_MS=60001: resident runs"
is "$(cat "$T/big.err")" "callsight: TRACE_FLUSH_MS=60001 is not a whole number from 0 to 60000; using 100" \
    "TRACE_FLUSH_MS=60001: past the bound, one line"
is "$(summary "$T/big")" "events=3112 open=0 handle 1 hash_key 777 main 1 mix 777 " \
    "TRACE_FLUSH_MS=60001: traced with the default, exact counts"
exit $_failed
