#!/usr/bin/env bash
# 001-layering.t - the house keeps its layering (docs/architecture.md): the
# checkout's #include lines cross folders only the allowed way, and the
# checker (tests/tools/layering.pl) catches each kind of forbidden crossing
# when one is planted in a scratch copy of the tree.  Also: no .c file sits
# directly in src/, every path docs/architecture.md names exists, and its
# walk of one event names each function in a file of the same section
# (tests/tools/archwalk.pl; a copy of the page with a function renamed, one
# placed in the wrong section and a file that is not there must fail).
set -u
. "$(dirname "$0")/../lib/lib.sh"

ROOT=$(cd "$TESTS/.." && pwd)
CHECK="perl $TESTS/tools/layering.pl"

plan 39

$CHECK "$ROOT" >"$T/out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ ! -s "$T/out" ]
ok $? "the checkout keeps the layering"
[ -s "$T/out" ] && sed 's/^/# /' "$T/out"

is "$(find "$ROOT/src" -maxdepth 1 -type f -name '*.[ch]' | wc -l)" 0 "no .c or .h file directly in src/"

# Every path the architecture page names in backquotes exists in the
# checkout: a path with a slash from the root or from src/ (build outputs
# and ../ aside), a bare file name in src/, runtime/ or stream/.
missing=""
names=0
for p in $(grep -o '`[^` ]*`' "$ROOT/docs/architecture.md" | tr -d '`' |
           grep -E '/|\.(c|h|md|sh|mk|t|pl)$' | grep -vE '^-|[<>*"]|^/|\(|=|^build/|^\.\./$' | sort -u); do
    names=$((names + 1))
    case $p in
    */*) p=${p%/}; [ -e "$ROOT/$p" ] || [ -e "$ROOT/src/$p" ] || missing="$missing $p" ;;
    *) [ -n "$(find "$ROOT/src" "$ROOT/runtime" "$ROOT/stream" -name "$p" -print -quit)" ] ||
           missing="$missing $p" ;;
    esac
done
is "${missing:-none} $((names > 50))" "none 1" "every path docs/architecture.md names exists ($names checked)"

# The walk of one event: every `name()` defined in a file its section names.
WALK="perl $TESTS/tools/archwalk.pl"
$WALK "$ROOT" >"$T/out" 2>&1
ok $? "docs/architecture.md's walk names every function in a file of its section"
grep -v '^checked' "$T/out" | sed 's/^/# /'
# walk_plant WHAT SED PATTERN: a copy of the page edited by SED fails, saying PATTERN.
walk_plant() {
    sed "$2" "$ROOT/docs/architecture.md" >"$T/page.md"
    if cmp -s "$T/page.md" "$ROOT/docs/architecture.md"; then diag "the edit changed nothing"; ok 1 "$1"; return; fi
    $WALK "$ROOT" "$T/page.md" >"$T/out" 2>&1
    rc=$?
    if [ "$rc" = 1 ] && grep -q -- "$3" "$T/out"; then ok 0 "$1"
    else diag "rc=$rc"; sed 's/^/# /' "$T/out"; ok 1 "$1"; fi
}
walk_plant "a function the tree does not have is caught" 's/`tl_start()`/`tl_start_nosuch()`/' \
    'On the device: tl_start_nosuch() is defined in none'
walk_plant "a real function in the wrong section's files is caught" 's/`admit_loop()`/`tl_flush()`/' \
    'On the host, stream mode: tl_flush() is defined in none'
walk_plant "a file the tree does not have is caught" 's|`src/serve/chunkq.c`|`src/serve/nosuch.c`|' \
    'src/serve/nosuch.c is not in the tree'

# plant WHAT FILE TEXT PATTERN: a scratch copy with TEXT (printf %b: \n and
# \r allowed) added at the top of FILE (relative to the root) must fail,
# naming FILE and matching PATTERN.  Only FILE is checked file by file, to
# keep this quick; the tree-wide checks always run.
# fresh_scratch: $T/scratch, a new copy of the tree's three code folders.
fresh_scratch() {
    rm -rf "$T/scratch"
    mkdir -p "$T/scratch"
    cp -R "$ROOT/src" "$ROOT/runtime" "$ROOT/stream" "$T/scratch/"
}
plant() {
    local what=$1 file=$2 text=$3 pat=$4 s=$T/scratch
    fresh_scratch
    mkdir -p "$s/$(dirname "$file")"
    if [ -e "$s/$file" ]; then
        { printf '%b\n' "$text"; cat "$s/$file"; } >"$s/$file.new" && mv "$s/$file.new" "$s/$file"
    else
        printf '%b\n' "$text" >"$s/$file"
    fi
    [ -z "${PREP:-}" ] || (cd "$s" && eval "$PREP")
    $CHECK "$s" "$file" >"$T/out" 2>&1
    rc=$?
    if [ "$rc" = 1 ] && grep -q -- "^$file:[0-9]*: .*$pat" "$T/out"; then ok 0 "$what"
    else diag "rc=$rc"; sed 's/^/# /' "$T/out"; ok 1 "$what"; fi
}

# Each row: WHAT|FILE|TEXT|PATTERN[|PREP], PREP a command run in the
# scratch copy before the check.
while IFS='|' read -r what file text pat prep; do
    case $what in ''|'#'*) continue ;; esac
    PREP=$prep plant "$what" "$file" "$text" "$pat" </dev/null
done <<'ROWS'
analysis/ including an output is caught|src/analysis/hist.c|#include "out/out.h"|analysis/ may include lib/, read/, not out/
read/ including serve/ is caught|src/read/trace_files.c|#include "serve/files.h"|read/ may include lib/, not serve/
serve/ including the analysis is caught|src/serve/conn.c|#include "analysis/analysis.h"|serve/ may include lib/, not analysis/
serve/ including read/ is caught|src/serve/conn.c|#include "read/trace_reader.h"|serve/ may include lib/, not read/
lib/ including anything of src/ is caught|src/lib/u64map.c|#include "read/addrindex.h"|lib/ may include nothing of src/
anything including a command's folder is caught|src/out/report.c|#include "cmd/commands.h"|out/ may include .*not cmd/
a header crossing is caught as well as a source's|src/analysis/hist.h|#include "out/out.h"|pulls in src/out/out.h
another folder's header by its bare name is caught|src/out/report.c|#include "trace_reader.h"|not a file of src/out/ or runtime/
a ../ path is caught|src/out/report.c|#include "../read/symbols.h"|no \.\./ paths
one of our headers in <> is caught|src/cmd/diff.c|#include <out/out_json.h>|use quotes
the runtime including the host tool is caught|runtime/trace.c|#include "read/trace_reader.h"|runtime/ stands alone
a part of the runtime including the host tool is caught|runtime/trace_ring.c|#include "read/trace_reader.h"|runtime/ stands alone
the runtime including a file of stream/ is caught|runtime/trace.c|#include "../stream/trace_stream.c"|runtime/ stands alone
trace_stream including the host tool is caught|stream/trace_stream.c|#include "serve/proto.h"|stream/ stands alone
the runtime including the wire protocol is caught|runtime/trace.c|#include "trace_wire.h"|pulls in runtime/trace_wire.h: the runtime speaks only the ring
# Spellings the compiler accepts and a line-by-line reading would miss.
an include through a macro is caught|src/analysis/hist.c|#define SNEAK "out/out.h"\n#include SNEAK|pulls in src/out/out.h
a comment inside the directive is caught|src/analysis/hist.c|#/**/include "out/out.h"|pulls in src/out/out.h
a spliced directive is caught|src/analysis/hist.c|#\\\ninclude "out/out.h"|pulls in src/out/out.h
a digraph directive is caught|src/analysis/hist.c|%:include "out/out.h"|pulls in src/out/out.h
a directive after a bare CR is caught|src/analysis/hist.c|/* x */\r#include "out/out.h"|pulls in src/out/out.h
<../src/...> from the runtime is caught|runtime/trace.c|#include <../src/read/trace_reader.h>|pulls in src/read/trace_reader.h
<./out/...> is caught|src/analysis/hist.c|#include <./out/out.h>|pulls in src/out/out.h
a crossing hidden in an included file of another kind is caught|src/analysis/hist.c|#include "sneak.inc"|pulls in src/out/out.h|printf "#include \"out/out.h\"\n" > src/analysis/sneak.inc
a symlink into another folder is caught|src/analysis/hist.c|#include "pb.h"|pulls in src/out/pb.h|ln -s ../out/pb.h src/analysis/pb.h
a command calling another is caught|src/cmd/diff.c|static int f(void) { return cmd_analyze(0, 0); }|names cmd_analyze: commands never call each other
a command through a pointer is caught|src/cmd/diff.c|int (*const sneak_p)(int, char **) = cmd_analyze;|names cmd_analyze
a command through a macro is caught|src/cmd/diff.c|#define CALL(x) cmd_##x(0, 0)\nint g(void) { return CALL(analyze); }|names cmd_analyze
a command called from outside cmd/ is caught|src/out/report.c|int cmd_analyze(int argc, char **argv);\nint sneak_f(void) { return cmd_analyze(0, 0); }|names cmd_analyze: only main.c dispatches
a file left directly in src/ is caught|src/stray.c|/* stray */|a file directly in src/
a folder nobody placed is caught|src/misc/x.c|/* new */|in a folder docs/architecture.md does not know
ROWS
# ... and what is no crossing stays quiet: a comment, a dead #if 0 block.
fresh_scratch
{ printf '/* as cmd_analyze does */\n#if 0\n#include "out/out.h"\n#endif\n'; cat "$ROOT/src/cmd/diff.c"; } \
    >"$T/scratch/src/cmd/diff.c"
$CHECK "$T/scratch" src/cmd/diff.c >"$T/out" 2>&1
ok $? "a command named in a comment, an include in #if 0: no crossing"
[ -s "$T/out" ] && sed 's/^/# /' "$T/out"

# The same helper, unplanted, passes: the copy itself is faithful.
fresh_scratch
$CHECK "$T/scratch" >"$T/out" 2>&1
ok $? "an unchanged scratch copy passes"

exit $_failed
