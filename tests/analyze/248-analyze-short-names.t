#!/usr/bin/env bash
# 248-analyze-short-names.t - C++ names in text rows are short by default
# (issue 38: a row of 1,097 characters): a long or nested template argument
# list and a long parameter list collapse to <...> and (...), the return
# type goes, short lists stay (Table::insert(int)); --long-names gives the
# names in full, and json always has them in full.  tests/modules/routes.cpp.
source "$(dirname "$0")/../lib/lib.sh"
plan 6

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" &&
    g++ -O0 -g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
        -o "$T/routes" "$TESTS/modules/routes.cpp" "$T/trace.o" -pthread &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/routes" > /dev/null
ok $? "the C++ program, built and traced"
labels() { "$CS" analyze "$T/tr" --exe "$T/routes" --sort name "$@" | awk 'p { print substr($0, p) } /^calls /{ p = index($0, "function") }'; }
is "$(labels)" "deep_size<...>(...) (routes.cpp:18)
main (routes.cpp:24)
net::RoutingTable<...>::insert(...) (routes.cpp:11)
net::RoutingTable<...>::lookup(...) const (routes.cpp:12)
net::Table::insert(int) (routes.cpp:14)" \
    "short names: long and nested lists collapsed, the return type left out, short ones kept"
is "$(labels | awk 'length($0) > 80' | wc -l)" 0 "every row's name fits beside the numbers"
STR='std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >'
labels --long-names > "$T/long"
is "$(sed -n 3,5p "$T/long")" "net::RoutingTable<$STR >::insert($STR const&) (routes.cpp:11)
net::RoutingTable<$STR >::lookup($STR const&) const (routes.cpp:12)
net::Table::insert(int) (routes.cpp:14)" "--long-names: in full, as addr2line -C gives them"
grep -q '^int deep_size<std::map<' "$T/long"
ok $? "--long-names keeps the return type"
"$CS" analyze "$T/tr" --exe "$T/routes" --format json > "$T/json"
is "$(python3 -c 'import json, sys
print(sorted(f["name"] for f in json.load(open(sys.argv[1]))["functions"])[2])' "$T/json")" \
    "net::RoutingTable<$STR >::insert($STR const&)" "json: full names"
