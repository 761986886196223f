#!/usr/bin/env bash
# 459-stream-ring-group.t - a ring shared with a group only when asked
# (issue 29).  trace_stream --group G makes its ring mode 0660 of group G,
# and a program of another user in G (TRACE_SHM_GROUP=G) streams through
# it, every event; the other way round too (the program made the ring,
# trace_stream attaches).  Without the opt-in on either side, a group's
# ring is refused as before; with it, a ring others can write, or one of
# another group, still is; an unknown group is said in one line (and the
# program runs untraced, trace_stream exits 2).
source "$(dirname "$0")/../lib/lib.sh"
plan 12

if [ "$(id -u)" != 0 ]; then
    for _ in $(seq 12); do skip "needs root: the program runs as another uid (nobody), made with setpriv"; done
    exit 0
fi
G=4242 # a gid nobody is in, given to nobody by setpriv below
as_member() { setpriv --reuid=nobody --regid=$G --clear-groups "$@"; }
SHM=/cs-test-group-$$
track_shm "$SHM"
chmod 755 "$T" # nobody writes its trace files under $T/nb
# nobody runs the workload from here: the build may lie under a directory
# only its owner can enter (a clone in a mktemp -d)
WL=$T/workload
cp "$B/examples/workload" "$WL"
mkdir -m 777 "$T/nb"

TRACE_ENABLE=1 TRACE_DIR="$T/nb/files" as_member "$WL" 4 5 10 16 4 > /dev/null
want=$(field events "$("$CS" analyze "$T/nb/files" --exe "$WL" --top 0 | head -n 1)")
events_of() { field events "$("$CS" analyze "$1" --exe "$WL" --top 0 2> /dev/null | head -n 1)"; }

# 1. trace_stream --group G makes the ring; nobody (in G) writes it.
start_serve "$T/s1" --quiet
timeout 60 "$B/trace_stream" --group $G "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/ts1.err" &
ts=$!
track_pid $ts
wait_file "/dev/shm$SHM"
is "$(stat -c '%U %g %a' "/dev/shm$SHM")" "root $G 660" "--group $G: the ring is root's, group $G, mode 0660"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_GROUP=$G TRACE_SHM_WAIT_US=$RING_WAIT_EXACT TRACE_DIR="$T/nb/x" \
    as_member timeout 60 "$WL" 4 5 10 16 4 > /dev/null 2> "$T/wl1.err"
is "$? $(cat "$T/wl1.err")" "0 " "a member's program with TRACE_SHM_GROUP=$G writes it, exit 0, nothing said"
wait_stream_client $ts
wait_serve_closed 1
stop_serve
is "$(events_of "$T/s1")" "$want" "every event arrived: $want, as in file mode"

# 2. The member's program makes the ring; trace_stream --group G attaches.
start_serve "$T/s2" --quiet
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_GROUP=$G TRACE_SHM_WAIT_US=20000000 TRACE_DIR="$T/nb/x" \
    as_member timeout 60 "$WL" 4 5 10 16 4 > /dev/null 2> "$T/wl2.err" &
wl=$!
track_pid $wl
wait_file "/dev/shm$SHM"
for _ in $(seq 100); do [ "$(stat -c %a "/dev/shm$SHM" 2> /dev/null)" = 660 ] && break; sleep 0.05; done
is "$(stat -c '%U %g %a' "/dev/shm$SHM")" "nobody $G 660" "TRACE_SHM_GROUP=$G: the program made the ring nobody's, group $G, 0660"
timeout 60 "$B/trace_stream" --group $G "$SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/ts2.err"
rc=$?
wait $wl
is "$rc $?" "0 0" "trace_stream --group $G attaches to it; both exit 0"
wait_serve_closed 1
stop_serve
is "$(events_of "$T/s2")" "$want" "every event arrived: $want"

# mkring MODE GID: a valid, empty ring header at /dev/shm$SHM, nobody's.
mkring() {
    rm -f "/dev/shm$SHM"
    as_member sh -c 'umask 0; { printf "TKSHM\0\0\0\2\0\0\0\0\20\0\0"; head -c 4176 /dev/zero; } > "/dev/shm$0"' "$SHM"
    chgrp "$2" "/dev/shm$SHM" && chmod "$1" "/dev/shm$SHM"
}
NB=$(id -u nobody)
refusal="owned by uid $NB with mode"
# 3. Without --group, a group's ring is another user's: refused as before.
mkring 0660 $G
timeout 20 "$B/trace_stream" "$SHM" 127.0.0.1 1 > /dev/null 2> "$T/ts3.err"
is "$? $(cat "$T/ts3.err")" "1 trace_stream: refusing ring $SHM: $refusal 0660, not a ring of uid 0 that only it can write; remove it (rm /dev/shm$SHM) if it is stale, or use another name" \
    "without --group: nobody's group ring is refused, exit 1, one line"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_DIR="$T/f4" timeout 60 "$WL" 4 5 10 16 4 > /dev/null 2> "$T/wl4.err"
is "$? $(cat "$T/wl4.err")" "0 callsight: TRACE_SHM=$SHM: refusing the ring: $refusal 0660, not a ring of uid 0 that only it can write; tracing off (remove /dev/shm$SHM if it is stale)" \
    "without TRACE_SHM_GROUP: the program refuses it too and runs untraced"

# 4. With the opt-in, a ring others can write, or of another group, is refused.
mkring 0666 $G
timeout 20 "$B/trace_stream" --group $G "$SHM" 127.0.0.1 1 > /dev/null 2> "$T/ts5.err"
is "$? $(cat "$T/ts5.err")" "1 trace_stream: refusing ring $SHM: $refusal 0666, not a ring of uid 0 that only it can write or of group $G that others cannot write; remove it (rm /dev/shm$SHM) if it is stale, or use another name" \
    "--group $G: a group ring others can write is refused"
mkring 0660 4243
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_GROUP=$G TRACE_DIR="$T/f6" timeout 60 "$WL" 4 5 10 16 4 > /dev/null 2> "$T/wl6.err"
is "$? $(cat "$T/wl6.err") $(ls "$T/f6" 2> /dev/null | wc -l)" "0 callsight: TRACE_SHM=$SHM: refusing the ring: $refusal 0660, not a ring of uid 0 that only it can write or of group $G that others cannot write; tracing off (remove /dev/shm$SHM if it is stale) 0" \
    "TRACE_SHM_GROUP=$G: a ring of group 4243 is refused, untraced, no files"
rm -f "/dev/shm$SHM"

# 5. Unknown groups.
timeout 20 "$B/trace_stream" --group no-such-group-cs "$SHM" 127.0.0.1 1 > /dev/null 2> "$T/ts7.err"
is "$? $(cat "$T/ts7.err")" "2 trace_stream: --group needs a group's name or number ('no-such-group-cs' is neither)" \
    "trace_stream --group with no such group: exit 2, one line"
TRACE_ENABLE=1 TRACE_SHM=$SHM TRACE_SHM_GROUP=no-such-group-cs TRACE_DIR="$T/f8" timeout 60 "$WL" 4 5 10 16 4 \
    > /dev/null 2> "$T/wl8.err"
is "$? $(cat "$T/wl8.err") $(ls /dev/shm | grep -c "^${SHM#/}\$")" "0 callsight: TRACE_SHM=$SHM: TRACE_SHM_GROUP=no-such-group-cs is no group's name or number; tracing off 0" \
    "TRACE_SHM_GROUP with no such group: one line, untraced, no ring made"
