# workload_expect.sh - the exact call counts of examples/workload.c, derived
# from its parameters (see the table at the top of workload.c).  Source it,
# then call expect_counts ITERS WORKERS FIB_N SORT_N MAT_N: it prints
# "function calls" lines.  WORKLOAD_SHORT names the functions whose calls are
# all short (microseconds; nap and the callers of nap are not), and
# short_maxes REPORT.json prints "name calls max_ns" for each.
# exact_calls REPORT [EXPECT] checks a report's rows against such lines.
expect_counts() {
    local iters=$1 workers=$2 fib_n=$3 sort_n=$4 mat_n=$5
    local a=0 b=1 t i
    for ((i = 0; i < fib_n + 1; i++)); do t=$((a + b)); a=$b; b=$t; done # a = F(fib_n+1)
    local per=$((workers * iters))
    cat <<END
main 1
spawn_workers 1
join_workers 1
arg_int 5
worker_main $workers
do_iteration $per
matmul $per
nap $per
sort_keys $per
fill_keys $per
fib $((per * (2 * a - 1)))
msort $((per * (2 * sort_n - 1)))
merge $((per * (sort_n - 1)))
hash_key $((per * sort_n))
dot $((per * mat_n * mat_n))
END
}

WORKLOAD_SHORT="fib hash_key fill_keys merge msort dot matmul sort_keys"
short_maxes() {
    python3 - "$1" "$WORKLOAD_SHORT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in sorted(r["functions"], key=lambda f: f["name"]):
    if f["name"] in sys.argv[2].split():
        print(f["name"], f["calls"], f["max_ns"])
PY
}

# exact_calls REPORT [EXPECT]: true when every function of EXPECT ("function
# calls" lines; default $T/expect) has exactly its calls in the text REPORT;
# each one that has not is named in a diag line.
exact_calls() {
    local bad=0 f want got
    while read -r f want; do
        got=$(calls_of "$f" "$1")
        [ "$got" = "$want" ] || { diag "$1: $f calls=$got want $want"; bad=1; }
    done < "${2:-$T/expect}"
    return $bad
}

# analyze_workload_stream DIR REPORT: analyze DIR, where examples/workload
# streamed (with the counts in $T/expect, their sum in $calls), into the
# text REPORT, and check its header: all 2 * calls events (500,000+), the
# 26 threads, no unmatched exit, nothing dropped.  Three checks.
analyze_workload_stream() {
    "$CS" analyze "$1" --exe "$B/examples/workload" --top 0 > "$2" 2>&1
    ok $? "analyze reads the stream files"
    local h events
    h=$(head -n 1 "$2"); diag "$h"
    events=$(field events "$h")
    [ "$events" -ge 500000 ] && [ "$events" -eq $((2 * calls)) ]
    ok $? "all $((2 * calls)) events (500,000+) arrived"
    is "$(field threads "$h") $(field unmatched_exits "$h") $(field dropped "$h")" "26 0 0" \
        "threads=26 unmatched_exits=0 dropped=0"
}

# stream_workload TRACE_STREAM: serve into $T/stream, and examples/workload
# with $PARAMS streamed to it through the ring $SHM (big enough for the whole
# run, with a bounded wait, so nothing may drop) and the trace_stream
# program given; trace_stream's stderr in $T/client.err.  Three checks:
# serve listens, the workload runs, trace_stream drains and exits 0.
stream_workload() {
    start_serve "$T/stream" --quiet
    ok $? "serve listens on a free port"
    TRACE_SHM_SIZE=$RING_WHOLE_RUN start_trace_stream "$1" "$SHM"
    TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$B/examples/workload" $PARAMS > /dev/null
    ok $? "workload runs traced with TRACE_SHM"
    wait "$CLIENT_PID"
    ok $? "trace_stream exits 0 once the tracer detached and the ring drained"
}
