#!/usr/bin/env python3
"""Replay accuracy: pelt --replay against goreplay on the same recording.

Writes one recording, `--span` seconds of GET requests (/r/0 .. /r/N-1) arriving as a Poisson
process at `--rate` requests/s, twice: as pelt's JSON lines (`"t"`, milliseconds) and as a
goreplay file (`1 id timestamp-ns 0`, the raw request, the separator). Then, for each speed
(`--speeds 1,4`) and each tool in turn, with nginx pinned to one CPU and the tool to the other:

  pelt      URL --targets rec.jsonl --replay --replay-speed Kx -t 1 -c 64
  pelt-stream  the same, --targets-read stream: the recording read as the run goes
  pelt-rate URL --targets rec.jsonl --rate R --arrival poisson -n N -t 1 -c 64: the same
            requests at the recording's mean rate (pelt's other schedule; its own lag only)
  goreplay  --input-file 'rec.gor|K00%' --output-http URL   (its dynamic worker pool),
            stopped 2 x span + 3 s after it starts (it falls behind: see "seen")

tcpdump (on the server's CPU) stamps every request's first packet as it reaches nginx on
loopback, nanoseconds, the same for both tools. A request's lag is its arrival minus its due
time (its recorded offset over the speed), less the smallest such difference of the run (the
run's start, which no tool can send before): the spread of send - due. Printed per cell, as
medians over `--runs`: lag p50 / p99 / p99.9 / max (microseconds), requests seen (of those in
the recording), and CPU microseconds per request (the tool's own rusage). pelt's own lag
(`open_loop.lag_us`, due time to write) is printed beside the wire's.

Usage: bench/replay.py [--pelt target/release/pelt] [--goreplay goreplay] [--rate 5000]
                       [--span 20] [--speeds 1,4] [--runs 3] [--tools pelt,pelt-stream,pelt-rate,goreplay]
Needs: nginx, tcpdump and taskset on PATH (tcpdump as root), goreplay built from the Go
module proxy (GOPATH=/tmp/gopath go install github.com/buger/goreplay@v1.3.2, with
libpcap-dev); python3 stdlib only. Traffic stays on 127.0.0.1.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (NGINX_CONF, measured, free_port, wait_listening)

SEPARATOR = "\n\U0001f435\U0001f648\U0001f649\n"  # goreplay's payload separator
EPOCH_NS = 1_764_000_000 * 10**9  # the recording's first request, as goreplay's timestamp


def recording(rate, span, seed=1):
    """Due offsets (ns from the first) of a Poisson process at `rate` over `span` seconds."""
    rng = random.Random(seed)
    t, times = 0.0, []
    while t < span:
        times.append(round(t * 1e9))
        t += rng.expovariate(rate)
    return times


def write_recording(d, port, times):
    jsonl, gor = os.path.join(d, "rec.jsonl"), os.path.join(d, "rec.gor")
    with open(jsonl, "w") as j, open(gor, "w") as g:
        for i, t in enumerate(times):
            j.write(json.dumps({"url": f"http://127.0.0.1:{port}/r/{i}", "t": t / 1e6}) + "\n")
            req = f"GET /r/{i} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
            g.write(f"1 {i:024x} {EPOCH_NS + t} 0\n{req}{SEPARATOR}")
    return jsonl, gor


def arrivals(pcap):
    """{request index: first arrival, ns} from a nanosecond pcap of loopback (Ethernet)."""
    seen = {}
    with open(pcap, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        if magic != 0xA1B23C4D:
            sys.exit(f"{pcap}: not a nanosecond pcap (magic {magic:#x})")
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            sec, nsec, incl, _ = struct.unpack("<IIII", rec)
            pkt = f.read(incl)
            ip = pkt[14:]
            tcp = ip[(ip[0] & 0x0F) * 4:]
            payload = tcp[(tcp[12] >> 4) * 4:]
            at = sec * 10**9 + nsec
            # One packet may carry several requests; each one's start is the packet's time.
            k = 0
            while (k := payload.find(b"GET /r/", k)) >= 0:
                end = payload.find(b" ", k + 7)
                if end < 0:
                    break
                i = int(payload[k + 7:end])
                seen.setdefault(i, at)
                k = end
    return seen


def pct(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def spread(times, speed, seen):
    diffs = sorted(at - times[i] / speed for i, at in seen.items())
    base = diffs[0]
    lags = [(x - base) / 1000 for x in diffs]
    return {"p50": pct(lags, 0.5), "p99": pct(lags, 0.99), "p999": pct(lags, 0.999),
            "max": lags[-1], "seen": len(seen)}


def captured(args, port, pcap, cmd, env=None):
    """Runs cmd (pinned to the client CPU) with tcpdump capturing its requests to nginx."""
    filt = f"tcp dst port {port} and tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420"
    dump = subprocess.Popen(
        ["taskset", "-c", str(args.server_cpu), "tcpdump", "-i", "lo", "-nn", "-s", "160",
         "-B", "65536", "--immediate-mode", "--time-stamp-precision=nano", "-w", pcap, filt],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while True:  # tcpdump says "listening on lo, ..." once it captures
        line = dump.stderr.readline()
        if not line or "listening on" in line:
            break
    time.sleep(1)  # let its buffer settle before the tool starts (it shares the server's CPU)
    try:
        # Not peers.measured: started under /usr/bin/time from Python, pelt's first requests
        # went out ~40 ms late (its own lag said so too), not from a shell nor without time.
        tool = subprocess.Popen(["taskset", "-c", str(args.client_cpu)] + cmd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out = tool.stdout.read()
        _, status, ru = os.wait4(tool.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(cmd)} exited {status}:\n{out[-2000:]}")
        cpu = ru.ru_utime + ru.ru_stime
    finally:
        time.sleep(0.3)
        dump.send_signal(signal.SIGINT)
        rest = dump.communicate(timeout=30)[1]
    dropped = [ln for ln in rest.splitlines() if "dropped by kernel" in ln]
    if dropped and not dropped[0].startswith("0 "):
        print(f"  tcpdump: {dropped[0]}", file=sys.stderr)
    return out, cpu


def run_pelt(args, d, port, jsonl, speed, times, read="whole"):
    pcap = os.path.join(d, "pelt.pcap")
    cmd = [args.pelt, f"http://127.0.0.1:{port}", "--targets", jsonl, "--replay",
           "--replay-speed", f"{speed}x", "--targets-read", read, "-t", "1", "-c", "64",
           "--max-connections", "1024", "--json", "-", "-q"]
    out, cpu = captured(args, port, pcap, cmd)
    r = json.loads(out)
    s = spread(times, speed, arrivals(pcap))
    lag = r["open_loop"]["lag_us"]
    s["own"] = f"{lag['p50']:.0f}/{lag['p99']:.0f}"
    s["errors"] = r["requests"]["errors"]
    s["cpu_us"] = cpu * 1e6 / max(r["requests"]["completed"], 1)
    return s


def run_pelt_stream(args, d, port, jsonl, speed, times):
    """pelt reading the recording as the run goes (its reader thread on the same CPU)."""
    return run_pelt(args, d, port, jsonl, speed, times, read="stream")


def run_pelt_rate(args, d, port, jsonl, speed, times):
    """The same requests at the recording's mean rate as a Poisson process (--rate): pelt's
    own lag and CPU with the rate's due times instead of the recording's (the other arm of
    its schedule); the wire's spread needs the due times, which are pelt's own here."""
    pcap = os.path.join(d, "rate.pcap")
    rate = (len(times) - 1) / (times[-1] / 1e9) * speed
    cmd = [args.pelt, f"http://127.0.0.1:{port}", "--targets", jsonl, "--rate", f"{rate:.1f}",
           "--arrival", "poisson", "-n", str(len(times)), "-t", "1", "-c", "64",
           "--max-connections", "1024", "--json", "-", "-q"]
    out, cpu = captured(args, port, pcap, cmd)
    r = json.loads(out)
    lag = r["open_loop"]["lag_us"]
    seen = len(arrivals(pcap))
    return {"p50": 0, "p99": 0, "p999": 0, "max": 0, "seen": seen,
            "own": f"{lag['p50']:.0f}/{lag['p99']:.0f}",
            "cpu_us": cpu * 1e6 / max(r["requests"]["completed"], 1), "wire": False}


def run_goreplay(args, d, port, gor, speed, times):
    pcap = os.path.join(d, "gor.pcap")
    span = times[-1] / 1e9 / speed
    cmd = [args.goreplay, "--input-file", f"{gor}|{speed * 100:g}%", "--output-http",
           f"http://127.0.0.1:{port}", "--exit-after", f"{2 * span + 3:.1f}s"] + args.gor_args
    _, cpu = captured(args, port, pcap, cmd)
    s = spread(times, speed, arrivals(pcap))
    s["own"] = "-"
    s["errors"] = "-"
    s["cpu_us"] = cpu * 1e6 / max(s["seen"], 1)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--goreplay", default=shutil.which("goreplay") or "/tmp/gopath/bin/goreplay")
    ap.add_argument("--gor-args", type=str.split, default=[],
                    help="more goreplay flags, one string (--output-http-workers-min 64)")
    ap.add_argument("--rate", type=float, default=5000.0, help="the recording's requests/s")
    ap.add_argument("--span", type=float, default=20.0, help="the recording's seconds")
    ap.add_argument("--speeds", default="1,4")
    ap.add_argument("--tools", default="pelt,pelt-rate,goreplay")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    args = ap.parse_args()
    for exe in (args.pelt, args.goreplay):
        if not os.path.exists(exe):
            sys.exit(f"{exe} not found")
    times = recording(args.rate, args.span)
    print(f"recording: {len(times)} requests over {args.span:g} s, Poisson at "
          f"{args.rate:g}/s; nginx on CPU {args.server_cpu}, tool on CPU {args.client_cpu}; "
          f"medians of {args.runs} runs")
    with tempfile.TemporaryDirectory(prefix="pelt-replay-") as d:
        port = peers.free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(peers.NGINX_CONF.format(dir=d, port=port))
        nginx = subprocess.Popen(["taskset", "-c", str(args.server_cpu), "nginx", "-c", conf,
                                  "-p", d], stderr=subprocess.DEVNULL)
        try:
            peers.wait_listening(port)
            jsonl, gor = write_recording(d, port, times)
            cols = ("speed", "tool", "rate/s", "lag p50", "p99", "p99.9", "max", "seen",
                    "own p50/p99", "CPU us/req")
            print("%-6s %-11s %8s %9s %9s %9s %9s %8s %12s %10s" % cols)
            for speed in [float(s) for s in args.speeds.split(",")]:
                for name, fn, path in (("pelt", run_pelt, jsonl),
                                       ("pelt-stream", run_pelt_stream, jsonl),
                                       ("pelt-rate", run_pelt_rate, jsonl),
                                       ("goreplay", run_goreplay, gor)):
                    if name not in args.tools.split(","):
                        continue
                    rs = [fn(args, d, port, path, speed, times) for _ in range(args.runs)]
                    med = {k: statistics.median(r[k] for r in rs)
                           for k in ("p50", "p99", "p999", "max", "seen", "cpu_us")}
                    wire = ["%9.0f" % med[k] for k in ("p50", "p99", "p999", "max")]
                    if rs[0].get("wire") is False:
                        wire = ["%9s" % "-"] * 4
                    print("%-6s %-11s %8.0f %s %8d %12s %10.1f" % (
                        f"{speed:g}x", name, args.rate * speed, " ".join(wire), med["seen"],
                        rs[len(rs) // 2]["own"], med["cpu_us"]), flush=True)
        finally:
            nginx.terminate()
            nginx.wait()


if __name__ == "__main__":
    main()
