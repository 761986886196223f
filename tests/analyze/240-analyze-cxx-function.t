#!/usr/bin/env bash
# 240-analyze-cxx-function.t - --function takes a C++ name as trace.config
# does (issue 38: only the full template name worked): whole or from any
# "::", template arguments left out.  tests/modules/routes.cpp calls
# net::RoutingTable<std::string>::insert 5 times, net::Table::insert 3
# times, RoutingTable's lookup once and a function template whose
# demangled name is 3,390 characters twice; near misses (a name's tail that
# is no whole component) match nothing.  A text row keeps both ends of a
# name too long to show (the function itself and its file:line).  Globs
# (issue 38: 'fi*' was refused) match the whole name, the name without its
# arguments, or its last component.
source "$(dirname "$0")/../lib/lib.sh"
plan 16

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    g++ -O0 -g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
        -o "$T/routes" "$TESTS/modules/routes.cpp" "$T/trace.o" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/routes" > /dev/null
ok $? "the C++ program, built and traced"
sel() {
    "$CS" analyze "$T/tr" --exe "$T/routes" --function "$1" --top 0 > "$T/out" 2> "$T/err"
    local rc=$?
    [ $rc = 0 ] && sed -n 's/^filter: function=.*: \([0-9]*\) of 12 calls selected$/\1/p' "$T/out" || echo "rc=$rc"
}
is "$(sel insert)" 8 "insert: both classes' (5 + 3)"
is "$(sel RoutingTable::insert)" 5 "RoutingTable::insert: the template's, its arguments left out"
is "$(sel net::RoutingTable::insert)" 5 "net::RoutingTable::insert: the same, from the namespace"
is "$(sel Table::insert)" 3 "Table::insert: the plain class only, not RoutingTable's"
is "$(sel net::Table::insert)" 3 "net::Table::insert: the same"
is "$(sel lookup)" 1 "lookup: a const method"
is "$(sel nsert)" "rc=1" "a name's tail is no match: nsert"
is "$(sel able::insert)" "rc=1" "nor a component's tail: able::insert"
is "$(cat "$T/err")" "callsight analyze: --function: no function named 'able::insert' in $T/routes" "one line says so"
is "$(sel deep_size)" 2 "deep_size: a function template, its arguments left out"
is "$(sel 'ins*')" 8 "a glob, 'ins*': both insert methods, by their last component"
is "$(sel '*::Table::ins*')" 3 "'*::Table::ins*': net::Table's only"
is "$(sel '*Table::insert')" 8 "'*Table::insert': both classes, as a glob says"
is "$(sel 'ins?')" "rc=1" "'ins?' matches no whole component: nothing"
"$CS" analyze "$T/tr" --exe "$T/routes" --top 0 --long-names > "$T/all" 2>&1
row=$(grep '^ *2 .* int deep_size<std::map<' "$T/all")
label="int deep_size${row#*int deep_size}" # the name and file:line, after the numbers
echo "$label" | grep -Eq '\.\.\..* const&\) \(routes\.cpp:[0-9]+\)$' && [ "${#label}" -lt 620 ]
ok $? "--long-names, a 3,390-character name: its row keeps both ends, the middle elided, file:line whole (${#label} characters)"
