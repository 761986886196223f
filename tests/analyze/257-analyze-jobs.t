#!/usr/bin/env bash
# 257-analyze-jobs.t - `callsight analyze --jobs N` reads the series on N
# threads and merges them into exactly what one pass gives: every format's
# output and the diagnostics are byte-identical for --jobs 1, 2 and 3, on
# the workload's per-thread files (many series of one process), on serve
# stream files of several connections with gaps, a cut, device drops and
# notes, on per-thread files with losses, and with caps reached (--max-funcs
# so [other] appears, --max-threads, --max-stacks).  CALLSIGHT_JOBS_STATS
# shows that the parallel path was taken (jobs merged) where nothing
# crosses the cut, and that a job is read again where it cannot be merged
# (a cap; a process's bias set by an earlier job and used by a later one
# before its own marker).  Bad --jobs values are one-line usage errors.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
GEN="perl $TESTS/tools/tracegen.pl"
WL=$B/examples/workload

plan 19

tiny_build

# same_jobs DIR EXE ARGS...: for each format, --jobs 1, 2 and 3 give the
# same stdout, stderr and exit status; prints the formats that differ, or
# "same" with the text report's first line (so an empty report fails).
same_jobs() {
    local dir=$1 exe=$2 diff="" f j
    shift 2
    for f in text json folded svg callers perfetto; do
        for j in 1 2 3; do
            "$CS" analyze "$dir" --exe "$exe" --format "$f" --jobs $j "$@" >"$T/o.$j" 2>"$T/e.$j"
            echo "rc=$?" >>"$T/e.$j"
        done
        for j in 2 3; do
            cmp -s "$T/o.1" "$T/o.$j" && cmp -s "$T/e.1" "$T/e.$j" || diff="$diff $f/$j"
        done
    done
    [ -z "$diff" ] && echo "same $("$CS" analyze "$dir" --exe "$exe" --jobs 1 "$@" 2>&1 | head -n 1)" ||
        echo "differ:$diff"
}

# stats DIR EXE ARGS...: how the jobs went, from CALLSIGHT_JOBS_STATS.
stats() {
    local dir=$1 exe=$2
    shift 2
    CALLSIGHT_JOBS_STATS=1 "$CS" analyze "$dir" --exe "$exe" "$@" 2>&1 >/dev/null | sed -n 's/.*: jobs /jobs /p'
}

# The workload: 26 per-thread series of one process, counts known.
TRACE_ENABLE=1 TRACE_DIR="$T/files" "$WL" 4 25 12 64 8 >/dev/null || echo "Bail out! workload failed"
got=$(same_jobs "$T/files" "$WL" --top 0)
case $got in "same events="*" threads=26 "*) ok 0 "workload files: every format the same with 1, 2, 3 jobs" ;;
    *) ok 1 "workload files: every format the same with 1, 2, 3 jobs ($got)" ;; esac
is "$(stats "$T/files" "$WL" --jobs 3)" "jobs 3, merged 2, read again 0" "workload files: both other jobs merged"
n=$(ls "$T/files" | wc -l)
is "$(stats "$T/files" "$WL" --jobs 256)" "jobs $n, merged $((n - 1)), read again 0" "one job per series at most"
is "$(stats "$T/files" "$WL" --format perfetto -o "$T/p.pftrace")" "jobs 1, merged 0, read again 0" \
    "perfetto: one job (its timeline is written during the pass)"

# Caps: [other] functions, threads beyond the cap, stacks beyond the tree's.
got=$(same_jobs "$T/files" "$WL" --top 0 --max-funcs 3)
case $got in "same events="*" functions=4 "*) ok 0 "--max-funcs 3: the same, [other] included" ;;
    *) ok 1 "--max-funcs 3: the same ($got)" ;; esac
is "$(stats "$T/files" "$WL" --jobs 3 --max-funcs 3)" "jobs 3, merged 0, read again 2" \
    "--max-funcs 3: the jobs beyond the first are read again"
got=$(same_jobs "$T/files" "$WL" --top 0 --max-threads 5)
case $got in "same events="*" threads=5 "*) ok 0 "--max-threads 5: the same" ;;
    *) ok 1 "--max-threads 5: the same ($got)" ;; esac
is "$(stats "$T/files" "$WL" --jobs 2 --max-threads 5)" "jobs 2, merged 0, read again 1" \
    "--max-threads 5: the second job is read again"
is "$(same_jobs "$T/files" "$WL" --max-stacks 20 | cut -c1-4)" "same" "--max-stacks 20: the same"

# Three connections: gaps, a cut never resumed, device drops, a thread's
# losses (and a resync no loss can explain), names; stream 2 has two
# segments.
mkdir "$T/streams"
$GEN "$T/streams/trace.stream.1.0.bin" <<S
H pid=1 seq=0
N 10 main
E 1000 $M 10
E 2000 $W 10 $MS
M 2500 16 3 10
M 2500 17 0x100000002 10
X 3000 $W 10
E 3100 $H 11 $WS
X 3200 $H 11
M 4000 18 7 0
X 9000 $M 10
S
$GEN "$T/streams/trace.stream.2.0.bin" <<S
H pid=2 seq=0
E 1000 $M 20
E 1500 $W 20 $MS
M 2000 19 40 0
X 2100 $H 20
X 2500 $W 20
S
$GEN "$T/streams/trace.stream.2.1.bin" <<S
H pid=2 seq=1
E 3000 $H 21 $WS
X 3300 $H 21
X 5000 $M 20
S
$GEN "$T/streams/trace.stream.3.0.bin" <<S
H pid=3 seq=0
E 1000 $W 30 $MS
E 1200 $H 30 $WS
X 1300 $H 30
M 1400 23 4 0
S
got=$(same_jobs "$T/streams" "$T/tiny" --top 0)
case $got in "same events=16 threads=5 "*) ok 0 "three connections with gaps: the same" ;;
    *) ok 1 "three connections with gaps: the same ($got)" ;; esac
is "$(stats "$T/streams" "$T/tiny" --jobs 3)" "jobs 3, merged 2, read again 0" "three connections: merged"
"$CS" analyze "$T/streams" --exe "$T/tiny" --jobs 3 --top 0 >"$T/s3" 2>&1
is "$(grep '^note: ' "$T/s3")" "note: stream 1: device dropped 7 events
note: stream 1: 4 of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)
note: stream 1: thread 10 (main) lost 3 events (0 open frames cut short, 0 orphaned exits)
note: stream 1: thread 10 (main): 1 resync markers claimed depths its lost events cannot reach (damaged or hostile): taken as holes of unknown shape
note: stream 2: stream gap: 40 events lost in transit
note: stream 2: thread 20: at stream gaps 0 open frames cut short, 1 orphaned exits
note: stream 3: stream gap: 1 gap(s) of unknown size: events lost in transit, count unknown
note: stream 3: thread 30: at stream gaps 1 open frames cut short, 0 orphaned exits" "3 jobs: the three streams' notes, in order"

# Per-thread files with losses and names (tiny_trace.sh), and a process
# whose load bias thread 700's series sets and thread 701's uses: the
# second job cannot know it, so it is read again.
named_trace "$T/named"
$GEN "$T/named/trace.700.700.0.bin" <<S
H pid=700
M 0 28 0 700
E 1000 $M 700
X 2000 $M 700
S
$GEN "$T/named/trace.700.701.0.bin" <<S
H pid=700
E 1000 $W 701 $MS
X 3000 $W 701
S
got=$(same_jobs "$T/named" "$T/tiny" --top 0)
case $got in "same events="*) ok 0 "per-thread files with losses: the same" ;;
    *) ok 1 "per-thread files with losses: the same ($got)" ;; esac
is "$(stats "$T/named" "$T/tiny" --jobs 4)" "jobs 4, merged 2, read again 1" \
    "the job that used a bias an earlier one set is read again"

# The fuzz corpus (damaged and hostile traces) as the series of one
# process and as many connections: the same whatever the jobs, whether
# they merge or are read again.
mkdir "$T/fz-local" "$T/fz-stream"
i=0
for f in "$TESTS"/../fuzz/corpus/analyze/*; do
    i=$((i + 1))
    cp "$f" "$T/fz-local/trace.900.$((1000 + i)).0.bin"
    cp "$f" "$T/fz-stream/trace.stream.$i.0.bin"
done
for d in fz-local fz-stream; do
    diff=""
    for f in text json folded callers; do
        for j in 1 2 5; do
            "$CS" analyze "$T/$d" --exe "$T/tiny" --force --format "$f" --jobs $j >"$T/o.$j" 2>"$T/e.$j"
            echo "rc=$?" >>"$T/e.$j"
        done
        for j in 2 5; do cmp -s "$T/o.1" "$T/o.$j" && cmp -s "$T/e.1" "$T/e.$j" || diff="$diff $f/$j"; done
    done
    is "$i corpus files,$diff $(tail -n 1 "$T/e.1")" "$i corpus files, rc=0" "$d: the fuzz corpus gives the same with 1, 2, 5 jobs"
done

# --jobs values: one line each, exit 2.
for v in 0 junk 257; do
    "$CS" analyze "$T/files" --exe "$WL" --jobs "$v" >"$T/out" 2>"$T/err"
    rc=$?
    is "rc=$rc $(cat "$T/err")" "rc=2 callsight analyze: --jobs needs a count from 1 to 256, not '$v'" "--jobs $v refused"
done
