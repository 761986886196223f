#!/usr/bin/env bash
# make demo, interrupted while it streams (as by Ctrl-C): it stops, and
# leaves no serve, trace_stream or workload process and no shm segment.
source "$(dirname "$0")/../lib/lib.sh"
plan 4

ROOT=$(cd "$TESTS/.." && pwd)
# A long streamed run (400 iterations, ~5 s) so the interrupt lands in it.
DEMO_DIR="$T/demo" DEMO_ARGS=400 setsid "$ROOT/scripts/demo.sh" "$B" > "$T/demo.out" 2>&1 &
demo=$!
track_pid $demo
for _ in $(seq 600); do grep -q '^== 4\.' "$T/demo.out" && break; sleep 0.05; done
sleep 0.5
grep -q '^== 4\.' "$T/demo.out" && ! grep -q 'demo: done' "$T/demo.out"
ok $? "the demo is streaming the workload when interrupted"
shm=$(sed -n 's/.*drains the shm ring \(\/[^ ]*\) to.*/\1/p' "$T/demo.out")
kill -INT -- -"$demo" # the whole process group, as a terminal's Ctrl-C does
for _ in $(seq 200); do kill -0 "$demo" 2>/dev/null || break; sleep 0.05; done
kill -0 "$demo" 2>/dev/null
ok $((! $?)) "the demo stops"
sleep 0.2
# members of its process group, from /proc (procps may not be installed)
left=$(for st in /proc/[0-9]*/stat; do
    sed 's/.*) //' "$st" 2>/dev/null | awk -v g="$demo" '$3 == g { print }'
done | wc -l)
is "$left" 0 "no process of the demo is left"
[ -n "$shm" ] && [ ! -e "/dev/shm$shm" ]
ok $? "its shm segment ($shm) is gone"
exit $_failed
