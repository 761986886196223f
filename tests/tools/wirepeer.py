"""wirepeer.py - what the Python peers of the stream tests (codecpeer.py,
keypeer.py) share to speak trace_stream's wire as a server: the handshake
and chunk header layouts (runtime/trace_wire.h, little-endian) and reading
a connection chunk by chunk, kept in one place so the two cannot drift.
"""
import os
import socket
import struct

HANDSHAKE = struct.Struct("<8sIIII5Q")
CHUNK = struct.Struct("<III")


def read_exact(conn, n, errors_end=False):
    """N bytes from conn, or None at its end (and on a socket error when
    errors_end: a peer that must report whatever it got)."""
    buf = b""
    while len(buf) < n:
        try:
            part = conn.recv(n - len(buf))
        except OSError:
            if not errors_end:
                raise
            return None
        if not part:
            return None
        buf += part
    return buf


def read_chunks(conn, errors_end=False):
    """Yields (type, raw_len, payload) for each whole chunk until the end."""
    while True:
        head = read_exact(conn, CHUNK.size, errors_end)
        if head is None:
            return
        ctype, raw_len, zlen = CHUNK.unpack(head)
        payload = read_exact(conn, zlen, errors_end)
        if payload is None:
            return
        yield ctype, raw_len, payload


def listen_portfile(portfile, backlog):
    """A socket listening on a free port of 127.0.0.1 (accepts time out
    after 60 s), its port written to PORTFILE whole, by a rename."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(backlog)
    lst.settimeout(60)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(lst.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    return lst
