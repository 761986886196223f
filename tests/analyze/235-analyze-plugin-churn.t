#!/usr/bin/env bash
# 235-analyze-plugin-churn.t - a C++ plugin host (tests/modules/codechost.cpp)
# loads codec_a.so, runs it on two threads, unloads it, then loads
# codec_b.so where codec_a was and does the same, all between two flushes
# of either thread: no flush ever finds a plugin loaded.  The runtime hears
# of each dlopen and dlclose as it happens and lists the closed modules
# with the time they went (trace.h, "loaded modules"), so analyze names
# every function with its own plugin, demangled, with exact counts, in file
# and stream mode, PIE; the two plugins at one address stay two rows each.
# Built with -DTRACE_NO_DL_HOOKS (the runtime as before) the same run names
# no function codec_a's (its calls go to raw addresses, or, silently, to
# codec_b when a flush saw that one), which is what this is about.
# A module list with a closed module is damaged when its time is missing.
source "$(dirname "$0")/../lib/lib.sh"
plan 11

M=$TESTS/modules
cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    cc -O2 -DTRACE_NO_DL_HOOKS -c -o "$T/trace_nohooks.o" "$DIST/trace.c" &&
    for c in a b; do
        g++ -O0 -g -fPIC -shared -finstrument-functions -DCODEC=$c -o "$T/codec_$c.so" "$M/codec.cpp" || exit 1
    done &&
    g++ -O0 -g -fPIE -pie -finstrument-functions -o "$T/host" "$M/codechost.cpp" "$T/trace.o" -pthread -ldl &&
    g++ -O0 -g -fPIE -pie -finstrument-functions -o "$T/host_nohooks" "$M/codechost.cpp" "$T/trace_nohooks.o" -pthread -ldl
ok $? "two C++ plugins and the host (PIE), with the runtime and with it built -DTRACE_NO_DL_HOOKS"

rows() { awk '$1 ~ /^[0-9]+$/ && NF >= 10 { s = $1; for (i = 10; i <= NF; i++) s = s " " $i; print s }' "$1" | sort; }
# main runs codec_run(7) then (5), the worker (2) then (3): per plugin 2 runs,
# encode and twice 7+2 = 9 times in codec_a, 5+3 = 8 in codec_b.  Names as
# the text shows them: long parameter lists collapsed, return types left out.
sort > "$T/expect" <<'END'
1 main (codechost.cpp:60)
1 worker(void*) (codechost.cpp:22)
2 codec_run [codec_a.so] (codec.cpp:25)
2 codec_run [codec_b.so] (codec.cpp:25)
2 load(...) (codechost.cpp:32)
2 use(...) (codechost.cpp:48)
8 codec_b::Codec::encode(int) [codec_b.so] (codec.cpp:14)
8 codec_b::twice<int>(int) [codec_b.so] (codec.cpp:18)
9 codec_a::Codec::encode(int) [codec_a.so] (codec.cpp:14)
9 codec_a::twice<int>(int) [codec_a.so] (codec.cpp:18)
END

# --- file mode ---
TRACE_ENABLE=1 TRACE_DIR="$T/f" "$T/host" "$T" > "$T/host.out"
ok $? "the host runs traced"
a=$(sed -n 's/^codechost: codec_a.so at //p' "$T/host.out")
b=$(sed -n 's/^codechost: codec_b.so at //p' "$T/host.out")
is "$b" "$a" "the loader put codec_b.so where codec_a.so was (the case this is about)"
"$CS" analyze "$T/f" --exe "$T/host" --top 0 > "$T/f.txt" 2> "$T/f.err"
is "$? $(rows "$T/f.txt")" "0 $(cat "$T/expect")" "file mode: every function named with its own plugin, exact counts"
is "$(grep -c '^note: ' "$T/f.txt") $(wc -c < "$T/f.err" | tr -d ' ')" "0 0" "file mode: no note, nothing on stderr"
h=$(head -n 1 "$T/f.txt")
is "$(field threads "$h") $(field unmatched_exits "$h") $(field dropped "$h")" "2 0 0" "file mode: two threads, all matched"

# --- stream mode ---
stream_through "$T/s" /cs-test-churn-$$ "$T/host" "$T"
"$CS" analyze "$T/s" --exe "$T/host" --top 0 > "$T/s.txt" 2> "$T/s.err"
is "$? $(rows "$T/s.txt")" "0 $(cat "$T/expect")" "stream mode: the same names and exact counts"
is "$(grep -c '^note: ' "$T/s.txt") $(wc -c < "$T/s.err" | tr -d ' ')" "0 0" "stream mode: no note, nothing on stderr"

# --- without the hooks: the flushes never see the plugins ---
TRACE_ENABLE=1 TRACE_DIR="$T/n" "$T/host_nohooks" "$T" > /dev/null
"$CS" analyze "$T/n" --exe "$T/host_nohooks" --top 0 > "$T/n.txt" 2> "$T/n.err"
is "$(rows "$T/n.txt" | grep -c 'codec_a\.so\]') $(rows "$T/n.txt" | cmp -s - "$T/expect"; echo $?)" "0 1" \
    "-DTRACE_NO_DL_HOOKS: no function named codec_a's, and the rows are not the exact ones"

# --- a closed module without its time: the list is damaged, said once ---
# The list of test file f, its first closed module's END call_site zeroed.
python3 - "$T/f" "$T/bad" <<'PY'
import os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
done = False
for name in sorted(os.listdir(src)):
    data = bytearray(open(os.path.join(src, name), 'rb').read())
    gone = set()
    for off in range(80, len(data) - 31, 32):
        ts, func, site, tid, kind, p0 = struct.unpack_from('<QQQIBB', data, off)
        if kind == 5 and p0 == 2 and site == 2:
            gone.add(ts)
        if not done and kind == 5 and p0 == 6 and ts in gone:
            struct.pack_into('<Q', data, off + 16, 0)
            done = True
    open(os.path.join(dst, name), 'wb').write(data)
sys.exit(0 if done else 1)
PY
"$CS" analyze "$T/bad" --exe "$T/host" --top 0 > "$T/bad.txt" 2> "$T/bad.err"
is "$? $(grep -c 'a closed module.s time is missing' "$T/bad.err")" "0 1" "a closed module without its time: one line"
is "$(grep -c '^note: pid [0-9]*: 1 module list was damaged and not used' "$T/bad.txt")" 1 "and the note counts the damaged list"
