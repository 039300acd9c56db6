#!/usr/bin/env python3
"""HTTP/2 generators side by side: N streams on C connections, closed loop, pinned cores.

Starts nginx with cleartext HTTP/2 (prior knowledge: `listen ... http2`, `return 200 "OK"`,
128 concurrent streams) on one CPU, or with --server pelt the built-in server
(`pelt serve --h2`, hyper), and runs each generator on another CPU with one thread, the same
connections, streams and duration, alternating tools run by run. Prints requests/s and
generator CPU-microseconds per request (user+sys from the child's own rusage) as medians with
min-max, relative to h2load, and peak RSS.

Tools: pelt on io_uring and on epoll (`--http2 --streams N`), h2load (`-m N`), oha
(`--http2 -p N`), and `h2crate`: crates/server/examples/h2_crate_client.rs, a minimal client
on the h2 crate (tokio, one thread), the alternative pelt's own framer was measured against.

With --tls, nginx serves HTTP/2 over TLS instead (`listen ... ssl http2`, a self-signed P-256
certificate made with the openssl command, a shared session cache): ALPN h2, as browsers use
it; pelt verifies the certificate with --cacert, h2load and oha do not verify; h2crate is
plain-only and skipped.

Usage: bench/h2.py [--pelt target/release/pelt] [--conns 4] [--streams 100] [--duration 5]
                   [--runs 3] [--tools pelt-uring,h2load,...] [--server nginx|pelt] [--tls]
Needs: nginx, h2load (Debian: nginx-light nghttp2-client), oha optional; builds the h2crate
example with cargo if it is missing. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import NGINX_CONF, fmt, free_port, measured, wait_listening  # noqa: E402

NGINX_H2 = NGINX_CONF.replace("backlog=4096;", "backlog=4096 http2;\n"
                              "        http2_max_concurrent_streams 128;")
NGINX_H2_TLS = NGINX_CONF.replace(
    "backlog=4096;", "backlog=4096 ssl http2;\n"
    "        http2_max_concurrent_streams 128;\n"
    "        ssl_certificate {dir}/cert.pem;\n"
    "        ssl_certificate_key {dir}/key.pem;\n"
    "        ssl_session_cache shared:S:10m;")
H2CRATE = "target/release/examples/h2_crate_client"


def self_signed(d):
    """A P-256 certificate for 127.0.0.1 in d/cert.pem and d/key.pem (the openssl command)."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    # Not a CA: webpki (rustls) refuses a CA certificate as the server's own.
                    "-addext", "basicConstraints=critical,CA:FALSE", "-keyout",
                    os.path.join(d, "key.pem"), "-out", os.path.join(d, "cert.pem")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pelt(io):
    def cmd(a, url):
        tls = ["--cacert", a.cacert] if a.tls else []
        return [a.pelt, url, "--http2", "-c", str(a.conns), "--streams", str(a.streams),
                "-t", "1", "-d", f"{a.duration}s", "--json", "-", "-q", "--io", io] + tls

    def parse(out):
        r = json.loads(out)
        if r["requests"]["errors"]:
            print(f"  pelt-{io}: {r['requests']['errors']} errors", file=sys.stderr)
        return r["requests"]["completed"], r["duration_s"]
    return cmd, parse


def h2load_cmd(a, url):
    return ["h2load", "-t", "1", "-c", str(a.conns), "-m", str(a.streams), "-D",
            str(a.duration), url]


def h2load_parse(out):
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    m = re.search(r"finished in ([\d.]+)(m?s)", out)
    return done, float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)


def oha_cmd(a, url):
    return ["oha", "--http2", "-z", f"{a.duration}s", "-c", str(a.conns), "-p", str(a.streams),
            "--no-tui", "--output-format", "json"] + (["--insecure"] if a.tls else []) + [url]


def oha_parse(out):
    r = json.loads(out)
    return sum(r.get("statusCodeDistribution", {}).values()), r["summary"]["total"]


def h2crate_cmd(a, url):
    return [H2CRATE, url, str(a.conns), str(a.streams), str(a.duration)]


def h2crate_parse(out):
    m = re.search(r"completed (\d+) seconds ([\d.]+)", out)
    return int(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", default="")
    ap.add_argument("--server", choices=["nginx", "pelt"], default="nginx")
    ap.add_argument("--tls", action="store_true", help="HTTP/2 over TLS (nginx only)")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    a = ap.parse_args()
    if not os.path.exists(H2CRATE):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "pelt-server", "--example",
                        "h2_crate_client"], check=True)
    tools = {"pelt-uring": pelt("uring"), "pelt-epoll": pelt("epoll"),
             "h2load": (h2load_cmd, h2load_parse), "oha": (oha_cmd, oha_parse),
             "h2crate": (h2crate_cmd, h2crate_parse)}
    chosen = [t for t in (a.tools.split(",") if a.tools else tools) if t in tools]
    chosen = [t for t in chosen if t.startswith(("pelt", "h2crate")) or shutil.which(t)]
    if a.tls:
        if a.server != "nginx":
            sys.exit("--tls runs against nginx only")
        chosen = [t for t in chosen if t != "h2crate"]
    d = tempfile.mkdtemp(prefix="pelt-h2-bench-")
    port = free_port()
    if a.server == "nginx":
        conf = os.path.join(d, "nginx.conf")
        if a.tls:
            self_signed(d)
            a.cacert = os.path.join(d, "cert.pem")
        with open(conf, "w") as f:
            f.write((NGINX_H2_TLS if a.tls else NGINX_H2).format(dir=d, port=port))
        server = subprocess.Popen(["taskset", "-c", str(a.server_cpu), "nginx", "-p", d, "-c",
                                   conf], stderr=subprocess.DEVNULL)
    else:
        server = subprocess.Popen(["taskset", "-c", str(a.server_cpu), a.pelt, "serve",
                                   "--h2", "--port", str(port), "--max-streams", "128"],
                                  stdout=subprocess.DEVNULL)
    try:
        wait_listening(port)
        url = f"{'https' if a.tls else 'http'}://127.0.0.1:{port}/"
        res = {t: [] for t in chosen}
        for _ in range(a.runs):
            for t in chosen:
                cmd, parse = tools[t]
                full = ["taskset", "-c", str(a.client_cpu)] + cmd(a, url)
                out, cpu, rss = measured(full, dict(os.environ, GOMAXPROCS="1"))
                done, secs = parse(out)
                res[t].append({"rps": done / secs, "us": cpu * 1e6 / max(done, 1), "rss": rss})
                time.sleep(0.5)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(d, ignore_errors=True)
    print(f"# {a.server} {'h2 over TLS' if a.tls else 'h2c'} on CPU {a.server_cpu}, generators on CPU {a.client_cpu}, one "
          f"thread, {a.conns} connections x {a.streams} streams, {a.duration}s runs, "
          f"{a.runs} per tool, alternating; kernel {os.uname().release}")
    print()
    print("| tool | requests/s median (min-max) | CPU us/request median (min-max) "
          "| vs h2load | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")

    def med(rs, k):
        return sorted(r[k] for r in rs)[len(rs) // 2]
    base = med(res["h2load"], "us") if "h2load" in res else None
    for t in chosen:
        rs = res[t]
        rel = f"{med(rs, 'us') / base:.2f}x" if base else "-"
        print(f"| {t} | {fmt([r['rps'] for r in rs], lambda v: f'{v:,.0f}')} "
              f"| {fmt([r['us'] for r in rs], lambda v: f'{v:.2f}')} | {rel} "
              f"| {med(rs, 'rss'):.1f} |")


if __name__ == "__main__":
    main()
