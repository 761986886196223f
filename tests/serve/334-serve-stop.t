#!/usr/bin/env bash
# serve on SIGINT/SIGTERM writes everything its clients already sent, also
# for connections still waiting in the listen backlog (serve was stopped,
# SIGSTOP, while a client connected, sent 20000 events and left), closes
# the files and exits 0.
source "$(dirname "$0")/../lib/lib.sh"
plan 9

need_tools streamgen
CHECK="perl $TESTS/tools/tracecheck.pl"

for sig in INT TERM; do
    start_serve "$T/$sig" --quiet
    kill -STOP $SERVE_PID
    timeout 30 "$TOOLBIN/streamgen" --events 20000 --chunk 1000 127.0.0.1 "$SERVE_PORT" > /dev/null 2>&1
    ok $? "SIG$sig: a client sent 20000 events while serve was stopped"
    kill -$sig $SERVE_PID
    kill -CONT $SERVE_PID
    rc=124
    for _ in $(seq 500); do kill -0 $SERVE_PID 2>/dev/null || { wait $SERVE_PID; rc=$?; break; }; sleep 0.02; done
    is $rc 0 "SIG$sig: serve exits 0"
    is "$($CHECK "$T/$sig/trace.stream.1.0.bin" | tail -n 1)" "events=20000 mismatched=0 markers= tail=0" \
        "SIG$sig: all 20000 events written, the file whole"
done
grep -q "stopped after 1 connection" "$SERVE_LOG"
ok $? "the backlog connection counts as served"

# Binding every address without --allow warns once; loopback and --allow do
# not.  Nothing connects: the test only reads what serve says at start.
start_serve "$T/any" --quiet  # 127.0.0.1 (start_serve's --host)
grep -q 'without --allow' "$SERVE_LOG"
ok $((! $?)) "no warning when listening on loopback"
"$CS" serve --host 0.0.0.0 --port 0 --out "$T/any" --quiet > "$T/any.log" 2>&1 &
anyp=$!
track_pid $anyp
for _ in $(seq 200); do grep -q 'listening on' "$T/any.log" && break; sleep 0.02; done
kill -INT $anyp; wait $anyp 2>/dev/null
is "$(grep -c 'warning: listening on 0.0.0.0.* without --allow' "$T/any.log")" 1 \
    "binding 0.0.0.0 without --allow prints a one-line warning"
exit $_failed
