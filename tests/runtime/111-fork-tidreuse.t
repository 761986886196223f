#!/usr/bin/env bash
# Fork safety and tid reuse: both analyze with exact counts.
source "$(dirname "$0")/../lib/lib.sh"
plan 10

# clean_counts NAME PROGRAM FUNCTION...: analyze $T/NAME (examples/PROGRAM's
# run) into $T/NAME.txt and check it has no unmatched exit and no unclosed
# enter (one check); sets H, its header, and COUNTS, "f=calls " for each
# FUNCTION.
clean_counts() {
    local name=$1 prog=$2 f; shift 2
    "$CS" analyze "$T/$name" --exe "$B/examples/$prog" --top 0 > "$T/$name.txt" 2>&1
    H=$(head -n 1 "$T/$name.txt"); diag "$H"
    is "$(field unmatched_exits "$H") $(field unclosed_enters "$H")" "0 0" \
        "no unmatched exits, no unclosed enters"
    COUNTS=$(for f in "$@"; do echo "$f=$(calls_of $f "$T/$name.txt")"; done | tr '\n' ' ')
}

# --- fork: the child starts its own files and re-emits nothing ---
TRACE_ENABLE=1 TRACE_DIR="$T/fork" "$B/examples/forker" > "$T/fork.out"
ok $? "forker runs traced"
pids=$(ls "$T/fork" | sed -n 's/^trace\.\([0-9]*\)\..*/\1/p' | sort -u | wc -l)
is "$pids" 2 "parent and child each wrote their own files"
clean_counts fork forker main fork_and_work child_work leaf
is "$COUNTS" "main=1 fork_and_work=1 child_work=1 leaf=500 " "exact counts across parent and child"

# --- tid reuse: threads exit and are replaced by threads with the same tid ---
# Only root in a fresh pid namespace can steer tids (ns_last_pid).
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    TRACE_ENABLE=1 TRACE_DIR="$T/reuse" unshare --pid --fork --mount-proc \
        "$B/examples/tidreuse" > "$T/reuse.out"
    ok $? "tidreuse runs traced in its own pid namespace"
    is "$(sed -n 's/.*reused=\([0-9]*\).*/\1/p' "$T/reuse.out")" 5 \
        "every replacement thread reused its predecessor's tid"
    tids=$(ls "$T/reuse" | awk -F. '{print $3}' | sort -u | wc -l)
    is "$tids" 2 "files of two tids only (main + the reused one), none overwritten"
    clean_counts reuse tidreuse main run_generation thread_main leaf
    is "$COUNTS" "main=1 run_generation=6 thread_main=6 leaf=6000 " "exact counts across reused tids"
    # A thread counts once per (process, tid): main + one reused tid.
    is "$(field threads "$H")" 2 "threads counts distinct tids"
else
    for i in 1 2 3 4 5 6; do skip "tid reuse needs root and unshare --pid"; done
fi
exit $_failed
