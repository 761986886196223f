#!/usr/bin/env bash
# 673-select-hostile-project.t - reading a project someone sent you runs
# none of its code (issue 29): a source named @opts.c (which gcc would read
# as a response file, here one with -wrapper running a shell) or -x.c
# reaches the compiler as a file in scan, select, flags and the Make wiring;
# names with bare quotes, a newline or a backslash (GCC writes them into
# its call graph as they are) keep their functions and their file; doctor
# runs its compiler checks by argv, so a TMPDIR with shell words in it is
# only a directory name; and no source in the tree hands a formatted
# command line to a shell.
source "$(dirname "$0")/../lib/lib.sh"
plan 14

ROOT=$(cd "$TESTS/.." && pwd)
MARK=$T/ran-the-project
P=$T/p
mkdir -p "$P"
# As a response file: run a shell through gcc's -wrapper, which touches MARK.
printf -- '-wrapper /bin/sh,-c,touch\\ %s;exit\\ 1\n' "$MARK" > "$P/@opts.c"
printf 'int dash(int x) { return x * 2; }\n' > "$P/-x.c"
printf 'int quoted(int x) { return x + 3; }\n' > "$P/a\"b.c"
printf 'int broken(int x) { return x; }\n' > "$P/n"$'\n'"l.c"
printf 'int slashed(int x) { return x; }\n' > "$P/b\\nd.c"
printf 'int broken(int);\nint slashed(int);\nint use(void) { return broken(slashed(1)); }\n' > "$P/use.c"
cat > "$P/main.c" <<'C'
int dash(int);
int quoted(int);
static int helper(int x) { return x - 1; }
int main(void) { return helper(dash(quoted(1))) == 7 ? 0 : 1; }
C
printf 'exclude-func helper\n' > "$P/trace.config"

(cd "$P" && "$CS" scan . > "$T/scan.out" 2> "$T/scan.err")
rc=$?
[ ! -e "$MARK" ]
ok $? "scan on a project with @opts.c runs nothing of it"
is "$rc $(grep -c 'did not compile' "$T/scan.err")" "1 1" \
    "scan: @opts.c was compiled as C (and failed as C), said once, exit 1"
grep -q '^\./@opts.c:1:1: error' "$T/scan.err"
ok $? "the compiler saw ./@opts.c, a file"

rm "$P/@opts.c"
(cd "$P" && "$CS" scan . > "$T/scan2.out" 2> "$T/scan2.err")
is "$? $(grep -c '^  on ' "$T/scan2.out")" "0 6" "scan on -x.c, a\"b.c, n\\x0al.c, b\\nd.c, use.c and main.c: exit 0, all six on"
grep -q 'dash  -x.c:1' "$T/scan2.out" && grep -q "quoted  a\"b.c:1" "$T/scan2.out" &&
    grep -qF 'broken  n\x0al.c:1' "$T/scan2.out" && grep -qF 'slashed  b\nd.c:1' "$T/scan2.out" &&
    grep -q 'off  helper  main.c:3' "$T/scan2.out"
ok $? "their functions by file and line: -x.c's dash, a\"b.c's quoted, n\\x0al.c's broken, b\\nd.c's slashed, main.c's helper off"
[ "$?" = 0 ] || sed 's/^/# /' "$T/scan2.out" "$T/scan2.err"

printf -- '-wrapper /bin/sh,-c,touch\\ %s;exit\\ 1\n' "$MARK" > "$P/@opts.c"
(cd "$P" && "$CS" select --cc cc . > "$T/select.out" 2> "$T/select.err")
[ ! -e "$MARK" ]
ok $? "select runs nothing of it"
(cd "$P" && "$CS" flags --config trace.config --graph-cc cc --write obj -- @opts.c main.c > "$T/flags.out" 2>&1)
[ ! -e "$MARK" ]
ok $? "flags runs nothing of it"

# The Make wiring: sources by their project names, @opts.c among them.
"$CS" init --build make "$P" > "$T/init.out" 2>&1
ok $? "callsight init on the project"
cat > "$P/Makefile" <<'MK'
CALLSIGHT_PROGRAMS := app
app_SRCS := main.c -x.c a"b.c @opts.c
include callsight/callsight.mk
MK
# With trace.config, flags compiles the call graph first (as above, by
# argv); without one, every source goes straight to the compile rule.
mv "$P/trace.config" "$P/trace.config.off"
make -C "$P" CALLSIGHT="$CS" instr > "$T/make.out" 2>&1
[ ! -e "$MARK" ]
ok $? "make instr with the wiring runs nothing of @opts.c"
grep -q "'\./@opts.c'" "$T/make.out"
ok $? "the wiring hands it to the compiler as './@opts.c'"
rm "$P/@opts.c"
mv "$P/trace.config.off" "$P/trace.config"
sed -i 's/ @opts.c$//' "$P/Makefile"
make -C "$P" CALLSIGHT="$CS" instr > "$T/make2.out" 2>&1 && (cd "$P" && ./app.instr)
ok $? "without it, -x.c and a\"b.c build with trace.config and the program runs"
[ "$?" = 0 ] || sed 's/^/# /' "$T/make2.out"

# doctor: TMPDIR is a directory's name, not shell words.
D="$T/d'; touch $MARK; echo '"
mkdir -p "$D"
(cd "$P" && TMPDIR=$D "$CS" doctor > "$T/doctor.out" 2>&1)
[ ! -e "$MARK" ] && grep -q '^\[ok\]   compiler: cc' "$T/doctor.out"
ok $? "doctor with a TMPDIR of shell words: runs nothing, checks the compiler"
is "$(ls -A "$D" | wc -l)" 0 "and leaves nothing in that TMPDIR"

# No source hands a command line to a shell: no system(), popen() or
# sh -c anywhere in the host tool, the device side, bench or the tools.
hits=$(grep -rnE '\b(system|popen)[[:space:]]*\(|"/bin/sh"|"sh", *"-c"' \
       "$ROOT/src" "$ROOT/runtime" "$ROOT/stream" "$ROOT/bench" "$ROOT/tools" "$ROOT/tests/unit" \
       "$ROOT/tests/tools" "$ROOT/fuzz" --include='*.c' --include='*.h' | grep -v '^\s*\*')
is "${hits:-none}" none "no system(), popen() or /bin/sh -c in the tree's C"
