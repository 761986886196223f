#!/usr/bin/env bash
# 157-summary-recursion-incl.t - summary mode counts a recursive function's
# inclusive time once per outermost frame, as analyze does in event mode
# (issue 38; test analyze/236 for events): before, the device added every
# frame's time, so rec below showed about three times the time under it.
# TRACE_MODE=both records each call both ways from one clock reading per
# hook (TRACE_CLOCK=mono: ns, no conversion to round), and so few events
# that no flush falls inside a call: every figure of the summary equals
# the events' to the ns.
source "$(dirname "$0")/../lib/lib.sh"
plan 5

cat > "$T/rec.c" << 'EOF2'
#include <stdint.h>
#include <time.h>
static __attribute__((no_instrument_function)) uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static __attribute__((no_instrument_function)) void spin(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}
/* direct recursion: 5 frames deep */
static __attribute__((noinline)) void rec(int n)
{
    spin(20000);
    if (n)
        rec(n - 1);
    spin(20000);
}
/* recursion through another function: ping -> pong -> ping ... */
static __attribute__((noinline)) void ping(int n);
static __attribute__((noinline)) void pong(int n)
{
    spin(30000);
    if (n)
        ping(n - 1);
}
static __attribute__((noinline)) void ping(int n)
{
    spin(10000);
    pong(n);
}
static __attribute__((noinline)) void leaf(void) { spin(5000); }
int main(void)
{
    for (int i = 0; i < 3; i++)
        rec(4);
    ping(3);
    leaf();
    return 0;
}
EOF2
build_traced "$T/rec" "$T/rec.c"
TRACE_MODE=both TRACE_CLOCK=mono TRACE_SUMMARY_MS=0 TRACE_ENABLE=1 TRACE_DIR="$T/both" "$T/rec"
ok $? "TRACE_MODE=both: one run, each call as an event and in the summary"
python3 "$TESTS/tools/sumcheck.py" split "$T/both" "$T/sum" "$T/ev" > /dev/null
"$CS" analyze "$T/sum" --exe "$T/rec" --format json -o "$T/sum.json" &&
    "$CS" analyze "$T/ev" --exe "$T/rec" --format json -o "$T/ev.json"
ok $? "the summaries and the events, each analyzed from a directory of its own"

# name calls incl self min max, per function
rows() {
    python3 -c 'import json, sys
for f in sorted(json.load(open(sys.argv[1]))["functions"], key=lambda f: f["name"]):
    print(f["name"], f["calls"], f["incl_ns"], f["self_ns"], f["min_ns"], f["max_ns"])' "$1"
}
rows "$T/sum.json" > "$T/sum.rows"
rows "$T/ev.json" > "$T/ev.rows"
is "$(awk '{ print $1, $2 }' "$T/sum.rows" | tr '\n' ' ')" "leaf 1 main 1 ping 4 pong 4 rec 15 " \
    "the summary counts every call: rec 15 (3 x 5 frames), ping and pong 4 each"
is "$(cat "$T/sum.rows")" "$(cat "$T/ev.rows")" \
    "calls, inclusive, self, min and max equal the events' to the ns: inclusive time counted once per outermost frame"
# under main: rec's outermost frames, ping's outermost frame, leaf, and main's own time
read -r rec_incl <<< "$(awk '$1 == "rec" { print $3 }' "$T/sum.rows")"
read -r ping_incl <<< "$(awk '$1 == "ping" { print $3 }' "$T/sum.rows")"
read -r leaf_incl <<< "$(awk '$1 == "leaf" { print $3 }' "$T/sum.rows")"
read -r main_incl main_self <<< "$(awk '$1 == "main" { print $3, $4 }' "$T/sum.rows")"
is "$((rec_incl + ping_incl + leaf_incl + main_self))" "$main_incl" \
    "the summary's rec, ping and leaf inclusive times and main's self time add up to main's inclusive time exactly"
exit $_failed
