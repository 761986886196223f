#!/usr/bin/env bash
# 702-ui-token.t - callsight ui bound off loopback needs the random token
# it prints: in a network namespace of its own (unshare -rn, nothing
# reachable from outside it), bound to 192.0.2.1 (a documentation address
# put on the namespace's lo), every URL without the token is refused (403),
# with it answered; the token differs from run to run; the Host header is
# still checked.  Bound to the wildcard 0.0.0.0 (in the same namespace),
# the token is required and the Host header is not (any name reaches it).
# SKIP where user and network namespaces are not available.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"

plan 9

if ! unshare -rn true 2>/dev/null || ! command -v ip >/dev/null; then
    for _ in $(seq 9); do skip "no user+network namespaces (unshare -rn) or no ip here"; done
    exit 0
fi
tiny_build
named_trace "$T/tr"

# Inside the namespace: callsight ui on HOST, the URL it printed, then one
# status code per line for: the URL, the API without the token, a wrong
# token, the token with a foreign Host header; then the URL of a second run.
cat >"$T/inside.sh" <<'SH'
set -u
ip link set lo up && ip addr add 192.0.2.1/32 dev lo || exit 3
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null' EXIT
run() {
    "$CS" ui "$T/tr" --exe "$T/tiny" --host "$1" --port 0 >"$T/ui.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do grep -q http "$T/ui.log" && break; sleep 0.1; done
    url=$(grep -o 'http://[^#]*' "$T/ui.log")
}
code() { curl -s -m 30 -o /dev/null -w '%{http_code}\n' "$@"; }
run 192.0.2.1
echo "$url"
base=${url%/*/}
code "${url}api/traces"
code "$base/api/traces"
code "$base/0123456789abcdef0123456789abcdef/api/traces"
code -H 'Host: evil.example' "${url}api/traces"
kill $pid; wait $pid
run 192.0.2.1
echo "$url"
kill $pid; wait $pid
run 0.0.0.0
base=${url%/*/}
port=${base##*:}
code -H "Host: some.name:$port" "http://127.0.0.1:$port/${url#$base/}api/traces"
code "http://127.0.0.1:$port/api/traces"
kill $pid; wait $pid
SH
CS=$CS T=$T timeout 120 unshare -rn bash "$T/inside.sh" >"$T/out" 2>"$T/err"
diag "$(tr '\n' ' ' <"$T/out")"
mapfile -t L <"$T/out"
[[ ${L[0]:-} =~ ^http://192\.0\.2\.1:[0-9]+/[0-9a-f]{32}/$ ]]
ok $? "off loopback, the URL printed carries a 32-hex-digit token"
is "${L[1]:-}" 200 "with the token: 200"
is "${L[2]:-}" 403 "without it: 403"
is "${L[3]:-}" 403 "with a wrong one: 403"
is "${L[4]:-}" 421 "with the token and a foreign Host header: 421"
[[ ${L[5]:-} =~ /[0-9a-f]{32}/$ ]] && [ "${L[5]}" != "${L[0]}" ]
ok $? "a second run prints another token"
is "${L[6]:-}" 200 "bound to 0.0.0.0: the token, any Host name: 200"
is "${L[7]:-}" 403 "bound to 0.0.0.0, no token: 403"
is "$(grep -v '^$' "$T/err" | head -c 300)" "" "nothing on stderr"
