#!/usr/bin/env python3
"""ctlpeer.py - test helper for tests/stream/465-stream-control.t: a server
no correct serve is, to attack trace_stream --allow-control's reading of
live-control requests (runtime/trace_wire.h).

  ctlpeer.py hostile PORTFILE
      Accepts one connection, reads the handshake, acks with features
      SUMMARIES|CONTROL, and after the client's first chunk sends, in one
      write: a control request whose body's count of functions does not
      match its length (seq 1), a whole valid one that keeps the functions
      and sets nothing (seq 2: "record everything"), one naming a function
      at address 0 (seq 3), then a head announcing a body longer than any
      request (seq 4).  Reads the connection to its end and prints its
      handshake's flags, each control answer as "answer seq=S status=T
      gen=G reason=R" (payloads decompressed with the system's libzstd),
      and "records=N" (records in events chunks).
"""
import ctypes
import struct
import sys

from wirepeer import listen_portfile, HANDSHAKE, read_chunks, read_exact

ACK = struct.Struct("<8sII")
HEAD = struct.Struct("<8sII")
BODY = struct.Struct("<IIII2QQII")
ANSWER = struct.Struct("<IIQQII96s")
zstd = ctypes.CDLL("libzstd.so.1")
zstd.ZSTD_decompress.restype = ctypes.c_size_t
zstd.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]


def unzstd(frame, raw_len):
    out = ctypes.create_string_buffer(raw_len)
    n = zstd.ZSTD_decompress(out, raw_len, frame, len(frame))
    return out.raw[:n]


def hostile(portfile):
    lst = listen_portfile(portfile, 1)
    conn, _ = lst.accept()
    conn.settimeout(60)
    flags = HANDSHAKE.unpack(read_exact(conn, HANDSHAKE.size))[3]
    conn.sendall(ACK.pack(b"TKACK", 0, 0x1 | 0x8))
    print("flags=0x%x" % flags, flush=True)
    sent, records = False, 0
    for ctype, raw_len, payload in read_chunks(conn):
        if not sent:
            bad = BODY.pack(0x2, 3, 0, 0, 0, 0, 0, 0, 0) + struct.pack("<Q", 0x1234)  # says 3, holds 1
            keep = BODY.pack(0, 0, 0x1, 0, 0, 0, 0, 0, 0)
            zero = BODY.pack(0x2, 1, 0, 0, 0, 0, 0, 0, 0) + struct.pack("<Q", 0)
            conn.sendall(HEAD.pack(b"TKCTL", 1, len(bad)) + bad + HEAD.pack(b"TKCTL", 2, len(keep)) + keep +
                         HEAD.pack(b"TKCTL", 3, len(zero)) + zero + HEAD.pack(b"TKCTL", 4, 0x7fffffff))
            sent = True
        if ctype in (0, 4):
            records += raw_len // 32
        if ctype == 7:
            seq, status, gen, _, _, _, reason = ANSWER.unpack(unzstd(payload, raw_len))
            print("answer seq=%d status=%d gen=%d reason=%s" % (seq, status, gen, reason.rstrip(b"\0").decode()),
                  flush=True)
    conn.close()
    print("records=%d" % records)


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile(sys.argv[2])
    else:
        sys.exit("usage: ctlpeer.py hostile PORTFILE")
