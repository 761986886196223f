#!/bin/sh
# serve-port.sh LOG: the port a `callsight serve --port 0` took, read from
# the first line of its log ("listening on ADDR:PORT"), waiting for it up
# to 10 s; exit 1, printing nothing, when it never came.  The tests
# (tests/lib/lib.sh), the bench (bench/run.sh, bench/profile.sh) and the
# demo start serve this way.
for _ in $(seq 200); do
    port=$(sed -n '1s/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$1" 2>/dev/null)
    [ -n "$port" ] && { echo "$port"; exit 0; }
    sleep 0.05
done
exit 1
