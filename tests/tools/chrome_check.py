#!/usr/bin/env python3
# chrome_check.py - test helper: check a `callsight analyze --format chrome`
# document and list its events, one a line, in document order.
#
#   chrome_check.py FILE > listing     (exit 1, reasons on stderr, if bad)
#
# Checked: the bytes are UTF-8 and strict JSON (no raw control character in
# a string); the object form with displayTimeUnit "ns", otherData (counts
# and a list of notes) and traceEvents; every event has a known phase, a
# string name, integer pid and tid; ts and dur are microseconds written
# with exactly three decimals (whole ns), never negative; the complete
# events of each (pid, tid) come in the order they start, and in that order
# nest strictly (each one inside the one before that is still open, or
# after it), so a viewer that keeps events of one start time in file order
# nests them right; every pid has a process_name and every thread that has
# an event a thread_name.
#
# Listing:
#   M process_name PID 0 "NAME"          M thread_name PID TID "NAME"
#   X PID TID TS DUR whole|cut NAME      (cut: it has args.cut)
#   i PID TID TS t|p TEXT
#   C PID TID TS events=N NAME
# Names are written as JSON strings in M lines (so escapes show), raw
# elsewhere.
import json
import sys
from decimal import Decimal


def fail(why):
    print("chrome_check: " + why, file=sys.stderr)
    sys.exit(1)


def us(ev, key):
    v = ev.get(key)
    if not isinstance(v, Decimal):
        fail("%s not a decimal number: %r" % (key, ev))
    if v < 0 or v.as_tuple().exponent != -3:
        fail("%s not >= 0 with three decimals: %r" % (key, ev))
    return v


def main():
    raw = open(sys.argv[1], "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("not UTF-8: %s" % e)
    try:
        doc = json.loads(text, parse_float=Decimal)
    except ValueError as e:
        fail("not JSON: %s" % e)
    if not isinstance(doc, dict) or doc.get("displayTimeUnit") != "ns":
        fail("not the object form with displayTimeUnit ns")
    other = doc.get("otherData")
    if not isinstance(other, dict) or not isinstance(other.get("notes"), list) or \
            not all(isinstance(n, str) for n in other["notes"]):
        fail("otherData has no list of notes")
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        fail("no traceEvents list")
    procs, threads, used_pids, used_threads = set(), set(), set(), set()
    slices = {}
    out = []
    for ev in events:
        ph, name = ev.get("ph"), ev.get("name")
        pid, tid = ev.get("pid"), ev.get("tid")
        if ph not in ("M", "X", "i", "C") or not isinstance(name, str) or \
                not isinstance(pid, int) or not isinstance(tid, int) or pid < 0 or tid < 0:
            fail("bad event: %r" % ev)
        used_pids.add(pid)
        if ph == "M":
            label = ev.get("args", {}).get("name")
            if name not in ("process_name", "thread_name") or not isinstance(label, str):
                fail("bad metadata: %r" % ev)
            (procs if name == "process_name" else threads).add(pid if name == "process_name" else (pid, tid))
            out.append("M %s %d %d %s" % (name, pid, tid, json.dumps(label)))
        elif ph == "X":
            ts, dur = us(ev, "ts"), us(ev, "dur")
            used_threads.add((pid, tid))
            slices.setdefault((pid, tid), []).append((ts, dur))
            cut = "cut" if "cut" in ev.get("args", {}) else "whole"
            out.append("X %d %d %s %s %s %s" % (pid, tid, ts, dur, cut, name))
        elif ph == "i":
            ts = us(ev, "ts")
            if ev.get("s") not in ("t", "p"):
                fail("instant without scope t or p: %r" % ev)
            if ev["s"] == "t":
                used_threads.add((pid, tid))
            out.append("i %d %d %s %s %s" % (pid, tid, ts, ev["s"], name))
        else:
            ts = us(ev, "ts")
            n = ev.get("args", {}).get("events")
            if not isinstance(n, int) or n < 0:
                fail("counter without events: %r" % ev)
            out.append("C %d %d %s events=%d %s" % (pid, tid, ts, n, name))
    for key, v in slices.items():
        stack, last = [], None
        for ts, dur in v:
            if last is not None and ts < last:
                fail("pid %d tid %d: slice at %s after one at %s: not in start order" % (key[0], key[1], ts, last))
            last = ts
            while stack and stack[-1] <= ts and not (dur == 0 and stack[-1] == ts):
                stack.pop()
            if stack and ts + dur > stack[-1]:
                fail("pid %d tid %d: slice at %s dur %s crosses its parent's end %s" % (key[0], key[1], ts, dur, stack[-1]))
            stack.append(ts + dur)
    if used_pids - procs:
        fail("pids without process_name: %r" % sorted(used_pids - procs))
    if used_threads - threads:
        fail("threads without thread_name: %r" % sorted(used_threads - threads))
    print("\n".join(out))


main()
