#!/usr/bin/env python3
"""pngcolors.py - test helper: decode a PNG (8-bit RGB or RGBA, as
Chromium's screenshots are) with zlib only, and print

    WIDTHxHEIGHT colors=N painted=P warm=W blue=B

colors: distinct RGB values; painted: pixels that differ from the
top-left pixel (the background); warm: pixels in the flame graph's palette
for functions (red >= 205, green 60-210, blue <= 70); blue: pixels in its
palette for threads (red 110-150, green 150-200, blue >= 225).  A blank
page has colors=1 painted=0 warm=0 blue=0.
Fails (exit 1) on anything that is not a well-formed PNG of that kind.
"""
import struct
import sys
import zlib


def chunks(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("pngcolors: not a PNG")
    pos = 8
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if len(body) != n or zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise SystemExit("pngcolors: damaged chunk")
        yield kind, body
        pos += 12 + n


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def unfilter(raw, width, height, bpp):
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
            elif ftype != 0:
                raise SystemExit("pngcolors: bad filter %d" % ftype)
        rows.append(line)
        prev = line
    return rows


def main():
    data = open(sys.argv[1], "rb").read()
    idat, hdr = b"", None
    for kind, body in chunks(data):
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise SystemExit("pngcolors: only 8-bit RGB/RGBA, not interlaced")
    bpp = 3 if ctype == 2 else 4
    rows = unfilter(zlib.decompress(idat), width, height, bpp)
    colors, painted, warm, blue = set(), 0, 0, 0
    bg = bytes(rows[0][0:3])
    for line in rows:
        for x in range(0, width * bpp, bpp):
            px = bytes(line[x:x + 3])
            colors.add(px)
            painted += px != bg
            r, g, b = px
            warm += r >= 205 and 60 <= g <= 210 and b <= 70
            blue += 110 <= r <= 150 and 150 <= g <= 200 and b >= 225
    print("%dx%d colors=%d painted=%d warm=%d blue=%d" % (width, height, len(colors), painted,
                                                        warm, blue))


main()
