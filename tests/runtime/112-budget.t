#!/usr/bin/env bash
# A byte budget smaller than the run stops capture: files stay within it and
# analyze prints the budget note.  Plus a rotation check with TRACE_SEG_MB.
source "$(dirname "$0")/../lib/lib.sh"
plan 7

# The default workload writes ~20 MB; give it 1 MB.
TRACE_ENABLE=1 TRACE_DIR="$T/b" TRACE_MAX_MB=1 "$B/examples/workload" > /dev/null
ok $? "workload still runs to completion under a small budget"
total=$(cat "$T"/b/trace.*.bin | wc -c)
diag "total bytes written: $total"
[ "$total" -le 1048576 ] && [ "$total" -gt 500000 ]
ok $? "files stay within the 1 MiB budget (and use most of it)"
"$CS" analyze "$T/b" --exe "$B/examples/workload" > "$T/b.txt" 2>&1
ok $? "analyze exits 0"
grep -q 'budget' "$T/b.txt"
ok $? "analyze prints the budget note"
grep 'budget' "$T/b.txt" | head -n 2 | sed 's/^/# /'
n=$(grep -c 'budget' "$T/b.txt")
is "$n" 1 "exactly one budget note for the one process"

# Rotation: with 1 MB segments one thread's series has several files.
TRACE_ENABLE=1 TRACE_DIR="$T/r" TRACE_SEG_MB=1 "$B/examples/workload" 40 2 > /dev/null
segs=$(ls "$T/r" | awk -F. '$4 > 0' | wc -l)
[ "$segs" -ge 1 ]
ok $? "TRACE_SEG_MB rotates into numbered segments ($segs extra)"
"$CS" analyze "$T/r" --exe "$B/examples/workload" --top 0 > "$T/r.txt" 2>&1
is "$(calls_of fib "$T/r.txt")" $((40 * 2 * 465)) "rotated segments analyze with exact counts"
exit $_failed
