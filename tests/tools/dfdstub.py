#!/usr/bin/env python3
# dfdstub.py - test helper: a stand-in debuginfod on 127.0.0.1 that takes
# its time, and counts how many requests it had and how many at once.
#
#   dfdstub.py PORTFILE STATS DELAY [DIR]
#
# Listens on a free port of 127.0.0.1 and writes the port to PORTFILE.
# GET /buildid/HEX/debuginfo waits DELAY seconds ("never": an hour, which
# the client gives up on first), then answers with the file DIR/HEX if
# there is one, else 404.  STATS holds one line, "requests=N
# most_at_once=M", rewritten whole as each request comes; a request counts
# as under way while it waits (a client's next request may come before
# this one's thread has finished sending its answer).
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, stats, delay = sys.argv[1], sys.argv[2], sys.argv[3]
served = sys.argv[4] if len(sys.argv) > 4 else None
wait = 3600.0 if delay == "never" else float(delay)
lock = threading.Lock()
count = {"requests": 0, "now": 0, "most": 0}


def say():
    tmp = stats + ".tmp"
    with open(tmp, "w") as f:
        f.write("requests=%d most_at_once=%d\n" % (count["requests"], count["most"]))
    os.replace(tmp, stats)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        with lock:
            count["requests"] += 1
            count["now"] += 1
            count["most"] = max(count["most"], count["now"])
            say()
        time.sleep(wait)
        with lock:  # before the answer: the client's next request comes after it
            count["now"] -= 1
        parts = self.path.split("/")
        body = None
        if len(parts) == 4 and parts[1] == "buildid" and parts[3] == "debuginfo" and served:
            name = os.path.join(served, os.path.basename(parts[2]))
            if os.path.isfile(name):
                with open(name, "rb") as f:
                    body = f.read()
        if body is None:
            self.send_error(404)
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # listen()'s backlog: every client connecting at once is taken


server = Server(("127.0.0.1", 0), Handler)
with lock:
    say()
tmp = portfile + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % server.server_address[1])
os.replace(tmp, portfile)
server.serve_forever()
