#!/usr/bin/env bash
# 159-values.t - self and inclusive times, min and max, end to end, against
# bounds the workload measures itself (issue 32): parent spins 5 ms of its
# own, then calls child, which sleeps 20 ms; three calls.  The workload
# reads CLOCK_MONOTONIC around its own windows and the tracer reads the same
# clock (TRACE_CLOCK=mono), so each bound holds whatever the machine's load
# and needs no tolerance (tests/tools/valuecheck.py derives them).
#   - file mode, every write slowed to 50 ms (tests/tools/slowwrite.c) and
#     TRACE_FLUSH_MS=2, so child's enter flushes (its batch is 5 ms old):
#     those >= 50 ms are the tracer's, out of child's and parent's times,
#     and not taken twice out of parent's self time;
#   - summary mode: parent's self time is its inclusive time less child's;
#   - through a stream (trace_stream and serve).
source "$(dirname "$0")/../lib/lib.sh"
plan 10
need_tools slowwrite.so

cat > "$T/values.c" << 'EOF2'
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#define NOI __attribute__((no_instrument_function))
#define CALLS 3
static NOI uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static uint64_t own[CALLS], cin[CALLS], cout[CALLS], pout[CALLS];
static int k;
static __attribute__((noinline)) void child(void)
{
    uint64_t a = now_ns();
    struct timespec d = {0, 20000000};
    while (nanosleep(&d, &d) != 0)
        ;
    cin[k] = now_ns() - a;
}
static __attribute__((noinline)) void parent(void)
{
    uint64_t a = now_ns(), b;
    while (now_ns() - a < 5000000)
        ;
    b = now_ns();
    own[k] = b - a;
    child();
    cout[k] = now_ns() - b;
}
int main(void)
{
    for (k = 0; k < CALLS; k++) {
        uint64_t a = now_ns();
        parent();
        pout[k] = now_ns() - a;
    }
    for (k = 0; k < CALLS; k++)
        printf("call own=%llu cin=%llu cout=%llu pout=%llu\n", (unsigned long long)own[k],
               (unsigned long long)cin[k], (unsigned long long)cout[k], (unsigned long long)pout[k]);
    return 0;
}
EOF2
build_traced "$T/values" "$T/values.c"
ok $? "the workload builds"

# check NAME DIR OUT F [ANALYZE-ARGS...]: analyze DIR as JSON, then every
# bound of valuecheck.py with F ns of tracer time known in each child call.
check() {
    local name=$1 dir=$2 out=$3 f=$4
    shift 4
    "$CS" analyze "$dir" --exe "$T/values" --format json -o "$T/$name.json" "$@" 2> "$T/$name.err" &&
        python3 "$TESTS/tools/valuecheck.py" "$T/$name.json" "$out" "$f" > "$T/$name.chk"
    local rc=$?
    sed 's/^/# /' "$T/$name.chk" "$T/$name.err"
    ok $rc "$name: calls exact, every time within the bounds the workload measured"
}

# --- file mode, a slowed flush inside every call of child ---
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    LD_PRELOAD=$TOOLBIN/slowwrite.so SLOWWRITE_MS=50 TRACE_FLUSH_MS=2 TRACE_CLOCK=mono \
    TRACE_ENABLE=1 TRACE_DIR="$T/file" timeout 60 "$T/values" > "$T/file.out"
ok $? "file mode: the workload runs, every write slowed to 50 ms"
check file "$T/file" "$T/file.out" 50000000
flushes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sources"][0]["tracer_flushes"])' "$T/file.json")
[ "$flushes" -ge 3 ]
ok $? "file mode: at least one flush per call of child was taken out ($flushes)"
# With the tracer's time kept, the same trace breaks the bounds: the check can fail.
"$CS" analyze "$T/file" --exe "$T/values" --format json -o "$T/kept.json" --keep-tracer-time &&
    ! python3 "$TESTS/tools/valuecheck.py" "$T/kept.json" "$T/file.out" 50000000 > /dev/null
ok $? "file mode, --keep-tracer-time: the flushes show in child's times, outside the bounds"

# --- summary mode ---
TRACE_MODE=summary TRACE_SUMMARY_MS=0 TRACE_CLOCK=mono TRACE_ENABLE=1 TRACE_DIR="$T/sum" \
    timeout 60 "$T/values" > "$T/sum.out"
ok $? "summary mode: the workload runs"
check summary "$T/sum" "$T/sum.out" 0

# --- through a stream ---
TRACE_CLOCK=mono stream_through "$T/str" /cs-values-$$ sh -c 'exec "$0" > "$1"' "$T/values" "$T/str.out"
[ "$(grep -c '^call ' "$T/str.out")" = 3 ]
ok $? "stream: the workload ran through trace_stream and serve"
check stream "$T/str" "$T/str.out" 0
TRACE_MODE=summary TRACE_CLOCK=mono stream_through "$T/sstr" /cs-values-s-$$ sh -c 'exec "$0" > "$1"' "$T/values" "$T/sstr.out"
check summary-stream "$T/sstr" "$T/sstr.out" 0
exit $_failed
