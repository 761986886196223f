#!/usr/bin/env bash
# 707-ui-traces-cut.t - the Traces list says `cut` for a serve directory
# whose connection was cut (issue 36: each source with its state): not from
# the files' times, which cannot tell, but from the trace's report, once
# the trace was opened and only while that report is of the files as they
# are.  The report itself (analyze's JSON) marks the cut source alone with
# "cut_at_end": true; a stream that ended cleanly has no such key.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/ui_lib.sh"

plan 12

need_tools streamgen
GEN=$TOOLBIN/streamgen
mkdir -p "$T/traces"

# clean/: one stream that ended as it should.
start_serve "$T/traces/clean" --quiet
"$GEN" --events 1000 --chunk 100 127.0.0.1 "$SERVE_PORT" 2>"$T/gen1.err"
wait_serve_closed 1
stop_serve
# cut/: a clean stream, then one cut mid-chunk (serve writes a gap marker last).
start_serve "$T/traces/cut" --quiet
"$GEN" --events 1000 --chunk 100 127.0.0.1 "$SERVE_PORT" 2>"$T/gen2.err"
wait_serve_closed 1
"$GEN" --events 1000 --chunk 100 --bad trunc-chunk 127.0.0.1 "$SERVE_PORT" 2>"$T/gen3.err"
wait_serve_closed 2
stop_serve
touch -d '-2 minutes' "$T"/traces/*/trace.*

# 1. analyze's JSON: only the cut stream has cut_at_end.
"$CS" analyze "$T/traces/cut" --exe "$GEN" --format json >"$T/cut.json" 2>"$T/err"
is "$(json 'rows(d["sources"], "kind", "id"), [s.get("cut_at_end") for s in d["sources"]]' <"$T/cut.json")" \
    "stream:1 stream:2 [None, True]" "the JSON: stream 2, cut, has cut_at_end true; stream 1 no such key"

export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
start_ui "$T/traces" --exe "$GEN"
states() {
    get 'api/traces' >/dev/null
    json 'rows(sorted(d["traces"], key=lambda t: t["name"]), "name", "mode", "state")' <"$T/body"
}

# 2. Nothing opened yet: the times alone, both ended.
is "$(states)" "0/clean:stream:ended 0/cut:stream:ended" "before either is opened: both ended (nothing analyzed for the list)"

# 3-4. Both opened: the cut one says so, the clean one does not.
is "$(get 'api/report?t=0/cut')$(get 'api/report?t=0/clean')" 200200 "both reports answer"
is "$(states)" "0/clean:stream:ended 0/cut:stream:cut" "once opened: 0/cut is cut, 0/clean ended"

# 5-6. The files change (a new time): the report is not theirs any more, so
# the list goes back to the times until the trace is opened again.
touch -d '-30 seconds' "$T"/traces/cut/trace.*
is "$(states)" "0/clean:stream:ended 0/cut:stream:idle" "the cut trace's files changed: idle by their times, not cut from an old report"
is "$(get 'api/report?t=0/cut')$(states)" "2000/clean:stream:ended 0/cut:stream:cut" "opened again: cut"

# 7-10. The Traces page: a new ui (nothing opened), its analyze button on
# each row reads the report and then the state again.
stop_ui
is "$UI_RC" 0 "SIGTERM: exit 0"
touch -d '-2 minutes' "$T"/traces/cut/trace.*
start_ui "$T/traces" --exe "$GEN"
if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in 7 8 9; do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
else
    row() { echo "[...document.querySelectorAll('#traces tbody tr')].find((r) => r.dataset.name === '$1')"; }
    cell() { echo "[...$(row "$1").querySelectorAll('td')].slice(3).map((c) => c.textContent).join('|')"; }
    cat >"$T/steps.json" <<J
[
{"go": "${UI_URL}#/traces", "ready": "traces"},
{"js": "return $(cell 0/cut)"},
{"click": "tr[data-name='0/cut'] td.loss button"},
{"click": "tr[data-name='0/clean'] td.loss button"},
{"wait": "return ![...document.querySelectorAll('#traces td.loss')].some((c) => c.querySelector('button'))"},
{"wait": "return $(row 0/cut).querySelector('td.state').textContent !== 'ended'"},
{"js": "return $(cell 0/cut) + ' / ' + $(cell 0/clean)"},
{"logs": true}
]
J
    timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out" 2>"$T/err" || diag "$(grep error "$T/out") $(head -c 300 "$T/err")"
    is "$(sed -n 2p "$T/out" | json 'd.get("value")')" "ended|2|64,192|analyze" "the page before: 0/cut ended by its times, 2 files, its analyze button"
    is "$(sed -n 7p "$T/out" | json 'd.get("value")')" \
        "cut|2|64,192|2,000 events, 0 lost, 1 cut / ended|1|32,080|1,000 events, 0 lost" \
        "analyzed: 0/cut's 2000 events, 1 source cut, its state now cut; 0/clean's 1000, ended"
    is "$(tail -n 1 "$T/out")" '{"logs": []}' "traces page: no console errors"
fi

# 10-11. It stops cleanly.
stop_ui
is "$UI_RC" 0 "SIGTERM: exit 0"
is "$(ls -A "$TMPDIR")" "" "its temporary files removed"
