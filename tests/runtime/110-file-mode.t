#!/usr/bin/env bash
# File mode end to end: the 26-thread workload traced to local files and
# analyzed, with exact call counts, resolved names (PIE and -no-pie), and
# percentiles checked against an independent reader of the raw files.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 19

PARAMS="16 25 12 64 8"
expect_counts $PARAMS > "$T/expect"

check_exact_counts() { # REPORT LABEL
    exact_calls "$1"
    ok $? "$2: every function has its exact call count"
}

# --- PIE (Debian's default) ---
TRACE_ENABLE=1 TRACE_DIR="$T/pie" "$B/examples/workload" $PARAMS > "$T/run.out"
ok $? "workload runs traced"
"$CS" analyze "$T/pie" --exe "$B/examples/workload" --top 0 > "$T/pie.txt" 2> "$T/pie.err"
ok $? "analyze exits 0"
head1=$(head -n 1 "$T/pie.txt")
diag "$head1"
is "$(field threads "$head1")" 26 "threads=26 (main + 25 workers)"
is "$(field unmatched_exits "$head1")" 0 "unmatched_exits=0"
is "$(field unclosed_enters "$head1")" 0 "unclosed_enters=0"
is "$(field dropped "$head1")" 0 "dropped=0"
is "$(field events "$head1")" $((2 * $(awk '{s += $2} END {print s}' "$T/expect"))) \
    "events = 2 x the expected calls"
check_exact_counts "$T/pie.txt" "PIE"
"$CS" analyze "$T/pie" --exe "$B/examples/workload" --format json > "$T/pie.json"

# Every row: self <= incl; no function left unresolved (hex).
awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $3 > $2 + 0.0005 { bad = 1; print "# self > incl: " $0 } END { exit bad }' "$T/pie.txt"
ok $? "self_ms <= incl_ms on every row"
rows=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' "$T/pie.txt" | wc -l)
is "$rows" "$(wc -l < "$T/expect")" "one row per function, no more"
grep -q '^ *[0-9].* 0x[0-9a-f]*' "$T/pie.txt"
ok $((! $?)) "PIE: no unresolved (hex) function names"
grep -q ' fib (workload.c:[0-9]*)' "$T/pie.txt"
ok $? "static function fib resolves with file:line"

# Percentiles agree with order statistics computed independently.
perl "$TESTS/tools/rawstats.pl" "$B/examples/workload" "$T"/pie/trace.*.bin > "$T/raw.txt"
bad=0
for f in fib dot hash_key msort merge do_iteration; do
    read -r _ rc r50 r99 rmax < <(grep "^$f " "$T/raw.txt")
    read -r c p50 p99 max < <(python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["functions"]:
    if r["name"] == sys.argv[2]:
        print(r["calls"], r["p50_ns"] / 1e3, r["p99_ns"] / 1e3, r["max_ns"] / 1e3)' "$T/pie.json" "$f")
    verdict=$(perl -e '
        my ($rc,$r50,$r99,$rmax,$c,$p50,$p99,$max) = @ARGV;
        my @e;
        push @e, "calls $c vs $rc" if $c != $rc;
        for ([p50 => $p50, $r50], [p99 => $p99, $r99]) {
            my ($n, $us, $ns) = @$_;
            push @e, "$n $us us vs $ns ns" if abs($us * 1000 - $ns) > 0.02 * $ns + 1;
        }
        push @e, "max $max us vs $rmax ns" if abs($max * 1000 - $rmax) > 1.5;
        push @e, "order" unless $p50 <= $p99 && $p99 <= $max;
        print join("; ", @e);' "$rc" "$r50" "$r99" "$rmax" "$c" "$p50" "$p99" "$max")
    [ -z "$verdict" ] || { diag "$f: $verdict"; bad=1; }
done
ok $bad "p50/p99 within 2% (the promise) and max exact, against the raw trace"

# Thread names travel in-band (marker 21): main's and every worker's.
names=$("$CS" analyze "$T/pie" --exe "$B/examples/workload" --format json |
    python3 -c 'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin)["threads"])))')
want=$({ echo workload; for i in $(seq 0 24); do printf 'worker-%02d\n' "$i"; done; } | LC_ALL=C sort | tr '\n' ' ')
is "$names" "${want% }" \
    "every thread is labelled by its name"
"$CS" analyze "$T/pie" --exe "$B/examples/workload" --thread worker-07 --top 0 > "$T/w7.txt" 2>&1
is "$(calls_of fib "$T/w7.txt") $(calls_of worker_main "$T/w7.txt")" "$((16 * 465)) 1" \
    "--thread NAME selects one worker's exact calls"

# --- -no-pie ---
TRACE_ENABLE=1 TRACE_DIR="$T/nopie" "$B/examples/workload-nopie" $PARAMS > /dev/null
"$CS" analyze "$T/nopie" --exe "$B/examples/workload-nopie" --top 0 > "$T/nopie.txt" 2>&1
ok $? "-no-pie: analyze exits 0"
check_exact_counts "$T/nopie.txt" "-no-pie"
grep -q '^ *[0-9].* 0x[0-9a-f]*' "$T/nopie.txt"
ok $((! $?)) "-no-pie: no unresolved (hex) function names"

# --- tracing compiled in but not enabled ---
(cd "$T" && "$B/examples/workload" 2 3 > /dev/null && TRACE_DIR="$T/off" "$B/examples/workload" 2 3 > /dev/null)
[ ! -e "$T/traces" ] && [ ! -e "$T/off" ]
ok $? "without TRACE_ENABLE=1 nothing is written"
exit $_failed
