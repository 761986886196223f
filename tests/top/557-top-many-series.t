#!/usr/bin/env bash
# callsight top on a directory of 30,000 tiny series (issue 29: a hostile
# device, or a directory someone sent, once drove top --once to 2.1 GB,
# about 72 KB per series): with default options it reads the first 1024
# (--max-series) in detail, within 64 MB of peak RSS, and the frame says
# exactly how many series, files and bytes it left out and which option
# raises the cap; raising it takes them in; the line stays on the screen
# however few source rows fit; and the analysis' notes, the way the pass
# says what it capped or lost, are printed by top as analyze prints them.
source "$(dirname "$0")/../lib/lib.sh"
plan 18

need_tools hostile
# Under ASan (make test's second pass) address-space limits do not apply
# and every allocation costs more; the bounds are the plain build's.
ASAN=0 LIM=(prlimit --as=$((1024 << 20))) RSS_MAX=65536
nm "$CS" 2>/dev/null | grep -q __asan_init && ASAN=1 LIM=() RSS_MAX=524288

# series DIR FIRST N [SEGS_OF_LAST [BUDGET]]: N series as serve names them,
# trace.stream.<id>.<seq>.bin for id FIRST.., each segment a header and one
# call of 0x1000 on thread 1 (144 bytes); the last series in SEGS_OF_LAST
# segments (default 1), and with BUDGET a byte-budget stop marker after
# its call (trace.h: TRACE_MARK_BUDGET).
series() {
    python3 - "$@" <<'PY'
import os, struct, sys
out, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
last_segs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
budget = int(sys.argv[5]) if len(sys.argv) > 5 else 0
os.makedirs(out, exist_ok=True)
rec = lambda ts, func, site, kind: struct.pack("<QQQIB3x", ts, func, site, 1, kind)
call = rec(1000, 0x1000, 0, 0) + rec(1010, 0x1000, 0, 1)
for i in range(first, first + n):
    last = i == first + n - 1
    for seq in range(last_segs if last else 1):
        head = struct.pack("<8sIIII5QIIQ", b"MLTRACE\0", 2, 32, 80, 0, 0, 0, 0, 0, 0, i, seq, 0)
        stop = rec(1020, 1, budget, 2) if last and budget else b""
        with open(os.path.join(out, "trace.stream.%d.%d.bin" % (i, seq)), "wb") as f:
            f.write(head + call + stop)
PY
}
# peak DIR ARGS...: top DIR --once --top 0 ARGS into $T/out (stderr:
# $T/err); prints its peak RSS in KiB, or "failed" when it did not exit 0
peak() {
    local dir=$1; shift
    python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else "failed")' \
        "$T/out" "${LIM[@]}" "$CS" top "$dir" --once --top 0 "$@" 2> "$T/err"
}
header() { sed -n 's/.* events \([0-9]*\)  calls \([0-9]*\)  functions \([0-9]*\)$/events \1 calls \2 functions \3/p' "$T/out"; }
nsources() { grep -Ec '^[ >] *[0-9]+ stream [0-9]+ ' "$T/out"; }
over() { grep '^    + ' "$T/out"; }
calls_0x1000() { awk '$NF == "0x1000" { print $1 }' "$T/out"; }

# --- 30,000 series, default options ---
series "$T/many" 1 30000
is "$(ls "$T/many" | wc -l)" 30000 "30,000 tiny series written"
rss=$(peak "$T/many")
diag "peak RSS: $rss KiB (bound $RSS_MAX KiB, ASan $ASAN)"
[ "$rss" != failed ] && [ "$rss" -lt "$RSS_MAX" ]
ok $? "top --once on them exits 0 within $((RSS_MAX / 1024)) MB of peak RSS ($rss KiB)"
is "$(header)" "events 2048 calls 1024 functions 1" "the first 1024 series are analyzed: 2048 events, 1024 calls"
is "$(nsources)" 1024 "one source row for each of them"
grep -Eq '^ +1 stream 1 ' "$T/out" && grep -Eq '^ *1024 stream 1024 ' "$T/out" && ! grep -q ' stream 1025 ' "$T/out"
ok $? "streams 1 to 1024, the first in the directory's order"
is "$(over)" \
    "    + 28976 series not analyzed, beyond --max-series 1024 (raise it to see them): 28976 files, 4172544 bytes" \
    "the other 28,976 are counted exactly, with their files and bytes, and the option that raises the cap"
is "$(calls_0x1000)" 1024 "the function row counts the analyzed series' calls"
is "$(cat "$T/err")" "" "nothing on stderr"

# --- a few series: the cap, raised, and segments counted ---
series "$T/few" 1 10 3
peak "$T/few" --max-series 4 > /dev/null
is "$(header):$(nsources)" "events 8 calls 4 functions 1:4" "--max-series 4: four series analyzed"
is "$(over)" "    + 6 series not analyzed, beyond --max-series 4 (raise it to see them): 8 files, 1152 bytes" \
    "six counted, the last one's three segments among their files"
peak "$T/few" --max-series 10 > /dev/null
is "$(header):$(nsources):$(over)" "events 24 calls 12 functions 1:10:" \
    "--max-series 10: every series and segment analyzed, nothing left out, no line"
"$CS" top "$T/few" --once --max-series 0 > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "2:callsight top: --max-series 0: a count from 1 to 1000000" "--max-series 0: a usage error"

# --- notes: what the pass capped or lost, as analyze says it ---
mkdir "$T/notes"
"$TOOLBIN/hostile" wrap "$T/notes/trace.stream.1.0.bin" # lost events: a thread's note, said when it ends
series "$T/notes" 2 1 1 4096                             # a capture stop: said from the first refresh
"$CS" analyze "$T/notes" --exe "$B/examples/workload" > "$T/a.txt" 2>&1
grep '^note: ' "$T/a.txt" > "$T/a.notes"
"$CS" top "$T/notes" --once > "$T/out" 2> "$T/err"
ok $? "top --once on a trace with losses and a capture stop exits 0"
grep '^note: ' "$T/out" > "$T/t.notes"
[ "$(wc -l < "$T/a.notes")" = 2 ] && diff "$T/a.notes" "$T/t.notes" > "$T/notes.diff"
ok $? "and prints analyze's two notes word for word ($(tr '\n' ' ' < "$T/t.notes"))"

# --- the screen: the line stays, however few source rows fit ---
TM="tmux -L cs-top-many-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
$TM new-session -d -s top -x 160 -y 10 "bash --norc --noprofile"
$TM send-keys -t top "cd '$T' && '$CS' top few --max-series 4 --interval 0.2; echo TOP-EXIT=\$?" Enter
pane_until top "^    \+ 6 series not analyzed, beyond --max-series 4 \(raise it to see them\): 8 files, 1152 bytes$"
ok $? "on a 10-line screen, the line of the 6 series left out shows"
# (the sources end at a later refresh: a loaded machine shows the line first)
pane_until top '^ +\.\.\. and [0-9]+ ended sources?, not shown for room' &&
    grep -Eq "^    \+ 6 series not analyzed, beyond --max-series 4 \(raise it to see them\): 8 files, 1152 bytes$" "$T/pane"
ok $? "beside ended sources giving their rows up"
$TM send-keys -t top q
pane_until top "TOP-EXIT=0"
ok $? "q quits with status 0"
$TM send-keys -t top "clear; '$CS' top notes --interval 0.2; echo TOP-EXIT=\$?" Enter
pane_until top "note: stream 2: capture stopped: byte budget 4096 reached$"
ok $? "a note of the pass shows on the screen's bottom line"
$TM send-keys -t top q
pane_until top "TOP-EXIT=0" > /dev/null
exit $_failed
