#!/usr/bin/env bash
# 245-analyze-table-widths.t - the text table's units and widths come from
# its values (issue 38: fixed microsecond columns overflowed for a call over
# a second, 8003547.684, and misaligned the row).  A synthetic trace of the
# tiny program with known durations: main 8.003547684 s, inside it work
# (1000 ns to 8 s) calling helper 1000 times, call i lasting i us + 1 ns.
# Every figure is recomputed here: work's self 8 s - 1 us - 500.501 ms; the
# sums in ms, the unit in the header (s from 10,000 ms); a call's time with
# its own unit, the one that needs at most four digits before the point
# (1001ns, 500.501us, 8003.548ms); each cell right-aligned under its header;
# percentiles, estimated from the histogram, with the digits they have
# (503808 ns is "504us", not "503.808"), exact values (mean from the exact
# sum, min, max) in full.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
plan 9

tiny_build
mkdir "$T/w" "$T/p"
perl -e 'my ($m, $w, $h) = @ARGV; print "H pid=600\nE 0 $m 600\nE 1000 $w 600\n"; my $t = 2000;
    for my $i (1..1000) { print "E $t $h 600\nX ", $t + $i * 1000 + 1, " $h 600\n"; $t += $i * 1000 + 11 }
    print "X 8000000000 $w 600\nX 8003547684 $m 600\n"' "$M" "$W" "$H" |
    perl "$TESTS/tools/tracegen.pl" "$T/w/trace.600.600.0.bin"
# helper alone, 1000 calls of 1..1000 us: per-call columns stay in us
perl -e 'my ($h) = @ARGV; print "H pid=700\n"; my $t = 0;
    for my $i (1..1000) { print "E $t $h 700\nX ", $t + $i * 1000, " $h 700\n"; $t += $i * 1000 + 10 }' "$H" |
    perl "$TESTS/tools/tracegen.pl" "$T/p/trace.700.700.0.bin"

"$CS" analyze "$T/w" --exe "$T/tiny" > "$T/w.txt" 2> "$T/w.err"
is "$? $(wc -c < "$T/w.err")" "0 0" "analyze: exit 0, nothing on stderr"
table() { sed -n '/^$/,$p' "$1" | sed 1d; }
table "$T/w.txt" > "$T/w.table"
is "$(head -n 1 "$T/w.table")" \
    "calls   incl_ms   self_ms  self%        mean         min         p50         p99         max  function (file:line)" \
    "the header: the sums' unit, ms; each column as wide as its widest cell"
is "$(sed 1d "$T/w.table" | tr -s ' ')" \
" 1 7999.999 7499.498 93.7 7999.999ms 7999.999ms 7999.999ms 7999.999ms 7999.999ms work (tiny.c:3)
 1000 500.501 500.501 6.3 500.501us 1001ns 504us 991us 1000.001us helper (tiny.c:2)
 1 8003.548 3.549 0.0 8003.548ms 8003.548ms 8003.548ms 8003.548ms 8003.548ms main (tiny.c:4)" \
    "rows: the exact sums, shares of all self time (8003.548 ms), mean 500501 ns, min and max to the ns"

# Aligned: each cell ends where its header does, the name where "function" starts.
aligned() { perl -ne 'chomp; push @l, $_; END {
    my @h; while ($l[0] =~ /(\S+)/g) { push @h, pos($l[0]) } my $bad = 0;
    for my $r (@l[1..$#l]) { my $k = 0;
        while ($r =~ /(\S+)/g && $k < 9) { my $end = pos($r); my $c = $1;
            my $want = $h[$k++];
            if ($end != $want) { print "# col $k of \"$r\" ends at $end, not $want\n"; $bad = 1 } }
        my $at = index($r, (split /\s{2,}/, $r)[-1]);
        if ($at != index($l[0], "function")) { print "# name of \"$r\" at $at\n"; $bad = 1 } }
    exit $bad }' "$1"; }
aligned "$T/w.table"
ok $? "every row aligned with the header, names in one column"
grep -q '8003547' "$T/w.txt"
ok $((! $?)) "no 8003547.684: a second is no seven-digit microsecond count"

"$CS" analyze "$T/p" --exe "$T/tiny" > "$T/p.txt"
table "$T/p.txt" > "$T/p.table"
is "$(cat "$T/p.table")" \
"calls  incl_ms  self_ms  self%       mean     min    p50    p99         max  function (file:line)
 1000  500.500  500.500  100.0  500.500us  1000ns  504us  991us  1000.000us  helper (tiny.c:2)" \
    "p50 and p99 estimates to 3 digits; min (1000 ns: four digits) in ns, max (1,000,000 ns) in us"
aligned "$T/p.table"
ok $? "and aligned by the same rule"
"$CS" analyze "$T/p" --exe "$T/tiny" --format json > "$T/p.json"
is "$(python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["functions"][0]
print(f["min_ns"], f["mean_ns"], f["p50_ns"], f["max_ns"])' "$T/p.json")" "1000 500500 503808 1000000" \
    "json keeps every ns: the estimate's bucket, and mean_ns, the exact mean"
# one call: its percentiles are its duration, exact, in full
"$CS" analyze "$T/w" --exe "$T/tiny" --top 1 --sort incl | table /dev/stdin > "$T/one"
is "$(sed -n 2p "$T/one" | tr -s ' ')" " 1 8003.548 3.549 0.0 8003.548ms 8003.548ms 8003.548ms 8003.548ms 8003.548ms main (tiny.c:4)" \
    "a percentile that is exact (the only call) keeps all its digits"
