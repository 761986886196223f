#!/usr/bin/env bash
# 241-analyze-tree.t - `analyze --format tree` (issue 38): one line per call
# path, indented by depth, with its calls and exact inclusive and self time,
# on synthetic traces whose every figure is known.  Pid 500, ns timestamps:
#   thread 500 "main":     main 0-10 ms { work 1-7 { work 2-6 { helper 3-5 {
#                          work 3.5-4 } } }  work 8-8.5 }
#   thread 501 "worker-1": work 0-1 { helper 0.2-0.5 }
#   thread 502 "worker-2": work 0-2 { helper 0.5-1.5 }
# Threads merged, the path "work" (outermost) is 2 calls of two threads:
# incl 3 ms, self 1.7; under it "helper" 2 calls, 1.3 ms.  Every path's incl
# is its self plus its children's incl, to the ns.  Also: --per-thread,
# --tree-depth, --top per node, the window (a path outside it is not shown),
# --thread, --function, losses and cut frames, [other stacks], escaped
# thread names, long names elided to fit, and usage errors.
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
plan 15

tiny_build
mkdir -p "$T/tr"
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.500.0.bin" <<S
H pid=500
N 500 main
E 0 $M 500
E 1000000 $W 500 $MS
E 2000000 $W 500 $WS
E 3000000 $H 500 $WS
E 3500000 $W 500 $((H + 8))
X 4000000 $W 500
X 5000000 $H 500
X 6000000 $W 500
X 7000000 $W 500
E 8000000 $W 500 $MS
X 8500000 $W 500
X 10000000 $M 500
S
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.501.0.bin" <<S
H pid=500
N 501 worker-1
E 0 $W 501
E 200000 $H 501 $WS
X 500000 $H 501
X 1000000 $W 501
S
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.502.0.bin" <<S
H pid=500
N 502 worker-2
E 0 $W 502
E 500000 $H 502 $WS
X 1500000 $H 502
X 2000000 $W 502
S
tree() { "$CS" analyze "$T/tr" --exe "$T/tiny" --format tree "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# the tree's rows: from the column header on
rows() { sed -n '/call path$/,$p' "$T/out"; }

tree
rows >"$T/got"
same_output "threads merged: every path's calls, incl and self exact; children by incl" "$T/got" "$T/err" <<'W'
     calls        incl_us        self_us  call path
         1      10000.000       3500.000  main
         2       6500.000       2500.000    work
         1       4000.000       2000.000      work
         1       2000.000       1500.000        helper
         1        500.000        500.000          work
         2       3000.000       1700.000  work
         2       1300.000       1300.000    helper
W
is "$(python3 "$TESTS/tools/treecheck.py" "$T/out")" "rows 7 checked 7 bad 0" \
    "incl = self + the children's incl on every path, to the ns"
is "$(head -1 "$T/out")" "events=20 threads=3 functions=3 span=0.010000s unmatched_exits=0 unclosed_enters=0 dropped=0" \
    "the header line comes first, as in the table"

tree --per-thread
rows >"$T/got"
same_output "--per-thread: one tree per thread, headed by tid and name, in order of first sight" "$T/got" "$T/err" <<'W'
     calls        incl_us        self_us  call path

thread 500 (main): 10000.000 us in 5 paths
         1      10000.000       3500.000  main
         2       6500.000       2500.000    work
         1       4000.000       2000.000      work
         1       2000.000       1500.000        helper
         1        500.000        500.000          work

thread 501 (worker-1): 1000.000 us in 2 paths
         1       1000.000        700.000  work
         1        300.000        300.000    helper

thread 502 (worker-2): 2000.000 us in 2 paths
         1       2000.000       1000.000  work
         1       1000.000       1000.000    helper
W

tree --tree-depth 2
rows >"$T/got"
same_output "--tree-depth 2: two levels, the paths below counted with their time" "$T/got" "$T/err" <<'W'
     calls        incl_us        self_us  call path
         1      10000.000       3500.000  main
         2       6500.000       2500.000    work [+3 deeper paths, 4000.000 us]
         2       3000.000       1700.000  work
         2       1300.000       1300.000    helper
W

tree --top 1 --per-thread --thread 500
rows >"$T/got"
is "$(cat "$T/got")" "     calls        incl_us        self_us  call path

thread 500 (main): 10000.000 us in 5 paths
         1      10000.000       3500.000  main
         2       6500.000       2500.000    work
         1       4000.000       2000.000      work
         1       2000.000       1500.000        helper
         1        500.000        500.000          work" "--thread 500: that thread's tree only"

# --top 1 on the merged tree: main shown, the other top-level path summed
tree --top 1
rows >"$T/got"
is "$(cat "$T/got")" "     calls        incl_us        self_us  call path
         1      10000.000       3500.000  main
         2       6500.000       2500.000    work
         1       4000.000       2000.000      work
         1       2000.000       1500.000        helper
         1        500.000        500.000          work
         2       3000.000       1700.000  ... 1 more path (--top)" "--top 1: one child per node, the rest in one line with their sums"

# The window: only work 8-8.5 starts after 7.5 ms.  main (open then) is its
# context with no calls; helper, called only before, is not there at all.
tree --since 7.5ms
rows >"$T/got"
is "$(cat "$T/got")" "     calls        incl_us        self_us  call path
         0        500.000          0.000  main
         1        500.000        500.000    work" "--since 7.5ms: the call in the window under its context, nothing else"
! grep -q helper "$T/out" && grep -q '^ *1 .*  work$' "$T/out"
ok $? "near miss: helper, whose calls all start before 7.5 ms, is not in the tree"

tree --function helper
rows >"$T/got"
is "$(cat "$T/got")" "     calls        incl_us        self_us  call path
         3       3300.000       2800.000  helper
         1        500.000        500.000    work" "--function helper: its subtree, its three calls on every thread merged"

# Losses and cut frames (tiny_trace.sh's named trace): the notes first, a
# frame without its exit counted on its path, [lost frames] for the frames
# entered while events were lost.
named_trace "$T/named"
"$CS" analyze "$T/named" --exe "$T/tiny" --format tree >"$T/out" 2>"$T/err"
rc=$?
same_output "losses: the note, cut frames counted on their path, [lost frames]" "$T/out" "$T/err" <<'W'
events=18 threads=2 functions=3 span=0.010000s unmatched_exits=0 unclosed_enters=1 dropped=3
note: pid 500: thread 501 (worker-1) lost 3 events (0 open frames cut short, 1 orphaned exits)

     calls        incl_us        self_us  call path
         1      10000.000       8700.000  main
         1       1000.000        500.000    work
         1        500.000        500.000      helper
         1        300.000        300.000    helper
         1       2000.000       1500.000  work (1 cut: no exit)
         2        800.000        800.000    helper
         0        100.000          0.000  [lost frames] (1 cut: no exit)
         1        100.000        100.000    helper
W

# Paths beyond --max-stacks: counted under [other stacks], with a note in
# the output; the calls still add up to all 10.
tree --max-stacks 4
is "$(grep -c '^note: .* calls on paths beyond --max-stacks 4 are counted under \[other stacks\]$' "$T/out") $(rows | awk 'NR > 1 { s += $1 } END { print s }') $(rows | grep -c '\[other stacks\]$') $(wc -c <"$T/err")" \
    "1 10 1 0" "--max-stacks 4: [other stacks] and a note in the output; every call counted"

# A thread name with an ESC byte reaches no terminal; a long name is elided in the
# middle so the row fits 80 columns.
long=f_$(printf 'abcdefghij%.0s' $(seq 1 20))_end
cat >"$T/long.c" <<C
int $long(int x) { return x + 1; }
int main(void) { return $long(1) - 2; }
C
cc -g -O0 -fno-pie -no-pie -o "$T/long" "$T/long.c"
L=$(nm "$T/long" | awk -v f="$long" '$3 == f { print "0x" $1 }')
LM=$(nm "$T/long" | awk '$3 == "main" { print "0x" $1 }')
mkdir -p "$T/ltr"
{ echo "H pid=600"; printf 'N 600 ev\033il\n'; echo "E 0 $LM 600"; echo "E 10 $L 600"; echo "X 20 $L 600"; echo "X 30 $LM 600"; } |
    perl "$TESTS/tools/tracegen.pl" "$T/ltr/trace.600.600.0.bin"
"$CS" analyze "$T/ltr" --exe "$T/long" --format tree --per-thread >"$T/out" 2>"$T/err"
grep -q '^thread 600 (ev?il): ' "$T/out" && ! grep -q $'\033' "$T/out"
ok $? "a thread name's control byte reaches no terminal (ev?il)"
row=$(grep "f_abcdefghij" "$T/out")
[ "${#row}" -le 80 ] && [[ "$row" == *"    f_abcdefghijabcd"*"..."*"hij_end" ]]
ok $? "a 206-character name keeps its head and tail and the row fits 80 columns: '$row'"

"$CS" analyze "$T/tr" --exe "$T/tiny" --per-thread >/dev/null 2>"$T/err"
r1=$?
"$CS" analyze "$T/tr" --exe "$T/tiny" --format tree --tree-depth 0 >/dev/null 2>"$T/err2"
r2=$?
is "$r1 $(cat "$T/err") | $r2 $(cat "$T/err2")" \
    "2 callsight analyze: --per-thread is for --format tree | 2 callsight analyze: --tree-depth needs a count from 1 to 4096, not '0'" \
    "usage errors: --per-thread without tree, --tree-depth 0"
