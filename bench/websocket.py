#!/usr/bin/env python3
"""WebSocket echo round trips: CPU per message and messages/s, pelt against Artillery's
WebSocket engine (npm) on the same echo server. k6's WebSocket module is not among them: this
project's Go module proxy lists go.k6.io/k6 as not to be used (AGPL), so it is not built here.

The server is `pelt serve --ws --threads 1` pinned to --server-cpu, started afresh for each run
so its own closing count (`websocket: U upgrades, R messages received, S sent`) is that run's:
the messages echoed are the server's figure, whatever each client says. Each client, pinned to
--client-cpu, opens --sockets sockets and does round trips on each, one at a time (send, wait
for the echo, send the next), --messages in all:
- pelt: `pelt ws://… -b '{"n":1}' -c SOCKETS -n MESSAGES -t 1`;
- Artillery: SOCKETS virtual users arriving in the first second, each connecting and looping
  `send` with a `match` on the echo (which makes it wait for the reply) MESSAGES/SOCKETS times.
CPU is the client's user+sys from wait4's rusage. Prints one row per tool (median of --runs,
min-max); "vs pelt" is the tool's CPU per message over pelt's.

With --hold N it measures held sockets instead: pelt opens N sockets (`-c N --connect-rate
5000`, no message) to the same server and holds them; once all are up it reads pelt's CPU
(utime+stime from /proc) over --idle seconds, and its peak RSS at the end. --baseline PELT
runs another build the same way, alternating, for a before/after of the same run.

Usage: bench/websocket.py [--pelt target/release/pelt] [--artillery PATH] [--sockets 100]
                          [--messages 200000] [--runs 3] [--server-cpu 0] [--client-cpu 1]
       bench/websocket.py --hold 10000 [--idle 10] [--baseline OTHER_PELT] [--runs 3]
Artillery from npm: `npm install artillery` in a folder of your choice (with
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 where its browser cannot be fetched), then --artillery
FOLDER/node_modules/.bin/artillery; without it Artillery sits out, said on stderr.
Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MESSAGE = '{"n":1}'


def start_server(pelt, cpu):
    p = subprocess.Popen(["taskset", "-c", str(cpu), pelt, "serve", "--port", "0", "--ws",
                          "--threads", "1"], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        sys.exit(f"pelt serve said {line!r}")
    return p, int(m.group(1))


def stop_server(p):
    """SIGTERM to the server we started; its count of messages echoed."""
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    m = re.search(r"websocket: (\d+) upgrades, (\d+) messages received, (\d+) sent", out)
    if not m:
        sys.exit(f"pelt serve said nothing of WebSocket: {out!r}")
    return int(m.group(3))


def timed(cmd):
    """Runs cmd; its CPU seconds (user+sys, from wait4) and wall seconds."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[3]} failed: {err[-2000:]}")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t


def artillery_script(work, port, sockets, messages):
    path = os.path.join(work, "ws.yml")
    loops = max(1, messages // sockets)
    with open(path, "w") as f:
        f.write(f"""config:
  target: "ws://127.0.0.1:{port}/"
  phases:
    - duration: 1
      arrivalCount: {sockets}
scenarios:
  - engine: ws
    flow:
      - loop:
          - send:
              payload: '{MESSAGE}'
              match:
                json: "$.n"
                value: 1
        count: {loops}
""")
    return path


def run_once(tool, args, work):
    server, port = start_server(args.pelt, args.server_cpu)
    pin = ["taskset", "-c", str(args.client_cpu)]
    try:
        if tool == "pelt":
            cmd = pin + [args.pelt, f"ws://127.0.0.1:{port}/", "-b", MESSAGE, "-c",
                         str(args.sockets), "-n", str(args.messages), "-t", "1", "-q"]
        else:
            script = artillery_script(work, port, args.sockets, args.messages)
            cmd = pin + [args.artillery, "run", "--quiet", "--output",
                         os.path.join(work, "artillery.json"), script]
        cpu, wall = timed(cmd)
    finally:
        echoed = stop_server(server)
    return cpu, wall, echoed


def cpu_seconds(pid):
    """A process's user+sys CPU so far, seconds (/proc/PID/stat, all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hold_once(pelt, args):
    """Holds --hold sockets; (CPU ms per idle second, peak RSS MB, sockets held)."""
    server, port = start_server(args.pelt, args.server_cpu)
    connect_s = args.hold / 5000 + 3
    duration = connect_s + args.idle + 2
    cmd = ["taskset", "-c", str(args.client_cpu), pelt, f"ws://127.0.0.1:{port}/", "-c",
           str(args.hold), "--connect-rate", "5000", "-t", "1", "-d", f"{duration}s", "-q",
           "--json", "-"]
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(connect_s)
        before = cpu_seconds(p.pid)
        time.sleep(args.idle)
        idle = (cpu_seconds(p.pid) - before) / args.idle * 1000
        out, err = p.communicate(timeout=duration + 30)
        if p.returncode != 0:
            sys.exit(f"pelt failed: {err[-2000:]}")
        held = json.loads(out)["websocket"]["held"]
    finally:
        stop_server(server)
    return idle, held


def hold(args):
    builds = [("pelt", args.pelt)] + ([("baseline", args.baseline)] if args.baseline else [])
    rows = {name: [] for name, _ in builds}
    for _ in range(args.runs):
        for name, path in builds:
            rss = peak_rss(path, args) if not rows[name] else rows[name][0][2]
            idle, held = hold_once(path, args)
            rows[name].append((idle, held, rss))
    print(f"{args.hold:,} sockets held, no message; CPU over {args.idle} s once all were up; "
          f"median (min-max) of {args.runs}")
    print("| build | sockets held | CPU ms per idle second | peak RSS MB |")
    print("|---|---:|---:|---:|")
    for name, path in builds:
        idle = [r[0] for r in rows[name]]
        print(f"| {name} ({path}) | {min(r[1] for r in rows[name]):,} | "
              f"{statistics.median(idle):.1f} ({min(idle):.1f}-{max(idle):.1f}) | "
              f"{rows[name][0][2]:.1f} |")


def peak_rss(pelt, args):
    """Peak RSS (MB, from wait4) of a short hold of the same sockets."""
    server, port = start_server(args.pelt, args.server_cpu)
    cmd = ["taskset", "-c", str(args.client_cpu), pelt, f"ws://127.0.0.1:{port}/", "-c",
           str(args.hold), "--connect-rate", "5000", "-t", "1", "-d",
           f"{args.hold / 5000 + 3}s", "-q"]
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
    finally:
        stop_server(server)
    return ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pelt", default=os.path.join(ROOT, "target/release/pelt"))
    ap.add_argument("--artillery", default=shutil.which("artillery"))
    ap.add_argument("--sockets", type=int, default=100)
    ap.add_argument("--messages", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    ap.add_argument("--hold", type=int, help="hold this many sockets instead (no messages)")
    ap.add_argument("--idle", type=int, default=10, help="--hold: seconds of idle CPU read")
    ap.add_argument("--baseline", help="--hold: another pelt build, run the same way")
    args = ap.parse_args()
    if args.hold:
        return hold(args)
    tools = ["pelt"]
    if args.artillery and os.path.exists(args.artillery):
        tools.append("artillery")
    else:
        print("Artillery sits out: give --artillery (npm install artillery)", file=sys.stderr)
    rows = {t: [] for t in tools}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.runs):
            for t in tools:
                rows[t].append(run_once(t, args, work))
    print(f"{args.sockets} sockets, {args.messages:,} round trips, one at a time per socket; "
          f"server on CPU {args.server_cpu}, client on CPU {args.client_cpu}; median (min-max) "
          f"of {args.runs}")
    print("| tool | messages echoed | messages/s | CPU us/message | vs pelt |")
    print("|---|---:|---:|---:|---:|")
    base = None
    for t in tools:
        per = [cpu / echoed * 1e6 for cpu, _, echoed in rows[t]]
        rate = [echoed / wall for _, wall, echoed in rows[t]]
        med = statistics.median(per)
        base = base or med
        echoed = statistics.median([e for _, _, e in rows[t]])
        print(f"| {t} | {echoed:,.0f} | {statistics.median(rate):,.0f} | {med:.2f} "
              f"({min(per):.2f}-{max(per):.2f}) | {med / base:.1f}x |")


if __name__ == "__main__":
    main()
