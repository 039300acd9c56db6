#!/usr/bin/env python3
"""gRPC generators side by side: pelt against ghz on grpc-go's helloworld Greeter.

Builds bench/grpc/main.go (grpc-go's Greeter with its reflection service, from the Go module
proxy) and starts it on one
CPU, then runs each generator on another CPU with one thread (ghz: --cpus 1, GOMAXPROCS=1),
alternating tools run by run, for each case:

  c50       50 connections, one call at a time each (ghz -c 50)
  c50s10    50 connections, 10 calls at a time each (pelt --streams 10; ghz -c 500
            --connections 50)
  stream10  server streaming: RouteGuide.ListFeatures answering 10 messages a call, 50
            connections, one call at a time each
  chat10    bidirectional: RouteGuide.RouteChat echoing each of a call's 10 notes, 50
            connections; pelt plays ping-pong (each note after the reply to the one before),
            ghz sends the 10 at once
  chat10all the same, pelt with --grpc-send-all (ghz's way)

Prints calls/s and the generator's CPU-microseconds per call (user+sys from its own rusage) as
medians with min-max, and the ratio to ghz.

--stall runs the open-loop stall instead: --rate 200 with 10 connections for 4 s, the server
stopped (SIGSTOP) for 1 s in the middle, and prints each tool's p50/p90/p99/max: pelt times each call from when it was due, ghz from when it was sent.

Usage: bench/grpc.py [--pelt target/release/pelt] [--ghz ~/go/bin/ghz] [--calls 100000]
                     [--runs 3] [--cases chat10,chat10all] [--stall]
Needs: go (the module proxy) and ghz v0.120.0:
  GOFLAGS=-mod=mod go install github.com/bojand/ghz/cmd/ghz@v0.120.0
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peers import measured  # noqa: E402

PROTO = os.path.join(HERE, "grpc", "helloworld.proto")
CALL = "helloworld.Greeter/SayHello"
BODY = '{"name":"pelt"}'
# The server-streaming case: 10 features a call.
STREAM = (os.path.join(HERE, "grpc", "route_guide.proto"), "routeguide.RouteGuide/ListFeatures",
          '{"lo":{"latitude":10}}')
# The bidirectional case: 10 notes a call, each echoed.
CHAT = (STREAM[0], "routeguide.RouteGuide/RouteChat",
        json.dumps([{"location": {"latitude": i}, "message": "note"} for i in range(10)]))


def greeter(cpu):
    """Builds and starts grpc-go's Greeter on `cpu`; returns (process, port)."""
    folder = os.path.join(HERE, "grpc")
    binary = os.path.join(folder, "greeter")
    if not os.path.exists(binary):
        subprocess.run(["go", "build", "-o", binary, "."], cwd=folder, check=True,
                       env=dict(os.environ, GOFLAGS="-mod=mod"))
    p = subprocess.Popen(["taskset", "-c", str(cpu), binary], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p, int(line.split()[-1])


def pelt_cmd(a, port, conns, streams, extra, call=(PROTO, CALL, BODY)):
    proto, method, body = call
    return [a.pelt, f"grpc://127.0.0.1:{port}/{method}", "--proto", proto, "-b", body,
            "-c", str(conns), "--streams", str(streams), "-t", "1", "--json", "-", "-q"] + extra


def ghz_cmd(a, port, conns, streams, extra, call=(PROTO, CALL, BODY)):
    proto, method, body = call
    return [a.ghz, "--insecure", "--cpus", "1", "--proto", proto, "--call", method.replace("/", "."),
            "-d", body, "-c", str(conns * streams), "--connections", str(conns), "-O", "json",
            f"127.0.0.1:{port}"] + extra


def calls_of(tool, out):
    """(calls that ended OK, seconds) from a tool's JSON."""
    v = json.loads(out)
    if tool == "pelt":
        return v["grpc"]["ok"], v["duration_s"]
    return v["statusCodeDistribution"].get("OK", 0), v["total"] / 1e9


def throughput(a, port):
    unary = (PROTO, CALL, BODY)
    cases = [("c50", 50, 1, unary, []), ("c50s10", 50, 10, unary, []),
             ("stream10", 50, 1, STREAM, []), ("chat10", 50, 1, CHAT, []),
             ("chat10all", 50, 1, CHAT, ["--grpc-send-all"])]
    env = dict(os.environ, GOMAXPROCS="1")
    print(f"# grpc-go Greeter on CPU {a.server_cpu}, generators on CPU {a.client_cpu}, "
          f"{a.calls} calls a run, {a.runs} runs, medians (min-max)")
    print(f"{'case':8} {'tool':6} {'calls/s':>22} {'CPU us/call':>22} {'vs ghz':>7}")
    if a.cases:
        cases = [c for c in cases if c[0] in a.cases.split(",")]
    for name, conns, streams, call, pelt_extra in cases:
        res = {"pelt": [], "ghz": []}
        for _ in range(a.runs):
            for tool, make in (("pelt", pelt_cmd), ("ghz", ghz_cmd)):
                n = ["-n", str(a.calls)] + (pelt_extra if tool == "pelt" else [])
                cmd = ["taskset", "-c", str(a.client_cpu)] + make(a, port, conns, streams, n, call)
                out, cpu, _ = measured(cmd, env)
                ok, secs = calls_of(tool, out)
                res[tool].append((ok / secs, cpu * 1e6 / max(ok, 1)))
        ghz_us = statistics.median(r[1] for r in res["ghz"])
        for tool in ("pelt", "ghz"):
            rates = [r[0] for r in res[tool]]
            us = [r[1] for r in res[tool]]
            med = statistics.median(us)
            print(f"{name:8} {tool:6} {statistics.median(rates):>9.0f} ({min(rates):.0f}-{max(rates):.0f})"
                  f" {med:>9.2f} ({min(us):.2f}-{max(us):.2f}) {ghz_us / med:>6.1f}x")


def stall(a, server, port):
    """--rate 200 for 4 s, the server stopped for 1 s from the 1.5th second."""
    def pause():
        time.sleep(1.5)
        server.send_signal(signal.SIGSTOP)
        time.sleep(1.0)
        server.send_signal(signal.SIGCONT)

    print("# the stall: --rate 200, 10 connections, 4 s; grpc-go stopped 1 s (SIGSTOP) mid-run")
    print(f"{'tool':6} {'calls':>6} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}  latency from")
    for tool in ("pelt", "ghz"):
        t = threading.Thread(target=pause)
        t.start()
        if tool == "pelt":
            cmd = pelt_cmd(a, port, 10, 1, ["--rate", "200", "-d", "4s"])
        else:
            cmd = ghz_cmd(a, port, 10, 1, ["--rps", "200", "-z", "4s"])
        out = subprocess.run(["taskset", "-c", str(a.client_cpu)] + cmd, capture_output=True,
                             text=True, env=dict(os.environ, GOMAXPROCS="1")).stdout
        t.join()
        v = json.loads(out)
        if tool == "pelt":
            lat = v["latency_us"]
            row = [v["grpc"]["calls"], lat["p50"] / 1e3, lat["p90"] / 1e3, lat["p99"] / 1e3,
                   lat["max"] / 1e3]
            frm = "due time"
        else:
            pct = {p["percentage"]: p["latency"] / 1e6 for p in v["latencyDistribution"]}
            row = [v["count"], pct.get(50, 0), pct.get(90, 0), pct.get(99, 0), v["slowest"] / 1e6]
            frm = "actual send"
        print(f"{tool:6} {row[0]:>6} {row[1]:>8.1f} {row[2]:>8.1f} {row[3]:>8.1f} {row[4]:>8.1f}  {frm}")
        time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--ghz", default=os.path.expanduser("~/go/bin/ghz"))
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--stall", action="store_true")
    ap.add_argument("--cases", help="a comma-separated list of the cases to run (default: all)")
    a = ap.parse_args()
    server, port = greeter(a.server_cpu)
    try:
        if a.stall:
            stall(a, server, port)
        else:
            throughput(a, port)
    finally:
        server.send_signal(signal.SIGCONT)
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
