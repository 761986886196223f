#!/usr/bin/env bash
# 221-analyze-report.t - exact `callsight analyze` reports from synthetic
# traces: call counts, inclusive/self time, percentiles, names from a real
# binary (PIE and non-PIE, static functions included, unknown addresses in
# hex), thread demultiplexing of stream files, tick timestamps with and
# without the exit clock anchor, big-endian files, loss and capture notes,
# tid reuse, --top.
source "$(dirname "$0")/../lib/lib.sh"
tmp=$T

# gen OUT < spec: a synthetic trace file (H header, E/X/M events, RAW bytes;
# see tests/tools/tracegen.pl).
TRACEGEN=$TESTS/tools/tracegen.pl
gen() { perl "$TRACEGEN" "$1"; }

# report ARGS...: run analyze, whitespace-normalized stdout in $tmp/got
report() {
    "$CS" analyze "$@" 2>"$tmp/err" | awk '{$1=$1};1' >"$tmp/got"
    rc=${PIPESTATUS[0]}
}
# same WHAT < expected: the normalized report is exactly this, exit 0, quiet
same() { same_output "$1" "$tmp/got" "$tmp/err"; }

plan 9

# A tiny program with one-line functions, so each has one line number.
cat >"$tmp/tiny.c" <<'C'
#include <stdio.h>
static int helper(int x) { return x * 3 + 1; }
int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += helper(i); return s; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", work(argc)); return 0; }
C
cc -g -O0 -fno-pie -no-pie -o "$tmp/tiny-nopie" "$tmp/tiny.c" &&
    cc -g -O0 -fPIE -pie -o "$tmp/tiny-pie" "$tmp/tiny.c" || { echo "Bail out! cc failed"; exit 1; }
addr() { nm "$1" | awk -v f="$2" '$3 == f { print "0x" $1 }'; }
add() { printf '0x%x' $(($1 + $2)); }

# 1. Local files, two threads, ns timestamps, a non-PIE binary.
M=$(addr "$tmp/tiny-nopie" main) W=$(addr "$tmp/tiny-nopie" work) H=$(addr "$tmp/tiny-nopie" helper)
mkdir "$tmp/local"
gen "$tmp/local/trace.500.500.0.bin" <<S
H pid=500 seq=0
E 0 $M 500
E 100000 $W 500
E 200000 $H 500
X 700000 $H 500
X 1100000 $W 500
E 2000000 $H 500
X 2300000 $H 500
X 10000000 $M 500
S
gen "$tmp/local/trace.500.501.0.bin" <<S
H pid=500 seq=0
E 5000000 $W 501
X 7000000 $W 501
E 7100000 $H 501
E 8000000 0x10 501
X 8001000 0x10 501
S
report "$tmp/local" --exe "$tmp/tiny-nopie"
same "local files, non-PIE: counts, incl/self, percentiles, static function named, unknown in hex" <<'R'
events=13 threads=2 functions=4 span=0.010000s unmatched_exits=0 unclosed_enters=1 dropped=0

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
1 10.000 8.700 72.5 10.000ms 10.000ms 10.000ms 10.000ms 10.000ms main (tiny.c:4)
2 3.000 2.500 20.8 1500.000us 1000.000us 1000.000us 2000.000us 2000.000us work (tiny.c:3)
2 0.800 0.800 6.7 400.000us 300.000us 300.000us 500.000us 500.000us helper (tiny.c:2)
1 0.001 0.001 0.0 1000ns 1000ns 1000ns 1000ns 1000ns 0x10
R

# 2. A PIE: addresses minus load_bias; a file named explicitly; --top 2.
B=0x555555554000
M=$(add $(addr "$tmp/tiny-pie" main) $B) W=$(add $(addr "$tmp/tiny-pie" work) $B)
H=$(add $(addr "$tmp/tiny-pie" helper) $B)
mkdir "$tmp/pie"
gen "$tmp/pie/trace.600.600.0.bin" <<S
H pid=600 bias=$B
E 0 $M 600
E 100000 $W 600
E 200000 $H 600
X 600000 $H 600
X 1100000 $W 600
X 2000000 $M 600
S
report "$tmp/pie/trace.600.600.0.bin" --exe "$tmp/tiny-pie" --top 2
same "PIE: load_bias subtracted before addr2line; --top 2" <<'R'
events=6 threads=1 functions=3 span=0.002000s unmatched_exits=0 unclosed_enters=0 dropped=0

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
1 2.000 1.000 50.0 2000.000us 2000.000us 2000.000us 2000.000us 2000.000us main (tiny.c:4)
1 1.000 0.600 30.0 1000.000us 1000.000us 1000.000us 1000.000us 1000.000us work (tiny.c:3)
1 more function (0.400 ms self, 1 call); --top 0 shows all
R

# 3. Streams: threads interleaved, ticks at a nominal 1 GHz whose exit
# anchor (in the next-to-last segment) says 2 ticks per ns; tid reuse after
# THREAD_EXIT; a hole repaired by THREAD_LOST/RESYNC; device drops; capture
# notes; an unknown marker; thread 9, first seen after a stream gap of 7
# records, exits a call entered in the gap (an orphaned exit, not an
# unmatched one); dropped = max(device 10, threads 3) + gap 7.  Stream 5:
# its threads lost more than its device reported.
mkdir "$tmp/stream"
gen "$tmp/stream/trace.stream.4.0.bin" <<'S'
H pid=4 seq=0 flags=1 hz=1000000000 t0t=1000 t0n=0
E 1000 0x100 7
E 3000 0x200 8
E 5000 0x200 7
X 9000 0x200 7
X 13000 0x200 8
X 21000 0x100 7
E 25000 0x300 8
S
gen "$tmp/stream/trace.stream.4.1.bin" <<'S'
H pid=4 seq=1 flags=1 hz=1000000000 t0t=1000 t0n=0
M 26000 20 0 8
E 31000 0x100 8
M 40000 18 2 0
M 41000 16 3 8
M 41000 17 0x200000001 8
X 45000 0x200 8
X 61000 0x100 8
M 62000 1 1048576 0
M 63000 19 7 0
M 64000 99 5 0
M 65000 5 100 8
X 71000 0x300 9
E 81000 0x300 9
M 82000 18 10 0
M 2000001000 6 1000000000 7
S
gen "$tmp/stream/trace.stream.4.2.bin" <<'S'
H pid=4 seq=2 flags=1 hz=1000000000 t0t=1000 t0n=0
M 2000002000 99 0 0
S
gen "$tmp/stream/trace.stream.5.0.bin" <<'S'
H pid=5 seq=0
E 100 0x100 1
M 150 18 20 0
M 150 16 50 1
M 150 17 0 1
S
report "$tmp/stream" --exe "$tmp/tiny-nopie"
same "streams: demux by tid, anchor rate, repair counts, dropped = sum of per-source max, notes" <<'R'
events=13 threads=4 functions=3 span=0.000040s unmatched_exits=0 unclosed_enters=2 dropped=67
note: stream 4: capture stopped: byte budget 1048576 reached
note: stream 4: flight recorder wrapped: 100 older events discarded
note: stream 4: stream gap: 7 events lost in transit
note: stream 4: device dropped 10 events
note: stream 4: 7 of the device's dropped events are not attributed to a thread (no later flush of the thread that lost them reached the ring)
note: stream 4: thread 8 lost 3 events (0 open frames cut short, 1 orphaned exits)
note: stream 4: thread 9: at stream gaps 0 open frames cut short, 1 orphaned exits
note: stream 5: device dropped 20 events
note: stream 5: thread 1 lost 50 events (1 open frames cut short, 0 orphaned exits)

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
2 0.025 0.023 76.7 12.500us 10.000us 10.000us 15.000us 15.000us 0x100
2 0.007 0.007 23.3 3500ns 2000ns 2000ns 5000ns 5000ns 0x200
0 0.000 0.000 0.0 0ns 0ns 0ns 0ns 0ns 0x300
R

# Without the anchor the nominal 1 GHz applies: every time doubles.
grep -v '^M 2000001000 6 ' >"$tmp/spec" <<'S'
H pid=4 seq=1 flags=1 hz=1000000000 t0t=1000 t0n=0
M 26000 20 0 8
E 31000 0x100 8
X 61000 0x100 8
M 2000001000 6 1000000000 7
S
mkdir "$tmp/noanchor"
cp "$tmp/stream/trace.stream.4.0.bin" "$tmp/noanchor/"
gen "$tmp/noanchor/trace.stream.4.1.bin" <"$tmp/spec"
report "$tmp/noanchor" --exe "$tmp/tiny-nopie"
same "no exit anchor: tick_hz converts" <<'R'
events=9 threads=2 functions=3 span=0.000060s unmatched_exits=0 unclosed_enters=1 dropped=0

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
2 0.050 0.046 76.7 25.000us 20.000us 20.000us 30.000us 30.000us 0x100
2 0.014 0.014 23.3 7000ns 4000ns 4000ns 10.000us 10.000us 0x200
0 0.000 0.000 0.0 0ns 0ns 0ns 0ns 0ns 0x300
R

# 4. A big-endian segment with header_size 96 and a little-endian one after
# a missing segment, flagged WRAPPED; ticks at 500 MHz.
mkdir "$tmp/be"
gen "$tmp/be/trace.3.3.0.bin" <<'S'
H pid=3 flags=5 hsize=96 hz=500000000 t0t=100 t0n=1000000
E 100 0x100 3
X 600 0x100 3
S
gen "$tmp/be/trace.3.3.2.bin" <<'S'
H pid=3 seq=2 flags=3 hz=500000000 t0t=100 t0n=1000000
E 1000 0x100 3
X 1100 0x100 3
S
report "$tmp/be" --exe "$tmp/tiny-nopie"
same "big-endian file, header_size 96, ticks; wrapped and missing segments noted" <<'R'
events=4 threads=1 functions=1 span=0.000002s unmatched_exits=0 unclosed_enters=0 dropped=0
note: pid 3: thread 3: flight recorder discarded earlier trace segments
note: pid 3: thread 3: 1 trace segments missing

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
2 0.001 0.001 100.0 600ns 200ns 200ns 1000ns 1000ns 0x100
R

# 5. --top: 25 functions, the one with i * 1000 ns of self time at 0x1000 + 16 i.
mkdir "$tmp/many"
perl -e 'print "H pid=9\n"; for my $i (1..25) { my $f = sprintf("0x%x", 0x1000 + 16*$i);
    print "E ", $i*100000, " $f 9\nX ", $i*100000 + $i*1000, " $f 9\n" }' |
    gen "$tmp/many/trace.9.9.0.bin"
rows() { "$CS" analyze "$tmp/many" --exe "$tmp/tiny-nopie" "$@" | awk 'NR > 3 && $2 != "more"' | wc -l; }
[ "$(rows)" = 20 ] && [ "$(rows --top 0)" = 25 ] && [ "$(rows --top 30)" = 25 ] && [ "$(rows --top=7)" = 7 ]
ok $? "--top: 20 rows by default, all with 0, N otherwise"
report "$tmp/many" --exe "$tmp/tiny-nopie" --top 3
same "--top 3: the three with the most self time, in order" <<'R'
events=50 threads=1 functions=25 span=0.002425s unmatched_exits=0 unclosed_enters=0 dropped=0

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
1 0.025 0.025 7.7 25.000us 25.000us 25.000us 25.000us 25.000us 0x1190
1 0.024 0.024 7.4 24.000us 24.000us 24.000us 24.000us 24.000us 0x1180
1 0.023 0.023 7.1 23.000us 23.000us 23.000us 23.000us 23.000us 0x1170
22 more functions (0.253 ms self, 22 calls); --top 0 shows all
R

# 6. Percentiles of 1000 calls of 1..1000 us: nearest rank p50 = 500 us,
# p99 = 990 us; within 2% (the promise), max exact.
mkdir "$tmp/pct"
perl -e 'print "H pid=2\n"; my $t = 0; for my $i (1..1000) {
    print "E $t 0x40 2\nX ", $t + $i*1000, " 0x40 2\n"; $t += $i*1000 + 10 }' |
    gen "$tmp/pct/trace.2.2.0.bin"
"$CS" analyze "$tmp/pct" --exe "$tmp/tiny-nopie" | awk 'NR == 4' >"$tmp/row"
awk '{ p50 = $7 + 0; p99 = $8 + 0; ok = $1 == 1000 && $7 ~ /us$/ && p50 >= 490 && p50 <= 510 && $8 ~ /us$/ && p99 >= 970.2 && p99 <= 1009.8 && $9 == "1000.000us";
       if (!ok) print "# " $0; exit !ok }' "$tmp/row"
ok $? "p50 and p99 within 2% of the exact nearest rank, max exact"

# 7. Same input twice (a directory and a file in it): read once.
report "$tmp/pie" "$tmp/pie/trace.600.600.0.bin" --exe "$tmp/tiny-pie" --top 1
same "a file reached twice is read once" <<'R'
events=6 threads=1 functions=3 span=0.002000s unmatched_exits=0 unclosed_enters=0 dropped=0

calls incl_ms self_ms self% mean min p50 p99 max function (file:line)
1 2.000 1.000 50.0 2000.000us 2000.000us 2000.000us 2000.000us 2000.000us main (tiny.c:4)
2 more functions (1.000 ms self, 2 calls); --top 0 shows all
R
