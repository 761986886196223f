#!/usr/bin/env bash
# run.sh - callsight's benchmarks: `make bench` (or `make bench QUICK=1`).
#
#   bench/run.sh BUILD [--quick]
#
# Runs every measurement of bench/README.md against the programs in BUILD
# (built by `make bench`) and prints one table; each row names what it
# measured, the unit, and what it is compared with.  Progress goes to
# stderr, the table to stdout.  --quick runs every row once with short runs
# (under a minute): the numbers are then only a smoke test of the harness.
#
# Everything runs on 127.0.0.1 with a free port, every command under a time
# limit, and every process, shm segment and file it starts or makes is
# removed on exit, also when interrupted.  Timings here never feed a test.
set -u

BUILD=${1:?usage: bench/run.sh BUILD [--quick]}
QUICK=0
[ "${2:-}" = --quick ] && QUICK=1
B=$(cd "$BUILD" && pwd)
BB=$B/bench
CS=$B/callsight
TS=$B/trace_stream
WL=$B/examples/workload
T=$(mktemp -d "${TMPDIR:-/tmp}/callsight-bench.XXXXXX")
SHM_PREFIX=${BENCH_SHM_PREFIX:-/callsight-bench-$$} # a test names its own, to find what it left
RING=$((16 * 1024 * 1024)) # the default TRACE_SHM_SIZE
pids=""
shm_n=0
conns_done=0
SERVE_PID=""

cleanup() {
    for p in $pids $SERVE_PID; do kill "$p" 2>/dev/null; done
    for p in $pids $SERVE_PID; do wait "$p" 2>/dev/null; done
    rm -f /dev/shm"$SHM_PREFIX"-*
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "bench: $*" >&2; }
die() { echo "bench: error: $*" >&2; exit 1; }
# kv NAME FILE: the value of NAME=value in FILE (first occurrence).
kv() { tr ' ' '\n' < "$2" | sed -n "s/^$1=//p" | head -n 1; }
# calc EXPR: floating-point arithmetic.
calc() { awk "BEGIN { printf \"%s\", ($1) }"; }
fmt() { awk -v v="$2" "BEGIN { printf \"$1\", v }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for p in hookbench-plain hookbench-instr hookbench-pg clockcost runstat streamsend wirecodec topfollow; do
    [ -x "$BB/$p" ] || die "$BB/$p is missing: run 'make bench'"
done
[ -x "$CS" ] && [ -x "$TS" ] && [ -x "$WL" ] || die "build first: make bench"
HAVE_UFTRACE=0
command -v uftrace > /dev/null 2>&1 && HAVE_UFTRACE=1

NPROC=$(nproc)
MT=$((NPROC > 2 ? NPROC : 2))
if [ $QUICK = 1 ]; then
    RUNS=3; CALLS=200000; CAP_SECS=0.5; DEMO_ITERS=16; AN_ITERS=25; AN_SMALL_ITERS=3
    HB_AN_CALLS=500000; INGEST_RUNS=1
else
    RUNS=5; CALLS=5000000; CAP_SECS=2; DEMO_ITERS=16; AN_ITERS=254; AN_SMALL_ITERS=25
    HB_AN_CALLS=5000000; INGEST_RUNS=3
fi

# ---- the table ----------------------------------------------------------
# A markdown table per section, so docs/performance.md can hold it as is.
TABLE=$T/table
: > "$TABLE"
row() { # row ID MEASURED VALUE UNIT AGAINST
    printf '| %-4s | %-58s | %11s | %-11s | %s |\n' "$1" "$2" "$3" "$4" "$5" | tee -a "$TABLE" >&2
}
section() { # section TITLE [LINE...]: heading, what the rows measured, table head
    say "$1"
    printf '\n### %s\n\n' "$1" >> "$TABLE"
    shift
    [ $# -gt 0 ] && printf '%s\n' "$@" "" >> "$TABLE"
    printf '| %-4s | %-58s | %11s | %-11s | %s |\n' id measured value unit "compared with, notes" >> "$TABLE"
    printf '|------|%s|%s:|%s|---|\n' "$(printf %60s | tr ' ' -)" "$(printf %12s | tr ' ' -)" \
        "$(printf %13s | tr ' ' -)" >> "$TABLE"
}

# serve_cpu_us: serve's CPU time so far (user + sys, from /proc).
serve_cpu_us() {
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1e6 / hz }' "/proc/$SERVE_PID/stat"
}

# settle: let the kernel finish writing back what earlier runs wrote (on a
# small machine its flusher threads otherwise take CPU from the next timed
# run), then pause a moment.
settle() {
    sync
    sleep 0.2
}

# ---- serve and streaming runs -------------------------------------------
start_serve() {
    "$CS" serve --host 127.0.0.1 --port 0 --out "$T/srv" --quiet > "$T/serve.log" 2>&1 &
    SERVE_PID=$!
    SERVE_PORT=$("$(dirname "$0")/../scripts/serve-port.sh" "$T/serve.log") ||
        die "serve did not start: $(cat "$T/serve.log")"
}

# wait_conns N: until serve has closed N connections in all (bounded).
wait_conns() {
    for _ in $(seq 1200); do
        [ "$(grep -c ' closed (' "$T/serve.log")" -ge "$1" ] && return 0
        sleep 0.05
    done
    die "serve did not finish connection $1: $(tail -n 3 "$T/serve.log")"
}

# stream_run RING_BYTES KEEP_DIR CMD...: trace_stream (creating a ring of
# RING_BYTES) forwards CMD's events to serve; CMD's stdout -> $T/prog.out.
# With DRAIN_AFTER=1 the tracer creates the ring itself and trace_stream
# starts only once CMD has ended (the run has no consumer beside it).
# Sets ST_FWD ST_CHUNKS ST_WIRE ST_DROP (trace_stream's summary),
# ST_CPU_US ST_WALL_NS (trace_stream's rusage) and ST_SERVE_CPU_US.  KEEP_DIR "-" deletes serve's
# files, else moves them there.  TS_ARGS: more trace_stream options (e.g.
# "--codec none").
stream_run() {
    local size=$1 keep=$2 tsp
    shift 2
    shm_n=$((shm_n + 1))
    local shm=$SHM_PREFIX-$shm_n
    local serve0
    serve0=$(serve_cpu_us)
    if [ "${DRAIN_AFTER:-0}" = 1 ]; then
        TRACE_ENABLE=1 TRACE_SHM=$shm TRACE_SHM_SIZE=$size timeout 600 "$@" > "$T/prog.out" ||
            die "traced run failed: $*"
    fi
    TRACE_SHM_SIZE=$size "$BB/runstat" "$T/ts.rusage" timeout 600 "$TS" --quiet ${TS_ARGS:-} "$shm" 127.0.0.1 "$SERVE_PORT" \
        2> "$T/ts.err" &
    tsp=$!
    pids="$pids $tsp"
    if [ "${DRAIN_AFTER:-0}" != 1 ]; then
        for _ in $(seq 500); do [ -e "/dev/shm$shm" ] && break; sleep 0.01; done
        [ -e "/dev/shm$shm" ] || die "trace_stream did not create its ring: $(cat "$T/ts.err")"
        TRACE_ENABLE=1 TRACE_SHM=$shm timeout 600 "$@" > "$T/prog.out" || die "traced run failed: $*"
    fi
    for _ in $(seq 1200); do kill -0 "$tsp" 2> /dev/null || break; sleep 0.05; done
    kill -0 "$tsp" 2> /dev/null && die "trace_stream did not finish within 60 s of the traced run"
    wait "$tsp" || die "trace_stream failed: $(cat "$T/ts.err")"
    pids=${pids% $tsp}
    local s
    s=$(grep 'forwarded' "$T/ts.err" | tail -n 1)
    ST_FWD=$(echo "$s" | sed -n 's/.*forwarded \([0-9]*\) events.*/\1/p')
    ST_CHUNKS=$(echo "$s" | sed -n 's/.* in \([0-9]*\) chunks.*/\1/p')
    ST_WIRE=$(echo "$s" | sed -n 's/.*(\([0-9]*\) bytes on the wire).*/\1/p')
    ST_DROP=$(echo "$s" | sed -n 's/.*dropped \([0-9]*\).*/\1/p')
    [ -n "$ST_FWD" ] && [ -n "$ST_DROP" ] || die "no summary from trace_stream: $(cat "$T/ts.err")"
    ST_CPU_US=$(($(kv user_us "$T/ts.rusage") + $(kv sys_us "$T/ts.rusage")))
    ST_WALL_NS=$(kv wall_ns "$T/ts.rusage")
    conns_done=$((conns_done + 1))
    wait_conns $conns_done
    ST_SERVE_CPU_US=$(calc "$(serve_cpu_us) - $serve0")
    if [ "$keep" = - ]; then
        rm -f "$T"/srv/trace.stream.*
    else
        mkdir -p "$keep" && mv "$T"/srv/trace.stream.* "$keep"/
    fi
}

# ---- machine ------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
FS=$(stat -f -c %T "$T")
GIT=$(cd "$(dirname "$0")/.." && git describe --always --dirty 2>/dev/null || echo unknown)
# cpu_jiffies: "busy steal total" over all CPUs so far, from /proc/stat.
cpu_jiffies() {
    awk '/^cpu / { b = $2 + $3 + $4 + $7 + $8; print b, $9, b + $5 + $6 + $9 }' /proc/stat
}
read -r BUSY0 STEAL0 TOTAL0 < <(cpu_jiffies)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

start_serve

# ---- 1. hook cost -------------------------------------------------------
"$BB/clockcost" > "$T/clock.out"
section "1. Hook cost" \
    "bench/hookbench.c: work() (~60 cycles of arithmetic, noinline) called in a tight loop, $CALLS calls per thread;" \
    "ns/event = (median traced loop time - median untraced loop time) / events, over $RUNS interleaved runs;" \
    "loop time = wall time of each thread's loop, summed over threads; events = 2 per call (enter + exit);" \
    "'cpu' = the same from the threads' CPU time (CLOCK_THREAD_CPUTIME_ID): the gap to the wall figure is time spent waiting for a CPU;" \
    "'user', 'sys' = the same from the threads' user and system time (getrusage RUSAGE_THREAD)"

# hook_once CONFIG THREADS: one run; appends the threads' summed loop and CPU ns.
hook_once() {
    local cfg=$1 th=$2 args=(--threads "$2" --calls "$CALLS")
    local whole=$((CALLS * 2 * th * 32 + RING))
    settle
    case $cfg in
    plain) timeout 600 "$BB/hookbench-plain" "${args[@]}" > "$T/prog.out" ;;
    off) env -u TRACE_ENABLE timeout 600 "$BB/hookbench-instr" "${args[@]}" > "$T/prog.out" ;;
    file)
        TRACE_ENABLE=1 TRACE_DIR="$T/files" TRACE_MAX_MB=1000000 timeout 600 "$BB/hookbench-instr" "${args[@]}" \
            > "$T/prog.out"
        rm -rf "$T/files"
        ;;
    ctl0 | ctl4096) # live control: the block there, nothing applied / 4096 functions off (not work())
        TRACE_CONTROL=1 TRACE_ENABLE=1 TRACE_DIR="$T/files" TRACE_MAX_MB=1000000 timeout 600 "$BB/hookbench-instr" \
            "${args[@]}" --ctl-off "${cfg#ctl}" > "$T/prog.out"
        rm -rf "$T/files"
        ;;
    summary)
        TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/sum" timeout 600 "$BB/hookbench-instr" "${args[@]}" \
            > "$T/prog.out"
        rm -rf "$T/sum"
        ;;
    stream) stream_run $RING - "$BB/hookbench-instr" "${args[@]}" ;;
    sumstream)
        TRACE_MODE=summary stream_run $RING - "$BB/hookbench-instr" "${args[@]}"
        echo "$ST_WIRE" >> "$T/wire.$cfg.$th"
        ;;
    bigring) stream_run $whole - "$BB/hookbench-instr" "${args[@]}" ;;
    after) DRAIN_AFTER=1 stream_run $whole - "$BB/hookbench-instr" "${args[@]}" ;;
    uftrace)
        timeout 600 uftrace record -d "$T/uftrace.data" "$BB/hookbench-pg" "${args[@]}" > "$T/prog.out" 2> "$T/uftrace.err"
        rm -rf "$T/uftrace.data"
        ;;
    esac || die "hook run $cfg failed"
    case $cfg in stream | bigring | after | sumstream) echo "$ST_DROP $ST_FWD" >> "$T/drops.$cfg.$th" ;; esac
    kv thread_ns "$T/prog.out" >> "$T/ns.$cfg.$th"
    kv cpu_ns "$T/prog.out" >> "$T/cpu.$cfg.$th"
    kv user_ns "$T/prog.out" >> "$T/user.$cfg.$th"
    kv sys_ns "$T/prog.out" >> "$T/sys.$cfg.$th"
}

CONFIGS="plain off file ctl0 ctl4096 summary sumstream stream bigring after"
[ $HAVE_UFTRACE = 1 ] && CONFIGS="$CONFIGS uftrace"
for th in 1 $MT; do
    for r in $(seq $RUNS); do # interleaved, so drift hits every config alike
        say "hook cost: $th thread(s), run $r of $RUNS"
        for cfg in $CONFIGS; do hook_once $cfg $th; done
    done
done

row C0 "cost of one clock read on this machine: rdtsc" "$(fmt %.1f "$(kv counter_ns "$T/clock.out")")" "ns" \
    "floor under any tracer's per-event cost (clock_gettime: $(kv mono_ns "$T/clock.out") ns)"
C0_NS=$(kv counter_ns "$T/clock.out")
declare -A HOOK HOOKCPU HOOKUSR HOOKSYS
for th in 1 $MT; do
    ev=$((2 * CALLS * th))
    base=$(median < "$T/ns.plain.$th")
    basecpu=$(median < "$T/cpu.plain.$th")
    baseusr=$(median < "$T/user.plain.$th")
    basesys=$(median < "$T/sys.plain.$th")
    for cfg in $CONFIGS; do
        HOOK[$cfg.$th]=$(calc "($(median < "$T/ns.$cfg.$th") - $base) / $ev")
        HOOKCPU[$cfg.$th]=$(calc "($(median < "$T/cpu.$cfg.$th") - $basecpu) / $ev")
        HOOKUSR[$cfg.$th]=$(calc "($(median < "$T/user.$cfg.$th") - $baseusr) / $ev")
        HOOKSYS[$cfg.$th]=$(calc "($(median < "$T/sys.$cfg.$th") - $basesys) / $ev")
    done
done
for th in 1 $MT; do
    base=$(median < "$T/ns.plain.$th")
    st=${HOOK[stream.$th]}
    id=H1
    [ "$th" -gt 1 ] && id=HM
    tn="$th thread$([ "$th" -gt 1 ] && echo s)"
    # notes CONFIG: ratio to stream mode, then the CPU figure
    notes() {
        calc "${HOOK[$1.$th]} / $st" | awk -v id=$id -v c="${HOOKCPU[$1.$th]}" \
            '{ printf "%.2fx callsight stream (%s3); cpu %.1f", $1, id, c }'
    }
    dropinfo() {
        awk '{ d += $1; f += $2 } END { printf "%.1f%% of events dropped over the runs", 100 * d / (d + f) }' "$T/drops.$1.$th"
    }
    if [ "$th" = 1 ]; then
        row "${id}0" "untraced: work() call, plain -O2 build, $tn" "$(fmt %.1f "$(calc "$base / $CALLS")")" "ns/call" \
            "the baseline the rows below subtract"
    else
        row "${id}0" "untraced: work() call, plain -O2 build, $tn" "$(fmt %.1f "$(calc "$base / ($CALLS * $th)")")" \
            "ns/call" "$(fmt %.2f "$(calc "$(median < "$T/ns.plain.1") / $CALLS / ($base / ($CALLS * $th))")")x one thread's speed per thread: how parallel this machine's $NPROC CPUs really are"
    fi
    row "${id}1" "callsight compiled in, TRACE_ENABLE unset, $tn" "$(fmt %.1f "${HOOK[off.$th]}")" "ns/event" "$(notes off)"
    row "${id}2" "callsight file mode ($FS), $tn" "$(fmt %.1f "${HOOK[file.$th]}")" "ns/event" "$(notes file)"
    # The kernel's write path alone: file mode's system time over the
    # plain build's, beside its user time (the hooks, and the flush's own
    # work), so a change to either shows apart.
    row "${id}2s" "file mode's system time (the kernel's write path), $tn" "$(fmt %.1f "${HOOKSYS[file.$th]}")" \
        "ns/event" "user $(fmt %.1f "${HOOKUSR[file.$th]}") (hooks and flush); ${id}2 cpu $(fmt %.1f "${HOOKCPU[file.$th]}"); stream mode (${id}5) sys $(fmt %.1f "${HOOKSYS[after.$th]}"), user $(fmt %.1f "${HOOKUSR[after.$th]}"); getrusage RUSAGE_THREAD, medians"
    row "${id}3" "callsight stream mode, 16 MiB ring, trace_stream -> serve, $tn" "$(fmt %.1f "$st")" "ns/event" \
        "$(notes stream); $(dropinfo stream)"
    row "${id}4" "callsight stream mode, ring holding the whole run, $tn" "$(fmt %.1f "${HOOK[bigring.$th]}")" \
        "ns/event" "$(notes bigring); $(dropinfo bigring)"
    row "${id}5" "the same, drained only after the run (hooks + ring copy alone)" "$(fmt %.1f "${HOOK[after.$th]}")" \
        "ns/event" "$(notes after); $(dropinfo after)"
    row "${id}8" "file mode with live control's block (TRACE_CONTROL=1), nothing applied, $tn" \
        "$(fmt %.1f "${HOOK[ctl0.$th]}")" "ns/event" \
        "$(notes ctl0); $(fmt %+.1f "$(calc "${HOOK[ctl0.$th]} - ${HOOK[file.$th]}")") vs ${id}2, cpu $(fmt %+.1f "$(calc "${HOOKCPU[ctl0.$th]} - ${HOOKCPU[file.$th]}")")"
    row "${id}9" "the same with 4096 functions off (not work(): every hook probes the table), $tn" \
        "$(fmt %.1f "${HOOK[ctl4096.$th]}")" "ns/event" \
        "$(notes ctl4096); $(fmt %+.1f "$(calc "${HOOK[ctl4096.$th]} - ${HOOK[ctl0.$th]}")") vs ${id}8, cpu $(fmt %+.1f "$(calc "${HOOKCPU[ctl4096.$th]} - ${HOOKCPU[ctl0.$th]}")")"
    row "${id}7" "callsight summary mode (TRACE_MODE=summary, file), $tn" "$(fmt %.1f "${HOOK[summary.$th]}")" \
        "ns/event" "$(notes summary); per-function aggregates on the device instead of events"
    row "${id}7s" "summary mode streamed (16 MiB ring, trace_stream -> serve), $tn" \
        "$(fmt %.1f "${HOOK[sumstream.$th]}")" "ns/event" \
        "$(notes sumstream); $(median < "$T/wire.sumstream.$th") bytes on the wire per run (median; the wire rate over 30 s is S10's); $(dropinfo sumstream)"
    if [ $HAVE_UFTRACE = 1 ]; then
        row "${id}6" "uftrace record, -pg build of the same program, $tn" "$(fmt %.1f "${HOOK[uftrace.$th]}")" \
            "ns/event" "$(notes uftrace); $(uftrace --version | head -n 1 | cut -d' ' -f1-2)"
    else
        row "${id}6" "uftrace record, -pg build of the same program, $tn" "skipped" "-" \
            "uftrace not installed (full 'make bench' installs it: scripts/deps.sh install bench)"
    fi
done

# ---- 2. streaming capacity ---------------------------------------------
section "2. Streaming capacity" \
    "The default 16 MiB ring + trace_stream (zstd level 1, coded chunks: its defaults) + serve on 127.0.0.1, all on this machine;" \
    "producer: hookbench --light (tick(): nearly all of a call is the hooks), paced in 1 ms slots, ${CAP_SECS} s per step"

# cap_step THREADS RATE: one paced run; sets CAP_OK (1 = no drops and the
# producer kept >= 95% of the rate), CAP_WHY, CAP_ACH (events/s achieved).
cap_step() {
    settle
    stream_run $RING - "$BB/hookbench-instr" --light --threads "$1" --seconds "$CAP_SECS" --rate "$2"
    local ev wall
    ev=$(kv events "$T/prog.out")
    wall=$(kv wall_ns "$T/prog.out")
    CAP_ACH=$(calc "$ev / ($wall / 1e9)")
    CAP_OK=1
    CAP_WHY="ok"
    if [ "$ST_DROP" -ne 0 ]; then
        CAP_OK=0
        CAP_WHY="dropped $ST_DROP"
    elif [ "$(calc "$CAP_ACH < 0.95 * $2")" = 1 ]; then
        CAP_OK=0
        CAP_WHY="producer reached only $(fmt %.1f "$(calc "$CAP_ACH / 1e6")")M/s"
    fi
    CAP_CPU_PER_M=$(calc "$ST_CPU_US / 1000 / ($ST_FWD / 1e6)")
    CAP_SERVE_PER_M=$(calc "$ST_SERVE_CPU_US / 1000 / ($ST_FWD / 1e6)")
    CAP_PROD_PER_M=$(calc "$(kv cpu_ns "$T/prog.out") / 1e6 / ($ST_FWD / 1e6)")
    CAP_WIRE=$(calc "$ST_WIRE / $ST_FWD")
    say "capacity: $1 thread(s) at $(calc "$2 / 1e6")M events/s: $CAP_WHY"
}

# capacity THREADS: a ladder of rates up to the first failure, then two
# bisection steps; sets CAP_BEST (events/s, 0 if even the lowest failed),
# CAP_STEPS (what was tried), CAP_FAIL_WHY, and the CPU and wire figures of
# the best step.
capacity() {
    local th=$1 lo=0 hi=0 r
    local ladder="2 4 6 8 10 12 14 16 20 24 28 32 40"
    [ $QUICK = 1 ] && ladder="1"
    CAP_STEPS=""
    CAP_FAIL_WHY="none failed up to the top of the ladder"
    for r in $ladder; do
        cap_step "$th" $((r * 1000000))
        CAP_STEPS="$CAP_STEPS ${r}M:$([ $CAP_OK = 1 ] && echo ok || echo fail)"
        if [ $CAP_OK = 1 ]; then
            lo=$((r * 1000000)); BEST_CPU=$CAP_CPU_PER_M; BEST_WIRE=$CAP_WIRE; BEST_SERVE=$CAP_SERVE_PER_M; BEST_PROD=$CAP_PROD_PER_M
        else
            hi=$((r * 1000000)); CAP_FAIL_WHY="at ${r}M/s: $CAP_WHY"
            break
        fi
    done
    if [ $hi -gt 0 ] && [ $QUICK = 0 ]; then
        for _ in 1 2; do
            r=$(((lo + hi) / 2))
            cap_step "$th" $r
            CAP_STEPS="$CAP_STEPS $(fmt %.1f "$(calc "$r / 1e6")")M:$([ $CAP_OK = 1 ] && echo ok || echo fail)"
            if [ $CAP_OK = 1 ]; then
                lo=$r; BEST_CPU=$CAP_CPU_PER_M; BEST_WIRE=$CAP_WIRE; BEST_SERVE=$CAP_SERVE_PER_M; BEST_PROD=$CAP_PROD_PER_M
            else
                hi=$r; CAP_FAIL_WHY="at $(fmt %.1f "$(calc "$r / 1e6")")M/s: $CAP_WHY"
            fi
        done
    fi
    CAP_BEST=$lo
}

BEST_CPU=nan BEST_WIRE=nan BEST_SERVE=nan BEST_PROD=nan
capacity 1
CAP1=$CAP_BEST
row S1 "highest zero-drop event rate, 1 producer thread" "$(fmt %.1f "$(calc "$CAP1 / 1e6")")" "M events/s" \
    "target >= 10; first failure $CAP_FAIL_WHY; tried$CAP_STEPS"
CPU1=$BEST_CPU WIRE1=$BEST_WIRE SERVE1=$BEST_SERVE PROD1=$BEST_PROD
BEST_CPU=nan BEST_WIRE=nan BEST_SERVE=nan BEST_PROD=nan
capacity 8
CAP8=$CAP_BEST
row S2 "highest zero-drop event rate, 8 producer threads" "$(fmt %.1f "$(calc "$CAP8 / 1e6")")" "M events/s" \
    "target >= 10; first failure $CAP_FAIL_WHY; tried$CAP_STEPS"
# S2's ladder again through a version-3 ring (trace_stream --ring-version 3),
# whose writers all copy outside the lock, and through a plain version-2
# ring (--ring-version 2), whose writers all copy under it (the default
# before issue 33): the default, version 2 whose writers of this tree
# commit, against both in the same run.
TS_ARGS="--ring-version 3" capacity 8
CAP8V3=$CAP_BEST
row S2v3 "S2 through a version-3 ring (trace_stream --ring-version 3)" "$(fmt %.1f "$(calc "$CAP8V3 / 1e6")")" \
    "M events/s" "the ring on request: older tracers refuse it; S2v3 / S2 = $(fmt %.2f "$(calc "$CAP8V3 / ($CAP8 > 0 ? $CAP8 : 1)")"); first failure $CAP_FAIL_WHY; tried$CAP_STEPS"
TS_ARGS="--ring-version 2" capacity 8
CAP8V2=$CAP_BEST
row S2v2 "S2 through a plain version-2 ring (--ring-version 2: every writer copies under the lock)" \
    "$(fmt %.1f "$(calc "$CAP8V2 / 1e6")")" "M events/s" \
    "the default before issue 33; S2 / S2v2 = $(fmt %.2f "$(calc "$CAP8 / ($CAP8V2 > 0 ? $CAP8V2 : 1)")"); first failure $CAP_FAIL_WHY; tried$CAP_STEPS"

stream_run $RING - "$BB/hookbench-instr" --light --threads $MT --seconds "$CAP_SECS"
SAT=$(calc "$ST_FWD / ($(kv wall_ns "$T/prog.out") / 1e9)")
SAT_DROP=$(calc "100 * $ST_DROP / ($ST_DROP + $ST_FWD)")
row S3 "forwarded rate, $MT unpaced producer threads (all cores busy)" "$(fmt %.1f "$(calc "$SAT / 1e6")")" \
    "M events/s" "target >= 10; $(fmt %.1f "$SAT_DROP")% dropped (counted); events forwarded / producer run time; trace_stream had $(fmt %.0f "$(calc "$ST_CPU_US / 1e3 / ($(kv wall_ns "$T/prog.out") / 1e6) * 100")")% of one CPU"

stream_run $RING "$T/demo-stream" "$WL" $DEMO_ITERS 25 12 64 8
DEMO_WIRE=$(calc "$ST_WIRE / $ST_FWD")
DEMO_RATE=$(calc "$ST_WIRE / ($ST_WALL_NS / 1e9)") # bytes/s on the wire, event mode
DEMO_CPU=$(calc "$ST_CPU_US / 1000 / ($ST_FWD / 1e6)")
DEMO_NOTE="$ST_FWD events, mean chunk $(fmt %.0f "$(calc "$ST_FWD * 32 / $ST_CHUNKS / 1024")") KiB, dropped $ST_DROP"
TS_ARGS="--codec none" stream_run $RING - "$WL" $DEMO_ITERS 25 12 64 8
PLAIN_WIRE=$(calc "$ST_WIRE / $ST_FWD")
PLAIN_CPU=$(calc "$ST_CPU_US / 1000 / ($ST_FWD / 1e6)")
row S4 "wire bytes per event, demo workload (examples/workload, make demo)" "$(fmt %.2f "$DEMO_WIRE")" "bytes/event" \
    "target <= 1.5; raw 32; trace_stream's default (coded chunks, serve acked the codec); $DEMO_NOTE"
row S4p "the same with trace_stream --codec none (plain zstd chunks)" "$(fmt %.2f "$PLAIN_WIRE")" "bytes/event" \
    "$(fmt %.1f "$(calc "$PLAIN_WIRE / $DEMO_WIRE")")x S4; $ST_FWD events, dropped $ST_DROP"
# Summary mode on the wire: the demo workload made long enough to stream for
# 30 s (QUICK: 3 s), each process's threads merged by trace_stream and sent
# as increments, one snapshot a second (the defaults).
SUM_ITERS=$([ $QUICK = 1 ] && echo 200 || echo 2000)
export TRACE_MODE=summary
stream_run $RING - "$WL" $SUM_ITERS 25 12 64 8
unset TRACE_MODE
SUM_RATE=$(calc "$ST_WIRE / ($ST_WALL_NS / 1e9)")
SUM_SECS=$(calc "$ST_WALL_NS / 1e9")
row S10 "wire rate, summary mode (TRACE_MODE=summary), demo workload streaming for $(fmt %.0f "$SUM_SECS") s" \
    "$(fmt %.2f "$(calc "$SUM_RATE / 1024")")" "KB/s" \
    "target <= 4; $ST_WIRE bytes in all, dropped $ST_DROP; event mode (S4's run): $(fmt %.2f "$(calc "$DEMO_RATE / 1048576")") MB/s"
row S5 "wire bytes per event, hookbench producer at S1's rate" "$(fmt %.2f "$WIRE1")" "bytes/event" \
    "one function called in a loop: far more regular than real code"
row S6 "trace_stream CPU (user+sys) per million events, demo workload" \
    "$(fmt %.1f "$DEMO_CPU")" "ms/M events" "its own rusage (bench/runstat); with --codec none (S4p's run): $(fmt %.1f "$PLAIN_CPU")"
row S7 "trace_stream CPU (user+sys) per million events, at S1's rate" "$(fmt %.1f "$CPU1")" "ms/M events" \
    "1000 ms/M events = one CPU busy at 1M events/s; in the same run serve used $(fmt %.1f "$SERVE1") and the producer's threads $(fmt %.1f "$PROD1"): $(fmt %.2f "$(calc "($CPU1 + $SERVE1 + $PROD1) * $CAP1 / 1e9")") CPUs busy in all at S1's rate"

# L1: live control, the time from `callsight ctl DIR` to its effect.  A
# paced producer (1M events/s) streams through trace_stream --allow-control;
# ctl alternates --pause and --resume, and returns once the device says a
# thread applied the change (it applies at its next hook), so its wall time,
# process start included, bounds the time to effect from above.
CTL_CHANGES=$([ $QUICK = 1 ] && echo 10 || echo 100)
say "live control: $CTL_CHANGES changes through serve"
shm_n=$((shm_n + 1))
CTL_SHM=$SHM_PREFIX-$shm_n
"$TS" --quiet --allow-control "$CTL_SHM" 127.0.0.1 "$SERVE_PORT" 2> "$T/ctl.ts.err" &
ctl_ts=$!
pids="$pids $ctl_ts"
for _ in $(seq 500); do [ -e "/dev/shm$CTL_SHM" ] && break; sleep 0.01; done
TRACE_ENABLE=1 TRACE_SHM=$CTL_SHM timeout 600 "$BB/hookbench-instr" --light --seconds $((CTL_CHANGES / 5 + 2)) \
    --rate 1e6 > /dev/null &
ctl_prog=$!
pids="$pids $ctl_prog"
for _ in $(seq 500); do "$CS" ctl "$T/srv" --list 2> /dev/null | grep -q 'takes control' && break; sleep 0.01; done
: > "$T/ctl.ms"
CTL_FAILED=0
for i in $(seq "$CTL_CHANGES"); do
    t0=$(date +%s%N)
    if "$CS" ctl "$T/srv" $([ $((i % 2)) = 1 ] && echo --pause || echo --resume) > /dev/null 2>&1; then
        echo "$(calc "($(date +%s%N) - $t0) / 1e6")" >> "$T/ctl.ms"
    else
        CTL_FAILED=$((CTL_FAILED + 1))
    fi
done
wait "$ctl_prog" || true
wait "$ctl_ts" || true
pids=${pids% $ctl_prog}
pids=${pids% $ctl_ts}
conns_done=$((conns_done + 1))
wait_conns $conns_done
rm -f "$T"/srv/trace.stream.*
row L1 "live control: \`callsight ctl DIR\` to effect (applied by a thread), median of $(wc -l < "$T/ctl.ms") changes" \
    "$(fmt %.1f "$(median < "$T/ctl.ms")")" "ms" \
    "max $(fmt %.1f "$(sort -g "$T/ctl.ms" | tail -n 1)") ms; ctl's whole wall time (its process start, serve's relay, the device's answer) over 127.0.0.1, a 1M events/s producer; $CTL_FAILED of $CTL_CHANGES not applied"

# ---- 3. analyzer, top and serve ingest ----------------------------------
section "3. Analyzer, top and serve ingest" \
    "callsight analyze under bench/runstat (wall time, peak RSS from the kernel's rusage);" \
    "traces of the demo workload (25 threads, 14 functions) made here; events/s = events in the report's header / wall time;" \
    "A7: bench/topfollow.c replays A1's directory in torn pieces and times only top's refreshes (live_refresh), by CPU time"

say "analyzer: making the traces"
TRACE_ENABLE=1 TRACE_DIR="$T/an-files" TRACE_MAX_MB=1000000 timeout 600 "$WL" $AN_ITERS 25 12 64 8 > /dev/null ||
    die "workload (file mode) failed"
TRACE_ENABLE=1 TRACE_DIR="$T/an-small" timeout 600 "$WL" $AN_SMALL_ITERS 25 12 64 8 > /dev/null ||
    die "workload (small) failed"
stream_run $RING "$T/an-stream" "$WL" $AN_ITERS 25 12 64 8
AN_STREAM_DROP=$ST_DROP

# analyze_row ID WHAT EXE DIR [JOBS [NOTE]]: runs analyze once with --jobs JOBS
# (default 1: one core; "default": no --jobs, i.e. the CPUs online), prints
# the row; sets AN_RATE AN_RSS.  NOTE replaces the row's comparison's start.
analyze_row() {
    local jobs=(--jobs "${5:-1}")
    [ "${5:-}" = default ] && jobs=()
    settle
    "$BB/runstat" "$T/an.rusage" timeout 600 "$CS" analyze "$4" --exe "$3" --top 5 "${jobs[@]}" > "$T/an.out" 2> "$T/an.err" ||
        die "analyze $4 failed: $(head -n 3 "$T/an.err")"
    local h ev wall cpu
    h=$(head -n 1 "$T/an.out")
    ev=$(echo "$h" | tr ' ' '\n' | sed -n 's/^events=//p')
    wall=$(kv wall_ns "$T/an.rusage")
    cpu=$(($(kv user_us "$T/an.rusage") + $(kv sys_us "$T/an.rusage")))
    AN_RATE=$(calc "$ev / ($wall / 1e9)")
    AN_RSS=$(kv maxrss_kb "$T/an.rusage")
    AN_EV=$ev
    row "$1" "$2, $(fmt %.1f "$(calc "$ev / 1e6")")M events" "$(fmt %.1f "$(calc "$AN_RATE / 1e6")")" "M events/s" \
        "${6:-target >= 50 (uftrace report: A6)}; peak RSS $((AN_RSS / 1024)) MiB; CPU $(fmt %.2f "$(calc "$cpu / 1e6")") s of $(fmt %.2f "$(calc "$wall / 1e9")") s wall"
}
analyze_row A1 "analyze: serve's stream file(s), dropped $AN_STREAM_DROP" "$WL" "$T/an-stream"
AN_RATE_A1=$AN_RATE AN_EV_A1=$AN_EV
analyze_row A2 "analyze: per-thread files (file mode)" "$WL" "$T/an-files"
AN_RATE_A2=$AN_RATE RSS_BIG=$AN_RSS AN_EV_A2=$AN_EV
# --jobs 2 on the same traces: the ratio to the one-job rows just above.
# A1's trace is one connection, one series: it is cut into parts (issue 33).
analyze_row A1j "analyze --jobs 2: A1's stream file(s)" "$WL" "$T/an-stream" 2 "one series, cut into 2 parts"
AN_RATE_A1J=$AN_RATE
row A1r "analyze --jobs 2 / --jobs 1 on A1's trace, same run" "$(fmt %.2f "$(calc "$AN_RATE_A1J / $AN_RATE_A1")")" "x" \
    "target >= 1.7 (issue 33); one series in parts"
analyze_row A2j "analyze --jobs 2: A2's per-thread files" "$WL" "$T/an-files" 2 "target >= 1.7x A2"
AN_RATE_A2J=$AN_RATE
row A2r "analyze --jobs 2 / --jobs 1 on A2's trace, same run" "$(fmt %.2f "$(calc "$AN_RATE_A2J / $AN_RATE_A2")")" "x" \
    "target >= 1.7 (issue 19); $(nproc) CPUs online, shared with whatever else runs"
# The default (no --jobs: every CPU online), as users run it (issue 33).
analyze_row A1d "analyze, default jobs ($(nproc) CPUs): A1's stream file(s)" "$WL" "$T/an-stream" default "target >= 1.7x A1"
AN_RATE_A1D=$AN_RATE
row A1dr "analyze default jobs / --jobs 1 on A1's trace, same run" "$(fmt %.2f "$(calc "$AN_RATE_A1D / $AN_RATE_A1")")" "x" \
    "target >= 1.7 (issue 33); one series in $(nproc) parts"
analyze_row A2d "analyze, default jobs ($(nproc) CPUs): A2's per-thread files" "$WL" "$T/an-files" default "target >= 1.7x A2"
AN_RATE_A2D=$AN_RATE
row A2dr "analyze default jobs / --jobs 1 on A2's trace, same run" "$(fmt %.2f "$(calc "$AN_RATE_A2D / $AN_RATE_A2")")" "x" \
    "target >= 1.7 (issue 33)"
analyze_row A3 "analyze: per-thread files, a trace 1/10 as long" "$WL" "$T/an-small"
RSS_SMALL=$AN_RSS
row A4 "analyze peak RSS, A2's trace vs A3's (10x the events)" "$(fmt %.2f "$(calc "$RSS_BIG / $RSS_SMALL")")" "x" \
    "1.00 = memory independent of trace length; $((RSS_BIG / 1024)) vs $((RSS_SMALL / 1024)) MiB"

# callsight ui on A2's trace (issue 36): U1 from opening the trace to the
# report's answer (analyze's JSON alone; the database and folded stacks are
# made after it, in the background), U2 until the database is there (the
# first timeline's answer), U3 the whole trace's timeline once made, U4 a
# 1 ms window's (a pan: 20 windows across the trace, median and max).
if command -v curl > /dev/null 2>&1; then
    say "ui: A2's trace through callsight ui's API"
    settle
    "$CS" ui "$T/an-files" --exe "$WL" --port 0 > "$T/ui.log" 2>&1 &
    UI_PID=$!
    pids="$pids $UI_PID"
    UI_URL=""
    for _ in $(seq 200); do
        UI_URL=$(grep -o 'http://[^#]*' "$T/ui.log" | head -n 1)
        [ -n "$UI_URL" ] && break
        sleep 0.05
    done
    [ -n "$UI_URL" ] || die "callsight ui did not start: $(head -c 200 "$T/ui.log")"
    ui_time() { curl -s -m 600 -o "$T/ui.body" -w '%{time_total}' "$UI_URL$1"; }
    U1=$(ui_time 'api/report?t=0')
    U2=$(ui_time 'api/timeline?t=0')
    U3=$(ui_time 'api/timeline?t=0')
    ui_time 'api/sources?t=0' > /dev/null
    UI_SPAN=$(sed -n 's/.*{"key": "span_ns", "value": \([0-9]*\)}.*/\1/p' "$T/ui.body" | head -n 1)
    UI_SPAN=${UI_SPAN:-0}
    : > "$T/ui.pan"
    for k in $(seq 0 19); do
        from=$(calc "int($UI_SPAN * $k / 20)")
        ui_time "api/timeline?t=0&from=$from&to=$((from + 1000000))" >> "$T/ui.pan"
        echo >> "$T/ui.pan"
    done
    kill -TERM "$UI_PID" 2> /dev/null
    wait "$UI_PID" 2> /dev/null
    pids=${pids% $UI_PID}
    row U1 "ui: opening A2's trace ($(fmt %.1f "$(calc "$AN_EV_A2 / 1e6")")M events) to the report's answer" \
        "$(fmt %.2f "$U1")" "s" "target <= 2 s (issue 36); analyze's JSON alone, the rest made after it"
    row U2 "ui: ... to the database's first answer (a timeline of the whole trace)" "$(fmt %.1f "$U2")" "s" \
        "made in the background once the report is out: analyze --format sqlite (Q1)"
    row U3 "ui: the whole trace's timeline, once made" "$(fmt %.1f "$(calc "$U3 * 1000")")" "ms" "only calls long enough to see"
    row U4 "ui: a 1 ms window of the timeline (a pan), median of 20 across the trace" \
        "$(fmt %.1f "$(calc "$(median < "$T/ui.pan") * 1000")")" "ms" "max $(fmt %.1f "$(calc "$(sort -g "$T/ui.pan" | tail -n 1) * 1000")") ms"
else
    U1=nan
fi

# The database of --format sqlite (docs/sql.md) against the sqlite3 shell
# given the same rows: Q1 is analyze's whole build (reading the traces,
# the pass, the rows, the indexes), Q2 the shell's .import of slice_data's
# rows as CSV into the same table, then the same indexes (docs/sql.md).
# The trace is the workload at twice A2's iterations: 10 M calls in the
# full run, 1 M in QUICK.
say "sqlite: the database of a 2x A2 trace, and the sqlite3 shell's .import"
TRACE_ENABLE=1 TRACE_DIR="$T/an-sql" TRACE_MAX_MB=1000000 timeout 600 "$WL" $((2 * AN_ITERS)) 25 12 64 8 > /dev/null ||
    die "workload (sqlite) failed"
settle
"$BB/runstat" "$T/q1.rusage" timeout 600 "$CS" analyze "$T/an-sql" --exe "$WL" --format sqlite -o "$T/q.db" 2> "$T/q1.err" ||
    die "analyze --format sqlite failed: $(head -n 3 "$T/q1.err")"
rm -rf "$T/an-sql"
Q_ROWS=$("$CS" sql "$T/q.db" --csv 'SELECT count(*) FROM slice_data' | sed 1d)
Q1_RATE=$(calc "$Q_ROWS / ($(kv wall_ns "$T/q1.rusage") / 1e9)")
Q1_RSS=$(kv maxrss_kb "$T/q1.rusage")
row Q1 "analyze --format sqlite: $(fmt %.1f "$(calc "$Q_ROWS / 1e6")")M calls, traces to indexed database" \
    "$(fmt %.2f "$(calc "$Q1_RATE / 1e6")")" "M rows/s" \
    "target >= Q2; peak RSS $((Q1_RSS / 1024)) MiB (target < 100 MB at 10 M calls); $(fmt %.2f "$(calc "$(kv wall_ns "$T/q1.rusage") / 1e9")") s"
if command -v sqlite3 > /dev/null 2>&1; then
    sqlite3 -csv "$T/q.db" 'SELECT * FROM slice_data' > "$T/q.csv" || die "sqlite3 could not export the rows"
    rm -f "$T/q.db"
    settle
    "$BB/runstat" "$T/q2.rusage" sqlite3 "$T/q2.db" \
        'CREATE TABLE slice_data (id INTEGER PRIMARY KEY, ts INTEGER, dur INTEGER, self_dur INTEGER, depth INTEGER, parent_id INTEGER, thread_id INTEGER, function_id INTEGER, call_site INTEGER)' \
        ".import --csv $T/q.csv slice_data" \
        'CREATE INDEX slice_thread_ts ON slice_data (thread_id, ts)' 'CREATE INDEX slice_function ON slice_data (function_id)' \
        'CREATE INDEX slice_parent ON slice_data (parent_id)' 'CREATE INDEX slice_dur ON slice_data (dur)' > /dev/null 2>&1 ||
        die "sqlite3 .import failed"
    Q2_RATE=$(calc "$Q_ROWS / ($(kv wall_ns "$T/q2.rusage") / 1e9)")
    row Q2 "sqlite3 shell: .import of the same rows as CSV, same indexes" "$(fmt %.2f "$(calc "$Q2_RATE / 1e6")")" "M rows/s" \
        "Q1 / Q2 = $(fmt %.2f "$(calc "$Q1_RATE / $Q2_RATE")")x; $(sqlite3 --version | cut -d' ' -f1); peak RSS $(($(kv maxrss_kb "$T/q2.rusage") / 1024)) MiB"
    rm -f "$T/q.csv" "$T/q2.db"
else
    Q2_RATE=0
    row Q2 "sqlite3 shell: .import of the same rows as CSV" "skipped" "-" "the sqlite3 shell is not installed (scripts/deps.sh install bench)"
fi
rm -f "$T/q.db"

say "analyzer: hookbench traces for the comparison with uftrace report"
TRACE_ENABLE=1 TRACE_DIR="$T/hb-files" TRACE_MAX_MB=1000000 timeout 600 "$BB/hookbench-instr" --calls $HB_AN_CALLS \
    > /dev/null || die "hookbench (file mode) failed"
analyze_row A5 "analyze: hookbench per-thread file (1 function)" "$BB/hookbench-instr" "$T/hb-files"
rm -rf "$T/hb-files"
if [ $HAVE_UFTRACE = 1 ]; then
    timeout 600 uftrace record -d "$T/uftrace.data" "$BB/hookbench-pg" --calls $HB_AN_CALLS > /dev/null 2>&1 ||
        die "uftrace record failed"
    "$BB/runstat" "$T/uf.rusage" timeout 600 uftrace report -d "$T/uftrace.data" > "$T/uf.out" 2>&1 ||
        die "uftrace report failed: $(head -n 3 "$T/uf.out")"
    UF_EV=$((2 * HB_AN_CALLS))
    UF_WALL=$(kv wall_ns "$T/uf.rusage")
    UF_RATE=$(calc "$UF_EV / ($UF_WALL / 1e9)")
    row A6 "uftrace report on the same program's uftrace record, $(fmt %.1f "$(calc "$UF_EV / 1e6")")M events" \
        "$(fmt %.1f "$(calc "$UF_RATE / 1e6")")" "M events/s" \
        "A5 / A6 = $(fmt %.1f "$(calc "$AN_RATE / $UF_RATE")")x; peak RSS $(($(kv maxrss_kb "$T/uf.rusage") / 1024)) MiB"
    rm -rf "$T/uftrace.data"
else
    row A6 "uftrace report on the same program's uftrace record" "skipped" "-" \
        "uftrace not installed (full 'make bench' installs it: scripts/deps.sh install bench)"
fi

# top's refreshes on a growing stream (bench/topfollow.c): A1's directory
# replayed into a fresh one in pieces of ~TOP_PIECE events cut at any byte
# (0.1 s of a 10 M events/s stream each: top's shortest --interval, so the
# per-refresh costs weigh most), live_refresh after each; events per second
# of the refreshes' CPU time, so the other processes on this machine do not
# decide it.  topfollow fails unless it read analyze's (A1's) events exactly.
say "top: following A1's stream directory as it grows"
TOP_PIECE=$([ $QUICK = 1 ] && echo 100000 || echo 1000000)
: > "$T/top.rate"; : > "$T/top.wall"; : > "$T/top.min"
for r in $(seq $RUNS); do
    settle
    rm -rf "$T/top-work"
    timeout 600 "$BB/topfollow" "$T/an-stream" "$T/top-work" --exe "$WL" --piece-events $TOP_PIECE \
        --expect-events "$AN_EV_A1" > "$T/top.out" 2> "$T/top.err" ||
        die "topfollow failed: $(tail -n 3 "$T/top.err")"
    rm -rf "$T/top-work"
    echo "$(calc "$(kv events "$T/top.out") / ($(kv refresh_cpu_ns "$T/top.out") / 1e9)")" >> "$T/top.rate"
    echo "$(calc "$(kv events "$T/top.out") / ($(kv refresh_wall_ns "$T/top.out") / 1e9)")" >> "$T/top.wall"
    kv min_refresh_rate "$T/top.out" >> "$T/top.min"
done
TOP_RATE=$(median < "$T/top.rate")
mr() { fmt %.1f "$(calc "$1 / 1e6")"; }
row A7 "top's refreshes following A1's directory, ~$((TOP_PIECE / 1000))k-event pieces" "$(mr "$TOP_RATE")" \
    "M events/s" "target >= 10; per CPU second of live_refresh; median of $RUNS (range $(mr "$(sort -g "$T/top.rate" | head -n 1)")-$(mr "$(sort -g "$T/top.rate" | tail -n 1)")); wall $(mr "$(median < "$T/top.wall")"); slowest single refresh $(mr "$(median < "$T/top.min")") (median over runs); $(kv pieces "$T/top.out") refreshes read analyze's $AN_EV_A1 events exactly; peak RSS $(($(kv maxrss_kb "$T/top.out") / 1024)) MiB"

# ingest CONNS EVENTS_PER_CONN: median over INGEST_RUNS of streamsend's
# aggregate raw MB/s (10^6 bytes of 32-byte records per second of wall time).
ingest() {
    local r
    : > "$T/ingest.rates"
    for r in $(seq $INGEST_RUNS); do
        settle
        timeout 900 "$BB/streamsend" --conns "$1" --events "$2" ${SS_ARGS:-} 127.0.0.1 "$SERVE_PORT" "$T"/an-stream/trace.stream.*.bin \
            > "$T/ss.out" || die "streamsend failed"
        conns_done=$((conns_done + $1))
        wait_conns $conns_done
        rm -f "$T"/srv/trace.stream.*
        echo "$(calc "$(kv raw_bytes_per_conn "$T/ss.out") * $1 / ($(kv wall_ns "$T/ss.out") / 1e3)")" >> "$T/ingest.rates"
    done
    INGEST=$(median < "$T/ingest.rates")
    INGEST_EV=$(kv events_per_conn "$T/ss.out")
}
say "serve ingest"
IN_EV=$(( $(cat "$T"/an-stream/trace.stream.*.bin | wc -c) / 32 ))
ingest 1 $IN_EV
INGEST1=$INGEST
row S8 "serve ingest, 1 connection, $(fmt %.1f "$(calc "$INGEST_EV / 1e6")")M events (A1's), 1 MiB coded zstd-1 chunks" \
    "$(fmt %.0f "$INGEST")" "MB/s raw" "target >= 1000 per connection; median of $INGEST_RUNS; decompress + decode + write ($FS), until serve closes; $(fmt %.2f "$(calc "$(kv wire_bytes_per_conn "$T/ss.out") / $INGEST_EV")") wire bytes/event"
SS_ARGS="--codec 0" ingest 1 $IN_EV
row S8p "the same, plain zstd-1 chunks (trace_stream --codec none)" \
    "$(fmt %.0f "$INGEST")" "MB/s raw" "$(fmt %.2f "$(calc "$INGEST / $INGEST1")")x S8; median of $INGEST_RUNS; $(fmt %.2f "$(calc "$(kv wire_bytes_per_conn "$T/ss.out") / $INGEST_EV")") wire bytes/event"
ING8_EV=$((IN_EV / 4))
ingest 8 $ING8_EV
row S9 "serve ingest, 8 concurrent connections, $(fmt %.1f "$(calc "$INGEST_EV / 1e6")")M events each" \
    "$(fmt %.0f "$INGEST")" "MB/s raw" "all 8 together; $(fmt %.0f "$(calc "$INGEST / 8")") MB/s per connection; $NPROC cores for 8 connections"

# ---- 4. wire transforms (offline) --------------------------------------
WC_EVENTS=$([ $QUICK = 1 ] && echo 200000 || echo 100000000)
section "4. Wire bytes per event: reversible transforms before zstd, offline" \
    "bench/wirecodec.c on S4's stream file (demo workload, records in ring order), recompressed per chunk;" \
    "each transform works per chunk (a chunk still decodes alone) and every chunk was decoded and compared;" \
    "MB/s = raw MB per CPU second for transform + zstd (what trace_stream would spend), and for the transform alone"
"$BB/wirecodec" --events $WC_EVENTS --chunks 65536,1048576 --levels 1,3 "$T"/demo-stream/trace.stream.*.bin \
    > "$T/wc.out" || die "wirecodec failed (a transform did not round-trip?): $(tail -n 2 "$T/wc.out")"
n=0
while read -r line; do
    n=$((n + 1))
    echo "$line" > "$T/wc.line"
    c=$(kv chunk "$T/wc.line")
    row "W$(printf %02d $n)" "$(kv transform "$T/wc.line") + zstd -$(kv level "$T/wc.line"), $((c / 1024)) KiB chunks, $(kv events "$T/wc.line") events" \
        "$(kv bytes_per_event "$T/wc.line")" "bytes/event" "target <= 1.5; $(kv encode_mb_s "$T/wc.line") MB/s (transform alone $(kv transform_mb_s "$T/wc.line")); round-trip $( [ "$(kv verified "$T/wc.line")" = 1 ] && echo ok || echo FAILED)"
done < "$T/wc.out"

# ---- targets ------------------------------------------------------------
section "Targets (issues 7, 15, 17, 19)" "Met or missed, from the rows above."
verdict() { [ "$(calc "$1")" = 1 ] && echo MET || echo MISSED; }
BEST_WC=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    if (best == "" || f["bytes_per_event"] < best) { best = f["bytes_per_event"]; what = f["transform"] " zstd-" f["level"] " " f["chunk"] / 1024 " KiB" } }
    END { print best " (" what ")" }' "$T/wc.out")
# Issue 19's hook targets are read from CPU time against C0 (one rdtsc), the
# floor under any tracer that stamps each event: the hooks' cost beyond the
# clock read.  Stream mode's is H15/HM5 (hooks + ring copy, nothing else
# running); H13/HM3's CPU figure, with trace_stream and serve beside it,
# is in the notes with its own verdict.
over() { fmt %+.1f "$(calc "$1 - $C0_NS")"; }
for th in 1 $MT; do
    id=H1; [ "$th" -gt 1 ] && id=HM
    row "T${id#H}a" "hook: stream mode within 8 ns of C0 by CPU, $th thread(s)" \
        "$(verdict "${HOOKCPU[after.$th]} - $C0_NS <= 8")" "" \
        "${id}5 cpu $(fmt %.1f "${HOOKCPU[after.$th]}") vs C0 $(fmt %.1f "$C0_NS"): $(over "${HOOKCPU[after.$th]}") ns; with trace_stream and serve running (${id}3) cpu $(fmt %.1f "${HOOKCPU[stream.$th]}"): $(over "${HOOKCPU[stream.$th]}"), $(verdict "${HOOKCPU[stream.$th]} - $C0_NS <= 8")"
    row "T${id#H}d" "hook: summary mode within 8 ns of C0 by CPU, $th thread(s)" \
        "$(verdict "${HOOKCPU[summary.$th]} - $C0_NS <= 8")" "" \
        "${id}7 cpu $(fmt %.1f "${HOOKCPU[summary.$th]}") vs C0 $(fmt %.1f "$C0_NS"): $(over "${HOOKCPU[summary.$th]}") ns; streamed (${id}7s) cpu $(fmt %.1f "${HOOKCPU[sumstream.$th]}"): $(over "${HOOKCPU[sumstream.$th]}"), $(verdict "${HOOKCPU[sumstream.$th]} - $C0_NS <= 8")"
    if [ "$th" = 1 ]; then
        row T1b "hook: stream mode's wall time within 10% of file mode's, 1 thread" \
            "$(verdict "${HOOK[stream.1]} <= 1.10 * ${HOOK[file.1]}")" "" \
            "wall: H13 $(fmt %.1f "${HOOK[stream.1]}") vs H12 $(fmt %.1f "${HOOK[file.1]}") ns/event ($(fmt %.2f "$(calc "${HOOK[stream.1]} / ${HOOK[file.1]}")")x); hooks + ring copy alone (H15) $(fmt %.1f "${HOOK[after.1]}") ($(fmt %.2f "$(calc "${HOOK[after.1]} / ${HOOK[file.1]}")")x)"
    fi
    row "T${id#H}e" "hook: live control with 4096 functions <= 5 ns/event more than with none, by CPU, $th thread(s) (issue 31)" \
        "$(verdict "${HOOKCPU[ctl4096.$th]} - ${HOOKCPU[ctl0.$th]} <= 5")" "" \
        "${id}9 cpu $(fmt %.1f "${HOOKCPU[ctl4096.$th]}") vs ${id}8 $(fmt %.1f "${HOOKCPU[ctl0.$th]}"); nothing applied vs no control (${id}2): $(fmt %+.1f "$(calc "${HOOKCPU[ctl0.$th]} - ${HOOKCPU[file.$th]}")") ns"
    row "T${id#H}c" "hook: summary mode <= file mode (event mode), $th thread(s)" \
        "$(verdict "${HOOKCPU[summary.$th]} <= ${HOOKCPU[file.$th]}")" "" \
        "by CPU time: ${id}7 $(fmt %.1f "${HOOKCPU[summary.$th]}") vs ${id}2 $(fmt %.1f "${HOOKCPU[file.$th]}") ns/event; wall: $(fmt %.1f "${HOOK[summary.$th]}") vs $(fmt %.1f "${HOOK[file.$th]}")"
done
row Tc "capacity: zero drops at 10M events/s, 1 and 8 producer threads" \
    "$(verdict "$CAP1 >= 10e6 && $CAP8 >= 10e6")" "" "S1 $(fmt %.1f "$(calc "$CAP1 / 1e6")"), S2 $(fmt %.1f "$(calc "$CAP8 / 1e6")") M events/s"
row Td "capacity: forward >= 10M events/s with all cores busy" "$(verdict "$SAT >= 10e6")" "" \
    "S3 $(fmt %.1f "$(calc "$SAT / 1e6")") M events/s"
row Te "wire: <= 1.5 bytes/event on the demo workload" "$(verdict "$DEMO_WIRE <= 1.5")" "" \
    "S4 $(fmt %.2f "$DEMO_WIRE") (coded chunks; plain S4p $(fmt %.2f "$PLAIN_WIRE")); best offline transform W: $BEST_WC"
row Ti "wire: summary mode <= 4 KB/s on the demo workload streaming for 30 s" "$(verdict "$SUM_RATE <= 4096")" "" \
    "S10 $(fmt %.2f "$(calc "$SUM_RATE / 1024")") KB/s over $(fmt %.0f "$SUM_SECS") s$([ $QUICK = 1 ] && echo ' (QUICK: 3 s)'); event mode $(fmt %.2f "$(calc "$DEMO_RATE / 1048576")") MB/s"
row Tf "analyzer: >= 50M events/s on one core, serve's files and per-thread files (issue 19)" \
    "$(verdict "$AN_RATE_A1 >= 50e6 && $AN_RATE_A2 >= 50e6")" "" \
    "A1 $(fmt %.1f "$(calc "$AN_RATE_A1 / 1e6")"), A2 $(fmt %.1f "$(calc "$AN_RATE_A2 / 1e6")") M events/s (--jobs 1)"
row Tk "analyzer: --jobs 2 >= 1.7x one job's events/s (issue 19)" "$(verdict "$AN_RATE_A2J >= 1.7 * $AN_RATE_A2")" "" \
    "A2r $(fmt %.2f "$(calc "$AN_RATE_A2J / $AN_RATE_A2")")x on A2's $(ls "$T/an-files" | wc -l) series; A1r $(fmt %.2f "$(calc "$AN_RATE_A1J / $AN_RATE_A1")")x on A1's one series (in parts)"
row Tp "analyzer: the default (all CPUs) >= 1.7x one job's events/s on A1 and A2 (issue 33)" \
    "$(verdict "$AN_RATE_A1D >= 1.7 * $AN_RATE_A1 && $AN_RATE_A2D >= 1.7 * $AN_RATE_A2")" "" \
    "A1dr $(fmt %.2f "$(calc "$AN_RATE_A1D / $AN_RATE_A1")")x, A2dr $(fmt %.2f "$(calc "$AN_RATE_A2D / $AN_RATE_A2")")x; $(nproc) CPUs online"
row Tg "analyzer: memory independent of trace length" "$(verdict "$RSS_BIG <= 1.25 * $RSS_SMALL")" "" \
    "A4: 10x the events, $(fmt %.2f "$(calc "$RSS_BIG / $RSS_SMALL")")x the peak RSS (met: <= 1.25x)"
row Tq "sqlite: rows/s >= the sqlite3 shell's .import, peak RSS < 100 MB (issue 34)" \
    "$(verdict "$Q2_RATE > 0 && $Q1_RATE >= $Q2_RATE && $Q1_RSS < 100000")" "" \
    "Q1 $(fmt %.2f "$(calc "$Q1_RATE / 1e6")") vs Q2 $(fmt %.2f "$(calc "$Q2_RATE / 1e6")") M rows/s, $((Q1_RSS / 1024)) MiB at $(fmt %.1f "$(calc "$Q_ROWS / 1e6")")M calls"
row Tu "ui: a trace's report answered within 2 s of opening it (issue 36)" "$(verdict "$U1 <= 2")" "" \
    "U1 $(fmt %.2f "$U1") s on A2's trace; the timeline's pans U4 (median) after the database, U2"
row Th "serve: >= 1 GB/s of raw events per connection" "$(verdict "$INGEST1 >= 1000")" "" \
    "S8 $(fmt %.0f "$INGEST1") MB/s"
row Tj "top: keeps up with a stream of 10M events/s (issue 17)" "$(verdict "$TOP_RATE >= 10e6")" "" \
    "A7 $(mr "$TOP_RATE") M events/s of refresh CPU: one interval's events read in less than the interval"

if [ -n "${BENCH_RAW:-}" ]; then # the per-run figures behind the medians, for a closer look
    mkdir -p "$BENCH_RAW" && cp "$T"/ns.* "$T"/cpu.* "$T"/user.* "$T"/sys.* "$T"/wire.* "$T"/drops.* "$T"/wc.out "$T"/ingest.rates "$T"/top.* "$BENCH_RAW"/ 2> /dev/null
fi
# ---- what else ran: the machine may be shared ---------------------------
kill -TERM "$SERVE_PID" 2> /dev/null
wait "$SERVE_PID" 2> /dev/null
SERVE_PID=""
read -r BUSY1 STEAL1 TOTAL1 < <(cpu_jiffies)
HZ=$(getconf CLK_TCK)
times > "$T/times"
OURS=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, p, "m"); s += p[1] * 60 + p[2] } print s }' "$T/times")
OTHER=$(calc "100 * (($BUSY1 - $BUSY0) / $HZ - $OURS) / (($TOTAL1 - $TOTAL0) / $HZ)")
STEAL=$(calc "100 * ($STEAL1 - $STEAL0) / ($TOTAL1 - $TOTAL0)")
{
    echo "callsight bench$([ $QUICK = 1 ] && echo ' QUICK (short runs: a harness check, not a measurement)')"
    echo "machine: nproc=$NPROC, $CPU, Linux $(uname -r), $(date -u +%Y-%m-%d), source $GIT"
    echo "files written by tracers and serve: $T ($FS)"
    echo "other load during the run: $(fmt %.0f "$OTHER")% of all CPUs went to processes outside this run (the kernel's writeback of our files included)," \
        "$(fmt %.1f "$STEAL")% was stolen by the hypervisor; load average $LOAD0 at the start," \
        "$(cut -d' ' -f1-3 /proc/loadavg) at the end (a busy machine makes every figure worse)"
    echo "columns: id, what was measured, value, unit, what it is compared with"
    cat "$TABLE"
} > "$T/out"
cat "$T/out"
