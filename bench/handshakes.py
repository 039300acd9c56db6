#!/usr/bin/env python3
"""HTTPS with a new connection per request: handshakes per second per generator core.

Starts `pelt serve --tls` (rustls, one thread) on one CPU and runs each generator on another
with one thread, C connections, each request on a fresh TLS connection, alternating tools run
by run. Prints handshakes (= requests) per second and generator CPU-microseconds per
handshake (user+sys from the child's rusage), medians with min-max.

Tools: pelt --no-keepalive (session resumption, as browsers and curl do), pelt
--no-keepalive --tls-full-handshake, ab (a full handshake per connection), wrk with
`Connection: close` (it reconnects after each response). h2load cannot open a connection per
request, so it sits out.

Usage: bench/handshakes.py [--pelt target/release/pelt] [--conns 16] [--duration 5] [--runs 3]
Needs: ab (apache2-utils) and wrk, optional. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import fmt, free_port, measured, wait_listening  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", str(a.server_cpu), a.pelt, "serve", "--tls",
                               "--port", str(port)], stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    ca = server.stdout.readline().split()[1]
    url = f"https://127.0.0.1:{port}/"

    def pelt(extra):
        def cmd():
            return [a.pelt, url, "-c", str(a.conns), "-t", "1", "-d", f"{a.duration}s",
                    "--no-keepalive", "--cacert", ca, "--json", "-", "-q"] + extra

        def parse(out):
            r = json.loads(out)
            h = r["tls_handshakes"]
            if r["requests"]["errors"]:
                print(f"  pelt: {r['requests']['errors']} errors", file=sys.stderr)
            return h["full"] + h["resumed"], r["duration_s"]
        return cmd, parse

    def ab_parse(out):
        done = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
        return done, float(re.search(r"Time taken for tests:\s+([\d.]+)", out).group(1))

    def wrk_parse(out):
        m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
        return int(m.group(1)), float(m.group(2)) / (1000.0 if m.group(3) == "ms" else 1.0)

    tools = {
        "pelt resumed": pelt([]),
        "pelt full": pelt(["--tls-full-handshake"]),
        "ab (full)": (lambda: ["ab", "-q", "-c", str(a.conns), "-t", str(a.duration), "-n",
                               "10000000", url], ab_parse),
        "wrk Connection: close": (lambda: ["wrk", "-t1", f"-c{a.conns}", f"-d{a.duration}s",
                                           "-H", "Connection: close", url], wrk_parse),
    }
    tools = {k: v for k, v in tools.items()
             if k.startswith("pelt") or shutil.which(k.split()[0])}
    res = {k: [] for k in tools}
    try:
        wait_listening(port)
        for _ in range(a.runs):
            for name, (cmd, parse) in tools.items():
                out, cpu, _ = measured(["taskset", "-c", str(a.client_cpu)] + cmd())
                done, secs = parse(out)
                res[name].append({"rate": done / secs, "us": cpu * 1e6 / max(done, 1)})
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait()
    print(f"# pelt serve --tls on CPU {a.server_cpu}, generators on CPU {a.client_cpu}, one "
          f"thread, {a.conns} connections, a new TLS connection per request, {a.duration}s "
          f"runs, {a.runs} per tool; kernel {os.uname().release}")
    print()
    print("| tool | handshakes/s median (min-max) | CPU us/handshake median (min-max) |")
    print("|---|---:|---:|")
    for name, rs in res.items():
        print(f"| {name} | {fmt([r['rate'] for r in rs], lambda v: f'{v:,.0f}')} "
              f"| {fmt([r['us'] for r in rs], lambda v: f'{v:.1f}')} |")


if __name__ == "__main__":
    main()
