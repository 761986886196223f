#!/usr/bin/env bash
# The generated CMake wiring: the lines `callsight init --build cmake` prints,
# pasted at the end of the project's CMakeLists.txt, add app.instr (with the
# target's definitions and include paths) and trace_stream beside the normal
# build, which keeps zero hooks; both trace and stream with exact counts.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/init_project.sh"

if ! command -v cmake > /dev/null 2>&1; then
    "$TESTS/../scripts/deps.sh" install cmake > "$T/deps.out" 2>&1
fi
if ! command -v cmake > /dev/null 2>&1; then
    plan 1
    skip "cmake is not installed and scripts/deps.sh install cmake failed: $(tail -n 1 "$T/deps.out")"
    exit 0
fi
plan 13

P=$T/proj
new_project "$P"
"$CS" init --stream --build cmake "$P" > "$T/init.out" 2> "$T/init.err"
ok $? "callsight init --stream --build cmake DIR exits 0"
[ -f "$P/callsight/callsight.cmake" ] && [ ! -e "$P/callsight/callsight.mk" ] &&
    [ "$(grep -c '^  wrote ' "$T/init.out")" -eq 5 ] && [ -f "$P/trace.config" ]
ok $? "it wrote the runtime, trace_stream.c, the CMake module and the starter trace.config"
pasted_lines "$T/init.out" CMake > "$T/paste"
is "$(cat "$T/paste")" "include(callsight/callsight.cmake)
callsight_instrument(app)" "it prints the CMake lines to paste, naming the project's target"
cat "$T/paste" >> "$P/CMakeLists.txt"
grep -q '^    cmake -S . -B build && cmake --build build --target instr$' "$T/init.out"
ok $? "it prints the next commands"

(cd "$P" && cmake -S . -B build > "$T/configure.out" 2>&1)
ok $? "cmake configures the project with the module included"
sed -n '/rror:\|arning:/s/^/# /p' "$T/configure.out"
(cd "$P" && cmake --build build > "$T/build.out" 2>&1) && [ -x "$P/build/app" ] && [ ! -e "$P/build/app.instr" ]
ok $? "the normal build builds app, and not the instrumented profile"
is "$(nm "$P/build/app" | grep -c __cyg_profile)" 0 "the normal build has zero hooks"
(cd "$P" && cmake --build build --target instr > "$T/instr.out" 2>&1)
ok $? "cmake --build build --target instr"
sed -n '/error:/s/^/# /p' "$T/instr.out"
[ -x "$P/build/app.instr" ] && [ -x "$P/build/trace_stream" ] &&
    [ "$(nm "$P/build/app.instr" | grep -c ' T __cyg_profile_func_')" -eq 2 ]
ok $? "build/app.instr (with the runtime's hooks) and build/trace_stream are built"

trace_both_ways build/app.instr "$P/build/trace_stream" /cs-test-initcm-$$ build/trace_stream
exit $_failed
