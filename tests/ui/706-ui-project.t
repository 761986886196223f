#!/usr/bin/env bash
# 706-ui-project.t - the Project page of `callsight ui --project DIR`.
# The API: trace.config read with its version; a draft's preview is
# `callsight scan DIR --config DRAFT`'s output exactly (file rules, and a
# function rule that needs the call graph); a function's subtree is
# `callsight select --list`'s; changes (POSTs) refused without this run's
# token, with a wrong one, from a foreign Origin, over 64 KiB, with a NUL
# byte, or by GET; a save from a stale version refused (409) and the file
# untouched; a save replaces the file whole with its mode kept and no
# temporary file left; a symlinked trace.config never written through;
# a project without trace.config gets one; without --project, 404.
# Then in headless Chromium: the page shows scan's output, redraws it as
# the draft is typed, adds a subtree's include-func line, shows the diff
# before a save and saves the draft, with no console error.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 36

P=$T/proj
mkdir -p "$P/src" "$P/test"
cat >"$P/src/app.c" <<'C'
int util(int x);
int main(void) { return util(1) - 4; }
C
cat >"$P/src/util.c" <<'C'
static int leaf(int x) { return x * 3; }
static int twice(int x) { return leaf(x) + 1; }
int util(int x) { return twice(x); }
C
cat >"$P/test/util_test.c" <<'C'
int util(int x);
int t(void) { return util(2); }
C
printf 'include src/\n' >"$P/trace.config"
chmod 640 "$P/trace.config"
start_ui --project "$P"
U=$UI_URL

# post WHAT FILE [CURL-ARGS...]: POST FILE's bytes to api/project/WHAT.
post() {
    local w=$1 f=$2; shift 2
    curl -s -m 60 -o "$T/body" -w '%{http_code}' -X POST --data-binary @"$f" "$@" "${UI_URL}api/project/$w"
}
# scan_as_draft FILE: scan's output for FILE as the page shows it.
scan_as_draft() {
    "$CS" scan "$P" --config "$1" 2>&1 | sed "s|$1|trace.config (draft)|g"
}

is "$(get api/project)" 200 "GET api/project: 200"
is "$(json 'd["exists"], d["config"] == open("'"$P"'/trace.config").read(), len(d["version"]), len(d["token"])' <"$T/body")" \
    "True True 16 32" "it holds trace.config as it is, a 16-digit version and a 32-digit token"
TOK=$(json 'd["token"]' <"$T/body")
VER=$(json 'd["version"]' <"$T/body")

printf 'include src/\ninclude test/\nexclude *_test.c\n' >"$T/d1"
is "$(post preview "$T/d1")" 403 "a preview without the token: 403"
is "$(post preview "$T/d1" -H 'X-Callsight-Token: 0123456789abcdef0123456789abcdef')" 403 "with a wrong token: 403"
is "$(post preview "$T/d1" -H "X-Callsight-Token: $TOK" -H 'Origin: http://evil.example')" 403 \
    "with the token from a foreign Origin: 403"
# one digit off: the last one changed (to 1 where it is 0, so it always differs)
[ "${TOK: -1}" = 0 ] && OFF=${TOK%?}1 || OFF=${TOK%?}0
is "$(post preview "$T/d1" -H "X-Callsight-Token: $OFF" | tr -d '\n')$(post preview "$T/d1" -H "X-Callsight-Token: ${TOK}0")" \
    "403403" "a token one digit off, or one digit longer: 403"
port=${U#http://127.0.0.1:}
port=${port%%/*}
is "$(post preview "$T/d1" -H "X-Callsight-Token: $TOK" -H "Origin: http://127.0.0.1:$port")" 200 \
    "with the token from its own Origin: 200"
is "$(json 'd["status"]' <"$T/body") $(json 'd["output"]' <"$T/body")" "0 $(scan_as_draft "$T/d1")" \
    "the preview is scan's output for the draft, exactly"

printf 'include src/\nexclude-func leaf\n' >"$T/d2"
"$CS" scan "$P" --config "$T/d2" >/dev/null 2>&1 # the call graph compiled (which scan says), so both find it made
scan_as_draft "$T/d2" >"$T/d2.want"
is "$(post preview "$T/d2" -H "X-Callsight-Token: $TOK")" 200 "a draft with a function rule: 200"
json 'd["output"]' <"$T/body" >"$T/d2.got"
is "$(cat "$T/d2.got")" "$(cat "$T/d2.want")" "... its preview is scan's, functions and the call graph's decisions included"
grep -q 'off .*leaf' "$T/d2.got"
ok $? "... where leaf is off"

# The subtree runs the compiler and writes callsight-obj/: the token, as a change.
is "$(get 'api/project/select?function=util&depth=1')" 403 "the subtree without the token: 403"
is "$(get 'api/project/select?function=util&depth=1' -H "X-Callsight-Token: $OFF")" 403 "with a token one digit off: 403"
is "$(get 'api/project/select?function=util&depth=1' -H "X-Callsight-Token: $TOK")" 200 "the subtree of util, 1 level: 200"
is "$(json 'd["status"]' <"$T/body") $(json 'd["output"]' <"$T/body")" \
    "0 $("$CS" select "$P" --function util --depth 1 --list 2>&1)" "... it is select --list's output"
is "$(get 'api/project/select?function=util&depth=x' -H "X-Callsight-Token: $TOK")$(get 'api/project/select' -H "X-Callsight-Token: $TOK")" "400400" \
    "a depth that is not a number, or no function: 400"

head -c 65537 /dev/zero | tr '\0' '#' >"$T/big"
is "$(post preview "$T/big" -H "X-Callsight-Token: $TOK")" 413 "a draft of 64 KiB + 1: 413"
head -c 65536 /dev/zero | tr '\0' '#' >"$T/max"
is "$(post preview "$T/max" -H "X-Callsight-Token: $TOK")" 200 "one of 64 KiB exactly: 200"
printf 'include src/\n\0exclude src/\n' >"$T/nul"
is "$(post preview "$T/nul" -H "X-Callsight-Token: $TOK")" 400 "a draft with a NUL byte: 400"
is "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Callsight-Token: $TOK" --data-binary @"$T/d1" "${U}api/report")$(get api/project/save)" \
    "405405" "a POST anywhere else, a GET of save: 405"

cp "$P/trace.config" "$T/before"
is "$(post save "$T/d1" -H "X-Callsight-Token: $TOK" -H "X-Callsight-Base: 0123456789abcdef")" 409 \
    "a save from another version: 409"
cmp -s "$T/before" "$P/trace.config"
ok $? "... and trace.config is untouched"
is "$(post save "$T/d1" -H "X-Callsight-Token: $TOK" -H "X-Callsight-Base: $VER")" 200 "a save from the version loaded: 200"
cmp -s "$T/d1" "$P/trace.config"
ok $? "... trace.config is the draft, byte for byte"
is "$(stat -c %a "$P/trace.config") $(ls -A "$P" | tr '\n' ' ')" "640 callsight-obj src test trace.config " \
    "... its mode kept, no temporary file left (callsight-obj/ is scan's call graph)"
is "$(post save "$T/d2" -H "X-Callsight-Token: $TOK" -H "X-Callsight-Base: $VER")" 409 \
    "a second save from the same (now old) version: 409"

mv "$P/trace.config" "$T/real.config"
ln -s "$T/real.config" "$P/trace.config"
SV=$(get api/project)
is "$SV $(json 'd["error"]' <"$T/body")" "409 trace.config is a symbolic link: not read through; edit it by hand" \
    "a symlinked trace.config is not read through either (it could name any file): 409"
is "$(post save "$T/d2" -H "X-Callsight-Token: $TOK" -H "X-Callsight-Base: $VER")" 409 "a symlinked trace.config: save refused"
cmp -s "$T/d1" "$T/real.config" && [ -L "$P/trace.config" ]
ok $? "... the link and its target untouched"
rm "$P/trace.config"
get api/project >/dev/null
is "$(json 'd["exists"], d["version"], d["config"]' <"$T/body")" "False none " "no trace.config: exists false, version none"
is "$(post save "$T/d2" -H "X-Callsight-Token: $TOK" -H "X-Callsight-Base: none")$(stat -c %a "$P/trace.config")" \
    "200644" "a save from none makes it, mode 644"
stop_ui

tiny_build
named_trace "$T/tr"
start_ui "$T/tr" --exe "$T/tiny"
is "$(get api/project)$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Callsight-Token: $TOK" --data-binary @"$T/d1" "${UI_URL}api/project/preview")" \
    "404404" "without --project: 404 for reading and for a preview"
stop_ui

if ! command -v chromedriver >/dev/null || ! command -v chromium >/dev/null; then
    for _ in $(seq 4); do skip "no chromium or chromedriver (scripts/deps.sh install test)"; done
    exit 0
fi
printf 'include src/\n' >"$P/trace.config"
start_ui --project "$P"
U=$UI_URL
pre="return [...document.querySelectorAll('#preview div')].map((d) => d.textContent).join('\\\\n')"
cat >"$T/steps.json" <<J
[
{"go": "${U}#/project", "ready": "project"},
{"js": "$pre"},
{"js": "window.before = document.getElementById('preview').dataset.done; return 1"},
{"type": ["#config", "include src/\\ninclude test/\\nexclude *_test.c\\n"]},
{"wait": "return document.getElementById('preview').dataset.done !== window.before"},
{"wait": "return document.getElementById('preview').textContent.includes('util_test.c')"},
{"js": "$pre"},
{"type": ["#subfunc", "util"]},
{"type": ["#subdepth", "1"]},
{"click": "#subgo"},
{"wait": "return document.getElementById('subtree').dataset.done === '1'"},
{"click": "#addline"},
{"js": "return document.getElementById('config').value.split('\\\\n').slice(-2, -1)[0]"},
$(shot project)
{"click": "#save"},
{"js": "return [...document.querySelectorAll('#diff div')].map((d) => d.textContent).join('|')"},
{"click": "#confirm"},
{"wait": "return document.getElementById('status').textContent.startsWith('saved')"},
{"logs": true}
]
J
timeout 150 python3 "$TESTS/tools/uidrive.py" "$T/steps.json" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || diag "uidrive: status $rc: $(grep error "$T/out" | head -c 400) $(head -c 300 "$T/err")"
mapfile -t A < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if "value" in d: print(json.dumps(d["value"]) if not isinstance(d["value"], str) else d["value"].replace("\n", "\\n"))
    elif "logs" in d: print("logs: " + json.dumps(d["logs"]))' "$T/out")
printf 'include src/\n' >"$T/p0"
printf 'include src/\ninclude test/\nexclude *_test.c\n' >"$T/p1"
is "${A[0]:-}" "$(scan_as_draft "$T/p0" | sed ':a;N;$!ba;s/\n/\\n/g')" "the page opens on scan's output for trace.config"
is "${A[2]:-}" "$(scan_as_draft "$T/p1" | sed ':a;N;$!ba;s/\n/\\n/g')" "typed, the draft's preview is scan's output for it"
is "${A[3]:-}" "include-func util 1" "the subtree helper adds util's include-func line"
printf 'include src/\ninclude test/\nexclude *_test.c\ninclude-func util 1\n' >"$T/p2"
is "${A[4]:-}|$(cat "$P/trace.config")|${A[5]:-}" \
    "  include src/|+ include test/|+ exclude *_test.c|+ include-func util 1|  |$(cat "$T/p2")|logs: []" \
    "Save shows the diff (the lines added marked +), Save writes the draft; no console errors"
