#!/usr/bin/env bash
# 709-ui-live-stream.t - the Live page on a serve directory while a stream
# runs (issue 36: "the live page shows a stream's counts grow while it
# runs"): one page kept open in headless Chromium, a stream that sends
# 1000 events and waits, then 1000 more; the page's frames go from events
# 1000 (calls 70) to events 2000 (calls 140) without a reload, with no
# console error.  SKIPs without chromium and chromedriver.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/ui_lib.sh"

plan 4

need_tools streamgen
if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in 1 2 3 4; do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
    exit 0
fi
GEN=$TOOLBIN/streamgen
start_serve "$T/s" --quiet
timeout 120 "$GEN" --events 2000 --chunk 100 --pause-after 10 --paused-file "$T/paused" --resume-file "$T/go" \
    127.0.0.1 "$SERVE_PORT" 2>"$T/gen.err" &
gen=$!
track_pid $gen
for _ in $(seq 200); do [ -e "$T/paused" ] && break; sleep 0.05; done
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
start_ui "$T/s" --exe "$GEN"

head='return document.getElementById(\"frame\").textContent'
cat >"$T/steps.json" <<J
[
{"go": "${UI_URL}#/live?t=0", "ready": "live"},
{"wait": "return document.getElementById('frame').textContent.includes('events 1000 ')"},
{"js": "$head"},
{"wait": "return document.getElementById('frame').textContent.includes('events 2000 ')"},
{"js": "$head"},
{"logs": true}
]
J
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out" 2>"$T/err" &
drive=$!
track_pid $drive
# The stream goes on once the page has shown its first half.
for _ in $(seq 600); do [ "$(wc -l <"$T/out")" -ge 3 ] && break; sleep 0.05; done
touch "$T/go"
wait $drive || diag "$(grep error "$T/out") $(head -c 300 "$T/err")"
wait $gen
ok $? "the stream was sent whole"
# A frame's first line, without its directory, refresh and interval.
counts() { sed -n "$1p" "$T/out" | json 'd.get("value", "")' | sed -n 1p | sed 's/.* s  *//; s/  */ /g'; }
is "$(counts 3)" "events 1000 calls 70 functions 13" "the open page: events 1000, calls 70"
is "$(counts 5)" "events 2000 calls 140 functions 13" "the same page, no reload, once the stream went on: events 2000, calls 140"
is "$(tail -n 1 "$T/out")" '{"logs": []}' "the live page: no console errors"
