#!/usr/bin/env bash
# 246-analyze-sort.t - --sort calls|self|incl|mean|max|p99|name and the
# "N more functions" line after --top N (issue 38).  Two synthetic traces of
# the tiny program whose every figure is known:
#   A: tiny_trace.sh's named_trace (main 1 call, 10 ms incl, 8.7 self; work
#      2 calls, 3.0 incl, 2.0 self, max 2.0; helper 5 calls, 1.7 ms, max 0.5)
#      and a third thread calling 0x10 (no name) 3 times: 2.48 ms, 10 us,
#      10 us (2.5 ms, max 2.48): by self main 0x10 work helper, by incl main
#      work 0x10 helper, by max main 0x10 work helper, by calls helper 0x10
#      work main, by name helper main work, then 0x10.
#   B: helper 1000 calls of 1..1000 us (p99 991 us estimated, max 1000 us,
#      mean 500.5 us, incl 500.5 ms) and work one call of 995 us: by p99 and
#      by mean work first, by max and by incl helper first.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
plan 14

tiny_build
named_trace "$T/a"
perl "$TESTS/tools/tracegen.pl" "$T/a/trace.500.502.0.bin" <<S
H pid=500
E 0 0x10 502
X 2480000 0x10 502
E 3000000 0x10 502
X 3010000 0x10 502
E 4000000 0x10 502
X 4010000 0x10 502
S
mkdir "$T/b"
perl -e 'my ($h, $w) = @ARGV; print "H pid=700\n"; my $t = 0;
    for my $i (1..1000) { print "E $t $h 700\nX ", $t + $i * 1000, " $h 700\n"; $t += $i * 1000 + 10 }
    print "E $t $w 700\nX ", $t + 995000, " $w 700\n"' "$H" "$W" |
    perl "$TESTS/tools/tracegen.pl" "$T/b/trace.700.700.0.bin"

# the names column of the table, in order
names() { "$CS" analyze "$@" | awk 'f && $1 ~ /^[0-9]+$/ { printf "%s ", $10 } /^calls /{ f = 1 }'; }
is "$(names "$T/a" --exe "$T/tiny")" "main 0x10 work helper " "default: most self time first"
is "$(names "$T/a" --exe "$T/tiny" --sort self)" "main 0x10 work helper " "--sort self: the same"
is "$(names "$T/a" --exe "$T/tiny" --sort calls)" "helper 0x10 work main " "--sort calls: 5 3 2 1"
is "$(names "$T/a" --exe "$T/tiny" --sort incl)" "main work 0x10 helper " "--sort incl: 10 3.0 2.5 1.7 ms"
is "$(names "$T/a" --exe "$T/tiny" --sort max)" "main 0x10 work helper " "--sort max: 10 2.48 2.0 0.5 ms"
is "$(names "$T/a" --exe "$T/tiny" --sort name)" "helper main work 0x10 " "--sort name: by name, the unnamed last"
is "$(names "$T/b" --exe "$T/tiny" --sort p99) $(names "$T/b" --exe "$T/tiny" --sort max)" "work helper  helper work " \
    "--sort p99: work's 995 us over helper's 991; --sort max: helper's 1000 us first"
is "$(names "$T/b" --exe "$T/tiny" --sort mean) $(names "$T/b" --exe "$T/tiny" --sort incl)" "work helper  helper work " \
    "--sort mean: 995 us over 500.5 us; --sort incl: helper's 500.5 ms first"

more() { "$CS" analyze "$T/a" --exe "$T/tiny" "$@" | tail -n 1; }
is "$(more --top 2)" "2 more functions (3.700 ms self, 7 calls); --top 0 shows all" \
    "--top 2: the other two, work and helper: 2.0 + 1.7 ms, 2 + 5 calls"
is "$(more --top 1 --sort calls)" "3 more functions (13.200 ms self, 6 calls); --top 0 shows all" \
    "--top 1 --sort calls: all but helper, 8.7 + 2.5 + 2.0 ms, 1 + 3 + 2 calls"
is "$(more --top 3)" "1 more function (1.700 ms self, 5 calls); --top 0 shows all" "one more: in the singular"
is "$("$CS" analyze "$T/a" --exe "$T/tiny" --top 4 | grep -c 'more function')" 0 "no line when every row is shown"

is "$("$CS" analyze "$T/a" --exe "$T/tiny" --sort name --format json | python3 -c 'import json, sys
print(" ".join(f["name"] or f["addr"] for f in json.load(sys.stdin)["functions"]))')" "helper main work 0x10" \
    "json rows in the --sort order too"
"$CS" analyze "$T/a" --exe "$T/tiny" --sort avg > /dev/null 2> "$T/err"
is "$? $(cat "$T/err")" "2 callsight analyze: --sort needs one of calls, self, incl, mean, max, p99, name, not 'avg'" \
    "an unknown key: usage error"
