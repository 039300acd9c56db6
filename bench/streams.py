#!/usr/bin/env python3
"""Server-sent events at 1,000 concurrent streams: CPU per event and events/s, pelt against
the Python asyncio clients LLM benchmarks are written with (aiohttp, httpx). k6 with its SSE
extension (xk6-sse) is not among them: this project's Go module proxy lists go.k6.io/k6 as
not to be used (AGPL), so it is not built here.

`pelt serve --sse N --sse-interval I` (one thread, pinned to --server-cpu) streams N events per
response, I apart. Each client, pinned to --client-cpu with one thread,
holds --streams streams open for --duration seconds, starting a new one as each ends, and
reads every event: pelt with `-c STREAMS -t 1`; the Python clients as one asyncio task per
stream, reading lines and timing each event (time to first event, gaps), as vLLM's and
LLMPerf's clients do. CPU is the client's user+sys from wait4's rusage, and its user part alone
(what the client's own code costs), and the kernel's part (sys): mostly the per-segment receive
and, on loopback, the ACK each read sends, which every client pays alike, so it is the floor no
client can go under while the server sends each event in its own segment); events are what each client
counted (pelt: `event_streams.events`). Prints one row per tool (median of --runs, min-max)
and each tool's own TTFT and gap p50, so the figures can be checked against the server's pace.

Usage: bench/streams.py [--pelt target/release/pelt] [--streams 1000] [--events 50]
                        [--interval 20ms] [--duration 10] [--runs 3] [--server-cpu 0]
                        [--client-cpu 1] [--tools pelt,aiohttp,httpx] [--install]
--tools also takes pelt-epoll and pelt-uring (pelt on that I/O backend); "vs pelt" compares
with the first pelt in the list.
--install makes bench/.venv with aiohttp and httpx (PyPI); a tool that is missing sits out,
said on stderr.
Traffic stays on 127.0.0.1.
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402  (fmt())

VENV = os.path.join(HERE, ".venv")


def install():
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", "aiohttp", "httpx"],
                   check=True)


# ---- the Python clients, run as `streams.py --client aiohttp|httpx URL STREAMS SECONDS` ----

class Tally:
    def __init__(self):
        self.events = 0
        self.streams = 0
        self.ttft = []
        self.gaps = []


async def read_lines(lines, t0, tally):
    """Reads one event stream's lines as an LLM benchmark client does: an event per blank line
    after data, timed."""
    last = None
    has_data = False
    async for line in lines:
        line = line.rstrip(b"\r\n") if isinstance(line, bytes) else line.rstrip("\r\n")
        if line in (b"", ""):
            if has_data:
                now = time.perf_counter()
                tally.events += 1
                if last is None:
                    tally.ttft.append(now - t0)
                else:
                    tally.gaps.append(now - last)
                last = now
                has_data = False
        elif line[:5] in (b"data:", "data:"):
            has_data = True
    tally.streams += 1


async def aiohttp_client(url, streams, seconds, tally):
    import aiohttp
    end = time.perf_counter() + seconds
    conn = aiohttp.TCPConnector(limit=streams)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as s:
        async def one():
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                async with s.get(url) as r:
                    await read_lines(r.content, t0, tally)
        await asyncio.gather(*(one() for _ in range(streams)))


async def httpx_client(url, streams, seconds, tally):
    import httpx
    end = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    async with httpx.AsyncClient(limits=limits, timeout=None) as c:
        async def one():
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                async with c.stream("GET", url) as r:
                    await read_lines(r.aiter_lines(), t0, tally)
        await asyncio.gather(*(one() for _ in range(streams)))


def client_main(kind, url, streams, seconds):
    tally = Tally()
    run = aiohttp_client if kind == "aiohttp" else httpx_client
    asyncio.run(run(url, int(streams), float(seconds), tally))
    med = lambda xs: statistics.median(xs) * 1e6 if xs else 0  # noqa: E731
    print(json.dumps({"events": tally.events, "streams": tally.streams,
                      "ttft_p50_us": med(tally.ttft), "gap_p50_us": med(tally.gaps)}))


# ---- the bench ----

def measured(cmd):
    """Runs cmd; returns (stdout, user seconds, system seconds) of it alone (wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out[-2000:]}")
    return out, ru.ru_utime, ru.ru_stime


def tools(args):
    py = os.path.join(VENV, "bin", "python")
    me = os.path.abspath(__file__)
    out = {}
    for t in args.tools.split(","):
        if t in ("pelt", "pelt-epoll", "pelt-uring"):
            io = {"pelt": [], "pelt-epoll": ["--io", "epoll"], "pelt-uring": ["--io", "uring"]}[t]
            out[t] = (lambda io: lambda url: [args.pelt, url, "-c", str(args.streams), "-t", "1",
                                              "-d", f"{args.duration}s", "--timeout", "30s",
                                              "--json", "-", "-q"] + io)(io)
        elif t in ("aiohttp", "httpx"):
            if not os.path.exists(py):
                print(f"# {t}: bench/.venv missing (--install), left out", file=sys.stderr)
                continue
            out[t] = (lambda kind: lambda url: [py, me, "--client", kind, url,
                                                str(args.streams), str(args.duration)])(t)
    return out


def events_of(name, out):
    if name.startswith("pelt"):
        r = json.loads(out)
        s = r["event_streams"]
        return s["events"], s["ttft_us"]["p50"], s["gap_us"]["p50"]
    r = json.loads(out.strip().splitlines()[-1])
    return r["events"], r["ttft_p50_us"], r["gap_p50_us"]


def bench(args):
    gens = tools(args)
    print(f"# event streams: pelt serve --sse {args.events} --sse-interval {args.interval} "
          f"(1 thread, CPU {args.server_cpu}); each client on CPU {args.client_cpu}, one thread, "
          f"{args.streams} concurrent streams for {args.duration}s; {args.runs} runs, "
          "alternating (median, min-max)\n")
    print("| tool | events | events/s | CPU us/event | vs pelt | user CPU us/event | vs pelt | "
          "kernel CPU us/event | its TTFT p50 | its gap p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    res = {name: [] for name in gens}
    for _ in range(args.runs):
        for name, cmd in gens.items():
            serve = subprocess.Popen(
                ["taskset", "-c", str(args.server_cpu), args.pelt, "serve", "--port", "0",
                 "--threads", "1", "--sse", str(args.events), "--sse-interval", args.interval],
                stdout=subprocess.PIPE, text=True)
            try:
                url = serve.stdout.readline().split()[-1] + "/"
                full = ["taskset", "-c", str(args.client_cpu)] + cmd(url)
                out, user, system = measured(full)
            finally:
                serve.terminate()
                serve.wait(timeout=10)
            events, ttft, gap = events_of(name, out)
            res[name].append((events, user + system, user, ttft, gap))

    def per_event(rs, k):
        return [r[k] * 1e6 / max(r[0], 1) for r in rs]

    base = next((rs for name, rs in res.items() if name.startswith("pelt")), None)
    ms = lambda v: f"{v / 1000:.2f} ms"  # noqa: E731
    for name, rs in res.items():
        cells = []
        for k in (1, 2):
            per = per_event(rs, k)
            vs = "-"
            if base:
                vs = f"{statistics.median(per) / statistics.median(per_event(base, k)):.1f}x"
            cells += [peers.fmt(per, lambda v: f"{v:.2f}"), vs]
        kernel = [(r[1] - r[2]) * 1e6 / max(r[0], 1) for r in rs]
        cells.append(peers.fmt(kernel, lambda v: f"{v:.2f}"))
        print(f"| {name} | {peers.fmt([r[0] for r in rs], lambda v: f'{v:,.0f}')} | "
              f"{peers.fmt([r[0] / args.duration for r in rs], lambda v: f'{v:,.0f}')} | "
              f"{' | '.join(cells)} | {ms(statistics.median(r[3] for r in rs))} | "
              f"{ms(statistics.median(r[4] for r in rs))} |")
    peer_totals = [statistics.median(per_event(rs, 1)) for name, rs in res.items()
                   if not name.startswith("pelt")]
    if peer_totals:
        floor = min(statistics.median((r[1] - r[2]) * 1e6 / max(r[0], 1) for r in rs)
                    for rs in res.values())
        print(f"\n# 10x less CPU than the best peer ({min(peer_totals):.2f} us/event) needs "
              f"{min(peer_totals) / 10:.2f} us/event; the least kernel CPU any client paid "
              f"here was {floor:.2f} us/event")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        return client_main(*sys.argv[2:6])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pelt", default="target/release/pelt")
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--events", type=int, default=50)
    p.add_argument("--interval", default="20ms")
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--client-cpu", type=int, default=1)
    p.add_argument("--tools", default="pelt,aiohttp,httpx")
    p.add_argument("--install", action="store_true")
    args = p.parse_args()
    if args.install:
        install()
    bench(args)


if __name__ == "__main__":
    main()
