#!/usr/bin/env bash
# 701-ui-api.t - callsight ui's JSON API on the tiny trace (tiny_trace.sh),
# every number known: the report is analyze's JSON byte for byte; a
# function's figures, histogram, callers, callees and slowest calls; the
# flame graph's tree; the calls in a time window and its level of detail.
# And what it refuses: a wrong or missing Host header (421), directories
# outside those given by .. or by a symlink (403), oversized and too many
# parameters (414), methods other than GET and HEAD (405), paths that are
# not pages (404).  It stops on SIGTERM with status 0 and removes its
# temporary files.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 30

tiny_build
named_trace "$T/traces/tr"
mkdir -p "$T/outside"
named_trace "$T/outside/secret"
ln -s "$T/outside/secret" "$T/traces/tr/escape"
ln -s "$T/outside/secret" "$T/traces/link"
touch -d '-2 minutes' "$T"/traces/tr/trace.* # written two minutes ago: ended
mkdir "$T/traces/bad" # a trace file that is not one: analyze fails
printf 'not a trace, not at all: 32 bytes' >"$T/traces/bad/trace.1.1.0.bin"
touch -d '-2 minutes' "$T/traces/bad/trace.1.1.0.bin"
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
start_ui "$T/traces" --exe "$T/tiny"

# 1-2. The report is analyze's JSON, exactly.
"$CS" analyze "$T/traces/tr" --exe "$T/tiny" --format json >"$T/want.json" 2>"$T/err"
is "$(get 'api/report?t=0/tr')" 200 "the report answers"
cmp -s "$T/body" "$T/want.json"
ok $? "the report is analyze --format json's, byte for byte" || diff "$T/want.json" "$T/body" | head -5 | sed 's/^/# /'

# 3. The traces listed: the directory given holds none, tr under it does;
# the symlink to a directory outside is not listed.
get 'api/traces' >/dev/null
is "$(json 'rows(sorted(d["traces"], key=lambda t: t["name"]), "name", "files", "mode", "state")' <"$T/body")" \
    "0/bad:1:files:ended 0/tr:2:files:ended" "the traces: 0/bad (one file) and 0/tr (two), both ended; no symlink out"

# 4. Its sources: pid 500, 3 events lost.
get 'api/sources?t=0/tr' >/dev/null
is "$(json 'rows(d["sources"], "kind", "source_id", "dropped"), {m["key"]: m["value"] for m in d["meta"]}["events"]' <"$T/body")" \
    "pid:500:3 18" "sources: pid 500 dropped 3, 18 events"

# 5-9. work(): by its report row's addr and binary.
waddr=$(json '[f["addr"] for f in d["functions"] if f["name"] == "work"][0]' <"$T/want.json")
is "$(get "api/function?t=0/tr&addr=$waddr&bin=tiny")" 200 "work's page by addr and bin"
is "$(json '" ".join(str(d["stats"][0][k]) for k in ("calls", "incl_ns", "self_ns", "min_ns", "max_ns"))' <"$T/body")" \
    "2 3000000 2000000 1000000 2000000" "work: 2 calls, 3 ms inclusive, 2 ms self, 1 to 2 ms"
is "$(json 'rows(d["hist"], "lo_ns", "hi_ns", "count")' <"$T/body")" \
    "999424:1015807:1 1998848:2031615:1" "work's histogram: one call in the 1 ms bucket, one in the 2 ms"
is "$(json 'rows(d["callers"], "name", "calls", "dur_ns"), "/", rows(d["callees"], "name", "calls", "dur_ns")' <"$T/body")" \
    "main:1:1000000 / helper:3:1300000" "work's callers (main once, 1 ms) and callees (helper 3 times, 1.3 ms)"
is "$(json 'rows(d["slowest"], "dur", "ts", "tid", "thread")' <"$T/body")" \
    "2000000:5000000:501:worker-1 1000000:100000:500:main" "work's slowest calls, longest first"

# 10. The flame graph: 12.4 ms in all, main's 8.7 ms self under thread 500.
get 'api/flame?t=0/tr' >/dev/null
is "$(json 'd["root"]["total"], [(c["name"], c["total"]) for c in d["root"]["children"]], d["root"]["children"][0]["children"][0]["self"], d["nodes"], d["omitted"]' <"$T/body")" \
    "12400000 [('thread 500 (main)', 10000000), ('thread 501 (worker-1)', 2400000)] 8700000 11 0" \
    "the flame graph's tree: totals per thread, main's self time, 11 nodes"

# 11. Level of detail: max=3 sends three nodes and says how many it left out.
get 'api/flame?t=0/tr&max=3' >/dev/null
is "$(json 'd["nodes"], d["omitted"]' <"$T/body")" "3 3" "flame max=3: 3 nodes sent, 3 left out"

# 12-13. The timeline: the first 3 ms hold main, work, helper and helper on
# thread 500; with 10 pixels only calls of 300 us or more are sent.
get 'api/timeline?t=0/tr&from=0&to=3000000&px=100' >/dev/null
is "$(json 'rows(sorted(d["calls"], key=lambda c: c["id"]), "name", "thread", "depth", "ts", "dur"), d["truncated"]' <"$T/body")" \
    "main:0:0:0:10000000 work:0:1:100000:1000000 helper:0:2:200000:500000 helper:0:1:2000000:300000 False" \
    "the timeline's window 0-3 ms: four calls"
get 'api/timeline?t=0/tr&from=0&to=3000000&px=10' >/dev/null
is "$(json 'd["min_dur"], sorted(c["id"] for c in d["calls"])' <"$T/body")" "300000 [1, 2, 3, 4]" \
    "px=10: only calls of 300 us or more (all four are)"

# 14. A narrow window (0.2-0.7 ms, under 1/16 of the trace) is read by
# thread and start time: main and work open at its start, helper in it.
get 'api/timeline?t=0/tr&from=200000&to=700000&px=100' >/dev/null
is "$(json 'rows(sorted(d["calls"], key=lambda c: c["id"]), "name", "thread", "depth", "ts", "dur"), d["min_dur"], d["truncated"]' <"$T/body")" \
    "main:0:0:0:10000000 work:0:1:100000:1000000 helper:0:2:200000:500000 5000 False" \
    "a narrow window: the calls open at its start and those in it"

# 15. Frames cut short in 6-10 ms: thread 501's placeholder for the frames
# lost with its 3 events, and its work() that never returned.
get 'api/timeline?t=0/tr&from=6000000&to=10000000' >/dev/null
is "$(json 'rows(d["cut"], "thread", "depth", "ts", "dur", "placeholder", "name"), len(d["triggers"])' <"$T/body")" \
    "1:0:7000000:300000:1:None 1:0:8000000:400000:0:work 0" "the timeline's cut frames: the lost ones' placeholder, the unreturned work; no triggers"

# 15-16. The Host header must name this server.
is "$(get 'api/traces' -H 'Host: evil.example:80')" 421 "a foreign Host header: 421"
is "$(get 'api/traces' -H 'Host:')" 421 "no Host header: 421"
# 16. localhost:PORT is this server too (on loopback).
port=${UI_URL##*:}; port=${port%%/*}
is "$(get 'api/traces' -H "Host: localhost:$port")" 200 "Host localhost:PORT taken on loopback"

# 17-20. Nothing outside the directories given.
is "$(get 'api/report?t=0/..')" 403 "t=0/.. refused (403)"
is "$(get 'api/report?t=0/tr/escape')" 403 "a symlink inside to a trace outside refused (403)"
is "$(get 'api/report?t=0/link')" 403 "a symlink in the directory given to a trace outside refused (403)"
is "$(get 'api/report?t=1')" 400 "a directory that was not given: 400"

# 21-22. Bounded parameters.
long=$(printf 'x%.0s' $(seq 300))
is "$(get "api/report?t=$long")" 414 "a 300-byte parameter: 414"
is "$(get "api/report?t=0/tr$(for i in $(seq 20); do printf '&a%d=1' "$i"; done)")" 414 "20 parameters: 414"

# 23-25. Methods and pages.
is "$(get 'api/traces' -X POST)" 405 "POST: 405"
is "$(get '../../../../etc/passwd')" 404 "../ is no page: 404"
get '' >/dev/null
grep -q '<script type="module" src="app.js"></script>' "$T/body"
ok $? "/ is the page that loads app.js"

# 26. A trace analyze cannot read: 500 and analyze's own words, once per
# change of its files (the failure is remembered, not run again).
code=$(get 'api/report?t=0/bad')
is "$code $(json 'd["error"]' <"$T/body")" \
    "500 analyze --format json failed (status 1): callsight analyze: $T/traces/bad/trace.1.1.0.bin: not a callsight trace (bad magic); skipped" \
    "an unreadable trace: 500 with analyze's first error line"

# 27-28. SIGTERM: status 0, the temporary directory removed.
stop_ui
is "$UI_RC" 0 "SIGTERM: exit 0"
is "$(ls -A "$TMPDIR")" "" "its temporary files removed"
