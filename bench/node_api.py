#!/usr/bin/env python3
"""pelt's Node.js API against the pelt CLI and against Node's own load testers, side by side.

Starts nginx (bench/peers.py's configuration: one worker, keep-alive without a request limit)
pinned to --server-cpu and runs each load pinned to --client-cpu, alternating tools run by
run, the same request count and connections for all:

  cli            the pelt binary (-t 1)
  run            pelt's run() from Node.js (threads: 1)
  pelt-loadtest  pelt's loadTest() (loadtest's API on pelt's engine, agentKeepAlive)
  loadtest       loadtest 8's own loadTest() (agentKeepAlive)
  autocannon     autocannon's API
  pelt-autocannon
                 autocannon's API on pelt (workers: 1)
  pelt-loadtest-status, loadtest-status
                 the same with a statusCallback (loadtest calls it per request; pelt once a
                 second with that second's requests, each with its response)
  autocannon-verify, pelt-autocannon-verify
                 autocannon's with a verifyBody (autocannon calls it per response; pelt once a
                 second for that second's sampled responses)

For each it prints requests/s (the load's own count over its own clock) and CPU-microseconds
per request: of the whole process from its rusage (Node's start-up included), and during the
load (Node: process.cpuUsage() around it, every thread; the CLI: its whole process), as
medians with min-max.

Usage: bench/node_api.py [--install] [--pelt target/release/pelt] [--requests 500000]
                         [--connections 10] [--runs 5] [--server-cpu 0] [--client-cpu 1]
--install runs `npm install` in bench/node (loadtest 8.2.1 and autocannon 9.0.0, pinned in
its package-lock.json) and builds the Node.js package (`npm install` in bindings/node).
Needs: nginx, node and npm. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peers  # noqa: E402  (the nginx configuration and the measuring helpers)

MODES = ["cli", "run", "pelt-loadtest", "loadtest", "autocannon"]
OTHER_MODES = ["pelt-loadtest-status", "loadtest-status", "pelt-autocannon", "autocannon-verify",
               "pelt-autocannon-verify"]


def command(mode, args, url):
    if mode == "cli":
        return [args.pelt, url, "-n", str(args.requests), "-c", str(args.connections), "-t", "1",
                "--json", "-", "-q"]
    return ["node", os.path.join(HERE, "node", "drive.js"), mode, url, str(args.requests),
            str(args.connections)]


def parse(mode, out):
    """(requests, seconds, CPU seconds during the load or None) from what the load printed."""
    v = json.loads(out)
    if mode == "cli":
        return v["requests"]["completed"], v["duration_s"], None
    return v["requests"], v["seconds"], v["cpu_us"] / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--pelt", default=os.path.join(ROOT, "target", "release", "pelt"))
    ap.add_argument("--requests", type=int, default=500_000)
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--modes", default=",".join(MODES),
                    help=f"any of {','.join(MODES + OTHER_MODES)}")
    args = ap.parse_args()
    if args.install:
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=os.path.join(HERE, "node"),
                       check=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"],
                       cwd=os.path.join(ROOT, "bindings", "node"), check=True)
    for need in ["nginx", "node", "taskset"]:
        if not shutil.which(need):
            sys.exit(f"{need} is not on PATH")
    modes = args.modes.split(",")
    d = tempfile.mkdtemp(prefix="pelt-node-bench-")
    port = peers.free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(peers.NGINX_CONF.format(dir=d, port=port))
    server = subprocess.Popen(["taskset", "-c", args.server_cpu, "nginx", "-p", d, "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_listening(port)
        url = f"http://127.0.0.1:{port}/"
        results = {m: [] for m in modes}
        for run in range(args.runs):
            for mode in modes:
                cmd = ["taskset", "-c", args.client_cpu] + command(mode, args, url)
                out, cpu, _ = peers.measured(cmd)
                n, secs, during = parse(mode, out)
                # The CLI's start-up is a few milliseconds: its whole process is its load.
                during = cpu if during is None else during
                results[mode].append((n / secs, cpu * 1e6 / max(n, 1), during * 1e6 / max(n, 1)))
                print(f"  run {run + 1} {mode:<14} {n / secs:>10.0f} req/s "
                      f"{cpu * 1e6 / max(n, 1):>7.2f} us/req", file=sys.stderr)
        print(f"\n{args.requests} requests, {args.connections} connections, nginx on CPU "
              f"{args.server_cpu}, the load on CPU {args.client_cpu}, {args.runs} runs (median, "
              f"min-max)\n")
        print("| load | requests/s | CPU-us per request, whole process | during the load |")
        print("|---|---|---|---|")
        for mode in modes:
            rps = [r[0] for r in results[mode]]
            cpu = [r[1] for r in results[mode]]
            during = [r[2] for r in results[mode]]
            print(f"| {mode} | {peers.fmt(rps, lambda v: f'{v:,.0f}')} | "
                  f"{peers.fmt(cpu, lambda v: f'{v:.2f}')} | "
                  f"{peers.fmt(during, lambda v: f'{v:.2f}')} |")
        if "cli" in results and "run" in results:
            med = lambda mode, k: statistics.median(r[k] for r in results[mode])  # noqa: E731
            print(f"\nrun() / CLI: requests/s {med('run', 0) / med('cli', 0):.3f}, CPU per request "
                  f"{med('run', 1) / med('cli', 1):.3f} (whole process), "
                  f"{med('run', 2) / med('cli', 2):.3f} (during the load)")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
