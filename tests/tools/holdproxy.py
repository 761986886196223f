#!/usr/bin/env python3
"""holdproxy.py - test helper for tests/stream/439-stream-outage.t: a link that a
test can cut with bytes in flight, so that what a cut loses is known
exactly instead of left to timing.

  holdproxy.py PORTFILE TARGET_PORT CTLDIR

Listens on a free port of 127.0.0.1 (written to PORTFILE once listening)
and carries connections, one at a time, to 127.0.0.1:TARGET_PORT, both
ways.  While CTLDIR/hold exists it passes none of the client's bytes on:
it keeps reading them (the client sees them taken, as a link's buffers
would) and counts the event records of the whole chunks among them
(chunk types 0 and 4, raw_len / 32; runtime/trace_wire.h) in CTLDIR/held.
When CTLDIR/cut appears it resets both sides of the connection (SO_LINGER
0: the client gets a reset, the server a cut), forgets what it held,
removes hold and cut, and carries the next connection normally.  Ends when
a connection that was not cut has closed, or after 120 s.
"""
import os
import select
import socket
import struct
import sys
import time

HANDSHAKE = 64
CHUNK = struct.Struct("<III")


class Framing:
    """Follows the client's framing from the connection's first byte (the
    handshake, then chunk headers and frames) and counts the event records
    of the chunks that ended while held back."""

    def __init__(self):
        self.buf = b""
        self.body = HANDSHAKE  # bytes still to come of the handshake or of a chunk's frame
        self.records = 0       # of the chunk whose frame is coming
        self.held = 0

    def feed(self, data, holding):
        self.buf += data
        while True:
            n = min(self.body, len(self.buf))
            self.buf, self.body = self.buf[n:], self.body - n
            if self.body:
                return
            if holding:
                self.held += self.records
            self.records = 0
            if len(self.buf) < CHUNK.size:
                return
            ctype, raw_len, zlen = CHUNK.unpack(self.buf[:CHUNK.size])
            self.buf = self.buf[CHUNK.size:]
            self.body = zlen
            self.records = raw_len // 32 if ctype in (0, 4) else 0


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def reset(sock):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def carry(client, target_port, ctl, deadline):
    """One connection; True when the test cut it."""
    server = socket.create_connection(("127.0.0.1", target_port), timeout=10)
    framing = Framing()
    hold_path, cut_path, count_path = (os.path.join(ctl, n) for n in ("hold", "cut", "held"))
    up = True  # the client still sends
    while time.time() < deadline:
        if os.path.exists(cut_path):
            reset(client)
            reset(server)
            for p in (hold_path, cut_path):
                os.unlink(p)
            return True
        r, _, _ = select.select([client, server] if up else [server], [], [], 0.02)
        if client in r:
            data = client.recv(65536)
            if not data:
                up = False
                server.shutdown(socket.SHUT_WR)
            else:
                holding = os.path.exists(hold_path)
                framing.feed(data, holding)
                if holding:
                    write_atomic(count_path, "%d\n" % framing.held)
                else:
                    server.sendall(data)
        if server in r:
            data = server.recv(65536)
            if not data:
                break
            client.sendall(data)
    client.close()
    server.close()
    return False


def main(portfile, target_port, ctl):
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)
    write_atomic(portfile, str(lst.getsockname()[1]))
    deadline = time.time() + 120
    lst.settimeout(1)
    while time.time() < deadline:
        try:
            client, _ = lst.accept()
        except socket.timeout:
            continue
        if not carry(client, int(target_port), ctl, deadline):
            break


if __name__ == "__main__":
    main(*sys.argv[1:4])
