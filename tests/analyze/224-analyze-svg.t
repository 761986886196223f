#!/usr/bin/env bash
# 224-analyze-svg.t - `callsight analyze --format svg`: the flame graph is
# well-formed XML (python3's parser) with every box where the numbers put
# it and nothing fetched from outside; headless Chromium renders it to a
# non-blank picture (PNG decoded with zlib by pngcolors.py) and runs its
# script: search highlights and measures, click-zoom rescales; the stack
# cap keeps totals exact and says so.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/tiny_trace.sh"

plan 9

tiny_build
named_trace "$T/named"

"$CS" analyze "$T/named" --exe "$T/tiny" --format svg -o "$T/f.svg" 2>"$T/err"
ok $? "svg written"

if ! command -v python3 >/dev/null 2>&1; then
    for i in $(seq 8); do skip "python3 missing: scripts/deps.sh install failed?"; done
    exit 0
fi

# Parse it; list every box as "depth x width name px-x px-width".
python3 - "$T/f.svg" >"$T/boxes" 2>&1 <<'PY'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == NS + "svg", root.tag
for el in root.iter():
    for k, v in el.attrib.items():
        assert not k.endswith("href") and "url(" not in v, (k, v)
    assert el.tag != NS + "image" and el.tag != NS + "foreignObject"
scripts = root.findall(NS + "script")
assert len(scripts) == 1 and "src" not in scripts[0].attrib and "function zoom" in scripts[0].text
assert "@import" not in root.find(NS + "style").text
frames = root.find(".//" + NS + "g[@id='frames']")
for g in frames:
    r, t, title = g.find(NS + "rect"), g.find(NS + "text"), g.find(NS + "title")
    assert r is not None and t is not None and title is not None
    a = g.attrib
    print(a["data-d"], a["data-x"], a["data-w"], a["data-n"],
          "%.2f" % float(r.attrib["x"]), "%.2f" % float(r.attrib["width"]))
PY
cat >"$T/want" <<'R'
0 0 12400000 all 10.00 1180.00
1 0 10000000 thread 500 (main) 10.00 951.61
2 0 10000000 main 10.00 951.61
3 0 300000 helper 10.00 28.55
3 300000 1000000 work 38.55 95.16
4 300000 500000 helper 38.55 47.58
1 10000000 2400000 thread 501 (worker-1) 961.61 228.39
2 10000000 2300000 work 961.61 218.87
3 10000000 800000 helper 961.61 76.13
2 12300000 100000 [lost frames] 1180.48 9.52
3 12300000 100000 helper 1180.48 9.52
R
diff "$T/want" "$T/boxes" >"$T/diff"
ok $? "python3's XML parser reads it; nothing external; every box at its time and width" || sed 's/^/# /' "$T/diff"

grep -q 'data-info="work (tiny.c:3): 2.300 ms, 18.5%, self 1.500 ms, 1 calls"' "$T/f.svg"
ok $? "hover text: name, file:line, inclusive time, share, self time, calls"

if ! command -v chromium >/dev/null 2>&1; then
    for i in $(seq 4); do skip "chromium missing: scripts/deps.sh install failed?"; done
else
    # chrome ARGS...: headless Chromium with a fresh profile, bounded in time
    chrome() {
        local prof
        prof=$(mktemp -d "$T/profile.XXXXXX")
        timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$prof" "$@" 2>"$T/chrome.err"
    }
    chrome --screenshot="$T/shot.png" --window-size=1200,300 "file://$T/f.svg" >/dev/null
    python3 "$TESTS/tools/pngcolors.py" "$T/shot.png" >"$T/png" 2>&1
    diag "screenshot: $(cat "$T/png")"
    read -r size colors painted warm blue <"$T/png"
    [ "$size" = 1200x300 ] && [ "${colors#colors=}" -ge 20 ] && [ "${warm#warm=}" -ge 5000 ] &&
        [ "${blue#blue=}" -ge 5000 ]
    ok $? "Chromium renders it: a 1200x300 picture with thousands of function and thread pixels"

    chrome --dump-dom "file://$T/f.svg#search=^helper\$" >"$T/dom"
    grep -q '>Matched: 4 boxes, 13.7%<' "$T/dom" && [ "$(grep -c 'fill="rgb(230,0,230)"' "$T/dom")" = 4 ]
    ok $? "search (run by Chromium): 4 helper boxes highlighted, 1.7 of 12.4 ms = 13.7%"

    # Box 6 in document order is thread 501: zoom fills the width with it.
    chrome --dump-dom "file://$T/f.svg#zoom=6" >"$T/dom"
    python3 - "$T/dom" >"$T/zoom" 2>&1 <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
for g in re.findall(r'<g class="f[^>]*>.*?</g>', dom):
    cls = re.search(r'class="([^"]*)"', g).group(1)
    name = re.search(r'data-n="([^"]*)"', g).group(1)
    x, w = re.search(r'<rect x="([^"]*)" y="[^"]*" width="([^"]*)"', g).groups()
    print(cls, name, x, w)
PY
    cat >"$T/want" <<'R'
f anc all 10.00 1180.00
f hide thread 500 (main) 10.00 951.61
f hide main 10.00 951.61
f hide helper 10.00 28.55
f hide work 38.55 95.16
f hide helper 38.55 47.58
f thread 501 (worker-1) 10.00 1180.00
f work 10.00 1130.83
f helper 10.00 393.33
f [lost frames] 1140.83 49.17
f helper 1140.83 49.17
R
    diff "$T/want" "$T/zoom" >"$T/diff"
    ok $? "zoom (run by Chromium): thread 501 fills the width, its callees rescaled, others hidden" ||
        sed 's/^/# /' "$T/diff" "$T/chrome.err"

    "$CS" analyze "$T/named" --exe "$T/tiny" --format svg --function work -o "$T/w.svg" 2>"$T/err" &&
        chrome --screenshot="$T/w.png" --window-size=1200,200 "file://$T/w.svg" >/dev/null &&
        python3 "$TESTS/tools/pngcolors.py" "$T/w.png" >"$T/png" 2>&1
    read -r size colors painted warm blue <"$T/png"
    [ "${warm#warm=}" -ge 5000 ]
    ok $? "a filtered flame graph renders too"
fi

# The stack cap: 4 nodes (root, other, thread 500, main); the rest is
# counted under [other stacks], totals exact, a note on stderr and in the svg.
"$CS" analyze "$T/named" --exe "$T/tiny" --format folded --max-stacks 4 >"$T/capped" 2>"$T/err"
is "$(cat "$T/capped")|$(cat "$T/err")" "thread 500 (main);main 8700000
[other stacks] 3700000|callsight analyze: note: 7 calls on stacks beyond --max-stacks 4 are counted under [other stacks]" \
    "--max-stacks: beyond the cap calls go to [other stacks], the sum stays 12.4 ms, noted"
"$CS" analyze "$T/named" --exe "$T/tiny" --format svg --max-stacks 4 2>/dev/null |
    grep -q '7 calls beyond 4 stacks are under \[other stacks\]'
ok $? "the capped svg says so in its subtitle"
