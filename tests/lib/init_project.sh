# init_project.sh - a tiny C project for the `callsight init` tests
# (tests/init/66*.t, tests/cross/666).  Source it after lib.sh.
#
#   new_project DIR     writes app.c, util.c, include/util.h, a Makefile and
#                       a CMakeLists.txt: the normal build of program `app`
#   project_counts      the exact calls of one run, "function calls" lines
#   pasted_lines OUT KIND   the lines init printed for KIND (Make or CMake)
#   check_counts REPORT LABEL   one TAP line: every function's exact count
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
