#!/usr/bin/env bash
# 243-analyze-replay.t - `callsight replay` (= `analyze --format replay`,
# issue 38): each thread's calls in the order they started, one line per
# call with its start from the trace's start and its duration, nested by
# indentation, on synthetic traces whose every figure is known (the
# threads of 241: main 0-10 ms { work 1-7 { work 2-6 { helper 3-5 { work
# 3.5-4 } } } work 8-8.5 }; worker-1 work 0-1 { helper 0.2-0.5 }; worker-2
# work 0-2 { helper 0.5-1.5 }).  Also: the window (a call outside it is
# not shown, and nesting counts from the calls shown), calls cut short
# marked and without a duration, losses in their place, --max-lines and
# its last line, --function, the two spellings the same, help and usage.
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
plan 13

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
replay() { "$CS" replay "$T/tr" --exe "$T/tiny" "$@" >"$T/out" 2>"$T/err"; rc=$?; }
body() { sed -n '/^thread /,$p' "$T/out"; } # from the first thread's line

replay
body >"$T/got"
same_output "every thread's calls in start order, nested, with start and duration" "$T/got" "$T/err" <<'W'
thread 500 (main): 6 calls
      start_us       dur_us  call
         0.000    10000.000  main
      1000.000     6000.000    work
      2000.000     4000.000      work
      3000.000     2000.000        helper
      3500.000      500.000          work
      8000.000      500.000    work

thread 501 (worker-1): 2 calls
      start_us       dur_us  call
         0.000     1000.000  work
       200.000      300.000    helper

thread 502 (worker-2): 2 calls
      start_us       dur_us  call
         0.000     2000.000  work
       500.000     1000.000    helper
W
is "$(head -2 "$T/out" | tr '\n' '|')" "events=20 threads=3 functions=3 span=0.010000s unmatched_exits=0 unclosed_enters=0 dropped=0||" "the header line first, as in the table"

"$CS" analyze "$T/tr" --exe "$T/tiny" --format replay >"$T/a" 2>&1 &&
    "$CS" replay "$T/tr" --exe "$T/tiny" -o "$T/o" && cmp -s "$T/a" "$T/out" && cmp -s "$T/o" "$T/out"
ok $? "callsight replay, analyze --format replay and -o FILE write the same bytes"

# The window 2.5 ms to 8 ms on main: helper (3.0), work (3.5) and work
# (8.0) start in it; main and the two works before it do not, so helper is
# outermost of what is shown.
replay --thread main --since 2.5ms --until 8ms
body >"$T/got"
same_output "--since/--until: the calls that start inside, nested among themselves" "$T/got" "$T/err" <<'W'
thread 500 (main): 3 calls
      start_us       dur_us  call
      3000.000     2000.000  helper
      3500.000      500.000    work
      8000.000      500.000  work
W
is "$(awk '$1 == "0.000" || $1 == "1000.000" || $1 == "2000.000" || $NF == "main"' "$T/got") $(grep -c '^thread 500 (main): ' "$T/got")" " 1" "near miss: main and the works at 1 and 2 ms, before the window, are not shown"
grep -q '^filter: thread=main since=0.002500s until=0.008000s: 3 of 10 calls selected$' "$T/out"
ok $? "the filter line says what was selected"

replay --function helper --thread 500
is "$(body)" "thread 500 (main): 2 calls
      start_us       dur_us  call
      3000.000     2000.000  helper
      3500.000      500.000    work" "--function helper: its calls and what they call"

replay --max-lines 2
is "$(body | grep -E '^(thread|\.\.\.)')" "thread 500 (main): 6 calls
... 4 more calls of this thread not shown (--max-lines 2)
thread 501 (worker-1): 2 calls
thread 502 (worker-2): 2 calls" "--max-lines 2: two lines a thread, then how many more there were"
is "$(body | grep -Ec '^ *[0-9]+\.[0-9]{3} ')" 6 "... and only those lines"

# Losses and frames cut short (tiny_trace.sh's named trace): worker-1's
# work 8- never returns, a placeholder stands for the frame entered while
# 3 events were lost; neither has a duration, and the loss has its line.
named_trace "$T/named"
"$CS" replay "$T/named" --exe "$T/tiny" --thread worker-1 >"$T/out" 2>"$T/err"
rc=$?
same_output "cut calls marked, without a duration; the loss in its place; the notes first" "$T/out" "$T/err" <<'W'
events=18 threads=2 functions=3 span=0.010000s unmatched_exits=0 unclosed_enters=1 dropped=3
note: pid 500: thread 501 (worker-1) lost 3 events (0 open frames cut short, 1 orphaned exits)
filter: thread=worker-1: 4 of 8 calls selected

thread 501 (worker-1): 6 calls
      start_us       dur_us  call
      5000.000     2000.000  work
      5500.000      500.000    helper
      7050.000            -  [3 events lost here]
      7000.000            -  [lost frames] (no exit in the trace)
      7100.000      100.000    helper
      8000.000            -  work (no exit in the trace)
      8100.000      300.000    helper
W

# A long name keeps its head and tail, and the row fits 80 columns.
long=f_$(printf 'abcdefghij%.0s' $(seq 1 20))_end
printf 'int %s(int x) { return x + 1; }\nint main(void) { return %s(1) - 2; }\n' "$long" "$long" >"$T/long.c"
cc -g -O0 -fno-pie -no-pie -o "$T/long" "$T/long.c"
L=$(nm "$T/long" | awk -v f="$long" '$3 == f { print "0x" $1 }')
LM=$(nm "$T/long" | awk '$3 == "main" { print "0x" $1 }')
mkdir -p "$T/ltr"
printf 'H pid=600\nE 0 %s 600\nE 10 %s 600\nX 20 %s 600\nX 30 %s 600\n' "$LM" "$L" "$L" "$LM" |
    perl "$TESTS/tools/tracegen.pl" "$T/ltr/trace.600.600.0.bin"
row=$("$CS" replay "$T/ltr" --exe "$T/long" | grep f_abcdefghij)
[ "${#row}" -le 80 ] && [[ "$row" == *"      0.010        0.010    f_abcdefghij"*"..."*"hij_end" ]]
ok $? "a 206-character name is elided in the middle; the row fits 80 columns: '$row'"

"$CS" replay --help >"$T/h" && grep -q -- '--max-lines N' "$T/h" && grep -q 'no exit in the trace' "$T/h" &&
    "$CS" analyze --help | grep -q '^  replay  ' && "$CS" analyze --help | grep -q '^  tree  ' &&
    "$CS" --help | grep -q '^  replay '
ok $? "help: callsight replay --help, analyze --help's formats, callsight --help's commands"
"$CS" analyze "$T/tr" --exe "$T/tiny" --max-lines 5 >/dev/null 2>"$T/err"
r1=$?
"$CS" replay "$T/tr" --exe "$T/tiny" --max-lines x >/dev/null 2>"$T/err2"
r2=$?
is "$r1 $(cat "$T/err") | $r2 $(cat "$T/err2")" \
    "2 callsight analyze: --max-lines is for --format replay (callsight replay) | 2 callsight replay: --max-lines needs a count (0 = all), not 'x'" \
    "usage errors: --max-lines without replay, a bad count (said by the command the user typed)"
