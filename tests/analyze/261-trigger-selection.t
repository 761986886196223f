#!/usr/bin/env bash
# 261-trigger-selection.t - triggers together with selection (issue 32).
# Four threads, one after another, each make one 4 ms call of slow (a
# TRACE_TRIGGER of slow>2ms fires on each: they are 150 ms apart, past the
# 100 ms between two asks) and one quick call; the threads are named
# skip-1, pick-1, skip-2, pick-2 inside worker.  Checked, exactly:
# - the runtime: with TRACE_THREADS='pick-*' the triggers are the pick
#   threads' alone (their stacks are slow alone: worker's entry came
#   before the name, so it is not recorded);
# - analyze: a trigger follows the selection as every row does: --thread
#   keeps the chosen threads' triggers (text, JSON, --jobs 2), --function
#   keeps the slow calls inside the function's calls, and a selection
#   that keeps none says how many it left out.
source "$(dirname "$0")/../lib/lib.sh"
plan 11

cat > "$T/t.c" << 'EOF2'
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
static __attribute__((noinline)) void nap(long ms)
{
    struct timespec d = {0, ms * 1000000L};
    while (nanosleep(&d, &d) != 0)
        ;
}
__attribute__((noinline)) void slow(void) { nap(4); }
__attribute__((noinline)) void quick(void) { nap(0); }
static void *worker(void *name)
{
    pthread_setname_np(pthread_self(), name);
    slow();
    quick();
    return NULL;
}
static void run_thread(const char *name)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)name);
    pthread_join(t, NULL);
    nap(150); /* past TRACE_TRIGGER_GAP_MS: each slow call may ask */
}
int main(void)
{
    run_thread("skip-1");
    run_thread("pick-1");
    run_thread("skip-2");
    run_thread("pick-2");
    return 0;
}
EOF2
build_traced "$T/t" "$T/t.c"
ok $? "the program builds"

# trig JSON: each trigger as THREAD-NAME:STACK (frames joined by >).
trig() {
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
names = {t["tid"]: t.get("name", "?") for t in r["threads"]}
print(" ".join("%s:%s" % (names.get(g["tid"], "?"), ">".join(f or "?" for f in g["stack"])) for g in r["triggers"]))' "$1"
}

TRACE_TRIGGER='slow>2ms' TRACE_ENABLE=1 TRACE_DIR="$T/all" "$T/t"
ok $? "it runs with TRACE_TRIGGER=slow>2ms"
"$CS" analyze "$T/all" --exe "$T/t" --format json -o "$T/all.json"
is "$(trig "$T/all.json")" "skip-1:worker>slow pick-1:worker>slow skip-2:worker>slow pick-2:worker>slow" \
    "every thread's slow call fired, each with its stack"

TRACE_THREADS='pick-*' TRACE_TRIGGER='slow>2ms' TRACE_ENABLE=1 TRACE_DIR="$T/pick" "$T/t"
"$CS" analyze "$T/pick" --exe "$T/t" --format json -o "$T/pick.json"
is "$(trig "$T/pick.json")" "pick-1:slow pick-2:slow" \
    "TRACE_THREADS='pick-*' with the trigger: the pick threads' triggers alone"

"$CS" analyze "$T/all" --exe "$T/t" --thread 'pick-*' --format json -o "$T/ap.json"
is "$(trig "$T/ap.json")" "pick-1:worker>slow pick-2:worker>slow" "analyze --thread 'pick-*': the pick threads' triggers alone (JSON)"
"$CS" analyze "$T/all" --exe "$T/t" --thread 'pick-*' --jobs 2 --format json -o "$T/apj.json"
is "$(trig "$T/apj.json")" "pick-1:worker>slow pick-2:worker>slow" "the same with --jobs 2"
"$CS" analyze "$T/all" --exe "$T/t" --thread skip-2 --trigger > "$T/s2.txt"
is "$(grep '^trigger:' "$T/s2.txt" | sed 's/ took .*on thread [0-9]*/ on thread/')" \
    "trigger: slow (t.c:10) on thread (skip-2); stack: worker > slow" "analyze --thread skip-2 --trigger: its one trigger (text)"

"$CS" analyze "$T/all" --exe "$T/t" --function worker --format json -o "$T/fw.json"
is "$(trig "$T/fw.json")" "skip-1:worker>slow pick-1:worker>slow skip-2:worker>slow pick-2:worker>slow" \
    "analyze --function worker: every slow call is inside one of worker's"
"$CS" analyze "$T/all" --exe "$T/t" --function quick --trigger --jobs 1 > "$T/fq.txt" 2> "$T/fq.err"
is "$? $(wc -c < "$T/fq.txt") $(cat "$T/fq.err")" \
    "1 0 callsight analyze: --trigger: no call selected fired TRACE_TRIGGER (4 did, outside --thread, --since, --until or --function)" \
    "analyze --function quick --trigger --jobs 1: none selected, exit 1, the four left out counted"
"$CS" analyze "$T/all" --exe "$T/t" --function quick --trigger --jobs 2 > /dev/null 2> "$T/fqj.err"
is "$(cat "$T/fqj.err")" \
    "callsight analyze: --trigger: no call selected fired TRACE_TRIGGER (4 did, outside --thread, --since, --until or --function)" \
    "the same with --jobs 2: the four counted across the jobs (a thread's files each)"
"$CS" analyze "$T/all" --exe "$T/t" --function quick --format json -o "$T/fq.json"
is "$(trig "$T/fq.json")" "" "analyze --function quick: no trigger in the JSON"
exit $_failed
