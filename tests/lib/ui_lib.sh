# ui_lib.sh - starting `callsight ui` and asking it things, for tests/ui/.
# Source it after lib.sh.
#
# start_ui ARGS...: callsight ui ARGS --port 0 in the background; waits (at
# most 20 s) for the URL it prints: UI_URL (without the #fragment), UI_PID,
# UI_LOG.  The process is tracked, so the test's exit stops it.
start_ui() {
    UI_LOG=$T/ui.$RANDOM.log
    "$CS" ui "$@" --port 0 >"$UI_LOG" 2>&1 &
    UI_PID=$!
    track_pid "$UI_PID"
    UI_URL=""
    for _ in $(seq 200); do
        UI_URL=$(grep -o 'http://[^#]*' "$UI_LOG" | head -n 1)
        [ -n "$UI_URL" ] && return 0
        kill -0 "$UI_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "Bail out! callsight ui did not start: $(head -c 300 "$UI_LOG")"
    exit 1
}

# stop_ui: SIGTERM, and its exit status in UI_RC (bounded: 20 s).
stop_ui() {
    kill "$UI_PID" 2>/dev/null
    for _ in $(seq 200); do kill -0 "$UI_PID" 2>/dev/null || break; sleep 0.1; done
    wait "$UI_PID"
    UI_RC=$?
}

# get PATH [CURL-ARGS...]: GET $UI_URL$PATH; the body in $T/body, the
# status printed.  Bounded: 60 s (an analysis runs on first use).
get() {
    local p=$1; shift
    curl -s --path-as-is -m 60 -o "$T/body" -w '%{http_code}' "$@" "$UI_URL$p"
}

# shot NAME: with UI_SHOTS=DIR, a uidrive.py step (and its comma) saving a
# screenshot as DIR/ui-NAME.png (docs/img/ holds those of docs/ui.md);
# nothing without it.
shot() { [ -n "${UI_SHOTS:-}" ] && echo "{\"shot\": \"$UI_SHOTS/ui-$1.png\"}," || true; }

# json EXPR < FILE: a Python expression over the JSON document d, printed;
# row(x, K...) is x's values of keys K joined by ":", rows(L, K...) those of
# every x in L joined by " ".
json() {
    python3 -c 'import json,sys
def row(x, *ks): return ":".join(str(x[k]) for k in ks)
def rows(l, *ks): return " ".join(row(x, *ks) for x in l)
d = json.load(sys.stdin)
print('"$1"')'
}
