#!/usr/bin/env bash
# 669-select-make.t - trace.config with the Make wiring, on examples/multidir
# (folders, two static helpers of one name, a call through a macro, one
# through a function pointer, a header's inline function, a *_test.c):
# the exact set of instrumented functions, with exact counts, for include
# of a folder, exclude of a file (a.c never takes data.c with it), exclude
# of a glob; editing trace.config recompiles exactly the objects whose
# flags changed, and the next trace shows the new selection; a bad line
# stops the build with file:line; clang selects files the same way; and the
# CMake wiring chooses the same, rebuilding exactly what an edit moved.
source "$(dirname "$0")/../lib/lib.sh"
plan 21

source "$TESTS/lib/multidir_project.sh"
multidir_project

printf '# only the network code\ninclude src/net/   # both files\n' > "$P/trace.config"
traced net
ok $? "include src/net/: make instrument builds and app.instr runs traced"
is "$(cat "$T/net.rows")" "helper a.c 100
helper data.c 200
net_a a.c 100
net_data data.c 100" "include a folder: its functions only, the two static helpers apart, exact counts"
nm "$P/callsight-obj/main.o" | grep -q __cyg_profile
ok $((! $?)) "an unselected source is compiled with no hooks at all"
$M instrument > "$T/again.make" 2>&1
is "$(compiled again)" "" "make instrument again: nothing recompiled"

sleep 1 # a new mtime for the edited config, on coarse file systems
printf 'include src/\nexclude net/a.c\nexclude *_test.c\n' > "$P/trace.config"
traced edit
is "$(compiled edit)" "src/net/a.o src/util/hash.o src/util/hash_mix.o " \
    "after an edit, exactly the objects whose flags changed are recompiled"
is "$(cat "$T/edit.rows")" "helper data.c 200
mix hash_mix.c 100
net_data data.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100" \
    "exclude net/a.c keeps data.c; exclude *_test.c; the macro's calls are counted (util_hash 2x100 + 3)"

rm "$P/trace.config"
sleep 1
traced all
is "$(compiled all)" "main.o src/net/a.o src/util/hash_test.o " "no trace.config: the rest is instrumented too"
is "$(cat "$T/all.rows")" "clamp app.h 100
hash_selftest hash_test.c 1
helper a.c 100
helper data.c 200
main main.c 1
mix hash_mix.c 100
net_a a.c 100
net_data data.c 100
run main.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100
via_pointer main.c 100" \
    "every function, the header's inline one and the one called through a pointer included"

refused bad 'include src/\nexclude\n' "a bad trace.config stops the build" \
    "callsight flags: trace.config:2: expected a path pattern after the directive"

# scan says the same before anything is built.
printf 'include src/\nexclude net/a.c\nexclude *_test.c\n' > "$P/trace.config"
(cd "$P" && "$CS" scan) > "$T/scan.out" 2>&1
is "$(sed -n 1p "$T/scan.out")" "scan: 6 sources, 3 instrumented, 3 not (./trace.config)" "scan: the counts"
is "$(sed -n '2,$p' "$T/scan.out" | awk '{print $1, $2}' | tr '\n' ' ')" \
    "off main.c off src/net/a.c on src/net/data.c on src/util/hash.c on src/util/hash_mix.c off src/util/hash_test.c " \
    "scan: each source, on or off"
grep -q '^  off  src/net/a.c  *exclude net/a.c (line 2)$' "$T/scan.out"
ok $? "scan: and the line that decided"

# clang: the same files selected.
if command -v clang > /dev/null; then
    $M callsight-clean > /dev/null 2>&1
    $M instrument CC=clang > "$T/clang.make" 2>&1
    ok $? "clang: make instrument CC=clang"
    rm -rf "$T/tr-clang"
    (cd "$P" && TRACE_ENABLE=1 TRACE_DIR="$T/tr-clang" ./app.instr > /dev/null)
    func_rows "$T/tr-clang" "$P/app.instr" > "$T/clang.rows"
    is "$(cat "$T/clang.rows")" "$(cat "$T/edit.rows")" "clang: the same functions and counts as gcc"
else
    skip "clang: not installed"
    skip "clang: not installed"
fi

# --- CMake: the same choice, made at configure time ---
command -v cmake > /dev/null 2>&1 || "$TESTS/../scripts/deps.sh" install cmake > "$T/deps.out" 2>&1
if command -v cmake > /dev/null 2>&1; then
    cmake_project 'include src/net/' "$T/cm1.build"
    ok $? "cmake: configures with trace.config and builds --target instr"
    cm_rows() {
        rm -rf "$T/tr-cm"
        (cd "$C" && TRACE_ENABLE=1 TRACE_DIR="$T/tr-cm" ./build/app.instr > /dev/null) &&
            func_rows "$T/tr-cm" "$C/build/app.instr"
    }
    is "$(cm_rows)" "$(cat "$T/net.rows")" "cmake: include src/net/, the same functions and counts as make"
    sleep 1
    printf 'include src/\nexclude net/a.c\nexclude *_test.c\n' > "$C/trace.config"
    (cd "$C" && cmake --build build --target instr > "$T/cm2.build" 2>&1)
    ok $? "cmake: after an edit, --target instr reconfigures and builds"
    is "$(grep -o 'Building C object CMakeFiles/app_instr[a-z_]*.dir/[^ ]*' "$T/cm2.build" | sed 's|.*\.dir/||' | sort | tr '\n' ' ')" \
        "src/net/a.c.o src/util/hash.c.o src/util/hash_mix.c.o " "cmake: exactly the sources whose choice changed are recompiled"
    is "$(cm_rows)" "$(cat "$T/edit.rows")" "cmake: the new choice, the same as make's"
else
    for _ in 1 2 3 4 5; do skip "cmake is not installed and scripts/deps.sh install cmake failed"; done
fi
exit $_failed
