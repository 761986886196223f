#!/usr/bin/env bash
# 156-runtime-self-hooks.t - the runtime compiled with the program's own
# -finstrument-functions (issue 38: `cc -finstrument-functions *.c
# trace.c`, the obvious one-liner, segfaulted with TRACE_ENABLE=1, the
# hooks recursing through the runtime's own functions).  Every function of
# the runtime is marked no_instrument_function, so built that way at -O0
# and -O2 its object calls no hook, and the demo workload traced so gives
# its exact counts with no row of the runtime's own.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
plan 6

cp "$DIST/trace.c" "$DIST/trace.h" "$T/"
for o in 0 2; do
    cc -std=c11 -O$o -g -finstrument-functions -c -o "$T/trace$o.o" "$T/trace.c"
    n=$(objdump -dr "$T/trace$o.o" | grep -c 'R_[A-Z0-9_]*[[:space:]]*__cyg_profile_func_\(enter\|exit\)')
    is "$n" 0 "-O$o -finstrument-functions: the runtime's object calls no hook of its own"
done
cc -O2 -g -finstrument-functions -I"$T" -o "$T/wl" "$TESTS/../examples/workload.c" "$T/trace.c" -pthread
ok $? "the one-liner: the workload and the runtime in one cc -finstrument-functions line"
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/wl" > /dev/null
ok $? "it runs traced and exits 0"
"$CS" analyze "$T/tr" --exe "$T/wl" --top 0 > "$T/out" 2> "$T/err"
is "$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $10, $1 }' "$T/out" | sort)" "$(expect_counts 16 25 12 64 8 | sort)" \
    "the workload's exact counts, and no row of the runtime's own"
h=$(head -n 1 "$T/out")
is "$(field unmatched_exits "$h") $(field dropped "$h")" "0 0" "nothing unmatched, nothing dropped"
