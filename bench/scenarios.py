#!/usr/bin/env python3
"""A user journey in pelt and in the tools that model journeys, side by side in one run.

nginx (one worker, pinned to --server-cpu) serves the journey's endpoints with canned answers
and checks the token: POST /login answers {"token": "t0k"}; GET /items and POST /cart/ID answer
only `Authorization: Bearer t0k` (401 otherwise). The journey, in every tool: log in once per
user, then per iteration a GET /items whose JSON gives an id, and a POST /cart/ID carrying the
token. Each tool runs pinned to --client-cpu with --users users (k6's VUs, Locust's users,
pelt's connections) for --duration seconds, alternating run by run; printed: requests/s and the
generator's CPU-microseconds per request (user+sys of its process tree, from rusage), medians
with min-max. pelt's plain closed loop on `GET /` runs beside it: the issue's yardstick is the
journey's CPU per request against that.

Tools: pelt (--pelt; `pelt-h2` is the same journey over cleartext HTTP/2, each of --users / 8
connections seating 8 users, one stream each, against the same nginx on an h2c port), and those found: k6 (on PATH, ~/go/bin/k6, or --k6), Locust
(`python3 -m locust`, FastHttpUser), goose (bench/goose, the journey on goose 0.19 from
crates.io: `cargo build --release` there; closed loop only: its users start all at once and every
request counts, the start included) and, in the open loop, Artillery (--artillery). Peers are
not installed by this script: k6 from the Go module proxy (`go install go.k6.io/k6@latest`),
Locust from PyPI (`pip install locust`), Artillery from npm (`npm install artillery`, with
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 where its browser cannot be fetched). Artillery has no
users that live across arrivals: each of its arrivals logs in, lists and adds to its cart.

With --baseline OTHER_PELT, base-pelt-plain, base-pelt and base-pelt-h2 (named in --tools) run
that build beside --pelt, alternating run by run: a change's before and after in one run.

Usage: bench/scenarios.py [--pelt target/release/pelt] [--users 64] [--duration 5] [--runs 3]
                          [--tools pelt-plain,pelt,pelt-h2,k6,locust,goose] [--rate R]
--rate R: the open loop: R iterations a second arrive (pelt --rate with --max-users, k6's
constant-arrival-rate executor with as many VUs); pelt-plain sends 2R requests a second.
Needs: nginx on PATH. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peers  # noqa: E402  (free ports, waiting for a listener, rusage, medians)

# peers.py's nginx (one worker, no access log, keep-alive without a limit), its one location
# replaced by the journey's endpoints.
NGINX = peers.NGINX_CONF.replace("listen 127.0.0.1:{port} backlog=4096;",
                                 "listen 127.0.0.1:{port} backlog=4096;\n"
                                 "        listen 127.0.0.1:{h2port} backlog=4096 http2;\n"
                                 "        http2_max_concurrent_streams 128;").replace('''        location / {{ return 200 "OK"; }}''', '''        default_type application/json;
        location = / {{ return 200 "OK"; }}
        location = /login {{ return 200 '{{"token":"t0k"}}'; }}
        location = /items {{
            if ($http_authorization != "Bearer t0k") {{ return 401; }}
            return 200 '{{"items":[{{"id":7}},{{"id":8}}]}}';
        }}
        location /cart/ {{
            if ($http_authorization != "Bearer t0k") {{ return 401; }}
            return 201 '{{"ok":true}}';
        }}''')

PELT_JOURNEY = """
scenarios:
  - once:
      - post:
          url: /login
          name: login
          body: "user=u"
          capture:
            - json: /token
              as: token
    flow:
      - get:
          url: /items
          name: items
          headers: {authorization: "Bearer {{token}}"}
          capture:
            - json: /items/0/id
              as: id
      - post:
          url: "/cart/{{id}}"
          name: cart
          headers: {authorization: "Bearer {{token}}"}
          check:
            - status: 201
"""

K6_JOURNEY = """
import http from 'k6/http';
const base = __ENV.BASE;
// Open loop (--rate): iterations arrive at RATE a second, as pelt's do.
export const options = __ENV.RATE ? {
  scenarios: {
    journey: {
      executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), timeUnit: '1s',
      duration: __ENV.DURATION, preAllocatedVUs: Number(__ENV.USERS), maxVUs: Number(__ENV.USERS),
    },
  },
} : {};
let token = null;
export default function () {
  if (token === null) {
    token = http.post(base + '/login', 'user=u').json('token');
  }
  const auth = { headers: { Authorization: 'Bearer ' + token } };
  const id = http.get(base + '/items', auth).json('items.0.id');
  http.post(base + '/cart/' + id, null, auth);
}
"""

# Artillery has no users that live across arrivals: each arrival is a new virtual user that
# logs in, lists and adds to its cart once (three requests where pelt's and k6's iterations
# are two, the login once per user): compare CPU per request.
ARTILLERY_JOURNEY = """
config:
  target: "{base}"
  phases:
    - duration: {duration}
      arrivalRate: {rate}
scenarios:
  - flow:
      - post:
          url: /login
          body: "user=u"
          capture:
            - json: $.token
              as: token
      - get:
          url: /items
          headers: {{authorization: "Bearer {{{{ token }}}}"}}
          capture:
            - json: $.items[0].id
              as: id
      - post:
          url: "/cart/{{{{ id }}}}"
          headers: {{authorization: "Bearer {{{{ token }}}}"}}
"""

LOCUST_JOURNEY = """
from locust import task
from locust.contrib.fasthttp import FastHttpUser

class Shopper(FastHttpUser):
    def on_start(self):
        self.auth = {"Authorization": "Bearer " + self.client.post("/login", data="user=u").json()["token"]}

    @task
    def journey(self):
        item = self.client.get("/items", headers=self.auth).json()["items"][0]["id"]
        self.client.post(f"/cart/{item}", headers=self.auth, name="/cart/[id]")
"""



def command(tool, args, base, work):
    """The tool's command, and how to read the requests it made from what it printed."""
    pin = ["taskset", "-c", args.client_cpu]
    secs = str(args.duration)
    users = str(args.users)
    if tool.startswith("base-"):
        # --baseline: the same run on another build, to compare before and after a change.
        cmd, count = command(tool[len("base-"):], argparse.Namespace(**{**vars(args), "pelt": args.baseline}), base, work)
        return cmd, count
    if tool in ("pelt", "pelt-plain", "pelt-h2"):
        url = base + "/"
        if tool == "pelt-h2":
            url = f"http://127.0.0.1:{args.h2port}/"
        cmd = pin + [args.pelt, url, "-c", users, "-t", "1", "-d", secs + "s", "--json", "-", "-q"]
        if tool != "pelt-plain":
            cmd[4:4] = ["--scenario", os.path.join(work, "journey.yaml")]
        if tool == "pelt-h2":
            cmd[cmd.index("-c", len(pin)) + 1] = str(max(1, args.users // 8))
            cmd[4:4] = ["--http2", "--streams", "8"]
        if args.rate:
            # The journey's iterations, or the same requests a second for one URL (an
            # iteration is two requests).
            rate = args.rate if tool == "pelt" else 2 * args.rate
            cmd[4:4] = ["--rate", str(rate), "--max-users", users]
        return cmd, lambda out: json.loads(out)["requests"]["completed"]
    if tool == "k6":
        shape = ["-e", f"RATE={args.rate}", "-e", f"DURATION={secs}s", "-e", f"USERS={users}"] \
            if args.rate else ["--vus", users, "--duration", secs + "s"]
        cmd = pin + [args.k6, "run", "-q"] + shape + ["-e", f"BASE={base}",
                     "--summary-export", os.path.join(work, "k6.json"), os.path.join(work, "journey.js")]
        return cmd, lambda _: json.load(open(os.path.join(work, "k6.json")))["metrics"]["http_reqs"]["count"]
    if tool == "locust":
        prefix = os.path.join(work, "locust")
        cmd = pin + [sys.executable, "-m", "locust", "-f", os.path.join(work, "locustfile.py"), "--headless",
                     "-u", users, "-r", users, "-t", secs + "s", "--host", base, "--only-summary",
                     "--csv", prefix]

        def locust_count(_):
            with open(prefix + "_stats.csv") as f:
                rows = [line.split(",") for line in f.read().splitlines()]
            total = [r for r in rows if len(r) > 3 and r[1].strip('"') == "Aggregated"][0]
            return int(total[2])
        return cmd, locust_count
    if tool == "goose":
        report = os.path.join(work, "goose.json")
        cmd = pin + [args.goose, "--host", base, "-u", users, "-r", "100000", "-t", secs + "s", "-q",
                     "--no-reset-metrics", "--report-file", report]

        def goose_count(_):
            with open(report) as f:
                requests = json.load(f)["raw_metrics"]["requests"]
            return sum(r["raw_data"]["counter"] for r in requests.values())
        return cmd, goose_count
    if tool == "artillery":
        script = os.path.join(work, "artillery.yml")
        with open(script, "w") as f:
            f.write(ARTILLERY_JOURNEY.format(base=base, duration=args.duration, rate=args.rate))
        report = os.path.join(work, "artillery.json")
        cmd = pin + [args.artillery, "run", "--quiet", "--output", report, script]

        def artillery_count(_):
            with open(report) as f:
                return json.load(f)["aggregate"]["counters"]["http.responses"]
        return cmd, artillery_count
    raise SystemExit(f"unknown tool {tool}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pelt", default=os.path.join(ROOT, "target", "release", "pelt"))
    ap.add_argument("--baseline", default=None,
                    help="another pelt build, run as base-pelt-plain, base-pelt and base-pelt-h2 "
                         "(name them in --tools) beside --pelt, alternating run by run")
    ap.add_argument("--k6", default=shutil.which("k6") or os.path.expanduser("~/go/bin/k6"))
    ap.add_argument("--goose", default=os.path.join(HERE, "goose", "target", "release", "goose-journey"))
    ap.add_argument("--artillery", default=shutil.which("artillery"),
                    help="Artillery's command (npm install artillery; open loop only)")
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", default="pelt-plain,pelt,k6,locust,goose")
    ap.add_argument("--rate", type=int, default=0,
                    help="open loop: iterations a second (pelt --rate, k6 constant-arrival-rate); "
                         "Locust, which has no arrival rate, is left out")
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    args = ap.parse_args()
    found = {
        "pelt-plain": True,
        "pelt": True,
        "pelt-h2": True,
        "base-pelt-plain": bool(args.baseline),
        "base-pelt": bool(args.baseline),
        "base-pelt-h2": bool(args.baseline),
        "k6": bool(args.k6) and os.path.exists(args.k6),
        "locust": subprocess.run([sys.executable, "-c", "import locust"], capture_output=True).returncode == 0,
        "goose": not args.rate and os.path.exists(args.goose),
        "artillery": bool(args.rate) and bool(args.artillery) and os.path.exists(args.artillery),
    }
    if args.rate:
        found["locust"] = False
    tools = [t for t in args.tools.split(",") if found.get(t)]
    skipped = [t for t in args.tools.split(",") if not found.get(t)]
    if skipped:
        print(f"not found, left out: {', '.join(skipped)}", file=sys.stderr)
    work = tempfile.mkdtemp(prefix="pelt-journey-")
    for name, text in [("journey.yaml", PELT_JOURNEY), ("journey.js", K6_JOURNEY), ("locustfile.py", LOCUST_JOURNEY)]:
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    port = peers.free_port()
    args.h2port = peers.free_port()
    base = f"http://127.0.0.1:{port}"
    with open(os.path.join(work, "nginx.conf"), "w") as f:
        f.write(NGINX.format(dir=work, port=port, h2port=args.h2port))
    nginx = subprocess.Popen(["taskset", "-c", args.server_cpu, "nginx", "-p", work, "-c",
                              os.path.join(work, "nginx.conf")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_listening(port)
        results = {t: ([], []) for t in tools}
        for run in range(args.runs):
            for tool in tools:
                cmd, count = command(tool, args, base, work)
                out, cpu, _ = peers.measured(cmd)
                n = count(out)
                rps, us = n / args.duration, cpu * 1e6 / max(n, 1)
                results[tool][0].append(rps)
                results[tool][1].append(us)
                print(f"  run {run + 1} {tool:<11} {rps:>9.0f} req/s {us:>8.2f} us/req", file=sys.stderr)
        load = f"{args.rate} iterations/s arriving (open loop), up to {args.users} users" \
            if args.rate else f"{args.users} users"
        print(f"\nthe journey (login once, then GET /items + POST /cart/ID with the token), "
              f"{load}, {args.duration} s, nginx on CPU {args.server_cpu}, the generator "
              f"on CPU {args.client_cpu}, {args.runs} runs (median, min-max)\n")
        print("| tool | requests/s | CPU-us per request |")
        print("|---|---|---|")
        for tool in tools:
            rps, us = results[tool]
            print(f"| {tool} | {peers.fmt(rps, lambda v: f'{v:,.0f}')} | {peers.fmt(us, lambda v: f'{v:.2f}')} |")
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
