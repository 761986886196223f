# lo_up.py - bring the loopback interface up (SIOCSIFFLAGS: IFF_UP |
# IFF_RUNNING), for tests that run a server inside `unshare -n`, where lo
# starts down and 127.0.0.1 is the only address there is.
import fcntl
import socket
import struct

s = socket.socket()
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", 0x1 | 0x40))
