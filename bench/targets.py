#!/usr/bin/env python3
"""Many requests against one: what `--targets` costs per request.

Starts nginx (bench/peers.py's configuration: worker_processes 1, access_log off, `return 200`
for every path) pinned to one CPU, and runs pelt pinned to another, one thread, in turn run by
run:

  static     one request, the command line's: GET /
  targets    --targets with N distinct GET URLs (/t/0 .. /t/N-1, each with a query)
  bodies     --bodies with N distinct JSON bodies, POST
  templates  --targets with N POST targets, each with {{seq}} in its path and a template body
             ({"id":{{seq}},"n":{{rand:1:1000000}},"u":"{{uuid}}"}), rendered per request

for each backend and pipeline depth. It prints requests/s, pelt's CPU-microseconds per
completed request (its own rusage) and its peak RSS, as medians (min-max), and each case's
CPU per request against the static one in the same cell. Then the memory of a 100,000-target
set: peak RSS of a short run with 100k targets against the same with one.

Usage: bench/targets.py [--pelt target/release/pelt] [--targets 10000] [--conns 64]
                        [--pipeline 1,16] [--duration 5] [--runs 5] [--io uring,epoll]
Needs: nginx and taskset on PATH; python3 stdlib only. Traffic stays on 127.0.0.1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (same directory: NGINX_CONF, measured, free_port, wait_listening)


def run_pelt(args, extra, url, conns, depth, io, secs):
    cmd = ["taskset", "-c", str(args.client_cpu), args.pelt] + ([url] if url else []) + extra + [
        "-c", str(conns), "-t", "1", "-d", f"{secs}s", "--pipeline", str(depth), "--io", io,
        "--json", "-", "-q"]
    out, cpu, rss = peers.measured(cmd)
    r = json.loads(out)
    done = r["requests"]["completed"]
    if r["requests"]["errors"]:
        print(f"  {extra[:1]}: {r['requests']['errors']} errors", file=sys.stderr)
    return {"rps": done / r["duration_s"], "us": cpu * 1e6 / max(done, 1), "rss": rss}


def fmt(values, f):
    return f"{f(statistics.median(values))} ({f(min(values))}-{f(max(values))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--targets", type=int, default=10_000)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--pipeline", default="1,16")
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--io", default="uring,epoll")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    if not os.path.exists(args.pelt):
        sys.exit(f"{args.pelt} not found: cargo build --release")
    with tempfile.TemporaryDirectory(prefix="pelt-targets-") as d:
        port = peers.free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(peers.NGINX_CONF.format(dir=d, port=port))
        base = f"http://127.0.0.1:{port}"
        targets = os.path.join(d, "targets.txt")
        with open(targets, "w") as f:
            for t in range(args.targets):
                f.write(f"GET {base}/t/{t}?user={t * 7919 % 100003}\n\n")
        bodies = os.path.join(d, "bodies.jsonl")
        with open(bodies, "w") as f:
            for t in range(args.targets):
                f.write(json.dumps({"id": t, "name": f"user-{t}", "score": t % 97}) + "\n")
        tbody = os.path.join(d, "template.json")
        with open(tbody, "w") as f:
            f.write('{"id":{{seq}},"n":{{rand:1:1000000}},"u":"{{uuid}}"}')
        templated = os.path.join(d, "templated.txt")
        with open(templated, "w") as f:
            for t in range(args.targets):
                f.write(f"POST {base}/t/{t}/{{{{seq}}}}\nContent-Type: application/json\n"
                        f"@{tbody}\n\n")
        big = os.path.join(d, "big.txt")
        with open(big, "w") as f:
            for t in range(100_000):
                f.write(f"GET {base}/t/{t}?user={t * 7919 % 100003}\n\n")
        server = subprocess.Popen(["taskset", "-c", str(args.server_cpu), "nginx", "-p", d,
                                   "-c", conf], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            peers.wait_listening(port)
            cases = [("static", [], base + "/"),
                     ("targets", ["--targets", targets], None),
                     ("bodies", ["--bodies", bodies, "-m", "POST", "-H",
                                 "Content-Type: application/json"], base + "/"),
                     ("templates", ["--targets", templated], None)]
            print(f"# nginx on CPU {args.server_cpu}, pelt on CPU {args.client_cpu}, one thread, "
                  f"{args.conns} connections, {args.duration}s runs, {args.runs} runs per case, "
                  f"in turn; {args.targets} targets/bodies")
            print()
            print("| io | pipeline | case | requests/s | CPU us/request | vs static | "
                  "peak RSS MiB |")
            print("|---|---:|---|---:|---:|---:|---:|")
            for io in args.io.split(","):
                for depth in [int(p) for p in args.pipeline.split(",")]:
                    results = {name: [] for name, _, _ in cases}
                    for _ in range(args.runs):
                        for name, extra, url in cases:
                            results[name].append(run_pelt(args, extra, url, args.conns, depth,
                                                          io, args.duration))
                    static = statistics.median(r["us"] for r in results["static"])
                    for name, _, _ in cases:
                        rs = results[name]
                        us = statistics.median(r["us"] for r in rs)
                        print(f"| {io} | {depth} | {name} | "
                              f"{fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}')} | "
                              f"{fmt([r['us'] for r in rs], lambda v: f'{v:.2f}')} | "
                              f"{us / static:.2f}x | "
                              f"{statistics.median(r['rss'] for r in rs):.1f} |")
                    sys.stdout.flush()
            one = run_pelt(args, [], base + "/", 4, 1, "epoll", 1)
            many = run_pelt(args, ["--targets", big], None, 4, 1, "epoll", 1)
            print()
            print(f"100,000 targets: peak RSS {many['rss']:.1f} MiB against {one['rss']:.1f} MiB "
                  f"with one request ({os.path.getsize(big) / 1e6:.1f} MB targets file)")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
