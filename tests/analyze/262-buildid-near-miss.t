#!/usr/bin/env bash
# 262-buildid-near-miss.t - build-ids compared whole (issue 32): a copy of
# the traced program whose build-id differs from the real one in a single
# byte (the last of the 16 the trace carries, or the last of their first
# half: a check that compared one 8-byte word, or a prefix, would take
# either) is refused by analyze --exe and by ctl --pid --exe, each naming
# both ids; the real binary is taken.  The copies differ from the program
# in those bytes alone, so names and addresses would all resolve: only
# the id check can refuse them.
source "$(dirname "$0")/../lib/lib.sh"
plan 13

cat > "$T/p.c" << 'EOF2'
#include <stdio.h>
__attribute__((noinline)) int f(int x) { return x * 3 + 1; }
int main(void)
{
    char line[64];
    int s = 0;
    for (int i = 0; i < 100; i++)
        s += f(i);
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) /* until stdin closes */
        ;
    return s == 42;
}
EOF2
build_traced "$T/p" "$T/p.c"
id=$(readelf -n "$T/p" 2>/dev/null | sed -n 's/.*Build ID: *//p')
[ ${#id} -ge 32 ]
ok $? "the program builds and has a build-id of at least 16 bytes ($id)"

# near BYTE OUT: a copy of the program with byte BYTE of its build-id
# flipped in the note itself; prints the copy's id.
near() {
    python3 - "$T/p" "$2" "$id" "$1" << 'EOF2'
import sys
src, out, hexid, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = bytearray(open(src, "rb").read())
raw = bytes.fromhex(hexid)
if data.count(raw) != 1:
    sys.exit("the build-id is not in the file exactly once")
at = data.find(raw) + k
data[at] ^= 0x01
open(out, "wb").write(bytes(data))
EOF2
    chmod +x "$2"
    readelf -n "$2" 2>/dev/null | sed -n 's/.*Build ID: *//p'
}
id15=$(near 15 "$T/p15")
id7=$(near 7 "$T/p7")
want15=${id:0:30}$(printf '%02x' $((0x${id:30:2} ^ 1)))${id:32}
want7=${id:0:14}$(printf '%02x' $((0x${id:14:2} ^ 1)))${id:16}
is "$id15 $id7" "$want15 $want7" "two copies whose build-ids differ in byte 15, and in byte 7, alone"
cmp -s "$T/p" "$T/p15"
is "$? $(cmp -l "$T/p" "$T/p15" | wc -l) $(cmp -l "$T/p" "$T/p7" | wc -l)" "1 1 1" "each copy differs from the program in one byte"

TRACE_ENABLE=1 TRACE_DIR="$T/f" "$T/p" < /dev/null > /dev/null
ok $? "the program runs traced to files"

"$CS" analyze "$T/f" --exe "$T/p" --format json -o "$T/ok.json" 2> "$T/ok.err"
is "$? $(python3 -c 'import json, sys
print(" ".join("%s=%d" % (f["name"], f["calls"]) for f in json.load(open(sys.argv[1]))["functions"] if f["name"] == "f"))' "$T/ok.json")" \
    "0 f=100" "analyze --exe with the binary that ran: taken, f's 100 calls"

# analyze: each near miss refused, exit 1, the one line naming both ids.
for k in 15 7; do
    nid=$(eval echo "\$id$k")
    "$CS" analyze "$T/f" --exe "$T/p$k" > "$T/a$k.out" 2> "$T/a$k.err"
    rc=$?
    grep -qx "callsight analyze: --exe $T/p$k is not the traced binary: its build-id ${nid:0:32} differs from pid [0-9]*'s ${id:0:32}; give the binary that ran (or --force)" "$T/a$k.err"
    is "$rc $? $(wc -c < "$T/a$k.out")" "1 0 0" "analyze --exe, build-id off in byte $k alone: refused, both ids named: $(cat "$T/a$k.err")"
done

# ctl --pid: the same copies refused before anything is written to the
# control block; the real binary's --off f applied.
UID_=$(id -u)
mkfifo "$T/in"
TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/c" "$T/p" < "$T/in" > "$T/c.out" &
PID=$!
track_pid $PID
track_shm "/callsight-ctl-$UID_-$PID"
exec 3> "$T/in"
i=0
until grep -q '^ready' "$T/c.out" || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
for k in 15 7; do
    nid=$(eval echo "\$id$k")
    "$CS" ctl --pid $PID --exe "$T/p$k" --off f --wait 0 > "$T/c$k.out" 2> "$T/c$k.err"
    rc=$?
    grep -qx "callsight ctl: --exe $T/p$k has build-id ${nid:0:32}; pid $PID runs ${id:0:32}: give the binary it runs" "$T/c$k.err"
    is "$rc $?" "1 0" "ctl --pid --exe, build-id off in byte $k alone: refused (1), both ids named: $(cat "$T/c$k.err")"
done
"$CS" ctl --pid $PID --show > "$T/show.out" 2>&1
is "$(grep -c 'generation [1-9]' "$T/show.out")" "0" "nothing was written to the control block: $(head -n 1 "$T/show.out")"
# The program waits on its stdin, where no hook runs: the change is
# written but applied by no thread yet (4, pending), which is all the id
# check lets through.
"$CS" ctl --pid $PID --exe "$T/p" --off f --wait 0 > "$T/cok.out" 2> "$T/cok.err"
is "$? $(wc -c < "$T/cok.err")" "4 0" "ctl --pid --exe with the program itself: taken (written, pending)"
"$CS" ctl --pid $PID --show > "$T/show2.out" 2>&1
is "$(grep -c 'generation [1-9]' "$T/show2.out")" "1" "and now in the control block: $(head -n 1 "$T/show2.out")"
exec 3>&-
wait $PID
ok $? "the program ends when its stdin closes"
exit $_failed
