#!/usr/bin/env python3
"""One row of the loadtest 7 -> 8 story's krps table, with pelt-loadtest and pelt-autocannon.

The story measured load testers with one core against loadtest's test server, keep-alive:
`node bin/loadtest.js http://localhost:7357 --cores 1 -k` (and `--tcp`), autocannon and
wrk (loadtest 21 krps, loadtest tcp 68, autocannon 57, wrk 73 on its machine). This runs the
same command lines on this machine: the server pinned to --server-cpu (loadtest's own
`testserver.js --cores 1`, or with --server pelt `pelt serve`), each load tester pinned to
--client-cpu, alternating tools run by run, and prints krps (each tool's own count over its
own clock) as medians with min-max.

Tools: loadtest and loadtest --tcp (loadtest 8.2.1, the Node.js package's pinned dev
dependency), pelt-loadtest (the Node.js package's command: loadtest's flags on pelt's engine)
and its --tcp (which changes nothing), wrk -t1 -c10, autocannon -c10 (autocannon 9.0.0, the
Node.js package's pinned dev dependency) and pelt-autocannon (autocannon's flags on pelt's
engine). --connections sets -c for all of them: the study of server architectures in the
seeds measured with `autocannon -c 100 -d 20 URL` (`--connections 100 --seconds 20`).

Usage: bench/loadtest_cli.py [--seconds 5] [--runs 5] [--server loadtest|pelt] [--connections 10]
                             [--pelt target/release/pelt] [--tools loadtest,pelt-loadtest,...]
Needs: node, wrk, taskset, and `npm install` done in bindings/node. Traffic stays on 127.0.0.1.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peers  # noqa: E402  (free ports, waiting for a listener, medians)

NODE = os.path.join(ROOT, "bindings", "node")
LOADTEST = os.path.join(NODE, "node_modules", "loadtest", "bin")
AUTOCANNON = os.path.join(NODE, "node_modules", "autocannon", "autocannon.js")
TOOLS = ["loadtest", "loadtest-tcp", "pelt-loadtest", "pelt-loadtest-tcp", "wrk", "autocannon",
         "pelt-autocannon"]


def command(tool, url, seconds, connections):
    """The tool's command line, and how to read requests/s from what it prints."""
    loadtest_like = ["-k", "--cores", "1", "-c", str(connections), "-t", str(seconds), url]
    if tool.startswith("loadtest"):
        cmd = ["node", os.path.join(LOADTEST, "loadtest.js")] + loadtest_like
    elif tool.startswith("pelt-loadtest"):
        cmd = ["node", os.path.join(NODE, "bin", "pelt-loadtest.js")] + loadtest_like
    elif tool == "wrk":
        return ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url], r"Requests/sec:\s+([\d.]+)"
    else:
        bin = AUTOCANNON if tool == "autocannon" else os.path.join(NODE, "bin", "pelt-autocannon.js")
        return (["node", bin, "-c", str(connections), "-d", str(seconds), url],
                r"([\d.]+)k requests in ([\d.]+)s")
    if tool.endswith("-tcp"):
        cmd.append("--tcp")
    return cmd, r"Effective rps:\s+([\d.]+)"


def rate(pattern, text):
    m = re.search(pattern, text)
    if not m:
        return None
    if m.lastindex == 2:  # autocannon: thousands of requests in seconds
        return float(m.group(1)) * 1000 / float(m.group(2))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--server", choices=["loadtest", "pelt"], default="loadtest")
    ap.add_argument("--connections", type=int, default=10)
    ap.add_argument("--pelt", default=os.path.join(ROOT, "target", "release", "pelt"))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    args = ap.parse_args()
    tools = [t for t in args.tools.split(",") if t != "autocannon" or os.path.exists(AUTOCANNON)]
    for need in ["node", "wrk", "taskset"]:
        if not shutil.which(need):
            sys.exit(f"{need} is not on PATH")
    port = peers.free_port()
    if args.server == "loadtest":
        serve = ["node", os.path.join(LOADTEST, "testserver.js"), "--port", str(port), "--cores", "1"]
    else:
        serve = [args.pelt, "serve", "--port", str(port)]
    server = subprocess.Popen(["taskset", "-c", args.server_cpu] + serve,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_listening(port)
        url = f"http://127.0.0.1:{port}/"
        results = {t: [] for t in tools}
        for run in range(args.runs):
            for tool in tools:
                cmd, pattern = command(tool, url, args.seconds, args.connections)
                out = subprocess.run(["taskset", "-c", args.client_cpu] + cmd, capture_output=True,
                                     text=True, timeout=args.seconds * 10 + 60)
                rps = rate(pattern, out.stdout + out.stderr)
                if rps is None:
                    sys.exit(f"{tool}: no rate in its output:\n{out.stdout}{out.stderr}")
                results[tool].append(rps / 1000)
                print(f"  run {run + 1} {tool:<18} {rps / 1000:>7.1f} krps", file=sys.stderr)
        print(f"\nkeep-alive, {args.connections} connections, one-core load tester against {args.server}'s test server "
              f"(server on CPU {args.server_cpu}, load on CPU {args.client_cpu}), {args.seconds} s, "
              f"{args.runs} runs (median, min-max)\n")
        print("|package|krps|")
        print("|-------|----|")
        for tool in tools:
            print(f"|{tool}|{peers.fmt(results[tool], lambda v: f'{v:.1f}')}|")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
