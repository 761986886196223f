#!/usr/bin/env bash
# --exe must be the binary that ran: the runtime records the traced
# program's GNU build-id in-band (TRACE_MARK_BUILD_ID, first record of every
# file; once per process in a stream), and analyze refuses an --exe whose
# build-id differs (exit 1, one line), unless --force (then a warning).
# Traces without the marker (older runtimes) are still accepted.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 17

R=$(cd "$TESTS/.." && pwd)
PARAMS="40 2 12 64 8" # ~1.2 MB per worker: rotates at TRACE_SEG_MB=1
W=$B/examples/workload
expect_counts $PARAMS > "$T/expect"
want_fib=$(awk '$1 == "fib" { print $2 }' "$T/expect")

# The same source rebuilt with a different -D: same name, another binary.
mkdir -p "$T/other"
cc -std=c11 -O2 -c -o "$T/other/trace.o" "$DIST/trace.c" &&
    cc -finstrument-functions -g -O2 -I"$R/runtime" -DMAX_SORT=2048 -o "$T/other/workload" \
        "$R/examples/workload.c" "$T/other/trace.o" -pthread
ok $? "a variant of the workload builds with -DMAX_SORT=2048"
id_of() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *//p'; }
id=$(id_of "$W")
[ -n "$id" ] && [ "$id" != "$(id_of "$T/other/workload")" ]
ok $? "the two binaries have different build-ids ($id)"

TRACE_ENABLE=1 TRACE_DIR="$T/f" TRACE_SEG_MB=1 "$W" $PARAMS > /dev/null
ok $? "workload runs traced to files"

# Every file starts with the marker: kind 2 at byte 80+28, code 26 at 80+8,
# and the id's first 8 bytes (little-endian packing = file order) at 80+16.
bad=0
for f in "$T"/f/trace.*.bin; do
    head=$(od -A n -t x1 -j 80 -N 32 "$f" | tr -d ' \n')
    [ "${head:16:2}" = 1a ] && [ "${head:56:2}" = 02 ] && [ "${head:32:16}" = "${id:0:16}" ] &&
        [ "${head:0:16}" = "${id:16:16}" ] || { diag "$f: $head"; bad=1; }
done
segs=$(ls "$T/f" | awk -F. '$4 > 0' | wc -l)
[ "$segs" -ge 1 ] || bad=1
ok $bad "every trace file opens with the build-id marker, rotated ones too ($segs)"

"$CS" analyze "$T/f" --exe "$W" --top 0 > "$T/ok.txt" 2> "$T/ok.err"
ok $? "analyze with the binary that ran: exit 0"
is "$(calls_of fib "$T/ok.txt") $(wc -c < "$T/ok.err")" "$want_fib 0" "exact counts, nothing on stderr"

"$CS" analyze "$T/f" --exe "$T/other/workload" > "$T/no.txt" 2> "$T/no.err"
is "$?" 1 "analyze with a rebuilt binary of the same name: exit 1"
is "$(wc -l < "$T/no.err") $(wc -c < "$T/no.txt")" "1 0" "one line on stderr, no report"
grep -q "^callsight analyze: --exe $T/other/workload is not the traced binary: its build-id [0-9a-f]\{32\} differs from pid [0-9]*'s ${id:0:32}; give the binary that ran (or --force)$" "$T/no.err"
ok $? "the refusal names both build-ids: $(cat "$T/no.err")"
"$CS" analyze "$T/f" --exe "$T/other/workload" -o "$T/no.json" --format json 2> /dev/null
[ $? -eq 1 ] && [ ! -e "$T/no.json" ]
ok $? "a refused run leaves no output file"

"$CS" analyze "$T/f" --exe "$T/other/workload" --force --top 0 > "$T/force.txt" 2> "$T/force.err"
ok $? "--force: exit 0"
# Names may well be wrong now (they are, against an ASan build); the counts not.
is "$(head -n 1 "$T/force.txt")" "$(head -n 1 "$T/ok.txt")" "--force: the report is written, same header"
grep -q "^callsight analyze: warning: .*differs.*--force" "$T/force.err"
ok $? "--force: a warning says the names may be wrong"

# An older trace: the same files without the marker are taken on trust.
mkdir -p "$T/old"
for f in "$T"/f/trace.*.bin; do
    { head -c 80 "$f"; tail -c +113 "$f"; } > "$T/old/${f##*/}"
done
"$CS" analyze "$T/old" --exe "$T/other/workload" --top 0 > "$T/old.txt" 2> "$T/old.err"
is "$? $(wc -c < "$T/old.err") $(head -n 1 "$T/old.txt")" "0 0 $(head -n 1 "$T/ok.txt")" \
    "files without the marker are accepted (any --exe), same header"

# Stream mode: the process announces its build-id once when it attaches.
stream_through "$T/s" /cs-test-buildid-$$ "$W" $PARAMS
"$CS" analyze "$T/s" --exe "$W" --top 0 > "$T/s.txt" 2> "$T/s.err"
is "$? $(calls_of fib "$T/s.txt")" "0 $want_fib" "stream: analyze with the binary that ran"
"$CS" analyze "$T/s" --exe "$T/other/workload" > /dev/null 2> "$T/sno.err"
is "$?" 1 "stream: a rebuilt binary is refused"
grep -q "differs from pid [0-9]* in stream [0-9]*'s ${id:0:32};" "$T/sno.err"
ok $? "stream: the refusal names the stream: $(cat "$T/sno.err")"
exit $_failed
