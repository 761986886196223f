#!/usr/bin/env bash
# 260-sql-large.t - analyze --format sqlite on a workload of over 3 M calls
# (examples/workload.c: 50 iterations, 3 workers, fib(20): 3,289,511
# calls, each function's count known from workload_expect.sh), issue 34's
# "done when": SELECT count(*) FROM slice is the calls, and every
# function's calls, self and incl time (every field) in func_stats equal
# the JSON report's; and memory stays flat: building the database of ten
# times the calls takes no more memory (rows go out as the pass makes
# them), under the issue's 100 MB.
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/workload_expect.sh"
. "$TESTS/lib/sqlcheck.sh"
plan 7

W=$B/examples/workload
P="50 3 20 8 2"
TRACE_ENABLE=1 TRACE_DIR="$T/big" "$W" $P >/dev/null
ok $? "the workload, traced ($P)"
expect_counts $P > "$T/expect"
calls=$(awk '{ s += $2 } END { print s }' "$T/expect")
"$CS" analyze "$T/big" --exe "$W" --format json -o "$T/big.json"
big=$(maxrss "$CS" analyze "$T/big" --exe "$W" --format sqlite -o "$T/big.db")
is "$big" "${big#failed}" "analyze --format sqlite of $calls calls"
is "$("$CS" sql "$T/big.db" --csv 'SELECT count(*) FROM slice' | sed 1d)" "$calls" \
   "SELECT count(*) FROM slice is the $calls calls"
is "$("$CS" sql "$T/big.db" --csv 'SELECT name, calls FROM func_stats ORDER BY name' | sed 1d | tr ',' ' ')" \
   "$(sort "$T/expect")" "func_stats: every function's exact calls"
same_as_json "$T/big.json" "$T/big.db"
ok $? "func_stats equals the JSON report's functions, every field, in its order"

rm -f "$T/big.db"
TRACE_ENABLE=1 TRACE_DIR="$T/med" "$W" 5 3 20 8 2 >/dev/null
med=$(maxrss "$CS" analyze "$T/med" --exe "$W" --format sqlite -o "$T/med.db")
diag "peak RSS: $((calls / 10)) calls ${med} KiB, $calls calls ${big} KiB"
[ "$med" != failed ] && [ "$big" != failed ] && [ $((big - med)) -lt 4096 ]
ok $? "peak memory the same for a tenth of the calls (within 4 MiB)"
[ "$big" != failed ] && [ "$big" -lt 102400 ]
ok $? "and under 100 MB"
