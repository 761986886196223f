#!/usr/bin/env bash
# 683-select-graph-files.t - what the call graph leaves in callsight-obj/
# (issue 32: mutants of graph_build.c that every select test passed): per
# unit its .cg.ci (the graph), .cg.cmd (the command it was compiled
# with: what says it is fresh) and .cg.d, and no .cg.o (the object is of
# no use after); a unit whose compile fails loses its .cg.cmd, so the
# partial .cg.ci GCC leaves is never taken for fresh, and the next build,
# the source mended, compiles that unit alone again.
source "$(dirname "$0")/../lib/lib.sh"
plan 7

source "$TESTS/lib/multidir_project.sh"
multidir_project
cg() { (cd "$P" && find callsight-obj -name "$1" | LC_ALL=C sort | tr '\n' ' '); }

traced first "include-func run 1"
ok $? "include-func run 1 builds and runs"
is "$(cg '*.cg.*' | tr ' ' '\n' | sed 's/.*\.cg\./cg./' | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
    "cg.ci=6 cg.cmd=6 cg.d=6 " "each of the 6 units: its .cg.ci, .cg.cmd and .cg.d, no .cg.o"

echo 'int broken(' >> "$P/src/net/a.c"
$M instrument > "$T/broken.make" 2>&1
ok $((! $?)) "a unit that does not compile stops make instrument"
is "$(cg 'a.c.cg.*')" "callsight-obj/src/net/a.c.cg.ci callsight-obj/src/net/a.c.cg.d " \
    "its .cg.cmd is gone (the partial .cg.ci may stay: without the command it is not fresh)"

cp "$ROOT/examples/multidir/src/net/a.c" "$P/src/net/a.c"
traced mended
grep -q "call graph: compiling 1 of 6 units" "$T/mended.make"
ok $? "mended, the next build compiles that unit's graph alone again"
is "$(cat "$T/mended.rows")" "$(cat "$T/first.rows")" "and traces the same functions, the same counts"
exit $_failed
