#!/usr/bin/env python3
"""Scripts: pelt -s against wrk -s (and wrk2 -R) with wrk's own scripts, per generator core.

nginx (bench/peers.py's config: `return 200`, no log; or with `--server fixed` pelt-server's
lighter fixed_response example, where the generator rather than the server is the limit)
pinned to one CPU, the generator to the other, one thread, `--conns` connections,
`--duration` seconds, `--runs` runs each (medians, with the range). The cells, in turn, run by
run:

  none         no script                     pelt URL            wrk URL
  post.lua     the wrk table only (static)   pelt URL -s post    wrk -s post
  counter.lua  request() per request         pelt URL -s counter wrk -s counter
  report.lua   done() only                   pelt URL -s report  wrk -s report
  setup.lua    request() and response() per  pelt URL -s setup   wrk -s setup
               request, setup() and done()
  delay.lua    delay() per request (each     pelt URL -s delay   wrk -s delay
               waits 10-50 ms: few requests)
  counter -R   request() per request, open   pelt --rate R       wrk2 -R R (when --wrk2 is
               loop at `--rate`                                   given; built from giltene/wrk2)
  counter -R   the same, pelt at wrk2's      pelt --rate R       (the same wrk2 runs)
   tick 1ms    1 ms timer tick                --batch-window 1ms

Figures: requests/s, CPU microseconds per request (the tool's own rusage, user + system) and
the system part of it, and pelt's CPU per request over the peer's (the median of each round's
ratio, a pelt run beside its peer's; the issue's goals: at most 0.8x without a per-request
hook, at most 1x with request() per request). In the open loop,
"late p50": how late the median request started after its due time, which the latency from
the due time includes: pelt's lag p50, and for wrk2 its recorded (corrected) latency p50 less
its uncorrected one (`--latency -U`), the lateness wrk2 folds in without printing it.

Usage: bench/scripts.py [--pelt target/release/pelt] [--wrk2 PATH] [--conns 16]
                        [--duration 5] [--runs 3] [--rate 20000] [--cells none,post.lua,...]
                        [--server nginx|fixed]
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
CELLS = ["none", "post.lua", "counter.lua", "report.lua", "setup.lua", "delay.lua"]


def pelt_cmd(args, cpu, url, script, rate=None, window=None):
    cmd = ["taskset", "-c", str(cpu), args.pelt, url, "-t", "1", "-c", str(args.conns), "-d",
           f"{args.duration}s", "--json", "-", "-q"]
    if script:
        cmd += ["-s", os.path.join(SCRIPTS, script)]
    if rate:
        cmd += ["--rate", str(rate)]
    if window:
        cmd += ["--batch-window", window]
    return cmd


def wrk_cmd(binary, args, cpu, url, script, rate=None):
    cmd = ["taskset", "-c", str(cpu), binary, "-t1", f"-c{args.conns}", f"-d{args.duration}s"]
    if rate:
        cmd += ["-R", str(rate), "--latency", "-U"]
    if script:
        cmd += ["-s", os.path.join(SCRIPTS, script)]
    return cmd + [url]


def pelt_parse(out):
    """(completed, seconds, lateness p50 in us or None): init() (setup.lua) prints before the
    JSON and done() after it, so the JSON is the first object that starts a line."""
    r, _ = json.JSONDecoder().raw_decode(out[re.search(r"^\{", out, re.M).start():])
    if r["requests"]["errors"]:
        print(f"  pelt: {r['requests']['errors']} errors", file=sys.stderr)
    late = r["open_loop"]["lag_us"]["p50"] if r.get("open_loop") else None
    return r["requests"]["completed"], r["duration_s"], late


def wrk_us(value, unit):
    return float(value) * {"us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def wrk_parse(out):
    """(completed, seconds, lateness p50 in us or None): wrk2's `--latency -U` prints the
    recorded (from the due time) and the uncorrected distributions, in that order."""
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if not m:
        sys.exit(f"cannot parse wrk's output:\n{out}")
    p50s = re.findall(r"^\s*50\.000%\s+([\d.]+)(us|ms|s)$", out, re.M)
    late = wrk_us(*p50s[0]) - wrk_us(*p50s[1]) if len(p50s) >= 2 else None
    return int(m.group(1)), float(m.group(2)) / (1000.0 if m.group(3) == "ms" else 1.0), late


def one(cmd, parse):
    out, user, system, _ = peers.measured_apart(cmd)
    done, secs, late = parse(out)
    n = max(done, 1)
    return {"rps": done / secs, "us": (user + system) * 1e6 / n, "sys": system * 1e6 / n,
            "late": late}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--wrk2", default=None, help="wrk2's binary (make in giltene/wrk2)")
    ap.add_argument("--cells", default=",".join(CELLS),
                    help="the closed-loop cells to run, comma-separated (default: all)")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--server", choices=["nginx", "fixed"], default="nginx",
                    help="nginx (its core is the limit: both generators fill theirs waiting on "
                         "it) or pelt-server's fixed_response example (lighter: the generator "
                         "is the limit, so CPU per request is the generator's own cost)")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    for t in ("nginx", "wrk", "taskset", "/usr/bin/time"):
        if not shutil.which(t):
            sys.exit(f"{t} not found: apt-get install nginx-light wrk util-linux time")
    if not os.path.exists(args.pelt):
        sys.exit(f"{args.pelt} not found: cargo build --release")
    # (script, rate, pelt's batch window): rows with a rate share their round's wrk2 run.
    cells = args.cells.split(",")
    if set(cells) - set(CELLS):
        sys.exit(f"--cells: one of {', '.join(CELLS)}")
    rows = [(c, None, None) for c in cells]
    if args.wrk2:
        rows += [("counter.lua", args.rate, None), ("counter.lua", args.rate, "1ms")]
    with tempfile.TemporaryDirectory(prefix="pelt-bench-scripts-") as d:
        port = peers.free_port()
        server_cmd = peers.plain_server(args.server, args.pelt, d, port)
        nginx = subprocess.Popen(["taskset", "-c", str(args.server_cpu)] + server_cmd,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            peers.wait_listening(port)
            url = f"http://127.0.0.1:{port}/"
            cpu = args.client_cpu
            results = {}
            for _ in range(args.runs):
                peer_run = set()
                for script, rate, window in rows:
                    script_arg = None if script == "none" else script
                    tool = "wrk2" if rate else "wrk"
                    runs = [("pelt", pelt_cmd(args, cpu, url, script_arg, rate, window),
                             pelt_parse)]
                    if (script, rate) not in peer_run:
                        peer_run.add((script, rate))
                        peer = wrk_cmd(args.wrk2 if rate else "wrk", args, cpu, url, script_arg,
                                       rate)
                        runs.append((tool, peer, wrk_parse))
                    for who, cmd, parse in runs:
                        key = (script, rate, window if who == "pelt" else None, who)
                        results.setdefault(key, []).append(one(cmd, parse))
        finally:
            nginx.terminate()
            nginx.wait()
    print(f"# {args.server} on CPU {args.server_cpu}, the generator on CPU {args.client_cpu}, -t 1, "
          f"-c {args.conns}, {args.duration} s, median (min-max) of {args.runs} runs")
    print(f"{'script':<24} {'tool':<5} {'requests/s':>26} {'CPU us/request':>24} "
          f"{'system':>7} {'pelt/peer':>10} {'late p50':>9}")
    for script, rate, window in rows:
        name = script + (f" -R {rate}" if rate else "") + (f" tick {window}" if window else "")
        peer = "wrk2" if rate else "wrk"
        # The ratio is the median of each round's (a pelt run beside its peer's): this
        # machine's speed moves between runs, less within a round.
        paired = zip(results[(script, rate, window, "pelt")], results[(script, rate, None, peer)])
        ratio = f"{statistics.median(p['us'] / w['us'] for p, w in paired):.2f}x"
        for tool in ("pelt", peer):
            rs = results[(script, rate, window if tool == "pelt" else None, tool)]
            late = [r["late"] for r in rs if r["late"] is not None]
            late = f"{statistics.median(late):,.0f} us" if late else ""
            print(f"{name:<24} {tool:<5} "
                  f"{peers.fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}'):>26} "
                  f"{peers.fmt([r['us'] for r in rs], lambda v: f'{v:.2f}'):>24} "
                  f"{statistics.median(r['sys'] for r in rs):>7.2f} "
                  f"{ratio if tool == peer else '':>10} {late:>9}")

if __name__ == "__main__":
    main()
