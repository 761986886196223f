#!/usr/bin/env bash
# 670-select-funcs.t - trace.config's function-level directives on
# examples/multidir, decided on GCC's call graph: include-func at depth 0, 1
# and all; exclude of a header (its inline function); exclude-func of a name
# inside another name in another file (that one stays), and in the same
# file (GCC cannot: the function stays, with a warning); a static function
# qualified by its file; the exact set of instrumented functions, with
# exact counts, from the report; an edit recompiles exactly the objects
# whose flags changed; a name that matches nothing, and clang, are refused
# with their line; a header's edit reaches the graph; `callsight select`
# and `scan` show the subtree and its limit (the call through a pointer);
# CMake decides the same; C++ names.
source "$(dirname "$0")/../lib/lib.sh"
plan 33

source "$TESTS/lib/multidir_project.sh"
multidir_project

traced d0 "include-func run 0   # the function alone"
is "$(cat "$T/d0.rows")" "run main.c 100" "include-func run 0: run alone"
grep -q "call graph: compiling 6 of 6 units" "$T/d0.make"
ok $? "the call graph is compiled once for each unit"

traced d1 "include-func run 1"
is "$(cat "$T/d1.rows")" "$RUN1_ROWS" \
    "include-func run 1: run and what it calls, the macro's call and the header's inline one included, not the pointer's"
is "$(grep -c 'compiling .* units' "$T/d1.make")" "0" "an edit of trace.config alone compiles no graph again"

# With all levels, the two static helpers join run 1's rows (RUN1_ROWS,
# multidir_project.sh).
sleep 1 # a new mtime for the edited config, on coarse file systems
traced dall "include-func run"
is "$(compiled dall)" "src/net/a.o src/net/data.o " \
    "include-func run 1 -> all levels: exactly the two objects whose flags changed are recompiled"
is "$(cat "$T/dall.rows")" "$(printf '%s\n' "$RUN1_ROWS" 'helper a.c 100' 'helper data.c 200' | LC_ALL=C sort)" \
    "include-func run: the whole subtree, the two static helpers apart"

traced hdr "exclude include/app.h   # its inline clamp"
grep -q "exclude-function-list=clamp' -c -o 'callsight-obj/main.o'" "$T/hdr.make"
ok $? "exclude of a header: main.c, which compiles clamp, leaves it out"
is "$(grep -c '^clamp ' "$T/hdr.rows") $(wc -l < "$T/hdr.rows" | tr -d ' ')" "0 11" \
    "exclude of a header: clamp gone, the other 11 functions traced"

traced sub "exclude-func util_hash"
is "$(grep -E '^util_hash' "$T/sub.rows")" "util_hash_mix hash_mix.c 100" \
    "exclude-func util_hash: util_hash gone, util_hash_mix (another file) stays"

traced same "exclude-func mix"
grep -qx 'callsight flags: warning: src/util/hash_mix.c: mix stays instrumented: GCC leaves out every function whose name contains "mix", and util_hash_mix (src/util/hash_mix.c:13), which is selected, does' "$T/same.make"
ok $? "exclude-func mix: GCC would take util_hash_mix too, so a warning says mix stays"
is "$(grep -E 'mix' "$T/same.rows")" "mix hash_mix.c 100
util_hash_mix hash_mix.c 100" "exclude-func mix: both stay instrumented, none lost"

traced qual "exclude-func src/net/a.c:helper"
is "$(grep '^helper' "$T/qual.rows")" "helper data.c 200" "exclude-func FILE:NAME: one of the two static helpers"

# A header's macro changes what net_a calls: the graph of a.c is stale
# through the header alone, and the next build follows it.
sed -i 's/return helper(x) + 1;/return helper(x) + 1 + A_EXTRA(x);/' "$P/src/net/a.c"
sed -i 's/^#define HASH_TWICE/#define A_EXTRA(x) 0\n#define HASH_TWICE/' "$P/include/app.h"
traced hd1 "include-func net_a 1"
is "$(cat "$T/hd1.rows")" "helper a.c 100
net_a a.c 100" "include-func net_a 1: net_a and its helper"
sleep 1
sed -i 's/^#define A_EXTRA(x) 0$/#define A_EXTRA(x) util_hash(x)/' "$P/include/app.h"
traced hd2 "include-func net_a 1"
is "$(cat "$T/hd2.rows")" "helper a.c 100
net_a a.c 100
util_hash hash.c 303" "a header's edit changes the graph: util_hash joins, counted from all its callers"
cp "$ROOT/examples/multidir/src/net/a.c" "$P/src/net/a.c"
cp "$ROOT/examples/multidir/include/app.h" "$P/include/app.h"

refused none 'include src/\nexclude-func nothing_here\n' "a directive naming no function stops the build" \
    "callsight flags: trace.config:2: exclude-func nothing_here: no function of that name is defined in the 6 units compiled"

printf 'exclude-func nosuch.c:helper\n' > "$P/trace.config"
$M instrument > "$T/none2.make" 2>&1
grep -qx "callsight flags: trace.config:1: exclude-func nosuch.c:helper: no function of that name is defined in the 6 units compiled; helper is defined in src/net/a.c, src/net/data.c (the part before ':' matches none)" "$T/none2.make"
ok $? "FILE:NAME whose file matches none: the line says where the name is"

if command -v clang > /dev/null; then
    printf 'include-func run 1\n' > "$P/trace.config"
    $M instrument CC=clang > "$T/clang.make" 2>&1
    ok $((! $?)) "clang: a function-level directive stops the build"
    grep -q "^callsight flags: trace.config:1: include-func: clang cannot leave single functions out" "$T/clang.make"
    ok $? "clang: one line says why and what to do: $(grep 'callsight flags' "$T/clang.make" | cut -c1-100)..."
else
    ok 1 "clang is not installed (scripts/deps.sh install test installs it)"
    ok 1 "clang is not installed"
fi

# select and scan: the subtree before anything is built.
(cd "$P" && "$CS" select --function run --cc 'cc -Iinclude') > "$T/sel.out" 2> "$T/sel.err"
is "$(cat "$T/sel.out")" "run  main.c:29
  [1 call through a pointer, first at main.c:31:81: not followed]
  clamp  include/app.h:16
  mix  src/util/hash_mix.c:8
  net_a  src/net/a.c:9
    helper  src/net/a.c:4
  net_data  src/net/data.c:9
    helper  src/net/data.c:4
  util_hash  src/util/hash.c:4
  util_hash_mix  src/util/hash_mix.c:13
select: run: 9 functions
limits: 1 call through a function pointer or a virtual call not followed (marked above); what they reach needs an include-func of its own
paste into trace.config:
    include-func run    # 9 functions" "select: the tree with file:line, the limit, the line to paste"
is "$("$CS" select "$P" --function run --depth 1 --list --cc 'cc -Iinclude' 2>/dev/null)" "clamp  include/app.h:16
run  main.c:29
net_a  src/net/a.c:9
net_data  src/net/data.c:9
util_hash  src/util/hash.c:4
mix  src/util/hash_mix.c:8
util_hash_mix  src/util/hash_mix.c:13
select: run 1: 7 functions
limits: 1 call through a function pointer or a virtual call not followed; what they reach needs an include-func of its own
paste into trace.config:
    include-func run 1    # 7 functions" "select DIR --depth 1 --list: the same seven as the build traced, and the limit"
"$CS" select "$P" --function nosuch --cc 'cc -Iinclude' > /dev/null 2> "$T/nosuch.err"
is "$? $(cat "$T/nosuch.err")" "1 callsight select: no function named nosuch is defined in the 6 units compiled" \
    "select: an unknown name is an error"
printf 'include-func run 1\n' > "$P/trace.config"
"$CS" scan "$P" --cc 'cc -Iinclude' > "$T/scan.out" 2>&1
is "$(sed -n 1p "$T/scan.out")" "scan: 6 sources, 5 instrumented, 1 not (trace.config); 7 of 12 functions" "scan: sources and functions"
grep -qx "include-func run 1 (line 1): 7 functions, and 1 call through pointers it cannot follow (callsight select shows where)" "$T/scan.out"
ok $? "scan: the subtree's size and its limit"
grep -qx "         off  via_pointer  main.c:21  no include matches" "$T/scan.out"
ok $? "scan: each function and why"

# --- CMake: the same decisions at configure time ---
command -v cmake > /dev/null 2>&1 || "$TESTS/../scripts/deps.sh" install cmake > "$T/deps.out" 2>&1
if command -v cmake > /dev/null 2>&1; then
    cmake_project 'include-func run 1' "$T/cm.build"
    ok $? "cmake: include-func configures and builds --target instr"
    rm -rf "$T/tr-cm"
    (cd "$C" && TRACE_ENABLE=1 TRACE_DIR="$T/tr-cm" ./build/app.instr > /dev/null)
    is "$(func_rows "$T/tr-cm" "$C/build/app.instr" | sed 's/^clamp main.c/clamp app.h/')" "$(cat "$T/d1.rows")" \
        "cmake: include-func run 1, the same functions and counts as make"
else
    ok 1 "cmake is not installed and scripts/deps.sh install cmake failed"
    ok 1 "cmake is not installed"
fi

# --- C++: names as GCC matches them ---
X=$T/x
mkdir -p "$X"
cat > "$X/x.cpp" << 'EOF'
namespace ns {
struct S {
    int f(int x);
    int ff(int x);
};
int S::f(int x) { return x + 1; }
int S::ff(int x) { return x * 2; }
}
template <class T> struct A { T v; T get(int i) { return v + i; } };
int main() { ns::S s; A<int> a{1}; return s.f(1) + s.ff(2) + a.get(3) - 9; }
EOF
printf 'exclude-func ns::S::f\nexclude-func A::get\n' > "$X/trace.config"
(cd "$X" && "$CS" flags --graph-cc g++ -- x.cpp) > "$T/x.flags" 2> "$T/x.err"
is "$(cat "$T/x.flags")" "-finstrument-functions -g -finstrument-functions-exclude-function-list=::get" \
    "C++: a class template's member is listed by what GCC's spelling of it surely holds"
grep -q 'warning: x.cpp: ns::S::f stays instrumented: GCC leaves out every function whose name contains "ns::S::f", and ns::S::ff' "$T/x.err"
ok $? "C++: ns::S::f is inside ns::S::ff, so it stays, with a warning"
cat > "$X/y.cpp" << 'EOF'
struct P { int v; P operator,(P o) { return P{v + o.v}; } };
int keep(int x) { return x + 1; }
int main() { P a{1}, b{2}; P c = (a, b); return keep(c.v) - 4; }
EOF
printf 'exclude-func P::operator,\n' > "$X/trace.config"
(cd "$X" && "$CS" flags --graph-cc g++ -- y.cpp) > "$T/y.flags" 2> "$T/y.err"
is "$(cat "$T/y.flags")" '-finstrument-functions -g -finstrument-functions-exclude-function-list=P::operator\,' \
    "C++: a comma in a name (operator,) is escaped as GCC's list wants"
y=$(cd "$X" && g++ $(cat "$T/y.flags") -S -o - y.cpp | c++filt |
    awk '/^[^ \t.].*:$/ { fn = $0 } /call.*__cyg_profile_func_enter/ { print fn }' | sort | tr '\n' ' ')
is "$y" "keep(int): main: " "C++: and GCC leaves out P::operator, alone"
hooked=$(cd "$X" && g++ $(cat "$T/x.flags") -S -o - x.cpp | c++filt |
    awk '/^[^ \t.].*:$/ { fn = $0 } /call.*__cyg_profile_func_enter/ { print fn }' | sort | tr '\n' ' ')
is "$hooked" "main: ns::S::f(int): ns::S::ff(int): " "C++: A<int>::get alone loses its hooks"
exit $_failed
