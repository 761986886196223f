#!/usr/bin/env bash
# 244-analyze-replay-stream.t - `callsight replay` where threads come
# interleaved: a stream file holds every thread of its connection, so each
# thread's calls are picked out of one series (issue 38).  A synthetic
# stream whose every figure is known, with a gap of 4 records in transit
# (a line in each thread's place, the calls across it as the pass repairs
# them), then the demo workload streamed through serve and file mode:
# every worker's replay has its exact number of calls (1 + 2 iterations x
# 54), in start order, each nested at most one deeper than the line before.
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
plan 6

tiny_build
mkdir -p "$T/s1"
perl "$TESTS/tools/tracegen.pl" "$T/s1/trace.stream.1.0.bin" <<S
H pid=1 seq=0
N 10 alpha
N 11 beta
E 1000 $M 10
E 2000 $W 11
E 3000 $W 10 $MS
E 4000 $H 11 $WS
X 5000 $H 11
X 6000 $W 10
X 7000 $W 11
E 8000 $H 10 $MS
M 8500 19 4 0
X 9000 $H 10
E 10000 $W 11
X 11000 $W 11
X 12000 $M 10
S
"$CS" replay "$T/s1" --exe "$T/tiny" >"$T/out" 2>"$T/err"
rc=$?
same_output "one stream, two threads interleaved: each thread's calls apart, the gap in each" "$T/out" "$T/err" <<'W'
events=12 threads=2 functions=3 span=0.000011s unmatched_exits=0 unclosed_enters=0 dropped=4
note: stream 1: stream gap: 4 events lost in transit

thread 10 (alpha): 3 calls
      start_us       dur_us  call
         0.000       11.000  main
         2.000        3.000    work
         7.000        1.000    helper
         7.500            -      [stream gap: 4 records lost here]

thread 11 (beta): 3 calls
      start_us       dur_us  call
         1.000        5.000  work
         3.000        1.000    helper
         7.500            -  [stream gap: 4 records lost here]
         9.000        1.000  work
W

W=$B/examples/workload
P="2 3 5 8 2" # 15 fib, 8 hash_key, 15 msort, 7 merge, 4 dot and 5 more an iteration: 54
stream_through "$T/st" /cs-test-replay-$$ "$W" $P
TRACE_ENABLE=1 TRACE_DIR="$T/fm" "$W" $P >/dev/null
ok $? "the workload streamed through serve and traced to files"

# check REPLAY: "thread-name calls lines ordered nested" per thread, sorted
check() {
    python3 - "$1" <<'PY'
import sys
sec, out = None, []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("thread "):
        name = line.split("(")[1].split(")")[0]
        sec = [name, int(line.split(": ")[1].split()[0]), [], True, True]
        out.append(sec)
        continue
    if sec is None or not line[:14].strip().replace(".", "").isdigit():
        continue
    start = int(line[:14].strip().replace(".", ""))
    depth = (len(line[29:]) - len(line[29:].lstrip(" "))) // 2
    if sec[2] and (start < sec[2][-1][0] or depth > sec[2][-1][1] + 1):
        sec[3] = False
    if sec[2] == [] and depth != 0 or line.endswith("(no exit in the trace)"):
        sec[4] = False
    sec[2].append((start, depth))
for s in sorted(out):
    print(s[0], s[1], len(s[2]), "ordered" if s[3] else "DISORDERED", "whole" if s[4] else "CUT")
PY
}
want="worker-00 109 109 ordered whole
worker-01 109 109 ordered whole
worker-02 109 109 ordered whole
workload 8 8 ordered whole"
"$CS" replay "$T/st" --exe "$W" --max-lines 0 >"$T/st.out" 2>"$T/err"
is "$? $(check "$T/st.out")" "0 $want" "streamed: every thread's calls, exact, in start order, nested one level at a time"
grep -q '^events=.* unclosed_enters=0 dropped=0$' "$T/st.out"
ok $? "... with nothing lost or cut"
"$CS" replay "$T/fm" --exe "$W" --max-lines 0 >"$T/fm.out" 2>"$T/err"
is "$? $(check "$T/fm.out")" "0 $want" "file mode: the same counts and order"

# Within one worker, the first lines are its calls in the program's order.
awk '/^thread .*\(worker-00\)/ { on = 1; next } on && NF >= 3 && $1 ~ /^[0-9]/ { print $NF; if (++n == 6) exit }' "$T/st.out" >"$T/first"
is "$(tr '\n' ' ' <"$T/first")" "worker_main do_iteration fib fib fib fib " \
    "a worker's first calls: worker_main, do_iteration, then fib's recursion"
