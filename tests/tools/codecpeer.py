#!/usr/bin/env python3
"""codecpeer.py - test helper for tests/stream/448-stream-codec.t and
tests/stream/446-stream-no-libzstd.t: the peers a codec test needs that the real
programs cannot play.

  codecpeer.py oldserver PORTFILE
      A server from before the codec: accepts one connection, reads it to
      the end, never writes a byte.  Writes its port to PORTFILE, then
      prints "flags=0xF chunks=T:N,... records=R" (the handshake's flags,
      how many chunks of each type, the records in events chunks).
  codecpeer.py ackserver PORTFILE
      The same, but it sends the codec ack right after the handshake
      whatever the handshake offered, as no correct server would: a client
      that did not offer the codec must still never code.
  codecpeer.py sumserver PORTFILE
      The same, its ack saying it takes summary snapshots but not their
      increments (features 1: serve before TRACE_CHUNK_SUMMARY_INCREMENTS).
  codecpeer.py client PORT offer|plain [coded]
      A client: handshake (with or without the codec offer), optionally one
      coded events chunk, then it shuts its side and reads until the server
      closes.  Prints "received N bytes: HEX".
  codecpeer.py ringfill SHM RECORDS_OUT CLIENT_LOG N
      Plays a tracer of another agent (no liveness lock): creates the ring
      SHM holding N known-random records (markers, reserved kinds, odd and
      colliding tids, stacks 300 deep, random pad bytes), publishes the
      first 1000, waits until trace_stream says in CLIENT_LOG that the
      server acked the codec, publishes the rest and detaches.  Writes all
      N records to RECORDS_OUT, to compare with what serve wrote.

Layouts: runtime/trace_shm.h (ring), trace_wire.h (wire).  Everything little-endian (this runs on the
host whose ring it fills).
"""
import mmap
import os
import random
import socket
import struct
import sys
import time

from wirepeer import listen_portfile, CHUNK, HANDSHAKE, read_chunks, read_exact

OFFER = 0x100


def oldserver(portfile, ack=False, features=0):
    lst = listen_portfile(portfile, 1)
    conn, _ = lst.accept()
    conn.settimeout(60)
    hs = read_exact(conn, HANDSHAKE.size)
    flags = HANDSHAKE.unpack(hs)[3]
    if ack:
        conn.sendall(struct.pack("<8sII", b"TKACK", 1, features))
    types, records = {}, 0
    for ctype, raw_len, _ in read_chunks(conn):
        types[ctype] = types.get(ctype, 0) + 1
        if ctype in (0, 4):
            records += raw_len // 32
    conn.close()
    print("flags=0x%x chunks=%s records=%d" % (
        flags, ",".join("%d:%d" % kv for kv in sorted(types.items())), records))


def client(port, offer, coded):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
    flags = 1 | (OFFER if offer == "offer" else 0)
    s.sendall(HANDSHAKE.pack(b"TKSTREAM", 2, 32, flags, 0, 0x1000, 3000000000, 111, 222, 33))
    if coded:
        s.sendall(CHUNK.pack(4, 32, 10) + bytes(10))
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        try:
            part = s.recv(4096)
        except ConnectionResetError:  # serve closed with our bytes unread
            break
        if not part:
            break
        got += part
    print("received %d bytes: %s" % (len(got), got.hex()))


def make_records(n):
    rnd = random.Random(48)
    tids = [7, 0, 0xFFFFFFFF, 7 + 64, 7 + 128, 1000]
    depth = {t: [] for t in tids}
    ts = {t: 0 for t in tids}
    out = bytearray()
    for _ in range(n):
        t = rnd.choice(tids)
        ts[t] += rnd.randrange(0, 5000)
        r = rnd.randrange(100)
        stack = depth[t]
        pad = b"\0\0\0"
        if r < 3:
            rec = (ts[t], 21, rnd.getrandbits(64), t, 2)
        elif r < 4:
            rec = (rnd.getrandbits(64), rnd.getrandbits(64), rnd.getrandbits(64), t, rnd.randrange(3, 256))
            pad = bytes(rnd.randrange(256) for _ in range(3))
        elif not stack or (r < 55 and len(stack) < 300):
            f = 0x555555554000 + rnd.randrange(60) * 0x80
            site = stack[-1] + rnd.randrange(1, 0x80) if stack else 0x7F0000001234
            rec = (ts[t], f, site, t, 0)
            stack.append(f)
        else:
            f = stack.pop()
            rec = (ts[t], f, (stack[-1] + 0x10) if stack else 0, t, 1)
        out += struct.pack("<QQQIB", *rec) + pad
    return bytes(out)


def ringfill(shm, records_out, client_log, n):
    n = int(n)
    cap = (n * 32 + 4095) // 4096 * 4096
    data = make_records(n)
    with open(records_out, "wb") as f:
        f.write(data)
    path = "/dev/shm/" + shm.lstrip("/")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 96 + cap)
    m = mmap.mmap(fd, 96 + cap)
    # version, capacity, writers = 1; flags 0; calibration: ns timestamps
    struct.pack_into("<III", m, 8, 2, cap, 1)
    m[96:96 + 1000 * 32] = data[:1000 * 32]
    m[24:32] = struct.pack("<Q", 1000 * 32)  # head: one aligned 8-byte store
    m[0:8] = b"TKSHM\0\0\0"                  # magic last
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with open(client_log) as f:
                if "the server decodes coded chunks" in f.read():
                    break
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    else:
        print("ringfill: trace_stream never said the codec was acked")
    m[96 + 1000 * 32:96 + n * 32] = data[1000 * 32:]
    m[24:32] = struct.pack("<Q", n * 32)
    m[16:20] = struct.pack("<I", 0)           # writers = 0: detached
    m.close()
    os.close(fd)
    print("ringfill: %d records" % n)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "oldserver":
        oldserver(sys.argv[2])
    elif cmd == "ackserver":
        oldserver(sys.argv[2], ack=True)
    elif cmd == "sumserver":  # takes summaries, not their increments (chunk type 5)
        oldserver(sys.argv[2], ack=True, features=1)
    elif cmd == "client":
        client(sys.argv[2], sys.argv[3], len(sys.argv) > 4)
    elif cmd == "ringfill":
        ringfill(*sys.argv[2:6])
