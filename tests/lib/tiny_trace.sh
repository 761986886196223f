# tiny_trace.sh - a tiny real program and a synthetic trace of it whose every
# number is known, shared by the tests of analyze's output formats.  Source
# it after lib.sh (it uses $T and $TESTS).
#
# tiny_build: compile $T/tiny (non-PIE, -g, one-line functions, so any
# address inside one names its line) and set M, W, H (main, work, helper)
# and MS, WS (call sites inside main and work).
#
# named_trace DIR: pid 500, two threads, ns timestamps:
#   thread 500 "main":     main(0-10ms) { work(0.1-1.1) { helper(0.2-0.7) }
#                          helper(2.0-2.3) }
#   thread 501 "worker-1": work(5.0-7.0) { helper(5.5-6.0) }; 3 events lost
#                          at 7.05, leaving one frame open (unknown: a
#                          placeholder) in which helper(7.1-7.2) runs, closed
#                          by an orphaned exit at 7.3; work(8.0-) { helper
#                          (8.1-8.4) } never closed.
# Self time: main 8.7 ms, work 2.0 ms, helper 1.7 ms; 12.4 ms in all.

tiny_build() {
    cat >"$T/tiny.c" <<'C'
#include <stdio.h>
static int helper(int x) { return x * 3 + 1; }
int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += helper(i); return s; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", work(argc)); return 0; }
C
    cc -g -O0 -fno-pie -no-pie -o "$T/tiny" "$T/tiny.c" || { echo "Bail out! cc failed"; exit 1; }
    M=$(tiny_addr main) W=$(tiny_addr work) H=$(tiny_addr helper)
    MS=$(printf '0x%x' $((M + 8))) WS=$(printf '0x%x' $((W + 8)))
}

tiny_addr() { nm "$T/tiny" | awk -v f="$1" '$3 == f { print "0x" $1 }'; }

named_trace() {
    mkdir -p "$1"
    perl "$TESTS/tools/tracegen.pl" "$1/trace.500.500.0.bin" <<S
H pid=500
N 500 main
E 0 $M 500
E 100000 $W 500 $MS
E 200000 $H 500 $WS
X 700000 $H 500
X 1100000 $W 500
E 2000000 $H 500 $MS
X 2300000 $H 500
X 10000000 $M 500
S
    perl "$TESTS/tools/tracegen.pl" "$1/trace.500.501.0.bin" <<S
H pid=500
N 501 worker-1
E 5000000 $W 501 $MS
E 5500000 $H 501 $WS
X 6000000 $H 501
X 7000000 $W 501
M 7050000 16 3 501
M 7050000 17 0x100000000 501
E 7100000 $H 501 $WS
X 7200000 $H 501
X 7300000 $W 501
E 8000000 $W 501 $MS
E 8100000 $H 501 $WS
X 8400000 $H 501
S
}
