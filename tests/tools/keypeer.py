#!/usr/bin/env python3
"""keypeer.py - test helper for tests/stream/438-stream-resume-key.t: a server that
shows what trace_stream sends around its resume key
(TRACE_STREAM_FLAG_RESUME_KEY, TRACE_CHUNK_RESUME_KEY: runtime/trace_wire.h)
without ever printing the key.

  keypeer.py PORTFILE CONNS [--close K] [--not-in FILE...]

Listens on a free port of 127.0.0.1 (written to PORTFILE once listening),
takes CONNS connections, each on a thread of its own (a flight recorder's
snapshot comes while its main connection is open), acks each handshake as
a server that takes summaries would (codecs 0, features 1), and reads it to
the end; connection K (--close, counted from 1) is closed right after its
second chunk.  Then, one line per connection in the order they came:

  conn N: flags=0xF chunks=T,T,... key=#I

flags as the handshake had them; chunks: the type of every chunk, runs of
one type written T*COUNT; key: which distinct key the key chunks carried
(#1 the first one seen, #2 another; "none" without; "bad" for one that is
not 16 bytes, or two different keys on one connection).  --not-in: at the
end, "key in none of the N files" when no key's bytes, nor their hex, are
in any of them, else "key found in FILE".  Ends after 60 s at most.
"""
import socket
import struct
import sys
import threading

from wirepeer import listen_portfile, HANDSHAKE, read_chunks, read_exact

KEY_CHUNK = 6


def frame_payload(frame):
    """The bytes of one zstd frame (RFC 8878) made of raw and RLE blocks,
    as libzstd makes for 16 random bytes and a build without libzstd for
    anything; a compressed block goes to the zstd command line."""
    if len(frame) < 5 or frame[:4] != b"\x28\xb5\x2f\xfd":
        return b""
    fhd = frame[4]
    single, dict_len = (fhd >> 5) & 1, (0, 1, 2, 4)[fhd & 3]
    fcs_len = (1 if single else 0, 2, 4, 8)[fhd >> 6]
    at, out = 5 + (0 if single else 1) + dict_len + fcs_len, b""
    while at + 3 <= len(frame):
        b = int.from_bytes(frame[at:at + 3], "little")
        last, btype, size = b & 1, (b >> 1) & 3, b >> 3
        at += 3
        if btype == 0:
            out, at = out + frame[at:at + size], at + size
        elif btype == 1:
            out, at = out + frame[at:at + 1] * size, at + 1
        else:
            import subprocess
            return subprocess.run(["zstd", "-dc"], input=frame, capture_output=True, check=False).stdout
        if last:
            break
    return out


def serve_one(conn, close, result):
    conn.settimeout(60)
    hs = read_exact(conn, HANDSHAKE.size, errors_end=True)
    if hs is None:
        result["line"] = "flags=? chunks= key=none"
        return
    flags = HANDSHAKE.unpack(hs)[3]
    conn.sendall(struct.pack("<8sII", b"TKACK", 0, 1))
    types, keys = [], []
    for ctype, raw_len, frame in read_chunks(conn, errors_end=True):
        types.append(ctype)
        if ctype == KEY_CHUNK:
            keys.append(frame_payload(frame) if raw_len == 16 else b"")
        if close and len(types) == 2:
            break
    conn.close()
    result.update(flags=flags, types=types, keys=keys)


def runs(types):
    out = []
    for t in types:
        if out and out[-1][0] == t:
            out[-1][1] += 1
        else:
            out.append([t, 1])
    return ",".join("%d" % t if n == 1 else "%d*%d" % (t, n) for t, n in out)


def main(argv):
    portfile, conns = argv[0], int(argv[1])
    close, not_in, i = 0, [], 2
    while i < len(argv):
        if argv[i] == "--close":
            close, i = int(argv[i + 1]), i + 2
        elif argv[i] == "--not-in":
            not_in, i = argv[i + 1:], len(argv)
        else:
            sys.exit("keypeer: unknown argument " + argv[i])
    lst = listen_portfile(portfile, 8)
    threads, results = [], []
    for n in range(1, conns + 1):
        try:
            conn, _ = lst.accept()
        except socket.timeout:
            break
        result = {}
        t = threading.Thread(target=serve_one, args=(conn, close == n, result))
        t.start()
        threads.append(t)
        results.append(result)
    for t in threads:
        t.join(60)
    distinct = []
    for n, r in enumerate(results, 1):
        keys = r.get("keys", [])
        if not keys:
            label = "none"
        elif any(len(k) != 16 for k in keys) or len(set(keys)) > 1:
            label = "bad"
        else:
            if keys[0] not in distinct:
                distinct.append(keys[0])
            label = "#%d" % (distinct.index(keys[0]) + 1)
        print("conn %d: flags=0x%x chunks=%s key=%s" % (n, r.get("flags", 0), runs(r.get("types", [])), label))
    if not_in:
        found = None
        for path in not_in:
            with open(path, "rb") as f:
                data = f.read()
            for k in distinct:
                if k in data or k.hex().encode() in data.lower():
                    found = path
        print("key found in %s" % found if found else "key in none of the %d files" % len(not_in))


if __name__ == "__main__":
    main(sys.argv[1:])
