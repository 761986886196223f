#!/usr/bin/env bash
# A ring squatted by another local user is refused.  As nobody, a valid
# ring header (magic, version 2, 4096 bytes) is made mode 0666 under the
# name trace_stream and a traced program are told to use; run as root,
# trace_stream refuses it (exit 1, one line naming owner and mode) and the
# traced program says so in one line, runs untraced to its normal exit
# status and writes nothing into the ring (its bytes are the same after).
# A ring of our own uid that others can write (0666) is refused the same
# way.  `callsight run --stream` names its ring with 64 random bits after
# the pid, so the name cannot be guessed ahead of the run.
source "$(dirname "$0")/../lib/lib.sh"
plan 10

if [ "$(id -u)" != 0 ]; then
    for _ in $(seq 10); do skip "needs root: the ring is squatted by another uid (nobody), made with setpriv"; done
    exit 0
fi
NOBODY_GROUP=$(id -gn nobody 2>/dev/null || echo nogroup)
as_nobody() { setpriv --reuid=nobody --regid="$NOBODY_GROUP" --clear-groups "$@"; }

WL=$B/examples/workload
SHM=/cs-test-owner-$$
track_shm "$SHM"

# mkring UID-RUNNER MODE: a valid, empty ring header at /dev/shm$SHM.
mkring() {
    rm -f "/dev/shm$SHM"
    $1 sh -c 'umask 0; { printf "TKSHM\0\0\0\2\0\0\0\0\20\0\0"; head -c 4176 /dev/zero; } > "/dev/shm$0"' "$SHM"
    chmod "$2" "/dev/shm$SHM"
}

# check OWNER MODE LABEL: trace_stream and a traced program against the ring.
check() {
    local before after uid=$1 mode=$2 label=$3
    before=$(md5sum < "/dev/shm$SHM")
    timeout 20 "$B/trace_stream" "$SHM" 127.0.0.1 1 > /dev/null 2> "$T/ts.err"
    is "$? $(cat "$T/ts.err")" "1 trace_stream: refusing ring $SHM: owned by uid $uid with mode $mode, not a ring of uid 0 that only it can write; remove it (rm /dev/shm$SHM) if it is stale, or use another name" \
        "$label: trace_stream refuses it, exit 1, one line"
    rm -rf "$T/files"
    mkdir "$T/files"
    TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_DIR="$T/files" timeout 60 "$WL" 4 5 10 16 4 > /dev/null 2> "$T/wl.err"
    is "$? $(cat "$T/wl.err")" "0 callsight: TRACE_SHM=$SHM: refusing the ring: owned by uid $uid with mode $mode, not a ring of uid 0 that only it can write; tracing off (remove /dev/shm$SHM if it is stale)" \
        "$label: the traced program exits 0 and says so in one line"
    is "$(ls "$T/files" | wc -l)" 0 "$label: it ran untraced (no trace files either)"
    after=$(md5sum < "/dev/shm$SHM")
    is "$after" "$before" "$label: not a byte of the ring was written"
}

mkring as_nobody 0666
is "$(stat -c '%U %a' "/dev/shm$SHM")" "nobody 666" "the squatted ring is nobody's, mode 0666"
check "$(id -u nobody)" 0666 "nobody's 0666 ring"
mkring "" 0666
check 0 0666 "our own 0666 ring"
rm -f "/dev/shm$SHM"

# run --stream: the ring's name is /callsight-run-<pid>-<16 hex digits>.
TRACE_SHM_WAIT_US=$RING_WAIT_EXACT timeout 120 "$CS" run --stream --dir "$T/r" --top 0 -- "$WL" 4 5 10 16 4 \
    > /dev/null 2> "$T/run.err"
name=$(sed -n 's/^callsight run: tracing .* (stream mode: shm ring \(\/[^,]*\), trace_stream, .*/\1/p' "$T/run.err")
[[ "$name" =~ ^/callsight-run-[0-9]+-[0-9a-f]{16}$ ]]
ok $? "run --stream names its ring with 64 random bits after the pid: ${name:-(no name in: $(head -n 3 "$T/run.err"))}"
test -n "$name" && track_shm "$name"
