#!/usr/bin/env python3
"""Soak: pelt's memory over a long full-speed run, sampled every 10 s.

Starts `pelt serve` pinned to one CPU and `pelt URL -d DURATION` pinned to the other, reads the
generator's VmRSS from /proc every --every seconds, and prints the samples, the RSS after the
first sample and at the end, and the difference (target: flat within 1 MB after the first
10 s: histograms, no per-request storage).

Usage: bench/soak.py [--pelt target/release/pelt] [--duration 600] [--every 10] [--conns 64]
                     [--io auto] [--server-cpu 0] [--client-cpu 1]
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--duration", type=int, default=600)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--io", default="auto")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    server = subprocess.Popen(["taskset", "-c", str(args.server_cpu), args.pelt, "serve",
                               "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            sys.exit(f"pelt serve said: {line!r}")
        url = line.split()[-1] + "/"
        # The result goes to a file: a long run's timeline outgrows a pipe nobody reads yet.
        result_path = tempfile.NamedTemporaryFile(prefix="pelt-soak-", suffix=".json",
                                                  delete=False).name
        gen = subprocess.Popen(["taskset", "-c", str(args.client_cpu), args.pelt, url, "-t", "1",
                                "-c", str(args.conns), "-d", f"{args.duration}s", "--io",
                                args.io, "--json", result_path, "-q"],
                               stdout=subprocess.DEVNULL)
        samples = []
        start = time.time()
        while gen.poll() is None:
            time.sleep(args.every)
            # Samples while the load runs, not during the final report.
            running = time.time() - start < args.duration and gen.poll() is None
            kib = rss_kib(gen.pid) if running else None
            if kib is not None:
                samples.append((time.time() - start, kib))
                print(f"{samples[-1][0]:7.0f} s  {kib / 1024:8.2f} MiB", flush=True)
        with open(result_path) as f:
            result = json.load(f)
        os.unlink(result_path)
    finally:
        server.terminate()
        server.wait(timeout=10)
    if len(samples) < 2:
        sys.exit("the run was too short to sample")
    first, last = samples[0][1], samples[-1][1]
    peak = max(k for _, k in samples)
    print(f"\n{result['requests']['completed']:,} requests in {result['duration_s']:.0f} s "
          f"({result['rps']:,.0f}/s, io {result['io']}, {result['requests']['errors']} errors)")
    print(f"RSS at {samples[0][0]:.0f} s: {first / 1024:.2f} MiB; at {samples[-1][0]:.0f} s: "
          f"{last / 1024:.2f} MiB; change {(last - first) / 1024:+.2f} MiB; "
          f"peak {peak / 1024:.2f} MiB")


if __name__ == "__main__":
    main()
