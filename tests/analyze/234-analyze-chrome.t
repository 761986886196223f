#!/usr/bin/env bash
# 234-analyze-chrome.t - `callsight analyze --format chrome` (issue 30):
# Chrome's trace-event JSON.  Perfetto's trace_processor is not available
# offline here, so the gate is tests/tools/chrome_check.py: the bytes are
# UTF-8 and strict JSON in the object form, every event well formed, ts and
# dur whole ns written as us, complete events of a thread in the order they
# start (callers first: viewers keep events of one start time in file
# order) and strictly nested in that order, every pid and thread named by
# metadata.  Then exact values: one X event
# per call of examples/workload (tests/lib/workload_expect.sh), the tiny
# traces' every event, loss as counters and instants, frames without their
# exit closed at the thread's latest time and said so, a hostile thread
# name escaped, and memory the same for a 10x larger trace.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/workload_expect.sh"
. "$TESTS/lib/tiny_trace.sh"
GEN="perl $TESTS/tools/tracegen.pl"
WL=$B/examples/workload
CHECK="python3 $TESTS/tools/chrome_check.py"

plan 21

# okd STATUS DESCRIPTION FILES...: ok, and the files as diagnostics when it failed.
okd() {
    local rc=$1 what=$2
    shift 2
    ok "$rc" "$what"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$@"
}

# calls_in LISTING: "function count" per function of its whole complete
# events, sorted, and "[cut] N" if any are cut; the tracer's own flushes
# ([callsight flush], whenever a batch went out) are not calls.
calls_in() {
    awk '$1 == "X" && $7 != "[callsight" && $6 == "whole" { n[$7]++ }
         $1 == "X" && $7 != "[callsight" && $6 == "cut" { cut++ }
         END { for (f in n) print f, n[f]; if (cut) print "[cut]", cut }' "$1" | sort
}

PARAMS="3 4 10 32 4" # iters workers fib_n sort_n mat_n
TRACE_ENABLE=1 TRACE_DIR="$T/wl" "$WL" $PARAMS >/dev/null
ok $? "a traced run of the workload"
expect_counts $PARAMS | sort >"$T/expect"
pid=$(ls "$T/wl" | sed -n 's/^trace\.\([0-9]*\)\..*/\1/p' | head -n 1)

"$CS" analyze "$T/wl" --exe "$WL" --format chrome -o "$T/wl.json" 2>"$T/wl.err"
is "$? $(wc -c <"$T/wl.err")" "0 0" "analyze --format chrome: exit 0, nothing on stderr"

$CHECK "$T/wl.json" >"$T/wl.list" 2>"$T/wl.check"
okd $? "the workload's document checks: strict JSON, UTF-8, whole-ns times, strict nesting, every thread named" "$T/wl.check"

calls_in "$T/wl.list" >"$T/got"
diff "$T/expect" "$T/got" >"$T/diff"
okd $? "one complete event per call of each function, exactly the workload's counts; none cut" "$T/diff"

# (pid, tid, name) of each: the tids are the runtime's, the names the workload's
awk '$1 == "M" { n = $0; sub(/^M [^ ]+ [^ ]+ [^ ]+ /, "", n)
                print $2, $3, ($4 == $3 || $4 == 0 ? "self" : "other"), n }' "$T/wl.list" >"$T/got"
cat >"$T/want" <<M
process_name $pid self "pid $pid"
thread_name $pid self "workload"
thread_name $pid other "worker-00"
thread_name $pid other "worker-01"
thread_name $pid other "worker-02"
thread_name $pid other "worker-03"
M
diff "$T/want" "$T/got" >"$T/diff"
okd $? "metadata: the process named pid $pid, its 5 threads by the names the runtime recorded" "$T/diff"

"$CS" analyze "$T/wl" --exe "$WL" --top 0 >"$T/wl.txt" 2>&1
h=$(head -n 1 "$T/wl.txt")
total=$(awk '{ s += $2 } END { print s }' "$T/expect")
python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))["otherData"]
print(o["tool"], o["events"], o["threads"], o["functions"], o["dropped"], o["unclosed_enters"],
      o["calls"], o["slices"], o["cut_slices"])' "$T/wl.json" >"$T/got"
is "$(cat "$T/got")" "callsight $(field events "$h") 5 15 0 0 $total $total 0" \
    "otherData: the header's counts (events, threads, functions, dropped), $total calls and slices, none cut"

# The same workload streamed (shm ring, trace_stream, serve): the same
# calls, under the process the runtime announced in the stream.
SHM=/cs-test-chrome-$$
track_shm "$SHM"
stream_workload "$B/trace_stream"
wait_serve_closed 1
stop_serve
"$CS" analyze "$T/stream" --exe "$WL" --format chrome -o "$T/st.json" 2>"$T/st.err" &&
    $CHECK "$T/st.json" >"$T/st.list" 2>>"$T/st.err"
rc=$?
calls_in "$T/st.list" >"$T/got"
[ $rc = 0 ] && [ ! -s "$T/st.err" ] && diff "$T/expect" "$T/got" >"$T/diff"
okd $? "streamed: the document checks, one complete event per call, exactly the counts; none cut" \
    "$T/st.err" "$T/diff"
grep -c '^M thread_name ' "$T/st.list" >"$T/got"
grep -E '^M process_name [0-9]+ 0 "pid [0-9]+ \(stream [0-9]+\)"$' "$T/st.list" | wc -l >>"$T/got"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["otherData"]; print(o["dropped"], o["cut_slices"])' \
    "$T/st.json" >>"$T/got"
is "$(echo $(cat "$T/got"))" "5 1 0 0" "streamed: 5 threads, the process as pid P (stream N), nothing dropped or cut"

# The tiny trace: every event, exactly (tiny_trace.sh has the story).
tiny_build
named_trace "$T/named"
"$CS" analyze "$T/named" --exe "$T/tiny" --format chrome -o "$T/named.json" 2>"$T/err" &&
    $CHECK "$T/named.json" >"$T/got" 2>>"$T/err"
cat >"$T/want" <<'L'
M process_name 500 0 "pid 500"
M thread_name 500 500 "main"
M thread_name 500 501 "worker-1"
C 500 0 0.000 events=0 dropped
C 500 0 10000.000 events=3 dropped
X 500 500 0.000 10000.000 whole main
X 500 500 100.000 1000.000 whole work
X 500 500 200.000 500.000 whole helper
X 500 500 2000.000 300.000 whole helper
X 500 501 5000.000 2000.000 whole work
X 500 501 5500.000 500.000 whole helper
i 500 501 7050.000 t 3 events lost
C 500 501 7050.000 events=3 tid 501 lost
X 500 501 7050.000 250.000 cut [lost frames]
X 500 501 7100.000 100.000 whole helper
X 500 501 8000.000 400.000 cut work
X 500 501 8100.000 300.000 whole helper
L
diff "$T/want" "$T/got" >"$T/diff" && [ ! -s "$T/err" ]
okd $? "tiny trace: names, calls in us with exact ns, the loss as an instant and counters, cut frames marked" "$T/err" "$T/diff"

python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))["otherData"]
print(o["unclosed_enters"], o["dropped"], o["slices"], o["cut_slices"])
for n in o["notes"]: print(n)' "$T/named.json" >"$T/got"
cat >"$T/want" <<'N'
1 3 10 2
pid 500: thread 501 (worker-1) lost 3 events (0 open frames cut short, 1 orphaned exits)
2 slices have no exit in the trace (open at the end, cut by a loss or an unmatched exit): each closes at its thread's latest time, with args.cut
N
diff "$T/want" "$T/got" >"$T/diff"
okd $? "otherData says what was cut and lost, with the analysis' notes" "$T/diff"

# A stream: device drops and a gap as counters on the stream's process, a
# capture stop on the thread, an unmatched exit cutting frames, a time
# going backwards held, a rename (the latest name is the thread's).
mkdir "$T/synth"
$GEN "$T/synth/trace.stream.4.0.bin" <<'S'
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
M 6600 18 40 0
S
"$CS" analyze "$T/synth" --exe "$T/tiny" --format chrome -o "$T/synth.json" 2>"$T/err" &&
    $CHECK "$T/synth.json" >"$T/got" 2>>"$T/err"
cat >"$T/want" <<'L'
M process_name 1073741828 0 "stream 4"
M thread_name 1073741828 7 "second"
C 1073741828 0 1.000 events=0 dropped
C 1073741828 0 5.000 events=47 dropped
X 1073741828 7 1.000 3.000 whole 0x10
X 1073741828 7 2.000 2.000 cut 0x20
X 1073741828 7 3.000 1.000 cut 0x30
i 1073741828 7 4.500 t capture stopped: byte budget reached (1048576)
X 1073741828 7 5.000 0.000 whole 0x20
i 1073741828 0 6.000 p device dropped 25 events in all
C 1073741828 0 6.000 events=25 device dropped
C 1073741828 0 6.500 events=7 stream gaps lost
i 1073741828 0 6.500 p stream gap: 7 events lost
i 1073741828 0 6.600 p device dropped 40 events in all
C 1073741828 0 6.600 events=40 device dropped
L
diff "$T/want" "$T/got" >"$T/diff" && [ ! -s "$T/err" ]
okd $? "stream: device drops and gap losses as counters and instants, dropped total, cut frames, time held" "$T/err" "$T/diff"

# Hostile names: a function whose symbol holds a quote, a backslash, ESC, a
# control byte, DEL and bytes that are not UTF-8, on a thread whose name
# holds a quote and a backslash (the analysis makes its other bytes '?').
# The document stays strict JSON and UTF-8 with no raw control byte, and
# the names read back exactly, the bytes that are not UTF-8 as \xNN.
mkdir "$T/hostile"
BAD='q\"b\\'$'\e\001\x7f\xff\xfe''x' # as the assembler's quoted symbol name
printf '\t.text\n\t.globl "%s"\n\t.type "%s", @function\n"%s":\n\tret\n\t.section .note.GNU-stack,"",@progbits\n' \
    "$BAD" "$BAD" "$BAD" >"$T/hostile/bad.s"
echo 'int main(void) { return 0; }' >"$T/hostile/main.c"
cc -O0 -fno-pie -no-pie -o "$T/hostile/prog" "$T/hostile/main.c" "$T/hostile/bad.s" 2>"$T/err"
A=0x$(nm "$T/hostile/prog" | LC_ALL=C grep -a ' T q' | cut -d' ' -f1)
printf 'H pid=600\nN 600 t"\\\001\377\nE 0 %s 600\nX 100 %s 600\n' "$A" "$A" | $GEN "$T/hostile/trace.600.600.0.bin"
"$CS" analyze "$T/hostile" --exe "$T/hostile/prog" --format chrome -o "$T/hostile.json" 2>>"$T/err" &&
    $CHECK "$T/hostile.json" >"$T/got" 2>>"$T/err" &&
    perl -e 'local $/; $_ = <STDIN>; exit(/[\x00-\x09\x0b-\x1f\x7f]/ ? 1 : 0)' <"$T/hostile.json"
rc=$?
python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(ascii([e["name"] for e in ev if e["ph"] == "X"] + [e["args"]["name"] for e in ev if e["name"] == "thread_name"]))' \
    "$T/hostile.json" >"$T/names" 2>>"$T/err"
[ $rc = 0 ] && [ ! -s "$T/err" ] && [ "$(cat "$T/names")" = "['q\"b\\\\\\x1b\\x01\\x7f\\\\xff\\\\xfex', 't\"\\\\??']" ]
okd $? "hostile names escaped: strict JSON, UTF-8, no raw control byte, the names read back exactly" \
    "$T/err" "$T/got" "$T/names"

# The tracer's own time (marker 29) is an event inside the call it
# interrupted; a hostile duration (2^62 ns) ends at the thread's next event.
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
"$CS" analyze "$T/flush" --exe "$T/tiny" --format chrome -o "$T/flush.json" 2>"$T/err" &&
    $CHECK "$T/flush.json" | grep '^X' >"$T/got" 2>>"$T/err"
cat >"$T/want" <<'L'
X 500 500 0.000 1000.000 whole main
X 500 500 100.000 50.000 whole [callsight flush]
X 500 500 200.000 200.000 whole work
X 500 500 300.000 100.000 whole [callsight flush]
L
diff "$T/want" "$T/got" >"$T/diff" && [ ! -s "$T/err" ]
okd $? "tracer time: [callsight flush] events nested in the call, the hostile one cut at the next event" "$T/err" "$T/diff"

# Calls that start at the same time (one of them lasting no time at all):
# the caller comes first, so a viewer that keeps such events in file order
# nests them right.
mkdir -p "$T/same"
$GEN "$T/same/trace.500.500.0.bin" <<S
H pid=500
E 1000 $M 500
E 1000 $W 500 $MS
E 1000 $H 500 $WS
X 1000 $H 500
X 1000 $W 500
E 2000 $W 500 $MS
E 2000 $H 500 $WS
X 2500 $H 500
X 3000 $W 500
X 3000 $M 500
S
"$CS" analyze "$T/same" --exe "$T/tiny" --format chrome -o "$T/same.json" 2>"$T/err" &&
    $CHECK "$T/same.json" | grep '^X' >"$T/got" 2>>"$T/err"
cat >"$T/want" <<'L'
X 500 500 1.000 2.000 whole main
X 500 500 1.000 0.000 whole work
X 500 500 1.000 0.000 whole helper
X 500 500 2.000 1.000 whole work
X 500 500 2.000 0.500 whole helper
L
diff "$T/want" "$T/got" >"$T/diff" && [ ! -s "$T/err" ]
okd $? "calls starting at one time: callers first, in the order they were entered" "$T/err" "$T/diff"

"$CS" analyze "$T/named" --exe "$T/tiny" --format chrome >"$T/stdout.json" 2>"$T/err"
cmp -s "$T/stdout.json" "$T/named.json" && [ ! -s "$T/err" ]
ok $? "to stdout: the same bytes as -o"

# Memory does not grow with the trace: 10x the events, the same peak RSS
# (within 2 MB): the events go to a temporary file as the pass makes them.
bigtrace() { # bigtrace DIR ITERATIONS: inside one outer call, a 4-deep call tree ITERATIONS times
    mkdir -p "$1"
    perl -e 'open(my $o, ">:raw", $ARGV[0]) or die; my ($n) = $ARGV[1];
        print $o pack("a8 L< L< L< L< Q< Q< Q< Q< Q< L< L< Q<", "MLTRACE", 2, 32, 80, 0, 0, 0, 0, 0, 0, 7, 0, 0);
        my ($t, $buf) = (0, pack("Q< Q< Q< L< C x3", 0, 0x100000, 0x99, 7, 0));
        $t++;
        for my $i (1..$n) { my $f = ($i % 50) * 0x1000;
            $buf .= pack("Q< Q< Q< L< C x3", $t++, $f + 0x10 * $_, 0x99, 7, 0) for 1..4;
            $buf .= pack("Q< Q< Q< L< C x3", $t++, $f + 0x10 * $_, 0, 7, 1) for reverse 1..4;
            if (length($buf) > 1 << 20) { print $o $buf; $buf = "" } }
        $buf .= pack("Q< Q< Q< L< C x3", $t, 0x100000, 0, 7, 1);
        print $o $buf; close $o or die' "$1/trace.7.7.0.bin" "$2"
}
maxrss() { # maxrss ARGS...: run callsight, print the peak RSS in KiB
    python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else "failed")' "$@"
}
bigtrace "$T/small" 40000
bigtrace "$T/big" 400000
small=$(maxrss "$CS" analyze "$T/small" --exe "$T/tiny" --format chrome -o "$T/small.json")
big=$(maxrss "$CS" analyze "$T/big" --exe "$T/tiny" --format chrome -o "$T/big.json")
diag "peak RSS: 320k events ${small} KiB, 3.2M events ${big} KiB"
[ "$small" != failed ] && [ "$big" != failed ] && [ $((big - small)) -lt 2048 ]
ok $? "peak memory the same for 320k and 3.2M events"
# Each iteration's 4 frames last 7, 5, 3 and 1 ns (16 ns), the outer call
# 8 ns an iteration and 1 more: 9,600,001 ns.  Frames whose records left
# the write buffer before they closed (the outer one, and those open when
# it was written out) get their durations in the file: a lost one shows.
$CHECK "$T/big.json" 2>"$T/err" | awk '$1 == "X" && $6 == "whole" { n++; d += $5 * 1000 } END { printf "%d %d\n", n, d }' >"$T/got"
is "$(cat "$T/got") $(wc -c <"$T/err")" "1600001 9600001 0" \
    "the large document checks too: 1,600,001 nested complete events, 9,600,001 ns in all"

"$CS" analyze --help >"$T/help" 2>&1
grep -q '^  chrome    Chrome.s trace-event JSON' "$T/help" && grep -q 'perfetto, chrome,$' "$T/help"
ok $? "analyze --help lists the format"
