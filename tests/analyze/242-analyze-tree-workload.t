#!/usr/bin/env bash
# 242-analyze-tree-workload.t - `analyze --format tree` on a real traced run
# of the demo workload (examples/workload.c: 2 iterations, 3 workers,
# fib(6), sorts of 8 keys, 2x2 matrices), whose every call path's count
# follows from its parameters: fib's recursion a path per level (fib(6):
# 1, 2, 4, 8, 8, 2 calls an iteration at levels 1 to 6: 25 = 2 F(7) - 1), msort's 1, 2, 4, 8
# and merge's 1, 2, 4 under them.  Checked: every path's calls, threads
# merged and per thread; incl = self + children exactly on every path of a
# real run; the same output whatever --jobs; the depth limit's counts.
source "$(dirname "$0")/../lib/lib.sh"
plan 8

W=$B/examples/workload
P="2 3 6 8 2"
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$W" $P >/dev/null
ok $? "the workload, traced ($P)"
tree() { "$CS" analyze "$T/tr" --exe "$W" --format tree --top 0 --tree-depth 64 "$@"; }

# The paths and their calls, from the parameters: "calls path" lines.
expect() { # expect ITERS_FACTOR PREFIX MAIN(0|1)
    python3 - "$@" <<'PY'
import sys
mul, prefix, with_main = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
iters, workers, fib_n, sort_n, mat_n = 2, 3, 6, 8, 2
out = {}
def add(path, n):
    out[path] = out.get(path, 0) + n
def fib(path, n):
    add(path, 1)
    if n >= 2:
        fib(path + ";fib", n - 1)
        fib(path + ";fib", n - 2)
def msort(path, n):
    add(path, 1)
    if n >= 2:
        msort(path + ";msort", n // 2)
        msort(path + ";msort", n - n // 2)
        add(path + ";merge", 1)
w = prefix + "worker_main"
one = {}
add(w, 1)
for _ in range(iters):
    d = w + ";do_iteration"
    add(d, 1)
    fib(d + ";fib", fib_n)
    add(d + ";fill_keys", 1)
    add(d + ";fill_keys;hash_key", sort_n)
    add(d + ";sort_keys", 1)
    msort(d + ";sort_keys;msort", sort_n)
    add(d + ";matmul", 1)
    add(d + ";matmul;dot", mat_n * mat_n)
    add(d + ";nap", 1)
for p in sorted(out):
    print(out[p] * mul, p)
if with_main:
    for n, p in ((1, "main"), (5, "main;arg_int"), (1, "main;spawn_workers"), (1, "main;join_workers")):
        print(n, p)
PY
}

tree >"$T/merged" 2>"$T/err"
python3 "$TESTS/tools/treecheck.py" --paths "$T/merged" | sort -k2 >"$T/got"
expect 3 "" 1 | sort -k2 >"$T/want"
diff "$T/want" "$T/got" >"$T/diff" && [ ! -s "$T/err" ]
ok $? "threads merged: every path's calls exact ($(wc -l <"$T/want") paths; fib a path per level)" || sed 's/^/# /' "$T/diff" "$T/err"
is "$(python3 "$TESTS/tools/treecheck.py" "$T/merged" | head -1)" "rows 25 checked 25 bad 0" \
    "a real run: incl = self + the children's incl on every path, to the ns"
grep -q "^ *6 .*  *fib$" "$T/merged" && [ "$(grep -c "^ *48 .*  *fib$" "$T/merged")" = 2 ]
ok $? "fib's first level is 6 calls (3 workers x 2), its fourth and fifth 48 each"

tree --per-thread >"$T/per" 2>"$T/err"
python3 "$TESTS/tools/treecheck.py" --paths "$T/per" | sed 's/^\([0-9]*\) thread [0-9]* (\(worker-0[0-9]\))/\1 \2/' |
    grep ' worker-' | sort -k2 >"$T/got"
for k in 00 01 02; do expect 1 "worker-$k;" 0; done | sort -k2 >"$T/want"
diff "$T/want" "$T/got" >"$T/diff" && [ "$(grep -c '^thread ' "$T/per")" = 4 ] &&
    [ "$(python3 "$TESTS/tools/treecheck.py" "$T/per" | head -1)" = "rows 67 checked 67 bad 0" ]
ok $? "--per-thread: 4 trees, each worker's paths exact, the sums exact" || sed 's/^/# /' "$T/diff"
grep -A4 '^thread [0-9]* (workload): ' "$T/per" | awk 'NR > 1 { print $1, $4 }' | sort -k2 >"$T/got"
is "$(tr '\n' ' ' <"$T/got")" "5 arg_int 1 join_workers 1 main 1 spawn_workers " "the main thread's tree: main and its three callees"

tree --jobs 1 >"$T/j1"
tree --jobs 2 >"$T/j2"
grep -q 'call path$' "$T/j1" && cmp -s "$T/j1" "$T/j2" && cmp -s "$T/j1" "$T/merged"
ok $? "the same tree, byte for byte, with --jobs 1 and --jobs 2"

"$CS" analyze "$T/tr" --exe "$W" --format tree --top 0 --tree-depth 3 >"$T/d3"
is "$(grep -E '  (fib|sort_keys) \[' "$T/d3" | sed 's/^.*  \([a-z_]*\) \[+\([0-9]*\) deeper paths, .*$/\1 \2/' | sort | tr '\n' ' ')" \
    "fib 5 sort_keys 7 " "--tree-depth 3: fib's 5 deeper levels and sort_keys' 7 paths below (4 msort, 3 merge) counted on their lines"
