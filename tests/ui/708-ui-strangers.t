#!/usr/bin/env bash
# 708-ui-strangers.t - callsight ui against the other users of the machine
# and other sites' pages (found by a hostile review, 2026-12-07):
#   - on 127.0.0.1 it serves its own user (and root) alone: another uid's
#     connection is closed unanswered, and said once on stderr (at most 5
#     lines however many);
#   - an API request that a browser marks as made by another site's page
#     (Sec-Fetch-Site cross-site or same-site: an <img>, a form) is refused,
#     even a GET; this server's own pages (same-origin), a typed URL (none)
#     and clients that send no such header are answered, and a page itself
#     may be opened from a link elsewhere;
#   - a trace directory with a symbolic link named like a trace file is not
#     analyzed (analyze would follow it out of the directories given).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
source "$TESTS/lib/ui_lib.sh"

plan 15

tiny_build
named_trace "$T/traces/tr"
named_trace "$T/outside/secret"
mkdir -p "$T/traces/linked"
cp "$T"/traces/tr/trace.* "$T/traces/linked/"
first=$(ls "$T/outside/secret" | head -n 1)
rm -f "$T/traces/linked/$first"
ln -s "$T/outside/secret/$first" "$T/traces/linked/$first"
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
start_ui "$T/traces" --exe "$T/tiny"

# 1-4. Sec-Fetch-Site.
is "$(get 'api/report?t=0/tr' -H 'Sec-Fetch-Site: cross-site')$(get 'api/traces' -H 'Sec-Fetch-Site: same-site')" \
    "403403" "an API GET from another site's page (cross-site, same-site): 403"
is "$(json 'd["error"]' <"$T/body")" "the API answers this server's own pages only (Sec-Fetch-Site)" "saying why"
is "$(get 'api/traces' -H 'Sec-Fetch-Site: same-origin')$(get 'api/traces' -H 'Sec-Fetch-Site: none')$(get 'api/traces')" \
    "200200200" "from its own page, a typed URL, or no such header: 200"
is "$(get '' -H 'Sec-Fetch-Site: cross-site')" 200 "the page itself, opened from a link elsewhere: 200"

# 5-6. A symlinked trace file.
is "$(get 'api/report?t=0/linked')" 403 "a directory with a trace file that is a symbolic link (to one outside): 403"
is "$(json 'd["error"]' <"$T/body")" \
    "it holds a symbolic link named like a trace file: not read through (only the directories given are served)" \
    "saying why"

# 7-8. A GET with a body (by its length or chunked): 413, as docs/ui.md says.
is "$(get 'api/traces' -X GET --data-binary 'abc')$(get 'api/traces' -X GET -H 'Transfer-Encoding: chunked' --data-binary 'abc')" \
    "413413" "a GET with a body, by Content-Length or chunked: 413"
is "$(get 'api/traces' -H 'Content-Length: 0')" 200 "Content-Length: 0 is no body: 200"

# 9-12. Other users of the machine.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    chmod 755 "$T"
    as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
    as_nobody curl -s -m 10 -o /dev/null -w '%{http_code}' "${UI_URL}api/traces" >"$T/nobody.code"
    rc=$?
    is "$(cat "$T/nobody.code") $([ $rc -ne 0 ] && echo failed)" "000 failed" \
        "another user's request (uid nobody) gets no answer: the connection is closed"
    grep -Eq "^callsight ui: refused a connection from another user of this machine \(uid $(id -u nobody)\): only uid 0 is served$" "$UI_LOG"
    ok $? "said on stderr, with the uid"
    for _ in $(seq 7); do as_nobody curl -s -m 10 -o /dev/null "${UI_URL}api/traces"; done
    is "$(grep -c 'refused a connection from another user' "$UI_LOG")" 5 "8 refused, 5 lines"
    is "$(get 'api/traces')" 200 "its own user (root) is still served"
else
    for _ in 9 10 11 12; do skip "needs root, setpriv and a user nobody"; done
fi

# 13-14. It stops cleanly.
stop_ui
is "$UI_RC" 0 "SIGTERM: exit 0"
is "$(ls -A "$TMPDIR")" "" "its temporary files removed"

# 15. An --exe that is not there is said at start, not on the first page.
"$CS" ui "$T/traces" --exe "$T/no-such-binary" --port 0 >"$T/noexe.out" 2>&1
is "$? $(cat "$T/noexe.out")" "1 callsight ui: --exe $T/no-such-binary: No such file or directory" \
    "--exe missing: exit 1 at start, saying so"
