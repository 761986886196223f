#!/usr/bin/env bash
# 352-serve-out-owner.t - serve writes only into a directory that is its
# user's own (issue 29): one that others may write, or that another user
# owns, is refused with one line and exit 1 before anything listens (before,
# another user who owned the directory replaced the control socket and
# answered `callsight trigger` in serve's name).  A directory of its own,
# made by serve or already there, is taken as before.
source "$(dirname "$0")/../lib/lib.sh"
plan 5

mkdir -m 0777 "$T/open"
timeout 10 "$CS" serve --host 127.0.0.1 --port 0 --out "$T/open" > "$T/open.out" 2> "$T/open.err"
is "$? $(cat "$T/open.err")" \
    "1 callsight serve: $T/open may be written by others (mode 777): chmod go-w it, or give another" \
    "a world-writable --out: refused, one line, exit 1"
mkdir -m 0770 "$T/group"
timeout 10 "$CS" serve --host 127.0.0.1 --port 0 --out "$T/group" > /dev/null 2> "$T/group.err"
is "$? $(cat "$T/group.err")" \
    "1 callsight serve: $T/group may be written by others (mode 770): chmod go-w it, or give another" \
    "a group-writable --out: refused too"
is "$(ls -A "$T/open" "$T/group" | grep -vc ':$\|^$')" 0 "nothing written into either"

if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    mkdir -m 0755 "$T/theirs"
    chown nobody "$T/theirs"
    timeout 10 "$CS" serve --host 127.0.0.1 --port 0 --out "$T/theirs" > /dev/null 2> "$T/theirs.err"
    is "$? $(cat "$T/theirs.err")" \
        "1 callsight serve: $T/theirs belongs to another user (uid $(id -u nobody)): give a directory of your own" \
        "an --out another user owns: refused, one line, exit 1"
else
    skip "needs root to give a directory to another user"
fi

# Its own directory: serve makes it (0750) and runs.
start_serve "$T/mine" --quiet
stat -c %a "$T/mine" > "$T/mode"
stop_serve
is "$(cat "$T/mode")" 750 "a directory serve makes is its own, 0750, and serve runs in it"
