#!/usr/bin/env bash
# 239-analyze-module-caps.t - `callsight analyze` caps the module lists it
# keeps (issue #29: "analyze and top cap module-list work per thread and in
# total, with a note").  Written by tests/tools/hostile.c, each attack must
# stay within a memory limit and say, in exact counts, what it did not keep:
#   - 64 threads each listing 4,096 modules: the first --max-modules (1024)
#     of each list are kept, the other 196,608 counted in a note (text and
#     JSON); --max-modules 4096 keeps them all, and no note;
#   - 64 threads with lists that all differ, under --max-modules-mb 1: what
#     the budget has no room for is counted, and the calls into the modules
#     not kept are named as the program's (a raw address) and counted;
#   - one thread's list of 4,096 modules, then 20,000 process markers: each
#     made its process's copy of the list (once 1.3 GB for 10,000, and 4.7 s),
#     now the list is shared;
#   - the options' bounds.
# The memory limits are skipped under ASan (it reserves terabytes of
# address space); the counts are asserted in both passes.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"

plan 10

tiny_build
need_tools hostile
ASAN=0
nm "$CS" 2>/dev/null | grep -q __asan_init && ASAN=1

# gen NAME ARGS...: the attack file $T/NAME/trace.stream.1.0.bin
gen() { local d=$T/$1; shift; mkdir -p "$d"; "$TOOLBIN/hostile" "$1" "$d/trace.stream.1.0.bin" "${@:2}"; }
# run MB DIR ARGS...: analyze DIR under a memory limit of MB (address
# space, not under ASan) and 60 s; stdout in $T/out, stderr in $T/err
run() {
    local mb=$1 dir=$2; shift 2
    local lim=(prlimit --as=$((mb << 20)))
    [ "$ASAN" = 1 ] && lim=()
    timeout 60 "${lim[@]}" "$CS" analyze "$T/$dir" --exe "$T/tiny" "$@" >"$T/out" 2>"$T/err"
}
row() { awk -v f="$1" '$1 ~ /^(>=)?[0-9]+$/ && $10 == f { print $1 }' "$T/out"; }
capnotes() { grep -E '^note: (analyze kept [0-9]+ modules|module lists held|[0-9]+ function addresses were in no module kept)' "$T/out"; }

# --- 64 threads x 4096 modules: --max-modules, default 1024 ---
gen mods modules 64 4096
run 128 mods
is "$?:$(row '?+0x10001010'):$(row 0x1000)" "0:64:6" \
   "64 threads x 4096 modules: analyze ends within 128 MB, every call counted"
is "$(capnotes)" "note: analyze kept 1024 modules of a thread's module list (--max-modules): 196608 modules in the lists of 64 thread(s) were not kept; addresses in them are named as the program's (raw addresses or offsets)
note: 6 function addresses were in no module kept of a module list cut by a cap: they are named as the program's" \
   "64 threads x 4096 modules: a note counts the 64 x 3072 modules not kept"
run 128 mods --format json
grep -q '"analyze kept 1024 modules of a thread'"'"'s module list (--max-modules): 196608 modules in the lists of 64 thread(s) were not kept; addresses in them are named as the program'"'"'s (raw addresses or offsets)"' "$T/out"
ok $? "json: the same note in notes"
run 128 mods --max-modules 4096
is "$?:$(row '?+0x10001010'):$(capnotes | wc -l)" "0:64:0" "--max-modules 4096: every module kept, no note"

# --- 64 lists that all differ, under --max-modules-mb 1 ---
gen dist modules 64 1024 distinct
run 128 dist --max-modules-mb 1
is "$?:$(row '?+0x10001010'):$(row 0x10001010):$(row 0x1000)" "0:34:30:6" \
   "--max-modules-mb 1: 34 threads kept their first module, the calls of the 30 others named as the program's"
is "$(capnotes)" "note: module lists held at once reached analyze's cap of 1 MiB (--max-modules-mb): 39352 modules in the lists of 40 thread(s) were not kept; addresses in them are named as the program's (raw addresses or offsets)
note: 66 function addresses were in no module kept of a module list cut by a cap: they are named as the program's" \
   "--max-modules-mb 1: a note counts the modules and threads, and the addresses named as the program's"
run 128 dist
is "$(row '?+0x10001010'):$(capnotes | wc -l)" "64:0" "the same within the default 64 MiB: all kept, no note"

# --- one list, 20,000 processes: their lists are shared, not copied ---
gen procs procmods 20000 4096
run 256 procs
is "$?:$(row '?+0x10001010'):$(row 0x1000)" "0:20000:6" \
   "20,000 processes of one 4096-module list: analyze ends within 256 MB, every call counted"
is "$(capnotes | head -1)" "note: analyze kept 1024 modules of a thread's module list (--max-modules): 3072 modules in the lists of 1 thread(s) were not kept; addresses in them are named as the program's (raw addresses or offsets)" \
   "20,000 processes: the one list's cut counted once"

# --- the options' bounds ---
run 64 mods --max-modules 4097; a=$?:$(cat "$T/err")
run 64 mods --max-modules-mb 0; b=$?:$(cat "$T/err")
is "$a
$b" "2:callsight analyze: --max-modules needs a count from 1 to 4096, not '4097'
2:callsight analyze: --max-modules-mb needs a count of MiB from 1 to 1048576, not '0'" \
   "--max-modules above 4096 and --max-modules-mb 0 are refused"
exit $_failed
