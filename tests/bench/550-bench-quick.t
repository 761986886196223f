#!/usr/bin/env bash
# `make bench QUICK=1` runs to the end and prints every row of its table, so
# the benchmark harness (bench/) cannot rot.  No number is judged here:
# timings never go into tests.  It also checks that the bench leaves no
# process, shm segment or temp dir behind.
source "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$TESTS/.." && pwd)

# Every row the table has, whatever the machine (bench/README.md lists them).
ROWS="C0 H10 H11 H12 H12s H13 H14 H15 H16 H17 H17s HM0 HM1 HM2 HM2s HM3 HM4 HM5 HM6 HM7 HM7s
S1 S2 S2v3 S2v2 S3 S4 S4p S10 S5 S6 S7 A1 A2 A1j A1r A2j A2r A3 A4 U1 U2 U3 U4 Q1 Q2 A5 A6 A7 S8 S8p S9
W01 W02 W03 W04 W05 W06 W07 W08 W09 W10 W11 W12 W13 W14 W15 W16 W17 W18 W19 W20 W21 W22 W23 W24
W25 W26 W27 W28
T1a T1b T1c T1d TMa TMc TMd Tc Td Te Ti Tf Tk Tg Tq Tu Th Tj"
plan 8

# The build under test may be the ASan one: the bench's runtime-linked
# program must then be built with the same flags.
san=""
nm "$B/runtime/trace.o" 2> /dev/null | grep -q __asan_ && san="SAN=1 OPT=-O1"
# Its segments under a prefix of this test's own: another run of the
# suite on the machine (its bench included) makes and removes its own.
prefix=callsight-bench-t550-$$
# A make of its own (not the jobserver of a make that may be running us).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL TMPDIR="$T" BENCH_SHM_PREFIX="/$prefix" timeout 300 \
    make -s -C "$ROOT" bench QUICK=1 BUILD="$B" $san > "$T/out" 2> "$T/err"
rc=$?
ok $rc "make bench QUICK=1 exits 0"
[ $rc -eq 0 ] || diag "$(tail -n 5 "$T/err")"

missing=""
for id in $ROWS; do grep -q "^| $id " "$T/out" || missing="$missing $id"; done
is "$missing" "" "the table has every row"

# A row is | id | what | value | unit | compared with |.  A value is a number,
# MET/MISSED for a target, or "skipped" (with the reason).
bad=$(awk -F'|' '$2 ~ /^ [CHSAWTQU][0-9A-Za-z]+ +$/ {
        v = $4; gsub(/ /, "", v)
        if (v !~ /^-?[0-9]+(\.[0-9]+)?$|^MET$|^MISSED$|^skipped$/) print $2 }' "$T/out" | tr -s ' \n' ' ')
is "$bad" "" "every row carries a value"
awk -F'|' '$4 ~ /skipped/ && $6 !~ /uftrace not installed|sqlite3 shell is not installed/' "$T/out" | grep -q .
ok $((!$?)) "only the uftrace and sqlite3 shell rows may be skipped, and they say why"

grep -q '^machine: nproc=[0-9]*, .*, Linux ' "$T/out"
ok $? "the table names the machine it ran on"

is "$(ls /dev/shm 2> /dev/null | grep "^$prefix-" | tr '\n' ' ')" "" "no shm segment left behind"
pgrep -f "$T/callsight-bench" > /dev/null
ok $((!$?)) "no process left behind"
is "$(ls "$T" | grep -c '^callsight-bench\.')" "0" "no temp dir left behind"
exit $_failed
