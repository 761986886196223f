#!/usr/bin/env python3
"""uidrive.py - drive callsight ui's pages in headless Chromium, for tests/ui/.

    uidrive.py SCRIPT.json

Starts chromedriver on a free 127.0.0.1 port and one headless Chromium
session through its WebDriver HTTP API (plain urllib: no selenium), runs
the steps of SCRIPT.json in order, prints one JSON object per step on
stdout, then ends the session and chromedriver (also on error or after
the time limit).  Steps:

    {"go": URL, "ready": PAGE}   load URL; wait (at most 20 s) until the
                                 app marks PAGE drawn (body[data-ready],
                                 cleared before loading)
    {"js": CODE}                 run CODE (a function body) in the page:
                                 prints {"value": what it returns}
    {"click": CSS}               click the first element CSS selects
    {"type": [CSS, TEXT]}        clear it, type TEXT into it
    {"wait": CODE}               run CODE until it returns true (20 s)
    {"shot": FILE}               a PNG screenshot of the window to FILE
    {"logs": true}               the console messages since the last
                                 logs step, level SEVERE and WARNING:
                                 prints {"logs": [...]}

Exit status: 0 every step ran, 1 a step failed (its error printed as
{"error": ...}), 2 usage, 3 no chromium or chromedriver (the test skips).
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Driver:
    def __init__(self):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="uidrive.")
        self.proc = subprocess.Popen(
            ["chromedriver", "--port=%d" % self.port, "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.base = "http://127.0.0.1:%d" % self.port
        self.session = None
        for _ in range(100):
            try:
                self.call("GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": shutil.which("chromium") or "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,900", "--user-data-dir=" + self.profile,
                         "--no-first-run", "--disable-extensions", "--disable-background-networking"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError(json.loads(e.read() or b"{}").get("value", {}).get("message", str(e))[:500])

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.session, path), body)

    def js(self, code):
        return self.s("POST", "/execute/sync", {"script": code, "args": []})

    def until(self, code, what):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.js(code):
                return
            time.sleep(0.1)
        raise RuntimeError("timed out waiting for " + what)

    def find(self, css):
        el = self.s("POST", "/element", {"using": "css selector", "value": css})
        return list(el.values())[0]

    def close(self):
        try:
            if self.session:
                self.call("DELETE", "/session/" + self.session)
        except Exception:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def step(d, st):
    if "go" in st:
        # A URL that differs only in its #fragment is drawn by the page
        # already loaded: clear its mark first, so the wait below is for
        # the new page, not the one before it.
        d.js("if (document.body) delete document.body.dataset.ready")
        d.s("POST", "/url", {"url": st["go"]})
        if "ready" in st:
            d.until("return document.body && document.body.dataset.ready === %s" % json.dumps(st["ready"]),
                    "page " + st["ready"])
        return {"ok": True}
    if "js" in st:
        return {"value": d.js(st["js"])}
    if "click" in st:
        d.s("POST", "/element/%s/click" % d.find(st["click"]), {})
        return {"ok": True}
    if "type" in st:
        el = d.find(st["type"][0])
        d.s("POST", "/element/%s/clear" % el, {})
        d.s("POST", "/element/%s/value" % el, {"text": st["type"][1]})
        return {"ok": True}
    if "wait" in st:
        d.until(st["wait"], st["wait"][:60])
        return {"ok": True}
    if "shot" in st:
        with open(st["shot"], "wb") as f:
            f.write(base64.b64decode(d.s("GET", "/screenshot")))
        return {"ok": True}
    if "logs" in st:
        logs = d.s("POST", "/se/log", {"type": "browser"}) or []
        return {"logs": [l["level"] + ": " + l["message"] for l in logs if l["level"] in ("SEVERE", "WARNING")]}
    raise RuntimeError("unknown step " + json.dumps(st)[:80])


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    if not shutil.which("chromedriver") or not (shutil.which("chromium") or os.path.exists("/usr/bin/chromium")):
        return 3
    with open(sys.argv[1]) as f:
        steps = json.load(f)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(RuntimeError("time limit (120 s)")))
    signal.alarm(120)
    d = None
    try:
        d = Driver()
        for st in steps:
            print(json.dumps(step(d, st)), flush=True)
        return 0
    except Exception as e:  # one line, then the cleanup below
        print(json.dumps({"error": str(e)}), flush=True)
        return 1
    finally:
        signal.alarm(0)
        if d:
            d.close()


if __name__ == "__main__":
    sys.exit(main())
