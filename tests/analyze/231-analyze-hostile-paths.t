#!/usr/bin/env bash
# 231-analyze-hostile-paths.t - files a device names are opened only as what
# they claim to be (issue 29): a module path that names a FIFO or a device
# node on the host is not opened for reading (before, a FIFO hung analyze
# forever), and the module's functions keep their counts by offset with a
# note; under --sysroot a path is looked for only inside it, `..` and
# symlinks included (before, the host's own path was tried first), and a
# path that is not absolute is not looked for at all.  A module's file
# that is only an ELF header (64 bytes) is a note for that module, not the
# end of the report (before: exit 1, no report).  A note about
# debuginfod never shows the credentials a DEBUGINFOD_URLS entry carries.
source "$(dirname "$0")/../lib/lib.sh"
plan 13

M=$TESTS/modules
cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" -I"$DIST" || exit 1
lib() { cc -O0 -g -fPIC -shared -finstrument-functions "$@"; }
lib -o "$T/libw.so" "$M/libw.c" &&
    lib -DPLUG=a -o "$T/plug_a.so" "$M/plug.c" &&
    lib -DPLUG=b -o "$T/plug_b.so" "$M/plug.c" &&
    cc -O0 -g -finstrument-functions -o "$T/pie" "$M/modprog.c" "$T/trace.o" -L"$T" -lw -Wl,-rpath,"$T" -pthread -ldl
ok $? "the library, two plugins and the program build"
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/pie" "$T" > /dev/null
ok $? "the program runs traced"
rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { s = $1; for (i = 10; i <= NF; i++) s = s " " $i; print s }' "$1" | sort; }
analyze() { timeout 20 "$CS" analyze "$T/tr" --exe "$T/pie" --top 0 "$@"; }

# The modules' files replaced: plug_b.so by a FIFO nobody writes, libw.so
# by a link to a device node.
mkdir "$T/keep" && mv "$T/plug_b.so" "$T/libw.so" "$T/keep/"
mkfifo "$T/plug_b.so"
ln -s /dev/zero "$T/libw.so"
analyze > "$T/a.txt" 2> "$T/a.err"
is "$?" 0 "a FIFO and a device node at modules' paths: analyze ends, exit 0 (timeout says 124)"
is "$(rows "$T/a.txt" | grep -c 'plug_b.so+0x')$(rows "$T/a.txt" | grep -c 'libw.so+0x')" "22" \
    "their functions by offset: plug_b's two, libw's two"
is "$(rows "$T/a.txt" | awk '/plug_b.so\+0x|libw.so\+0x/ { s += $1 } END { print s }')" 17 \
    "with their exact calls (1 + 5 + 1 + 10)"
grep -q "plug_b.so: not a regular file" "$T/a.txt" && grep -q "libw.so: not a regular file" "$T/a.txt"
ok $? "the notes say why: not a regular file"

# --sysroot: the device's /X is ROOT/X, and nothing outside ROOT.
rm "$T/plug_b.so" "$T/libw.so"
mv "$T/keep/plug_b.so" "$T/keep/libw.so" "$T/"
R=$T/root
mkdir -p "$R$T"
# The host has every module in $T/keep too; ROOT has plug_b.so only.
cp "$T/libw.so" "$T/plug_a.so" "$T/plug_b.so" "$T/keep/"
cp "$T/plug_b.so" "$R$T/plug_b.so"          # a copy inside: named from it
ln -s "../../../../../../../../../../../..$T/keep/libw.so" "$R$T/libw.so"  # climbs out: stops at ROOT
ln -s "$T/keep/plug_a.so" "$R$T/plug_a.so"   # absolute: means ROOT$T/keep/plug_a.so
analyze --sysroot "$R" > "$T/s.txt" 2> "$T/s.err"
is "$? $(rows "$T/s.txt" | grep -c '\[plug_b.so\]')" "0 2" "--sysroot: the copy inside names plug_b's functions"
is "$(rows "$T/s.txt" | grep -c 'libw.so+0x') $(rows "$T/s.txt" | grep -c 'plug_a.so+0x')" "2 2" \
    "links out of the root (by .. or absolute) name nothing, though the host has those files"
grep -q "in $R: No such file or directory" "$T/s.txt"
ok $? "the notes say where it was looked for"

# debuginfod asked (nothing listens on port 1: refused at once), with a
# password in one URL and a user in another.
mv "$T/plug_b.so" "$T/keep/plug_b.moved"
DEBUGINFOD_URLS="http://alice:s3cret@127.0.0.1:1/ https://bob@127.0.0.1:1/x" DEBUGINFOD_CACHE_PATH=$T/cache \
    analyze > "$T/d.txt" 2> "$T/d.err"
is "$(grep -c 's3cret\|alice\|bob@' "$T/d.txt" "$T/d.err" | tr '\n' ' ')$(grep -c 'debuginfod (http://127.0.0.1:1/ https://127.0.0.1:1/x)' "$T/d.txt")" \
    "$T/d.txt:0 $T/d.err:0 1" "a note on debuginfod names its servers without their credentials"

# A module recorded without a build-id is taken on trust by its path: there,
# a file of 64 bytes, an ELF header and nothing else.
mv "$T/keep/plug_b.moved" "$T/plug_b.so"
lib -DPLUG=b -Wl,--build-id=none -o "$T/plug_b.so" "$M/plug.c"
TRACE_ENABLE=1 TRACE_DIR="$T/tr2" "$T/pie" "$T" > /dev/null
head -c 64 "$T/plug_b.so" > "$T/head64" && mv "$T/head64" "$T/plug_b.so"
timeout 20 "$CS" analyze "$T/tr2" --exe "$T/pie" --top 0 > "$T/h.txt" 2> "$T/h.err"
is "$? $(wc -c < "$T/h.err")" "0 0" "a module's file that is only an ELF header: exit 0, nothing on stderr"
is "$(rows "$T/h.txt" | grep 'plug_b.so+0x' | awk '{ print $1 }' | sort -n | tr '\n' ' ')$(grep -c "^note: .*module $T/plug_b.so is not named ($T/plug_b.so: " "$T/h.txt")" \
    "1 5 1" "its two functions by offset with their calls (1, 5), one note naming it"

# A relative path, as the loader keeps a dlopen("./plug_a.so"): not looked
# for where analyze runs (the device's cwd is not the host's).
mv "$T/keep/plug_a.so" "$T/plug_a.so" 2>/dev/null
lib -DPLUG=b -o "$T/plug_b.so" "$M/plug.c"
(cd "$T" && TRACE_ENABLE=1 TRACE_DIR="$T/tr3" ./pie . > /dev/null)
(cd "$T" && timeout 20 "$CS" analyze "$T/tr3" --exe "$T/pie" --top 0 > "$T/r.txt" 2> "$T/r.err")
is "$? $(rows "$T/r.txt" | grep -c 'plug_a.so+0x') $(grep -c '(\./plug_a.so: not an absolute path, not looked for)' "$T/r.txt")" \
    "0 2 1" "a relative module path: not opened beside analyze, its functions by offset, one note says why"
