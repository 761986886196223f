#!/usr/bin/env bash
# 703-ui-pages.t - callsight ui's pages in headless Chromium (driven by
# tests/tools/uidrive.py through chromedriver): every page loads with no
# console error or warning; the report's rows are analyze's JSON rows (name,
# calls, self and inclusive ns, in its order), its header line and notes
# analyze's text; sorting by a column and filtering by name work; a
# function's page draws its histogram and lists callers, callees and
# slowest calls; a click on a flame-graph frame zooms on it and Reset
# undoes it, search highlights; the timeline draws the calls of a known
# window, and marks the frames cut short in another (lost events, a call
# that never returned); a thread named like HTML is shown as text, never
# parsed.
# UI_SHOTS=DIR saves a screenshot of each page there (docs/img/ui-*.png).
# SKIP without chromium and chromedriver (scripts/deps.sh install test).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 21

if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in $(seq 21); do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
    exit 0
fi
tiny_build
named_trace "$T/tr"
# A second trace: thread 600 named like HTML, calling work() once.
mkdir "$T/hostile"
perl "$TESTS/tools/tracegen.pl" "$T/hostile/trace.600.600.0.bin" <<S
H pid=600
N 600 <i id=pwn>x</i>
E 0 $W 600 $MS
E 1000 $H 600 $WS
X 2000 $H 600
X 5000 $W 600
S
start_ui "$T/tr" "$T/hostile" --exe "$T/tiny"
U=$UI_URL

rows="return [...document.querySelectorAll('#report tbody tr')].map((r) => r.dataset.name).join(' ')"
cat >"$T/steps.json" <<J
[
{"go": "${U}#/report?t=0", "ready": "report"},
{"js": "return JSON.stringify([...document.querySelectorAll('#report tbody tr')].map((r) => [r.dataset.name, +r.dataset.calls, +r.dataset.self, +r.dataset.incl]))"},
{"js": "return document.getElementById('summary').textContent + '\\\\n' + [...document.querySelectorAll('#notes li')].map((l) => l.textContent).join('\\\\n')"},
$(shot report)
{"logs": true},
{"click": "th[data-key=calls]"},
{"js": "$rows"},
{"click": "th[data-key=calls]"},
{"js": "$rows"},
{"type": ["#filter", "hel"]},
{"js": "$rows + ' / ' + document.getElementById('shown').textContent"},
{"type": ["#filter", "work"]},
{"click": "#report td.name a"},
{"wait": "return document.body.dataset.ready === 'function' && location.hash.startsWith('#/function')"},
{"js": "return [document.querySelector('h1').textContent, document.querySelectorAll('#hist rect.bar').length, [...document.querySelectorAll('#callers td.name, #callees td.name')].map((t) => t.textContent).join(','), document.querySelectorAll('#slowest tbody tr').length].join(' ')"},
$(shot function)
{"logs": true},
{"go": "${U}#/flame?t=0", "ready": "flame"},
{"js": "return document.querySelectorAll('#flame .frame').length"},
$(shot flame)
{"click": "#flame .frame[data-name=work]"},
{"js": "const f = document.querySelector('#flame .frame.focus'); return [f.dataset.name, f.querySelector('rect').getAttribute('width'), document.querySelectorAll('#flame .frame').length, document.getElementById('info').textContent.split(';')[0]].join(' | ')"},
{"type": ["#search", "helper"]},
{"js": "return document.querySelectorAll('#flame .frame.hit').length"},
{"click": "#reset"},
{"js": "return document.querySelectorAll('#flame .frame').length + ' ' + document.querySelectorAll('#flame .frame.hit').length"},
{"type": ["#search", "helper"]},
{"js": "return document.querySelectorAll('#flame .frame.hit').length"},
{"logs": true},
{"go": "${U}#/timeline?t=0&from=0&to=3000000", "ready": "timeline"},
{"js": "return [...document.querySelectorAll('#timeline .call')].map((c) => c.dataset.name).join(' ')"},
$(shot timeline)
{"go": "${U}#/timeline?t=0&from=6000000&to=10000000", "ready": "timeline"},
{"js": "return [...document.querySelectorAll('#timeline .cut')].map((c) => c.dataset.name).join(' ') + ' | ' + document.getElementById('window').textContent"},
{"logs": true},
{"go": "${U}#/flame?t=1", "ready": "flame"},
{"js": "return [document.querySelectorAll('#pwn, i').length, [...document.querySelectorAll('#flame .frame')].map((f) => f.dataset.name).join(',')].join(' ')"},
{"go": "${U}#/timeline?t=1", "ready": "timeline"},
{"js": "return [document.querySelectorAll('#pwn, i').length, document.querySelector('#timeline text').textContent].join(' ')"},
{"go": "${U}#/traces", "ready": "traces"},
{"js": "return [...document.querySelectorAll('#traces tbody tr')].map((r) => r.dataset.name).join(' ')"},
$(shot traces)
{"logs": true}
]
J
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || diag "uidrive: status $rc: $(grep error "$T/out" | head -c 400) $(head -c 300 "$T/err")"
# The answers of the js and logs steps, in order (clicks and loads say ok).
mapfile -t A < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "value" in d: print(json.dumps(d["value"]) if not isinstance(d["value"], str) else d["value"].replace("\n", "\\n"))
    elif "logs" in d: print("logs: " + json.dumps(d["logs"]))' "$T/out")

"$CS" analyze "$T/tr" --exe "$T/tiny" --format json >"$T/want.json"
"$CS" analyze "$T/tr" --exe "$T/tiny" >"$T/want.txt"
want_rows=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps([[f["name"], f["calls"], f["self_ns"], f["incl_ns"]] for f in d["functions"]], separators=(",", ":")))' "$T/want.json")
is "${A[0]:-}" "$want_rows" "the report's rows are analyze's JSON rows, in its order"
is "${A[1]:-}" "$(sed -n '1p;/^note: /p' "$T/want.txt" | sed ':a;N;$!ba;s/\n/\\n/g')" "the header line and notes are analyze's"
is "${A[2]:-}" "logs: []" "report: no console errors"
is "${A[3]:-}" "helper work main" "sorted by calls, most first"
is "${A[4]:-}" "main work helper" "sorted by calls again: fewest first"
is "${A[5]:-}" "helper / 1 of 3 functions" "filtered by 'hel': helper alone"
is "${A[6]:-}" "work 2 main,helper 2" "work's page: 2 histogram bars, caller main, callee helper, 2 slowest calls"
is "${A[7]:-}" "logs: []" "function page: no console errors"
is "${A[8]:-}" "11" "the flame graph draws all 11 frames"
is "${A[9]:-}" "work | 1199.5 | 5 | work: inclusive 1.000 ms, self 500.000 us" \
    "a click on main's work zooms: it fills the width, its ancestors and helper stay"
is "${A[10]:-}" "1" "search 'helper' zoomed on work: its one helper highlighted"
is "${A[11]:-}" "11 0" "Reset: all 11 frames, none highlighted"
is "${A[12]:-}" "4" "search 'helper' then: all 4 helper frames highlighted"
is "${A[13]:-}" "logs: []" "flame graph: no console errors"
is "$(tr ' ' '\n' <<<"${A[14]:-}" | sort | tr '\n' ' ')" "helper helper main work " \
    "the timeline's 0-3 ms window: main, work and two helpers"
is "${A[15]:-}" "[lost frames] work | 6.000 ms to 10.000 ms of 10.000 ms: 4 calls of 3.773 us or more, 2 cut short (dashed)" \
    "the timeline's 6-10 ms window: thread 501's lost frames and its unreturned work marked"
is "${A[16]:-}" "logs: []" "timeline: no console errors"
is "${A[17]:-}" "0 all,thread 600 (<i id=pwn>x</i>),work,helper" "a thread named like HTML: text in the flame graph, no element"
is "${A[18]:-}" "0 600 <i id=pwn>x</i>" "... and in the timeline's lanes"
is "${A[19]:-}" "0 1" "the traces page lists both traces"
is "${A[20]:-}" "logs: []" "traces: no console errors, nor on the hostile pages"
