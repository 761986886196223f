#!/usr/bin/env bash
# 678-exit-status.t - every command's exit status on every path (issue 32),
# as docs/callsight.1 gives them: `callsight run` returns the program's own
# non-zero status (exits 3 -> 3), 128+N when signal N killed it, 127 when it
# cannot start, analyze's when the program succeeded, 2 on a bad option; and
# analyze, diff, serve, sql and ctl: 2 on a bad option, 1 (analyze, sql) or 2
# (diff) on input they cannot read (sql: and an SQL error), 3 for ctl on a
# pid with no control block.
source "$(dirname "$0")/../lib/lib.sh"
plan 20

cat > "$T/st.c" << 'EOF2'
#include <signal.h>
#include <stdlib.h>
#include <string.h>
static __attribute__((noinline)) int work(int n) { return n; }
int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "term"))
        raise(SIGTERM);
    return work(argc > 1 ? atoi(argv[1]) : 0);
}
EOF2
build_traced "$T/st" "$T/st.c"
ok $? "the program builds traced"

# run_rc ARGS...: callsight run's exit status, its traces in a directory of their own.
run_rc() { "$CS" run --dir "$T/rt.$RANDOM" "$@" > /dev/null 2> "$T/run.err"; echo $?; }
is "$(run_rc -- "$T/st" 0)" 0 "run: the program exits 0, analyze succeeds: 0"
is "$(run_rc -- "$T/st" 3)" 3 "run: the program exits 3: 3, not analyze's status"
is "$(run_rc -- "$T/st" 1)" 1 "run: the program exits 1: 1"
is "$(run_rc -- "$T/st" 200)" 200 "run: the program exits 200: 200"
is "$(run_rc -- "$T/st" term)" 143 "run: SIGTERM kills the program: 128+15"
is "$(run_rc -- "$T/missing-program")" 127 "run: a program that cannot start: 127"
is "$(run_rc --no-such-option -- "$T/st" 0)" 2 "run: a bad option: 2"

rc() { "$@" > /dev/null 2>&1; echo $?; }
is "$(rc "$CS" analyze --no-such-option)" 2 "analyze: a bad option: 2"
is "$(rc "$CS" analyze "$T/no-such-dir" --exe "$T/st")" 1 "analyze: traces it cannot find: 1"
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/st" 0
"$CS" analyze "$T/tr" --exe "$T/st" --format json -o "$T/a.json" 2> /dev/null
is "$(rc "$CS" diff "$T/a.json" "$T/a.json")" 0 "diff: no regression: 0"
is "$(rc "$CS" diff --no-such-option "$T/a.json" "$T/a.json")" 2 "diff: a bad option: 2"
is "$(rc "$CS" diff "$T/a.json" "$T/no-such.json")" 2 "diff: an unreadable report: 2"
is "$(rc "$CS" serve --no-such-option)" 2 "serve: a bad option: 2"
"$CS" analyze "$T/tr" --exe "$T/st" --format sqlite -o "$T/a.db" 2> /dev/null
is "$(rc "$CS" sql "$T/a.db" 'SELECT count(*) FROM slice')" 0 "sql: a query that runs: 0"
is "$(rc "$CS" sql "$T/a.db" 'SELECT 1' --no-such-option)" 2 "sql: a bad option: 2"
is "$(rc "$CS" sql "$T/no-such.db" 'SELECT 1') $(rc "$CS" sql "$T/a.db" 'SELECT * FROM no_such_table')" "1 1" \
   "sql: a database it cannot open, an SQL error: 1"
is "$(rc "$CS" ctl --no-such-option)" 2 "ctl: a bad option: 2"
# A pid that is surely not running: one past the kernel's maximum.
nopid=$(($(cat /proc/sys/kernel/pid_max) + 1))
is "$(rc "$CS" ctl --pid "$nopid" --show)" 3 "ctl: a pid with no control block: 3"
is "$(rc "$CS" ctl --pid "$nopid" --pause)" 3 "ctl --pause: a pid with no control block: 3"
exit $_failed
