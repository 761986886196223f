#!/usr/bin/env bash
# 222-analyze-formats.t - `callsight analyze --format` on a synthetic trace
# whose every number is known: the text table, JSON (read back by python3's
# json parser, every field checked), folded stacks, the call-site table;
# thread names from the in-band marker (also through a big-endian file);
# totals that agree exactly across text, json and folded; every filter
# (--thread by tid and name, --since/--until, --function by name and
# address) on every format; and option errors.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
GEN="perl $TESTS/tools/tracegen.pl"

plan 24

tiny_build
named_trace "$T/named"

# run NAME ARGS...: analyze the named trace; stdout in $T/NAME, rc in $rc
run() {
    local name=$1; shift
    "$CS" analyze "$T/named" --exe "$T/tiny" "$@" >"$T/$name" 2>"$T/$name.err"
    rc=$?
}
# same WHAT FILE < expected: exit 0, nothing on stderr, FILE exactly this
same() { same_output "$1" "$2" "$2.err"; }
HEAD="events=18 threads=2 functions=3 span=0.010000s unmatched_exits=0 unclosed_enters=1 dropped=3
note: pid 500: thread 501 (worker-1) lost 3 events (0 open frames cut short, 1 orphaned exits)"

run text
same "text: thread named in the loss note; table as always" "$T/text" <<R
$HEAD

calls  incl_ms  self_ms  self%        mean         min         p50         p99         max  function (file:line)
    1   10.000    8.700   70.2    10.000ms    10.000ms    10.000ms    10.000ms    10.000ms  main (tiny.c:4)
    2    3.000    2.000   16.1  1500.000us  1000.000us  1000.000us  2000.000us  2000.000us  work (tiny.c:3)
    5    1.700    1.700   13.7   340.000us   100.000us       299us   500.000us   500.000us  helper (tiny.c:2)
R

run folded --format folded
same "folded: thread roots by name and tid, self ns per stack, lost frames" "$T/folded" <<'R'
thread 500 (main);main 8700000
thread 500 (main);main;helper 300000
thread 500 (main);main;work 500000
thread 500 (main);main;work;helper 500000
thread 501 (worker-1);work 1500000
thread 501 (worker-1);work;helper 800000
thread 501 (worker-1);[lost frames];helper 100000
R

run callers --format callers
same "callers: call sites resolved in the same addr2line batch, by inclusive time" "$T/callers" <<R
$HEAD

     calls      incl_ms      self_ms  call site -> function
         1       10.000        8.700  0x0 -> main (tiny.c:4)
         2        3.000        2.000  main (tiny.c:4) -> work (tiny.c:3)
         4        1.400        1.400  work (tiny.c:3) -> helper (tiny.c:2)
         1        0.300        0.300  main (tiny.c:4) -> helper (tiny.c:2)
R
run callers1 --format callers --top 1
[ "$(sed -n '5,$p' "$T/callers1" | wc -l)" = 1 ] && grep -q '^ *1 .*-> main' "$T/callers1"
ok $? "callers: --top 1 keeps the hottest site"

# JSON, checked by python3's parser, field by field.
run json --format json
python3 - "$T/json" "$T/tiny.c" >"$T/py.out" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
src = sys.argv[2]
assert r["format"] == "callsight-analysis" and r["version"] == 1 and r["title"] == "tiny", r
assert r["summary"] == {"events": 18, "threads": 2, "functions": 3, "span_ns": 10000000,
    "unmatched_exits": 0, "unclosed_enters": 1, "dropped": 3, "calls": 8,
    "calls_selected": 8}, r["summary"]
assert r["filter"] is None
assert r["notes"] == ["pid 500: thread 501 (worker-1) lost 3 events "
                      "(0 open frames cut short, 1 orphaned exits)"], r["notes"]
assert r["sources"] == [{"kind": "pid", "id": 500, "dropped": 3, "device_dropped": None,
                         "thread_lost": 3, "others_lost": 0, "gap_events": 0, "gaps": 0, "gaps_unknown": 0,
                         "cuts": 0, "resumes": 0, "tracers_vanished": 0,
                         "dead_frames": 0, "tracer_ns": 0, "tracer_flushes": 0,
                         "waited_ns": 0, "waits": 0}], r["sources"]
assert r["threads"] == [{"source": "pid", "source_id": 500, "tid": 500, "pid": 500, "name": "main", "lost": 0,
                         "events": 8, "calls": 4, "self_ns": 10000000, "span_ns": 10000000},
    {"source": "pid", "source_id": 500, "tid": 501, "pid": 500, "name": "worker-1", "lost": 3,
     "events": 10, "calls": 4, "self_ns": 2400000, "span_ns": 3400000}], r["threads"]
rows = {f["name"]: f for f in r["functions"]}
assert [f["name"] for f in r["functions"]] == ["main", "work", "helper"]
want = {"main": (4, 1, 10000000, 8700000, 10000000, 10000000, 10000000, 10000000, 10000000, 10000000),
        "work": (3, 2, 3000000, 2000000, 1000000, 1500000, 1000000, 2000000, 2000000, 2000000),
        "helper": (2, 5, 1700000, 1700000, 100000, 340000, 299008, 500000, 500000, 500000)}
keys = ("line", "calls", "incl_ns", "self_ns", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")
for name, vals in want.items():
    got = tuple(rows[name][k] for k in keys)
    assert got == vals, (name, got)
    assert rows[name]["file"] == src and rows[name]["addr"].startswith("0x"), rows[name]
    assert rows[name]["binary"] == "tiny", rows[name]
print("json ok")
PY
[ "$rc" = 0 ] && [ "$(cat "$T/py.out")" = "json ok" ]
ok $? "json: python3 parses it; header, notes, sources, threads, every row exact" || sed 's/^/# /' "$T/py.out"

# Totals: self time adds up exactly (ns) in json and folded, and the text
# table shows the same numbers.
json_self=$(python3 -c 'import json,sys; print(sum(f["self_ns"] for f in json.load(open(sys.argv[1]))["functions"]))' "$T/json")
folded_self=$(awk '{ s += $NF } END { print s }' "$T/folded")
text_self=$(awk 'NR > 4 { s += $3 * 1000000 } END { printf "%d", s }' "$T/text")
is "$json_self/$folded_self/$text_self" "12400000/12400000/12400000" "totals agree: json = folded = text = 12.4 ms of self time"

# The name survives a big-endian file (packed so byte swapping keeps it).
mkdir "$T/be"
$GEN "$T/be/trace.9.9.0.bin" <<S
H pid=9 flags=4
N 9 big-endian-thr
E 0 $W 9 $MS
X 1000 $W 9
S
"$CS" analyze "$T/be" --exe "$T/tiny" --format folded >"$T/be.out" 2>&1
is "$(cat "$T/be.out")" "thread 9 (big-endian-thr);work 1000" "thread name from a big-endian file"

# A name of exactly 16 bytes (no NUL) and a renamed thread: the latest wins.
mkdir "$T/rename"
$GEN "$T/rename/trace.stream.3.0.bin" <<S
H pid=3
N 7 sixteen-bytes-ab
E 0 $W 7
X 10 $W 7
N 7 renamed
E 20 $H 7
X 30 $H 7
S
"$CS" analyze "$T/rename" --exe "$T/tiny" --format json >"$T/rename.json" 2>&1
python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["threads"]; print(t[0]["name"])' "$T/rename.json" >"$T/rename.out" 2>&1
"$CS" analyze "$T/rename" --exe "$T/tiny" --format folded --thread sixteen-bytes-ab >"$T/rename16" 2>&1
is "$(cat "$T/rename.out")/$(cat "$T/rename16")" "renamed/thread 7 (renamed);work 10" \
    "16-byte name read whole; --thread NAME selects from the marker on; the latest name labels"

# ---- filters ----
run thread_name --thread worker-1
same "--thread NAME: only that thread's calls; header and notes still all input" "$T/thread_name" <<R
$HEAD
filter: thread=worker-1: 4 of 8 calls selected

calls  incl_ms  self_ms  self%        mean         min         p50         p99         max  function (file:line)
    1    2.000    1.500   62.5  2000.000us  2000.000us  2000.000us  2000.000us  2000.000us  work (tiny.c:3)
    3    0.900    0.900   37.5   300.000us   100.000us       299us   500.000us   500.000us  helper (tiny.c:2)
R

run thread_tid --thread 500 --format folded
same "--thread TID on folded" "$T/thread_tid" <<'R'
thread 500 (main);main 8700000
thread 500 (main);main;helper 300000
thread 500 (main);main;work 500000
thread 500 (main);main;work;helper 500000
R

run window --since 5ms --until 7.15ms
same "--since/--until: calls that start in the window, whole; bounds inclusive" "$T/window" <<R
$HEAD
filter: since=0.005000s until=0.007150s: 3 of 8 calls selected

calls  incl_ms  self_ms  self%        mean         min         p50         p99         max  function (file:line)
    1    2.000    1.500   71.4  2000.000us  2000.000us  2000.000us  2000.000us  2000.000us  work (tiny.c:3)
    2    0.600    0.600   28.6   300.000us   100.000us   100.000us   500.000us   500.000us  helper (tiny.c:2)
R

run window_units --since 0.005 --until 7150us --format folded
same "--since in seconds (no unit), --until in us; folded keeps the callers above" "$T/window_units" <<'R'
thread 501 (worker-1);work 1500000
thread 501 (worker-1);work;helper 500000
thread 501 (worker-1);[lost frames];helper 100000
R

run window_ns --since 8000000ns --format callers
sed -n '3p;6,$p' "$T/window_ns" >"$T/window_ns.rows"; cp "$T/window_ns.err" "$T/window_ns.rows.err"
same "--since in ns on callers" "$T/window_ns.rows" <<'R'
filter: since=0.008000s: 1 of 8 calls selected
         1        0.300        0.300  work (tiny.c:3) -> helper (tiny.c:2)
R

run func --function work
same "--function NAME: its calls and their callees only" "$T/func" <<R
$HEAD
filter: function=work: 5 of 8 calls selected

calls  incl_ms  self_ms  self%        mean         min         p50         p99         max  function (file:line)
    2    3.000    2.000   60.6  1500.000us  1000.000us  1000.000us  2000.000us  2000.000us  work (tiny.c:3)
    3    1.300    1.300   39.4   433.333us   300.000us       500us   500.000us   500.000us  helper (tiny.c:2)
R

run func_folded --function work --format folded
same "--function on folded: stacks start at the function" "$T/func_folded" <<'R'
thread 500 (main);work 500000
thread 500 (main);work;helper 500000
thread 501 (worker-1);work 1500000
thread 501 (worker-1);work;helper 800000
R

run func_static --function helper --format folded
same "--function of a static function (nm's symbol table)" "$T/func_static" <<'R'
thread 500 (main);helper 800000
thread 501 (worker-1);helper 900000
R

run func_addr --function "$W" --format folded
cmp -s "$T/func_addr" "$T/func_folded"
ok $? "--function 0xADDR is the same as by name"

run combo --format json --thread worker-1 --function work --since 6ms
python3 - "$T/combo" >"$T/py.out" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["filter"] == {"thread": "worker-1", "since_ns": 6000000, "until_ns": None,
                       "function": "work"}, r["filter"]
assert r["summary"]["calls_selected"] == 1 and r["summary"]["events"] == 18, r["summary"]
assert [(f["name"], f["calls"], f["self_ns"]) for f in r["functions"]] == [("helper", 1, 300000)], r["functions"]
print("ok")
PY
is "$(cat "$T/py.out")" "ok" "filters combine; json records them and keeps only rows with calls"

run nosuch --thread nosuch --format folded
is "$rc/$(wc -c <"$T/nosuch")" "0/0" "a thread filter that matches nothing: empty output, exit 0"

# ---- errors ----
err_is() { # err_is RC PATTERN WHAT ARGS...
    local want=$1 pat=$2 what=$3; shift 3
    "$CS" analyze "$T/named" --exe "$T/tiny" "$@" >"$T/e.out" 2>"$T/e.err"
    local got=$?
    if [ "$got" = "$want" ] && [ "$(wc -l <"$T/e.err")" = 1 ] && grep -q -- "$pat" "$T/e.err" && [ ! -s "$T/e.out" ]; then
        ok 0 "$what"
    else
        diag "rc=$got: $(cat "$T/e.err")"; ok 1 "$what"
    fi
}
err_is 2 "^callsight analyze: --format needs one of text, json" "unknown --format: usage error" --format xml
err_is 2 "^callsight analyze: --since needs a time" "bad --since: usage error" --since 5xs
err_is 2 "^callsight analyze: --until is before --since" "--until before --since: usage error" --since 2ms --until 1ms
err_is 1 "^callsight analyze: --function: no function named 'nosuch' in" "--function not in the binary: error" --function nosuch
err_is 1 "^callsight analyze: -o $T/nodir/x: No such file or directory" "-o into a missing directory: error" -o "$T/nodir/x"
