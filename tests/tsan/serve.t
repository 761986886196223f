#!/usr/bin/env bash
# Run by `make tsan-test` (tests/tsan/tsan.mk): callsight serve built with
# -fsanitize=thread, so every connection's reader and writer threads
# (conn.c, chunkq.c) and serve's joining of connection threads run
# under TSan.  Five streams at once: plain chunks rotating segments, one
# past --max-mb, one that turns malformed mid-stream, coded chunks from
# trace_stream, and one paused when SIGTERM comes, while the control socket
# is asked for every connection's wire bytes.  No TSan report, serve
# exits 0, and every connection's counts are exact.
source "$(dirname "$0")/../lib/lib.sh"
plan 10

TB=${TSAN_BUILD:?run through make tsan-test}
CS=$TB/host/callsight
need_tools streamgen ringwriter
GEN=$TOOLBIN/streamgen
SHM=/cs-test-tsan-serve-$$
track_shm $SHM
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"

start_serve "$T/out" --seg-mb 1 --max-mb 2 --min-free-mb 0 --quiet
ok $? "serve under TSan listens"
# Meanwhile callsight top's question, over and over: each connection's wire
# bytes, which the control thread reads while the readers count them.
python3 - "$T/out/.callsight-serve.sock" "$T/asked-enough" "$T/asker-ready" > "$T/wire.out" <<'PY' &
import os, socket, sys, time
open(sys.argv[3], "w").close()
for _ in range(6000):
    if os.path.exists(sys.argv[2]):
        break
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(sys.argv[1])
        s.sendall(b"wire\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        lines = data.decode().splitlines()
        if lines and lines[0].startswith("wire ") and int(lines[0][5:]) == len(lines) - 1 and len(lines) > 1:
            print(lines[0], flush=True)  # an answer that listed connections
    except OSError:
        pass
    time.sleep(0.01)
PY
asker=$!
track_pid $asker
wait_file "$T/asker-ready"
P="127\\.0\\.0\\.1:[0-9]+"
wait_in() { for _ in $(seq 500); do grep -Eq "$2" "$1" && return 0; sleep 0.02; done; return 1; }

# 60000 plain events in 120 chunks: two segments, within the 2 MB budget.
timeout 120 "$GEN" --events 60000 --chunk 500 127.0.0.1 "$SERVE_PORT" &
a=$!
# 100000 events (3.2 MB): the budget stops the writing, the rest is counted.
timeout 120 "$GEN" --events 100000 --chunk 1000 127.0.0.1 "$SERVE_PORT" &
b=$!
# 20 good chunks, then a frame that is no zstd frame.
timeout 120 "$GEN" --events 20000 --chunk 1000 --bad corrupt 127.0.0.1 "$SERVE_PORT" &
c=$!
# coded chunks: trace_stream offers the codec, serve acks it.
timeout 120 "$B/trace_stream" --quiet "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/ts.err" &
d=$!
track_pid $a; track_pid $b; track_pid $c; track_pid $d
wait_file "/dev/shm$SHM"
timeout 120 "$TOOLBIN/ringwriter" --wait --batch 512 "$SHM" 50000 > /dev/null
wait $a; ra=$?; wait $b; rb=$?; wait $c; wait $d; rd=$?
is "$ra $rb $rd" "0 0 0" "the clients end normally"

wait_serve_closed 4

close_line() { grep -E "^callsight serve: conn [0-9]+ closed \($P\): $1" "$SERVE_LOG"; }
close_line "60000 events, 2 segments, 1920160 bytes written, [0-9]+ bytes received, dropped 0$" > /dev/null
ok $? "plain stream: all 60000 events in 2 segments"
line=$(close_line "[0-9]+ events, .* events discarded \(budget reached\)$")
ev=$(echo "$line" | sed -n 's/.*): \([0-9]*\) events,.*/\1/p')
dis=$(echo "$line" | sed -n 's/.*, \([0-9]*\) events discarded.*/\1/p')
is "$((ev + dis))" 100000 "budget: written ($ev) + discarded ($dis) = sent"
close_line "20000 events, 1 segment, .*; error: chunk 21: corrupt zstd frame: .*$" > /dev/null
ok $? "malformed stream: the 20 good chunks kept, one clear reason"
close_line "50000 events, .* dropped 0$" > /dev/null
ok $? "coded stream: all 50000 events"

# Paused after 2 of 5 chunks when serve is told to stop.
timeout 120 "$GEN" --events 5000 --chunk 1000 --pause-after 2 --paused-file "$T/paused" \
    --resume-file "$T/resume" 127.0.0.1 "$SERVE_PORT" &
e=$!
track_pid $e
wait_file "$T/paused"
wait_in "$SERVE_LOG" "^callsight serve: conn 5 from"
n0=$(wc -l < "$T/wire.out") # answers so far; the next lists conn 5 alone
for _ in $(seq 500); do [ "$(wc -l < "$T/wire.out")" -gt "$n0" ] && break; sleep 0.02; done
touch "$T/asked-enough"
wait $asker
is "$(sed -n "$((n0 + 1))p" "$T/wire.out")" "wire 1" \
    "serve's control thread lists the open connections' wire bytes ($n0 answers while the 4 streamed)"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"
is $? 0 "serve exits 0 on SIGTERM with a stream open"
touch "$T/resume"
wait $e
close_line "2000 events, .*\(server stopping\)$" > /dev/null
ok $? "the paused stream's 2000 events are written and the close line says why it ended"
is "$(grep -c "ThreadSanitizer" "$SERVE_LOG")" 0 "no ThreadSanitizer report"
grep -m 20 -A 12 "WARNING: ThreadSanitizer" "$SERVE_LOG" | sed 's/^/# /'
exit $_failed
