#!/usr/bin/env bash
# 467-stream-control-auth-attack.t - live control's key under attack
# (docs/control.md "Authentication"), beside 466's pairings:
#  - key files: a symbolic link to a good key, a FIFO (must not hang), a
#    directory, one over 4096 bytes, one others may read and (as root) one
#    another user owns are refused by serve and trace_stream alike, each
#    with its reason (serve followed a link, and said "larger than 0 MB").
source "$(dirname "$0")/../lib/lib.sh"
plan 7

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

exit $_failed
