#!/usr/bin/env bash
# 225-diff.t - `callsight diff BASE.json NEW.json`: per-function changes
# sorted by size, each --key, the --fail-over gate and its exit codes (0
# none, 1 regressed, 2 unusable input), functions added and removed, and
# one-line errors for input that is not a report.
set -u
. "$(dirname "$0")/../lib/lib.sh"

plan 24

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
report "$T/base.json" "fib /src/w.c 1000 5000000 9000000 2000" "merge /src/w.c 500 1000000 1000000 300" \
    "main /src/w.c 1 100000 20000000 20000000" "gone /src/old.c 7 7000 7000 1000"
report "$T/new.json" "fib /src/w.c 1000 6000000 9500000 2100" "merge /src/w.c 600 1050000 1050000 300" \
    "main /other/w.c 1 100000 20000000 20000000" "added /src/new.c 3 300000 300000 100000"

# run ARGS...: callsight diff, stdout/stderr in files, rc
run() { timeout 60 "$CS" diff "$@" >"$T/out" 2>"$T/err"; rc=$?; }
same() { # same WHAT RC < expected stdout
    cat >"$T/want"
    if [ "$rc" = "$2" ] && [ ! -s "$T/err" ] && diff "$T/want" "$T/out" >"$T/diff"; then ok 0 "$1"
    else diag "rc=$rc"; sed 's/^/# /' "$T/err" "$T/diff"; ok 1 "$1"; fi
}

run "$T/base.json" "$T/new.json"
same "default key self: changed rows by size, added and gone, exit 0 without a gate" 0 <<'R'
diff: key=self functions=5 changed=4

     base_ms       new_ms      delta_ms   change  function
       5.000        6.000        +1.000   +20.0%  fib (w.c)
       0.000        0.300        +0.300      new  added (new.c)
       1.000        1.050        +0.050    +5.0%  merge (w.c)
       0.007        0.000        -0.007     gone  gone (old.c)
R

run "$T/base.json" "$T/new.json" --fail-over 10
same "--fail-over 10: fib (+20%) and the new function regressed: exit 1" 1 <<'R'
diff: key=self functions=5 changed=4 regressed=2 (over 10%)

     base_ms       new_ms      delta_ms   change  function
       5.000        6.000        +1.000   +20.0%  fib (w.c)  REGRESSED
       0.000        0.300        +0.300      new  added (new.c)  REGRESSED
       1.000        1.050        +0.050    +5.0%  merge (w.c)
       0.007        0.000        -0.007     gone  gone (old.c)
R

run --key calls --fail-over 20 "$T/base.json" "$T/new.json"
same "--key calls --fail-over 20: merge +20% is not over 20; the new function is" 1 <<'R'
diff: key=calls functions=5 changed=3 regressed=1 (over 20%)

        base          new         delta   change  function
         500          600          +100   +20.0%  merge (w.c)
           7            0            -7     gone  gone (old.c)
           0            3            +3      new  added (new.c)  REGRESSED
R

report "$T/same-calls.json" "fib /src/w.c 1000 9 9 9" "merge /src/w.c 500 9 9 9" \
    "main /x/w.c 1 9 9 9" "gone /src/old.c 7 9 9 9"
run "$T/base.json" "$T/same-calls.json" --key calls --fail-over 0
same "--key calls with identical counts: nothing changed, exit 0 even at 0%" 0 <<'R'
diff: key=calls functions=4 changed=0 regressed=0 (over 0%)

        base          new         delta   change  function
R

run "$T/base.json" "$T/new.json" --key incl --fail-over 5.5
is "$rc $(grep -c REGRESSED "$T/out") $(grep REGRESSED "$T/out" | awk '{ print $NF, $(NF-1) }' | tr '\n' ' ')" \
    "1 2 REGRESSED (w.c) REGRESSED (new.c) " "--key incl --fail-over 5.5: fib +5.6% and the new one"

run "$T/base.json" "$T/new.json" --key p99 --fail-over 5
is "$rc $(sed -n 6p "$T/out" | awk '{$1 = $1} 1')" "1 0.002 0.002 +0.000 +5.0% fib (w.c)" \
    "--key p99: fib's +5.0% (2000 -> 2100 ns) is not over 5%; the new function is"

# A round trip through analyze's own JSON: the same trace twice -> no change.
mkdir "$T/tr"
perl "$TESTS/tools/tracegen.pl" "$T/tr/trace.5.5.0.bin" <<'S'
H pid=5
E 1000 0x10 5
E 2000 0x20 5
X 3000 0x20 5
X 9000 0x10 5
S
exe="$T/exe"; cp "$(type -P true)" "$exe"
"$CS" analyze "$T/tr" --exe "$exe" --format json -o "$T/a.json" && cp "$T/a.json" "$T/b.json"
run "$T/a.json" "$T/b.json" --fail-over 0
is "$rc $(head -1 "$T/out")" "0 diff: key=self functions=2 changed=0 regressed=0 (over 0%)" \
    "analyze's own JSON read back; unnamed functions matched by address"

# ---- errors: one line, exit 2 ----
err_is() { # err_is PATTERN WHAT ARGS...
    local pat=$1 what=$2; shift 2
    run "$@"
    if [ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "$pat" "$T/err" && [ ! -s "$T/out" ]; then
        ok 0 "$what"
    else
        diag "rc=$rc err: $(cat "$T/err") out: $(head -3 "$T/out")"; ok 1 "$what"
    fi
}
err_is "^callsight diff: $T/nope.json: No such file or directory\$" "missing file" "$T/nope.json" "$T/new.json"
mkdir -p "$T/adir" && mkfifo "$T/afifo"
err_is "^callsight diff: $T/adir: not a report file: diff compares two JSON reports (callsight analyze DIR --exe BIN --format json -o FILE)\$" \
    "a directory: what diff takes, not an I/O error" "$T/adir" "$T/new.json"
err_is "^callsight diff: $T/afifo: not a report file" "a FIFO: refused at once, never read" "$T/base.json" "$T/afifo"
printf '{"format": "callsight-analysis",\n  "version": 1 "functions": []}' >"$T/bad1.json"
err_is "^callsight diff: $T/bad1.json: line 2 column 26: '}' expected near '\"functions\"'\$" "malformed JSON: line and column" "$T/base.json" "$T/bad1.json"
printf '{"format": "other", "version": 1, "functions": []}' >"$T/bad2.json"
err_is "not a callsight report" "another JSON document" "$T/bad2.json" "$T/new.json"
printf '{"format": "callsight-analysis", "version": 2, "functions": []}' >"$T/bad3.json"
err_is "report version is not 1" "another schema version" "$T/bad3.json" "$T/new.json"
printf '{"format": "callsight-analysis", "version": 1}' >"$T/bad4.json"
err_is "no \"functions\" array" "no functions" "$T/bad4.json" "$T/new.json"
printf '{"format": "callsight-analysis", "version": 1, "functions": [{"name": "f", "calls": -1}]}' >"$T/bad5.json"
err_is "functions\[0\]: no whole number for the key" "a negative count" "$T/bad5.json" "$T/new.json" --key calls
printf '{"format": "callsight-analysis", "version": 1, "functions": [{"calls": 1, "self_ns": 1}]}' >"$T/bad6.json"
err_is "functions\[0\]: neither \"name\" nor \"addr\"" "a row with no identity" "$T/bad6.json" "$T/new.json"
perl -e 'print "[" x 100000' >"$T/deep.json"
err_is "line 1 column 2049: maximum parsing depth reached" "100000 nested arrays: an error, not a crash" "$T/deep.json" "$T/new.json"
printf '{"format": "callsight-analysis", "version": 1, "functions": []} trailing' >"$T/bad7.json"
err_is "line 1 column 72: end of file expected near 'trailing'" "trailing garbage" "$T/bad7.json" "$T/new.json"
printf '{"format": "callsight-\\uZZ"}' >"$T/bad8.json"
err_is "line 1 column 25: invalid escape" "a bad escape" "$T/bad8.json" "$T/new.json"
: >"$T/empty.json"
err_is "line 1 column 0: '\[' or '{' expected near end of file" "an empty file" "$T/empty.json" "$T/new.json"
err_is "^callsight diff: --key needs calls, self, incl or p99, not 'wall'" "bad --key" --key wall "$T/base.json" "$T/new.json"
err_is "^callsight diff: --fail-over needs a percentage >= 0, not '-3'" "bad --fail-over" --fail-over -3 "$T/base.json" "$T/new.json"
err_is "^callsight diff: give two reports" "one report only" "$T/base.json"

run --help
[ "$rc" = 0 ] && grep -q -- "--fail-over PCT" "$T/out" && grep -q "Exit status: 0 no regression, 1" "$T/out"
ok $? "--help: exit 0, documents the gate and exit codes"
