#!/usr/bin/env python3
"""pelt against its peers, side by side in one run on this machine.

Starts nginx (worker_processes 1, access_log off, keepalive_requests 1000000000,
`return 200 "OK"`) pinned to one CPU, and runs each generator pinned to another CPU with one
thread, the same connections and duration, alternating tools run by run. Prints requests/s and
generator CPU-microseconds per completed request (user+sys of the generator process, from its
rusage, divided by the requests it completed), as medians with min-max.

Usage: bench/peers.py [--pelt target/release/pelt] [--conns 16,64,256] [--duration 10]
                      [--runs 3] [--server-cpu 0] [--client-cpu 1]
Needs: nginx and wrk on PATH (Debian: apt-get install nginx-light wrk); python3 stdlib only.
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 65536; }}
http {{
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 300s;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{ return 200 "OK"; }}
    }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nginx did not start listening on {port}")


def timed(cmd):
    """Runs cmd; returns (stdout, cpu seconds user+sys of that child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu


def run_pelt(args, url, conns, cpu):
    cmd = ["taskset", "-c", str(cpu), args.pelt, url, "-c", str(conns), "-t", "1",
           "-d", f"{args.duration}s", "--json", "-", "-q"]
    out, secs = timed(cmd)
    r = json.loads(out)
    return r["requests"]["completed"], r["duration_s"], secs


def run_wrk(args, url, conns, cpu):
    cmd = ["taskset", "-c", str(cpu), "wrk", "-t1", f"-c{conns}", f"-d{args.duration}s", url]
    out, secs = timed(cmd)
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if not m:
        sys.exit(f"cannot parse wrk output:\n{out}")
    dur = float(m.group(2)) / (1000.0 if m.group(3) == "ms" else 1.0)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        print(f"  wrk saw {errors.group(1)} non-2xx responses", file=sys.stderr)
    return int(m.group(1)), dur, secs


def fmt(values, f):
    med = statistics.median(values)
    return f"{f(med)} ({f(min(values))}-{f(max(values))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--conns", default="16,64,256")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    for tool in ("nginx", "wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install nginx-light wrk util-linux")
    if not os.path.exists(args.pelt):
        sys.exit(f"{args.pelt} not found: cargo build --release")
    tools = {"pelt": run_pelt, "wrk": run_wrk}
    with tempfile.TemporaryDirectory(prefix="pelt-bench-") as d:
        port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=d, port=port))
        nginx = subprocess.Popen(["taskset", "-c", str(args.server_cpu), "nginx", "-p", d, "-c", conf])
        try:
            wait_listening(port)
            url = f"http://127.0.0.1:{port}/"
            print(f"# nginx on CPU {args.server_cpu}, generators on CPU {args.client_cpu}, one thread, "
                  f"{args.duration}s runs, {args.runs} runs each, alternating; {os.uname().release}")
            rows = []
            for conns in [int(c) for c in args.conns.split(",")]:
                res = {t: {"rps": [], "us": []} for t in tools}
                for _ in range(args.runs):
                    for name, fn in tools.items():
                        done, dur, cpu = fn(args, url, conns, args.client_cpu)
                        res[name]["rps"].append(done / dur)
                        res[name]["us"].append(cpu * 1e6 / max(done, 1))
                ratio = statistics.median(res["pelt"]["us"]) / statistics.median(res["wrk"]["us"])
                rows.append((conns, res, ratio))
                print(f"c={conns} done", file=sys.stderr)
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)
    print()
    print("| conns | tool | requests/s median (min-max) | CPU us/request median (min-max) |")
    print("|---:|---|---:|---:|")
    for conns, res, ratio in rows:
        for name in tools:
            print(f"| {conns} | {name} | {fmt(res[name]['rps'], lambda v: f'{v:,.0f}')} | "
                  f"{fmt(res[name]['us'], lambda v: f'{v:.2f}')} |")
        print(f"| {conns} | **pelt/wrk CPU per request** | | **{ratio:.2f}x** |")


if __name__ == "__main__":
    main()
