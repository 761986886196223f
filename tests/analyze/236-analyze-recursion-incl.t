#!/usr/bin/env bash
# 236-analyze-recursion-incl.t - a recursive function's inclusive time is
# the time under it, counted once (issue 38: fib showed 2.228 ms inclusive
# where 0.283 ms was spent under it, every frame's time added again).
#
# One thread, ns timestamps, every figure known:
#   main 0-10 ms {
#     work 1-7 {                      outermost work: 6 ms
#       work 2-6 {                    direct recursion: nested
#         helper 3-5 {
#           work 3.5-4 } } }          through helper: nested
#     work 8-8.5 }                    outermost work: 0.5 ms
# work: 4 calls, under it 6.5 ms (summing frames: 11 ms), self
# 2+2+0.5+0.5 = 5 ms, max 6 ms; helper 2 ms (self 1.5); main 10 (self 3.5).
# Every view says the same: text, JSON, callers (the recursive sites add
# no inclusive time), top, and the folded stacks (whose lines with work in
# them sum to the 6.5 ms).
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
plan 9

tiny_build
mkdir -p "$T/tr"
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.500.0.bin" <<S
H pid=500
N 500 main
E 0 $M 500
E 1000000 $W 500 $MS
E 2000000 $W 500 $WS
E 3000000 $H 500 $((W + 12))
E 3500000 $W 500 $((H + 8))
X 4000000 $W 500
X 5000000 $H 500
X 6000000 $W 500
X 7000000 $W 500
E 8000000 $W 500 $MS
X 8500000 $W 500
X 10000000 $M 500
S

"$CS" analyze "$T/tr" --exe "$T/tiny" >"$T/text"
is "$?:$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 ~ /^(work|main|helper)$/ { print $10, $1, $2, $3, $9 }' "$T/text")" "0:work 4 6.500 5.000 6000.000us
main 1 10.000 3.500 10.000ms
helper 1 2.000 1.500 2000.000us" "text: work's 4 calls have 6.5 ms under them, not the 11 ms of its frames; self and max per call (10,000 us is 10.000ms)"

"$CS" analyze "$T/tr" --exe "$T/tiny" --format json >"$T/json"
is "$?:$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(" ".join("%s=%d/%d/%d/%d/%d" % (f["name"], f["calls"], f["incl_ns"], f["self_ns"], f["min_ns"], f["max_ns"]) for f in r["functions"]))' "$T/json")" \
   "0:work=4/6500000/5000000/500000/6000000 main=1/10000000/3500000/10000000/10000000 helper=1/2000000/1500000/2000000/2000000" \
   "json: the same incl_ns, self_ns, min and max"

"$CS" analyze "$T/tr" --exe "$T/tiny" --format callers >"$T/callers"
is "$?:$(sed -n 's/ (tiny\.c:[0-9]*)//g; /call site/d; /->/p' "$T/callers" | awk '{ print $1, $2, $3, $4, $5, $6 }')" "0:1 10.000 3.500 0x0 -> main
2 6.500 2.500 main -> work
1 2.000 1.500 work -> helper
1 0.000 0.500 helper -> work
1 0.000 2.000 work -> work" "callers: main's calls of work carry the 6.5 ms; the recursive sites none"

"$CS" analyze "$T/tr" --exe "$T/tiny" --format folded >"$T/folded"
is "$?:$(awk '/;work( |;)/ { s += $NF } END { print s }' "$T/folded")" "0:6500000" \
   "folded: the stacks with work in them hold 6.5 ms"
is "$(awk '{ s += $NF } END { print s }' "$T/folded")" "10000000" "folded: 10 ms in all, each ns once"
"$CS" analyze "$T/tr" --exe "$T/tiny" --format svg -o "$T/flame.svg"
# the widths (ns) of the boxes named work with no work below them, and of the widest box
is "$?:$(python3 -c 'import re, sys
boxes = re.findall(r"<g class=\"f\" data-x=\"\d+\" data-w=\"(\d+)\" data-d=\"(\d+)\" data-fill=\"[^\"]*\" data-n=\"([^\"]*)\"", open(sys.argv[1]).read())
path, under, top = [], 0, 0
for w, d, n in boxes:
    del path[int(d):]
    if n == "work" and "work" not in path:
        under += int(w)
    path.append(n)
    top = max(top, int(w))
print(under, top)' "$T/flame.svg")" "0:6500000 10000000" "svg: the boxes of work's outermost frames are 6.5 ms wide in all, of 10 ms"

"$CS" top "$T/tr" --once --exe "$T/tiny" >"$T/top"
is "$?:$(awk '$8 ~ /^(work|main|helper)$/ { print $8, $1, $3, $4, $6 }' "$T/top")" "0:work 4 5.000 6.500 6000.000
main 1 3.500 10.000 10000.000
helper 1 1.500 2.000 2000.000" "top: the same calls, self, inclusive and longest call"

# A function that is not recursive keeps every call's inclusive time, and
# two calls side by side are two outermost calls: helper twice under main.
mkdir -p "$T/flat"
perl "$TESTS/tools/tracegen.pl" "$T/flat/trace.500.500.0.bin" <<S
H pid=500
E 0 $M 500
E 1000 $H 500 $MS
X 3000 $H 500
E 5000 $H 500 $MS
X 9000 $H 500
X 10000 $M 500
S
"$CS" analyze "$T/flat" --exe "$T/tiny" --format json >"$T/fjson"
is "$?:$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(" ".join("%s=%d/%d/%d" % (f["name"], f["calls"], f["incl_ns"], f["self_ns"]) for f in r["functions"]))' "$T/fjson")" \
   "0:helper=2/6000/6000 main=1/10000/4000" "calls side by side: each counts"

# A function open below a hole (one event lost: the depth stayed at 1 and
# rose to 2, a placeholder frame) is still seen: work inside work across
# the placeholder is nested, not counted twice.
mkdir -p "$T/hole"
perl "$TESTS/tools/tracegen.pl" "$T/hole/trace.500.500.0.bin" <<S
H pid=500
E 0 $W 500
M 100 16 1 500
M 100 17 0x200000001 500
E 200 $W 500 $WS
X 300 $W 500
X 400 $W 500
X 1000 $W 500
S
"$CS" analyze "$T/hole" --exe "$T/tiny" --format json >"$T/hjson"
is "$?:$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(" ".join("%s=%d/%d" % (f["name"], f["calls"], f["incl_ns"]) for f in r["functions"]))' "$T/hjson")" \
   "0:work=2/1000" "recursion across a lost-event placeholder: the outer work's 1000 ns, once"
