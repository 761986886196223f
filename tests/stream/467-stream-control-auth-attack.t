#!/usr/bin/env bash
# 467-stream-control-auth-attack.t - live control's key under attack
# (docs/control.md "Authentication"), beside 466's pairings:
#  - key files: a symbolic link to a good key, a FIFO (must not hang), a
#    directory, one over 4096 bytes, one others may read and (as root) one
#    another user owns are refused by serve and trace_stream alike, each
#    with its reason (serve followed a link, and said "larger than 0 MB");
#  - the control socket: `callsight ctl DIR`, trigger and top ask only a
#    serve of their own user: another user who owns the directory named
#    and listens there gets nothing, and cannot answer "applied" (root
#    only: it needs another uid);
source "$(dirname "$0")/../lib/lib.sh"
plan 10

head -c 32 /dev/urandom > "$T/key" && chmod 600 "$T/key"

# --- key files: both ends refuse the same ones, with the same reason ---
ln -s "$T/key" "$T/link"
mkfifo -m 600 "$T/fifo"
mkdir -m 700 "$T/dir"
head -c 4097 /dev/urandom > "$T/huge" && chmod 600 "$T/huge"
head -c 32 /dev/urandom > "$T/loose" && chmod 604 "$T/loose"
# keyrefused NAME REASON: serve and trace_stream both exit 2 saying REASON
keyrefused() {
    timeout 10 "$CS" serve --host 127.0.0.1 --port 0 --out "$T/never" --auth-key "$T/$1" > "$T/s.$1" 2>&1
    local src=$?
    timeout 10 "$B/trace_stream" --allow-control --auth-key "$T/$1" /cs467x$$ 127.0.0.1 1 > "$T/t.$1" 2>&1
    local trc=$?
    is "$src $trc $(cat "$T/s.$1") | $(cat "$T/t.$1")" \
        "2 2 callsight serve: --auth-key $T/$1: $2 | trace_stream: --auth-key $T/$1: $2" "key file: $1 refused by both"
}
keyrefused link "Too many levels of symbolic links"
keyrefused fifo "not a regular file"
keyrefused dir "not a regular file"
keyrefused huge "longer than 4096 bytes"
keyrefused loose "readable or writable by others (chmod 600 it)"
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1; then
    head -c 32 /dev/urandom > "$T/theirs" && chmod 600 "$T/theirs" && chown nobody "$T/theirs"
    keyrefused theirs "not owned by this user"
else
    skip "another user's key file: needs root"
fi
[ -d "$T/never" ]
ok $((!$?)) "serve made no directory for a key it refused"

# --- the control socket: only a serve of our own user is asked ---
# as nobody: setpriv, and a python3 that nobody may run (root's may be a pyenv shim)
asnobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups "$@"; }
PYN=""
if [ "$(id -u)" = 0 ] && id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
    for p in /usr/bin/python3 /bin/python3 "$(command -v python3)"; do
        if asnobody "$p" -c pass 2> /dev/null; then PYN=$p; break; fi
    done
fi
if [ -n "$PYN" ]; then
    chmod 711 "$T"
    mkdir -m 755 "$T/fake" && chown nobody "$T/fake"
    # another user's listener in a directory it owns: it answers every
    # request "applied", and writes down what it was sent
    setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups "$PYN" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1] + "/.callsight-serve.sock")
s.listen(4)
s.settimeout(30)
open(sys.argv[1] + "/ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        got = c.recv(4096)
    except OSError:
        got = b""
    if got:
        open(sys.argv[1] + "/asked", "ab").write(got[:16] + b"\n")
    try:
        c.sendall(b"applied 1 2 2 0 0\n" if got.startswith(b"ctl ") else b"ok 1 1\n")
    except OSError:
        pass
    c.close()
' "$T/fake" 2> "$T/fake.err" &
    track_pid $!
    wait_file "$T/fake/ready"
    "$CS" ctl "$T/fake" --pause > "$T/fake.ctl" 2>&1
    is "$? $(cat "$T/fake.ctl")" \
        "3 callsight ctl: $T/fake/.callsight-serve.sock is not a serve of this user (uid $(id -u nobody) listens there): not asked" \
        "ctl DIR: another user's socket is not asked, and cannot answer applied"
    [ -e "$T/fake/asked" ]
    ok $((!$?)) "... nothing sent to it"
    "$CS" trigger "$T/fake" > "$T/fake.trig" 2>&1
    is "$? $(cat "$T/fake.trig") $([ -e "$T/fake/asked" ] && echo asked)" \
        "1 callsight trigger: $T/fake/.callsight-serve.sock is not a serve of this user (uid $(id -u nobody) listens there): not asked " \
        "trigger DIR: nothing sent to it either"
else
    skip "another user's control socket: needs root, nobody, setpriv and a python3 nobody may run"
    skip "another user's control socket: needs root, nobody, setpriv and a python3 nobody may run"
fi
exit $_failed
