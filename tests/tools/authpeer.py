#!/usr/bin/env python3
"""authpeer.py - test helper for tests/stream/467-stream-control-auth-attack.t:
a device no correct trace_stream is, against a `callsight serve --auth-key`
(docs/control.md "Authentication", runtime/trace_wire.h
TRACE_STREAM_FLAG_AUTH_OFFER), to see that serve relays control only to a
device that proved the key, whatever the order of the exchange.

  authpeer.py PORT CASE [KEYFILE]

Connects to 127.0.0.1:PORT, sends a handshake offering control (0x1000)
and, but for case noflag, the key (0x2000), a resume notice, then what
CASE says, and prints one line per thing serve sent it ("ack features=F",
"tkauth", "tkctl seq=S len=L", or "other"), then "ready" once its part is
sent; it keeps the connection open until its standard input ends, reading
what serve sends, and prints "closed" if serve closed it.

  noflag     a key hello without the handshake flag
  early      a key proof before any hello, then a hello, then a wrong proof
  hellos     three hellos (one TKAUTH must come, no more), then a wrong
             proof (its judgement says the hellos were all read)
  wrongfirst a hello, a wrong proof, then the right one (KEYFILE): the
             first proof is the one judged
  short      a key hello of 31 bytes
  long       a key proof of 33 bytes (after a hello)
  mute       a hello, and nothing more: never completes
  unasked    a hello, no proof, and a control answer nobody asked for,
             claiming generation 2 applied (OFF, 1 function)
  good       a hello and the right proof (KEYFILE): control is relayed
Chunks are zstd frames made with the system's libzstd.
"""
import ctypes
import hashlib
import hmac
import os
import select
import socket
import struct
import sys

from wirepeer import HANDSHAKE, CHUNK, read_exact

zstd = ctypes.CDLL("libzstd.so.1")
zstd.ZSTD_compress.restype = ctypes.c_size_t
zstd.ZSTD_compress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]


def chunk(ctype, raw):
    out = ctypes.create_string_buffer(len(raw) + 64)
    n = zstd.ZSTD_compress(out, len(raw) + 64, raw, len(raw), 1)
    return CHUNK.pack(ctype, len(raw), n) + out.raw[:n]


def main():
    port, case = int(sys.argv[1]), sys.argv[2]
    key = open(sys.argv[3], "rb").read() if len(sys.argv) > 3 else b""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    flags = 0x1000 | (0 if case == "noflag" else 0x2000)
    s.sendall(HANDSHAKE.pack(b"TKSTREAM", 2, 32, flags, 0, 0, 1000000000, 0, 0, 0))
    ack = read_exact(s, 16)
    print("ack features=0x%x" % struct.unpack("<8sII", ack)[2], flush=True)
    resume = struct.pack("<QQIIQQ", int.from_bytes(os.urandom(8), "little"), 1, 1, 0, 0, 0)
    s.sendall(chunk(2, resume))
    nc = os.urandom(32)
    got = b""
    closed = False

    def hear(wait):
        """What serve sent within wait seconds, printed; its TKAUTH body kept."""
        nonlocal got, closed
        body = None
        while not closed:
            r, _, _ = select.select([s], [], [], wait)
            if not r:
                return body
            try:
                part = s.recv(65536)
            except ConnectionResetError:
                part = b""
            if not part:
                print("closed", flush=True)
                closed = True
                return body
            got += part
            while len(got) >= 16:
                magic, seq, n = struct.unpack("<8sII", got[:16])
                if magic.rstrip(b"\0") == b"TKAUTH" and len(got) >= 16 + n:
                    print("tkauth", flush=True)
                    body, got = got[16:16 + n], got[16 + n:]
                elif magic.rstrip(b"\0") == b"TKCTL" and len(got) >= 16 + n:
                    print("tkctl seq=%d len=%d" % (seq, n), flush=True)
                    got = got[16 + n:]
                elif magic.rstrip(b"\0") not in (b"TKAUTH", b"TKCTL"):
                    print("other", flush=True)
                    got = b""
                else:
                    break
            wait = 0.5
        return body

    def proof(body):
        ns = body[:32] if body else bytes(32)
        return hmac.new(key, b"callsight-client" + nc + ns, hashlib.sha256).digest()

    if case == "noflag":
        s.sendall(chunk(8, nc))
    elif case == "early":
        s.sendall(chunk(9, bytes(32)))
        s.sendall(chunk(8, nc))
        hear(2)
        s.sendall(chunk(9, os.urandom(32)))
    elif case == "hellos":
        s.sendall(chunk(8, nc) + chunk(8, os.urandom(32)) + chunk(8, nc) + chunk(9, os.urandom(32)))
    elif case == "wrongfirst":
        s.sendall(chunk(8, nc))
        body = hear(2)
        s.sendall(chunk(9, os.urandom(32)) + chunk(9, proof(body)))
    elif case == "short":
        s.sendall(chunk(8, nc[:31]))
    elif case == "long":
        s.sendall(chunk(8, nc))
        hear(2)
        s.sendall(chunk(9, os.urandom(33)))
    elif case == "mute":
        s.sendall(chunk(8, nc))
    elif case == "unasked":
        s.sendall(chunk(8, nc) + chunk(7, struct.pack("<IIQQII96s", 1, 0, 2, 2, 1, 0x2, b"")))
    elif case == "good":
        s.sendall(chunk(8, nc))
        body = hear(2)
        s.sendall(chunk(9, proof(body)))
    hear(1)
    print("ready", flush=True)
    while not closed:  # until stdin ends: what serve sends meanwhile, said
        r, _, _ = select.select([s, sys.stdin], [], [], 30)
        if not r or sys.stdin in r and not sys.stdin.read(1):
            hear(0.3)  # what came with the end of input, said before closing
            break
        if s in r:
            hear(0)
    s.close()


if __name__ == "__main__":
    main()
