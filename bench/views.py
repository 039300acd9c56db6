#!/usr/bin/env python3
"""What watching a run costs: pelt's CPU per request with the live line, with --tui, and with
--dashboard and a client reading its events, side by side, run by run, on both backends.

pelt-server (`pelt serve --threads 1`) on one CPU; pelt on another, one thread, -c 64 (by
default), -n requests, in a tmux session (a real terminal: the live line and the terminal view
draw as they would for a user). With --dashboard, `curl -N` reads the page's server-sent events
for the whole run, as an open browser tab does. The CPU is pelt's own user+sys (GNU time),
over its completed requests; medians of --runs with min-max.

Usage: bench/views.py [--pelt target/release/pelt] [--conns 64] [--requests 2000000]
                      [--runs 3] [--server-cpu 0] [--client-cpu 1]
Needs: tmux, curl, /usr/bin/time. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_in_tmux(args, tmp, tag):
    """Runs `args` in a detached tmux session (140x40) under GNU time; (cpu_s, completed)."""
    sock = os.path.join(tmp, "tmux")
    timing, result, done = (os.path.join(tmp, f"{tag}.{x}") for x in ("time", "json", "done"))
    cmd = " ".join(args + ["--json", result])
    shell = f"/usr/bin/time -f '%U %S' -o {timing} {cmd} >/dev/null 2>&1; touch {done}"
    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-s", tag, "-x", "140", "-y", "40",
                    shell], check=True)
    return sock, timing, result, done


def wait(path, limit=300):
    end = time.time() + limit
    while not os.path.exists(path):
        if time.time() > end:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    pelt = os.path.abspath(a.pelt)
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", a.server_cpu, pelt, "serve", "--port", str(port),
                               "--threads", "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    url = f"http://127.0.0.1:{port}/"
    modes = ["line", "tui", "dashboard"]
    cpu = {(io, m): [] for io in ("uring", "epoll") for m in modes}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            k = 0
            for r in range(a.runs):
                for io in ("uring", "epoll"):
                    for mode in modes:
                        k += 1
                        args = ["taskset", "-c", a.client_cpu, pelt, url, "-c", str(a.conns),
                                "-t", "1", "-n", str(a.requests), "--io", io]
                        reader = None
                        if mode == "tui":
                            args.append("--tui")
                        if mode == "dashboard":
                            dport = free_port()
                            args += ["--dashboard", str(dport)]
                        sock, timing, result, done = run_in_tmux(args, tmp, f"r{k}")
                        if mode == "dashboard":
                            time.sleep(0.3)
                            reader = subprocess.Popen(
                                ["curl", "-sN", f"http://127.0.0.1:{dport}/events"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        wait(done)
                        if reader:
                            reader.wait(timeout=10)
                        subprocess.run(["tmux", "-S", sock, "kill-server"],
                                       stderr=subprocess.DEVNULL)
                        with open(timing) as f:
                            user, sys_ = map(float, f.read().split()[-2:])
                        with open(result) as f:
                            completed = json.load(f)["requests"]["completed"]
                        cpu[(io, mode)].append((user + sys_) * 1e6 / completed)
    finally:
        server.terminate()
        server.wait()
    print(f"pelt CPU per request (us), -c {a.conns} -t 1 -n {a.requests}, median of {a.runs} "
          f"(min-max), in tmux")
    print(f"{'backend':<10}" + "".join(f"{m:>22}" for m in modes))
    for io in ("uring", "epoll"):
        cells = []
        for m in modes:
            v = cpu[(io, m)]
            cells.append(f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
        print(f"{io:<10}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
