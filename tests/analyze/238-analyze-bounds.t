#!/usr/bin/env bash
# 238-analyze-bounds.t - `callsight analyze` against hostile trace files
# (issue #21): files a network client can make serve write, or any damaged
# file.  Each attack is written by tests/tools/hostile.c around a small
# legitimate part (thread 1 calls 0x1000 six times, 10 ns each) and must
# leave analyze within its bounds (a memory limit, a timeout), say what it
# capped or skipped in exact counts, and keep every count of the
# legitimate part:
#   - lost-events + resync markers claiming depth 2^31 (once: a million
#     placeholder frames each; 300 pairs took analyze past 6 GB): depths
#     the loss cannot reach are counted, deep holes that it can cost one
#     frame;
#   - a million thread ids (once 4.5 GB): --max-threads, default 65536;
#   - distinct functions beyond --max-funcs: one [other] row;
#   - 20,000-deep nesting: --max-depth for the stacks, and folded output
#     (once 1.4 GB) capped at --max-folded-depth frames a line and
#     --max-folded-mb;
#   - header_size 81 (every record misread): refused;
#   - 99% records of unknown kind: counted, on stderr and in a note;
#   - loss counters that would wrap: saturate;
#   - a module list of 4,096 modules on each of 64 threads (issue #29: once
#     11 s and 4.7 GB, 66.5 KB through serve), by build-id and by path.
# The memory limits are skipped under ASan (it reserves terabytes of
# address space); the counts are asserted in both passes.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"

plan 26

tiny_build
need_tools hostile
ASAN=0
nm "$CS" 2>/dev/null | grep -q __asan_init && ASAN=1

# gen NAME ARGS...: the attack file $T/NAME/trace.stream.1.0.bin
gen() { local d=$T/$1; shift; mkdir -p "$d"; "$TOOLBIN/hostile" "$1" "$d/trace.stream.1.0.bin" "${@:2}"; }
# run MB DIR ARGS...: analyze DIR under a memory limit of MB (address
# space, not under ASan) and 60 s; stdout in $T/out, stderr in $T/err
run() {
    local mb=$1 dir=$2; shift 2
    local lim=(prlimit --as=$((mb << 20)))
    [ "$ASAN" = 1 ] && lim=()
    timeout 60 "${lim[@]}" "$CS" analyze "$T/$dir" --exe "$T/tiny" "$@" >"$T/out" 2>"$T/err"
}
row() { awk -v f="$1" '$1 ~ /^(>=)?[0-9]+$/ && $10 == f { print $1 }' "$T/out"; }

# --- resync markers: 300 pairs of LOST 3 + RESYNC 0..2^31-1, one a thread ---
gen resync resync 300 3 300
run 256 resync
ok $? "300 implausible resyncs: analyze ends within 256 MB"
is "$(head -1 "$T/out")" "events=12 threads=1 functions=1 span=0.000001s unmatched_exits=0 unclosed_enters=0 dropped=900" \
   "300 implausible resyncs: the legitimate events exact, the losses counted"
is "$(grep -c 'resync markers claimed depths its lost events cannot reach' "$T/out") $(grep -c '^note: stream 1: thread 100: 1 resync markers claimed' "$T/out")" \
   "300 1" "300 implausible resyncs: each thread's note says so"
is "$(row 0x1000)" "6" "300 implausible resyncs: the legitimate calls all there"

# --- the same with losses that could reach that deep: one frame per hole ---
gen deephole resync 300 0x100000000 300
run 256 deephole
ok $? "300 resyncs 2^31 deep that the loss allows: analyze ends within 256 MB"
is "$(field dropped "$(head -1 "$T/out")") $(grep -c 'claimed depths' "$T/out") $(row 0x1000)" "1288490188800 0 6" \
   "300 deep holes: 300 x 2^32 lost events counted, none refused, the legitimate calls all there"

# --- 50 pairs on one thread (once 1.6 s of CPU, 50 million frames pushed) ---
gen onethread resync 50 3 1
run 256 onethread
is "$?:$(grep '^note:' "$T/out")" "0:note: stream 1: thread 100 lost 150 events (0 open frames cut short, 0 orphaned exits)
note: stream 1: thread 100: 50 resync markers claimed depths its lost events cannot reach (damaged or hostile): taken as holes of unknown shape" \
   "50 implausible resyncs on one thread: exact notes"

# --- a million thread ids, one call each (64 MB) ---
gen tids tids 1000000
run 512 tids
ok $? "a million threads: analyze ends within 512 MB"
is "$(head -2 "$T/out")" "events=2000012 threads=65536 functions=1 span=0.011000s unmatched_exits=0 unclosed_enters=0 dropped=0
note: analyze kept 65536 threads (--max-threads): 1868930 records of further threads were counted, not analyzed (their calls are in no row)" \
   "a million threads: 65536 kept, the records of the rest counted"
is "$(row 0x1000)" "65541" "a million threads: the legitimate thread's 6 calls and one each of the 65535 kept"
gen tids1k tids 1000
run 256 tids1k --max-threads 100
is "$(field threads "$(head -1 "$T/out")") $(row 0x1000) $(grep -c '1802 records of further threads' "$T/out")" "100 105 1" \
   "--max-threads 100: 100 threads, 1802 records of the other 901 counted"

# --- distinct functions beyond --max-funcs ---
gen funcs funcs 1000
run 256 funcs --max-funcs 100 --top 2
is "$(sed -n '1,2p;5,6p' "$T/out" | tr -s ' ')" "events=2012 threads=2 functions=101 span=0.000011s unmatched_exits=0 unclosed_enters=0 dropped=0
note: analyze kept 100 functions (--max-funcs): the calls of further functions are counted in the [other] row (901 calls)
 901 0.009 0.009 89.6 10ns 10ns 10ns 10ns 10ns [other]
 6 0.000 0.000 0.6 10ns 10ns 10ns 10ns 10ns 0x1000" "--max-funcs 100: 901 calls of the other functions in one [other] row"
run 256 funcs --max-funcs 100 --format json
grep -q '{"name": "\[other\]", "file": null, "line": null, "addr": "0x0", "binary": null, "calls": 901, "incl_ns": 9010, "self_ns": 9010' "$T/out" &&
    grep -q '"analyze kept 100 functions (--max-funcs): the calls of further functions are counted in the \[other\] row (901 calls)"' "$T/out"
ok $? "--max-funcs 100, json: the [other] row and the note"

# --- 20,000-deep nesting ---
gen deep deep 20000
run 256 deep --max-depth 1000
is "$(head -1 "$T/out" | cut -d' ' -f1-3) $(grep '^note:' "$T/out")" "events=40012 threads=2 functions=2 note: stream 1: thread 2: call depth beyond 1000 frames: 19000 calls not timed" \
   "--max-depth 1000: 1000 frames timed, the 19000 deeper calls counted"
run 64 deep --format folded
ok $? "folded, 20,000 deep: analyze ends within 64 MB"
is "$(wc -c <"$T/out") $(wc -l <"$T/out") $(awk '{ s += $NF } END { print s }' "$T/out")" "3692075 1026 80059" \
   "folded, 20,000 deep: 1024 frames a line at most (3.7 MB, not 1.4 GB), the self times still add up"
is "$(tail -1 "$T/out" | tr ';' '\n' | sort | uniq -c | tr -s ' ')" " 1024 0x2000
 1 [deeper] 75903
 1 thread 2" "folded: the frames beyond 1024 in one [deeper] line of their ancestor"
is "$(cat "$T/err")" "callsight analyze: note: 18976 stacks deeper than --max-folded-depth 1024 frames are folded into their ancestor's [deeper] line" \
   "folded: a note counts the stacks folded"
run 64 deep --format folded --max-folded-depth 30000 --max-folded-mb 1
is "$(wc -c <"$T/out" | awk '{ print ($1 <= 1048576) }') $(cat "$T/err")" "1 callsight analyze: note: the output reached --max-folded-mb 1: 19455 stacks (77819 ns of self time) left out" \
   "--max-folded-mb 1: at most 1 MiB written, the stacks left out counted"

# --- header_size 81: every record would be misread ---
mkdir "$T/hdr"
perl "$TESTS/tools/tracegen.pl" "$T/hdr/trace.stream.1.0.bin" <<'S'
H pid=1 hsize=81
E 1000 0x1000 1
X 2000 0x1000 1
S
run 64 hdr
is "$?:$(cat "$T/err")" "1:callsight analyze: $T/hdr/trace.stream.1.0.bin: header_size neither 80 nor a multiple of 32; skipped
callsight analyze: none of the 1 trace files could be read" "header_size 81: the file is refused"

# --- 99% records of unknown kind ---
gen kinds kinds 9900
run 64 kinds
is "$?:$(cat "$T/err")" "0:callsight analyze: $T/kinds/trace.stream.1.0.bin: 9900 records of unknown kind skipped" \
   "unknown kinds: one line on stderr for the file"
is "$(grep '^note:' "$T/out")" "note: 9900 of 10112 records are of no kind trace.h defines (damaged, or not written by callsight?): skipped" \
   "unknown kinds: a note with the counts"
is "$(field events "$(head -1 "$T/out")") $(row 0x1000) $(row 0x3000)" "212 6 100" "unknown kinds: the calls among them all counted"

# --- loss counters saturate ---
gen wrap wrap
run 64 wrap
is "$(field dropped "$(head -1 "$T/out")") $(grep '^note:' "$T/out")" \
   "18446744073709551615 note: stream 1: thread 4 lost 18446744073709551615 events (0 open frames cut short, 0 orphaned exits)" \
   "two losses of 2^63 events: dropped and the thread's count saturate, not wrap to 0"
# --- module lists: 64 threads each listing 4096 modules ---
gen mods modules 64 4096
run 512 mods
is "$?:$(row '?+0x10001010'):$(row 0x1000)" "0:64:6" \
   "64 threads x 4096 modules by build-id: analyze ends within 512 MB, every call counted"
gen modpaths modules 64 4096 paths
run 512 modpaths
is "$?:$(row '1+0x10001010'):$(row 0x1000)" "0:64:6" \
   "64 threads x 4096 modules by path: analyze ends within 512 MB, every call counted"
exit $_failed
