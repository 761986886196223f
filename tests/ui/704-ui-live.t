#!/usr/bin/env bash
# 704-ui-live.t - callsight ui's Live page: api/live is a stream of
# server-sent events, a frame a second, each `callsight top DIR --once`'s
# output line for line; at most 4 streams at once (the fifth: 503, and a
# place again once one closes).  In headless Chromium the page shows the
# frames as they come: with thread 500's file alone main has 1 call and
# work 1; once thread 501's file appears work has 2, with no console error.
# The browser part SKIPs without chromium and chromedriver.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 7

tiny_build
named_trace "$T/all"
touch -d '-2 minutes' "$T"/all/trace.* # ended, for top's state column
mkdir "$T/live"
cp -p "$T/all/trace.500.500.0.bin" "$T/live/"
start_ui "$T/live" --exe "$T/tiny"

# 1-2. The first two frames (read until the second ends, at most 30 s),
# the first exactly top --once's frame.
curl -s -N -m 30 "${UI_URL}api/live?t=0" | awk '{print} /^id: 2$/ {two = 1} two && /^$/ {exit}' >"$T/sse"
"$CS" top "$T/live" --once --exe "$T/tiny" >"$T/top.txt" 2>&1
awk '/^id: 1$/ {on = 1; next} on && /^$/ {exit} on {sub(/^data: /, ""); print}' "$T/sse" >"$T/frame1"
grep -v 'interval\|events/s' "$T/frame1" >"$T/f1"; grep -v 'interval\|events/s' "$T/top.txt" >"$T/t1"
diff "$T/t1" "$T/f1" >"$T/diff"
ok $? "the first event's data lines are top --once's frame (but for its rates)" || sed 's/^/# /' "$T/diff"
is "$(grep -c '^event: frame$' "$T/sse") $(sed -n 's/^id: //p' "$T/sse" | tr '\n' ' ')" "2 1 2 " "frames follow: event frame, ids 1 and 2"

# 3-4. Four streams at once (each has its first frame), a fifth refused;
# a place again once they end.
curls=""
for i in 1 2 3 4; do
    curl -s -N -m 60 -o "$T/live.$i" "${UI_URL}api/live?t=0" &
    curls="$curls $!"
    track_pid $!
done
for _ in $(seq 300); do
    [ -s "$T/live.1" ] && [ -s "$T/live.2" ] && [ -s "$T/live.3" ] && [ -s "$T/live.4" ] && break
    sleep 0.1
done
is "$(get 'api/live?t=0')" 503 "a fifth live stream: 503"
kill $curls 2>/dev/null
wait $curls 2>/dev/null
wait_ok=0
for _ in $(seq 100); do
    [ "$(curl -s -N -m 1 -o /dev/null -w '%{http_code}' "${UI_URL}api/live?t=0")" = 200 ] && { wait_ok=1; break; }
    sleep 0.1
done
is "$wait_ok" 1 "once they end, a stream is taken again"

if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in 5 6 7; do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
    exit 0
fi
calls='const m = /^\\s*(\\d+)\\s.*\\swork \\(/m.exec(document.getElementById(\"frame\").textContent); return m ? m[1] : \"\"'
cat >"$T/steps.json" <<J
[
{"go": "${UI_URL}#/live?t=0", "ready": "live"},
{"wait": "return +document.getElementById('frame').dataset.frames >= 1"},
{"js": "$calls"},
{"logs": true}
]
J
# The copy happens between two runs of the driver: the first reads the
# count, the second waits for it to reach 2.
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out1" 2>"$T/err"
first=$(sed -n 3p "$T/out1" | json 'd.get("value")')
is "$first" 1 "the live page: work has 1 call with thread 500's file alone"
cp -p "$T/all/trace.500.501.0.bin" "$T/live/"
cat >"$T/steps2.json" <<J
[
{"go": "${UI_URL}#/live?t=0", "ready": "live"},
{"wait": "$(sed 's/return m ? m\[1\] : \\"\\"/return m \&\& m[1] === \\"2\\"/' <<<"$calls")"},
{"js": "$calls"},
$(shot live)
{"logs": true}
]
J
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps2.json" >"$T/out2" 2>>"$T/err"
is "$(sed -n 3p "$T/out2" | json 'd.get("value")')" 2 "once thread 501's file appears: work has 2" ||
    diag "$(cat "$T/out2" "$T/err" | head -c 400)"
is "$(sed -n 4p "$T/out1")$(tail -n 1 "$T/out2")" '{"logs": []}{"logs": []}' "the live page: no console errors"
