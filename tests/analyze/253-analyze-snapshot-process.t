#!/usr/bin/env bash
# 253-analyze-snapshot-process.t - one process reported as "2 processes" in
# the flight-recorder flow (issue 38).  A snapshot is the ring's newest part:
# a thread's PROCESS marker (27) and its process's announcement may come
# after its first records or be overwritten, and the records before them
# went to the stream's default process, "unannounced", beside the pid.
# analyze now reads each snapshot once ahead: a thread that names its
# process anywhere in the snapshot belongs to it from its first record, and
# when the snapshot names one process only, the threads that name none are
# taken for it.  An ordinary stream is read as before.  End to end, the
# runtime says its process again as the ring is overwritten, and a real
# flight recorder's snapshots of a four-thread workload are one process,
# one row per function.
source "$(dirname "$0")/../lib/lib.sh"
plan 7

exe="$T/exe"; cp "$(type -P true)" "$exe"
# snap FILE PIDB: a snapshot (SNAPSHOT 1 for callsight trigger, WRAP) whose
# thread 11 calls 0x10 before naming pid 500, thread 12 names PIDB first,
# thread 13 never names one
snap() {
    perl "$TESTS/tools/tracegen.pl" "$1" <<S
H pid=2
M 100 33 260 0
M 100 5 0 0
E 1000 0x10 11
X 2000 0x10 11
M 1500 27 $2 12
E 1600 0x10 12
X 1700 0x10 12
M 2500 27 500 11
E 3000 0x10 11
X 4000 0x10 11
E 5000 0x10 13
X 6000 0x10 13
S
}
pids() { python3 -c 'import json,sys; print(" ".join("%s:%s" % (t["tid"], t["pid"]) for t in sorted(json.load(open(sys.argv[1]))["threads"], key=lambda t: t["tid"])))' "$1"; }

mkdir "$T/one" "$T/two" "$T/plain"
snap "$T/one/trace.stream.2.0.bin" 500
"$CS" analyze "$T/one" --exe "$exe" --top 0 > "$T/one.txt" 2>&1
is "$? $(grep -c 'processes' "$T/one.txt") $(grep -c '^note: stream 2: flight-recorder snapshot 1, taken for callsight trigger' "$T/one.txt")" "0 0 1" \
    "a snapshot naming one process: no '2 processes' note"
"$CS" analyze "$T/one" --exe "$exe" --format json -o "$T/one.json"
is "$(pids "$T/one.json")" "11:500 12:500 13:500" "every thread is pid 500's, the records before its marker too"

snap "$T/two/trace.stream.2.0.bin" 600
"$CS" analyze "$T/two" --exe "$exe" --format json -o "$T/two.json"
is "$(pids "$T/two.json")" "11:500 12:600 13:None" "two processes named: each thread by its marker, from its first record; the one that names none stays unplaced"
"$CS" analyze "$T/two" --exe "$exe" --format sqlite -o "$T/two.db"
is "$("$CS" sql "$T/two.db" --csv 'SELECT tid, pid FROM thread ORDER BY tid; SELECT snapshot, snapshot_cause FROM source' |
      grep -v '^tid\|^snapshot' | tr '\n' ' ')" "11,500 12,600 13, 1,4 " \
   "sqlite: the same pids (NULL for the unplaced one), and the source is snapshot 1, taken for callsight trigger (cause 4)"

# not a snapshot: the records before a thread's marker are its stream's, as before
perl "$TESTS/tools/tracegen.pl" "$T/plain/trace.stream.3.0.bin" <<S
H pid=3
E 1000 0x10 11
X 2000 0x10 11
M 2500 27 500 11
E 3000 0x10 11
X 4000 0x10 11
M 2600 27 500 12
E 3000 0x10 12
X 4000 0x10 12
S
"$CS" analyze "$T/plain" --exe "$exe" --top 0 > "$T/plain.txt" 2>&1
is "$(grep -c '^note: stream 3: 2 processes: unannounced (exe), pid 500 (exe)$' "$T/plain.txt")" "1" \
    "an ordinary stream: read as before (records before a marker are the stream's)"

# --- end to end: a flight recorder, a small ring, four workers ---
W=$B/examples/workload
start_serve "$T/fr"
shm=/callsight-t253-$$
track_shm $shm
TRACE_SHM_SIZE=1048576 "$B/trace_stream" --flight-recorder "$shm" 127.0.0.1 "$SERVE_PORT" 2> "$T/fr.err" &
CLIENT_PID=$!
track_pid $CLIENT_PID
for _ in $(seq 500); do grep -q 'waiting for a tracer' "$T/fr.err" 2>/dev/null && break; sleep 0.02; done
TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_TRIGGER='nap>5ms' timeout 120 "$W" 40 4 > /dev/null
wait_stream_client $CLIENT_PID
stop_serve
diag "$(grep snapshot "$T/fr.err" | head -3)"
snaps=$(grep -c '^trace_stream: snapshot [0-9]* ' "$T/fr.err")
over=$(grep -o ', [1-9][0-9]* events overwritten before it' "$T/fr.err" | wc -l)
"$CS" analyze "$T/fr" --exe "$W" --top 0 > "$T/fr.txt" 2>&1
diag "$snaps snapshots, $over after the ring was overwritten; $(grep -c processes "$T/fr.txt") process notes"
is "$([ "$snaps" -ge 1 ] && [ "$over" -ge 1 ] && echo yes) $(grep -c 'processes:' "$T/fr.txt") $(awk '$1 ~ /^[0-9]+$/ && $10 == "nap"' "$T/fr.txt" | wc -l)" \
    "yes 0 1" "flight-recorder snapshots taken after the ring wrapped: one process each, one row for nap"
"$CS" analyze "$T/fr" --exe "$W" --format json -o "$T/fr.json"
python3 - "$T/fr.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["threads"]
pids = {x["pid"] for x in t if x.get("calls", 1)}
sys.exit(0 if len(pids) == 1 and None not in pids else 1)
PY
ok $? "json: every thread of the snapshots has the program's pid"
exit $_failed
