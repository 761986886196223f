#!/usr/bin/env bash
# 255-analyze-callers-inlined.t - the callers view names a call made from
# inlined code by its true caller, and says its line is unknown (issue 38:
# it named the caller's own call site, one frame out: "main (prog.c:20) ->
# hot_loop" where main never calls hot_loop).  GCC's hook in an inlined
# function passes the return address of the function it was inlined into;
# the frame below it in the trace is the true caller.  Recursion at one
# call site (equal sites too) stays an ordinary row.
source "$(dirname "$0")/../lib/lib.sh"
plan 4

cat > "$T/prog.c" << 'EOF2'
#include <stdio.h>
__attribute__((noinline)) int mix(int x)
{
    return x * 31 + 7;
}
static inline int hot_loop(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += mix(i);
    return s;
}
__attribute__((noinline)) int worker(int n)
{
    int s = hot_loop(n);
    return s + mix(n);
}
__attribute__((noinline)) int rec(int n)
{
    return n ? 1 + rec(n - 1) : mix(n);
}
int main(void)
{
    printf("%d\n", worker(10) + rec(3));
    return 0;
}
EOF2
[ -f "$T/trace.o" ] || cc -O2 -c -o "$T/trace.o" "$DIST/trace.c"
cc -O2 -g -finstrument-functions -o "$T/prog" "$T/prog.c" "$T/trace.o" -pthread
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/prog" > /dev/null
ok $? "the program, with hot_loop inlined into worker, runs traced"

rows() { sed -n 's/^ *\([0-9][0-9]*\) .* \([^ ]* ([^)]*)\)\( \[inlined: call line unknown\]\)\{0,1\} -> \(.*\)$/\1 \2\3 -> \4/p' "$1" | grep -v libc; }
"$CS" analyze "$T/tr" --exe "$T/prog" --format callers > "$T/callers"
is "$?:$(rows "$T/callers" | sort)" "0:1 main (prog.c:24) -> rec (prog.c:19)
1 main (prog.c:24) -> worker (prog.c:14)
1 rec (prog.c:20) -> mix (prog.c:3)
1 worker (prog.c:14) [inlined: call line unknown] -> hot_loop (prog.c:7)
1 worker (prog.c:16) -> mix (prog.c:3)
10 hot_loop (prog.c:10) -> mix (prog.c:3)
3 rec (prog.c:20) -> rec (prog.c:19)" \
    "hot_loop's call named by worker, its true caller, its line said unknown; mix's calls by their lines; rec's recursion an ordinary row"
is "$(grep -c 'main (prog.c:[0-9]*) -> hot_loop' "$T/callers")" "0" "main, which never calls hot_loop, is not named as its caller"
"$CS" analyze "$T/tr" --exe "$T/prog" --format callers --jobs 2 > "$T/callers2"
is "$(rows "$T/callers2" | sort)" "$(rows "$T/callers" | sort)" "--jobs 2: the same rows"
exit $_failed
