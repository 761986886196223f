#!/usr/bin/env bash
# 249-analyze-threads.t - analyze --threads: a table of the threads (issue
# 38, as uftrace report --threads): source, tid, calls, events, self time
# and its share, events lost, span from first to last event, name.
# tiny_trace.sh's named_trace: thread 500 "main" has 8 events, 4 calls
# (main, work, helper twice), 10 ms of self time over 0-10 ms; thread 501
# "worker-1" 10 events, 4 calls (work 1.5 ms self, helper 0.5 + 0.1 + 0.3;
# the frame its 3 lost events left open is no call), 3 events lost, 5.0-8.4 ms.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/tiny_trace.sh"
plan 7

tiny_build
named_trace "$T/a"
table() { sed -n '/^$/,$p' "$1" | sed 1d; }
"$CS" analyze "$T/a" --exe "$T/tiny" --threads > "$T/out" 2> "$T/err"
is "$? $(wc -c < "$T/err")" "0 0" "exit 0, nothing on stderr"
is "$(table "$T/out")" "source   tid  calls  events  self_ms  self%  lost  span_ms  thread
pid 500  500      4       8   10.000   80.6     0   10.000  main
pid 500  501      4      10    2.400   19.4     3    3.400  worker-1" \
    "one row per thread, most self time first; the self times add up to the functions' 12.4 ms"
is "$(head -n 2 "$T/out")" "$("$CS" analyze "$T/a" --exe "$T/tiny" | head -n 2)" "the header and notes as always"
"$CS" analyze "$T/a" --exe "$T/tiny" --threads --thread 'worker-*' > "$T/w"
is "$(table "$T/w" | sed 1d)" "pid 500  501      4      10    2.400  100.0     3    3.400  worker-1" \
    "--thread: only the threads chosen, their share of the calls selected"
"$CS" analyze "$T/a" --exe "$T/tiny" --threads --top 1 > "$T/t1"
is "$(table "$T/t1")" "source   tid  calls  events  self_ms  self%  lost  span_ms  thread
pid 500  500      4       8   10.000   80.6     0   10.000  main
1 more thread (2.400 ms self, 4 calls); --top 0 shows all" \
    "--top 1: the thread with the most self time, then what the others hold, as for functions"
"$CS" analyze "$T/a" --exe "$T/tiny" --threads --top 2 > "$T/t2"
is "$(table "$T/t2")" "$(table "$T/out")" "--top 2 (every thread): no line after the table"
"$CS" analyze "$T/a" --exe "$T/tiny" --threads --format json > /dev/null 2> "$T/err"
is "$? $(cat "$T/err")" "2 callsight analyze: --threads is a text view (json always carries \"threads\")" \
    "with json: usage error (json's threads carry the same figures)"
