"""A gRPC server pelt did not write: Python's grpcio (PyPI), serving greeter.proto's
pelt.test.Greeter with generic handlers (no generated code), for tests/grpc.rs.

It counts every call it ends by method and status, the distinct names SayHello was sent, and
the `x-greeting` metadata values it was sent. `POST /v1/greeter/hello` on the side HTTP/1.1
server is SayHello's JSON gateway (as grpc-gateway maps it), counted as "Gateway". Its reflection service
(grpcio-reflection, v1alpha) describes greeter.proto from a descriptor built here. A side HTTP/1.1 server answers
`GET /count` with those counts as JSON, and the gRPC port as `grpc_port`. It binds 127.0.0.1
port 0 for both and prints `listening on COUNTPORT`. With `--tls CERT KEY` it serves gRPC over
TLS (grpcs).
"""

import json
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection

counts = {}
names = set()
# The x-greeting metadata values SayHello was sent.
tokens = set()
flaky = [0]
lock = threading.Lock()


def count(method, status):
    with lock:
        key = f"{method} {status}"
        counts[key] = counts.get(key, 0) + 1


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def name_of(request):
    """HelloRequest's field 1 (a string), read from protobuf's wire format."""
    i = 0
    while i < len(request):
        key = request[i]
        i += 1
        length = 0
        shift = 0
        while True:
            b = request[i]
            i += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if key == 0x0A:
            return request[i : i + length].decode()
        i += length
    return ""


def reply(message):
    data = message.encode()
    return b"\x0a" + varint(len(data)) + data


def hello(name, method):
    """SayHello's rules, for the gRPC method and its JSON gateway: whether the call fails."""
    with lock:
        names.add(name)
    fail = name.startswith("fail")
    if name == "flaky":
        with lock:
            flaky[0] += 1
            fail = flaky[0] % 3 == 0
    count(method, "UNAVAILABLE" if fail else "OK")
    if name == "slow" and not fail:
        time.sleep(0.2)
    return fail


def say_hello(request, context):
    name = name_of(request)
    for key, value in context.invocation_metadata():
        if key == "x-greeting":
            with lock:
                tokens.add(value)
    if hello(name, "SayHello"):
        context.abort(grpc.StatusCode.UNAVAILABLE, f"backend down: {name}")
    if name == "big":
        return reply("x" * (5 * 1024 * 1024))
    return reply(f"Hello {name}")


def say_hellos(request, context):
    name = name_of(request)
    n = int(name.split(":")[1]) if name.startswith("count:") else 1
    done = False
    try:
        for k in range(n):
            time.sleep(0.001)
            yield reply(f"Hello {k}")
        done = True
    finally:
        # A call the client cancelled closes the generator at its yield.
        count("SayHellos", "OK" if done else "CANCELLED")


def say_hello_many(requests, context):
    got = [name_of(r) for r in requests]
    with lock:
        counts["messages in"] = counts.get("messages in", 0) + len(got)
    count("SayHelloMany", "OK")
    return reply("Hello " + ", ".join(got))


def chat(requests, context):
    n = 0
    for r in requests:
        n += 1
        yield reply(f"Hello {name_of(r)}")
    with lock:
        counts["messages in"] = counts.get("messages in", 0) + n
    count("Chat", "OK")


class Counts(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        with lock:
            body = json.dumps({"calls": counts, "names": len(names), "grpc_port": grpc_port,
                               "tokens": sorted(tokens)})
        self.answer(200, body)

    def do_POST(self):
        """SayHello's JSON gateway (as grpc-gateway maps it): POST /v1/greeter/hello with a
        HelloRequest as JSON; a failed call is a 503 with gRPC's status in its JSON."""
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/greeter/hello":
            return self.answer(404, "{}")
        name = json.loads(data or b"{}").get("name", "")
        if hello(name, "Gateway"):
            return self.answer(503, json.dumps({"code": 14, "message": f"backend down: {name}"}))
        self.answer(200, json.dumps({"message": f"Hello {name}"}))

    def answer(self, status, body):
        body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def describe():
    """greeter.proto's descriptor, added to the default pool the reflection service reads."""
    f = descriptor_pb2.FileDescriptorProto(name="greeter.proto", package="pelt.test", syntax="proto3")
    for name, field in (("HelloRequest", "name"), ("HelloReply", "message")):
        m = f.message_type.add(name=name)
        m.field.add(name=field, json_name=field, number=1, type=9, label=1)
    s = f.service.add(name="Greeter")
    s.method.add(name="SayHello", input_type=".pelt.test.HelloRequest",
                 output_type=".pelt.test.HelloReply")
    s.method.add(name="SayHellos", input_type=".pelt.test.HelloRequest",
                 output_type=".pelt.test.HelloReply", server_streaming=True)
    s.method.add(name="SayHelloMany", input_type=".pelt.test.HelloRequest",
                 output_type=".pelt.test.HelloReply", client_streaming=True)
    s.method.add(name="Chat", input_type=".pelt.test.HelloRequest",
                 output_type=".pelt.test.HelloReply", client_streaming=True,
                 server_streaming=True)
    descriptor_pool.Default().Add(f)


raw = {"request_deserializer": None, "response_serializer": None}
handler = grpc.method_handlers_generic_handler(
    "pelt.test.Greeter",
    {
        "SayHello": grpc.unary_unary_rpc_method_handler(say_hello, **raw),
        "SayHellos": grpc.unary_stream_rpc_method_handler(say_hellos, **raw),
        "SayHelloMany": grpc.stream_unary_rpc_method_handler(say_hello_many, **raw),
        "Chat": grpc.stream_stream_rpc_method_handler(chat, **raw),
    },
)
server = grpc.server(
    futures.ThreadPoolExecutor(max_workers=32),
    options=[("grpc.max_send_message_length", 16 * 1024 * 1024)],
)
server.add_generic_rpc_handlers((handler,))
describe()
reflection.enable_server_reflection(("pelt.test.Greeter", reflection.SERVICE_NAME), server)
if len(sys.argv) == 4 and sys.argv[1] == "--tls":
    # grpcs: this certificate and key (PEM).
    with open(sys.argv[2], "rb") as c, open(sys.argv[3], "rb") as k:
        credentials = grpc.ssl_server_credentials([(k.read(), c.read())])
    grpc_port = server.add_secure_port("127.0.0.1:0", credentials)
else:
    grpc_port = server.add_insecure_port("127.0.0.1:0")
server.start()
http = ThreadingHTTPServer(("127.0.0.1", 0), Counts)
print(f"listening on {http.server_address[1]}", flush=True)
try:
    http.serve_forever()
finally:
    server.stop(0)
