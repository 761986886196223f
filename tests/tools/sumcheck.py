#!/usr/bin/env python3
"""sumcheck.py - test helper for tests/runtime/117-summary-file.t: summary percentiles
against the exact order statistics of the same calls (TRACE_MODE=both).

  sumcheck.py split DIR OUTDIR [EVENTDIR]
      Reads every trace file of DIR (one thread each, file mode), matches its
      enter and exit records, and prints per function address one line
      "ADDR calls=N min=NS p50=NS p90=NS p99=NS max=NS" (nearest rank, in ns
      by the file's tick_hz, as the runtime converts; the tracer's own time,
      marker 29, taken out of the frames open then, as both analyze and the
      summary do).  Writes to OUTDIR a
      copy of each file holding only its summary records (kind 4), which
      analyze reads as a summary trace; with EVENTDIR, also a copy holding
      all but the summary records there, an event trace of the same calls.
  sumcheck.py compare EXACT JSON
      Matches analyze's JSON rows to EXACT by address (link-time: the file's
      load bias subtracted) and checks p50/p90/p99 within 2% and min/max
      exact (to the ns); prints one line per function with its worst
      percentile error, exits 1 on any miss.
"""
import glob, json, math, os, struct, sys

HDR = 80

def records(path):
    data = open(path, "rb").read()
    hs = struct.unpack_from("<I", data, 16)[0]
    return data[:hs], [data[i:i + 32] for i in range(hs, len(data) - 31, 32)]

def split(src, dst, evdst=None):
    os.makedirs(dst, exist_ok=True)
    if evdst:
        os.makedirs(evdst, exist_ok=True)
    durs = {}
    for path in sorted(glob.glob(os.path.join(src, "*.bin"))):
        head, recs = records(path)
        flags, bias, hz = struct.unpack_from("<I", head, 20)[0], struct.unpack_from("<Q", head, 24)[0], struct.unpack_from("<Q", head, 32)[0]
        stack = []  # [func, enter ts, ns of the tracer's own time inside]
        for r in recs:
            ts, func, site, _tid, kind = struct.unpack_from("<QQQIB", r)
            if kind == 0:
                stack.append([func, ts, 0])
            elif kind == 1 and stack:
                f, t0, tracer = stack.pop()
                d = ts - t0
                ns = d * 1000000000 // hz if (flags & 1) and hz else d
                durs.setdefault(f - bias, []).append(ns - tracer)
            elif kind == 2 and func == 29:  # TRACER_TIME: a flush, out of every open frame (as analyze does)
                for frame in stack:
                    frame[2] += site
        with open(os.path.join(dst, os.path.basename(path)), "wb") as out:
            out.write(head)
            out.write(b"".join(r for r in recs if r[28] == 4))
        if evdst:
            with open(os.path.join(evdst, os.path.basename(path)), "wb") as out:
                out.write(head)
                out.write(b"".join(r for r in recs if r[28] != 4))
    for addr in sorted(durs):
        v = sorted(durs[addr])
        rank = lambda p: v[max(1, math.ceil(p * len(v) / 100)) - 1]
        print("0x%x calls=%d min=%d p50=%d p90=%d p99=%d max=%d" %
              (addr, len(v), v[0], rank(50), rank(90), rank(99), v[-1]))

def compare(exact_path, json_path):
    exact = {}
    for line in open(exact_path):
        addr, *kv = line.split()
        exact[int(addr, 16)] = dict(x.split("=") for x in kv)
    rows = {int(f["addr"], 16): f for f in json.load(open(json_path))["functions"]}
    bad = 0
    for addr, e in sorted(exact.items()):
        f = rows.get(addr)
        if f is None or f["calls"] != int(e["calls"]):
            print("0x%x: calls %s vs %s" % (addr, f and f["calls"], e["calls"]))
            bad += 1
            continue
        worst = 0.0
        # min and max exact: both recordings share each hook's clock reading
        # (ns conversions may differ by one)
        for k, tol in (("p50", 0.02), ("p90", 0.02), ("p99", 0.02), ("min", 0), ("max", 0)):
            x, y = f[k + "_ns"], int(e[k])
            err = abs(x - y) / y if y else float(x != y)
            worst = max(worst, err) if k.startswith("p") else worst
            if err > tol and abs(x - y) > 1:
                print("0x%x %s: %s: %d vs exact %d (%.2f%%)" % (addr, f["name"], k, x, y, 100 * err))
                bad += 1
        print("%s %.2f%%" % (f["name"], 100 * worst))
    sys.exit(1 if bad else 0)

if __name__ == "__main__":
    if sys.argv[1] == "split":
        split(*sys.argv[2:5])
    else:
        compare(sys.argv[2], sys.argv[3])
