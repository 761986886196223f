#!/usr/bin/env bash
# 354-serve-summary-budget.t - summary increments must not amplify into
# serve's memory (issue 29): the red team held 64 connections with open
# snapshots of 5,900 functions with every bucket, each under the
# per-connection cap, and serve reached 4.96 GB.  With default options:
#   - the totals of all connections together stay within --max-summary-mb
#     (64 MB): one connection holds an open snapshot of 3,000 such
#     functions (33 MiB of totals), then 63 more send the red team's 5,900
#     at once (64 MiB each: every one fits the per-connection cap, none the
#     room left); they fill the budget together, and as each is closed its
#     totals make room for the others, until every one of them has been
#     closed with one line naming the option, counted in the stop line;
#     serve's peak RSS stays under 256 MB;
#   - a snapshot begun and never ended closes its connection after
#     --snapshot-timeout (shortened to 2 s here), one line, its totals
#     freed; one that ended is left alone.
# tests/tools/attack.c's `sums` mode makes these connections.  The first
# connection holds more than half of the budget, so that no other can ever
# complete: the counts are exact whatever order the threads run in.
source "$(dirname "$0")/../lib/lib.sh"
plan 11
need_tools attack

AT=$TOOLBIN/attack
P="127\.0\.0\.[0-9]+:[0-9]+"
# Under ASan (make test's second pass) freed memory is quarantined and
# everything runs slower: RSS is not the plain build's, and the first
# connection's snapshot could outlive the default 60 s timeout.
ASAN=0 HWM_MAX=$((256 << 10)) EXTRA=()
nm "$CS" 2>/dev/null | grep -q __asan_init && ASAN=1 HWM_MAX=$((512 << 10)) EXTRA=(--snapshot-timeout 0)
hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }

# --- 64 connections of open snapshots: the budget for all of them holds ---
start_serve "$T/m" --quiet "${EXTRA[@]}"
timeout 180 "$AT" --src 127.0.0.2 --hold-ms 150000 sums 1 127.0.0.1 "$SERVE_PORT" 3000 > "$T/first.out" &
first=$!
track_pid $first
for _ in $(seq 1200); do grep -q "device dropped" "$SERVE_LOG" && break; sleep 0.1; done
grep -q "^callsight serve: conn 1: device dropped 3000 events (cumulative)$" "$SERVE_LOG"
ok $? "one connection's open snapshot of 3000 functions with all 1408 buckets fits the default budget"
rest=""
for a in 2 3 4 5; do # 16 a peer (--max-per-peer), the first among 127.0.0.2's
    n=16
    [ $a = 2 ] && n=15
    timeout 120 "$AT" --src 127.0.0.$a --hold-ms 60000 sums $n 127.0.0.1 "$SERVE_PORT" 5900 > "$T/rest.$a.out" &
    rest="$rest $!"
done
track_pid "$rest"
wait $rest
is "$(cat "$T"/rest.*.out | awk '{ o += $3; c += $5 } END { print o, c }')" "63 63" \
    "63 more connections sending the same at once: every one closed by serve"
hwm=$(hwm_kb "$SERVE_PID")
[ "$hwm" -lt "$HWM_MAX" ]
ok $? "serve's peak RSS stays under $((HWM_MAX >> 10)) MB (VmHWM $hwm kB)"
n=$(grep -Ec "^callsight serve: conn [0-9]+ closed \($P\): 0 events, 1 segment, 112 bytes written, [0-9]+ bytes received, dropped 0; error: chunk [0-9]+: summary increments, thread 7: the summary totals of all connections are at their cap, 64 MB \(--max-summary-mb\)$" "$SERVE_LOG")
is "$n" 63 "each of them closed with one line naming the cap and its option"
is "$(grep -c ' closed ' "$SERVE_LOG")" 63 "and no other connection closed: the first still holds its snapshot"
stop_serve
wait $first
is "$(cat "$T/first.out")" "attack: sums: 1 opened, 1 closed by the server" "the first was held until serve stopped"
grep -Eq "^callsight serve: conn 1 closed \($P\): 0 events, 1 segment, 112 bytes written, [0-9]+ bytes received, dropped 3000 \(server stopping\)$" "$SERVE_LOG"
ok $? "and then closed without an error"
is "$(grep -A2 'conn 1 closed' "$SERVE_LOG" | sed -n 2p)" \
    "callsight serve: 63 connections were closed at the summary totals' cap of 64 MB for all connections (--max-summary-mb)" \
    "the stop line before the last counts them"

# --- a snapshot that never ends: --snapshot-timeout closes its connection ---
start_serve "$T/d" --quiet --snapshot-timeout 2
timeout 60 "$AT" --src 127.0.0.2 --hold-ms 30000 sums 1 127.0.0.1 "$SERVE_PORT" 3 > "$T/open.out" &
o=$!
timeout 60 "$AT" --src 127.0.0.3 --hold-ms 4000 sums 1 127.0.0.1 "$SERVE_PORT" 3 end > "$T/ended.out" &
e=$!
track_pid "$o $e"
wait $o $e
is "$(cat "$T/open.out" "$T/ended.out")" "attack: sums: 1 opened, 1 closed by the server
attack: sums: 1 opened, 0 closed by the server" \
    "a snapshot left open is closed by serve; one ended is not, though held twice as long"
wait_serve_closed 2
grep -Eq "^callsight serve: conn [0-9]+ closed \(127\.0\.0\.2:[0-9]+\): 0 events, 1 segment, 144 bytes written, [0-9]+ bytes received, dropped 3; error: summary snapshot 1 of thread 7 still open after 2 s \(--snapshot-timeout\)$" "$SERVE_LOG"
ok $? "with one line naming the snapshot and the option"
stop_serve
id=$(sed -n 's/^callsight serve: conn \([0-9]*\) from 127\.0\.0\.3:.*/\1/p' "$SERVE_LOG")
f=$T/d/trace.stream.$id.0.bin
is "$([ -n "$id" ] && [ -f "$f" ] && python3 -c 'import sys
d = open(sys.argv[1], "rb").read()[80:]
parts = [d[i + 29] for i in range(0, len(d), 32) if d[i + 28] == 4]
print(parts.count(2), parts.count(4), parts.count(6))' "$f")" "3 2112 1" \
    "the ended one's file holds its whole snapshot: 3 functions, 704 bucket records each, one END"
exit $_failed
