#!/usr/bin/env python3
# treecheck.py - test helper: check the sums of `analyze --format tree`.
#
#   treecheck.py TREE.txt      prints "rows N checked C bad B", then each bad row
#   treecheck.py --paths TREE.txt
#                              prints "calls path" per row, the path joined by
#                              ';' from the outermost (a thread's line starts it)
#
# A row is "calls incl_us self_us  PATH", PATH indented two spaces a level
# from column 42.  Every row whose children are all shown (no "[+N deeper"
# note, no "(N cut" frames: a cut child's time stays in its caller's self)
# must have incl == self + the sum of its children's incl exactly, the
# "... N more paths" line counting as a child.  Times are exact ns written
# as microseconds with three decimals, so the sums are done in ns.
import sys

COL = 42


def rows(path):
    out, started = [], False
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.endswith("call path") and line.split()[:3] == ["calls", "incl_us", "self_us"]:
            started = True
            continue
        if not started:
            continue
        if line.startswith("thread ") or line == "":
            out.append(("thread", line))
            continue
        head, rest = line[:COL], line[COL:]
        f = head.split()
        if len(f) != 3:
            continue
        depth = (len(rest) - len(rest.lstrip(" "))) // 2
        ns = [int(x.replace(".", "")) for x in f[1:]]
        out.append(("row", int(f[0]), ns[0], ns[1], depth, rest.strip()))
    return out


def check(path):
    r = rows(path)
    bad, checked, n = [], 0, 0
    for i, x in enumerate(r):
        if x[0] != "row":
            continue
        n += 1
        _, calls, incl, self_, d, name = x
        if "[+" in name or "(" in name and " cut: no exit)" in name:
            continue
        kids = 0
        for y in r[i + 1:]:
            if y[0] != "row" or y[4] <= d:
                break
            if y[4] == d + 1:
                kids += y[2]
        if name.startswith("... "):
            continue
        checked += 1
        want = self_ + kids
        if incl != want:
            bad.append("%s: incl %d != self %d + children %d" % (name, incl, self_, kids))
    print("rows %d checked %d bad %d" % (n, checked, len(bad)))
    for b in bad:
        print(b)


def paths(path):
    stack, top = [], ""
    for x in rows(path):
        if x[0] == "thread":
            if x[1].startswith("thread "):
                top = x[1].split(":")[0]
            continue
        _, calls, _, _, d, name = x
        name = name.split(" (")[0].split(" [+")[0]
        del stack[d:]
        stack.append(name)
        print(calls, ";".join(([top] if top else []) + stack))


if sys.argv[1] == "--paths":
    paths(sys.argv[2])
else:
    check(sys.argv[1])
