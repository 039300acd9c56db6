#!/usr/bin/env python3
"""Replay memory: a big access log read as the run goes against read whole, replayed or plain.

Writes an nginx access log in the combined format, `--lines` requests (10,000,000 by default,
about 1.2 GiB) at `--rate` a second over five paths, then replays it against `pelt serve` for
`--seconds` with `--targets-read stream` and with `--targets-read whole`, pelt on one CPU and the
server on the other:

  pelt URL --targets big.log --targets-format nginx --replay --targets-read MODE -d Ns -t 1

With `--plain`, the same log as plain targets (no `--replay`): a closed loop for `--seconds`
with 64 connections, its throughput beside the memory (the streamed read's parse shares the
worker's CPU).

Printed per mode (medians over `--runs`): pelt's peak RSS (its own rusage, from wait4), the
wall time, the time before the first request (the whole run less the measured seconds: the
first pass, or the whole read), the requests sent and their rate. Runs alternate modes. goreplay and the other peers have no
streaming import of access logs to set beside it; the figure to read is RSS against the file's
size.

Usage: bench/replay_memory.py [--pelt target/release/pelt] [--lines 10000000] [--rate 10000]
                              [--seconds 10] [--runs 1] [--modes stream,whole] [--log PATH]
                              [--plain]
Needs: taskset; python3 stdlib only. Traffic stays on 127.0.0.1. `--log` keeps the log
(written once, reused when it exists with the asked number of lines).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (free_port, wait_listening)

PATHS = ["/", "/api/items", "/api/items/42", "/static/app.js", "/login"]


def write_log(path, lines, rate):
    """`lines` combined-format lines, `rate` a second from a fixed start."""
    t0 = 1_764_300_000
    with open(path, "w", buffering=1 << 22) as f:
        for i in range(lines):
            s = t0 + i // rate
            stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(s))
            f.write(
                f'127.0.0.1 - - [{stamp}] "GET {PATHS[i % 5]}?i={i} HTTP/1.1" 200 612 "-" '
                '"Mozilla/5.0 (X11; Linux x86_64)"\n'
            )


def count_lines(path):
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))


def run_pelt(pelt, url, log, mode, seconds, out, plain):
    load = ["-c", "64"] if plain else ["--replay"]
    cmd = ["taskset", "-c", "1", pelt, url, "--targets", log, "--targets-format", "nginx",
           *load, "--targets-read", mode, "-d", f"{seconds}s", "-t", "1", "-q",
           "--json", out]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"pelt ({mode}) failed: {' '.join(cmd)}")
    with open(out) as f:
        r = json.load(f)
    return {
        "rss_mib": usage.ru_maxrss / 1024,
        "wall_s": wall,
        "before_s": wall - r["duration_s"],
        "sent": r["requests"]["sent"],
        "rps": r["requests"]["sent"] / r["duration_s"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--modes", default="stream,whole")
    ap.add_argument("--log")
    ap.add_argument("--plain", action="store_true")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="pelt-replay-memory-")
    log = a.log or os.path.join(work, "big.log")
    if not (os.path.exists(log) and count_lines(log) == a.lines):
        write_log(log, a.lines, a.rate)
    size = os.path.getsize(log) / 2**20
    port = peers.free_port()
    server = subprocess.Popen(["taskset", "-c", "0", a.pelt, "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_listening(port)
        url = f"http://127.0.0.1:{port}"
        what = "a closed loop, 64 connections" if a.plain else "replay at 1x"
        print(f"{a.lines:,} lines, {size:,.0f} MiB; {a.seconds} s of {what}, medians of "
              f"{a.runs}")
        print(f"{'mode':<8} {'peak RSS':>12} {'before run':>11} {'wall':>8} {'sent':>10} "
              f"{'req/s':>10}")
        modes = a.modes.split(",")
        rows = {m: [] for m in modes}
        for _ in range(a.runs):
            for mode in modes:
                rows[mode].append(run_pelt(a.pelt, url, log, mode, a.seconds,
                                           os.path.join(work, "r.json"), a.plain))
        for mode in modes:
            med = {k: statistics.median(r[k] for r in rows[mode]) for k in rows[mode][0]}
            print(f"{mode:<8} {med['rss_mib']:>8,.0f} MiB {med['before_s']:>9.1f} s "
                  f"{med['wall_s']:>6.1f} s {med['sent']:>10,.0f} {med['rps']:>10,.0f}")
    finally:
        server.terminate()
        server.wait()
        if not a.log:
            try:
                os.remove(log)
            except OSError:
                pass


if __name__ == "__main__":
    main()
