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
#  - a keyed serve against devices no trace_stream is (authpeer.py): a
#    key exchange the handshake did not offer, a proof before the hello,
#    several hellos (one TKAUTH answers), a wrong proof then the right one
#    (the first is judged), a hello or proof of the wrong size, a hello
#    never followed by a proof: none gets control; one with the key does;
#  - a keyed trace_stream against servers that hold the key but send
#    TKAUTH wrong (ctlpeer.py tkauth): before the ack, without the ack's
#    AUTH bit, with a wrong len, twice, cut short, proved with another key:
#    no request is applied, and the stream goes on whole;
#  - a forger on the path (ctlpeer.py mitm; it holds the key only to
#    play the server's part): a signed request with a byte of its body
#    flipped, its head's seq changed, its head's len changed, and the
#    first connection's signed request replayed word for word on the
#    next: each refused, the signed ones applied;
#  - a keyed serve with a real keyed device and a peer that never proves
#    the key: `ctl DIR` without --conn reaches the device (the peer that
#    cannot be controlled used to count as a second taker: "2 connections
#    take control", so anyone who could connect blocked the default), and
#    --list tells the peer apart (an unasked answer of its own read as a
#    setting serve had made).
source "$(dirname "$0")/../lib/lib.sh"
plan 29

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

# --- a keyed serve, devices that are no trace_stream ---
start_serve "$T/served" --auth-key "$T/key"
NDEV=0
# dev CASE: authpeer.py CASE as connection NDEV+1, then ctl --pause to it;
# sets GOT to "ctl's status and words | what the peer heard | serve's error"
dev() {
    NDEV=$((NDEV + 1))
    mkfifo "$T/dev.$1.in"
    (cd "$TESTS/tools" && exec python3 authpeer.py "$SERVE_PORT" "$1" "$T/key") < "$T/dev.$1.in" > "$T/dev.$1" 2>&1 &
    local p=$!
    track_pid $p
    exec 7> "$T/dev.$1.in"
    wait_in "$T/dev.$1" "^(ready|closed)" > /dev/null
    case $1 in early | hellos | wrongfirst | good)
        wait_in "$SERVE_LOG" "^callsight serve: conn $NDEV: the device (did not )?prove" > /dev/null ;;
    esac
    "$CS" ctl "$T/served" --conn $NDEV --pause > "$T/dev.$1.ctl" 2>&1
    local rc=$?
    exec 7>&-
    wait $p
    wait_serve_closed $NDEV
    GOT="$rc $(sed -E "s/conn(ection)? $NDEV\b/conn\1 N/" "$T/dev.$1.ctl") | $(grep -v '^ready' "$T/dev.$1" | paste -sd,) | \
$(sed -n "s/^callsight serve: conn $NDEV: the device //p; s/^callsight serve: conn $NDEV closed.*; error: /error: /p" "$SERVE_LOG" | paste -sd,)"
}
NOTPROVED="3 callsight ctl: conn N: its trace_stream has not proved serve's key (start it with --auth-key and the same key)"
dev noflag
is "$GOT" "3 callsight ctl: no connection N is writing now (ended, or never was) | ack features=0x8,closed | error: chunk 2: a key exchange the handshake did not offer" \
    "a key hello without the handshake's flag: the connection ends"
dev early
is "$GOT" "$NOTPROVED | ack features=0x18,tkauth | did not prove the key: no control is relayed to it" \
    "a proof before the hello: ignored; the hello answered; a wrong proof gets nothing"
dev hellos
is "$GOT" "$NOTPROVED | ack features=0x18,tkauth | did not prove the key: no control is relayed to it" \
    "three hellos: one TKAUTH, no more"
dev wrongfirst
is "$GOT" "$NOTPROVED | ack features=0x18,tkauth | did not prove the key: no control is relayed to it" \
    "a wrong proof, then the right one: the first is judged, no second try"
dev short
is "$GOT" "3 callsight ctl: no connection N is writing now (ended, or never was) | ack features=0x18,closed | error: chunk 2: key hello raw_len 31 (expected 32)" \
    "a hello of 31 bytes: the connection ends"
dev long
is "$GOT" "3 callsight ctl: no connection N is writing now (ended, or never was) | ack features=0x18,tkauth,closed | error: chunk 3: key proof raw_len 33 (expected 32)" \
    "a proof of 33 bytes: the connection ends"
dev mute
is "$GOT" "$NOTPROVED | ack features=0x18,tkauth | " "a hello never followed by a proof: nothing relayed"
dev good
is "$GOT" "3 callsight ctl: conn N did not answer within 3000 ms | ack features=0x18,tkauth,tkctl seq=1 len=80 | proved the key: control is relayed to it" \
    "the key proved: the request goes, signed (48 bytes and the code)"
stop_serve

# --- a keyed trace_stream, servers that send TKAUTH wrong ---
need_tools ctl_phases
cp "$TOOLBIN/ctl_phases" "$T/phases"
# srv CASE: ctlpeer.py tkauth CASE, trace_stream --allow-control --auth-key
# and the workload through both phases; GOT: trace_stream's status, the
# peer's output (records left out) and trace_stream's lines about it
srv() {
    local shm=/cs467$1$$
    python3 "$TESTS/tools/ctlpeer.py" tkauth "$T/srv.$1.port" "$T/key" "$1" > "$T/srv.$1" 2>&1 &
    local p=$!
    track_pid $p
    wait_file "$T/srv.$1.port"
    stream_bg "$T/srv.$1.ts" --allow-control --auth-key "$T/key" "$shm" 127.0.0.1 "$(cat "$T/srv.$1.port")"
    track_shm "$shm"
    mkfifo "$T/srv.$1.in"
    TRACE_SHM=$shm TRACE_ENABLE=1 "$T/phases" < "$T/srv.$1.in" > "$T/srv.$1.out" &
    local k=$!
    track_pid $k
    exec 6> "$T/srv.$1.in"
    wait_in "$T/srv.$1" "^sent" > /dev/null
    wait_in "$T/srv.$1.ts" "$2" > /dev/null
    echo >&6
    exec 6>&-
    wait $k
    wait "$TS_PID"
    local rc=$?
    wait $p
    GOT="$rc $(grep -v '^records=\|^flags=\|^sent' "$T/srv.$1" | paste -sd,) | \
$(grep -Ev '^trace_stream: (created ring|waiting for a tracer|tracer attached|connected|[0-9]+ of [0-9]+ event chunks|forwarded)' \
        "$T/srv.$1.ts" | sed 's/^trace_stream: //' | paste -sd,)"
}
ENDED="the server sent something else than a request; no more requests are taken on this connection"
srv early "plain chunks"
is "$GOT" "0 proof=none | the server answered the handshake with something else than an ack; sending plain chunks" \
    "a TKAUTH before the ack: taken for a bad ack, no control on this connection"
srv noack "no more requests"
is "$GOT" "0 proof=none | the server has no key (serve --auth-key): it cannot prove ours, so every control request it sends is refused,$ENDED" \
    "a TKAUTH the ack did not announce: requests end"
srv wronglen "no more requests"
is "$GOT" "0 proof=none | $ENDED" "a TKAUTH of 63 bytes: requests end"
srv twice "no more requests"
is "$GOT" "0 proof=bad | the server proved our key; control requests are taken, each checked,$ENDED" \
    "a second TKAUTH: requests end (the proof sent was the first one's)"
srv truncated "no more requests"
is "$GOT" "0 proof=none | the server did not prove it holds our key; no control is taken on this connection,$ENDED" \
    "a TKAUTH cut short: the bytes after it are not a proof, nor a request"
srv wrongkey "request 2 refused"
is "$GOT" "0 answer seq=1 status=1 gen=0 reason=this device takes control only from a serve that proves its key (serve --auth-key),answer seq=2 status=1 gen=0 reason=this device takes control only from a serve that proves its key (serve --auth-key),proof=none | the server did not prove it holds our key; no control is taken on this connection,control request 1 refused: this device takes control only from a serve that proves its key (serve --auth-key); nothing changed,control request 2 refused: this device takes control only from a serve that proves its key (serve --auth-key); nothing changed" \
    "a TKAUTH proved with another key: no proof sent, both requests refused"

# --- an unproved peer does not take the place of the device that proved ---
start_serve "$T/both" --auth-key "$T/key"
mkfifo "$T/mute.in"
(cd "$TESTS/tools" && exec python3 authpeer.py "$SERVE_PORT" unasked "$T/key") < "$T/mute.in" > "$T/mute" 2>&1 &
MUTE=$!
track_pid $MUTE
exec 7> "$T/mute.in"
wait_in "$T/mute" "^ready" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 1 from " > /dev/null
stream_bg "$T/both.ts" --allow-control --auth-key "$T/key" /cs467b$$ 127.0.0.1 "$SERVE_PORT"
track_shm /cs467b$$
mkfifo "$T/both.in"
TRACE_SHM=/cs467b$$ TRACE_ENABLE=1 "$T/phases" < "$T/both.in" > "$T/both.out" &
K=$!
track_pid $K
exec 6> "$T/both.in"
wait_in "$T/both.out" "^phase 0 done" > /dev/null
wait_in "$SERVE_LOG" "^callsight serve: conn 2: the device proved the key" > /dev/null
"$CS" ctl "$T/both" --exe "$T/phases" --off f > "$T/both.ctl" 2>&1
is "$? $(cat "$T/both.ctl")" "0 callsight ctl: conn 2: generation 2: recording all but 1 function (applied)" \
    "ctl DIR without --conn: the device that proved the key, not the peer that did not"
"$CS" ctl "$T/both" --conn 1 --pause > "$T/mute.ctl" 2>&1
is "$? $(cat "$T/mute.ctl")" \
    "3 callsight ctl: conn 1: its trace_stream has not proved serve's key (start it with --auth-key and the same key)" \
    "... and the peer, named, still gets nothing"
"$CS" ctl "$T/both" --list > "$T/both.list" 2>&1
is "$? $(cat "$T/both.list")" "0 callsight ctl: conn 1: takes control, but has not proved serve's key: nothing is relayed to it (start its trace_stream with --auth-key and the same key)
callsight ctl: conn 2 (key proved): generation 2: recording all but 1 function (applied)" \
    "ctl --list: the unproved peer is told apart, its unasked answer not shown as a setting"
echo >&6
exec 6>&-
wait $K
wait "$TS_PID"
exec 7>&-
wait $MUTE
wait_serve_closed 2
stop_serve

# --- a forger on the path: flipped bytes and a replay on a new connection ---
python3 "$TESTS/tools/ctlpeer.py" mitm "$T/mitm.port" "$T/key" > "$T/mitm" 2>&1 &
MP=$!
track_pid $MP
wait_file "$T/mitm.port"
stream_bg "$T/mitm.ts" --allow-control --auth-key "$T/key" /cs467m$$ 127.0.0.1 "$(cat "$T/mitm.port")"
track_shm /cs467m$$
mkfifo "$T/mitm.in"
TRACE_SHM=/cs467m$$ TRACE_ENABLE=1 "$T/phases" < "$T/mitm.in" > /dev/null &
K=$!
track_pid $K
exec 6> "$T/mitm.in"
wait_in "$T/mitm" "^answer seq=2 status=0 gen=4" > /dev/null
echo >&6
exec 6>&-
wait $K
wait "$TS_PID"
MRC=$?
wait $MP
NOMATCH="status=1 gen=0 reason=its authentication code does not match (forged, or damaged on the way)"
is "$MRC $(cat "$T/mitm")" "0 conn 1
answer seq=1 status=0 gen=2 reason=
answer seq=2 $NOMATCH
answer seq=4 $NOMATCH
answer seq=5 $NOMATCH
conn 2
answer seq=1 $NOMATCH
answer seq=2 status=0 gen=4 reason=" \
    "a flipped body, seq or len, and a replay on the next connection: each refused; the signed ones applied"
grep -c "^trace_stream: control generation [24] applied" "$T/mitm.ts" | grep -qx 2
ok $? "... and trace_stream applied those two only"
exit $_failed
