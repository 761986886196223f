#!/usr/bin/env bash
# Shared objects: a program linked with an instrumented library (libw.so)
# opens plugins with dlopen: plug_a.so, closed, then plug_b.so where plug_a
# was, then plug_a.so again elsewhere (tests/modules/modprog.c).  The runtime
# lists the loaded modules in every thread's records (trace.h, "loaded
# modules"), and analyze names each address from the module mapped there
# at the time, from that module's own file: every function with its name,
# module and file:line, and exact counts, in file and stream mode, for a
# PIE and a non-PIE program.  A module whose file is gone or rebuilt is
# named libfoo.so+0x..., with a note, and counts intact; --exe with its
# build-id names it again, and so do --sysroot, --debug-dir and a local
# debuginfod; a damaged module list is one line and a note.  Last, a C++
# library: demangled names, and an exception through instrumented frames.
source "$(dirname "$0")/../lib/lib.sh"
plan 45

M=$TESTS/modules
cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" || exit 1
lib() { cc -O0 -g -fPIC -shared -finstrument-functions "$@"; }
lib -o "$T/libw.so" "$M/libw.c" &&
    lib -DPLUG=a -o "$T/plug_a.so" "$M/plug.c" &&
    lib -DPLUG=b -o "$T/plug_b.so" "$M/plug.c" &&
    cc -O0 -g -finstrument-functions -o "$T/pie" "$M/modprog.c" "$T/trace.o" -L"$T" -lw -Wl,-rpath,"$T" -pthread -ldl &&
    cc -O0 -g -finstrument-functions -no-pie -fno-pie -o "$T/nopie" "$M/modprog.c" "$T/trace.o" -L"$T" -lw \
        -Wl,-rpath,"$T" -pthread -ldl
ok $? "the library, two plugins, and the program as PIE and non-PIE build"

# What every run must report: "calls name [module] (file:line)", sorted.
grep -v "^#" "$M/expect.txt" > "$T/expect"
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { s = $1; for (i = 10; i <= NF; i++) s = s " " $i; print s }' "$1" | sort; }

# where_loaded OUT: "same elsewhere" when plug_b took plug_a's first
# address and plug_a's second load went elsewhere (the case this is about).
where_loaded() {
    awk '/plug_a.so at/ { a[++n] = $4 } /plug_b.so at/ { b = $4 }
         END { print (b == a[1] ? "same" : "moved"), (a[2] != a[1] ? "elsewhere" : "again") }' "$1"
}

for prog in pie nopie; do
    TRACE_ENABLE=1 TRACE_DIR="$T/f-$prog" "$T/$prog" "$T" > "$T/$prog.out"
    ok $? "$prog, file mode: the program runs"
    is "$(where_loaded "$T/$prog.out")" "same elsewhere" "$prog: plug_b was loaded where plug_a was, plug_a again elsewhere"
    "$CS" analyze "$T/f-$prog" --exe "$T/$prog" --top 0 > "$T/f-$prog.txt" 2> "$T/f-$prog.err"
    ok $? "$prog, file mode: analyze"
    is "$(rows "$T/f-$prog.txt")" "$(cat "$T/expect")" "$prog, file mode: every function named from its module, exact counts"
    h=$(head -n 1 "$T/f-$prog.txt")
    is "$(field unmatched_exits "$h") $(field unclosed_enters "$h") $(grep -c '^note: .*module' "$T/f-$prog.txt")" "0 0 0" \
        "$prog, file mode: no unmatched exit, no module note"
done

# --- stream mode: the lists go through the ring, serve and the file ---
SHM=/cs-test-modules-$$
track_shm "$SHM"
for prog in pie nopie; do
    start_serve "$T/stream-$prog" --quiet
    TRACE_SHM_SIZE=$RING_WHOLE_RUN start_trace_stream "$B/trace_stream" "$SHM"
    client=$CLIENT_PID
    TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 60 "$T/$prog" "$T" > "$T/s.out"
    wait_stream_client "$client"
    ok $? "$prog, stream mode: the program runs with TRACE_SHM, trace_stream exits 0"
    wait_serve_closed 1
    stop_serve
    "$CS" analyze "$T/stream-$prog" --exe "$T/$prog" --top 0 > "$T/s-$prog.txt" 2> "$T/s-$prog.err"
    is "$(rows "$T/s-$prog.txt")" "$(cat "$T/expect")" "$prog, stream mode: the same names, modules and exact counts"
    h=$(head -n 1 "$T/s-$prog.txt")
    is "$(field unmatched_exits "$h") $(field dropped "$h")" "0 0" "$prog, stream mode: no unmatched exit, nothing dropped"
done

# --- summary mode: the device's aggregates name the same functions ---
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/sum" "$T/pie" "$T" > /dev/null &&
    "$CS" analyze "$T/sum" --exe "$T/pie" --top 0 > "$T/sum.txt" 2> "$T/sum.err"
# (the device keeps one table entry per runtime address, so the calls of
# plug_a and plug_b where both were loaded in turn are one row, shown by
# address with a note; plug_a's load elsewhere (run(3)) is named, exact)
{ grep -v 'plug_' "$T/expect"; echo "1 plug_run [plug_a.so] (plug.c:13)"; echo "3 plug_a_leaf [plug_a.so] (plug.c:8)"; } |
    sort > "$T/expect.kept"
shared="summary rows are of an address that two modules held in turn: the device's table adds their calls up, so they are shown by address (event mode names each)"
is "$(rows "$T/sum.txt" | grep -v '^[0-9]* 0x')" "$(cat "$T/expect.kept")" \
    "summary mode, file mode: every module's functions named where one module alone held the address, exact counts"
is "$(rows "$T/sum.txt" | grep -c '^[0-9]* 0x') $(grep -c "^note: pid [0-9]*: 2 $shared" "$T/sum.txt")" "2 1" \
    "summary mode: the 2 rows of plug_a and plug_b at one address are by address, with the note"
TRACE_MODE=summary stream_through "$T/sumstream" /cs-test-modsum-$$ "$T/pie" "$T"
"$CS" analyze "$T/sumstream" --exe "$T/pie" --top 0 > "$T/sums.txt" 2> "$T/sums.err"
is "$(rows "$T/sums.txt" | grep -v '^[0-9]* 0x')" "$(cat "$T/expect.kept")" \
    "summary mode, streamed and merged per process by trace_stream: named from the process's list"

# --- a module's file gone: named plug_b.so+0x..., listed once, counts intact ---
mkdir -p "$T/keep"
mv "$T/plug_b.so" "$T/keep/plug_b.so"
"$CS" analyze "$T/f-pie" --exe "$T/pie" --top 0 > "$T/gone.txt" 2> "$T/gone.err"
ok $? "plug_b.so gone: analyze still exits 0"
is "$(rows "$T/gone.txt" | grep -c ' plug_b.so+0x[0-9a-f]*$')" "2" "its 2 functions are named plug_b.so+offset"
is "$(rows "$T/gone.txt" | sed 's/ .*//' | sort -n | tr '\n' ' ')" "$(sed 's/ .*//' "$T/expect" | sort -n | tr '\n' ' ')" \
    "the counts are intact"
grep -q "^note: pid [0-9]*: module $T/plug_b.so (build-id [0-9a-f]*...) is not named ($T/plug_b.so: .*No such file.*): its 2 functions are shown as plug_b.so+offset$" "$T/gone.txt"
ok $? "one note names the module, its build-id and why: $(grep 'note: .*module' "$T/gone.txt")"
is "$(grep -c 'note: .*module' "$T/gone.txt")" "1" "and only that one"

# --- --exe with the module's build-id names it again, wherever it is ---
"$CS" analyze "$T/f-pie" --exe "$T/pie" --exe "$T/keep/plug_b.so" --top 0 > "$T/exe.txt" 2> "$T/exe.err"
ok $? "--exe plug_b.so from elsewhere: analyze"
is "$(rows "$T/exe.txt")" "$(cat "$T/expect")" "--exe matched by build-id: every name back"

# --- rebuilt at the same path: another build-id, so not used ---
lib -DPLUG=b -DEXTRA=1 -O1 -o "$T/plug_b.so" "$M/plug.c"
"$CS" analyze "$T/f-pie" --exe "$T/pie" --top 0 > "$T/re.txt" 2> "$T/re.err"
grep -q "^note: .*module $T/plug_b.so (build-id [0-9a-f]*...) is not named ($T/plug_b.so has build-id [0-9a-f]*...): its 2 functions" "$T/re.txt"
ok $? "a rebuilt plug_b.so is not used: the note says both build-ids"
is "$(rows "$T/re.txt" | grep -c ' plug_b.so+0x')" "2" "and its functions are named by offset"

# --- found elsewhere by its recorded path and build-id ---
# (plug_b.so is still the rebuilt one: none of these may take it)
# (the device's root holds every module: with --sysroot, paths are looked
# for inside it only, never on the host)
mkdir -p "$T/sysroot$T"
cp "$T/keep/plug_b.so" "$T/sysroot$T/plug_b.so"
cp "$T/libw.so" "$T/plug_a.so" "$T/sysroot$T/"
"$CS" analyze "$T/f-pie" --exe "$T/pie" --sysroot "$T/sysroot" --top 0 > "$T/sys.txt" 2> "$T/sys.err"
is "$(rows "$T/sys.txt")" "$(cat "$T/expect")" "--sysroot: the device's path under it names the module"
id=$(readelf -n "$T/keep/plug_b.so" | sed -n 's/.*Build ID: //p')
mkdir -p "$T/debug/.build-id/${id:0:2}"
objcopy --only-keep-debug "$T/keep/plug_b.so" "$T/debug/.build-id/${id:0:2}/${id:2}.debug"
"$CS" analyze "$T/f-pie" --exe "$T/pie" --debug-dir "$T/nowhere" --debug-dir "$T/debug" --top 0 > "$T/dbg.txt" 2> "$T/dbg.err"
is "$(rows "$T/dbg.txt")" "$(cat "$T/expect")" "--debug-dir: the .build-id/${id:0:2}/....debug file names it (the second dir given)"

"$CS" analyze "$T/f-pie" --exe "$T/pie" --sysroot "$T/no-such-root" > /dev/null 2> "$T/badroot.err"
is "$? $(cat "$T/badroot.err")" "1 callsight analyze: --sysroot $T/no-such-root: No such file or directory" \
    "a --sysroot that is not there: one line, exit 1"

# debuginfod, on 127.0.0.1 in a network namespace of its own (it listens
# on every address), serving a directory that holds the module
mkdir -p "$T/served"
cp "$T/keep/plug_b.so" "$T/served/"
cat > "$T/dfd.sh" <<EOS
python3 "$TESTS/tools/lo_up.py" || exit 1
debuginfod -F "$T/served" -p 8002 -d "$T/dfd.sqlite" -v > "$T/dfd.log" 2>&1 &
dfd=\$!
for _ in \$(seq 200); do # until it has indexed the directory
    DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$T/probe-cache" \\
        debuginfod-find debuginfo $id > /dev/null 2>&1 && break
    sleep 0.05
done
n0=\$(grep -c 'GET /buildid' "$T/dfd.log")
env -u DEBUGINFOD_URLS "$CS" analyze "$T/f-pie" --exe "$T/pie" --top 0 > "$T/nodfd.txt" 2>&1
echo "\$(( \$(grep -c 'GET /buildid' "$T/dfd.log") - n0 ))" > "$T/nodfd.count"
DEBUGINFOD_URLS=http://127.0.0.1:8002 DEBUGINFOD_CACHE_PATH="$T/dfd-cache" \\
    "$CS" analyze "$T/f-pie" --exe "$T/pie" --top 0 > "$T/dfd.txt" 2>&1
kill \$dfd; wait \$dfd
EOS
timeout 60 unshare -n sh "$T/dfd.sh"
is "$(rows "$T/dfd.txt")" "$(cat "$T/expect")" "debuginfod (DEBUGINFOD_URLS): the server's copy names it"
is "$(cat "$T/nodfd.count") $(rows "$T/nodfd.txt" | grep -c ' plug_b.so+0x')" "0 2" \
    "without DEBUGINFOD_URLS no server is asked, and the module stays unnamed"
cp "$T/keep/plug_b.so" "$T/plug_b.so"

# --- a damaged module list: one line, a note, the rest read ---
f=$(ls "$T"/f-pie/trace.*.bin | head -n 1)
python3 - "$f" "$T/damaged.bin" <<'EOP'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
for i in range(80, len(d), 32):   # the first LIST_END: its number made wrong
    if d[i + 28] == 5 and d[i + 29] == 7:
        d[i + 8] ^= 0xff
        break
open(sys.argv[2], "wb").write(d)
EOP
mkdir -p "$T/dmg" && cp "$T/damaged.bin" "$T/dmg/${f##*/}"
"$CS" analyze "$T/dmg" --exe "$T/pie" --top 0 > "$T/dmg.txt" 2> "$T/dmg.err"
ok $? "a damaged module list: analyze exits 0"
grep -q "^callsight analyze: .*: thread [0-9]*: a module list ends with another list's number; its earlier module list stays in force$" "$T/dmg.err" &&
    [ "$(wc -l < "$T/dmg.err")" -eq 1 ]
ok $? "one line says which file and thread, and what: $(cat "$T/dmg.err")"
grep -q "^note: pid [0-9]*: 1 module list was damaged and not used" "$T/dmg.txt"
ok $? "a note counts it"
is "$(field events "$(head -n 1 "$T/dmg.txt")")" "$(field events "$(head -n 1 "$T/f-pie.txt")")" \
    "every event is still read"

# A segment's head marker (a rotation between two chunks of a list) does
# not tear the list; an event inside one does (one line, its rest skipped).
python3 - "$f" "$T/seg/${f##*/}" "$T/torn/${f##*/}" <<'EOP'
import os, sys
d = bytearray(open(sys.argv[1], "rb").read())
at = next(i for i in range(80, len(d), 32) if d[i + 28] == 5 and d[i + 29] == 6) + 32  # after the first END
mark = d[80:112]  # the file's own head marker, BUILD_ID, as a new segment starts
assert mark[28] == 2 and int.from_bytes(mark[8:16], "little") == 26
ev = next(bytearray(d[i:i + 32]) for i in range(80, len(d), 32) if d[i + 28] == 0)
for out, rec in ((sys.argv[2], mark), (sys.argv[3], ev)):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    open(out, "wb").write(d[:at] + rec + d[at:])
EOP
"$CS" analyze "$T/seg" --exe "$T/pie" --top 0 > "$T/seg.txt" 2> "$T/seg.err"
is "$(wc -l < "$T/seg.err") $(rows "$T/seg.txt" | grep -c '\[libw.so\]')" "0 2" "a marker inside a list: no damage, libw.so still named"
"$CS" analyze "$T/torn" --exe "$T/pie" --top 0 > /dev/null 2> "$T/torn.err"
is "$(grep -c 'a module list is cut by other records (torn)' "$T/torn.err") $(wc -l < "$T/torn.err")" "1 1" \
    "an event inside a list: torn, said once"

# --- C++: namespaces, templates, an exception through instrumented frames ---
g++ -O0 -g -fPIC -shared -finstrument-functions -o "$T/libshapes.so" "$M/shapes.cpp" &&
    g++ -O0 -g -finstrument-functions -o "$T/shapesprog" "$M/shapesprog.cpp" "$T/trace.o" -L"$T" -lshapes \
        -Wl,-rpath,"$T" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/cxx" "$T/shapesprog" > "$T/cxx.out"
ok $? "C++: the program and its library build and run traced"
"$CS" analyze "$T/cxx" --exe "$T/shapesprog" --top 0 > "$T/cxx.txt" 2> "$T/cxx.err"
is "$(rows "$T/cxx.txt")" "1 app::twelve() (shapesprog.cpp:8)
1 main (shapesprog.cpp:12)
1 shapes_run [libshapes.so] (shapes.cpp:37)
12 shapes::Box<double>::twice() const [libshapes.so] (shapes.cpp:10)
12 shapes::Box<int>::twice() const [libshapes.so] (shapes.cpp:10)
12 shapes::area(int, int) [libshapes.so] (shapes.cpp:14)
12 shapes::checked_area(int, int) [libshapes.so] (shapes.cpp:21)
12 shapes::measure(int) [libshapes.so] (shapes.cpp:26)" "C++: demangled names from the library, exact counts (4 of the 12 calls threw)"
# libdw (the default) and addr2line name everything alike: the rows, and
# every call site of the callers table, in C and C++ (but the C library's:
# for its code inlined from a header addr2line gives the including file
# with the header's line, libdw the header)
for d in f-pie:pie cxx:shapesprog; do
    "$CS" analyze "$T/${d%%:*}" --exe "$T/${d##*:}" --top 0 --addr2line addr2line > "$T/a2l.txt" 2>&1
    "$CS" analyze "$T/${d%%:*}" --exe "$T/${d##*:}" --top 0 --format callers > "$T/dw.callers" 2>&1
    "$CS" analyze "$T/${d%%:*}" --exe "$T/${d##*:}" --top 0 --format callers --addr2line addr2line > "$T/a2l.callers" 2>&1
    [ "$(rows "$T/a2l.txt")" = "$(rows "$T/${d%%:*}.txt")" ] &&
        [ "$(grep -vc 'libc.so' "$T/dw.callers")" -ge 5 ] &&
        diff <(grep -v 'libc.so' "$T/dw.callers") <(grep -v 'libc.so' "$T/a2l.callers") > /dev/null
    ok $? "${d%%:*}: libdw and --addr2line addr2line give the same names, lines and call sites"
done
h=$(head -n 1 "$T/cxx.txt")
is "$(field unmatched_exits "$h") $(field unclosed_enters "$h")" "0 0" \
    "C++: frames the exception unwound closed: no unmatched exit, no unclosed enter"
exit $_failed
