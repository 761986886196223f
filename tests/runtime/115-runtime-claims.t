#!/usr/bin/env bash
# 15-runtime-claims.t - what docs/runtime.md promises of file mode and the
# environment, each shown:
#   - a write that fails (disk full: a small tmpfs) trims the file back to
#     whole records, prints one line and stops capture for the process,
#     which itself runs on unharmed; it leaves a write-error marker "if it
#     still can": other threads may take the room the trim freed before
#     the marker gets it, so there is at most one, and analyze notes it;
#   - a bad TRACE_* value gets one line on stderr and the default;
#   - TRACE_DIR is made absolute at start, so a later chdir cannot scatter
#     the files.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 11
trap 'umount "$T/tiny" 2>/dev/null; cleanup' EXIT
R=$(cd "$TESTS/.." && pwd)
W=$B/examples/workload

# ---- disk full: a 256 KiB tmpfs, a run that writes about 20 MB ----
mkdir -p "$T/tiny"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=256k tmpfs "$T/tiny" 2>/dev/null; then
    TRACE_ENABLE=1 TRACE_DIR="$T/tiny/tr" timeout 60 "$W" > /dev/null 2> "$T/full.err"
    ok $? "disk full: the workload still runs to the end, exit 0"
    is "$(grep -c . "$T/full.err") $(grep -c "^callsight: writing trace files in $T/tiny/tr failed: No space left on device; capture stopped$" "$T/full.err")" \
        "1 1" "disk full: one line on stderr says so"
    bad=""
    for f in "$T"/tiny/tr/trace.*.bin; do
        [ $(( ($(stat -c %s "$f") - 80) % 32 )) -eq 0 ] || bad="$bad $(basename "$f")"
    done
    is "${bad:-none}" none "disk full: every file holds whole records only (trimmed back)"
    marks=$(for f in "$T"/tiny/tr/trace.*.bin; do perl "$TESTS/tools/tracecheck.pl" "$f" | tail -n 1; done |
        grep -o 'markers=[0-9:,]*' | tr ',' '\n' | grep -c '^\(markers=\)\?3\(:\|$\)')
    [ "$marks" -le 1 ]
    ok $? "disk full: at most one write-error marker (code 3) in the files ($marks)"
    "$CS" analyze "$T/tiny/tr" --exe "$W" > "$T/full.txt" 2>&1
    noted=$(grep -c "^note: pid [0-9]*: capture stopped: write error: No space left on device (errno 28)$" "$T/full.txt")
    is "$noted" "$marks" "disk full: analyze reads what was written and notes the write error when marked"
    umount "$T/tiny"
else
    for _ in 1 2 3 4 5; do skip "disk full: cannot mount a tmpfs here (not root)"; done
fi

# ---- bad values: one line each, then the defaults ----
TRACE_ENABLE=1 TRACE_DIR="$T/bad" TRACE_MAX_MB=lots TRACE_SEG_MB=0 TRACE_CLOCK=sundial \
    TRACE_SHM_WAIT_US=-5 TRACE_SHM_SIZE=12 timeout 60 "$W" 2 2 8 16 4 > /dev/null 2> "$T/bad.err"
ok $? "bad values: the workload runs"
sed 's/^/# /' "$T/bad.err"
is "$(sort "$T/bad.err")" "$(sort <<E
callsight: TRACE_CLOCK=sundial is not auto, tsc or mono; using auto
callsight: TRACE_MAX_MB=lots is not a whole number from 1 to 16777216; using 512
callsight: TRACE_SEG_MB=0 is not a whole number from 1 to 16777216; using 64
callsight: TRACE_SHM_SIZE=12 is not a whole number from 2144 to 4294967360; using 16777216
callsight: TRACE_SHM_WAIT_US=-5 is not a whole number from 0 to 60000000; using 0
E
)" "bad values: one line each, naming the value, the range and the default"
"$CS" analyze "$T/bad" --exe "$W" --top 0 > "$T/bad.txt" 2>&1
expect_counts 2 2 8 16 4 | sort > "$T/bad.expect"
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {print $10, $1}' "$T/bad.txt" | sort)" "$(cat "$T/bad.expect")" \
    "bad values: traced with the defaults, exact counts"
TRACE_ENABLE=yes TRACE_DIR="$T/off" timeout 60 "$W" 2 2 8 16 4 > /dev/null 2> "$T/off.err"
is "$(cat "$T/off.err") $([ -e "$T/off" ] && echo files)" \
    "callsight: TRACE_ENABLE=yes is not 0 or 1; tracing off " "TRACE_ENABLE=yes: one line, and tracing stays off"

# ---- TRACE_DIR relative, then the program changes directory ----
cat > "$T/cd.c" <<'C'
#include <stdio.h>
#include <unistd.h>
static int __attribute__((noinline)) work(int i) { return i * 3; }
int main(void)
{
    int s = 0;
    if (chdir("sub") != 0)
        return 1;
    for (int i = 0; i < 5000; i++)
        s += work(i);
    printf("%d\n", s);
    return 0;
}
C
cc -std=c11 -O2 -c "$DIST/trace.c" -o "$T/trace.o" &&
    cc -std=c11 -O2 -g -finstrument-functions -I"$R/runtime" "$T/cd.c" "$T/trace.o" -pthread -o "$T/cd"
ok $? "a program that changes directory after start builds"
mkdir -p "$T/run/sub"
(cd "$T/run" && TRACE_ENABLE=1 TRACE_DIR=rel "$T/cd" > /dev/null)
n_here=$(ls "$T"/run/rel/trace.*.bin 2>/dev/null | wc -l)
n_there=$(ls "$T"/run/sub/rel 2>/dev/null | wc -l)
"$CS" analyze "$T/run/rel" --exe "$T/cd" --top 0 > "$T/cd.txt" 2>&1
is "$n_here $n_there $(calls_of work "$T/cd.txt")" "1 0 5000" \
    "TRACE_DIR=rel: the files are in rel/ of the start directory, none under the new one, exact counts"
exit $_failed
