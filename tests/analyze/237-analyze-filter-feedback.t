#!/usr/bin/env bash
# 237-analyze-filter-feedback.t - filters as a new user types them (issue
# 38): --thread takes a glob as TRACE_THREADS does ('worker-*'), and a
# filter that selects nothing says what there is instead of printing an
# empty table: the threads with calls by tid and name (the first 12, the
# rest counted), and the trace's span for a --since past its end.  A
# stripped --exe, whose report would be bare addresses, gets a note.
# Counts exact on the demo workload (16 iterations, 25 workers).
source "$(dirname "$0")/../lib/lib.sh"
plan 9

W=$B/examples/workload
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$W" > /dev/null
ok $? "the workload, traced"
sel() { sed -n 's/^filter: .*: \([0-9]*\) of \([0-9]*\) calls selected$/\1 \2/p' "$T/out"; }
an() { "$CS" analyze "$T/tr" --exe "$W" --top 0 "$@" > "$T/out" 2> "$T/err"; }

an --thread worker-00; read -r one all < <(sel)
an --thread 'worker-0*'; read -r g0 _ < <(sel)
an --thread 'worker-*'; read -r gall _ < <(sel)
an --thread workload; read -r main _ < <(sel)
is "$g0 $gall" "$((10 * one)) $((all - main))" \
    "globs: worker-0* is 10 workers' calls ($g0 = 10 x $one), worker-* all but the main thread's ($gall)"
an --thread 'worker-1'
is "$(sel)" "0 $all" "a near miss is no glob match: worker-1 selects nothing"
first=$(grep "^note: --thread worker-1 is none" "$T/out")
echo "$first" | grep -Eq "^note: --thread worker-1 is none of the 26 threads with calls: [0-9]+ \(workload\), [0-9]+ \(worker-00\), [0-9]+ \(worker-01\), ([0-9]+ \(worker-[0-9]+\), ){8}[0-9]+ \(worker-10\) and 14 more \(a tid or a name, as given\)$"
ok $? "and says which threads there are: the first 12 by tid and name, 14 more counted"
an --thread 'worker-*'
is "$(grep -c '^note: --thread' "$T/out")" 0 "no such note when the filter selects calls"

span=$(sed -n 's/^events=.* span=\([0-9.]*\)s .*/\1/p' "$T/out")
an --since 100
is "$(sel) $(grep -c "^note: --since 100.000000s is at or past the end of the trace: it spans $span s from its first event\$" "$T/out")" \
    "0 $all 1" "--since past the end: nothing selected, and the span said"
an --since 100 --format json -o "$T/j.json"
is "$? $(wc -c < "$T/err" | tr -d ' ')" "0 0" "JSON output is unchanged by the note (exit 0, nothing on stderr)"

# --- a stripped binary: addresses only, and a note that says why ---
strip -o "$T/stripped" "$W"
TRACE_ENABLE=1 TRACE_DIR="$T/st" "$T/stripped" > /dev/null
"$CS" analyze "$T/st" --exe "$T/stripped" --top 0 > "$T/out" 2>&1
is "$(grep -c "^note: none of the program's 15 functions has a name in --exe $T/stripped: it has no symbols (stripped?); give the binary as built, before strip\$" "$T/out")" 1 \
    "a stripped --exe: one note says why every row is an address"
an
is "$(grep -c 'has no symbols' "$T/out")" 0 "and the binary as built has none"
