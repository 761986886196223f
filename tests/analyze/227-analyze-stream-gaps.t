#!/usr/bin/env bash
# 227-analyze-stream-gaps.t - what `callsight analyze` makes of the markers
# serve writes when a stream loses records in transit (trace.h: 19 gap,
# 22 tracer vanished, 23 cut, 24 resumed) and of a disk-floor stop in a
# stream file, from synthetic stream files whose every count is known:
# dropped= adds the gaps' exact sizes to the device's ring drops (never
# twice), a gap is a hole in every thread of the stream (exits of calls
# entered in it are losses, not unmatched exits; frames exited in it are
# cut short), a cut that no resume closes is a gap of unknown size, a
# resume with 0 lost is no hole at all, and open frames of a stream whose
# tracers vanished are cut by their death, not unclosed.  The series spans
# two connections with different calibrations.  JSON, Perfetto and the
# SQLite database carry the same counts.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
. "$TESTS/lib/sqlcheck.sh"
GEN="perl $TESTS/tools/tracegen.pl"

plan 14

tiny_build
# report DIR: the first line and the notes
report() {
    "$CS" analyze "$1" --exe "$T/tiny" --top 0 >"$T/out" 2>"$T/err"
    echo "rc=$? err=$(wc -c <"$T/err")"
    grep -E '^(events=|note: )' "$T/out"
}

# Stream 1: connection 1 (ns) is cut with three threads' calls open; it
# resumes (connection 2, ticks at 2 GHz from t0 = 1 ms) after 100 records
# were lost.  The device dropped 5 events from its ring, which thread 10's
# own loss markers count again (3): dropped = max(5, 3) + 100.
mkdir "$T/s1"
$GEN "$T/s1/trace.stream.1.0.bin" <<'S'
H pid=1 seq=0
E 1000 0x100 10
E 2000 0x200 10
E 3000 0x300 10
E 4000 0x400 11
M 4500 16 3 10
M 4500 17 0x300000003 10
E 5000 0x500 10
X 6000 0x500 10
M 7000 18 5 0
M 8000 23 9 0
S
$GEN "$T/s1/trace.stream.1.1.bin" <<'S'
H pid=1 seq=1 flags=1 hz=2000000000 t0t=0 t0n=1000000
M 0 24 100 0
M 0 19 100 0
X 20000 0x600 10
X 40000 0x200 10
X 60000 0x100 10
X 80000 0x400 11
X 100000 0x700 12
E 120000 0x800 12
X 140000 0x800 12
S
report "$T/s1" >"$T/got"
is "$(cat "$T/got")" "rc=0 err=0
events=13 threads=3 functions=8 span=0.001069s unmatched_exits=0 unclosed_enters=0 dropped=105
note: stream 1: stream gap: 100 events lost in transit
note: stream 1: stream resumed 1 time(s) after its connection was cut
note: stream 1: device dropped 5 events
note: stream 1: 2 of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)
note: stream 1: thread 10 lost 3 events (1 open frames cut short, 1 orphaned exits)
note: stream 1: thread 12: at stream gaps 0 open frames cut short, 1 orphaned exits" \
    "cut, resumed, gap of 100: every exit after it explained, dropped = max(device, threads) + gap"
# The calls that completed across the gap, timed with each segment's own clock.
awk '$NF == "0x100" || $NF == "0x400" || $NF == "0x800" {print $1, $2, $NF}' "$T/out" | sort -k3 >"$T/rows"
is "$(cat "$T/rows")" "1 1.029 0x100
1 1.036 0x400
1 0.010 0x800" "calls across the gap complete; the new segment's calibration applies"

"$CS" analyze "$T/s1" --exe "$T/tiny" --format json -o "$T/s1.json" 2>"$T/err"
python3 - "$T/s1.json" >"$T/py.out" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["summary"]["dropped"] == 105 and r["summary"]["unmatched_exits"] == 0, r["summary"]
assert r["sources"] == [{"kind": "stream", "id": 1, "dropped": 105, "device_dropped": 5,
                         "thread_lost": 3, "others_lost": 0, "gap_events": 100, "gaps": 1, "gaps_unknown": 0,
                         "cuts": 1, "resumes": 1, "tracers_vanished": 0,
                         "dead_frames": 0, "tracer_ns": 0, "tracer_flushes": 0,
                         "waited_ns": 0, "waits": 0}], r["sources"]
assert "stream 1: stream gap: 100 events lost in transit" in r["notes"], r["notes"]
PY
ok $? "json: the stream's loss counts in its source" || sed 's/^/# /' "$T/py.out"
"$CS" analyze "$T/s1" --exe "$T/tiny" --format sqlite -o "$T/s1.db" 2>"$T/err"
losses_as_json "$T/s1.json" "$T/s1.db"
ok $? "sqlite: the same loss counts per source and thread, and the same notes"

# Stream 2: a cut resumed with nothing lost is no hole (an exit that does
# not match stays unmatched); a last cut that nothing resumes is a gap of
# unknown size, and thread 21's call open across it is cut short by it.
mkdir "$T/s2"
$GEN "$T/s2/trace.stream.2.0.bin" <<'S'
H pid=2 seq=0
E 1000 0x100 20
E 2000 0x200 20
M 3000 23 2 0
S
$GEN "$T/s2/trace.stream.2.1.bin" <<'S'
H pid=2 seq=1
M 4000 24 0 0
X 5000 0x200 20
X 6000 0x100 20
X 7000 0x300 20
E 8000 0x400 21
M 9000 23 6 0
S
report "$T/s2" >"$T/got"
is "$(cat "$T/got")" "rc=0 err=0
events=6 threads=2 functions=4 span=0.000007s unmatched_exits=1 unclosed_enters=0 dropped=0
note: stream 2: stream gap: 1 gap(s) of unknown size: events lost in transit, count unknown
note: stream 2: stream resumed 1 time(s) after its connection was cut
note: stream 2: thread 21: at stream gaps 1 open frames cut short, 0 orphaned exits" \
    "resumed with 0 lost: no hole; a cut never resumed: a gap of unknown size"

# Stream 3: two gaps of unknown size (payload 0), a disk-floor stop, and
# two tracer processes vanished: open frames at the end are theirs, cut
# by their death; a thread that ended with a call open is still unclosed.
mkdir "$T/s3"
$GEN "$T/s3/trace.stream.3.0.bin" <<'S'
H pid=3 seq=0
E 1000 0x100 30
E 2000 0x200 30
M 3000 19 0 0
X 4000 0x200 30
M 5000 19 0 0
E 6000 0x300 30
E 7000 0x400 31
M 8000 20 0 31
M 9000 2 1073741824 0
M 9000 22 2 0
S
report "$T/s3" >"$T/got"
is "$(cat "$T/got")" "rc=0 err=0
events=5 threads=2 functions=4 span=0.000006s unmatched_exits=0 unclosed_enters=1 dropped=0
note: stream 3: capture stopped: free disk below the floor of 1073741824 bytes
note: stream 3: stream gap: 2 gap(s) of unknown size: events lost in transit, count unknown
note: stream 3: 2 tracer process(es) vanished (killed?); their open calls were cut (2 open frames)" \
    "unsized gaps counted, disk floor reported, vanished tracers' open frames cut, not unclosed"
"$CS" analyze "$T/s3" --exe "$T/tiny" --format json -o "$T/s3.json" 2>"$T/err"
python3 - "$T/s3.json" >"$T/py.out" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["sources"][0]
want = {"dropped": 0, "device_dropped": None, "gap_events": 0, "gaps": 2, "gaps_unknown": 2,
        "cuts": 0, "resumes": 0, "tracers_vanished": 2, "dead_frames": 2}
assert all(s[k] == v for k, v in want.items()), s
PY
ok $? "json: unsized gaps, vanished tracers and their dead frames" || sed 's/^/# /' "$T/py.out"
"$CS" analyze "$T/s3" --exe "$T/tiny" --format sqlite -o "$T/s3.db" 2>"$T/err"
losses_as_json "$T/s3.json" "$T/s3.db"
ok $? "sqlite: unsized gaps, vanished tracers and dead frames as the JSON's, the same notes"

# A gap marker alone, in a stream whose device dropped nothing: dropped is
# the gap; and the same records in a local (pid) trace are unaffected.
mkdir "$T/s4"
$GEN "$T/s4/trace.stream.4.0.bin" <<'S'
H pid=4 seq=0
E 1000 0x100 40
M 2000 18 0 0
M 3000 19 42 0
X 4000 0x100 40
X 5000 0x100 40
S
report "$T/s4" >"$T/got"
is "$(sed -n 2p "$T/got")" "events=3 threads=1 functions=1 span=0.000004s unmatched_exits=0 unclosed_enters=0 dropped=42" \
    "a gap alone: dropped is its size; the second exit is an orphan, not unmatched"
is "$(grep -c 'orphaned exits' "$T/got")" 1 "... and the thread's note says so"
# Without the gap the same second exit is unmatched: the test can fail.
mkdir "$T/s5"
grep -v ' 19 ' >"$T/spec" <<'S'
H pid=5 seq=0
E 1000 0x100 40
M 3000 19 42 0
X 4000 0x100 40
X 5000 0x100 40
S
$GEN "$T/s5/trace.stream.5.0.bin" <"$T/spec"
report "$T/s5" >"$T/got"
is "$(sed -n 2p "$T/got")" "events=3 threads=1 functions=1 span=0.000004s unmatched_exits=1 unclosed_enters=0 dropped=0" \
    "no gap: the same exit is unmatched"

# Perfetto: stream-level markers are instants on the stream's track.
if command -v protoc >/dev/null 2>&1; then
    "$CS" analyze "$T/s1" --exe "$T/tiny" --format perfetto -o "$T/s1.pf" 2>"$T/err" &&
        protoc --decode=callsight_test.Trace -I "$TESTS/tools" perfetto_subset.proto <"$T/s1.pf" \
            >"$T/decoded" 2>>"$T/err" &&
        python3 "$TESTS/tools/perfetto_check.py" <"$T/decoded" >"$T/pf" 2>>"$T/err"
    ok $? "perfetto: the timeline decodes and checks" || sed 's/^/# /' "$T/err"
    grep ' I ' "$T/pf" | grep 'stream 1' >"$T/inst"
    is "$(cut -d' ' -f2- "$T/inst")" "stream 1 I device dropped 5 events in all
stream 1 I stream cut after 9 records
stream 1 I stream resumed: 100 events lost
stream 1 I stream gap: 100 events lost" "perfetto: device drops, cut, resume and gap on the stream's track"
else
    ok 1 "protoc missing: run scripts/deps.sh"
    ok 1 "protoc missing: run scripts/deps.sh"
fi
"$CS" analyze "$T/s3" --exe "$T/tiny" --format json -o /dev/null 2>"$T/err"
is "$?:$(cat "$T/err")" "0:" "analyze is quiet on stream markers"
exit $_failed
