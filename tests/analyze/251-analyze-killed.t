#!/usr/bin/env bash
# 251-analyze-killed.t - a program ended by SIGTERM loses what its threads
# buffered since their last flush, and the report said nothing (issue 38).
# The runtime writes its exit record (the clock anchor, code 6) at exit,
# whatever the clock; a file-mode process with calls still open and no
# such record ended without a clean exit, and analyze says so in one note
# with what was lost and what to do.  A clean exit (ticks or TRACE_CLOCK=mono),
# exit() from inside a function, and a capture stopped by its budget get no
# such note; _exit() from inside one does (its last flush is lost too).
source "$(dirname "$0")/../lib/lib.sh"
plan 8

need_tools slowcall
P=$TOOLBIN/slowcall
note_re='^note: pid [0-9]*: ended without a clean exit (killed by a signal? the runtime.s exit record is missing, [1-9][0-9]* calls were still open): the events after each thread.s last flush (its last batch: up to 2048 events or TRACE_FLUSH_MS, 100 ms by default) were lost; let the program exit (return from main or call exit(), e.g. on a flag its SIGTERM handler sets) to keep them$'

# 400 calls of 1 ms each; SIGTERM once the first flush is in the file
TRACE_ENABLE=1 TRACE_DIR="$T/term" "$P" 400 0 storm > /dev/null &
pid=$!
track_pid $pid
for _ in $(seq 500); do
    [ "$(stat -c %s "$T"/term/trace.$pid.$pid.0.bin 2>/dev/null || echo 0)" -gt 200 ] && break
    sleep 0.01
done
kill -TERM $pid
wait $pid
is "$?" 143 "the program was ended by SIGTERM"
"$CS" analyze "$T/term" --exe "$P" --top 0 > "$T/term.txt" 2>&1
rc=$?
diag "$(grep 'clean exit' "$T/term.txt")"
is "$rc $(grep -c "$note_re" "$T/term.txt")" "0 1" "analyze: exit 0, one note saying it ended without a clean exit, what was lost and what to do"
"$CS" analyze "$T/term" --exe "$P" --format json -o "$T/term.json"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["notes"]; sys.exit(0 if sum("ended without a clean exit" in x for x in n) == 1 else 1)' "$T/term.json"
ok $? "json: the same note"

for clock in auto mono; do
    TRACE_CLOCK=$clock TRACE_ENABLE=1 TRACE_DIR="$T/clean-$clock" "$P" 20 0 storm > /dev/null
    "$CS" analyze "$T/clean-$clock" --exe "$P" --top 0 > "$T/clean-$clock.txt" 2>&1
    is "$? $(grep -c 'clean exit' "$T/clean-$clock.txt") $(calls_of work "$T/clean-$clock.txt")" "0 0 20" \
        "TRACE_CLOCK=$clock, a clean exit: no such note"
done

# exit() and _exit() from inside a function
cp "$DIST/trace.c" "$DIST/trace.h" "$T/"
cat > "$T/quit.c" <<'C'
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int how;
__attribute__((noinline)) static void quit(void) { if (how) _exit(0); exit(0); }
__attribute__((noinline)) static void nap(void) { struct timespec d = {0, 30000000}; nanosleep(&d, NULL); }
__attribute__((noinline)) static void work(void) { nap(); quit(); } /* nap's exit flushes (TRACE_FLUSH_MS=10) */
int main(int argc, char **argv) { how = argc > 1 && !strcmp(argv[1], "_exit"); work(); return 1; }
C
cc -O1 -g -finstrument-functions -I"$T" -o "$T/quit" "$T/quit.c" "$T/trace.c" -pthread
rcs="" syn=""
for how in exit _exit; do
    TRACE_FLUSH_MS=10 TRACE_ENABLE=1 TRACE_DIR="$T/q-$how" "$T/quit" $how
    "$CS" analyze "$T/q-$how" --exe "$T/quit" --top 0 > "$T/q-$how.txt" 2>&1
    rcs="$rcs $? $(grep -c "$note_re" "$T/q-$how.txt") $(calls_of nap "$T/q-$how.txt")"
done
is "$rcs" " 0 0 1 0 1 1" "exit() with calls open: no note (it exited); _exit(): the note (it skipped the runtime's exit)"

TRACE_MAX_MB=1 TRACE_ENABLE=1 TRACE_DIR="$T/budget" "$P" 400000 > /dev/null 2>&1
"$CS" analyze "$T/budget" --exe "$P" --top 0 > "$T/budget.txt" 2>&1
is "$(grep -c 'capture stopped: byte budget' "$T/budget.txt") $(grep -c 'clean exit' "$T/budget.txt")" "1 0" \
    "a capture stopped by its budget: that note, not this one"
# synthetic files: calls open, no anchor; only a writer that says it records its exit is judged
exe="$T/exe"; cp "$(type -P true)" "$exe"
for f in 0 8; do
    mkdir "$T/syn$f"
    perl "$TESTS/tools/tracegen.pl" "$T/syn$f/trace.5.5.0.bin" <<S
H pid=5 flags=$f
E 1000 0x10 5
E 2000 0x20 5
X 3000 0x20 5
S
    "$CS" analyze "$T/syn$f" --exe "$exe" > "$T/syn$f.txt" 2>&1
    syn="$syn $(grep -c "$note_re" "$T/syn$f.txt")"
done
is "$syn" " 0 1" "files without the EXIT_RECORD flag (older runtimes): no note; with it: the note"
exit $_failed
