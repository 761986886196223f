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
