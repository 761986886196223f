#!/usr/bin/env python3
"""perfetto_check.py - test helper: check a Perfetto trace as decoded by
`protoc --decode=callsight_test.Trace perfetto_subset.proto` (text on stdin)
and print its events one per line, so a test can compare them exactly:

    process PID NAME                       a process track descriptor
    thread PID TID NAME                    a thread track descriptor
    TS THREAD-NAME B|E|I NAME              a slice begin / end / instant

It fails (exit 1, a line on stderr) when the structure is wrong for the
viewers: the first packet is not the interned names with sequence_flags 3,
a packet lacks the sequence id, an event uses an iid never interned or a
track never described, a thread's parent is not a described process,
timestamps go backwards on a track, or slices do not nest (an END with
nothing open, or slices left open at the end).
"""
import re
import sys


def parse(lines):
    """protoc's text format into nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        m = re.match(r"^(\w+) \{$", line)
        if m:
            child = {}
            cur.setdefault(m.group(1), []).append(child)
            stack.append(cur)
            cur = child
            continue
        m = re.match(r"^(\w+): (.*)$", line)
        if not m:
            raise SystemExit("perfetto_check: cannot parse: " + line)
        val = m.group(2)
        if val.startswith('"'):
            val = bytes(val[1:-1], "utf-8").decode("unicode_escape")
        cur.setdefault(m.group(1), []).append(val)
    if stack:
        raise SystemExit("perfetto_check: unbalanced braces")
    return root


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default


def fail(msg):
    sys.stderr.write("perfetto_check: " + msg + "\n")
    sys.exit(1)


def main():
    packets = parse(sys.stdin).get("packet", [])
    if not packets:
        fail("no packets")
    first = packets[0]
    if one(first, "sequence_flags") != "3" or "interned_data" not in first:
        fail("first packet is not the interned names with sequence_flags 3")
    names = {}
    for en in one(first, "interned_data").get("event_names", []):
        iid = one(en, "iid")
        if iid == "0" or iid in names:
            fail("iid %s invalid or interned twice" % iid)
        names[iid] = one(en, "name")
    tracks, open_, last = {}, {}, {}
    out = []
    for p in packets:
        if one(p, "trusted_packet_sequence_id") != "1":
            fail("a packet without sequence id 1")
        if "track_descriptor" in p:
            td = one(p, "track_descriptor")
            uuid = one(td, "uuid")
            if "process" in td:
                pr = one(td, "process")
                tracks[uuid] = one(pr, "process_name")
                out.append("process %s %s" % (one(pr, "pid"), one(pr, "process_name")))
            else:
                th = one(td, "thread")
                if one(td, "parent_uuid") not in tracks:
                    fail("thread track before its process")
                tracks[uuid] = one(th, "thread_name")
                out.append("thread %s %s %s" % (one(th, "pid"), one(th, "tid"),
                                                one(th, "thread_name")))
        if "track_event" in p:
            if p is not first and one(p, "sequence_flags") != "2":
                fail("an event packet without sequence_flags 2")
            ev = one(p, "track_event")
            uuid, ts = one(ev, "track_uuid"), int(one(p, "timestamp", "0"))
            if uuid not in tracks:
                fail("event on an undescribed track " + str(uuid))
            if ts < last.get(uuid, 0):
                fail("time goes backwards on " + tracks[uuid])
            last[uuid] = ts
            kind = one(ev, "type")
            name = one(ev, "name")
            if name is None and one(ev, "name_iid") is not None:
                name = names.get(one(ev, "name_iid"))
                if name is None:
                    fail("iid %s not interned" % one(ev, "name_iid"))
            depth = open_.get(uuid, 0)
            if kind == "TYPE_SLICE_BEGIN":
                open_[uuid] = depth + 1
                out.append("%d %s B %s" % (ts, tracks[uuid], name))
            elif kind == "TYPE_SLICE_END":
                if depth == 0:
                    fail("END with no open slice on " + tracks[uuid])
                open_[uuid] = depth - 1
                out.append("%d %s E" % (ts, tracks[uuid]))
            elif kind == "TYPE_INSTANT":
                out.append("%d %s I %s" % (ts, tracks[uuid], name))
            else:
                fail("unexpected event type " + str(kind))
    for uuid, depth in open_.items():
        if depth:
            fail("%d slices left open on %s" % (depth, tracks[uuid]))
    print("\n".join(out))


main()
