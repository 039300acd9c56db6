#!/usr/bin/env python3
"""A shop that checks who is asking: the test application of pelt's scenario tests.

POST /login with a body `user=NAME` answers `{"token": ...}` and sets a session cookie; both
are NAME's alone (a secret drawn at start). GET /items and POST /cart/ID answer only a request
that carries NAME's token (Authorization: Bearer) *and* NAME's session cookie; anything else
is refused with 401 and counted, with what it carried. GET /slow/MS answers anyone after MS
milliseconds. GET /stats gives the counts: per
endpoint and user, and the refusals. Listens on 127.0.0.1, on the port the system picks, which
it prints as its first line. With `--tls CERT KEY` it speaks HTTPS, and the session cookie is
Secure. Python's standard library only.
"""
import collections
import json
import secrets
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = secrets.token_hex(8)
SECURE = ""
counts = collections.Counter()
lock = threading.Lock()


def token(user):
    return f"T.{user}.{SECRET}"


def session(user):
    return f"S.{user}.{SECRET}"


class Shop(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # One write per response would still meet the client's delayed ACK without this.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def count(self, *key):
        with lock:
            counts[" ".join(key)] += 1

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def who(self):
        """The user whose token and cookie this request carries, or None (refused)."""
        auth = self.headers.get("Authorization", "")
        cookies = dict(c.strip().split("=", 1) for c in self.headers.get("Cookie", "").split(";") if "=" in c)
        for_token = auth[len("Bearer T."):].rsplit(".", 1)[0] if auth.startswith("Bearer T.") else None
        for_cookie = cookies.get("sid", "")[2:].rsplit(".", 1)[0] if cookies.get("sid", "").startswith("S.") else None
        if for_token and for_token == for_cookie and auth == f"Bearer {token(for_token)}" \
                and cookies.get("sid") == session(for_cookie):
            return for_token
        self.count("refused", self.path)
        self.answer(401, {"error": "who are you?"})
        return None

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        if self.path == "/login":
            user = body.partition("user=")[2]
            self.count("login", user)
            return self.answer(200, {"token": token(user)},
                               [("Set-Cookie", f"sid={session(user)}; Path=/; HttpOnly{SECURE}")])
        user = self.who()
        if user and self.path.startswith("/cart/"):
            self.count("cart", user, self.path[len("/cart/"):])
            self.answer(201, {"added": self.path[len("/cart/"):]})
        elif user:
            self.answer(404, {})

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                return self.answer(200, dict(counts))
        if self.path.startswith("/slow/"):
            # A stall anyone may ask for: /slow/MS answers after MS milliseconds.
            self.count("slow")
            time.sleep(int(self.path[len("/slow/"):]) / 1000)
            return self.answer(200, {})
        user = self.who()
        if user and self.path == "/items":
            self.count("items", user)
            self.answer(200, {"items": [{"id": 7}, {"id": 8}]})
        elif user:
            self.answer(404, {})


# A proxy in front (nginx, in the HTTP/2 test) opens many connections at once: a listen
# queue of 5, the default, drops their SYNs and stalls them for a second.
ThreadingHTTPServer.request_queue_size = 128
server = ThreadingHTTPServer(("127.0.0.1", 0), Shop)
server.daemon_threads = True
if len(sys.argv) == 4 and sys.argv[1] == "--tls":
    # HTTPS with this certificate and key; the session cookie is then marked Secure.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    SECURE = "; Secure"
print(server.server_address[1], flush=True)
server.serve_forever()
