#!/usr/bin/env bash
# 707-ui-traces-cut.t - the Traces list says `cut` for a serve directory
# whose connection was cut (issue 36: each source with its state): not from
# the files' times, which cannot tell, but from the trace's report, once
# the trace was opened and only while that report is of the files as they
# are.  The report itself (analyze's JSON) marks the cut source alone with
# "cut_at_end": true; a stream that ended cleanly has no such key.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/ui_lib.sh"

plan 8

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

# 7-8. It stops cleanly.
stop_ui
is "$UI_RC" 0 "SIGTERM: exit 0"
is "$(ls -A "$TMPDIR")" "" "its temporary files removed"
