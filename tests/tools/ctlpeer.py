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

  ctlpeer.py keyed PORTFILE KEYFILE
      A server that holds the key (trace_stream --auth-key, TRACE_STREAM_
      FLAG_AUTH_OFFER): acks SUMMARIES|CONTROL|AUTH, answers the client's
      hello with its nonce and proof, prints "proof=ok" or "proof=bad" for
      the client's, and then sends, in one write: a keep request whose
      code is wrong (seq 1), one whose code is right (seq 2), the same again
      (seq 2, replayed) and one with no code at all (seq 3).  Prints the
      answers and records as above.

  ctlpeer.py tkauth PORTFILE KEYFILE CASE
      A server that holds the key but sends its TKAUTH wrong, as CASE says,
      then (after the client's first chunk past the hello) a keep request
      signed with the session key its TKAUTH would give (seq 1) and the
      same request with no code (seq 2).  None may be applied: the client
      refuses them, or has stopped reading requests.  CASE:
        early     the TKAUTH before the ack (its proof over a zero nonce)
        noack     an ack without the AUTH bit, then a right TKAUTH
        wronglen  a right TKAUTH whose head says 63 bytes
        twice     a right TKAUTH, then a second with another nonce (the
                  request signed for the second)
        truncated a TKAUTH cut after 40 of its 64 bytes
        wrongkey  a TKAUTH whose proof is made with another key
      Prints "sent" once the requests went, then the answers, then
      "proof=ok|bad|none" (the client's proof, if it sent one) and
      records as above.

  ctlpeer.py mitm PORTFILE KEYFILE
      A forger on the path, played by a server that holds the key (the
      forger does not: it only replays and flips what it saw).  On the
      client's first connection, after the exchange: a signed keep
      request (seq 1, applied), then seq 2 with a byte of its body
      flipped, one whose head says seq 4 under a code made for seq 3, and
      seq 5 whose head's len is one more than the code was made for (one
      byte more follows); then it closes.  On the second (the client
      reconnects), after the exchange: the first connection's seq 1 word
      for word, then a fresh signed seq 2 (applied), and it reads on to
      the end.  Prints "conn N" at each, and the answers as above.
"""
import ctypes
import hashlib
import hmac
import os
import socket
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


def answers(conn, on_chunk):
    """Reads the connection to its end: on_chunk(type, raw) for each chunk,
    each control answer printed; returns the records in events chunks."""
    records = 0
    for ctype, raw_len, payload in read_chunks(conn):
        on_chunk(ctype, unzstd(payload, raw_len) if ctype in (7, 8, 9) else b"")
        if ctype in (0, 4):
            records += raw_len // 32
        if ctype == 7:
            seq, status, gen, _, _, _, reason = ANSWER.unpack(unzstd(payload, raw_len))
            print("answer seq=%d status=%d gen=%d reason=%s" % (seq, status, gen, reason.rstrip(b"\0").decode()),
                  flush=True)
    return records


def keyed(portfile, keyfile):
    key = open(keyfile, "rb").read()
    lst = listen_portfile(portfile, 1)
    conn, _ = lst.accept()
    conn.settimeout(60)
    flags = HANDSHAKE.unpack(read_exact(conn, HANDSHAKE.size))[3]
    conn.sendall(ACK.pack(b"TKACK", 0, 0x1 | 0x8 | 0x10))
    print("flags=0x%x" % flags, flush=True)
    st = {}

    def mac(k, label, a, b):
        return hmac.new(k, label + a + b, hashlib.sha256).digest()

    def request(seq, body, code):
        head = HEAD.pack(b"TKCTL", seq, len(body) + len(code))
        return head + body + code

    def on_chunk(ctype, raw):
        if ctype == 8:  # the client's nonce: ours and our proof
            st["nc"], st["ns"] = raw, os.urandom(32)
            proof = mac(key, b"callsight-server", st["nc"], st["ns"])
            st["session"] = mac(key, b"callsight-sessio", st["nc"], st["ns"])
            conn.sendall(HEAD.pack(b"TKAUTH", 0, 64) + st["ns"] + proof)
        if ctype == 9:
            good = hmac.compare_digest(raw, mac(key, b"callsight-client", st["nc"], st["ns"]))
            print("proof=%s" % ("ok" if good else "bad"), flush=True)
            keep = BODY.pack(0, 0, 0x1, 0, 0, 0, 0, 0, 0)
            sign = lambda seq: hmac.new(st["session"], HEAD.pack(b"TKCTL", seq, len(keep) + 32) + keep,
                                        hashlib.sha256).digest()
            wrong = bytes(32)
            conn.sendall(request(1, keep, wrong) + request(2, keep, sign(2)) + request(2, keep, sign(2)) +
                         request(3, keep, b""))

    records = answers(conn, on_chunk)
    conn.close()
    print("records=%d" % records)


def tkauth(portfile, keyfile, case):
    key = open(keyfile, "rb").read()
    lst = listen_portfile(portfile, 1)
    conn, _ = lst.accept()
    conn.settimeout(60)
    flags = HANDSHAKE.unpack(read_exact(conn, HANDSHAKE.size))[3]
    keep = BODY.pack(0, 0, 0x1, 0, 0, 0, 0, 0, 0)
    mac = lambda k, label, a, b: hmac.new(k, label + a + b, hashlib.sha256).digest()
    msg = lambda nc, ns, k=key, n=64: HEAD.pack(b"TKAUTH", 0, n) + ns + mac(k, b"callsight-server", nc, ns)
    st = {"proof": "none", "sent": False}
    if case == "early":
        st["ns"] = os.urandom(32)
        conn.sendall(msg(bytes(32), st["ns"]))
    conn.sendall(ACK.pack(b"TKACK", 0, 0x1 | 0x8 | (0 if case == "noack" else 0x10)))
    print("flags=0x%x" % flags, flush=True)

    def on_chunk(ctype, raw):
        if ctype == 8:
            st["nc"], st["ns"] = raw, os.urandom(32)
            if case in ("noack", "twice"):
                conn.sendall(msg(st["nc"], st["ns"]))
            if case == "twice":
                st["ns"] = os.urandom(32)
                conn.sendall(msg(st["nc"], st["ns"]))
            elif case == "wronglen":
                conn.sendall(HEAD.pack(b"TKAUTH", 0, 63) + msg(st["nc"], st["ns"])[16:])
            elif case == "truncated":
                conn.sendall(msg(st["nc"], st["ns"])[:16 + 40])
            elif case == "wrongkey":
                conn.sendall(msg(st["nc"], st["ns"], k=os.urandom(32)))
            return
        if ctype == 9:
            good = hmac.compare_digest(raw, mac(key, b"callsight-client", st.get("nc", b""), st.get("ns", b"")))
            st["proof"] = "ok" if good else "bad"
        if ctype in (0, 1, 2, 5, 9) and "nc" in st and not st["sent"]:
            st["sent"] = True
            session = mac(key, b"callsight-sessio", st["nc"], st["ns"])
            code = hmac.new(session, HEAD.pack(b"TKCTL", 1, len(keep) + 32) + keep, hashlib.sha256).digest()
            conn.sendall(HEAD.pack(b"TKCTL", 1, len(keep) + 32) + keep + code + HEAD.pack(b"TKCTL", 2, len(keep)) + keep)
            print("sent", flush=True)

    records = answers(conn, on_chunk)
    conn.close()
    print("proof=%s" % st["proof"])
    print("records=%d" % records)


def mitm(portfile, keyfile):
    key = open(keyfile, "rb").read()
    lst = listen_portfile(portfile, 1)
    keep = BODY.pack(0, 0, 0x1, 0, 0, 0, 0, 0, 0)
    mac = lambda k, label, a, b: hmac.new(k, label + a + b, hashlib.sha256).digest()
    seen = {}
    for n in (1, 2):
        conn, _ = lst.accept()
        conn.settimeout(60)
        read_exact(conn, HANDSHAKE.size)
        conn.sendall(ACK.pack(b"TKACK", 0, 0x1 | 0x8 | 0x10))
        print("conn %d" % n, flush=True)
        st = {"answers": 0}

        def signed(seq, body, code_seq=None, code_len=None):
            head = HEAD.pack(b"TKCTL", seq, len(body) + 32)
            mhead = HEAD.pack(b"TKCTL", code_seq or seq, code_len or len(body) + 32)
            return head, hmac.new(st["session"], mhead + body, hashlib.sha256).digest()

        def on_chunk(ctype, raw):
            if ctype == 8:
                st["nc"], st["ns"] = raw, os.urandom(32)
                st["session"] = mac(key, b"callsight-sessio", st["nc"], st["ns"])
                conn.sendall(HEAD.pack(b"TKAUTH", 0, 64) + st["ns"] + mac(key, b"callsight-server", st["nc"], st["ns"]))
            if ctype == 9 and n == 1:
                head, code = signed(1, keep)
                seen["one"] = head + keep + code
                flipped = bytearray(keep)
                flipped[8] ^= 0x1  # what: keep no more
                h2, c2 = signed(2, keep)
                h4, c4 = signed(4, keep, code_seq=3)
                h5, c5 = signed(5, keep)
                h5 = HEAD.pack(b"TKCTL", 5, len(keep) + 33)
                conn.sendall(seen["one"] + h2 + bytes(flipped) + c2 + h4 + keep + c4 + h5 + keep + c5 + b"\0")
            if ctype == 9 and n == 2:
                head, code = signed(2, keep)
                conn.sendall(seen["one"] + head + keep + code)
            if ctype == 7 and n == 1:
                st["answers"] += 1
                if st["answers"] == 4:  # the client reconnects
                    conn.shutdown(socket.SHUT_RDWR)

        answers(conn, on_chunk)
        conn.close()
    lst.close()


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile(sys.argv[2])
    elif sys.argv[1] == "keyed":
        keyed(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "mitm":
        mitm(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "tkauth":
        tkauth(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: ctlpeer.py hostile PORTFILE | keyed PORTFILE KEYFILE | tkauth PORTFILE KEYFILE CASE | mitm PORTFILE KEYFILE")
