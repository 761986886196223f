#!/usr/bin/env bash
# 233-analyze-debuginfod.t - debuginfod asked for many modules at once,
# within one deadline (issue 29: it was asked one build-id after another,
# 200 modules at 50 ms each took 10.5 s, and a server that never answers
# held analyze for as long as libdebuginfod waited on each).
#
# One thread lists 200 modules, each with its own build-id and no file on
# this machine, and calls into each once.  A stand-in debuginfod on
# 127.0.0.1 (tests/tools/dfdstub.py) counts its requests and how many came
# at once.  Answering after 50 ms (module 7's file, 404 for the others):
# each build-id asked once, more than one and at most 8 at a time, module 7
# named from the answer, 199 notes, the same report twice.  Answering never:
# analyze ends at --debuginfod-deadline with one note counting the modules
# and naming the levers, a note per module without the URL's credentials;
# and the requests it stopped are asked again by the next run (libdebuginfod
# would otherwise remember them as "not found" for 10 minutes).
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"
plan 16

tiny_build
# Module K's build-id (20 bytes): K in bytes 0-7, 0xb1d in 8-15, both
# little-endian, then 4 zero bytes.
idhex() { printf '%02x00000000000000' "$1"; printf '1d0b000000000000'; printf '00000000'; }
ID7=$(idhex 7)
echo 'int m7_fn(int x) { return x + 7; }' > "$T/m7.c"
cc -g -O0 -fPIC -shared -Wl,--build-id=0x"$ID7" -o "$T/m7.so" "$T/m7.c"
ok $? "module 7's file builds with module 7's build-id"
F7=$(nm "$T/m7.so" | awk '$3 == "m7_fn" { print "0x" $1 }')
mkdir -p "$T/served" && cp "$T/m7.so" "$T/served/$ID7"

# The trace: the list (trace.h, "loaded modules"), then one call into each
# module; module 7 is mapped where m7.so has m7_fn (load bias 0).
mkdir -p "$T/tr"
{
    echo "H pid=500"
    echo "D 1 1 200 500 1"
    for k in $(seq 200); do
        lo=$((0x10000000 + 0x1000 * k))
        [ "$k" = 7 ] && lo=$((F7 & ~0xfff))
        echo "D $k 0 0 500 2"
        echo "D $k $lo $((lo + 0x1000)) 500 3"
        echo "D $k 0xb1d 0 500 4 20"
        echo "D $k 0 0 500 6"
    done
    echo "D 2 1 0 500 7"
    for k in $(seq 200); do
        fn=$((0x10000010 + 0x1000 * k))
        [ "$k" = 7 ] && fn=$((F7))
        echo "E $((1000 + 20 * k)) $fn 500"
        echo "X $((1010 + 20 * k)) $fn 500"
    done
} | perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.500.500.0.bin"
ok $? "a trace of 200 modules, one call into each"

# stub NAME DELAY [DIR]: the stand-in on a free port, its URL in $URL and
# its counts in $T/NAME.stats; stop_stub ends it.
stub() {
    python3 "$TESTS/tools/dfdstub.py" "$T/$1.port" "$T/$1.stats" "$2" ${3:+"$3"} &
    STUB_PID=$!
    track_pid "$STUB_PID"
    wait_file "$T/$1.port" || return 1 # written whole, by rename
    PORT=$(cat "$T/$1.port") URL=http://127.0.0.1:$(cat "$T/$1.port")
}
stop_stub() { kill "$STUB_PID" 2>/dev/null; wait "$STUB_PID" 2>/dev/null; }
stat_of() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$T/$1.stats"; }
analyze() { timeout 60 "$CS" analyze "$T/tr" --exe "$T/tiny" --top 0 "$@"; }
notes_of() { grep '^note: ' "$1"; }
unnamed() { grep -c "^note: pid 500: module ? (build-id [0-9a-f]*...) is not named (no path was recorded; debuginfod ($URL): $1): its 1 function is shown as ?+offset$" "$2"; }
between() { [ "$1" -gt "$2" ] && [ "$1" -le "$3" ]; }

# --- a server that answers after 50 ms ---
stub slow 0.05 "$T/served"
ok $? "the stand-in debuginfod listens on 127.0.0.1:$PORT"
DEBUGINFOD_URLS=$URL DEBUGINFOD_CACHE_PATH=$T/cache1 analyze > "$T/a.txt" 2> "$T/a.err"
is "$? $(wc -c < "$T/a.err")" "0 0" "200 modules left to debuginfod: analyze exits 0, nothing on stderr"
is "$(stat_of slow requests)" 200 "each build-id is asked once"
most=$(stat_of slow most_at_once)
between "$most" 1 8
ok $? "more than one request at a time, and at most 8: $most"
is "$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 == "m7_fn" { print $1, $11, $12 }' "$T/a.txt")" "1 [?] (m7.c:1)" \
    "module 7 is named from the file debuginfod gave for its build-id"
is "$(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 ~ /^\?\+0x1[0-9a-f]*010$/ { n++; s += $1 } END { print n, s }' "$T/a.txt")" "199 199" \
    "the other 199 by offset, one call each"
is "$(notes_of "$T/a.txt" | wc -l) $(unnamed 'No such file or directory' "$T/a.txt") $(grep -c "build-id $(idhex 7 | cut -c1-16)" "$T/a.txt")" \
    "199 199 0" "a note for each of the 199, saying debuginfod has no file; none for module 7"
DEBUGINFOD_URLS=$URL DEBUGINFOD_CACHE_PATH=$T/cache2 analyze > "$T/b.txt" 2> "$T/b.err"
is "$(stat_of slow requests) $(cmp "$T/a.txt" "$T/b.txt" > /dev/null && echo same)" "400 same" \
    "asked again (another cache): the very same report, whichever thread asked what"
stop_stub

# --- a server that never answers: the deadline ---
stub never never
DEBUGINFOD_URLS="http://alice:s3cret@127.0.0.1:$PORT" DEBUGINFOD_CACHE_PATH=$T/cache3 \
    analyze --debuginfod-deadline 2s > "$T/d.txt" 2> "$T/d.err"
is "$? $(wc -c < "$T/d.err")" "0 0" "a server that never answers: analyze ends (timeout would say 124), exit 0"
is "$(notes_of "$T/d.txt" | grep -v ' module ? ')" \
    "note: pid 500: debuginfod gave no answer within the 2 s deadline for 200 modules: shown by offset (--debuginfod-deadline gives it longer; DEBUGINFOD_TIMEOUT bounds each request)" \
    "one note counts the modules the deadline cut off and names the levers"
is "$(unnamed 'no answer within the 2 s deadline' "$T/d.txt") $(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 ~ /^\?\+0x/ { n++ } END { print n }' "$T/d.txt")" \
    "200 200" "each module's note says so, and all 200 are shown by offset"
is "$(grep -c 's3cret\|alice' "$T/d.txt")" 0 "no note shows the URL's credentials"
n=$(stat_of never requests)
between "$n" 1 8 && [ "$(stat_of never most_at_once)" = "$n" ]
ok $? "the requests under way at the deadline were the only ones made, at most 8: $n"
stop_stub

# The stopped requests are not remembered as failed: the next run, with the
# same cache, asks for every build-id again.
stub again 0.05 "$T/served"
DEBUGINFOD_URLS=$URL DEBUGINFOD_CACHE_PATH=$T/cache3 analyze > "$T/e.txt" 2> "$T/e.err"
is "$(stat_of again requests) $(awk '$1 ~ /^(>=)?[0-9]+$/ && $10 == "m7_fn" { print $1 }' "$T/e.txt") $(notes_of "$T/e.txt" | wc -l)" "200 1 199" \
    "the same cache afterwards: all 200 asked again, module 7 named, 199 notes"
stop_stub
exit $_failed
