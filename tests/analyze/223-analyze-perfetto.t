#!/usr/bin/env bash
# 223-analyze-perfetto.t - `callsight analyze --format perfetto`: the file is
# decoded by protoc against our own subset of Perfetto's protos
# (tests/tools/perfetto_subset.proto) and checked by perfetto_check.py
# (interned names first, tracks described before use, strict nesting, no
# time going backwards), then compared event by event with what the trace
# holds: slices per call, ENDs for frames cut by a loss, an unmatched exit
# or the end of data, losses and capture stops as instants, thread names
# and renames, filters.  Memory stays flat as the trace grows.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
GEN="perl $TESTS/tools/tracegen.pl"
PROTO_DIR=$TESTS/tools

plan 13

if ! command -v protoc >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
    for i in $(seq 13); do skip "protoc or python3 missing: scripts/deps.sh install failed?"; done
    exit 0
fi

tiny_build
named_trace "$T/named"

# timeline DIR ARGS...: analyze to a perfetto file, decode, check, list.
timeline() {
    local dir=$1; shift
    rm -f "$T/out.pf"
    "$CS" analyze "$dir" --exe "$T/tiny" --format perfetto -o "$T/out.pf" "$@" 2>"$T/err" &&
        protoc --decode=callsight_test.Trace -I "$PROTO_DIR" perfetto_subset.proto \
            <"$T/out.pf" >"$T/decoded" 2>>"$T/err" &&
        python3 "$TESTS/tools/perfetto_check.py" <"$T/decoded" >"$T/got" 2>>"$T/err"
}
# same WHAT < expected listing
same() {
    cat >"$T/want"
    if [ ! -s "$T/err" ] && diff "$T/want" "$T/got" >"$T/diff"; then
        ok 0 "$1"
    else
        sed 's/^/# /' "$T/err" "$T/diff"; ok 1 "$1"
    fi
}

# worker-1 from its loss on: in the whole timeline and in the --since window.
W1_FROM_LOSS=$(cat <<'R'
7050000 worker-1 I 3 events lost
7050000 worker-1 B [lost frames]
7100000 worker-1 B helper
7200000 worker-1 E
7300000 worker-1 E
8000000 worker-1 B work
8100000 worker-1 B helper
8400000 worker-1 E
8400000 worker-1 E
R
)
timeline "$T/named"
same "local files: process and named thread tracks, nested slices, a loss as an instant, ENDs for lost and unclosed frames" <<R
process 500 pid 500
thread 500 500 main
0 main B main
100000 main B work
200000 main B helper
700000 main E
1100000 main E
2000000 main B helper
2300000 main E
10000000 main E
thread 500 501 worker-1
5000000 worker-1 B work
5500000 worker-1 B helper
6000000 worker-1 E
7000000 worker-1 E
$W1_FROM_LOSS
R

protoc --decode_raw <"$T/out.pf" >"$T/raw" 2>&1 && grep -q '^1 {' "$T/raw" && [ "$(grep -c '^1 {' "$T/raw")" = 25 ]
ok $? "protoc --decode_raw reads it: 25 packets (names, 3 descriptors, 20 slice events, 1 instant)"

# Interned names come first, with the right flags, as viewers need.
python3 - "$T/decoded" >"$T/py" 2>&1 <<'PY'
import re, sys
text = open(sys.argv[1]).read()
first = text.split("\npacket {")[0]
assert "interned_data" in first and "sequence_flags: 3" in first and "first_packet_on_sequence: true" in first
names = re.findall(r'iid: (\d+)\s+name: "([^"]*)"', first)
assert sorted(n for _, n in names) == ["helper", "main", "work"], names
assert all(int(i) > 0 for i, _ in names)
assert text.count("trusted_packet_sequence_id: 1") == text.count("packet {")
print("ok")
PY
is "$(cat "$T/py")" "ok" "first packet: every name interned (iid > 0), CLEARED|NEEDS flags; every packet on sequence 1"

# A stream: an unmatched exit cuts the frames above it; a capture stop on
# the thread; device drops and a gap on the stream's own track; a rename
# describes the thread again; a time going backwards is held.
mkdir "$T/stream"
$GEN "$T/stream/trace.stream.4.0.bin" <<'S'
H pid=4
N 7 first
E 1000 0x10 7
E 2000 0x20 7
E 3000 0x30 7
X 4000 0x10 7
M 4500 1 1048576 7
N 7 second
E 5000 0x20 7
X 4800 0x20 7
M 6000 18 25 0
M 6500 19 7 0
S
timeline "$T/stream"
same "stream: cut frames end at the unmatched exit, instants on thread and stream tracks, rename, time held" <<'R'
process 1073741828 stream 4
thread 1073741828 7 first
1000 first B 0x10
2000 first B 0x20
3000 first B 0x30
4000 first E
4000 first E
4000 first E
4500 first I capture stopped: byte budget reached (1048576)
thread 1073741828 7 second
5000 second B 0x20
5000 second E
6000 stream 4 I device dropped 25 events in all
6500 stream 4 I stream gap: 7 events lost
R

timeline "$T/named" --thread worker-1 --since 7ms
same "--thread and --since: only that thread's calls that start in the window" <<R
process 500 pid 500
thread 500 501 worker-1
$W1_FROM_LOSS
R

timeline "$T/named" --function work
same "--function: only work's subtree (losses still shown)" <<'R'
process 500 pid 500
thread 500 500 main
100000 main B work
200000 main B helper
700000 main E
1100000 main E
thread 500 501 worker-1
5000000 worker-1 B work
5500000 worker-1 B helper
6000000 worker-1 E
7000000 worker-1 E
7050000 worker-1 I 3 events lost
8000000 worker-1 B work
8100000 worker-1 B helper
8400000 worker-1 E
8400000 worker-1 E
R

# Written to stdout as well, byte for byte the same.
"$CS" analyze "$T/named" --exe "$T/tiny" --format perfetto >"$T/stdout.pf" 2>"$T/err"
timeline "$T/named"
cmp -s "$T/stdout.pf" "$T/out.pf"
ok $? "to stdout (not a terminal): the same bytes as -o"

# The tracer's own time (marker 29) is a slice of its own inside the call it
# interrupted; one whose duration runs past the thread's next event (a
# hostile 2^62 ns here) ends there, and the rest of the track keeps its times.
mkdir -p "$T/flush"
$GEN "$T/flush/trace.500.500.0.bin" <<S
H pid=500
N 500 main
E 0 $M 500
M 100000 29 50000 500
E 200000 $W 500 $MS
M 300000 29 0x4000000000000000 500
X 400000 $W 500
X 1000000 $M 500
S
timeline "$T/flush"
same "tracer time: [callsight flush] slices, the hostile one cut at the next event" <<'R'
process 500 pid 500
thread 500 500 main
0 main B main
100000 main B [callsight flush]
150000 main E
200000 main B work
300000 main B [callsight flush]
400000 main E
400000 main E
1000000 main E
R

# Memory does not grow with the trace: 8x the events, the same peak RSS
# (within 2 MB); the events go to a temporary file, not to memory.
bigtrace() { # bigtrace DIR ITERATIONS: a 4-deep call tree, ITERATIONS times
    mkdir -p "$1"
    perl -e 'open(my $o, ">:raw", $ARGV[0]) or die; my ($n) = $ARGV[1];
        print $o pack("a8 L< L< L< L< Q< Q< Q< Q< Q< L< L< Q<", "MLTRACE", 2, 32, 80, 0, 0, 0, 0, 0, 0, 7, 0, 0);
        my ($t, $buf) = (0, "");
        for my $i (1..$n) { my $f = ($i % 50) * 0x1000;
            $buf .= pack("Q< Q< Q< L< C x3", $t++, $f + 0x10 * $_, 0x99, 7, 0) for 1..4;
            $buf .= pack("Q< Q< Q< L< C x3", $t++, $f + 0x10 * $_, 0, 7, 1) for reverse 1..4;
            if (length($buf) > 1 << 20) { print $o $buf; $buf = "" } }
        print $o $buf; close $o or die' "$1/trace.7.7.0.bin" "$2"
}
maxrss() { # maxrss ARGS...: run callsight, print the peak RSS in KiB
    python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else "failed")' "$@"
}
bigtrace "$T/small" 50000
bigtrace "$T/big" 400000
small=$(maxrss "$CS" analyze "$T/small" --exe "$T/tiny" --format perfetto -o "$T/small.pf")
big=$(maxrss "$CS" analyze "$T/big" --exe "$T/tiny" --format perfetto -o "$T/big.pf")
diag "peak RSS: 400k events ${small} KiB, 3.2M events ${big} KiB"
[ "$small" != failed ] && [ "$big" != failed ] && [ $((big - small)) -lt 2048 ]
ok $? "perfetto: peak memory the same for 400k and 3.2M events"
for fmt in text json; do
    small=$(maxrss "$CS" analyze "$T/small" --exe "$T/tiny" --format $fmt -o "$T/small.$fmt")
    big=$(maxrss "$CS" analyze "$T/big" --exe "$T/tiny" --format $fmt -o "$T/big.$fmt")
    diag "$fmt: peak RSS: 400k events ${small} KiB, 3.2M events ${big} KiB"
    [ "$small" != failed ] && [ "$big" != failed ] && [ $((big - small)) -lt 2048 ]
    ok $? "$fmt: peak memory the same for 400k and 3.2M events"
done
bigtrace "$T/medium" 5000
timeline "$T/medium"
awk '$(NF - 1) == "B" { b++ } $NF == "E" { e++ } END { print b, e }' "$T/got" >"$T/be"
is "$(cat "$T/be")" "20000 20000" "a longer timeline decodes and checks: 20000 slices, all closed"

rm -f "$T/tty.pf"
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "$CS analyze $T/named --exe $T/tiny --format perfetto" /dev/null >"$T/tty.out" 2>&1
    grep -q "a perfetto trace is binary: give -o FILE or redirect stdout" "$T/tty.out"
    ok $? "binary output is not written to a terminal"
else
    skip "script(1) cannot run a terminal here (util-linux, /dev/pts)"
fi
