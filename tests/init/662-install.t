#!/usr/bin/env bash
# `make install PREFIX=...` installs callsight, trace_stream and the man page;
# the installed callsight, run from outside the source tree, documents every
# command and `init` works from the copies built into it.
source "$(dirname "$0")/../lib/lib.sh"
plan 9

ROOT=$(cd "$TESTS/.." && pwd)
PREFIX=$T/prefix
make -C "$ROOT" -o all install BUILD="$B" PREFIX="$PREFIX" > "$T/install.out" 2>&1
ok $? "make install PREFIX=... exits 0"
sed -n '/error/s/^/# /p' "$T/install.out"
[ -x "$PREFIX/bin/callsight" ] && [ -x "$PREFIX/bin/trace_stream" ] &&
    [ -f "$PREFIX/share/man/man1/callsight.1" ]
ok $? "bin/callsight, bin/trace_stream and share/man/man1/callsight.1 are installed"

# The man page covers every subcommand the installed callsight lists.
cmds=$("$PREFIX/bin/callsight" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | sort | tr '\n' ' ')
is "$cmds" "analyze ctl diff doctor flags init replay run scan select serve sql top trigger ui " "callsight --help lists every command: analyze, ctl, diff, doctor, flags, init, replay, run, scan, select, serve, sql, top, trigger, ui"
bad=0
for c in $cmds; do
    grep -q "^\.SS callsight $c" "$PREFIX/share/man/man1/callsight.1" || { diag "man: no $c"; bad=1; }
    "$PREFIX/bin/callsight" "$c" --help > "$T/help.$c" 2>&1 && grep -q "^usage: callsight $c" "$T/help.$c" ||
        { diag "$c --help"; bad=1; }
done
ok $bad "the man page has a section for each, and each prints its usage with --help"
bad=0
for o in --stream --build --force DIR/callsight/ callsight.mk callsight.cmake 'Exit status'; do
    grep -q -- "$o" "$T/help.init" || { diag "init --help lacks $o"; bad=1; }
done
ok $bad "callsight init --help documents every option, the files and the exit status"

# Outside the source tree, with the source tree's own files out of reach of
# the installed binary's arguments: init writes the copies built into it.
mkdir -p "$T/elsewhere/proj"
(cd "$T/elsewhere" && env -i PATH="$PREFIX/bin:/usr/bin:/bin" callsight init --stream proj > "$T/init.out" 2>&1)
ok $? "the installed callsight runs init from another directory"
same=0
for f in "$DIST/trace.c" "$ROOT/runtime/trace.h" "$DIST/trace_stream.c" \
         "$ROOT/wiring/callsight.mk" "$ROOT/wiring/callsight.cmake"; do
    cmp -s "$f" "$T/elsewhere/proj/callsight/$(basename "$f")" || { diag "differs: $f"; same=1; }
done
ok $same "and wrote the five files byte for byte"
# A relocated copy of the binary still has them: nothing is read from a path.
cp "$PREFIX/bin/callsight" "$T/cs-copy"
mkdir -p "$T/p2"
"$T/cs-copy" init --build make "$T/p2" > /dev/null 2>&1 && cmp -s "$DIST/trace.c" "$T/p2/callsight/trace.c"
ok $? "a copy of the binary elsewhere inits just the same"
"$PREFIX/bin/trace_stream" --help 2>&1 | grep -q 'SHM HOST PORT'
ok $? "the installed trace_stream runs"
exit $_failed
