#!/usr/bin/env bash
# 681-select-near-miss.t - names compared whole (issue 32): a trigger rule
# `foo>1ms` fires on foo's slow calls and never on foobar's (or foo2's),
# and analyze --function foo selects foo, not foo2 or foobar.
source "$(dirname "$0")/../lib/lib.sh"
plan 5

cat > "$T/nm.c" << 'EOF2'
#define _POSIX_C_SOURCE 200809L
#include <time.h>
static __attribute__((noinline)) void nap(long ms)
{
    struct timespec d = {0, ms * 1000000L};
    while (nanosleep(&d, &d) != 0)
        ;
}
__attribute__((noinline)) void foo(void) { nap(3); }
__attribute__((noinline)) void foobar(void) { nap(3); nap(1); }
__attribute__((noinline)) void foo2(void) { nap(3); nap(1); nap(1); }
int main(void)
{
    foo();
    foobar();
    foobar();
    foo2();
    foo2();
    foo2();
    return 0;
}
EOF2
build_traced "$T/nm" "$T/nm.c"
ok $? "the program builds"

TRACE_TRIGGER='foo>1ms' TRACE_ENABLE=1 TRACE_DIR="$T/tr" timeout 60 "$T/nm"
ok $? "it runs with TRACE_TRIGGER='foo>1ms'"
"$CS" analyze "$T/tr" --exe "$T/nm" --format json -o "$T/r.json"
is "$(python3 -c 'import json, sys
print(" ".join(t["stack"][-1] or "?" for t in json.load(open(sys.argv[1]))["triggers"]))' "$T/r.json")" "foo" \
    "the trigger fired once, on foo: not on foobar or foo2, whose names start with foo"

"$CS" analyze "$T/tr" --exe "$T/nm" --function foo --format json -o "$T/f.json"
is "$(python3 -c 'import json, sys
print(" ".join(sorted("%s=%d" % (f["name"], f["calls"]) for f in json.load(open(sys.argv[1]))["functions"])))' "$T/f.json")" \
    "foo=1 nap=1" "--function foo: foo and its callee, not foobar or foo2"
"$CS" analyze "$T/tr" --exe "$T/nm" --function foo2 --format json -o "$T/f2.json"
is "$(python3 -c 'import json, sys
print(" ".join(sorted("%s=%d" % (f["name"], f["calls"]) for f in json.load(open(sys.argv[1]))["functions"])))' "$T/f2.json")" \
    "foo2=3 nap=9" "--function foo2: foo2's 3 calls and their 9 naps"
exit $_failed
