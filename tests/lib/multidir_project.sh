# multidir_project.sh - examples/multidir set up by `callsight init --build
# make`, for the tests of choosing what to trace (tests/select/).  Source it
# after lib.sh, then call multidir_project (one check: init succeeds); it
# sets ROOT (the source tree), P (the project, a copy in $T) and M (make in
# it, with this build's callsight).  cmake_project sets up a second copy
# with the CMake wiring.
multidir_project() {
    ROOT=$(cd "$TESTS/.." && pwd)
    P=$T/p
    cp -R "$ROOT/examples/multidir" "$P"
    "$CS" init --build make "$P" > "$T/init.out" 2>&1
    ok $? "callsight init --build make on the example"
    M="make -C $P CALLSIGHT=$CS"
}

# The rows (name file calls) of `include-func run 1`: run and what it
# calls, the macro's call and the header's inline one included, not the
# pointer's (examples/multidir/main.c's table, ROUNDS 100).
RUN1_ROWS="clamp app.h 100
mix hash_mix.c 100
net_a a.c 100
net_data data.c 100
run main.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100"

# traced NAME [CONFIG]: with CONFIG, write it to trace.config first; then
# build app.instr, run it traced, and put "name file calls" of its report
# in $T/NAME.rows (make's output in $T/NAME.make).
traced() {
    [ $# -lt 2 ] || printf '%s\n' "$2" > "$P/trace.config"
    $M instrument > "$T/$1.make" 2>&1 || { sed 's/^/# /' "$T/$1.make"; return 1; }
    rm -rf "$T/tr-$1"
    (cd "$P" && TRACE_ENABLE=1 TRACE_DIR="$T/tr-$1" ./app.instr > /dev/null) &&
        func_rows "$T/tr-$1" "$P/app.instr" > "$T/$1.rows"
}

# refused NAME CONFIG WHAT LINE: with CONFIG (printf %b) as trace.config,
# make instrument fails (one check, WHAT) and its output ($T/NAME.make)
# has LINE as a whole line (a second check, naming what it said).
refused() {
    printf '%b' "$2" > "$P/trace.config"
    $M instrument > "$T/$1.make" 2>&1
    ok $((! $?)) "$3"
    grep -qxF -- "$4" "$T/$1.make"
    ok $? "with file:line: $(grep 'callsight flags' "$T/$1.make")"
}

# compiled NAME: the objects that make run NAME compiled, sorted.
compiled() { grep -o " -c -o '\?callsight-obj/[^ ']*" "$T/$1.make" | sed "s|.* -c -o '\?callsight-obj/||" | sort | tr '\n' ' '; }

# cmake_project CONFIG BUILD-LOG: examples/multidir again, in C=$T/c, set up
# by `callsight init --build cmake` with CONFIG as its trace.config, then
# configured and built (--target instr); cmake's output in $T/cm.cfg and
# BUILD-LOG.  Its status is the configure's and the build's.
cmake_project() {
    C=$T/c
    cp -R "$ROOT/examples/multidir" "$C"
    "$CS" init --build cmake "$C" > /dev/null 2>&1
    printf '%s\n' "$1" > "$C/trace.config"
    (cd "$C" && cmake -S . -B build -DCALLSIGHT_TOOL="$CS" > "$T/cm.cfg" 2>&1 &&
        cmake --build build --target instr > "$2" 2>&1)
}
