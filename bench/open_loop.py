#!/usr/bin/env python3
"""Open-loop accuracy and the stall scenario, on this machine.

1. Rate accuracy: nginx (one worker, pinned to one CPU, access log on so it counts what it
   served) and `pelt --rate R -d D` pinned to the other CPU with one thread. Prints what nginx
   saw against R x D, pelt's own counts, and pelt's lag (its delay behind the schedule).
2. The stall: `pelt serve --stall 2s --stall-at 3s` under `--rate 1000 -d 10s`, and a
   closed-loop run against the same stall: the corrected p99 shows the stall, service time
   and the closed loop hide it.

Usage: bench/open_loop.py [--pelt target/release/pelt] [--rates 10000,50000] [--duration 10]
                          [--runs 3] [--conns 64] [--server-cpu 0] [--client-cpu 1]
                          [--io auto|uring|epoll]
Needs: nginx on PATH (Debian: apt-get install nginx-light); python3 stdlib only.
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (shares nginx's config and helpers)


def nginx_counting(d, port, cpu):
    conf = os.path.join(d, "nginx.conf")
    text = peers.NGINX_CONF.format(dir=d, port=port).replace(
        "access_log off;", f"access_log {d}/access.log;")
    with open(conf, "w") as f:
        f.write(text)
    proc = subprocess.Popen(["taskset", "-c", str(cpu), "nginx", "-p", d, "-c", conf],
                            stderr=subprocess.DEVNULL)
    peers.wait_listening(port)
    return proc


def lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def pelt_json(args, extra, cpu):
    cmd = ["taskset", "-c", str(cpu), args.pelt, *extra, "-t", "1", "--json", "-", "-q",
           "--io", args.io]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 3):
        sys.exit(f"pelt failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout)


def ms(us):
    return f"{us / 1000:.2f} ms"


def accuracy(args):
    print(f"# rate accuracy: nginx on CPU {args.server_cpu}, pelt on CPU {args.client_cpu}, "
          f"-c {args.conns}, -d {args.duration}s, {args.runs} runs each (median, min-max)\n")
    print("| rate/s | expected | nginx saw | deviation | pelt sent | lag p50 | lag p99 | "
          "latency p99 | late (>1 ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rate in [int(r) for r in args.rates.split(",")]:
        rows = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as d:
                port = peers.free_port()
                nginx = nginx_counting(d, port, args.server_cpu)
                try:
                    r = pelt_json(args, [f"http://127.0.0.1:{port}/", "--rate", str(rate),
                                         "-d", f"{args.duration}s", "-c", str(args.conns)],
                                  args.client_cpu)
                finally:
                    nginx.terminate()
                    nginx.wait(timeout=10)
                rows.append((lines(os.path.join(d, "access.log")), r))
        expected = rate * args.duration
        saw = [n for n, _ in rows]
        dev = [100.0 * (n - expected) / expected for n in saw]
        lag50 = [r["open_loop"]["lag_us"]["p50"] for _, r in rows]
        lag99 = [r["open_loop"]["lag_us"]["p99"] for _, r in rows]
        lat99 = [r["latency_us"]["p99"] for _, r in rows]
        late = [r["open_loop"]["late_requests"] for _, r in rows]
        sent = [r["requests"]["sent"] for _, r in rows]
        print(f"| {rate:,} | {expected:,} | {peers.fmt(saw, lambda v: f'{v:,.0f}')} | "
              f"{peers.fmt(dev, lambda v: f'{v:+.3f} %')} | "
              f"{peers.fmt(sent, lambda v: f'{v:,.0f}')} | {ms(statistics.median(lag50))} | "
              f"{peers.fmt(lag99, ms)} | {peers.fmt(lat99, ms)} | "
              f"{peers.fmt(late, lambda v: f'{v:,.0f}')} |")


def stall(args):
    print("\n# stall: pelt serve --stall 2s --stall-at 3s (server on CPU "
          f"{args.server_cpu}), 10 s runs, -c {args.conns}\n")
    print("| load | p50 | p99 | p99.9 | max | service p99 |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, extra in [("--rate 1000 (open loop)", ["--rate", "1000"]),
                         ("closed loop", [])]:
        serve = subprocess.Popen(
            ["taskset", "-c", str(args.server_cpu), args.pelt, "serve", "--port", "0",
             "--stall", "2s", "--stall-at", "3s"],
            stdout=subprocess.PIPE, text=True)
        try:
            url = serve.stdout.readline().split()[-1] + "/"
            r = pelt_json(args, [url, "-d", "10s", "-c", str(args.conns), *extra],
                          args.client_cpu)
        finally:
            serve.terminate()
            serve.wait(timeout=10)
        lat = r["latency_us"]
        svc = r["open_loop"]["service_time_us"]["p99"] if r["open_loop"] else lat["p99"]
        print(f"| {label} | {ms(lat['p50'])} | {ms(lat['p99'])} | {ms(lat['p99_9'])} | "
              f"{ms(lat['max'])} | {ms(svc)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--rates", default="10000,50000")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--io", default="auto", help="pelt's --io: auto, uring or epoll")
    args = ap.parse_args()
    for tool in ("nginx", "taskset"):
        if not peers.shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install nginx-light util-linux")
    accuracy(args)
    stall(args)


if __name__ == "__main__":
    main()
