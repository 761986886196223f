#!/usr/bin/env python3
"""valuecheck.py - checks analyze's times for the workload of
tests/runtime/159-values.t against the bounds the workload measured itself.

Usage: valuecheck.py REPORT.json WORKLOAD-OUTPUT MIN_TRACER_NS_PER_CALL

The workload (CLOCK_MONOTONIC, the clock TRACE_CLOCK=mono gives the tracer)
prints, per call of parent, four spans: own (parent's spin, no hook inside),
cin (child's body, no hook inside), cout (parent's window around the call
of child: child's hooks and the flush its enter makes), pout (main's window
around the call of parent).  From these, with F the tracer time each call of
child is known to hold at least (one slowed flush at child's enter, marker
after that enter, so inside child's frame; 0 when none is forced), every
figure has a bound that needs no guess:
  child incl per call   in [cin, cout - F]
  parent incl per call  in [own + cin, pout - F]
  parent self (total)   in [sum own, sum(pout) - F*n - sum cin]
  child self == child incl (it has no callees)
and min/max are per-call figures, so within the same bounds.
Prints one line per failed bound; exit status 1 when any failed.
"""
import json
import sys

rep = json.load(open(sys.argv[1]))
calls = []
for line in open(sys.argv[2]):
    if line.startswith("call "):
        calls.append(dict(kv.split("=") for kv in line.split()[1:]))
F = int(sys.argv[3])
fn = {f["name"]: f for f in rep["functions"]}
n = len(calls)
own = [int(c["own"]) for c in calls]
cin = [int(c["cin"]) for c in calls]
cout = [int(c["cout"]) for c in calls]
pout = [int(c["pout"]) for c in calls]
bad = []


def within(what, got, lo, hi):
    print("# %s=%d in [%d, %d]" % (what, got, lo, hi))
    if not lo <= got <= hi:
        bad.append("%s=%d not in [%d, %d]" % (what, got, lo, hi))


c, p = fn["child"], fn["parent"]
if c["calls"] != n or p["calls"] != n or fn["main"]["calls"] != 1:
    bad.append("calls: child %d parent %d main %d, want %d %d 1"
               % (c["calls"], p["calls"], fn["main"]["calls"], n, n))
within("child.incl", c["incl_ns"], sum(cin), sum(cout) - F * n)
within("child.self", c["self_ns"], c["incl_ns"], c["incl_ns"])
within("child.min", c["min_ns"], min(cin), min(cout) - F)
within("child.max", c["max_ns"], max(cin), max(cout) - F)
within("parent.incl", p["incl_ns"], sum(own) + sum(cin), sum(pout) - F * n)
within("parent.self", p["self_ns"], sum(own), sum(pout) - F * n - sum(cin))
within("parent.min", p["min_ns"], min(o + i for o, i in zip(own, cin)), min(pout) - F)
within("parent.max", p["max_ns"], max(o + i for o, i in zip(own, cin)), max(pout) - F)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
