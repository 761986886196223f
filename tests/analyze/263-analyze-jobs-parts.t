#!/usr/bin/env bash
# 263-analyze-jobs-parts.t - `callsight analyze --jobs N` on one series (a
# stream's one connection) cuts it into N parts read at once and merges
# them into exactly what one pass gives: calls open across the cuts (a
# recursion whose frames return in a later part and is entered again
# there, tracer time excluded across a cut), unmatched exits, unclosed
# enters, a thread exit marker for a thread the part never saw, a thread
# new in a later part, its name.  Every format's output and the
# diagnostics are byte-identical for --jobs 1, 2, 3, 5 and 9, the times
# are the ones worked out by hand, and CALLSIGHT_JOBS_STATS shows the parts
# were merged, not read again.  A part stops before what it cannot carry
# over (a stream gap, a trigger) and the pass reads on from there, with
# what the parts before said of each thread (an exit marker forgets its
# last exit, so a later trigger of it is not kept); parts after a gap
# are read again; a partial last record is reported once; the fuzz corpus,
# each file a one-series stream, gives the same with 1, 3 and 5 jobs.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
GEN="perl $TESTS/tools/tracegen.pl"

plan 13

tiny_build

# same_jobs DIR ARGS...: every format, --jobs 1, 2, 3, 5, 9: the same stdout,
# stderr and exit status; "same" and the text report's first line, or the
# format/jobs pairs that differ.
same_jobs() {
    local dir=$1 diff="" f j
    shift
    for f in text json folded callers perfetto; do
        for j in 1 2 3 5 9; do
            "$CS" analyze "$dir" --exe "$T/tiny" --format "$f" --jobs $j "$@" >"$T/o.$j" 2>"$T/e.$j"
            echo "rc=$?" >>"$T/e.$j"
        done
        for j in 2 3 5 9; do
            cmp -s "$T/o.1" "$T/o.$j" && cmp -s "$T/e.1" "$T/e.$j" || diff="$diff $f/$j"
        done
    done
    [ -z "$diff" ] && echo "same $("$CS" analyze "$dir" --exe "$T/tiny" --jobs 1 "$@" 2>/dev/null | head -n 1)" ||
        echo "differ:$diff"
}

stats() {
    local dir=$1
    shift
    CALLSIGHT_JOBS_STATS=1 "$CS" analyze "$dir" --exe "$T/tiny" "$@" 2>&1 >/dev/null | sed -n 's/.*: jobs /jobs /p'
}

# One connection, 20 records.  Thread 10: main, work entered three deep
# (recursion), 20 ns of tracer time while two work frames and main are
# open, the innermost returns, then the second, then work entered again
# under the first (nested in it), then the first returns; helper left
# open at the end.  Thread 11: two helper calls, then its exit marker.
# Thread 12: an exit with nothing open, an enter never closed.
# By hand: main 1 call, incl 2000 - 20 = 1980, self 1980 - 880 = 1100;
# work 4 calls of 100, 600 - 20, 50, 900 - 20: incl (outermost only) 880,
# self 100 + 480 + 50 + 250 = 880, max 880; helper 2 calls, 700 and 700.
spec() {
    cat <<S
H pid=1 seq=0
N 10 main
E 1000 $M 10
E 1100 $W 10 $MS
E 1200 $W 10 $WS
M 1250 29 20 10
E 1300 $H 11 $WS
E 1400 $W 10 $WS
X 1500 $W 10
X 1600 $H 11
E 1700 $H 11 $WS
X 1800 $W 10
E 1850 $W 10 $WS
X 1900 $W 10
X 2000 $W 10
X 2100 $H 11
X 2200 $H 12
E 2300 $H 12 $WS
M 2400 20 0 11
X 3000 $M 10
E 3100 $H 10 $MS
S
}
mkdir "$T/one"
spec | $GEN "$T/one/trace.stream.1.0.bin"
got=$(same_jobs "$T/one" --top 0)
is "$got" "same events=17 threads=3 functions=3 span=0.000002s unmatched_exits=1 unclosed_enters=2 dropped=0" \
    "one series: every format the same with 1, 2, 3, 5, 9 jobs"
is "$(stats "$T/one" --jobs 5) / $(stats "$T/one" --jobs 9)" "jobs 5, merged 4, read again 0 / jobs 9, merged 8, read again 0" \
    "one series: the parts were merged, none read again"
"$CS" analyze "$T/one" --exe "$T/tiny" --format json --jobs 9 >"$T/j9" 2>&1
is "$(sed -n 's/.*"name": "\([a-z]*\)", "file".*"calls": \([0-9]*\), "incl_ns": \([0-9]*\), "self_ns": \([0-9]*\), .*"max_ns": \([0-9]*\)}.*/\1 \2 \3 \4 \5/p' "$T/j9")" \
"main 1 1980 1100 1980
work 4 880 880 880
helper 2 700 700 400" "9 jobs: the times worked out by hand (recursion across cuts counted once, tracer time out)"
is "$(sed -n 's/.*"tid": \([0-9]*\), "pid": null, "name": \([a-z"]*\), .*"events": \([0-9]*\), "calls": \([0-9]*\), "self_ns": \([0-9]*\).*/\1 \2 \3 \4 \5/p' "$T/j9")" \
'10 "main" 11 5 1980
11 null 4 2 700
12 null 2 0 0' "9 jobs: each thread's events, calls and self time"
is "$(stats "$T/one" --format folded --jobs 5)" "jobs 1, merged 0, read again 0" \
    "folded (a calling-context tree): one series is one job"

# A stream gap in the last third: the part that meets it stops there and
# the pass reads on; a partial record at the end is said once.
mkdir "$T/gap"
{ spec | sed '/^X 2200 /i M 2150 19 5 0'; } | $GEN "$T/gap/trace.stream.1.0.bin"
head -c 7 /dev/zero >>"$T/gap/trace.stream.1.0.bin"
got=$(same_jobs "$T/gap" --top 0)
case $got in "same events=17 "*"dropped=5") ok 0 "a gap and a partial record: the same" ;;
    *) ok 1 "a gap and a partial record: the same ($got)" ;; esac
is "$(stats "$T/gap" --jobs 3)" "jobs 3, merged 2, read again 0" "the part that meets the gap stops there, merged"
is "$(grep -c 'truncated: partial last record' "$T/e.9")" "1" "the partial record is said once"

# A gap in the first part: every stack after it has a hole, so the parts
# after it are read again (and the result is still one pass').
mkdir "$T/gap1"
{ spec | sed '/^E 1200 /i M 1150 19 0 0'; } | $GEN "$T/gap1/trace.stream.1.0.bin"
got=$(same_jobs "$T/gap1" --top 0)
case $got in "same events=17 "*) ok 0 "a gap in the first part: the same" ;;
    *) ok 1 "a gap in the first part: the same ($got)" ;; esac
is "$(stats "$T/gap1" --jobs 3)" "jobs 3, merged 0, read again 2" "parts after a gap are read again"

# Thread 10's exit marker in a part that saw nothing else of it, then a
# trigger of thread 10 that the pass reads itself (a part stops at it):
# one pass forgot the thread's last exit at the marker, so there is no
# slow call to keep.
mkdir "$T/trig"
$GEN "$T/trig/trace.stream.1.0.bin" <<S
H pid=1 seq=0
E 1000 $M 10
E 1100 $W 10 $MS
X 1200 $W 10
E 1300 $H 11 $WS
X 1400 $H 11
E 1500 $H 11 $WS
X 1600 $H 11
M 1700 20 0 10
E 1800 $H 11 $WS
X 1900 $H 11
M 2000 32 5000 10
E 2100 $H 11 $WS
X 2200 $H 11
S
got=$(same_jobs "$T/trig" --top 0)
case $got in "same events=11 threads=2 "*) ok 0 "an exit marker, then a trigger: the same" ;;
    *) ok 1 "an exit marker, then a trigger: the same ($got)" ;; esac
is "$(stats "$T/trig" --jobs 3), $("$CS" analyze "$T/trig" --exe "$T/tiny" --format json --jobs 3 | grep -c '"triggers": \[\],')" \
    "jobs 3, merged 2, read again 0, 1" "3 jobs: merged, and the trigger after the exit marker is not kept"

# The fuzz corpus, each file one series of its own.
n=0 diff=""
for f in "$TESTS"/../fuzz/corpus/analyze/*; do
    n=$((n + 1))
    mkdir "$T/fz$n"
    cp "$f" "$T/fz$n/trace.stream.1.0.bin"
    for fmt in text json; do
        for j in 1 3 5; do
            "$CS" analyze "$T/fz$n" --exe "$T/tiny" --force --format $fmt --top 0 --jobs $j >"$T/o.$j" 2>"$T/e.$j"
            echo "rc=$?" >>"$T/e.$j"
        done
        for j in 3 5; do cmp -s "$T/o.1" "$T/o.$j" && cmp -s "$T/e.1" "$T/e.$j" || diff="$diff $n/$fmt/$j"; done
    done
done
is "$n files:$diff" "$(ls "$TESTS"/../fuzz/corpus/analyze | wc -l) files:" "the fuzz corpus, each file one series: the same with 1, 3, 5 jobs"
