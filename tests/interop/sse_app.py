"""A server-sent events server pelt did not write: sse-starlette's EventSourceResponse on
Starlette, served by uvicorn (all from PyPI), for tests/streams.rs.

GET or POST /stream?n=N&gap_ms=G&done=1 streams N events (data: the event's index), G ms
apart, then `data: [DONE]` when asked; GET /count says how many streams it finished and how
many events it sent, as JSON. It binds 127.0.0.1 port 0 and prints `listening on PORT`.
"""

import asyncio
import socket
import sys

import uvicorn
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

counts = {"streams": 0, "events": 0}


async def stream(request):
    n = int(request.query_params.get("n", "10"))
    gap = int(request.query_params.get("gap_ms", "5")) / 1000
    done = request.query_params.get("done") == "1"

    async def events():
        for i in range(n):
            if gap:
                await asyncio.sleep(gap)
            counts["events"] += 1
            yield {"data": str(i)}
        if done:
            yield {"data": "[DONE]"}
        counts["streams"] += 1

    # No keep-alive comments during a test (ping every 10 minutes).
    return EventSourceResponse(events(), ping=600)


async def count(request):
    return JSONResponse(counts)


app = Starlette(
    routes=[
        Route("/stream", stream, methods=["GET", "POST"]),
        Route("/count", count),
    ]
)

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before it says so: connections wait in the backlog until uvicorn accepts.
    sock.listen(1024)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)
