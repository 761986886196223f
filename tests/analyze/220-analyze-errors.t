#!/usr/bin/env bash
# 220-analyze-errors.t - `callsight analyze` error messages and exit codes:
# missing --exe, missing inputs, no trace files, addr2line not runnable or
# failing, bad options; and damaged or foreign trace files, which are named
# on stderr in one line each while the rest are still analyzed.
source "$(dirname "$0")/../lib/lib.sh"
tmp=$T

# gen OUT < spec: a synthetic trace file (H header, E/X/M events, RAW bytes;
# see tests/tools/tracegen.pl).
TRACEGEN=$TESTS/tools/tracegen.pl
gen() { perl "$TRACEGEN" "$1"; }

# run ARGS...: sets rc, out, err
run() {
    "$CS" analyze "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
# expect_err RC PATTERN WHAT: exit code, one stderr line matching, no stdout
expect_err() {
    local good=0
    [ "$rc" = "$1" ] || good=1
    [ "$(wc -l <"$tmp/err")" = 1 ] || good=1
    printf '%s\n' "$err" | grep -q -- "^callsight analyze: $2" || good=1
    [ -z "$out" ] || good=1
    [ $good = 0 ] || echo "# rc=$rc stderr: $err stdout: $out"
    ok $good "$3"
}
# expect_run WHAT RC QUIET LINE ARGS...: analyze ARGS exits RC, says nothing
# on QUIET (out or err), and the other stream's telling line (the first of
# stdout, the last of stderr) is LINE.
expect_run() {
    local what=$1 want_rc=$2 quiet=$3 line=$4 silent said
    shift 4
    run "$@"
    if [ "$quiet" = err ]; then silent=$err; said=$(printf '%s\n' "$out" | head -1)
    else silent=$out; said=$(printf '%s\n' "$err" | tail -1); fi
    [ "$rc" = "$want_rc" ] && [ -z "$silent" ] && [ "$said" = "$line" ]
    local good=$?
    [ $good = 0 ] || echo "# rc=$rc out: $out err: $err"
    ok $good "$what"
}

plan 21

exe="$tmp/exe"
cp "$(type -P true)" "$exe"
mkdir "$tmp/empty" "$tmp/good"
gen "$tmp/good/trace.5.5.0.bin" <<'S'
H pid=5
E 1000 0x10 5
X 3000 0x10 5
S

run "$tmp/good"
expect_err 2 "--exe BIN is required" "no --exe: usage error (2)"

run "$tmp/good" --exe "$tmp/nonexistent"
expect_err 1 "--exe $tmp/nonexistent: No such file or directory" "--exe missing: error (1)"

run "$tmp/good" --exe "$tmp/empty"
expect_err 1 "--exe $tmp/empty: not a regular file" "--exe a directory: error (1)"

run "$tmp/nope" --exe "$exe"
expect_err 1 "$tmp/nope: No such file or directory" "no such directory"

run "$tmp/good/trace.5.5.9.bin" --exe "$exe"
expect_err 1 "$tmp/good/trace.5.5.9.bin: No such file or directory" "no such file"

(cd "$tmp/empty" && "$CS" analyze --exe "$exe" >"$tmp/out" 2>"$tmp/err"); rc=$?
out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
expect_err 1 "./traces: No such file or directory" "default ./traces missing"

run "$tmp/empty" --exe "$exe"
expect_err 1 "no trace files found in $tmp/empty (trace.\*.bin): was the program run with TRACE_ENABLE=1 and TRACE_DIR=$tmp/empty? (\`callsight run\` sets both; \`callsight doctor\` checks a set-up)\$" \
    "directory without trace files: and the likely cause, TRACE_ENABLE"

run "$tmp/good" --exe "$exe" --addr2line "$tmp/no-addr2line"
expect_err 1 "cannot run '$tmp/no-addr2line'" "--addr2line not found"

run "$tmp/good" --exe "$exe" --addr2line callsight-no-such-addr2line
expect_err 1 "cannot run 'callsight-no-such-addr2line'" "--addr2line not in PATH"

run "$tmp/good" --exe "$exe" --addr2line false
expect_err 1 "'false' failed on $exe" "addr2line that fails"

run "$tmp/good" --exe "$exe" --frobnicate
expect_err 2 "unknown option '--frobnicate'" "unknown option: usage error (2)"

run "$tmp/good" --exe "$exe" --top many
expect_err 2 "--top needs a count" "--top not a number: usage error (2)"

run "$tmp/good" --exe
expect_err 2 "--exe needs a value" "--exe without a value: usage error (2)"

run --help
good=0
[ "$rc" = 0 ] && [ -z "$err" ] || good=1
for w in "usage: callsight analyze" --exe --top --addr2line "trace.stream.<id>.<seq>.bin" unmatched_exits dropped; do
    printf '%s\n' "$out" | grep -qF -- "$w" || { good=1; echo "# --help lacks $w"; }
done
ok $good "--help: exit 0, describes options, inputs and output"

expect_run "a good file: exit 0, nothing on stderr" 0 err \
    "events=2 threads=1 functions=1 span=0.000002s unmatched_exits=0 unclosed_enters=0 dropped=0" \
    "$tmp/good" --exe "$exe"

# Damaged and foreign files next to a good one.
mkdir "$tmp/mixed"
cp "$tmp/good/trace.5.5.0.bin" "$tmp/mixed/"
gen "$tmp/mixed/trace.6.6.0.bin" <<'S'
H magic=NOTRACE pid=6
E 1 0x10 6
S
gen "$tmp/mixed/trace.7.7.0.bin" <<'S'
H pid=7
E 10000 0x20 7
X 15000 0x20 7
E 16000 0x20 7
RAW 20
S
gen "$tmp/mixed/trace.8.8.0.bin" <<'S'
H pid=8 version=9
S
printf 'MLTRACE\0\2\0' >"$tmp/mixed/trace.9.9.0.bin"
: >"$tmp/mixed/trace.stream.1.0.bin"

run "$tmp/mixed" --exe "$exe"
ok $([ "$rc" = 0 ] && echo 0 || echo 1) "damaged files: still exit 0"
ok $([ "$(wc -l <"$tmp/err")" = 5 ] && echo 0 || echo 1) "one stderr line per damaged file (5)"
good=0
grep -qx "callsight analyze: $tmp/mixed/trace.6.6.0.bin: not a callsight trace (bad magic); skipped" "$tmp/err" || good=1
grep -qx "callsight analyze: $tmp/mixed/trace.7.7.0.bin: truncated: partial last record (20 bytes) ignored" "$tmp/err" || good=1
grep -qx "callsight analyze: $tmp/mixed/trace.8.8.0.bin: unsupported trace version; skipped" "$tmp/err" || good=1
grep -qx "callsight analyze: $tmp/mixed/trace.9.9.0.bin: truncated header; skipped" "$tmp/err" || good=1
grep -qx "callsight analyze: $tmp/mixed/trace.stream.1.0.bin: empty file; skipped" "$tmp/err" || good=1
[ $good = 0 ] || sed 's/^/# /' "$tmp/err"
ok $good "each damaged file named with what is wrong"
line1=$(printf '%s\n' "$out" | head -1)
[ "$line1" = "events=5 threads=2 functions=2 span=0.000015s unmatched_exits=0 unclosed_enters=1 dropped=0" ] || { echo "# $line1"; false; }
ok $? "the good file and the truncated file's whole records are analyzed"

mkdir "$tmp/bad"
cp "$tmp/mixed/trace.6.6.0.bin" "$tmp/bad/"
expect_run "only foreign files: error (1)" 1 out \
    "callsight analyze: none of the 1 trace files could be read" "$tmp/bad" --exe "$exe"

# A damaged trace naming more build-ids than any real one (4096) ends in
# bounded time with a warning, not a search that grows with every marker.
mkdir "$tmp/ids"
{
    echo "H pid=9"
    for i in $(seq 5000); do echo "M 0 26 $i 9"; done
    echo "E 1000 0x10 9"
    echo "X 3000 0x10 9"
} | gen "$tmp/ids/trace.9.9.0.bin"
timeout 60 "$CS" analyze "$tmp/ids" --exe "$exe" --force >"$tmp/out" 2>"$tmp/err"
rc=$?
good=0
[ "$rc" = 0 ] && grep -q "^callsight analyze: warning: the trace names more than 4096 build-ids" "$tmp/err" &&
    grep -q "^events=2 " "$tmp/out" || good=1
[ $good = 0 ] || echo "# rc=$rc err: $(cat "$tmp/err")"
ok $good "5000 build-ids: bounded, a warning, the events still counted"
