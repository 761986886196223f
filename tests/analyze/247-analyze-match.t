#!/usr/bin/env bash
# 247-analyze-match.t - --match GLOB and --exclude GLOB choose a table's
# rows by function name as --function and trace.config take names (issue
# 38): whole or from any "::" on, template arguments left out, each
# component a shell glob; a component's tail is no match (able::insert is
# not net::Table::insert).  tests/modules/routes.cpp calls
# net::RoutingTable<std::string>::insert 5 times, net::Table::insert 3 times,
# RoutingTable's lookup once and deep_size<...> twice.  A --match that
# matches nothing is an error that names the nearest functions; an --exclude
# that matches nothing, a note.
source "$(dirname "$0")/../lib/lib.sh"
plan 13

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    g++ -O0 -g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
        -o "$T/routes" "$TESTS/modules/routes.cpp" "$T/trace.o" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/routes" > /dev/null
ok $? "the C++ program, built and traced"
# "calls name" of the rows, by name
rows() {
    "$CS" analyze "$T/tr" --exe "$T/routes" --sort name "$@" > "$T/out" 2> "$T/err"
    local rc=$?
    awk 'f && $1 ~ /^[0-9]+$/ { printf "%s %s; ", $1, $10 } /^calls /{ f = 1 }' "$T/out"
    echo "rc=$rc"
}
is "$(rows --match insert)" "5 net::RoutingTable<...>::insert(...); 3 net::Table::insert(int); rc=0" \
    "--match insert: both classes' insert"
is "$(rows --match Table::insert)" "3 net::Table::insert(int); rc=0" "--match Table::insert: the plain class's only"
is "$(rows --match 'RoutingTable::*')" "5 net::RoutingTable<...>::insert(...); 1 net::RoutingTable<...>::lookup(...); rc=0" \
    "--match 'RoutingTable::*': a glob component, the template's arguments left out"
is "$(rows --match 'deep*' --match main)" "2 deep_size<...>(...); 1 main; rc=0" "two --match: either"
is "$(rows --exclude '*insert')" "2 deep_size<...>(...); 1 main; 1 net::RoutingTable<...>::lookup(...); rc=0" \
    "--exclude '*insert': both inserts left out"
is "$(rows --match insert --exclude net::Table::insert)" "5 net::RoutingTable<...>::insert(...); rc=0" \
    "--match and --exclude together"
is "$(rows --match able::insert)" "rc=1" "a component's tail is no match: able::insert"
is "$(cat "$T/err")" "callsight analyze: --match 'able::insert' matches none of the 5 functions with calls; the nearest: net::Table::insert, net::RoutingTable<...>::insert, main" \
    "one line says so, with the nearest names"
is "$(rows --exclude able::insert | grep -o 'rc=.*') $(cat "$T/err")" \
    "rc=0 callsight analyze: note: --exclude 'able::insert' matches none of the 5 functions with calls; the nearest: net::Table::insert, net::RoutingTable<...>::insert, main (nothing left out)" \
    "an --exclude that matches nothing: a note, the table whole"
"$CS" analyze "$T/tr" --exe "$T/routes" --match '*::insert' --format json > "$T/json"
is "$(python3 -c 'import json, sys
print("; ".join("%d %s" % (f["calls"], f["name"]) for f in json.load(open(sys.argv[1]))["functions"]))' "$T/json")" \
    "5 net::RoutingTable<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >::insert(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&); 3 net::Table::insert(int)" \
    "json: the same rows, full names"
is "$("$CS" analyze "$T/tr" --exe "$T/routes" --match insert --top 1 | tail -n 1)" \
    "$("$CS" analyze "$T/tr" --exe "$T/routes" --match net::Table::insert --format json | python3 -c 'import json, sys
f = json.load(sys.stdin)["functions"][0]
print("1 more function (%.3f ms self, 3 calls); --top 0 shows all" % (f["self_ns"] / 1e6))')" \
    "the 'more' line counts the rows the filter keeps: the plain insert's 3 calls"
"$CS" analyze "$T/tr" --exe "$T/routes" --match insert --format folded > /dev/null 2> "$T/err"
is "$?" 2 "--match with a format of stacks: usage error (--function is theirs)"
