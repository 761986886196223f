#!/usr/bin/env bash
# What users do on a device: build trace_stream and the runtime from their
# own files with one cc line each, and a traced program whose ring cannot be
# attached says so once and falls back to trace files, losing nothing.
source "$(dirname "$0")/../lib/lib.sh"
plan 7

ROOT=$(cd "$TESTS/.." && pwd)
mkdir -p "$T/dev"
cp "$DIST/trace_stream.c" "$ROOT/runtime/trace.h" "$DIST/trace.c" "$T/dev/"
(cd "$T/dev" && cc -O2 -o trace_stream trace_stream.c -lzstd) 2> "$T/cc1.err"
ok $? "trace_stream builds with 'cc -O2 -o trace_stream trace_stream.c -lzstd' beside trace.h"
(cd "$T/dev" && ./trace_stream --help > help.out 2>&1) && grep -q 'SHM HOST PORT' "$T/dev/help.out"
ok $? "the standalone trace_stream runs (--help)"
(cd "$T/dev" && cc -std=c11 -Wall -Wextra -pedantic -Werror -O2 -c trace.c -o trace.o) 2> "$T/cc2.err"
ok $? "the runtime builds alone, strict C11, from trace.c and trace.h"

# A segment that is not a ring: the tracer must not use it, and must not stall.
SHM=/cs-test-notaring-$$
track_shm "$SHM"
head -c 4096 /dev/zero | tr '\0' 'x' > "/dev/shm$SHM"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_DIR="$T/files" timeout 60 "$B/examples/forker" \
    > /dev/null 2> "$T/fallback.err"
ok $? "the traced program runs"
is "$(grep -c 'callsight: TRACE_SHM=' "$T/fallback.err")" 1 "one line on stderr says the ring cannot be used"
sed 's/^/# /' "$T/fallback.err"
"$CS" analyze "$T/files" --exe "$B/examples/forker" --top 0 > "$T/a.txt" 2>&1
ok $? "it wrote trace files instead"
got=$(for f in main fork_and_work child_work leaf; do echo "$f=$(calls_of $f "$T/a.txt")"; done | tr '\n' ' ')
is "$got" "main=1 fork_and_work=1 child_work=1 leaf=500 " "with exact counts"
exit $_failed
