#!/usr/bin/env python3
"""Open-loop accuracy and the stall scenario, on this machine.

1. Rate accuracy: nginx (one worker, pinned to one CPU, access log on so it counts what it
   served) and `pelt --rate R -d D` pinned to the other CPU with one thread. Prints what nginx
   saw against R x D, pelt's own counts, and pelt's lag (its delay behind the schedule).
2. The cost of the open loop against its peers: pelt (io_uring and epoll), wrk2 (`-R`) and
   vegeta (`attack -rate`) at the same rates, connections and duration, nginx counting. Prints
   each generator's CPU-microseconds per request nginx served (user+sys of the generator
   alone, from wait4's rusage), nginx's count against rate x duration, and pelt's lag p99,
   for pelt at each --windows batch window (100us, the default, and 1ms, wrk2's timer tick).
   wrk2 is not packaged by Debian: bench/peers.sh --install builds it from its public source
   (github.com/giltene/wrk2); pass --wrk2 PATH for another build. Tools not found sit out.
3. The stall: `pelt serve --stall 2s --stall-at 3s` under `--rate 1000 -d 10s`, and a
   closed-loop run against the same stall: the corrected p99 shows the stall, service time
   and the closed loop hide it.

Usage: bench/open_loop.py [--pelt target/release/pelt] [--rates 10000,50000] [--duration 10]
                          [--runs 3] [--conns 64] [--server-cpu 0] [--client-cpu 1]
                          [--io auto|uring|epoll] [--peer-rates 5000,20000,50000]
                          [--windows 100us,1ms] [--wrk2 wrk2] [--vegeta vegeta]
                          [--only accuracy,peers,stall]
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


class Gen:
    """One open-loop generator: its command for (url, rate, conns, seconds)."""

    def __init__(self, name, cmd, parse=None):
        self.name, self.cmd, self.parse = name, cmd, parse


def generators(args):
    def pelt(io, window):
        return lambda url, rate, conns, secs: [
            args.pelt, url, "--rate", str(rate), "-d", f"{secs}s", "-c", str(conns), "-t", "1",
            "--io", io, "--batch-window", window, "--json", "-", "-q"]

    def pelt_lag(out):
        r = json.loads(out)
        return r["open_loop"]["lag_us"]["p99"], r["latency_us"]["p99"]

    gens = [Gen(f"pelt-{io} --batch-window {w}", pelt(io, w), pelt_lag)
            for w in args.windows.split(",") for io in ("uring", "epoll")]
    wrk2 = peers.shutil.which(args.wrk2)
    if wrk2:
        gens.append(Gen("wrk2", lambda url, rate, conns, secs: [
            wrk2, "-t1", f"-c{conns}", f"-d{secs}s", f"-R{rate}", url]))
    else:
        print(f"# wrk2 ({args.wrk2}) not found, left out: bench/peers.sh --install builds it",
              file=sys.stderr)
    vegeta = peers.shutil.which(args.vegeta)
    if vegeta:
        gens.append(Gen("vegeta", lambda url, rate, conns, secs: [
            "sh", "-c", f"echo 'GET {url}' | exec {vegeta} attack -rate {rate} -duration {secs}s "
            f"-connections {conns} -max-connections {conns} -workers {conns} -output /dev/null"]))
    else:
        print(f"# vegeta ({args.vegeta}) not found, left out: go install "
              "github.com/tsenart/vegeta/v12@latest", file=sys.stderr)
    return gens


def peer_cost(args):
    gens = generators(args)
    print(f"\n# open loop against its peers: nginx on CPU {args.server_cpu} (access log on, "
          f"counting), each generator on CPU {args.client_cpu} with one thread (GOMAXPROCS=1), "
          f"-c {args.conns}, {args.duration}s, {args.runs} runs each, alternating "
          "(median, min-max)\n")
    print("| rate/s | tool | CPU us/request | vs wrk2 | nginx saw vs rate x duration | "
          "lag p99 | latency p99 |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for rate in [int(r) for r in args.peer_rates.split(",")]:
        res = {g.name: [] for g in gens}
        for _ in range(args.runs):
            for g in gens:
                with tempfile.TemporaryDirectory() as d:
                    port = peers.free_port()
                    nginx = nginx_counting(d, port, args.server_cpu)
                    try:
                        cmd = ["taskset", "-c", str(args.client_cpu)] + g.cmd(
                            f"http://127.0.0.1:{port}/", rate, args.conns, args.duration)
                        out, cpu, _ = peers.measured(cmd, dict(os.environ, GOMAXPROCS="1"))
                    finally:
                        nginx.terminate()
                        nginx.wait(timeout=10)
                    served = lines(os.path.join(d, "access.log"))
                extra = g.parse(out) if g.parse else (None, None)
                res[g.name].append((cpu * 1e6 / max(served, 1), served, *extra))
        expected = rate * args.duration
        base = statistics.median(r[0] for r in res["wrk2"]) if res.get("wrk2") else None
        for name, rs in res.items():
            us = [r[0] for r in rs]
            dev = [100.0 * (r[1] - expected) / expected for r in rs]
            vs = f"{statistics.median(us) / base:.2f}x" if base else "-"
            lag = peers.fmt([r[2] for r in rs], ms) if rs[0][2] is not None else "-"
            lat = peers.fmt([r[3] for r in rs], ms) if rs[0][3] is not None else "-"
            print(f"| {rate:,} | {name} | {peers.fmt(us, lambda v: f'{v:.2f}')} | {vs} | "
                  f"{peers.fmt(dev, lambda v: f'{v:+.2f} %')} | {lag} | {lat} |")


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
    ap.add_argument("--peer-rates", default="5000,20000,50000")
    ap.add_argument("--windows", default="100us,1ms",
                    help="pelt's --batch-window values to run (100us is the default)")
    ap.add_argument("--wrk2", default="wrk2", help="wrk2's binary (bench/peers.sh --install)")
    ap.add_argument("--vegeta", default="vegeta")
    ap.add_argument("--only", default="accuracy,peers,stall")
    args = ap.parse_args()
    for tool in ("nginx", "taskset"):
        if not peers.shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install nginx-light util-linux")
    only = set(args.only.split(","))
    if "accuracy" in only:
        accuracy(args)
    if "peers" in only:
        peer_cost(args)
    if "stall" in only:
        stall(args)


if __name__ == "__main__":
    main()
