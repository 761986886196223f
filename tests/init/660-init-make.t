#!/usr/bin/env bash
# callsight init into an empty project, then the generated Make wiring: the
# lines init prints, pasted as they are, build an instrumented twin that
# traces to files and streams with exact counts, while the normal build keeps
# zero hooks.  init twice is harmless; a changed file is refused without
# --force and replaced with it.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/init_project.sh"
plan 25

ROOT=$(cd "$TESTS/.." && pwd)
P=$T/proj
new_project "$P"
"$CS" init --stream "$P" > "$T/init.out" 2> "$T/init.err"
ok $? "callsight init --stream DIR exits 0"
sed 's/^/# /' "$T/init.err"
same=0
for f in "$DIST/trace.c" "$ROOT/runtime/trace.h" "$DIST/trace_stream.c" \
         "$ROOT/wiring/callsight.mk" "$ROOT/wiring/callsight.cmake"; do
    cmp -s "$f" "$P/callsight/$(basename "$f")" || { diag "differs: $f"; same=1; }
done
[ "$(ls "$P/callsight" | tr '\n' ' ')" = "callsight.cmake callsight.mk trace.c trace.h trace_stream.c " ] ||
    { diag "in DIR/callsight/: $(ls "$P/callsight" | tr '\n' ' ')"; same=1; }
ok $same "DIR/callsight/ holds the one-file runtime, trace.h, trace_stream.c and both wirings, byte for byte, and nothing else"
is "$(grep -c '^  wrote ' "$T/init.out")" 6 "it says it wrote 6 files"
cmp -s "$ROOT/wiring/trace.config" "$P/trace.config"
ok $? "one of them the starter trace.config, in the project's own folder"

pasted_lines "$T/init.out" Make > "$T/paste"
is "$(cat "$T/paste")" "CALLSIGHT_PROGRAMS := proj
proj_SRCS := app.c util.c
include callsight/callsight.mk" "it prints the Make lines to paste, naming the project's sources"
# Our Makefile's program is `app`: the printed lines, with that name.
sed 's/proj/app/g' "$T/paste" >> "$P/Makefile"
grep -q '^    make instrument$' "$T/init.out"
ok $? "it prints the next command: make instrument"

make -C "$P" > "$T/make.out" 2>&1 && [ -x "$P/app" ]
ok $? "the normal build still builds (the include keeps the default goal)"
is "$(nm "$P/app" | grep -c __cyg_profile)" 0 "the normal build has zero hooks"
make -C "$P" instr > "$T/instr.out" 2>&1
ok $? "make instr builds the instrumented profile"
sed -n '/error:/s/^/# /p' "$T/instr.out"
[ -x "$P/app.instr" ] && [ -x "$P/callsight/trace_stream" ]
ok $? "app.instr and callsight/trace_stream are built"
is "$(nm "$P/app.instr" | grep -c ' T __cyg_profile_func_')" 2 "app.instr has the runtime's hooks"
nm "$P/callsight-obj/callsight-runtime/trace.o" | grep -q __cyg_profile_func_enter &&
    ! nm "$P/callsight-obj/callsight-runtime/trace.o" | grep -q ' U __cyg_profile'
ok $? "the runtime itself is compiled without instrumentation"

trace_both_ways app.instr "$P/callsight/trace_stream" /cs-test-init-$$ "the trace_stream built by the wiring"

# Twice is harmless: everything unchanged, nothing rewritten.
touch -d @978307200 "$P/callsight/trace.c"
"$CS" init --stream "$P" > "$T/init2.out" 2>&1
ok $? "init again exits 0"
is "$(grep -c '^  unchanged ' "$T/init2.out") $(stat -c %Y "$P/callsight/trace.c")" "5 978307200" \
    "all 5 files unchanged, not rewritten"

# A changed file: refused, and nothing at all is written; --force replaces it.
echo '/* my change */' >> "$P/callsight/trace.h"
rm "$P/callsight/trace.c"
"$CS" init --stream "$P" > "$T/init3.out" 2> "$T/init3.err"
is "$?" 1 "init refuses when a file was changed (exit 1)"
sed 's/^/# /' "$T/init3.err"
grep -q "^callsight init: $P/callsight/trace.h differs .*--force" "$T/init3.err" &&
    [ "$(wc -l < "$T/init3.err")" -eq 2 ] && [ ! -s "$T/init3.out" ]
ok $? "one clear line names the file and --force, one says nothing was written"
[ ! -e "$P/callsight/trace.c" ] && tail -n 1 "$P/callsight/trace.h" | grep -q 'my change'
ok $? "nothing was written: the change is kept, the missing file not restored"
"$CS" init --stream --force "$P" > "$T/init4.out" 2>&1
ok $? "init --force exits 0"
cmp -s "$ROOT/runtime/trace.h" "$P/callsight/trace.h" && cmp -s "$DIST/trace.c" "$P/callsight/trace.c" &&
    grep -q "^  replaced .*/trace.h$" "$T/init4.out" && grep -q "^  wrote .*/trace.c$" "$T/init4.out"
ok $? "--force replaced the changed file and wrote the missing one"

# Errors: one line, the right status, nothing created.
"$CS" init --build ninja "$T/none" > "$T/e1.out" 2> "$T/e1.err"
is "$? $(wc -l < "$T/e1.err") $(cat "$T/e1.out")" "2 1 " "a bad --build is a usage error (2), one line"
"$CS" init "$T/none" > /dev/null 2> "$T/e2.err"
is "$? $(cat "$T/e2.err")" "1 callsight init: $T/none: No such file or directory (init works in an existing project directory)" \
    "a missing DIR: exit 1, one clear line"
exit $_failed
