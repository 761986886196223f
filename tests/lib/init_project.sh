# init_project.sh - a tiny C project for the `callsight init` tests
# (tests/init/66*.t, tests/cross/666).  Source it after lib.sh.
#
#   new_project DIR     writes app.c, util.c, include/util.h, a Makefile and
#                       a CMakeLists.txt: the normal build of program `app`
#   project_counts      the exact calls of one run, "function calls" lines
#   pasted_lines OUT KIND   the lines init printed for KIND (Make or CMake)
#   check_counts REPORT LABEL   one TAP line: every function's exact count
#   trace_both_ways APP STREAMER SHM WHAT   APP (built in $P) traced to
#                       files, then through STREAMER and serve: four TAP lines
#
# The Make wiring applies the project's trace.config (init writes a starter)
# with the callsight tool, which is not on PATH here: CALLSIGHT names ours.
export CALLSIGHT=$CS

# UTIL_ROUNDS comes from the build (a -D in the Makefile, a
# target_compile_definitions in CMake), so exact counts also prove that the
# instrumented profile kept the project's definitions and include paths.
new_project() {
    mkdir -p "$1/include"
    cat > "$1/include/util.h" <<'END'
int util_sum(int n);
END
    cat > "$1/util.c" <<'END'
#include "util.h"
__attribute__((noinline)) static int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int util_sum(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += leaf(i);
    return s;
}
END
    cat > "$1/app.c" <<'END'
#include <stdio.h>
#include "util.h"
__attribute__((noinline)) static int step(int i) { return util_sum(i % 4 + 1); }
int main(void)
{
    long total = 0;
    for (int r = 0; r < UTIL_ROUNDS; r++)
        total += step(r);
    printf("total %ld\n", total);
    return 0;
}
END
    printf 'CFLAGS = -O2 -Iinclude -DUTIL_ROUNDS=12\napp: app.c util.c\n\t$(CC) $(CFLAGS) -o $@ app.c util.c\n' \
        > "$1/Makefile"
    cat > "$1/CMakeLists.txt" <<'END'
cmake_minimum_required(VERSION 3.13)
project(tiny C)
add_executable(app app.c util.c)
target_include_directories(app PRIVATE include)
target_compile_definitions(app PRIVATE UTIL_ROUNDS=12)
END
}

# 12 rounds of step(r) -> util_sum(r % 4 + 1): 3 x (1+2+3+4) = 30 leaf calls.
project_counts() {
    printf 'main 1\nstep 12\nutil_sum 12\nleaf 30\n'
}

pasted_lines() {
    sed -n "/^$2: add these lines/,/^then build/p" "$1" | sed -n 's/^    //p'
}

check_counts() {
    local bad=0 f want got
    while read -r f want; do
        got=$(calls_of "$f" "$1")
        [ "$got" = "$want" ] || { diag "$2: $f calls=$got want $want"; bad=1; }
    done < <(project_counts)
    [ "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' "$1" | wc -l)" -eq 4 ] || { diag "$2: not 4 rows"; bad=1; }
    ok $bad "$2: exact counts main=1 step=12 util_sum=12 leaf=30, names resolved"
}

# trace_both_ways APP STREAMER SHM WHAT: run $P/APP traced to files, then
# through ring SHM, the STREAMER init's wiring built, and a serve; exact
# counts of both traces (WHAT names STREAMER in the streaming test's line).
trace_both_ways() {
    local app=$1 streamer=$2 shm=$3 what=$4 client
    (cd "$P" && TRACE_ENABLE=1 TRACE_DIR="$T/files" timeout 30 "./$app" > "$T/run.out")
    ok $? "app.instr runs traced (file mode)"
    "$CS" analyze "$T/files" --exe "$P/$app" --top 0 > "$T/f.txt" 2>&1
    check_counts "$T/f.txt" "file mode"

    track_shm "$shm"
    start_serve "$T/stream" --quiet
    timeout 30 "$streamer" --quiet "$shm" 127.0.0.1 "$SERVE_PORT" 2> "$T/client.err" &
    client=$!
    track_pid $client
    wait_file "/dev/shm$shm"
    (cd "$P" && TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 30 "./$app" > /dev/null)
    wait $client
    ok $? "$what forwards the run and exits 0"
    wait_serve_closed 1
    stop_serve
    "$CS" analyze "$T/stream" --exe "$P/$app" --top 0 > "$T/s.txt" 2>&1
    check_counts "$T/s.txt" "streamed"
}
