#!/usr/bin/env python3
"""LLM serving: pelt beside AIPerf, GuideLLM and `vllm bench serve` against the same stub.

The stub is `pelt serve --sse-body openai` pinned to CPU 0: a first token after `--sse-first`,
then chunks of 2 tokens every 15 ms +- 5 ms, `max_tokens` tokens, `usage` at the end, and its
own log of every stream (`--sse-log`). Each client, pinned to CPU 1, sends the same dataset (JSON
lines with `text`, AIPerf's single-turn field, `output_length` for AIPerf and pelt and
`output_tokens_count` for GuideLLM: 80-120 words, 32 tokens out) as chat completions in an open
loop at `--rate` requests/s with constant spacing. The peers count tokens with a word-level
tokenizer this script builds (the stub's tokenizer is a word a token, and the Hugging Face hub is
not needed), and AIPerf is told to use the server's `usage` counts as pelt does.

Figures, side by side: TTFT and TPOT (time per output token after the first, vLLM's and AIPerf's
ITL) at p50/p90/p99, the gap between chunks (pelt's gap; AIPerf's inter-chunk latency),
requests and output tokens per second, and each client's CPU per request and per output token:
the whole process tree's CPU (its cgroup's cpuacct where this machine lets one be made, else the
rusage of the reaped tree), as the difference between a run of `2 x --duration` and one of
`--duration`, over the requests asked for, so that start-up (Python's imports, AIPerf's services)
is not counted.

Then each `--overload` rate (requests/s) with every client, the same way: where a Python event
loop falls behind, the stub's own log (when each request arrived, how long to its first token)
shows whose figures moved: the client's TTFT against the server's, and the rate that arrived.

Usage: bench/llm.py [--pelt target/release/pelt] [--aiperf PATH] [--guidellm PATH] [--vllm PATH]
                    [--rate 20] [--duration 10] [--overload 300,1000]
                    [--tools pelt,aiperf,guidellm,vllm]
Needs: taskset; aiperf (pip install aiperf==0.13.0), guidellm (pip install guidellm==0.8.1) and
vllm (pip install vllm==0.33.0 pandas datasets: its benchmark client runs without a GPU), each
in its own virtual environment; the ones not given or found on PATH are left out. Traffic
stays on 127.0.0.1.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (free_port, wait_listening)

WORDS = "the a of and to in is it that was".split()

# A word-level tokenizer folder both peers load (the stub's tokenizer is a word a token).
TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "llm",
                         "word_tokenizer.py")


def dataset(path, lines, seed=1):
    """Writes the prompts to `path` (AIPerf's, GuideLLM's and pelt's fields) and to
    `path`-prompt.jsonl with vLLM's custom dataset's `prompt` field, the same prompts."""
    r = random.Random(seed)
    with open(path, "w") as f, open(path.replace(".jsonl", "-prompt.jsonl"), "w") as g:
        for _ in range(lines):
            text = " ".join(r.choice(WORDS) for _ in range(r.randint(80, 120)))
            f.write(json.dumps({"text": text, "output_length": 32, "output_tokens_count": 32}) + "\n")
            g.write(json.dumps({"prompt": text}) + "\n")


class Cpu:
    """The CPU seconds of a command's whole process tree."""

    def __init__(self):
        root = "/sys/fs/cgroup/cpuacct"
        self.group = None
        if os.access(root, os.W_OK):
            self.group = os.path.join(root, f"pelt-llm-bench-{os.getpid()}")
            os.makedirs(self.group, exist_ok=True)

    def run(self, cmd, cwd=None):
        """Runs cmd to its end; returns (stdout, cpu seconds)."""
        if self.group:
            with open(os.path.join(self.group, "cpuacct.usage"), "w") as f:
                f.write("0")
            # The shell joins the group, then becomes the command: every descendant is counted.
            cmd = ["sh", "-c", f'echo $$ > {self.group}/cgroup.procs && exec "$@"', "sh"] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             cwd=cwd)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{out[-3000:]}")
        if self.group:
            with open(os.path.join(self.group, "cpuacct.usage")) as f:
                return out, int(f.read()) / 1e9
        return out, ru.ru_utime + ru.ru_stime

    def close(self):
        if self.group:
            os.rmdir(self.group)


class Pelt:
    name = "pelt"

    def __init__(self, binary):
        self.binary = binary

    def command(self, url, data, tok, rate, n, out):
        return [self.binary, url, "--prompts", data, "--rate", str(rate), "-n", str(n),
                "--json", os.path.join(out, "pelt.json"), "-q"]

    def figures(self, out):
        with open(os.path.join(out, "pelt.json")) as f:
            r = json.load(f)
        s = r["event_streams"]
        ms = lambda h: {p: h[f"p{p}"] / 1000.0 for p in (50, 90, 99)}  # noqa: E731
        return {"requests": r["requests"]["completed"], "errors": r["requests"]["errors"],
                "ttft": ms(s["ttft_us"]), "tpot": ms(s["tokens"]["tpot_us"]),
                "gap": ms(s["gap_us"]), "tokens": s["tokens"]["output"], "rps": r["rps"],
                "tok_s": s["tokens"]["output_per_s"]}


class Aiperf:
    name = "AIPerf"

    def __init__(self, binary):
        self.binary = binary

    def command(self, url, data, tok, rate, n, out):
        return [self.binary, "profile", "--model", "mock-model", "--tokenizer", tok, "--url",
                url.rsplit("/v1/", 1)[0], "--endpoint-type", "chat", "--streaming",
                "--request-rate", str(rate), "--arrival-pattern", "constant", "--request-count",
                str(n), "--input-file", data, "--custom-dataset-type", "single_turn",
                "--use-server-token-count", "--artifact-dir", out, "--ui-type", "none"]

    def figures(self, out):
        with open(os.path.join(out, "profile_export_aiperf.json")) as f:
            r = json.load(f)
        ms = lambda k: {p: r[k][f"p{p}"] for p in (50, 90, 99)}  # noqa: E731
        errors = sum(e.get("count", 0) for e in (r.get("error_summary") or []))
        return {"requests": int(r["request_count"]["avg"]), "errors": errors,
                "ttft": ms("time_to_first_token"), "tpot": ms("inter_token_latency"),
                "gap": ms("inter_chunk_latency"), "tokens": int(r["total_osl"]["avg"]),
                "rps": r["request_throughput"]["avg"],
                "tok_s": r["output_token_throughput"]["avg"]}


class Guidellm:
    name = "GuideLLM"

    def __init__(self, binary):
        self.binary = binary

    def command(self, url, data, tok, rate, n, out):
        return [self.binary, "run", "--backend",
                f"kind=openai_http,target={url.rsplit('/v1/', 1)[0]},model=mock-model",
                "--profile", f"kind=constant,rate={rate}", "--constraint",
                f"kind=max_requests,count={n}", "--tokenizer", f"kind=hf_auto,model={tok}",
                "--data", f"kind=json_file,path={data}", "--output",
                f"kind=json,path={os.path.join(out, 'guidellm.json')}", "--disable-console"]

    def figures(self, out):
        with open(os.path.join(out, "guidellm.json")) as f:
            m = json.load(f)["benchmarks"][0]["metrics"]
        ms = lambda k: {p: m[k]["successful"]["percentiles"][f"p{p}"]  # noqa: E731
                        for p in (50, 90, 99)}
        t = m["request_totals"]
        # GuideLLM's ITL is the time per output token after the first (vLLM's TPOT); its
        # TPOT divides the whole request, first token included. It keeps no chunk gaps.
        return {"requests": t["successful"], "errors": t["errored"] + t["incomplete"],
                "ttft": ms("time_to_first_token_ms"), "tpot": ms("inter_token_latency_ms"),
                "gap": None, "tokens": int(m["output_token_count"]["successful"]["total_sum"]),
                "rps": m["requests_per_second"]["successful"]["mean"],
                "tok_s": m["output_tokens_per_second"]["successful"]["mean"]}


class Vllm:
    name = "vLLM"

    def __init__(self, binary):
        self.binary = binary

    def command(self, url, data, tok, rate, n, out):
        # vLLM has no constant arrivals: a gamma process of shape 1000 is within 3 % of it.
        # It sends one request before the run (its "initial single prompt test run").
        return ["env", "HF_HUB_OFFLINE=1", self.binary, "bench", "serve", "--backend",
                "openai-chat", "--base-url", url.rsplit("/v1/", 1)[0], "--endpoint",
                "/v1/chat/completions", "--model", "mock-model", "--tokenizer", tok,
                "--dataset-name", "custom", "--dataset-path",
                data.replace(".jsonl", "-prompt.jsonl"), "--custom-output-len", "32",
                "--skip-chat-template", "--num-prompts", str(n), "--request-rate", str(rate),
                "--burstiness", "1000", "--percentile-metrics", "ttft,tpot,itl,e2el",
                "--metric-percentiles", "50,90,99", "--disable-tqdm", "--save-result",
                "--result-dir", out, "--result-filename", "vllm.json"]

    def figures(self, out):
        with open(os.path.join(out, "vllm.json")) as f:
            r = json.load(f)
        ms = lambda k: {p: r[f"p{p}_{k}_ms"] for p in (50, 90, 99)}  # noqa: E731
        # vLLM's ITL is each gap between chunks.
        return {"requests": r["completed"], "errors": r["failed"], "ttft": ms("ttft"),
                "tpot": ms("tpot"), "gap": ms("itl"), "tokens": r["total_output_tokens"],
                "rps": r["request_throughput"], "tok_s": r["output_throughput"]}


def measure(tool, cpu, url, data, tok, rate, secs, marginal=True):
    """Runs tool for secs (and, for the marginal CPU, for 2 x secs first); returns its
    figures from the longer run with its CPU per request and per output token."""
    runs = []
    for k in ((2, 1) if marginal else (1,)):
        out = tempfile.mkdtemp(prefix="pelt-llm-")
        n = int(rate * secs * k)
        cmd = ["taskset", "-c", "1"] + tool.command(url, data, tok, rate, n, out)
        began = time.monotonic()
        _, used = cpu.run(cmd, cwd=out)
        wall = time.monotonic() - began
        f = tool.figures(out)
        shutil.rmtree(out, ignore_errors=True)
        f["cpu"], f["wall"] = used, wall
        runs.append(f)
    f = runs[0]
    if marginal:
        # Over the requests asked for (each of 32 tokens): a client that falls behind and
        # leaves some incomplete is not charged more for it.
        extra = runs[0]["cpu"] - runs[1]["cpu"]
        f["us_req"] = extra * 1e6 / (int(rate * secs * 2) - int(rate * secs))
        f["us_tok"] = f["us_req"] / 32
        # A client that sent much less than asked ran longer than the runs' lengths at its own
        # pace: its CPU over the requests asked for means nothing.
        if runs[0]["wall"] - runs[1]["wall"] > 1.5 * secs or extra <= 0:
            f["us_req"] = f["us_tok"] = None
    return f


def cpu_cells(f):
    if f["us_req"] is None:
        return f"{'-':>10} {'-':>9}"
    return f"{f['us_req']:>10.0f} {f['us_tok']:>9.1f}"


def server_side(log, since, streams):
    """The stub's account of the `streams` streams logged after line `since` (measure's longer
    run, which goes first): arrivals per second and its TTFT percentiles (arrival to first
    token)."""
    with open(log) as f:
        rows = [json.loads(line) for line in f.readlines()[since:since + streams]]
    rows = [r for r in rows if r.get("ttft_us") is not None]
    # The rate over the middle 90 % of arrivals: a client's probe of the server before its run
    # (GuideLLM validates the backend, AIPerf checks the endpoint) is a stream here too.
    arrived = sorted(r["arrived_us"] for r in rows)
    lo, hi = len(arrived) // 20, len(arrived) - 1 - len(arrived) // 20
    span = (arrived[hi] - arrived[lo]) / 1e6 if hi > lo else 0
    ttft = sorted(r["ttft_us"] / 1000.0 for r in rows)
    q = lambda p: ttft[min(len(ttft) - 1, int(p / 100 * len(ttft)))]  # noqa: E731
    return {"streams": len(rows), "rate": (hi - lo) / span if span else 0,
            "ttft": {p: q(p) for p in (50, 90, 99)}}


def lines(log):
    with open(log) as f:
        return sum(1 for _ in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pelt", default="target/release/pelt")
    ap.add_argument("--aiperf", default=shutil.which("aiperf"))
    ap.add_argument("--guidellm", default=shutil.which("guidellm"))
    ap.add_argument("--vllm", default=shutil.which("vllm"))
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--overload", default="300,1000",
                    type=lambda v: [float(r) for r in v.split(",") if r],
                    help="rates (comma-separated) to find where a client falls behind")
    ap.add_argument("--tools", default="pelt,aiperf,guidellm,vllm",
                    help="which of pelt, aiperf, guidellm, vllm run (those installed)")
    args = ap.parse_args()
    chosen = args.tools.split(",")
    tools = [Pelt(os.path.abspath(args.pelt))]
    if args.aiperf and "aiperf" in chosen:
        tools.append(Aiperf(os.path.abspath(args.aiperf)))
    if args.guidellm and "guidellm" in chosen:
        tools.append(Guidellm(os.path.abspath(args.guidellm)))
    if args.vllm and "vllm" in chosen:
        tools.append(Vllm(os.path.abspath(args.vllm)))
    peer = next((t.binary for t in tools[1:]), None)
    work = tempfile.mkdtemp(prefix="pelt-llm-bench-")
    data = os.path.join(work, "prompts.jsonl")
    dataset(data, 400)
    tok = os.path.join(work, "tokenizer")
    if peer:
        python = os.path.join(os.path.dirname(peer), "python")
        subprocess.run([python, TOKENIZER, tok] + WORDS, check=True, stderr=subprocess.DEVNULL)
    port = peers.free_port()
    log = os.path.join(work, "stub.jsonl")
    stub = subprocess.Popen(["taskset", "-c", "0", tools[0].binary, "serve", "--port", str(port),
                             "--sse", "1000", "--sse-body", "openai", "--sse-tokens", "2",
                             "--sse-first", "20ms", "--sse-interval", "15ms", "--sse-jitter",
                             "5ms", "--sse-log", log], stdout=subprocess.DEVNULL)
    cpu = Cpu()
    try:
        peers.wait_listening(port)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        print(f"stub: pelt serve --sse-body openai, first token 20 ms, 2 tokens a chunk every "
              f"15 +- 5 ms, 32 tokens; {args.rate:g} requests/s, constant spacing, "
              f"{args.duration:g} s and {2 * args.duration:g} s runs; CPU "
              f"{'of the cgroup' if cpu.group else 'of the reaped process tree'}")
        results = []
        for t in tools:
            results.append((t, measure(t, cpu, url, data, tok, args.rate, args.duration)))
        h = (f"{'':10} {'requests':>8} {'tokens':>7} {'req/s':>6} {'tok/s':>7}  "
             f"{'TTFT p50/p90/p99 ms':>21}  {'TPOT p50/p90/p99 ms':>19}  "
             f"{'gap p50/p99 ms':>14}  {'CPU us/req':>10} {'us/token':>9}")
        print(h)
        tri = lambda d: "/".join(f"{d[p]:.2f}" for p in (50, 90, 99))  # noqa: E731
        for t, f in results:
            gap = f"{f['gap'][50]:.2f}/{f['gap'][99]:.2f}" if f["gap"] else "-"
            print(f"{t.name:10} {f['requests']:>8} {f['tokens']:>7} {f['rps']:>6.1f} "
                  f"{f['tok_s']:>7.1f}  {tri(f['ttft']):>21}  {tri(f['tpot']):>19}  {gap:>14}  "
                  f"{cpu_cells(f)}")
        base = results[0][1]
        for t, f in results[1:]:
            if f["us_req"] is not None and base["us_req"] is not None:
                print(f"{t.name}: {f['us_req'] / base['us_req']:.1f}x pelt's CPU per request")
        for rate in args.overload:
            print(f"\nat {rate:g} requests/s: the client's figures beside the stub's own log of "
                  f"the same run (when each request arrived, its first token)")
            print(f"{'':10} {'client TTFT p50/p99 ms':>22} {'req/s sent':>10}  "
                  f"{'server TTFT p50/p99 ms':>22} {'req/s arrived':>13}  {'CPU us/req':>10} "
                  f"{'us/token':>9}")
            for t in tools:
                since = lines(log)
                f = measure(t, cpu, url, data, tok, rate, args.duration)
                s = server_side(log, since, f["requests"])
                print(f"{t.name:10} {f['ttft'][50]:>10.2f}/{f['ttft'][99]:<11.2f} "
                      f"{f['rps']:>10.1f}  {s['ttft'][50]:>10.2f}/{s['ttft'][99]:<11.2f} "
                      f"{s['rate']:>13.1f}  {cpu_cells(f)}")
    finally:
        stub.terminate()
        stub.wait()
        cpu.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
