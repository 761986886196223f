# sqlcheck.sh - helpers for the tests of analyze --format sqlite and
# callsight sql (docs/sql.md).  Source it after lib.sh.
#
# same_as_json REPORT.json DB: true when DB's func_stats, in its rank
# order, is the JSON report's functions row for row, every field equal
# (name, file, line, calls, incl, self, min, max, mean, p50, p90, p99,
# lower_bound); the rows that differ are printed as diag lines.
same_as_json() {
    python3 - "$1" <("$CS" sql "$2" --json 'SELECT name, file, line, calls, incl_ns, self_ns, min_ns, max_ns,
        mean_ns, p50_ns, p90_ns, p99_ns, lower_bound FROM func_stats ORDER BY rank') <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = json.loads(open(sys.argv[2]).read())
keys = ["name", "file", "line", "calls", "incl_ns", "self_ns", "min_ns", "max_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns"]
want = [[f[k] for k in keys] + [1 if f.get("lower_bound") else 0] for f in r["functions"]]
got = [[row[k] for k in keys + ["lower_bound"]] for row in rows]
if want != got:
    for w, g in zip(want, got):
        if w != g:
            print("# json %s\n# sql  %s" % (w, g))
    print("# %d json rows, %d sql rows" % (len(want), len(got)))
    sys.exit(1)
PY
}

# maxrss ARGS...: run a program, print its peak RSS in KiB ("failed" when
# it fails).  ASan's quarantine of freed memory is turned off for it, so
# that what is measured is what the program holds, as without ASan.
maxrss() {
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else "failed")' "$@"
}

# losses_as_json REPORT.json DB: true when DB's sources (every loss and
# accounting column the JSON's "sources" have), its threads' lost events
# (of the threads the JSON lists) and its notes are the JSON report's.
losses_as_json() {
    python3 - "$1" <("$CS" sql "$2" --json 'SELECT * FROM source ORDER BY id') \
        <("$CS" sql "$2" --json 'SELECT t.tid, s.kind, s.source_id, t.lost FROM thread t JOIN source s ON s.id = t.source') \
        <("$CS" sql "$2" --json 'SELECT text FROM notes ORDER BY id') <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
src, thr, notes = (json.loads(open(f).read()) for f in sys.argv[2:5])
bad = []
for want, got in zip(r["sources"], src):
    got = dict(got, id=got["source_id"])
    diff = {k: (v, got.get(k)) for k, v in want.items() if got.get(k) != v}
    if diff:
        bad.append("source %s: %s" % (want["id"], diff))
if len(r["sources"]) != len(src):
    bad.append("%d sources in the JSON, %d in the database" % (len(r["sources"]), len(src)))
lost = {(t["kind"], t["source_id"], t["tid"]): t["lost"] for t in thr}
for t in r["threads"]:
    if lost.get((t["source"], t["source_id"], t["tid"])) != t["lost"]:
        bad.append("thread %s: lost %s, database %s" % (t["tid"], t["lost"], lost.get((t["source"], t["source_id"], t["tid"]))))
if [n["text"] for n in notes] != r["notes"]:
    bad.append("notes %s, database %s" % (r["notes"], [n["text"] for n in notes]))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
}
