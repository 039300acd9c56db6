"""aioquic's HTTP/3 server, for pelt's HTTP/3 tests: answers every request with 200 and "ok"
(text/plain). Prints "listening PORT" once it listens on 127.0.0.1 (a free port), then
"served N paths P" (the requests it answered, the distinct paths they asked for) twice a second. Its certificate is a self-signed one
made at start, for 127.0.0.1 and localhost.

`h3_app.py MODE N` misbehaves on purpose, on each connection:
  reject N    resets every Nth request stream with H3_REQUEST_REJECTED (not counted served)
  goaway N    sends GOAWAY after its Nth request (naming the next stream), answers the rest
  close N     closes the connection with H3_EXCESSIVE_LOAD after its Nth answer
  sse N       answers each request with a server-sent event stream of N events, one every
              5 ms (counted served when it starts)
  tickets 0   issues session tickets and takes them back (resumption and 0-RTT)
  forget N    issues tickets but forgets every Nth one presented: that handshake is a full
              one, and the requests sent in its 0-RTT are refused (never answered)"""

import asyncio
import datetime
import os
import socket
import sys
import tempfile

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.buffer import encode_uint_var
from aioquic.quic.events import ProtocolNegotiated
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
import ipaddress

served = 0
paths = set()


MODE = sys.argv[1] if len(sys.argv) > 2 else None
EVERY = int(sys.argv[2]) if len(sys.argv) > 2 else 0
H3_REQUEST_REJECTED = 0x10B
H3_EXCESSIVE_LOAD = 0x107


class App(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = 0

    def quic_event_received(self, event):
        global served
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                paths.add(dict(e.headers).get(b":path"))
            ended = isinstance(e, (HeadersReceived, DataReceived)) and e.stream_ended
            if not ended:
                continue
            self.requests += 1
            if MODE == "reject" and self.requests % EVERY == 0:
                self._quic.reset_stream(e.stream_id, H3_REQUEST_REJECTED)
                continue
            served += 1
            if MODE == "sse":
                self.sse(e.stream_id, 0)
                continue
            self.h3.send_headers(
                e.stream_id,
                [(b":status", b"200"), (b"content-type", b"text/plain"), (b"server", b"aioquic")],
            )
            self.h3.send_data(e.stream_id, b"ok", end_stream=True)
            if MODE == "goaway" and self.requests == EVERY:
                # GOAWAY (type 0x7) on its control stream, naming the next request stream.
                goaway = encode_uint_var(e.stream_id + 4)
                frame = encode_uint_var(0x7) + encode_uint_var(len(goaway)) + goaway
                self._quic.send_stream_data(self.h3._local_control_stream_id, frame)
            if MODE == "close" and self.requests == EVERY:
                self._quic.close(error_code=H3_EXCESSIVE_LOAD, reason_phrase="enough")
        self.transmit()

    def sse(self, stream_id, k):
        """Event k of the stream (its head first), the next one 5 ms later, the end after N."""
        if k == 0:
            self.h3.send_headers(
                stream_id, [(b":status", b"200"), (b"content-type", b"text/event-stream")]
            )
        last = k + 1 == EVERY
        try:
            self.h3.send_data(stream_id, b"data: %d\n\n" % k, end_stream=last)
        except Exception:
            return  # the client stopped the stream (or the connection ended)
        self.transmit()
        if not last:
            asyncio.get_event_loop().call_later(0.005, self.sse, stream_id, k + 1)


def certificate(folder):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Tickets:
    """The server's session tickets, each taken back once (tickets 0, forget N)."""

    def __init__(self, forget):
        self.tickets = {}
        self.forget = forget
        self.presented = 0

    def add(self, ticket):
        self.tickets[ticket.ticket] = ticket

    def pop(self, label):
        self.presented += 1
        ticket = self.tickets.pop(label, None)
        if self.forget and self.presented % self.forget == 0:
            return None
        return ticket


async def main():
    folder = tempfile.mkdtemp(prefix="pelt-h3-")
    cert, key = certificate(folder)
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    port = free_udp_port()
    tickets = {}
    if MODE in ("tickets", "forget"):
        store = Tickets(EVERY if MODE == "forget" else 0)
        tickets = dict(session_ticket_fetcher=store.pop, session_ticket_handler=store.add)
    await serve("127.0.0.1", port, configuration=config, create_protocol=App, **tickets)
    print("listening", port, flush=True)
    while True:
        await asyncio.sleep(0.5)
        print("served", served, "paths", len(paths), flush=True)


asyncio.run(main())
