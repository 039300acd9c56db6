"""A WebSocket server pelt did not write: the Python websockets library's asyncio server
(PyPI), for tests/websocket.rs.

/echo sends every message back as it came (text as text, binary as binary); /push sends
`tick` every 10 ms and only counts what it receives; /chat accepts the subprotocol "chat" (and
no other). GET /count (plain HTTP) answers its own counts as JSON: sockets upgraded, sockets
open now, data messages received and sent, and the distinct messages echoed. It binds 127.0.0.1 port 0 and prints
`listening on PORT`.
"""

import asyncio
import http
import json
import sys

from websockets.asyncio.server import serve

counts = {"upgrades": 0, "open": 0, "received": 0, "sent": 0, "distinct": 0}
seen = set()


async def handler(ws):
    counts["upgrades"] += 1
    counts["open"] += 1
    try:
        if ws.request.path == "/push":
            async def tick():
                while True:
                    await asyncio.sleep(0.01)
                    await ws.send("tick")
                    counts["sent"] += 1

            ticking = asyncio.create_task(tick())
            try:
                async for _ in ws:
                    counts["received"] += 1
            finally:
                ticking.cancel()
        else:
            async for message in ws:
                counts["received"] += 1
                if message not in seen:
                    seen.add(message)
                    counts["distinct"] += 1
                await ws.send(message)
                counts["sent"] += 1
    except Exception:
        pass
    finally:
        counts["open"] -= 1


def process_request(connection, request):
    if request.path == "/count":
        return connection.respond(http.HTTPStatus.OK, json.dumps(counts) + "\n")
    return None


def select_subprotocol(connection, subprotocols):
    if connection.request.path == "/chat":
        return "chat" if "chat" in subprotocols else None
    return None


async def main():
    async with serve(
        handler,
        "127.0.0.1",
        0,
        process_request=process_request,
        select_subprotocol=select_subprotocol,
        # The tests hold hundreds of sockets and send thousands of messages; no pings from
        # the server, and no limit on the backlog of messages.
        ping_interval=None,
        max_queue=None,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening on {port}", flush=True)
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
