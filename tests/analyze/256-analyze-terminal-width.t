#!/usr/bin/env bash
# 256-analyze-terminal-width.t - on a terminal the text table fits its
# width (issue 38: rows of C++ programs ran to 140 columns and more, on an
# 80-column terminal each wrapped).  The least read columns go first (min,
# p50, mean, self%), then the file:line, then a name's middle, and a line
# says what was left out; calls, incl, self, p99 and max always stay, and
# the counts are the same.  A file or a pipe gets every column, whatever
# the terminal or COLUMNS, and --wide gives them on a terminal too.  The
# terminal is script(1)'s pseudo-terminal, its width set by stty.
source "$(dirname "$0")/../lib/lib.sh"
plan 8

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    g++ -O0 -g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
        -o "$T/routes" "$TESTS/modules/routes.cpp" "$T/trace.o" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/routes" > /dev/null
ok $? "the C++ program, built and traced"
tty_run() { # COLS ARGS...: analyze on a terminal of COLS columns
    local cols=$1
    shift
    script -qec "stty cols $cols; $(printf '%q ' "$CS" analyze "$T/tr" --exe "$T/routes" "$@")" /dev/null < /dev/null |
        tr -d '\r'
}
table() { sed -n '/^ *calls /,$p' "$1"; } # the table and what follows it

tty_run 80 > "$T/t80"
is "$(table "$T/t80" | awk 'length($0) > 79' | wc -l)" "0" "80 columns: no line of the table is wider than 79"
is "$(table "$T/t80" | head -n 1 | tr -s ' ')" "calls incl_ms self_ms p99 max function (file:line)" \
    "the header: calls, incl, self, p99, max and the function"
is "$(table "$T/t80" | tail -n 1)" "(80 columns: left out min, p50, mean, self%, file:line; --wide shows all)" \
    "one line says what was left out and how to see it"
# how far names are cut depends on the widths of the numbers, which depend
# on the run's timing: the counts, and the names short enough to stay whole
is "$(table "$T/t80" | awk '$1 ~ /^[0-9]+$/ { print $1 }' | sort -n | tr '\n' ' ') $(table "$T/t80" | awk '$1 == 1 && $6 == "main" || $1 == 3 && $6 == "net::Table::insert(int)" || $1 == 2 && $6 == "deep_size<...>(...)"' | wc -l) $(table "$T/t80" | awk '$1 ~ /^[0-9]+$/ && $6 ~ /^net::RoutingTa/' | wc -l)" \
    "1 1 2 3 5  3 2" \
    "the same calls per function: the short names whole, RoutingTable's two methods kept by their start"
"$CS" analyze "$T/tr" --exe "$T/routes" > "$T/pipe" 2>&1
COLUMNS=80 "$CS" analyze "$T/tr" --exe "$T/routes" | cat > "$T/pipe80"
is "$(cmp "$T/pipe" "$T/pipe80" && table "$T/pipe" | head -n 1 | tr -s ' ')" \
    "calls incl_ms self_ms self% mean min p50 p99 max function (file:line)" "to a file or a pipe: every column, whatever COLUMNS says"
tty_run 80 --wide > "$T/wide"
is "$(diff <(table "$T/wide") <(table "$T/pipe") > /dev/null && echo same)" "same" "--wide on an 80-column terminal: the table a file gets"
tty_run 300 > "$T/t300"
is "$(diff <(table "$T/t300") <(table "$T/pipe") > /dev/null && echo same)" "same" "a terminal wide enough: the whole table, and no line about it"
exit $_failed
