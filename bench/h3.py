#!/usr/bin/env python3
"""HTTP/3: pelt over HTTP/1.1 (TLS), HTTP/2 and HTTP/3 against Debian's caddy, beside oha's
HTTP/3 (built with its `http3` feature), per generator core.

caddy (`tls internal`, `respond "ok" 200`, no access log) pinned to one CPU, the generator to
the other, one thread, `--conns` connections, `--streams` streams per connection over HTTP/2
and HTTP/3 (oha: `-p`), `--duration` seconds, `--runs` runs each in turn (medians, with the
range). Figures: requests/s and CPU microseconds per request (the tool's own rusage, user +
system). The issue's goals: pelt's HTTP/3 at least 3x less CPU per request than oha's, and
within 2x of pelt's own HTTP/2.

Then the same offered rate for both (`--rate`, default 1,500/s, below what oha reaches here):
pelt's open loop (`--rate`) beside oha's `-q`, so neither is judged at its own pace: CPU per
request where both send the same requests per second.

Then the upload cells (`--upload-kib`, default 256): each request a POST of that body, over
HTTP/1.1, HTTP/2 and HTTP/3, kept alive, `--upload-streams` streams: where QUIC sends a flight
of full datagrams at a time, and a send the kernel segments (GSO) pays its way.

Then the handshake cells: a new connection per request (`--no-keepalive`), so requests/s is
handshakes/s: pelt over HTTP/1.1 (TCP + TLS 1.3) and HTTP/3 with full handshakes
(`--tls-full-handshake`), resumed ones, and HTTP/3 with 0-RTT (`--tls-early-data`). oha's HTTP/3
with `--disable-keepalive` sends nothing (measured with 1.16.0: `-n 10 -c 1` still waits at 20
s), so it has no row there.

oha's HTTP/3 is an optional feature of its crate; build it once, outside CI (minutes):
    cargo install oha --version 1.16.0 --features http3 --root /tmp/oha
and give `--oha /tmp/oha/bin/oha` (without it, oha's rows are left out).

Usage: bench/h3.py [--pelt target/release/pelt] [--oha PATH] [--conns 4] [--streams 16]
                   [--duration 5] [--runs 3] [--rate 1500] [--upload-kib 256]
Needs: caddy (Debian), taskset and GNU time; python3 stdlib only. Traffic stays on 127.0.0.1.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (measured, free_port, wait_listening, fmt)


def caddyfile(d, port):
    return (
        "{\n\tadmin off\n\tskip_install_trust\n\tdefault_sni 127.0.0.1\n"
        f"\tstorage file_system {d}/data\n}}\n"
        f"https://127.0.0.1:{port} {{\n\ttls internal\n\trespond \"ok\" 200\n}}\n"
    )


# A handshake cell's flags: a new connection per request, and how it is made.
HANDSHAKES = {"full": ["--tls-full-handshake"], "resume": [], "0rtt": ["--tls-early-data"]}


def pelt_cmd(a, url, proto, mode):
    cmd = [a.pelt, url, "-t", "1", "-c", str(a.conns), "-d", f"{a.duration}s", "--insecure",
           "--json", "-", "-q"]
    if mode in HANDSHAKES:
        cmd += ["--no-keepalive"] + HANDSHAKES[mode]
        if proto == "3":
            cmd += ["--http3"]
        return cmd
    if mode == "rate":
        cmd += ["--rate", str(a.rate)]
    if mode == "upload":
        cmd += ["-m", "POST", "--body-file", a.body]
    streams = str(a.upload_streams if mode == "upload" else a.streams)
    if proto == "2":
        cmd += ["--http2", "--streams", streams]
    if proto == "3":
        cmd += ["--http3", "--streams", streams]
    return cmd


def pelt_parse(out):
    r = json.loads(out)
    if r["requests"]["errors"]:
        print(f"  pelt: {r['requests']['errors']} errors", file=sys.stderr)
    return r["requests"]["completed"], r["duration_s"]


def oha_cmd(a, url, _proto, mode):
    rate = ["-q", str(a.rate)] if mode == "rate" else []
    return [a.oha, "--http-version", "3", "-z", f"{a.duration}s", "-c", str(a.conns), "-p",
            str(a.streams), "--no-tui", "--insecure", "--output-format", "json", *rate, url]


def oha_parse(out):
    r = json.loads(out)
    return sum(r.get("statusCodeDistribution", {}).values()), r["summary"]["total"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--oha", default=None, help="oha built with --features http3")
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=1500, help="the equal-rate cells (0: none)")
    ap.add_argument("--upload-kib", type=int, default=256,
                    help="the upload cells' request body (0: no upload cells)")
    ap.add_argument("--upload-streams", type=int, default=4)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    a = ap.parse_args()
    for t in ("caddy", "taskset", "/usr/bin/time"):
        if not shutil.which(t):
            sys.exit(f"{t} not found: apt-get install caddy util-linux time")
    if not os.path.exists(a.pelt):
        sys.exit(f"{a.pelt} not found: cargo build --release")
    rows = [("pelt", "1.1", "keep"), ("pelt", "2", "keep"), ("pelt", "3", "keep")]
    if a.oha:
        rows.append(("oha", "3", "keep"))
    if a.rate:
        rows.append(("pelt", "3", "rate"))
        if a.oha:
            rows.append(("oha", "3", "rate"))
    if a.upload_kib:
        rows += [("pelt", "1.1", "upload"), ("pelt", "2", "upload"), ("pelt", "3", "upload")]
    rows += [("pelt", "1.1", "full"), ("pelt", "3", "full"), ("pelt", "1.1", "resume"),
             ("pelt", "3", "resume"), ("pelt", "3", "0rtt")]
    tools = {"pelt": (pelt_cmd, pelt_parse), "oha": (oha_cmd, oha_parse)}
    with tempfile.TemporaryDirectory(prefix="pelt-bench-h3-") as d:
        port = peers.free_port()
        a.body = os.path.join(d, "body")
        with open(a.body, "wb") as f:
            f.write(b"a" * (a.upload_kib * 1024))
        conf = os.path.join(d, "Caddyfile")
        with open(conf, "w") as f:
            f.write(caddyfile(d, port))
        env = dict(os.environ, HOME=d, XDG_DATA_HOME=os.path.join(d, "data"),
                   XDG_CONFIG_HOME=os.path.join(d, "config"), GOMAXPROCS="1")
        caddy = subprocess.Popen(["taskset", "-c", str(a.server_cpu), "caddy", "run",
                                  "--adapter", "caddyfile", "--config", conf], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            peers.wait_listening(port, timeout=15)
            time.sleep(1)  # its HTTP/3 listener comes up after its TCP one
            url = f"https://127.0.0.1:{port}/"
            results = {}
            for _ in range(a.runs):
                for tool, proto, mode in rows:
                    make, parse = tools[tool]
                    cmd = ["taskset", "-c", str(a.client_cpu)] + make(a, url, proto, mode)
                    out, cpu, _ = peers.measured(cmd)
                    done, secs = parse(out)
                    results.setdefault((tool, proto, mode), []).append(
                        {"rps": done / secs, "us": cpu * 1e6 / max(done, 1)})
        finally:
            caddy.terminate()
            caddy.wait()
    print(f"# caddy on CPU {a.server_cpu} (GOMAXPROCS=1), the generator on CPU {a.client_cpu}, "
          f"1 thread, {a.conns} connections, {a.streams} streams (HTTP/2, HTTP/3), "
          f"{a.duration} s, median (min-max) of {a.runs} runs")
    print("# connection: keep = kept alive; rate = kept alive at the same offered rate "
          f"({a.rate:,}/s: pelt --rate, oha -q); upload = kept alive, each request a POST of "
          f"{a.upload_kib} KiB ({a.upload_streams} streams); full, resume, 0rtt = one per request "
          "(--no-keepalive), so requests/s is handshakes/s")
    print(f"{'tool':<6} {'HTTP':<5} {'connection':<10} {'requests/s':>26} {'CPU us/request':>24}")
    med = {}
    for key in rows:
        tool, proto, mode = key
        rs = results[key]
        med[key] = statistics.median(r["us"] for r in rs)
        print(f"{tool:<6} {proto:<5} {mode:<10} "
              f"{peers.fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}'):>26} "
              f"{peers.fmt([r['us'] for r in rs], lambda v: f'{v:.2f}'):>24}")
    h3 = med[("pelt", "3", "keep")]
    print(f"pelt HTTP/3 over pelt HTTP/2, CPU per request: {h3 / med[('pelt', '2', 'keep')]:.2f}x")
    if ("oha", "3", "keep") in med:
        print(f"oha HTTP/3 over pelt HTTP/3, CPU per request: "
              f"{med[('oha', '3', 'keep')] / h3:.2f}x")
    if ("oha", "3", "rate") in med:
        print(f"oha HTTP/3 over pelt HTTP/3 at {a.rate:,}/s, CPU per request: "
              f"{med[('oha', '3', 'rate')] / med[('pelt', '3', 'rate')]:.2f}x")


if __name__ == "__main__":
    main()
