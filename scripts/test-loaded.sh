#!/bin/sh
# test-loaded.sh - `make test-loaded`: `make test` RUNS times in a row (default
# 3) while two CPU-bound processes (`yes > /dev/null`) compete for the CPUs,
# as on a machine where the user is compiling something else.  Stops at the
# first failing run; exits 0 only when every run passed.  Each run's output
# is kept in $BUILD/test-loaded.N.log.
#
#   scripts/test-loaded.sh BUILD [RUNS]
set -u
build=${1:-build}
runs=${2:-3}
mkdir -p "$build" || exit 1

hogs=""
stop_hogs() { for p in $hogs; do kill "$p" 2>/dev/null; done; }
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for _ in 1 2; do
    yes > /dev/null &
    hogs="$hogs $!"
done
echo "test-loaded: 2 x yes running (pids$hogs); make test $runs times"

i=1
while [ "$i" -le "$runs" ]; do
    log=$build/test-loaded.$i.log
    start=$(date +%s)
    if make --no-print-directory test > "$log" 2>&1; then
        echo "test-loaded: run $i of $runs passed in $(( $(date +%s) - start )) s ($log)"
    else
        echo "test-loaded: run $i of $runs FAILED after $(( $(date +%s) - start )) s; the end of $log:"
        tail -n 30 "$log"
        exit 1
    fi
    i=$((i + 1))
done
echo "test-loaded: all $runs runs passed beside 2 CPU-bound processes"
