#!/usr/bin/env bash
# 676-readme-quickstart.t - README's Quick start, run as written (issue 38:
# "make -C yourproject instrument" said "No rule to make target" because
# the step of adding init's lines was missing).  Each block of commands
# under "## Quick start" is taken from README.md as it stands and run in a
# scratch directory holding a small project named as the README names it
# (yourproject/, yourapp from main.c and util.c), with callsight on PATH;
# the report of each run has the project's exact counts.
source "$(dirname "$0")/../lib/lib.sh"
if ! command -v cmake > /dev/null 2>&1; then
    "$TESTS/../scripts/deps.sh" install cmake > "$T/deps.out" 2>&1
fi
plan 7

# block N: the N-th block of indented lines in the Quick start section.
block() {
    awk -v want="$1" '
        /^## / { inside = ($0 == "## Quick start") ; next }
        !inside { next }
        /^    / { if (!inblk) { n++; inblk = 1 } if (n == want) print substr($0, 5); next }
        { inblk = 0 }' "$TESTS/../README.md"
}
# project DIR: yourapp from main.c and util.c; leaf() is called 30 times.
project() {
    mkdir -p "$1"
    cat > "$1/main.c" <<'C'
#include <stdio.h>
int leaf(int i);
int main(int argc, char **argv)
{
    int s = 0;
    for (int i = 0; i < 30; i++)
        s += leaf(i);
    printf("yourapp: %d (%d args)\n", s, argc - 1);
    (void)argv;
    return 0;
}
C
    cat > "$1/util.c" <<'C'
int leaf(int i)
{
    return i * 2;
}
C
}
counts() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { print $1, $10 }' "$1" | sort; }

# --- Make ---
mkdir -p "$T/make" && cd "$T/make" || exit 1
project yourproject
printf 'yourapp: main.c util.c\n\tcc -O2 -g -o yourapp main.c util.c\n' > yourproject/Makefile
block 1 > "$T/make.sh"
grep -q '^make -C yourproject instrument' "$T/make.sh"
ok $? "the Make block is found in README.md"
PATH=$B:$PATH TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 300 bash -e "$T/make.sh" > "$T/make.out" 2> "$T/make.err"
ok $? "the Make block runs as written, every command exits 0" || sed 's/^/# /' "$T/make.err" | tail -n 20
is "$(grep '^yourapp: ' "$T/make.out" | tr '\n' ' ')" "yourapp: 870 (1 args) yourapp: 870 (0 args) " \
    "the program ran twice, its output its own: with its argument, then under --stream"
is "$(counts "$T/make.out" | sort -u)" "1 main
30 leaf" "both reports: leaf 30 calls, main 1, exact"

# --- CMake ---
if ! command -v cmake > /dev/null 2>&1; then
    skip "cmake is not installed: $(tail -n 1 "$T/deps.out" 2>/dev/null)" 3
    exit 0
fi
mkdir -p "$T/cmake" && cd "$T/cmake" || exit 1
project yourproject
printf 'cmake_minimum_required(VERSION 3.13)\nproject(yourapp C)\nadd_executable(yourapp main.c util.c)\n' \
    > yourproject/CMakeLists.txt
block 2 > "$T/cmake.sh"
grep -q '^callsight init --build cmake yourproject' "$T/cmake.sh"
ok $? "the CMake block is found in README.md"
PATH=$B:$PATH timeout 300 bash -e "$T/cmake.sh" > "$T/cmake.out" 2> "$T/cmake.err"
ok $? "the CMake block runs as written" || sed 's/^/# /' "$T/cmake.err" | tail -n 20
is "$(counts "$T/cmake.out")" "1 main
30 leaf" "its report: leaf 30 calls, main 1, exact"
