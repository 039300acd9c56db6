#!/usr/bin/env python3
"""pelt against its peers, side by side in one run on this machine.

Starts nginx (worker_processes 1, access_log off, keepalive_requests 1000000000,
`return 200 "OK"`), or with --server fixed a lighter fixed-response server (pelt-server's
`fixed_response` example: one thread, epoll, a canned 200), or with --server tls
`pelt serve --tls` over https, pinned to one CPU, and runs each generator pinned to another CPU with one
thread, the same connections and duration, alternating tools run by run. For every cell of
connections x pipeline depth it prints requests/s, generator CPU-microseconds per completed
request (user+sys of the generator process alone, from its rusage via wait4) and the
generator's peak RSS, as medians with min-max.

Tools: pelt on io_uring and on epoll, wrk (pipelining through its documented Lua
`request()` hook), and oha, hey, autocannon and h2load (--h1) when they are on PATH
(bench/peers.sh --install installs them). Tools without pipelining sit out the
pipelined cells.

Then, unless --no-equal: an equal-throughput comparison, wrk2 style. For each of --equal-conns,
pelt runs open loop (--rate) at half of wrk's closed-loop maximum, so neither the server nor the
generator is saturated, and CPU per request is the generator's own cost. With --syscalls,
syscalls per request are counted with `perf stat -e raw_syscalls:sys_enter` in one extra run
per tool at 64 connections.

Usage: bench/peers.py [--pelt target/release/pelt] [--conns 1,16,64,256,1024]
                      [--pipeline 1,16] [--duration 5] [--runs 3] [--tools pelt-uring,wrk,...]
                      [--server-cpu 0] [--client-cpu 1] [--syscalls] [--no-equal]
                      [--server nginx|fixed] [--baseline OTHER_PELT]
With --baseline, a second pelt build runs beside --pelt as base-uring and base-epoll, run by
run, so a change's before and after are measured under the same conditions.
Needs: nginx and wrk on PATH (Debian: apt-get install nginx-light wrk); python3 stdlib only.
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
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
worker_rlimit_nofile 65536;
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

# wrk's own way to pipeline: its Lua request() hook returns `depth` requests at once
# (the pipeline.lua pattern from wrk's scripts/ directory).
WRK_PIPELINE = """
init = function(args)
   local r = {}
   for i = 1, %d do r[i] = wrk.format() end
   req = table.concat(r)
end
request = function() return req end
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


def plain_server(kind, pelt, d, port):
    """The command line of an HTTP/1.1 server on 127.0.0.1:port: "nginx" (NGINX_CONF, its
    files in d) or "fixed" (pelt-server's fixed_response example beside the pelt binary)."""
    if kind == "nginx":
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=d, port=port))
        return ["nginx", "-p", d, "-c", conf]
    fixed = os.path.join(os.path.dirname(pelt), "examples", "fixed_response")
    if not os.path.exists(fixed):
        sys.exit(f"{fixed} not found: cargo build --release -p pelt-server "
                 "--example fixed_response")
    return [fixed, str(port)]


def measured(cmd, env=None):
    """Runs cmd; returns (stdout, its own cpu seconds user+sys, its peak RSS in MiB)."""
    out, user, system, rss = measured_apart(cmd, env)
    return out, user + system, rss


def measured_apart(cmd, env=None):
    """Runs cmd; returns (stdout, its own user cpu seconds, its system cpu seconds, its peak
    RSS in MiB).

    CPU comes from wait4's rusage of the child alone. The peak RSS comes from GNU time's %M:
    a child forked from this Python process starts with Python's pages counted in its
    ru_maxrss, while one forked from `time` starts small."""
    rss_file = tempfile.NamedTemporaryFile(prefix="pelt-rss-", delete=False).name
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    with open(rss_file) as f:
        rss_kib = int(f.read().split()[-1])
    os.unlink(rss_file)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{out[-2000:]}")
    return out, ru.ru_utime, ru.ru_stime, rss_kib / 1024.0


class Tool:
    """One generator: how to run it for (connections, depth, seconds) and read its count."""

    def __init__(self, name, pipelines):
        self.name = name
        self.pipelines = pipelines

    def command(self, ctx, url, conns, depth, secs, rate=None):
        raise NotImplementedError

    def parse(self, out):
        """Returns (completed requests, seconds)."""
        raise NotImplementedError


class Pelt(Tool):
    def __init__(self, io, binary=None, name="pelt"):
        super().__init__(f"{name}-{io}", True)
        self.io = io
        # None: --pelt; else another build (--baseline), to compare before and after a change.
        self.binary = binary

    def command(self, ctx, url, conns, depth, secs, rate=None):
        cmd = [self.binary or ctx.pelt, url, "-c", str(conns), "-t", "1", "-d", f"{secs}s", "--json", "-",
               "-q", "--io", self.io, "--pipeline", str(depth)]
        if getattr(ctx, "cacert", None):
            cmd += ["--cacert", ctx.cacert]
        if rate:
            cmd += ["--rate", str(int(rate))]
        return cmd

    def parse(self, out):
        r = json.loads(out)
        if r["requests"]["errors"]:
            print(f"  {self.name}: {r['requests']['errors']} errors", file=sys.stderr)
        return r["requests"]["completed"], r["duration_s"]


class Wrk(Tool):
    def __init__(self):
        super().__init__("wrk", True)

    def command(self, ctx, url, conns, depth, secs, rate=None):
        cmd = ["wrk", "-t1", f"-c{conns}", f"-d{secs}s", url]
        if depth > 1:
            script = os.path.join(ctx.dir, f"pipeline{depth}.lua")
            with open(script, "w") as f:
                f.write(WRK_PIPELINE % depth)
            cmd += ["-s", script]
        return cmd

    def parse(self, out):
        m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
        if not m:
            sys.exit(f"cannot parse wrk output:\n{out}")
        errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if errors:
            print(f"  wrk saw {errors.group(1)} non-2xx responses", file=sys.stderr)
        return int(m.group(1)), float(m.group(2)) / (1000.0 if m.group(3) == "ms" else 1.0)


class Oha(Tool):
    def __init__(self):
        super().__init__("oha", False)

    def command(self, ctx, url, conns, depth, secs, rate=None):
        tls = ["--insecure"] if url.startswith("https") else []
        return ["oha", "-z", f"{secs}s", "-c", str(conns), "--no-tui", "--output-format",
                "json"] + tls + [url]

    def parse(self, out):
        r = json.loads(out)
        total = sum(r.get("statusCodeDistribution", {}).values())
        return total, r["summary"]["total"]


class Hey(Tool):
    def __init__(self):
        super().__init__("hey", False)

    def command(self, ctx, url, conns, depth, secs, rate=None):
        return ["hey", "-z", f"{secs}s", "-c", str(conns), url]

    def parse(self, out):
        total = sum(int(n) for n in re.findall(r"\[\d+\]\s+(\d+) responses", out))
        secs = float(re.search(r"Total:\s+([\d.]+) secs", out).group(1))
        return total, secs


class Autocannon(Tool):
    def __init__(self):
        super().__init__("autocannon", True)

    def command(self, ctx, url, conns, depth, secs, rate=None):
        return ["autocannon", "-c", str(conns), "-d", str(secs), "-p", str(depth), "-j", url]

    def parse(self, out):
        r = json.loads(out)
        return r["requests"]["total"], r["duration"]


class H2load(Tool):
    def __init__(self):
        super().__init__("h2load", True)

    def command(self, ctx, url, conns, depth, secs, rate=None):
        return ["h2load", "--h1", "-t", "1", "-c", str(conns), "-D", str(secs), "-m",
                str(depth), url]

    def parse(self, out):
        done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
        m = re.search(r"finished in ([\d.]+)(m?s)", out)
        return done, float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)


def all_tools():
    return [Pelt("uring"), Pelt("epoll"), Wrk(), Oha(), Hey(), Autocannon(), H2load()]


def fmt(values, f):
    med = statistics.median(values)
    return f"{f(med)} ({f(min(values))}-{f(max(values))})"


def one_run(ctx, tool, url, conns, depth, secs, rate=None):
    cmd = ["taskset", "-c", str(ctx.client_cpu)] + tool.command(ctx, url, conns, depth, secs,
                                                                rate)
    env = dict(os.environ, GOMAXPROCS="1")
    out, cpu, rss = measured(cmd, env)
    done, dur = tool.parse(out)
    return {"rps": done / dur, "us": cpu * 1e6 / max(done, 1), "rss": rss}


def syscalls_per_request(ctx, tool, url, conns, secs):
    cmd = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o",
           os.path.join(ctx.dir, "perf.txt"), "--", "taskset", "-c",
           str(ctx.client_cpu)] + tool.command(ctx, url, conns, 1, secs)
    out, _, _ = measured(cmd, dict(os.environ, GOMAXPROCS="1"))
    done, _ = tool.parse(out)
    with open(os.path.join(ctx.dir, "perf.txt")) as f:
        m = re.search(r"^(\d+),,raw_syscalls:sys_enter", f.read(), re.M)
    return int(m.group(1)) / max(done, 1) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--conns", default="1,16,64,256,1024")
    ap.add_argument("--pipeline", default="1,16")
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", default=None,
                    help="another pelt build (say, main's), run as base-uring and base-epoll "
                         "beside --pelt, alternating run by run: before and after a change")
    ap.add_argument("--tools", default="", help="comma-separated subset (default: all found)")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--syscalls", action="store_true")
    ap.add_argument("--no-equal", action="store_true")
    ap.add_argument("--equal-conns", default="64,256")
    ap.add_argument("--server", choices=["nginx", "fixed", "tls"], default="nginx",
                    help="fixed: pelt-server's fixed_response example, lighter than nginx "
                         "(cargo build --release -p pelt-server --example fixed_response); "
                         "tls: `pelt serve --tls --threads 1`, https (pelt with --cacert; "
                         "wrk, h2load and oha as they do https)")
    args = ap.parse_args()
    for t in ("nginx", "wrk", "taskset", "/usr/bin/time"):
        if not shutil.which(t):
            sys.exit(f"{t} not found: apt-get install nginx-light wrk util-linux time")
    if not os.path.exists(args.pelt):
        sys.exit(f"{args.pelt} not found: cargo build --release")
    wanted = set(filter(None, args.tools.split(",")))
    tools = []
    candidates = all_tools()
    if args.baseline:
        if not os.path.exists(args.baseline):
            sys.exit(f"{args.baseline} not found")
        candidates[2:2] = [Pelt("uring", args.baseline, "base"), Pelt("epoll", args.baseline, "base")]
    for t in candidates:
        binary = "pelt" if isinstance(t, Pelt) else t.name
        if wanted and t.name not in wanted:
            continue
        if binary != "pelt" and not shutil.which(binary):
            print(f"# {t.name}: not installed, left out (bench/peers.sh --install)",
                  file=sys.stderr)
            continue
        tools.append(t)
    if not any(t.name == "wrk" for t in tools):
        sys.exit("wrk must be among the tools: it is the yardstick")
    conns_list = [int(c) for c in args.conns.split(",")]
    depths = [int(p) for p in args.pipeline.split(",")]
    with tempfile.TemporaryDirectory(prefix="pelt-bench-") as d:
        args.dir = d
        port = free_port()
        scheme = "http"
        if args.server == "tls":
            scheme = "https"
            server_cmd = [args.pelt, "serve", "--tls", "--threads", "1", "--port", str(port)]
            tools = [t for t in tools
                     if isinstance(t, Pelt) or t.name in ("wrk", "h2load", "oha")]
        else:
            server_cmd = plain_server(args.server, args.pelt, d, port)
        nginx = subprocess.Popen(["taskset", "-c", str(args.server_cpu)] + server_cmd,
                                 stdout=subprocess.PIPE if scheme == "https" else
                                 subprocess.DEVNULL, text=True)
        try:
            if scheme == "https":
                nginx.stdout.readline()
                args.cacert = nginx.stdout.readline().split()[1]
            wait_listening(port)
            url = f"{scheme}://127.0.0.1:{port}/"
            cpu = open("/proc/cpuinfo").read()
            model = re.search(r"model name\s*:\s*(.*)", cpu)
            print(f"# {args.server} on CPU {args.server_cpu}, generators on CPU {args.client_cpu}, one "
                  f"thread each, {args.duration}s runs, {args.runs} runs per tool, alternating; "
                  f"kernel {os.uname().release}; {model.group(1) if model else 'cpu ?'}")
            rows = []
            for depth in depths:
                for conns in conns_list:
                    cell = [t for t in tools if depth == 1 or t.pipelines]
                    res = {t.name: [] for t in cell}
                    for _ in range(args.runs):
                        for t in cell:
                            res[t.name].append(one_run(args, t, url, conns, depth,
                                                       args.duration))
                    rows.append((depth, conns, cell, res))
                    print(f"# depth {depth} c={conns} done", file=sys.stderr)
            equal = []
            if not args.no_equal:
                pelts = [t for t in tools if t.name.startswith("pelt")]
                for conns in [int(c) for c in args.equal_conns.split(",")
                              if int(c) in conns_list and 1 in depths]:
                    wrk_rps = next(statistics.median(r["rps"] for r in res["wrk"])
                                   for depth, c, _, res in rows if depth == 1 and c == conns)
                    rate = wrk_rps / 2
                    res = {t.name: [] for t in pelts}
                    for _ in range(args.runs):
                        for t in pelts:
                            res[t.name].append(one_run(args, t, url, conns, 1, args.duration,
                                                       rate))
                    equal.append((conns, rate, res))
            sys_rows = []
            if args.syscalls:
                for t in tools:
                    sys_rows.append((t.name, syscalls_per_request(args, t, url, 64,
                                                                  args.duration)))
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)

    def med(rs, k):
        return statistics.median(r[k] for r in rs)

    print()
    print("| pipeline | conns | tool | requests/s median (min-max) "
          "| CPU us/request median (min-max) | vs wrk | peak RSS MiB |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for depth, conns, cell, res in rows:
        wrk_us = med(res["wrk"], "us")
        for t in cell:
            rs = res[t.name]
            print(f"| {depth} | {conns} | {t.name} "
                  f"| {fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}')} "
                  f"| {fmt([r['us'] for r in rs], lambda v: f'{v:.2f}')} "
                  f"| {med(rs, 'us') / wrk_us:.2f}x | {med(rs, 'rss'):.1f} |")
    if equal:
        print()
        print("Equal throughput (open loop at half of wrk's closed-loop maximum):")
        print()
        print("| conns | rate/s | tool | achieved requests/s | CPU us/request median (min-max) "
              "| vs wrk closed loop |")
        print("|---:|---:|---|---:|---:|---:|")
        for conns, rate, res in equal:
            wrk_us = next(med(r["wrk"], "us") for depth, c, _, r in rows
                          if depth == 1 and c == conns)
            for name, rs in res.items():
                print(f"| {conns} | {rate:,.0f} | {name} "
                      f"| {med(rs, 'rps'):,.0f} "
                      f"| {fmt([r['us'] for r in rs], lambda v: f'{v:.2f}')} "
                      f"| {med(rs, 'us') / wrk_us:.2f}x |")
    if sys_rows:
        print()
        print("| tool | syscalls per request (c=64, perf raw_syscalls:sys_enter) |")
        print("|---|---:|")
        for name, n in sys_rows:
            print(f"| {name} | {'?' if n is None else f'{n:.2f}'} |")


if __name__ == "__main__":
    main()
