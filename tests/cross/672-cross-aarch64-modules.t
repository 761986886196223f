#!/usr/bin/env bash
# Shared objects on a cross-compiled device: tests/modules/modprog.c (a
# library linked at build time, plugins opened, closed and replaced) built
# for aarch64 against a device root file system ($T/root: the program in
# /opt/app, its library and plugins there, the target's C library in /lib),
# run dynamically under qemu-aarch64-static with that root, and analyzed on
# the host: the modules recorded with their device paths are found under
# --sysroot, checked by build-id, and named with aarch64 addr2line, and
# again with libdw (the default) and no tool on PATH at all; every function
# named with file:line, exact counts.  Without --sysroot they are
# named libw.so+0x..., with a note each.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/cross_lib.sh"
cross_ready cross-aarch64 aarch64-linux-gnu aarch64 || exit 0
plan 7

X=aarch64-linux-gnu
M=$TESTS/modules
R=$T/root
mkdir -p "$R/opt/app/lib" "$R/opt/app/plugins" "$R/lib"
cp -L /usr/$X/lib/ld-linux-aarch64.so.1 /usr/$X/lib/libc.so.6 "$R/lib/" &&
    $X-gcc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    $X-gcc -O0 -g -fPIC -shared -finstrument-functions -o "$R/opt/app/lib/libw.so" "$M/libw.c" &&
    $X-gcc -O0 -g -fPIC -shared -finstrument-functions -DPLUG=a -o "$R/opt/app/plugins/plug_a.so" "$M/plug.c" &&
    $X-gcc -O0 -g -fPIC -shared -finstrument-functions -DPLUG=b -o "$R/opt/app/plugins/plug_b.so" "$M/plug.c" &&
    $X-gcc -O0 -g -finstrument-functions -o "$R/opt/app/modprog" "$M/modprog.c" "$T/trace.o" \
        -L"$R/opt/app/lib" -lw -Wl,-rpath,/opt/app/lib -pthread -ldl
ok $? "the runtime, library, plugins and program build for aarch64 (dynamic, rpath /opt/app/lib)"

TRACE_ENABLE=1 TRACE_DIR="$T/tr" timeout 120 qemu-aarch64-static -L "$R" "$R/opt/app/modprog" /opt/app/plugins \
    > "$T/run.out" 2> "$T/run.err"
ok $? "it runs traced under qemu-aarch64-static -L ROOT: $(tr '\n' ' ' < "$T/run.out")"
sed 's/^/# /' "$T/run.err"

grep -v "^#" "$M/expect.txt" > "$T/expect"
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { s = $1; for (i = 10; i <= NF; i++) s = s " " $i; print s }' "$1" | sort; }

"$CS" analyze "$T/tr" --exe "$R/opt/app/modprog" --sysroot "$R" --addr2line $X-addr2line --top 0 \
    > "$T/a.txt" 2> "$T/a.err"
ok $? "analyze --sysroot ROOT --addr2line $X-addr2line exits 0"
sed 's/^/# /' "$T/a.err"
is "$(rows "$T/a.txt")" "$(cat "$T/expect")" "every function named from its module under the sysroot, exact counts"
is "$(field unmatched_exits "$(head -n 1 "$T/a.txt")") $(grep -c '^note: .*module' "$T/a.txt")" "0 0" \
    "no unmatched exit, no module note"

# libdw, the default, reads aarch64 ELF in-process: with nothing on PATH,
# no addr2line or other tool can be what names them
env PATH=/nonexistent "$CS" analyze "$T/tr" --exe "$R/opt/app/modprog" --sysroot "$R" --top 0 > "$T/dw.txt" 2> "$T/dw.err"
is "$(rows "$T/dw.txt")" "$(cat "$T/expect")" "without --addr2line (libdw) and with no tools on PATH: the same names and lines"

"$CS" analyze "$T/tr" --exe "$R/opt/app/modprog" --addr2line $X-addr2line --top 0 > "$T/n.txt" 2> /dev/null
is "$(grep -c '^note: pid [0-9]*: module /opt/app/.* is not named (/opt/app/.*: No such file or directory)' "$T/n.txt") $(rows "$T/n.txt" | grep -c ' [a-z_]*\.so+0x[0-9a-f]*$')" \
    "3 6" "without --sysroot: the 3 modules' 6 functions are named by offset, one note each"
exit $_failed
