#!/usr/bin/env bash
# 558-top-cxx-names.t - callsight top at 80 columns on a C++ program (issue
# 38: every row showed "std::_Rb_tree<std::__cxx11::basic_string", cut at
# the screen's edge): rows use the short names (long template and parameter
# lists collapsed) and a name still too wide loses its middle, not its end,
# so each row keeps its method and file:line.  tests/modules/routes.cpp
# built with the standard library's templates traced too.
source "$(dirname "$0")/../lib/lib.sh"
plan 4

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    g++ -O0 -g -finstrument-functions -o "$T/routes" "$TESTS/modules/routes.cpp" "$T/trace.o" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/routes" > /dev/null
ok $? "the C++ program, built and traced with the STL's functions"

TM="tmux -L cs-top-cxx-$$"
cleanup_tmux() { $TM kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
$TM new-session -d -s top -x 80 -y 40 "bash --norc --noprofile"
$TM send-keys -t top "cd '$T' && '$CS' top tr --exe routes; echo TOP-EXIT=\$?" Enter
pane_until top "insert.* \(routes\.cpp:11\)"
ok $? "top shows the program's functions"
awk '/^ *calls /{ f = 1; next } f && $1 ~ /^[0-9]+$/' "$T/pane" > "$T/rows"
is "$(wc -l < "$T/rows") $(grep -Evc ' \([^ ()]+:[0-9]+\)$' "$T/rows") $(awk 'length($0) > 80' "$T/rows" | wc -l)" \
    "$(wc -l < "$T/rows") 0 0" "every row within 80 columns ends with its file:line"
grep -Eq '^ +5 .*::insert\(\.\.\.\) \(routes\.cpp:11\)$' "$T/rows" &&
    [ "$(grep -c 'std::_Rb_tree<std::__cxx11::basic_string' "$T/rows")" = 0 ]
ok $? "RoutingTable's insert keeps its method name; no row is the template's first 40 characters"
$TM send-keys -t top q
pane_until top "TOP-EXIT=0" > /dev/null
