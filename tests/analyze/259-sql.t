#!/usr/bin/env bash
# 259-sql.t - analyze --format sqlite and callsight sql (issue 34,
# docs/sql.md) on the demo workload (examples/workload.c: 2 iterations, 3
# workers, fib(6), sorts of 8 keys, 2x2 matrices: 395 calls, each
# function's count known from workload_expect.sh).
#
# Checked: a slice per call; every func_stats row equal to the JSON
# report's, field by field and in its order (same pass, same numbers),
# in event and summary traces; per-thread totals adding up to them; every
# query of docs/sql.md against its expected rows; a trace cut short by its
# byte budget and a truncated file give the JSON's notes and header
# figures; a directory's cache built, kept and built again; the output
# styles and their escaping; every error path's message and status.
source "$(dirname "$0")/../lib/lib.sh"
. "$TESTS/lib/workload_expect.sh"
. "$TESTS/lib/sqlcheck.sh"
plan 44

W=$B/examples/workload
P="2 3 6 8 2"
TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$W" $P >/dev/null
ok $? "the workload, traced ($P)"
"$CS" analyze "$T/tr" --exe "$W" --format json -o "$T/r.json"
ok $? "analyze --format json"
"$CS" analyze "$T/tr" --exe "$W" --format sqlite -o "$T/r.db"
ok $? "analyze --format sqlite -o r.db"
q() { "$CS" sql "$T/r.db" "$@"; }

expect_counts $P > "$T/expect"
calls=$(awk '{ s += $2 } END { print s }' "$T/expect")
is "$calls $(q --csv 'SELECT count(*) FROM slice; SELECT value FROM meta WHERE key = "calls"' | grep -v '^count\|^value' | tr '\n' ' ')" \
   "395 395 395 " "a slice per call: count(*) FROM slice is the 395 calls, and meta says so"
is "$(q --csv 'SELECT name, calls FROM func_stats ORDER BY name' | sed 1d | tr ',' ' ')" \
   "$(sort "$T/expect")" "func_stats: every function's exact calls"

# func_stats against the JSON report: every field, in the report's order.
same_as_json "$T/r.json" "$T/r.db"
ok $? "func_stats equals the JSON report's functions, every field, in its order"
is "$(q --csv 'SELECT f.name, f.calls = t.c, f.self_ns = t.s, f.incl_ns = t.i FROM func_stats f
              JOIN (SELECT function_id, sum(calls) AS c, sum(self_ns) AS s, sum(incl_ns) AS i
                    FROM thread_func_stats GROUP BY function_id) t USING (function_id)
              WHERE NOT (f.calls = t.c AND f.self_ns = t.s AND f.incl_ns = t.i)' | sed 1d)" "" \
   "thread_func_stats: calls, self and incl over the threads add up to func_stats exactly"
is "$(q --csv 'SELECT count(*), sum(s.self_dur) = (SELECT sum(self_ns) FROM func_stats),
                      max(s.dur) = (SELECT max(max_ns) FROM func_stats) FROM slice s' | sed 1d)" "395,1,1" \
   "slices: their self times sum to func_stats', the longest is its max"
is "$(q --csv 'SELECT count(*) FROM slice c LEFT JOIN slice p ON p.id = c.parent_id
               WHERE (c.depth = 0) != (c.parent_id IS NULL) OR (c.depth > 0 AND p.depth != c.depth - 1)
                  OR (c.depth > 0 AND p.thread_id != c.thread_id) OR c.ts < p.ts OR c.dur > p.dur' | sed 1d)" "0" \
   "every slice's parent is one level up on its thread, started before it and lasted longer"
is "$(q --csv 'SELECT sum(count) = (SELECT sum(calls) FROM func_stats) FROM func_hist' | sed 1d)" "1" \
   "func_hist: the histograms count every call"
is "$(q --csv 'SELECT count(*) > 0, count(*) = count(load_bias), sum(load_bias % 4096 != 0) FROM module WHERE is_program = 0' | sed 1d) \
$(q --csv 'SELECT count(load_bias) FROM module WHERE is_program = 1' | sed 1d)" "1,1,0 0" \
   "module: each shared object (libc, the loader) with its load bias, page-aligned; a program's is the process's"

# Every query in docs/sql.md, in its order, against its expected rows
# (CSV, header dropped).  The rows that depend on times come from the
# JSON report of the same trace.
python3 - "$TESTS/../docs/sql.md" "$T/q" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
qs = re.findall(r"```sql\n(.*?)```", text[text.index("## Queries"):], re.S)
for i, q in enumerate(qs):
    open("%s.%02d" % (sys.argv[2], i), "w").write(q)
print(len(qs), file=open(sys.argv[2] + ".n", "w"))
PY
python3 - "$T/r.json" "$T/want" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["functions"]
want = []
want.append("\n".join("%s,%d" % (x["name"], x["calls"]) for x in sorted(f, key=lambda x: (-x["calls"], x["name"]))))
want.append("\n".join("%s,%d,%d" % (x["name"], x["calls"], x["self_ns"]) for x in f[:10]))
top = max(f, key=lambda x: x["max_ns"])
want.append(None)  # the slowest calls: checked below
want.append("msort,42")
want.append("fib,6\nfill_keys,6\nmatmul,6\nnap,6\nsort_keys,6")
want.append("0,worker_main\n1,do_iteration\n2,matmul\n3,dot")
want.append(None)  # calls per thread: checked below
want.append("6")
want.append("\n".join("%s,%d" % (x["name"], x["calls"]) for x in sorted(f, key=lambda x: x["name"])))
want.append("\n".join("%s,%d,%d,%d,%d" % (s["kind"], s["dropped"], s["thread_lost"], s["gaps"], s["gaps_unknown"]) for s in r["sources"]))
want.append("\n".join('"%s"' % n if "," in n else n for n in r["notes"]))
want.append("1")
with open(sys.argv[2], "w") as out:
    for w in want:
        out.write(("-" if w is None else w.replace("\n", "\\n")) + "\n")
PY
n=$(cat "$T/q.n")
is "$n" "$(wc -l < "$T/want")" "docs/sql.md has as many queries as this test has expectations ($n)"
bad=0
for ((i = 0; i < n; i++)); do
    got=$("$CS" sql "$T/r.db" --csv -f "$T/q.$(printf %02d $i)" 2>&1 | sed 1d)
    want=$(sed -n "$((i + 1))p" "$T/want")
    [ "$want" = - ] && continue
    want=$(printf '%b' "$want")
    [ "$got" = "$want" ] || { diag "query $i: got '$got' want '$want'"; bad=1; }
done
ok $bad "every docs/sql.md query with fixed rows gives them"
slow=$("$CS" sql "$T/r.db" --csv -f "$T/q.02" | sed 1d)
is "$(echo "$slow" | wc -l) $(echo "$slow" | head -1 | cut -d, -f1,2)" \
   "5 $(python3 -c 'import json,sys; f = max(json.load(open(sys.argv[1]))["functions"], key=lambda x: x["max_ns"]); print("%s,%d" % (f["name"], f["max_ns"]))' "$T/r.json")" \
   "docs: slowest_calls: 5 rows, the first the longest call of the JSON's maxes"
is "$("$CS" sql "$T/r.db" --csv -f "$T/q.06" | sed 1d | cut -d, -f2 | sort -n | tr '\n' ' ')" "8 129 129 129 " \
   "docs: calls per thread: main's 8 and each worker's 129"

# Output styles and escaping: nothing raw from the data reaches the output.
is "$(q "SELECT 'a' || char(27) || '[31m' AS e, 7 AS n, NULL AS z, x'00ff' AS b")" \
"e          n  z     b
---------  -  ----  -------
a\\x1b[31m  7  NULL  x'00ff'" "table: aligned, numbers right, NULL, a blob as x'HEX', ESC as \\x1b"
is "$(q --csv "SELECT 'a,b' AS s, '' AS e, NULL AS z, 'q\"' || char(10) AS c")" 's,e,z,c
"a,b","",,"q""\x0a"' "csv: quoted where needed, NULL empty, a newline escaped"
is "$(q --json "SELECT 'a' || char(27) AS s, 5 AS n, NULL AS z UNION ALL SELECT 'b', 6, 1.5")" \
'[{"s": "a\u001b", "n": 5, "z": null},
{"s": "b", "n": 6, "z": 1.5}]' "json: one array of objects, control bytes escaped"
printf 'SELECT 1 AS one;;\n-- a comment\n;SELECT 2 AS two;\n' > "$T/script.sql"
is "$(q --csv -f "$T/script.sql" | tr '\n' ' ')" "one 1 two 2 " "-f FILE: each statement's rows in order, past comments and empty statements"

# Errors: SQLite's message in one line, status 1; usage, status 2.
err() { "$CS" sql "$@" 2>&1 >/dev/null; echo "status $?"; }
is "$(err "$T/r.db" 'SELECT 1; SELEC 2')" 'callsight sql: near "SELEC": syntax error (at offset 10 of the SQL)
status 1' "a syntax error: SQLite's message, where it is, status 1"
is "$(err "$T/r.db" 'SELECT * FROM nosuch')" "callsight sql: no such table: nosuch
status 1" "no such table: status 1"
is "$(err "$T/r.db" 'DELETE FROM notes'; q --csv 'SELECT count(*) > 0 FROM slice' | sed 1d)" \
   "callsight sql: attempt to write a readonly database
status 1
1" "the database is read-only: a write fails, nothing is lost"
echo 'not a database' > "$T/junk.db"
is "$(err "$T/junk.db" 'SELECT 1' | tail -1) $(err "$T/none.db" 'SELECT 1' | tail -1)" "status 1 status 1" \
   "a file that is not a database, and one that does not exist: status 1"
usage_status() { "$CS" sql "$@" >/dev/null 2>&1; echo -n "$? "; }
is "$(usage_status; usage_status "$T/r.db"; usage_status "$T/r.db" 'SELECT 1' -f "$T/script.sql"
      usage_status "$T/r.db" 'SELECT 1' --csv --json; usage_status "$T/r.db" 'SELECT 1' --bogus
      usage_status "$T/tr" 'SELECT 1'; usage_status "$T/r.db" 'SELECT 1' --exe "$W"; usage_status "$T/r.db" ' -- only a comment')" \
   "2 2 2 2 2 2 2 2 " "usage errors: status 2"
"$CS" sql --help > "$T/help"
rc=$?
missing=$(for w in --csv --json '-f FILE' '--exe BIN' --rebuild --help 'Exit status' docs/sql.md slice func_stats; do
              grep -qF -- "$w" "$T/help" || echo "$w"; done)
is "$rc:$missing" "0:" "--help: every option, the tables and the exit status"
"$CS" analyze "$T/tr" --exe "$W" --format sqlite >/dev/null 2>&1
s1=$?
"$CS" analyze "$T/tr" --exe "$W" --format sqlite -o /dev/null 2>/dev/null
is "$s1 $?" "2 2" "analyze --format sqlite needs -o and a regular file"

# A directory: the cache is built beside the traces, kept, built again.
is "$("$CS" sql "$T/tr" --exe "$W" --csv 'SELECT count(*) FROM slice' | sed 1d)" 395 "sql DIR: the cache is built and queried"
# mark DB: a row only this test writes (python3's sqlite3, not callsight),
# gone when the database is built again.  (Not the inode: a new file may
# get the one just freed.)
mark() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", ("test_mark", 1)); c.commit()' "$1"; }
marked() { "$CS" sql "$T/tr" --exe "$W" --csv "SELECT count(*) FROM meta WHERE key = 'test_mark'" | sed 1d; }
mark "$T/tr/.callsight.db"
is "$(marked)" 1 "sql DIR again: the cache is used as it is"
f=$(ls "$T/tr"/trace.*.bin | head -1)
touch -d '2001-01-01' "$f"
got=$(marked)
mark "$T/tr/.callsight.db"
"$CS" sql "$T/tr" --exe "$W" --rebuild 'SELECT 1' >/dev/null
is "$got $(marked)" "0 0" "a trace file changed: built again; --rebuild: built again"
# A cache others may write is not ours to trust: one that anyone may write
# (a key that matches is easy to plant) is built again; a FIFO in its place
# or named as the database is refused, never opened (it would block).
mark "$T/tr/.callsight.db"
chmod 666 "$T/tr/.callsight.db"
is "$(marked) $(stat -c %a "$T/tr/.callsight.db")" "0 644" "a cache others may write: built again, as ours"
mkfifo "$T/fifo.db"
timeout 10 "$CS" sql "$T/fifo.db" 'SELECT 1' > "$T/fifo.out" 2>&1
is "$? $(cat "$T/fifo.out")" "1 callsight sql: $T/fifo.db: not a regular file (a database is one)" "a FIFO named as the database: refused at once"
rm -f "$T/tr/.callsight.db"
mkfifo "$T/tr/.callsight.db"
timeout 10 "$CS" sql "$T/tr" --exe "$W" 'SELECT 1' > "$T/fifo2.out" 2>&1
is "$? $(cat "$T/fifo2.out")" "1 callsight sql: $T/tr/.callsight.db: not a regular file, so not a cache of ours: remove it, or query a database file" \
    "a FIFO in the cache's place: refused at once, left alone"
rm -f "$T/tr/.callsight.db"

# Cut short: a byte budget stops capture, and a file loses its tail; the
# notes, unclosed frames and calls are the JSON report's.
TRACE_MAX_MB=1 TRACE_ENABLE=1 TRACE_DIR="$T/bud" "$W" 100 3 6 8 2 >/dev/null
f=$(ls -S "$T/bud"/trace.*.bin | head -1)
truncate -s -40 "$f"
"$CS" analyze "$T/bud" --exe "$W" --format json -o "$T/bud.json" 2>/dev/null
"$CS" analyze "$T/bud" --exe "$W" --format sqlite -o "$T/bud.db" 2>/dev/null
ok $? "a budget-stopped, truncated trace: the database is built"
is "$("$CS" sql "$T/bud.db" --json 'SELECT text FROM notes ORDER BY id' | python3 -c 'import json,sys; print([r["text"] for r in json.load(sys.stdin)])')" \
   "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["notes"])' "$T/bud.json")" "its notes are analyze's"
is "$("$CS" sql "$T/bud.db" --csv "SELECT value FROM meta WHERE key IN ('calls', 'unclosed_enters', 'events') ORDER BY key" | sed 1d | tr '\n' ' ')" \
   "$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["summary"]; print(s["calls"], s["events"], s["unclosed_enters"], "")' "$T/bud.json")" \
   "calls, events and unclosed enters are the JSON's"
same_as_json "$T/bud.json" "$T/bud.db"
ok $? "and so is every func_stats row"
# call_edge_data, summed by the pass, against the same sums made in SQL
# from the slices and their parents (returned or cut), both ways.
edges_sql='SELECT p.function_id, c.function_id, count(*), sum(c.dur), sum(c.self_dur) FROM slice_data c
    JOIN (SELECT id, function_id FROM slice_data UNION ALL SELECT id, function_id FROM cut_frame) p ON p.id = c.parent_id
    WHERE p.function_id IS NOT NULL GROUP BY 1, 2'
edges_check() {
    "$CS" sql "$1" --csv "SELECT (SELECT count(*) FROM ($edges_sql EXCEPT SELECT * FROM call_edge_data)),
        (SELECT count(*) FROM (SELECT * FROM call_edge_data EXCEPT $edges_sql)), (SELECT count(*) > 10 FROM call_edge_data),
        (SELECT count(*) FROM cut_frame) > 0" | sed 1d
}
is "$(edges_check "$T/r.db") $(edges_check "$T/bud.db")" "0,0,1,0 0,0,1,1" \
   "call_edges: the pass's sums per caller and callee are SQL's over the slices (a trace with cut frames too)"

# Summary mode: the device's totals, the same as the JSON's.
TRACE_MODE=summary TRACE_ENABLE=1 TRACE_DIR="$T/sum" "$W" $P >/dev/null
"$CS" analyze "$T/sum" --exe "$W" --format json -o "$T/sum.json"
"$CS" analyze "$T/sum" --exe "$W" --format sqlite -o "$T/sum.db"
same_as_json "$T/sum.json" "$T/sum.db"
ok $? "summary trace: func_stats equals the JSON's"
is "$("$CS" sql "$T/sum.db" --csv "SELECT (SELECT sum(calls) FROM thread_func_stats) = (SELECT sum(calls) FROM func_stats),
                                  (SELECT sum(self_ns) FROM thread_func_stats) = (SELECT sum(self_ns) FROM func_stats),
                                  (SELECT count(*) FROM slice), (SELECT value FROM meta WHERE key = 'mode'),
                                  (SELECT sum(count) FROM func_hist) = (SELECT sum(calls) FROM func_stats)" | sed 1d)" \
   "1,1,0,summary,1" "summary trace: per-thread totals add up, no slices, mode summary, the device's histograms as rows"

# TRACE_TRIGGER: the call that fired it, when, and its stack, as the JSON's.
TRACE_TRIGGER='nap>5ms' TRACE_ENABLE=1 TRACE_DIR="$T/trg" "$W" $P >/dev/null
"$CS" analyze "$T/trg" --exe "$W" --format json -o "$T/trg.json"
"$CS" analyze "$T/trg" --exe "$W" --format sqlite -o "$T/trg.db"
is "$("$CS" sql "$T/trg.db" --csv "SELECT t.tid, g.ts, g.took_ns, g.outer_frames_unknown,
        (SELECT group_concat(name, ' > ') FROM (SELECT f.name FROM trigger_frame tf JOIN function f ON f.id = tf.function_id
                                               WHERE tf.trigger_id = g.id ORDER BY tf.depth)) || ' > ' || c.name
      FROM trigger_call g JOIN thread t ON t.utid = g.thread_id JOIN function c ON c.id = g.function_id ORDER BY g.id" | sed 1d)" \
   "$(python3 -c 'import json, sys
gs = json.load(open(sys.argv[1]))["triggers"]
if not gs:
    print("the JSON has no trigger: nothing to compare")
for g in gs:
    print("%d,%d,%d,%d,%s" % (g["tid"], g["at_ns"], g["took_ns"], g["outer_frames_unknown"], " > ".join(g["stack"])))' "$T/trg.json")" \
   "trigger_call and trigger_frame: the JSON's triggers, their times and stacks"

# Caps: functions beyond --max-funcs go to one [other] row, and the
# database says it as the JSON does, row for row and note for note.
"$CS" analyze "$T/tr" --exe "$W" --max-funcs 5 --format json -o "$T/cap.json"
"$CS" analyze "$T/tr" --exe "$W" --max-funcs 5 --format sqlite -o "$T/cap.db"
same_as_json "$T/cap.json" "$T/cap.db"
ok $? "--max-funcs 5: func_stats, its [other] row included, equals the JSON's"
is "$("$CS" sql "$T/cap.db" --json 'SELECT text FROM notes ORDER BY id' | python3 -c 'import json,sys; print([r["text"] for r in json.load(sys.stdin)])')
$("$CS" sql "$T/cap.db" --csv 'SELECT count(*) FROM slice; SELECT count(*) FROM function WHERE module_id IS NULL' | grep -v count | tr '\n' ' ')" \
   "$(python3 -c 'import json,sys; n = json.load(open(sys.argv[1]))["notes"]; print(n if any("max-funcs" in x for x in n) else "no note of the cap")' "$T/cap.json")
395 1 " "--max-funcs 5: the JSON's notes; still a slice per call; one [other] function"

"$CS" analyze "$T/tr" --exe "$W" --max-depth 2 --format json -o "$T/deep.json"
"$CS" analyze "$T/tr" --exe "$W" --max-depth 2 --format sqlite -o "$T/deep.db"
losses_as_json "$T/deep.json" "$T/deep.db"
ok $? "--max-depth 2: the JSON's notes (the frames beyond it counted, not timed)"
is "$("$CS" sql "$T/deep.db" --csv 'SELECT count(*), max(depth) FROM slice' | sed 1d)" \
   "$(python3 -c 'import json,sys; print("%d,1" % json.load(open(sys.argv[1]))["summary"]["calls"])' "$T/deep.json")" \
   "--max-depth 2: a slice per call the JSON counts, none deeper than the cap"
