# workload_expect.sh - the exact call counts of examples/workload.c, derived
# from its parameters (see the table at the top of workload.c).  Source it,
# then call expect_counts ITERS WORKERS FIB_N SORT_N MAT_N: it prints
# "function calls" lines.  WORKLOAD_SHORT names the functions whose calls are
# all short (microseconds; nap and the callers of nap are not), and
# short_maxes REPORT.json prints "name calls max_ns" for each.
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
