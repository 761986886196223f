#!/usr/bin/env bash
# 264-analyze-mean-rounding.t - a function's mean is the same figure in
# every output: the text report rounds it to the nearest ns, and so do the
# JSON (which callsight ui shows), the database and the sort by mean
# (halves up; it used to be truncated there: 1.5 ns was 1 in the JSON and
# 2 in the text).  tiny's work has 2 calls of 1 and 2 ns (mean 1.5: 2),
# helper 3 calls of 1, 1 and 2 ns (1.333: 1).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"

plan 4

tiny_build
mkdir -p "$T/tr"
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.500.0.bin" <<S
H pid=500
E 0 $W 500
X 1 $W 500
E 10 $W 500
X 12 $W 500
E 20 $H 500
X 21 $H 500
E 30 $H 500
X 31 $H 500
E 40 $H 500
X 42 $H 500
S
"$CS" analyze "$T/tr" --exe "$T/tiny" --format json -o "$T/r.json" 2>"$T/err"
is "$(json_rows() { perl -0ne 'while (/"name": "(\w+)".*?"calls": (\d+).*?"mean_ns": (\d+)/sg) { print "$1:$2:$3 " }' "$1"; }; json_rows "$T/r.json")" \
    "helper:3:1 work:2:2 " "the JSON: work's mean 1.5 ns is 2, helper's 1.333 is 1"
"$CS" analyze "$T/tr" --exe "$T/tiny" >"$T/r.txt" 2>>"$T/err"
is "$(awk '$10 == "work" || $10 == "helper" { print $10 ":" $5 }' "$T/r.txt" | sort | tr '\n' ' ')" "helper:1ns work:2ns " \
    "the text report's mean column says the same"
"$CS" analyze "$T/tr" --exe "$T/tiny" --format sqlite -o "$T/r.db" 2>>"$T/err"
is "$("$CS" sql "$T/r.db" --csv 'SELECT name, mean_ns FROM func_stats ORDER BY name' | tr '\n' ' ')" \
    "name,mean_ns helper,1 work,2 " "and the database's func_stats"
is "$(cat "$T/err")" "" "nothing on stderr"
