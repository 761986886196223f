#!/usr/bin/env bash
# 250-analyze-runs.t - file mode never removes an earlier run's files, so
# runs pile up in one directory; analyze keeps them apart (issue 38).  A run
# is one program start: the clock anchor in every file header, which a
# forked child keeps, so a program and the children it forked are one run.
# By default the newest run (by its files' times) is reported and one note
# names the others with --run PID and --all-runs; --run takes any pid of a
# run; --all-runs merges them as before; one run with a fork gets no note.
source "$(dirname "$0")/../lib/lib.sh"
plan 17
export TZ=UTC

# forker_run DIR: examples/forker traced into DIR; sets P (the parent's pid)
# and C (the child's, the other pid among the files it wrote).
forker_run() {
    local before
    before=$(ls "$1" 2>/dev/null | sed -n 's/^trace\.\([0-9]*\)\..*/\1/p' | sort -u)
    TRACE_ENABLE=1 TRACE_DIR="$1" "$B/examples/forker" > "$T/forker.out" &
    P=$!
    wait $P || diag "forker failed"
    C=$(ls "$1" | sed -n 's/^trace\.\([0-9]*\)\..*/\1/p' | sort -u | grep -v -x -e "$P" $(for b in $before; do echo "-e $b"; done))
}
# counts ARGS...: analyze $T/tr ARGS into $T/out; COUNTS "f=calls " for
# forker's functions, H its header line
counts() {
    "$CS" analyze "$T/tr" --exe "$B/examples/forker" --top 0 "$@" > "$T/out" 2> "$T/err"
    rc=$?
    H=$(head -n 1 "$T/out")
    COUNTS=$(for f in main fork_and_work child_work leaf; do echo "$f=$(calls_of $f "$T/out")"; done | tr '\n' ' ')
}
runs_note() { grep '^note: [0-9]* runs' "$T/out"; }

forker_run "$T/tr"; P1=$P C1=$C
counts
is "$rc $COUNTS$(runs_note | wc -l)" "0 main=1 fork_and_work=1 child_work=1 leaf=500 0" \
    "one run with a forked child: both processes in the report, no note about runs"

forker_run "$T/tr"; P2=$P C2=$C
diag "runs: $P1+$C1, $P2+$C2"
touch -d '2026-01-01 10:00:00' "$T"/tr/trace.$P1.* "$T"/tr/trace.$C1.*
touch -d '2026-01-01 11:00:00' "$T"/tr/trace.$P2.* "$T"/tr/trace.$C2.*

counts
is "$rc $COUNTS" "0 main=1 fork_and_work=1 child_work=1 leaf=500 " "two runs: the newest alone, exact counts"
is "$(field threads "$H") $(field unmatched_exits "$H") $(field unclosed_enters "$H")" "2 0 0" \
    "its two processes' threads, nothing unmatched"
is "$(runs_note)" "note: 2 runs in these traces (a run: one program start, with what it forked); this report is the newest, pid $P2 and 1 forked (2026-01-01 11:00:00); not in it: pid $P1 and 1 forked (2026-01-01 10:00:00); --run PID reports another, --all-runs all of them together (or remove the old trace files)" \
    "one note: which run, the other by pid and time, the options"
is "$(sed -n 2p "$T/out" | cut -c1-13)" "note: 2 runs " "the note comes first, before the per-source notes"

counts --run "$P1"
is "$rc $COUNTS$(runs_note | grep -c "this report is the one of --run, pid $P1 and 1 forked (2026-01-01 10:00:00); not in it: pid $P2 and 1 forked")" \
    "0 main=1 fork_and_work=1 child_work=1 leaf=500 1" "--run PID: the older run, said so"
counts --run "$C1"
is "$rc $COUNTS$(runs_note | grep -c "the one of --run, pid $P1 and")" "0 main=1 fork_and_work=1 child_work=1 leaf=500 1" \
    "--run takes a forked child's pid too: its program's run"

counts --all-runs
is "$rc $COUNTS$(field threads "$H")" "0 main=2 fork_and_work=2 child_work=2 leaf=1000 4" "--all-runs: both runs merged, as before"
is "$(runs_note)" "note: 2 runs merged into this report (--all-runs): pid $P1 and 1 forked (2026-01-01 10:00:00), pid $P2 and 1 forked (2026-01-01 11:00:00); --run PID reports one" \
    "--all-runs says what it merged"

# newest by the files' times, not by pid or name
touch -d '2026-01-01 12:00:00' "$T"/tr/trace.$C1.*
counts
is "$rc $(runs_note | grep -c "the newest, pid $P1 and 1 forked (2026-01-01 12:00:00)")" "0 1" \
    "the newest is the run whose files changed last"

counts --format json
python3 - "$T/out" "$P1" <<'PY'
import json, sys
notes = json.load(open(sys.argv[1]))["notes"]
sys.exit(0 if notes and notes[0].startswith("2 runs in these traces") and ("pid %s and 1 forked" % sys.argv[2]) in notes[0] else 1)
PY
ok $? "json: the same note, first in \"notes\""

counts --run 4000000000
is "$rc $(wc -l < "$T/err") $(grep -c "^callsight analyze: --run 4000000000: no run in these traces has pid 4000000000; they hold 2: pid $P1 and 1 forked" "$T/err")" \
    "1 1 1" "--run of a pid in no run: exit 1, one line naming the runs"
counts --run 12 --all-runs
is "$rc $(cat "$T/err")" "2 callsight analyze: --run and --all-runs choose differently: give one" "--run with --all-runs: usage error"
counts --run x
is "$rc $(cat "$T/err")" "2 callsight analyze: --run needs a process id, not 'x'" "--run needs a pid"

# Synthetic files whose headers share an anchor (tracegen's default 0) are
# one run, whatever their pids; another anchor is another run.
mkdir "$T/syn"
for pid in 5 6; do
    perl "$TESTS/tools/tracegen.pl" "$T/syn/trace.$pid.$pid.0.bin" <<S
H pid=$pid
E 1000 0x10 $pid
X 2000 0x10 $pid
S
done
exe="$T/exe"; cp "$(type -P true)" "$exe"
"$CS" analyze "$T/syn" --exe "$exe" > "$T/syn.out" 2>&1
is "$(field threads "$(head -1 "$T/syn.out")") $(grep -c ' runs ' "$T/syn.out")" "2 0" "one anchor, two pids: one run"
perl "$TESTS/tools/tracegen.pl" "$T/syn/trace.7.7.0.bin" <<S
H pid=7 t0n=5000
E 1000 0x10 7
X 2000 0x10 7
S
touch -d '2026-01-01 10:00:00' "$T/syn/trace.5.5.0.bin" "$T/syn/trace.6.6.0.bin"
touch -d '2026-01-01 11:00:00' "$T/syn/trace.7.7.0.bin"
"$CS" analyze "$T/syn" --exe "$exe" > "$T/syn.out" 2>&1
is "$(field threads "$(head -1 "$T/syn.out")") $(grep -o 'this report is the newest, pid [0-9]* (2026-01-01 11:00:00); not in it: pid 5 and 1 forked' "$T/syn.out" | wc -l)" \
    "1 1" "another anchor: another run, the newest reported"

# callsight run empties its directory, and reports all it traced
"$CS" run --dir "$T/tr" -- "$B/examples/forker" > "$T/run.out" 2>&1
is "$(calls_of leaf "$T/run.out") $(grep -c ' runs ' "$T/run.out")" "500 0" "callsight run: one run, no note"
exit $_failed
