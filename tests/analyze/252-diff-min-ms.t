#!/usr/bin/env bash
# 252-diff-min-ms.t - `callsight diff --min-ms MS`: an absolute floor under
# --fail-over's percentage.  A time that grew by less than MS milliseconds
# (0.486 to 0.753 ms is +55%, noise on a busy machine) does not count against
# the gate; one that grew by MS or more still does; the summary line counts
# the rows the floor let pass, and each is marked (issue 38).
set -u
. "$(dirname "$0")/../lib/lib.sh"

plan 7

# report FILE ROWS...: a minimal report; a row is "name file calls self incl p99"
report() {
    local out=$1; shift
    {
        printf '{"format": "callsight-analysis", "version": 1, "functions": ['
        local sep=""
        for r in "$@"; do
            set -- $r
            printf '%s\n {"name": "%s", "file": "%s", "line": 3, "addr": "0x10", "calls": %s, "self_ns": %s, "incl_ns": %s, "p99_ns": %s}' \
                "$sep" "$1" "$2" "$3" "$4" "$5" "$6"
            sep=","
        done
        printf ']}\n'
    } >"$out"
}
report "$T/base.json" "small /src/w.c 10 486000 486000 100" "big /src/w.c 10 5000000 5000000 100" \
    "even /src/w.c 10 2000000 2000000 100"
report "$T/new.json" "small /src/w.c 10 753000 753000 100" "big /src/w.c 10 7000000 7000000 100" \
    "even /src/w.c 10 3000000 3000000 100" "fresh /src/n.c 1 400000 400000 100"

run() { timeout 60 "$CS" diff "$@" >"$T/out" 2>"$T/err"; rc=$?; }
same() { # same WHAT RC < expected stdout
    cat >"$T/want"
    if [ "$rc" = "$2" ] && [ ! -s "$T/err" ] && diff "$T/want" "$T/out" >"$T/diff"; then ok 0 "$1"
    else diag "rc=$rc"; sed 's/^/# /' "$T/err" "$T/diff"; ok 1 "$1"; fi
}

# The small function alone: +55% of 0.486 ms fails the gate without a floor.
report "$T/base1.json" "small /src/w.c 10 486000 486000 100"
report "$T/new1.json" "small /src/w.c 10 753000 753000 100"
run "$T/base1.json" "$T/new1.json" --fail-over 10
is "$rc $(grep -c REGRESSED "$T/out")" "1 1" "without --min-ms: 0.486 -> 0.753 ms is +54.9%, regressed"
run "$T/base1.json" "$T/new1.json" --fail-over 10 --min-ms 1
same "--min-ms 1: a growth of 0.267 ms does not count: exit 0" 0 <<'R'
diff: key=self functions=1 changed=1 regressed=0 (over 10%) under_min_ms=1 (grew less than 1 ms)

     base_ms       new_ms      delta_ms   change  function
       0.486        0.753        +0.267   +54.9%  small (w.c)  (under --min-ms)
R

run "$T/base.json" "$T/new.json" --fail-over 10 --min-ms 1
same "--min-ms 1: growth of 2 ms and of exactly 1 ms still counts; a new 0.4 ms function does not" 1 <<'R'
diff: key=self functions=4 changed=4 regressed=2 (over 10%) under_min_ms=2 (grew less than 1 ms)

     base_ms       new_ms      delta_ms   change  function
       5.000        7.000        +2.000   +40.0%  big (w.c)  REGRESSED
       2.000        3.000        +1.000   +50.0%  even (w.c)  REGRESSED
       0.000        0.400        +0.400      new  fresh (n.c)  (under --min-ms)
       0.486        0.753        +0.267   +54.9%  small (w.c)  (under --min-ms)
R

run "$T/base.json" "$T/new.json" --fail-over 10 --min-ms 2.5 --key incl
is "$rc $(head -1 "$T/out")" "0 diff: key=incl functions=4 changed=4 regressed=0 (over 10%) under_min_ms=4 (grew less than 2.5 ms)" \
    "--min-ms 2.5 with --key incl: nothing grew by 2.5 ms, exit 0"

run "$T/base.json" "$T/new.json" --min-ms 1 --key calls
is "$rc $(cat "$T/err")" "2 callsight diff: --min-ms is a floor for times: use it with --key self, incl or p99, not calls" \
    "--min-ms with --key calls: refused in one line"
run "$T/base.json" "$T/new.json" --min-ms -1
is "$rc $(cat "$T/err")" "2 callsight diff: --min-ms needs milliseconds >= 0, not '-1'" "a negative floor: refused"

run --help
grep -q -- "--min-ms MS" "$T/out"
ok $? "--help documents --min-ms"
exit $_failed
