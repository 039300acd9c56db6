"""A small web site for tests/replay.rs's HAR test: the page a headless Chromium loads (and
records as a HAR), then the server pelt replays that HAR against. Python's own http.server,
HTTP/1.1 with keep-alive.

It serves the files of site/ (and answers POST /api/... and GET /api/... with a little JSON),
and keeps every request it answered, in order: GET /__log answers them as JSON (method, path
with query, Host header, body). It binds 127.0.0.1 port 0 and prints `listening on PORT`.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
log = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_one(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        if self.path == "/__log":
            with lock:
                text = json.dumps(log)
            return self.answer(200, text.encode())
        with lock:
            log.append({"method": self.command, "path": self.path,
                        "host": self.headers.get("Host", ""), "body": body})
        if self.path.startswith("/api/"):
            return self.answer(200, json.dumps({"ok": True, "got": body}).encode())
        name = "index.html" if self.path == "/" else self.path.lstrip("/").split("?")[0]
        file = os.path.join(SITE, os.path.basename(name))
        if self.command == "GET" and os.path.isfile(file):
            with open(file, "rb") as f:
                data = f.read()
            return self.answer(200, data, TYPES.get(os.path.splitext(file)[1], "text/plain"))
        self.answer(404, b"{}")

    do_GET = do_POST = do_PUT = do_DELETE = handle_one


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"listening on {server.server_address[1]}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
