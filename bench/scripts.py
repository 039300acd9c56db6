#!/usr/bin/env python3
"""Scripts: pelt -s against wrk -s (and wrk2 -R) with wrk's own scripts, per generator core.

nginx (bench/peers.py's config: `return 200`, no log) pinned to one CPU, the generator to the
other, one thread, `--conns` connections, `--duration` seconds, `--runs` runs each (medians,
with the range). The cells, in turn, run by run:

  none         no script                     pelt URL            wrk URL
  post.lua     the wrk table only (static)   pelt URL -s post    wrk -s post
  counter.lua  request() per request         pelt URL -s counter wrk -s counter
  report.lua   done() only                   pelt URL -s report  wrk -s report
  counter -R   request() per request, open   pelt --rate R       wrk2 -R R (when --wrk2 is
               loop at `--rate`                                   given; built from giltene/wrk2)

Figures: requests/s and CPU microseconds per request (the tool's own rusage, user + system),
and pelt's CPU per request over wrk's (the issue's goals: at most 0.8x without a per-request
hook, at most 1x with request() per request).

Usage: bench/scripts.py [--pelt target/release/pelt] [--wrk2 PATH] [--conns 16]
                        [--duration 5] [--runs 3] [--rate 20000]
Needs: nginx, wrk, taskset and GNU time on PATH; python3 stdlib only. Traffic stays on
127.0.0.1.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (NGINX_CONF, measured, free_port, wait_listening, fmt)

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "scripts", "wrk")
CELLS = ["none", "post.lua", "counter.lua", "report.lua"]


def pelt_cmd(args, cpu, url, script, rate=None):
    cmd = ["taskset", "-c", str(cpu), args.pelt, url, "-t", "1", "-c", str(args.conns), "-d",
           f"{args.duration}s", "--json", "-", "-q"]
    if script:
        cmd += ["-s", os.path.join(SCRIPTS, script)]
    if rate:
        cmd += ["--rate", str(rate)]
    return cmd


def wrk_cmd(binary, args, cpu, url, script, rate=None):
    cmd = ["taskset", "-c", str(cpu), binary, "-t1", f"-c{args.conns}", f"-d{args.duration}s"]
    if rate:
        cmd += ["-R", str(rate)]
    if script:
        cmd += ["-s", os.path.join(SCRIPTS, script)]
    return cmd + [url]


def pelt_parse(out):
    # done() (report.lua) prints after the JSON: the JSON is the first object.
    r, _ = json.JSONDecoder().raw_decode(out.lstrip())
    if r["requests"]["errors"]:
        print(f"  pelt: {r['requests']['errors']} errors", file=sys.stderr)
    return r["requests"]["completed"], r["duration_s"]


def wrk_parse(out):
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if not m:
        sys.exit(f"cannot parse wrk's output:\n{out}")
    return int(m.group(1)), float(m.group(2)) / (1000.0 if m.group(3) == "ms" else 1.0)


def one(cmd, parse):
    out, cpu, _ = peers.measured(cmd)
    done, secs = parse(out)
    return {"rps": done / secs, "us": cpu * 1e6 / max(done, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--wrk2", default=None, help="wrk2's binary (make in giltene/wrk2)")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    for t in ("nginx", "wrk", "taskset", "/usr/bin/time"):
        if not shutil.which(t):
            sys.exit(f"{t} not found: apt-get install nginx-light wrk util-linux time")
    if not os.path.exists(args.pelt):
        sys.exit(f"{args.pelt} not found: cargo build --release")
    rows = [(c, None) for c in CELLS]
    if args.wrk2:
        rows.append(("counter.lua", args.rate))
    with tempfile.TemporaryDirectory(prefix="pelt-bench-scripts-") as d:
        port = peers.free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(peers.NGINX_CONF.format(dir=d, port=port))
        nginx = subprocess.Popen(["taskset", "-c", str(args.server_cpu), "nginx", "-p", d, "-c",
                                  conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            peers.wait_listening(port)
            url = f"http://127.0.0.1:{port}/"
            cpu = args.client_cpu
            results = {}
            for _ in range(args.runs):
                for script, rate in rows:
                    script_arg = None if script == "none" else script
                    peer = args.wrk2 if rate else "wrk"
                    for tool, cmd, parse in (
                        ("pelt", pelt_cmd(args, cpu, url, script_arg, rate), pelt_parse),
                        ("wrk2" if rate else "wrk",
                         wrk_cmd(peer, args, cpu, url, script_arg, rate), wrk_parse),
                    ):
                        results.setdefault((script, rate, tool), []).append(one(cmd, parse))
        finally:
            nginx.terminate()
            nginx.wait()
    print(f"# nginx on CPU {args.server_cpu}, the generator on CPU {args.client_cpu}, -t 1, "
          f"-c {args.conns}, {args.duration} s, median (min-max) of {args.runs} runs")
    print(f"{'script':<16} {'tool':<5} {'requests/s':>26} {'CPU us/request':>24} {'pelt/peer':>10}")
    for script, rate in rows:
        name = f"{script} -R {rate}" if rate else script
        peer = "wrk2" if rate else "wrk"
        med = {}
        for tool in ("pelt", peer):
            rs = results[(script, rate, tool)]
            med[tool] = statistics.median(r["us"] for r in rs)
            ratio = f"{med['pelt'] / med[peer]:.2f}x" if tool == peer else ""
            print(f"{name:<16} {tool:<5} {peers.fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}'):>26} "
                  f"{peers.fmt([r['us'] for r in rs], lambda v: f'{v:.2f}'):>24} {ratio:>10}")


if __name__ == "__main__":
    main()
