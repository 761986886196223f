#!/usr/bin/env bash
# 226-analyze-workload-formats.t - every format on a real traced run of the
# demo workload, whose call counts are exact: the counts in JSON, the call
# sites, the timeline and the flame graph; totals that agree exactly across
# text, json and folded; filters on a real program; and `diff` gating a
# second run on exact call counts.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/workload_expect.sh"
WL=$B/examples/workload

plan 12

PARAMS="3 4 10 32 4" # iters workers fib_n sort_n mat_n
TRACE_ENABLE=1 TRACE_DIR="$T/run1" "$WL" $PARAMS >/dev/null &&
    TRACE_ENABLE=1 TRACE_DIR="$T/run2" "$WL" $PARAMS >/dev/null &&
    TRACE_ENABLE=1 TRACE_DIR="$T/run3" "$WL" 4 4 10 32 4 >/dev/null
ok $? "three traced runs of the workload"
expect_counts $PARAMS | sort >"$T/expect"

an() { "$CS" analyze "$T/run1" --exe "$WL" --top 0 "$@"; }
an >"$T/text" 2>"$T/err.text"
an --format json -o "$T/json" 2>"$T/err.json"
an --format folded -o "$T/folded" 2>"$T/err.folded"
an --format callers --top 0 -o "$T/callers" 2>"$T/err.callers"
an --format svg -o "$T/svg" 2>"$T/err.svg"
an --format perfetto -o "$T/pf" 2>"$T/err.pf"
[ ! -s "$T/err.text" ] && [ ! -s "$T/err.json" ] && [ ! -s "$T/err.folded" ] &&
    [ ! -s "$T/err.callers" ] && [ ! -s "$T/err.svg" ] && [ ! -s "$T/err.pf" ]
ok $? "all six formats written, nothing on stderr"

python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
for f in r["functions"]:
    print(f["name"], f["calls"])' "$T/json" | sort >"$T/got"
diff "$T/expect" "$T/got" >"$T/diff"
ok $? "json: every function's call count is the exact expected one" || sed 's/^/# /' "$T/diff"

python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
print(s["threads"], len(r["threads"]), s["unmatched_exits"], s["unclosed_enters"], s["dropped"],
      s["calls"] == s["calls_selected"] == sum(f["calls"] for f in r["functions"]),
      all(f["min_ns"] <= f["p50_ns"] <= f["p90_ns"] <= f["p99_ns"] <= f["max_ns"] for f in r["functions"]))' \
    "$T/json" >"$T/got"
is "$(cat "$T/got")" "5 5 0 0 0 True True" "json: 5 threads listed, no loss, calls add up, percentiles ordered"

json_self=$(python3 -c 'import json,sys; print(sum(f["self_ns"] for f in json.load(open(sys.argv[1]))["functions"]))' "$T/json")
folded_self=$(awk '{ s += $NF } END { printf "%d", s }' "$T/folded")
python3 - "$T/json" "$T/text" >"$T/rows" 2>&1 <<'PY'
import json, sys
rows = {f["name"]: f for f in json.load(open(sys.argv[1]))["functions"]}
bad = 0
from math import floor, log10
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
def est(v, most):  # report.c: 3 significant digits (4 from 1000 to 1999), at most `most` decimals
    if v <= 0:
        return "0"
    mag = floor(log10(v)); dec = (4 if v / 10 ** mag < 2 else 3) - 1 - mag
    if dec < 0:
        v = floor(v / 10 ** -dec + 0.5) * 10 ** -dec; dec = 0
    dec = min(dec, most); t = "%.*f" % (dec, v)
    if dec > 0 and float(t) > 0 and floor(log10(float(t))) > mag:
        dec -= 1; t = "%.*f" % (dec, v)
    return t
def call(ns, exact):  # one call's time: ns, us, ms or s, at most 4 digits before the point
    u = "ns"
    for w in ("us", "ms", "s"):
        if ns >= 1e4 * scale[u]:
            u = w
    v = ns / scale[u]
    return ("%.*f" % (0 if u == "ns" else 3, v) if exact else est(v, 0 if u == "ns" else 3)) + u
table = open(sys.argv[2]).read().split("\n\n", 1)[1].splitlines()
head = table[0].split()
unit = [scale.get(h.rsplit("_", 1)[-1], 1) for h in head[:3]]
total = sum(f["self_ns"] for f in rows.values())
for line in table[1:]:
    v = line.split()
    f = rows[v[9]]
    got = v[:9]
    want = ["%d" % f["calls"], "%.3f" % (f["incl_ns"] / unit[1]), "%.3f" % (f["self_ns"] / unit[2]),
            "%.1f" % (100.0 * f["self_ns"] / total), None, call(f["min_ns"], True), None, None,
            call(f["max_ns"], True)]
    ok = all(w is None or g == w for g, w in zip(got, want))
    mu = scale[got[4].lstrip("0123456789.")]  # the mean is exact, to its last digit
    ok = ok and abs(float(got[4].rstrip("nums")) * mu - f["mean_ns"]) <= 1 + mu / 2000
    for i, k in ((6, "p50_ns"), (7, "p99_ns")):  # percentiles: exact, or estimates to their digits
        ok = ok and got[i] in (call(f[k], True), call(f[k], False))
    if head[:9] != ["calls", head[1], head[2], "self%", "mean", "min", "p50", "p99", "max"] or not ok:
        bad += 1
        print("# text", v[:10], "json", want, f)
print("rows", len(rows), "bad", bad)
PY
[ "$json_self" = "$folded_self" ] && [ "$json_self" -gt 0 ] && [ "$(tail -1 "$T/rows")" = "rows 15 bad 0" ]
ok $? "totals agree: json self sum = folded sum = $json_self ns; each text row is the json row, in its column's unit, percentiles to their digits" ||
    { diag "json $json_self folded $folded_self"; sed 's/^/# /' "$T/rows"; }

per=$((3 * 4))
got=$(awk '/-> hash_key/ { h += $1 } /-> dot/ { d += $1 } /do_iteration .*-> fib/ { f += $1 } /-> worker_main/ { w += $1 }
           END { print h, d, f, w }' "$T/callers")
is "$got" "$((per * 32)) $((per * 16)) $per 4" "callers: exact calls from fill_keys, matmul, do_iteration, and into worker_main"
grep -q '^ *[0-9]* .* fill_keys (workload.c:[0-9]*) -> hash_key (workload.c:[0-9]*)$' "$T/callers"
ok $? "callers: call sites named by function and file:line"

if command -v protoc >/dev/null 2>&1; then
    protoc --decode=callsight_test.Trace -I "$TESTS/tools" perfetto_subset.proto <"$T/pf" |
        python3 "$TESTS/tools/perfetto_check.py" >"$T/timeline" 2>"$T/err"
    total=$(awk '{ s += $2 } END { print s }' "$T/expect")
    [ ! -s "$T/err" ] && [ "$(awk '$(NF - 1) == "B"' "$T/timeline" | wc -l)" = "$total" ] &&
        [ "$(grep -c '^thread ' "$T/timeline")" = 5 ]
    ok $? "perfetto: valid, 5 thread tracks, one slice per call ($total)" || sed 's/^/# /' "$T/err"
else
    skip "protoc missing: scripts/deps.sh install failed?"
fi

python3 -c 'import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
g = ET.parse(sys.argv[1]).getroot().find(".//" + NS + "g[@id=\"frames\"]")
names = set(f.attrib["data-n"] for f in g)
print(int(g[0].attrib["data-w"]), sorted(n for n in names if n in ("fib", "merge", "nap", "worker_main")))' "$T/svg" >"$T/got"
is "$(cat "$T/got")" "$json_self ['fib', 'merge', 'nap', 'worker_main']" "svg: the root is as wide as all self time; the functions are there"

# Filters on the real program.
# A worker: any thread but the main one (tid == pid; tids may wrap below it).
tid=$(python3 -c 'import json,sys
print([t["tid"] for t in json.load(open(sys.argv[1]))["threads"] if t["tid"] != t["source_id"]][1])' "$T/json")
an --thread "$tid" --function do_iteration --format json | python3 -c 'import json, sys
r = json.load(sys.stdin)
print(" ".join("%s=%d" % (f["name"], f["calls"]) for f in sorted(r["functions"], key=lambda f: f["name"]) if f["name"] in ("do_iteration", "fib", "worker_main", "main")))' >"$T/got"
a=0 b=1
for ((i = 0; i < 11; i++)); do t=$((a + b)); a=$b; b=$t; done
is "$(cat "$T/got")" "do_iteration=3 fib=$((3 * (2 * a - 1)))" "--thread TID --function do_iteration: one worker's 3 iterations and their fib calls"

"$CS" analyze "$T/run2" --exe "$WL" --format json -o "$T/json2" &&
    "$CS" analyze "$T/run3" --exe "$WL" --format json -o "$T/json3"
"$CS" diff "$T/json" "$T/json2" --key calls --fail-over 0 >"$T/d12"; rc12=$?
"$CS" diff "$T/json" "$T/json3" --key calls --fail-over 10 >"$T/d13"; rc13=$?
is "$rc12 $(head -1 "$T/d12")" "0 diff: key=calls functions=15 changed=0 regressed=0 (over 0%)" \
    "diff of two identical runs on exact calls: no change, exit 0"
is "$rc13 $(head -1 "$T/d13")" "1 diff: key=calls functions=15 changed=10 regressed=10 (over 10%)" \
    "diff against a run with 4 iterations instead of 3: +33% on 10 functions, exit 1"
