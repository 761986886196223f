#!/usr/bin/env bash
# 258-analyze-minmax-merge.t - min and max after every merge (issue 32):
# leaf's calls take 2 ms in one thread (or process) and 8 ms in the other,
# so a merge that keeps one side's min or max is off by milliseconds.  The
# workload reads CLOCK_MONOTONIC inside leaf (in) and around its call (out),
# the tracer the same clock (TRACE_CLOCK=mono), so the exact bounds
# min(in) <= min_ns <= min(out) and max(in) <= max_ns <= max(out) need no
# tolerance.  Merges: two threads, two processes (fork), analyze --jobs 2,
# summary mode in files and through a stream (serve's increments).
source "$(dirname "$0")/../lib/lib.sh"
plan 8

cat > "$T/mm.c" << 'EOF2'
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define NOI __attribute__((no_instrument_function))
#define CALLS 4
static NOI uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
struct side { uint64_t ms, in[CALLS], out[CALLS]; };
static __attribute__((noinline)) uint64_t leaf(uint64_t ns)
{
    uint64_t a = now_ns();
    while (now_ns() - a < ns)
        ;
    return now_ns() - a;
}
static __attribute__((noinline)) void *side_main(void *p)
{
    struct side *s = p;
    for (int i = 0; i < CALLS; i++) {
        uint64_t a = now_ns();
        s->in[i] = leaf(s->ms * 1000000u);
        s->out[i] = now_ns() - a;
    }
    return NULL;
}
static NOI void say(const struct side *s)
{
    for (int i = 0; i < CALLS; i++)
        printf("call in=%llu out=%llu\n", (unsigned long long)s->in[i], (unsigned long long)s->out[i]);
    fflush(stdout);
}
int main(int argc, char **argv)
{
    struct side a = {2, {0}, {0}}, b = {8, {0}, {0}};
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        pid_t p = fork();
        side_main(p == 0 ? &b : &a);
        if (p == 0) {
            say(&b);
            return 0;
        }
        waitpid(p, NULL, 0);
        say(&a);
        return 0;
    }
    pthread_t t;
    pthread_create(&t, NULL, side_main, &b);
    side_main(&a);
    pthread_join(t, NULL);
    say(&a);
    say(&b);
    return 0;
}
EOF2
build_traced "$T/mm" "$T/mm.c"
ok $? "the workload builds"

# check NAME OUT DIR [ANALYZE-ARGS]: leaf's calls (8) exact, its min and
# max within the bounds the workload measured, from analyze's JSON.
check() {
    local name=$1 out=$2 dir=$3
    shift 3
    "$CS" analyze "$dir" --exe "$T/mm" --format json -o "$T/$name.json" "$@" 2> "$T/$name.err"
    python3 - "$T/$name.json" "$out" > "$T/$name.chk" 2>&1 << 'PY'
import json, sys
f = {x["name"]: x for x in json.load(open(sys.argv[1]))["functions"]}["leaf"]
c = [dict(kv.split("=") for kv in l.split()[1:]) for l in open(sys.argv[2]) if l.startswith("call ")]
i = [int(x["in"]) for x in c]
o = [int(x["out"]) for x in c]
print("# calls=%d min=%d in [%d, %d] max=%d in [%d, %d]" % (f["calls"], f["min_ns"], min(i), min(o), f["max_ns"], max(i), max(o)))
sys.exit(not (f["calls"] == len(c) == 8 and min(i) <= f["min_ns"] <= min(o) and max(i) <= f["max_ns"] <= max(o)))
PY
    local rc=$?
    sed 's/^/# /' "$T/$name.chk" "$T/$name.err"
    ok $rc "$name: leaf's 8 calls, min and max within the bounds measured"
}

TRACE_CLOCK=mono TRACE_ENABLE=1 TRACE_DIR="$T/thr" timeout 60 "$T/mm" > "$T/thr.out"
check "two threads" "$T/thr.out" "$T/thr"
TRACE_CLOCK=mono TRACE_ENABLE=1 TRACE_DIR="$T/fork" timeout 60 "$T/mm" fork > "$T/fork.out"
check "two processes" "$T/fork.out" "$T/fork"
check "two processes, --jobs 2" "$T/fork.out" "$T/fork" --jobs 2
check "two threads, --jobs 2" "$T/thr.out" "$T/thr" --jobs 2
TRACE_MODE=summary TRACE_SUMMARY_MS=0 TRACE_CLOCK=mono TRACE_ENABLE=1 TRACE_DIR="$T/sthr" timeout 60 "$T/mm" > "$T/sthr.out"
check "summary, two threads" "$T/sthr.out" "$T/sthr"
TRACE_MODE=summary TRACE_SUMMARY_MS=0 TRACE_CLOCK=mono TRACE_ENABLE=1 TRACE_DIR="$T/sfork" timeout 60 "$T/mm" fork > "$T/sfork.out"
check "summary, two processes" "$T/sfork.out" "$T/sfork"
TRACE_MODE=summary TRACE_SUMMARY_MS=5 TRACE_CLOCK=mono stream_through "$T/sstr" /cs-minmax-$$ \
    sh -c 'exec "$0" > "$1"' "$T/mm" "$T/sstr.out"
check "summary increments through a stream" "$T/sstr.out" "$T/sstr"
exit $_failed
