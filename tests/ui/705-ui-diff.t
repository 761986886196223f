#!/usr/bin/env bash
# 705-ui-diff.t - callsight ui's Diff: api/diff is `callsight diff` on the
# two traces' reports, its text exactly and its status (1: regressed over
# fail=PCT); a bad key is 400, a trace outside the directories 403.  In
# headless Chromium: ticking two traces and Diff opens the page on them,
# its summary diff's; with a threshold, the REGRESSED rows come first; no
# console errors.  The traces: the tiny trace (tiny_trace.sh) and the same
# with thread 500's file alone (work 1 call instead of 2, helper 2 of 5).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 9

tiny_build
named_trace "$T/d/both"
mkdir "$T/d/one"
cp "$T/d/both/trace.500.500.0.bin" "$T/d/one/"
start_ui "$T/d" --exe "$T/tiny"
"$CS" analyze "$T/d/both" --exe "$T/tiny" --format json >"$T/both.json"
"$CS" analyze "$T/d/one" --exe "$T/tiny" --format json >"$T/one.json"

# 1-2. By calls, both -> one: nothing grew, status 0, diff's text exactly.
"$CS" diff "$T/both.json" "$T/one.json" --key calls >"$T/want1"
is "$(get 'api/diff?a=0/both&b=0/one&key=calls')" 200 "diff both -> one answers"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.stdout.write(d["text"]); print("status", d["status"])' "$T/body" >"$T/got1"
echo "status 0" >>"$T/want1"
diff "$T/want1" "$T/got1" >"$T/diff"
ok $? "its text is callsight diff's, status 0" || sed 's/^/# /' "$T/diff"

# 3. one -> both over 10%: work and helper regressed, status 1.
"$CS" diff "$T/one.json" "$T/both.json" --key calls --fail-over 10 >"$T/want2"
echo "status 1" >>"$T/want2"
get 'api/diff?a=0/one&b=0/both&key=calls&fail=10' >/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.stdout.write(d["text"]); print("status", d["status"])' "$T/body" >"$T/got2"
diff "$T/want2" "$T/got2" >"$T/diff"
ok $? "one -> both, fail=10: diff --fail-over 10's text, status 1" || sed 's/^/# /' "$T/diff"
grep -c REGRESSED "$T/want2" >"$T/nreg"
is "$(cat "$T/nreg")" 2 "(work and helper regressed)"

# 5-6. Refusals.
is "$(get 'api/diff?a=0/one&b=0/both&key=bogus')" 400 "an unknown key: 400"
is "$(get 'api/diff?a=0/..&b=0/both')" 403 "a trace outside the directories: 403"

if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in 7 8 9; do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
    exit 0
fi
cat >"$T/steps.json" <<J
[
{"go": "${UI_URL}#/traces", "ready": "traces"},
{"click": "input.pick[value='0/both']"},
{"click": "input.pick[value='0/one']"},
{"click": "#diff"},
{"wait": "return document.body.dataset.ready === 'diff' && !!document.getElementById('diffsummary')"},
{"js": "return document.getElementById('diffsummary').textContent"},
{"go": "${UI_URL}#/diff?a=0/one&b=0/both&key=calls&fail=10", "ready": "diff"},
{"wait": "return !!document.getElementById('difftext') && location.hash.includes('fail=10')"},
{"js": "return [...document.querySelectorAll('#difftext .regressed')].map((s) => s.textContent.trim().split(/ +/).slice(-3, -2)[0]).join(' ') + ' | ' + document.getElementById('difftext').textContent.split('\\\\n')[1].trim().endsWith('REGRESSED')"},
$(shot diff)
{"logs": true}
]
J
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out" 2>"$T/err" || diag "$(grep error "$T/out") $(head -c 300 "$T/err")"
is "$(sed -n 6p "$T/out" | json 'd.get("value")')" "$("$CS" diff "$T/both.json" "$T/one.json" | head -n 1)" \
    "ticking both traces and Diff: the page's summary is diff's (by self time)"
is "$(sed -n 9p "$T/out" | json 'd.get("value")')" "helper work | true" "fail=10: the REGRESSED rows first (helper, work)"
is "$(tail -n 1 "$T/out")" '{"logs": []}' "diff pages: no console errors"
