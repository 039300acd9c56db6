//! Streamed responses (server-sent events) read event by event, against `pelt serve --sse`
//! (a known first-event delay and interval), against sse-starlette on uvicorn (a server pelt
//! did not write, with its own count of what it sent), and through nginx as HTTP/2.
//! Timings are asserted only as ranges a loaded machine keeps.

mod util;

use util::real::{find_server, nginx_command, PythonApp, RealServer};
use util::*;

/// The `streams` section of a result.
fn streams(v: &serde_json::Value) -> &serde_json::Value {
    v.get("event_streams")
        .unwrap_or_else(|| panic!("no event_streams section: {v}"))
}

fn ms(v: &serde_json::Value, path: &[&str]) -> f64 {
    count(v, path) as f64 / 1000.0
}

/// Checks that the per-second points add up to the run's events and streams.
fn assert_timeline_adds_up(v: &serde_json::Value) {
    let points = v["timeline"].as_array().unwrap();
    let sum = |k: &str| -> u64 {
        points
            .iter()
            .filter(|p| !p["warmup"].as_bool().unwrap())
            .filter_map(|p| p.get("event_streams"))
            .map(|s| s[k].as_u64().unwrap())
            .sum()
    };
    let s = streams(v);
    assert_eq!(sum("events"), s["events"].as_u64().unwrap(), "{v}");
    assert_eq!(sum("streams"), s["streams"].as_u64().unwrap(), "{v}");
    assert_eq!(sum("cut"), s["cut"].as_u64().unwrap(), "{v}");
}

/// `pelt serve --sse-log`'s lines, once it has `n` of them or after 5 s (a stream's line is
/// written as it ends, a moment after the client read its end).
fn server_log(log: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    let mut records = Vec::new();
    for _ in 0..100 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        records = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect();
        if records.len() >= n {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    records
}

/// `--csv`: each second's events in the stream_events column, adding up to `events`.
fn assert_csv_has_the_events(run: &[&str], events: u64) {
    let csv = std::env::temp_dir().join(format!("pelt-streams-{}.csv", std::process::id()));
    let mut args = run.to_vec();
    let path = csv.display().to_string();
    args.extend(["--csv", &path]);
    let v = run_json(&args);
    assert_eq!(count(streams(&v), &["events"]), events);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|c| *c == "stream_events").unwrap();
    assert_eq!(head.len(), 59, "{head:?}");
    let sum: u64 = lines
        .map(|l| l.split(',').nth(col).unwrap())
        .filter(|c| !c.is_empty())
        .map(|c| c.parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, events, "{text}");
    let _ = std::fs::remove_file(&csv);
}

#[test]
fn events_are_timed_at_the_pace_the_server_keeps() {
    // 20 events: the first 50 ms after the head, then one every 5 ms.
    for h2 in [false, true] {
        let mut args = vec!["--port", "0", "--sse", "20"];
        args.extend(["--sse-first", "50ms", "--sse-interval", "5ms"]);
        if h2 {
            args.push("--h2");
        }
        let (_serve, url) = ServeProcess::listening(&args);
        let mut run = vec![url.as_str(), "-c", "4", "-n", "40"];
        if h2 {
            run.extend(["--http2", "--streams", "10"]);
        }
        let v = run_json(&run);
        assert_schema(&v);
        let s = streams(&v);
        // Exact counts: every stream, every event.
        assert_eq!(count(&v, &["requests", "completed"]), 40, "{v}");
        assert_eq!(count(s, &["streams"]), 40, "{s}");
        assert_eq!(count(s, &["events"]), 800, "{s}");
        assert_eq!(count(s, &["cut"]), 0);
        assert_eq!(count(s, &["events_per_stream", "min"]), 20);
        assert_eq!(count(s, &["events_per_stream", "max"]), 20);
        // Time to first event at the configured 50 ms; gaps and time per event at 5 ms.
        let ttft = ms(s, &["ttft_us", "p50"]);
        assert!((45.0..200.0).contains(&ttft), "h2 {h2}: TTFT p50 {ttft} ms");
        let gap = ms(s, &["gap_us", "p50"]);
        assert!((2.0..40.0).contains(&gap), "h2 {h2}: gap p50 {gap} ms");
        let per = ms(s, &["time_per_event_us", "p50"]);
        assert!((4.0..40.0).contains(&per), "h2 {h2}: per event {per} ms");
        // A stream lasts its first event and 19 gaps: its latency.
        let lasted = ms(s, &["duration_us", "p50"]);
        assert!((140.0..900.0).contains(&lasted), "h2 {h2}: {lasted} ms");
        assert!(ttft < lasted);
        assert_timeline_adds_up(&v);
        if !h2 {
            assert_csv_has_the_events(&run, 800);
        }
        // Thresholds on the streams: these hold, TTFT under 1 ms does not (exit 3).
        let mut checked = run.clone();
        checked.extend(["--expect", "ttft.p50>40ms", "--expect", "gap.p99<1s"]);
        checked.extend([
            "--expect",
            "per_event.p50<100ms",
            "--expect",
            "events_per_s>10",
        ]);
        assert_eq!(thresholds_held(&run_json(&checked)), [true; 4]);
        let mut failing = run.clone();
        failing.extend(["--expect", "ttft.p50<1ms"]);
        assert_eq!(util::run(&failing).0.status.code(), Some(3));
        // The summary reads as LLM users expect.
        let (out, _) = util::run(&run);
        let text = String::from_utf8_lossy(&out.stdout);
        for want in [
            "Streams",
            "First event",
            "Gap",
            "Per event",
            "TTFT",
            "events/s",
        ] {
            assert!(text.contains(want), "{want} missing:\n{text}");
        }
    }
}

#[test]
fn a_limit_cuts_streams_and_a_marker_ends_them() {
    for h2 in [false, true] {
        let mut args = vec!["--port", "0", "--sse", "20", "--sse-interval", "2ms"];
        args.extend(["--sse-body", "openai"]);
        if h2 {
            args.push("--h2");
        }
        let (_serve, url) = ServeProcess::listening(&args);
        let with = |extra: &[&str]| {
            let mut run = vec![url.as_str(), "-c", "2", "-n", "30"];
            if h2 {
                run.extend(["--http2", "--streams", "8"]);
            }
            run.extend_from_slice(extra);
            run_json(&run)
        };
        // At 5 events pelt ends each stream: cut, never an error.
        let v = with(&["--stream-limit", "5"]);
        let s = streams(&v);
        assert_eq!(count(&v, &["requests", "completed"]), 30, "{v}");
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
        assert_eq!(
            (count(s, &["cut"]), count(s, &["events"])),
            (30, 150),
            "{s}"
        );
        if h2 {
            // Each cut resets its stream; the connections go on.
            assert_eq!(count(&v, &["connections_opened"]), 2, "{v}");
        } else {
            // Each cut closes its connection; the next request opens one.
            assert!(count(&v, &["connections_opened"]) >= 30, "{v}");
        }
        assert_timeline_adds_up(&v);
        // A time limit: 20 ms into a 40 ms stream.
        let v = with(&["--stream-limit", "20ms"]);
        let s = streams(&v);
        assert_eq!(count(s, &["cut"]), 30, "{s}");
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
        let lasted = ms(&v, &["latency_us", "max"]);
        assert!((19.0..200.0).contains(&lasted), "{lasted} ms");
        // The OpenAI marker ends each stream normally: 20 tokens, [DONE] not one of them,
        // and the server's end of the response keeps the connection.
        let v = with(&["--stream-end", "[DONE]"]);
        let s = streams(&v);
        assert_eq!(count(s, &["ended_by_marker"]), 30, "{s}");
        assert_eq!((count(s, &["cut"]), count(s, &["events"])), (0, 600), "{s}");
        assert_eq!(count(&v, &["connections_opened"]), 2, "{v}");
        // Without it [DONE] is an event like the others.
        let v = with(&[]);
        assert_eq!(count(streams(&v), &["events"]), 630, "{v}");
    }
}

/// `pelt serve --sse-body openai` streams what each request asks for: `max_tokens` tokens,
/// `--sse-tokens` a chunk, a usage chunk when asked, the first token later by `--sse-prefill`
/// for each word of the prompt.
#[test]
fn the_openai_stub_streams_what_each_request_asks_for() {
    let mut args = vec!["--port", "0", "--sse", "20", "--sse-interval", "1ms"];
    args.extend(["--sse-body", "openai", "--sse-tokens", "3"]);
    args.extend(["--sse-first", "10ms", "--sse-prefill", "10ms"]);
    let (_serve, url) = ServeProcess::listening(&args);
    let url = format!("{url}/v1/chat/completions");
    let body = r#"{"model":"m","messages":[{"role":"user","content":"one two three four five"}],
        "max_tokens":10,"stream":true,"stream_options":{"include_usage":true}}"#;
    let mut run = vec![
        url.as_str(),
        "-c",
        "2",
        "-n",
        "20",
        "-m",
        "POST",
        "-b",
        body,
    ];
    run.extend([
        "-H",
        "Content-Type: application/json",
        "--stream-end",
        "[DONE]",
    ]);
    let v = run_json(&run);
    let s = streams(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 20, "{v}");
    // ceil(10 / 3) chunks of tokens and the usage chunk a stream; [DONE] ends each.
    assert_eq!(count(s, &["events"]), 20 * 5, "{s}");
    assert_eq!(count(s, &["ended_by_marker"]), 20, "{s}");
    // The first token after 10 ms and 10 ms for each of the prompt's 5 words.
    let ttft = ms(s, &["ttft_us", "p50"]);
    assert!((55.0..500.0).contains(&ttft), "TTFT p50 {ttft} ms");
    // pelt's tokens are the server's usage: 10 out and 5 in a stream, exactly.
    let t = &s["tokens"];
    assert_eq!(
        (
            count(t, &["streams"]),
            count(t, &["output"]),
            count(t, &["input"])
        ),
        (20, 200, 100),
        "{t}"
    );
    // Four chunks 1 ms apart (and the usage chunk) after the first, over 9 tokens.
    let tpot = ms(t, &["tpot_us", "p50"]);
    assert!(tpot > 0.0 && tpot < 100.0, "TPOT p50 {tpot} ms");
    assert!(t["output_per_s"].as_f64().unwrap() > 0.0, "{t}");
    assert_schema(&v);
    let mut checked = run.clone();
    checked.extend([
        "--expect",
        "tpot.p99<1s",
        "--expect",
        "output_tokens_per_s>1",
    ]);
    checked.extend(["--expect", "itl.p99<1s"]);
    assert_eq!(thresholds_held(&run_json(&checked)), [true; 3]);
    let (out, _) = util::run(&run);
    let text = String::from_utf8_lossy(&out.stdout);
    let tokens = text.lines().find(|l| l.trim_start().starts_with("Tokens"));
    assert!(
        tokens.is_some_and(|l| l.contains(" 200 out") && l.contains(" 100 in")),
        "{text}"
    );
    assert!(text.contains("Per token"), "{text}");
    // A request that says nothing: --sse chunks, no usage, no tokens (and tpot cannot hold).
    let plain = [
        url.as_str(),
        "-c",
        "2",
        "-n",
        "10",
        "--stream-end",
        "[DONE]",
    ];
    let v = run_json(&plain);
    assert_eq!(count(streams(&v), &["events"]), 10 * 20, "{v}");
    assert!(streams(&v).get("tokens").is_none(), "{v}");
    let mut checked = plain.to_vec();
    checked.extend(["--expect", "tpot.p99<1s"]);
    assert_eq!(util::run(&checked).0.status.code(), Some(3));
}

/// Goodput (`--goodput`): pelt's count of the requests that met every target is the count the
/// server's own log (`pelt serve --sse-log`) says met them. The prompts' lengths and the tokens
/// asked for differ request by request, so some miss the first-token target (a long prompt's
/// prefill), some the whole request's (many tokens), and every 8th is a 500; the targets sit
/// far from every request's own times, so the server's times and pelt's (a little later, from
/// the due time) fall on the same side.
#[test]
fn goodput_is_the_share_the_servers_own_log_says_met_the_targets() {
    let dir = std::env::temp_dir().join(format!("pelt-goodput-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("streams.jsonl");
    let asks = dir.join("asks.txt");
    // TTFT: 5 ms + 20 ms a word; e2e: that and 10 ms a token after the first.
    let lines = [
        r#""messages":[{"role":"user","content":"short"}],"max_tokens":3"#,
        r#""messages":[{"role":"user","content":"a b c d e f g h i j"}],"max_tokens":3"#,
        r#""messages":[{"role":"user","content":"short"}],"max_tokens":40"#,
        r#""prompt":"two words","max_tokens":5"#,
    ];
    std::fs::write(&asks, lines.join("\n") + "\n").unwrap();
    let log_path = log.display().to_string();
    let mut args = vec!["--port", "0", "--sse", "4", "--sse-body", "openai"];
    args.extend([
        "--sse-first",
        "5ms",
        "--sse-prefill",
        "20ms",
        "--sse-interval",
        "10ms",
    ]);
    args.extend(["--error-rate", "0.125", "--sse-log", &log_path]);
    let (_serve, url) = ServeProcess::listening(&args);
    let url = format!("{url}/v1/chat/completions");
    let body = format!(
        r#"{{ {{{{line:{}}}}}, "stream":true, "stream_options":{{"include_usage":true}} }}"#,
        asks.display()
    );
    let run = [
        url.as_str(),
        "-m",
        "POST",
        "-H",
        "Content-Type: application/json",
        "--body",
        &body,
        "--stream-end",
        "[DONE]",
        "--rate",
        "40",
        "-n",
        "48",
        "--goodput",
        "ttft<100ms,e2e<250ms",
        "--goodput",
        "tpot<1s",
    ];
    let v = run_json(&run);
    assert_eq!(count(&v, &["requests", "completed"]), 48, "{v}");
    // The server's log: a line a stream, written as each ends.
    let records = server_log(&log, 48);
    assert_eq!(records.len(), 48, "{records:?}");
    let met_by_server = records
        .iter()
        .filter(|r| {
            r["status"] == 200
                && !r["cancelled"].as_bool().unwrap()
                && r["ttft_us"].as_u64().unwrap() < 100_000
                && r["e2e_us"].as_u64().unwrap() < 250_000
        })
        .count() as u64;
    // Each kind of request is there, and each target parts them.
    assert!((6..48).contains(&met_by_server), "{records:?}");
    let g = &streams(&v)["goodput"];
    assert_eq!(count(g, &["met"]), met_by_server, "{g}");
    assert_eq!(count(g, &["requests"]), 48, "{g}");
    let share = g["share"].as_f64().unwrap();
    assert!(
        (share - met_by_server as f64 * 100.0 / 48.0).abs() < 1e-9,
        "{g}"
    );
    assert_eq!(
        g["targets"],
        serde_json::json!(["ttft<100ms", "e2e<250ms", "tpot<1s"]),
        "{g}"
    );
    // Each second's streams that met them add up to the run's.
    let per_second: u64 = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("event_streams"))
        .map(|s| s["met"].as_u64().unwrap())
        .sum();
    assert_eq!(per_second, met_by_server, "{v}");
    assert_schema(&v);
    // --csv: each second's goodput and output tokens add up to the run's.
    let csv = dir.join("seconds.csv").display().to_string();
    let mut with_csv = run.to_vec();
    with_csv.extend(["--csv", &csv]);
    let v = run_json(&with_csv);
    let text = std::fs::read_to_string(&csv).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let sum = |name: &str| -> u64 {
        let col = head.iter().position(|c| *c == name).unwrap();
        text.lines()
            .skip(1)
            .filter_map(|l| l.split(',').nth(col).filter(|c| !c.is_empty()))
            .map(|c| c.parse::<u64>().unwrap())
            .sum()
    };
    let g = &streams(&v)["goodput"];
    assert_eq!(sum("goodput"), count(g, &["met"]), "{text}");
    let tokens = &streams(&v)["tokens"];
    assert_eq!(
        sum("stream_output_tokens"),
        count(tokens, &["output"]),
        "{text}"
    );
    assert_eq!(
        sum("stream_input_tokens"),
        count(tokens, &["input"]),
        "{text}"
    );
    // Thresholds on it: the share it has holds, one above it does not.
    let mut checked = run.to_vec();
    let at_least = format!("goodput>={share}%");
    checked.extend(["--expect", &at_least, "--expect", "goodput_per_s>0"]);
    checked.extend(["--expect", "goodput>99%"]);
    let mut as_json = checked.clone();
    as_json.extend(["--json", "-", "-q"]);
    let (out, _) = util::run(&as_json);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(thresholds_held(&v), [true, true, false], "{v}");
    let (out, _) = util::run(&checked);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.trim_start().starts_with("Goodput"));
    assert!(
        line.is_some_and(|l| l.contains("of 48 requests") && l.contains("ttft<100ms")),
        "{text}"
    );
    // Bad input: before any request, one line, exit 2.
    let plain = [url.as_str(), "-n", "1", "--goodput", "ttft<1s"];
    let (out, _) = util::run(&plain);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--goodput judges streamed responses"), "{err}");
    for bad in ["ttft>1s", "ttft<5", "speed<1s", "e2e<0ms"] {
        let run = [url.as_str(), "-n", "1", "--stream", "--goodput", bad];
        let (out, _) = util::run(&run);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that stalls 2 s mid-run (`pelt serve --stall 2s --stall-at 2s`: every request
/// that arrives in the pause waits for its end): in the open loop, TTFT is timed from each
/// request's due time, so the requests due in the pause show it in the p99 (up to the whole
/// 2 s), and the goodput drops by the requests due in the pause, all but the last `ttft` target's
/// worth of it, exactly the streams the server's own log says took longer than the target. The
/// requests due in the pause each get a connection of their own (an LLM benchmark's default).
#[test]
fn a_two_second_stall_shows_in_ttft_p99_and_in_the_goodput() {
    let dir = std::env::temp_dir().join(format!("pelt-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("streams.jsonl");
    let log_path = log.display().to_string();
    let args = [
        "--port",
        "0",
        "--sse",
        "4",
        "--sse-body",
        "openai",
        "--sse-first",
        "10ms",
        "--sse-interval",
        "10ms",
        "--stall",
        "2s",
        "--stall-at",
        "2s",
        "--sse-log",
        &log_path,
    ];
    let (_serve, url) = ServeProcess::listening(&args);
    let url = format!("{url}/v1/chat/completions");
    let html = dir.join("report.html");
    let html_path = html.display().to_string();
    let run = [
        url.as_str(),
        "--input-tokens",
        "8",
        "--output-tokens",
        "4",
        "--rate",
        "20",
        "-n",
        "120",
        "--goodput",
        "ttft<300ms",
        "-c",
        "4",
        "--html",
        &html_path,
    ];
    let v = run_json(&run);
    assert_eq!(count(&v, &["requests", "completed"]), 120, "{v}");
    assert_eq!(v["latency_from"], "due", "{v}");
    // Each stream holds a connection: an LLM benchmark's open loop opens what the requests
    // due in the pause need (up to 1,000), not -c's 4, as vLLM's and AIPerf's clients do.
    assert_eq!(count(&v, &["max_connections"]), 1000, "{v}");
    assert!(count(&v, &["connections_opened"]) >= 30, "{v}");
    let records = server_log(&log, 120);
    assert_eq!(records.len(), 120, "{records:?}");
    let us = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap();
    // The server's account: which requests arrived in the pause, which waited past the target.
    let in_pause = records
        .iter()
        .filter(|r| (2_000_000..4_000_000).contains(&us(r, "arrived_us")))
        .count() as u64;
    let slow_by_server = records
        .iter()
        .filter(|r| us(r, "ttft_us") >= 300_000)
        .count() as u64;
    // 20 requests/s: about 40 due in the pause, all but the last 0.3 s of them wait too long.
    assert!((36..=44).contains(&in_pause), "{in_pause}: {records:?}");
    assert!(
        slow_by_server <= in_pause && slow_by_server + 8 >= in_pause,
        "{slow_by_server} of {in_pause}: {records:?}"
    );
    let g = &streams(&v)["goodput"];
    let missed = count(g, &["requests"]) - count(g, &["met"]);
    // The client's TTFT is the server's and the way back: one stream within a hair of the
    // target can fall either side.
    assert!(
        missed == slow_by_server || missed == slow_by_server + 1,
        "pelt {missed} missed, the server's log {slow_by_server}: {g}"
    );
    // TTFT from the due time: the p99 holds the pause (the first request due in it waits
    // nearly all of it), the median the run's ordinary first token.
    let ttft = &streams(&v)["ttft_us"];
    assert!(count(ttft, &["p99"]) >= 1_500_000, "{ttft}");
    assert!(count(ttft, &["max"]) >= 1_800_000, "{ttft}");
    assert!(count(ttft, &["p50"]) < 1_000_000, "{ttft}");
    // The HTML report draws it: each second's TTFT p99 rises to the pause, and the streams
    // that met the target fall below those that ended.
    if let Some(page) = browser_check(&html, &dir.join("report.png")) {
        assert_eq!(page["problems"], serde_json::json!([]), "{page}");
        let chart = |id: &str| {
            page["charts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id)
                .unwrap_or_else(|| panic!("no {id}: {page}"))
                .clone()
        };
        let labels = |c: &serde_json::Value| -> Vec<String> {
            let sets = c["datasets"].as_array().unwrap();
            sets.iter()
                .map(|d| d["label"].as_str().unwrap().to_string())
                .collect()
        };
        let t = chart("chart-ttft");
        assert_eq!(labels(&t), ["TTFT p50", "TTFT p99", "TPOT p50"], "{t}");
        assert!(t["datasets"][1]["max"].as_f64().unwrap() >= 1500.0, "{t}");
        assert!(t["painted"].as_u64().unwrap() > 2000, "not drawn: {t}");
        let st = chart("chart-streams");
        let names = ["streams ended/s", "met the targets/s", "output tokens/s"];
        assert_eq!(labels(&st), names, "{st}");
        let sets = &st["datasets"];
        assert!(sets[1]["min"].as_f64() < sets[0]["max"].as_f64(), "{st}");
        assert!(sets[2]["max"].as_f64().unwrap() > 0.0, "{st}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pelt find-max` on goodput: the highest rate at which 95 % of the requests meet a TTFT
/// target, against a stub of fixed capacity (one thread, 2 ms a request). Its streams last
/// about 300 ms, a third of each 1 s step: those still streaming when a step ends were sent on
/// time, and a step that completed fewer than 95 % of its rate because of them still held it.
#[test]
fn find_max_finds_the_highest_rate_whose_goodput_holds() {
    let dir = std::env::temp_dir().join(format!("pelt-find-goodput-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("fm.json");
    let args = [
        "--port",
        "0",
        "--threads",
        "1",
        "--work",
        "2ms",
        "--sse",
        "8",
    ];
    let mut args = args.to_vec();
    args.extend([
        "--sse-body",
        "openai",
        "--sse-first",
        "10ms",
        "--sse-interval",
        "40ms",
    ]);
    let (_serve, url) = ServeProcess::listening(&args);
    let url = format!("{url}/v1/chat/completions");
    let json_path = json.display().to_string();
    let run = [
        "find-max",
        url.as_str(),
        "--input-tokens",
        "8",
        "--output-tokens",
        "8",
        "--goodput",
        "ttft<100ms",
        "--slo",
        "goodput>95%",
        "-d",
        "1s",
        "--max-steps",
        "12",
        "--json",
        &json_path,
        "-q",
    ];
    let (out, _) = util::run(&run);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let answer = v["answer"]["rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no answer: {v}"));
    assert!((100.0..=700.0).contains(&answer), "{answer}: {said}");
    let steps = v["steps"].as_array().unwrap();
    // A step that held its rate with a third of its streams still running at its end.
    assert!(
        steps.iter().any(|st| st["passed"] == true
            && st["achieved_rps"].as_f64().unwrap() < 0.95 * st["rate"].as_f64().unwrap()),
        "{v}"
    );
    // And some rate above the answer failed on goodput.
    assert!(
        steps.iter().any(|st| st["passed"] == false
            && st["rate"].as_f64().is_some_and(|r| r > answer)
            && st["thresholds"][0]["passed"] == false),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--prompts` and `--input-tokens`: an LLM benchmark's requests, each a streamed POST of a
/// prompt, as `pelt serve --sse-body openai` (and its log) sees them: the tokens asked for and
/// the prompt's words come back as the server's usage, the same seed makes the same prompts, and
/// bad input is one line before any request.
#[test]
fn prompts_from_a_dataset_or_made_are_the_requests_the_server_sees() {
    let dir = std::env::temp_dir().join(format!("pelt-prompts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("streams.jsonl");
    let log_path = log.display().to_string();
    let mut args = vec!["--port", "0", "--sse", "4", "--sse-body", "openai"];
    args.extend(["--sse-interval", "1ms", "--sse-log", &log_path]);
    let (_serve, url) = ServeProcess::listening(&args);
    let chat = format!("{url}/v1/chat/completions");
    let text = format!("{url}/v1/completions");
    // The server's log, once it has `n` lines (a stream's line comes as it ends).
    let logged = |n: usize| -> Vec<serde_json::Value> {
        for _ in 0..100 {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            if t.lines().count() >= n {
                return t
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the server logged fewer than {n} streams");
    };
    let jsonl = dir.join("prompts.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"one two\", \"max_tokens\": 2}\n\
         {\"text\": \"three four five\", \"max_tokens\": 3}\n\
         {\"messages\": [{\"role\": \"user\", \"content\": \"six\"}], \"max_tokens\": 4}\n",
    )
    .unwrap();
    let jsonl_path = jsonl.display().to_string();
    let mut served = 0;
    for url in [&chat, &text] {
        let v = run_json(&[url, "--prompts", &jsonl_path, "-c", "3", "-n", "30"]);
        served += 30;
        // Ten of each, in turn: 2 + 3 + 4 tokens out and 2 + 3 + 1 words in, ten times.
        let t = &streams(&v)["tokens"];
        assert_eq!(
            (count(t, &["output"]), count(t, &["input"])),
            (90, 60),
            "{t}"
        );
        assert_eq!(count(streams(&v), &["ended_by_marker"]), 30, "{v}");
        assert_eq!(v["request_set"]["from"], "prompts", "{v}");
        assert_schema(&v);
    }
    assert_eq!(logged(served).len(), served);
    // ShareGPT: the first question of each conversation, its answer's length asked for.
    let sharegpt = dir.join("sharegpt.json");
    std::fs::write(
        &sharegpt,
        r#"[{"conversations": [{"from": "human", "value": "why is the sky blue"},
                               {"from": "gpt", "value": "light scatters off air"}]},
            {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}]"#,
    )
    .unwrap();
    let v = run_json(&[
        &chat,
        "--prompts",
        &sharegpt.display().to_string(),
        "-n",
        "4",
    ]);
    served += 4;
    let t = &streams(&v)["tokens"];
    assert_eq!(
        (count(t, &["output"]), count(t, &["input"])),
        (10, 12),
        "{t}"
    );
    // Made prompts: their lengths within the spread, the same for the same seed.
    let mut made = |seed: &str| -> Vec<(u64, u64)> {
        let v = run_json(&[
            &chat,
            "--input-tokens",
            "30,10",
            "--output-tokens",
            "6,3",
            "--seed",
            seed,
            "-c",
            "1",
            "-n",
            "12",
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 12, "{v}");
        served += 12;
        let records = logged(served);
        records[served - 12..]
            .iter()
            .map(|r| {
                let (i, o) = (
                    count(r, &["prompt_tokens"]),
                    count(r, &["completion_tokens"]),
                );
                assert!((20..=40).contains(&i) && (3..=9).contains(&o), "{r}");
                (i, o)
            })
            .collect()
    };
    let (a, b, c) = (made("7"), made("7"), made("8"));
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Bad input: one line naming what is wrong, exit 2, and nothing sent.
    let no_prompt = dir.join("bad.jsonl");
    std::fs::write(&no_prompt, "{\"prompt\": \"ok\"}\n{\"max_tokens\": 3}\n").unwrap();
    let bad_file = no_prompt.display().to_string();
    for (bad, says) in [
        (
            vec!["--prompts", &bad_file],
            format!("--prompts {bad_file}: line 2: no prompt"),
        ),
        (
            vec!["--input-tokens", "10", "--output-tokens", "128,-5"],
            "negative".to_string(),
        ),
        (
            vec!["--input-tokens", "10", "-b", "x"],
            "cannot be used with".to_string(),
        ),
        (vec!["--output-tokens", "10"], "give one".to_string()),
    ] {
        let mut run = vec![chat.as_str(), "-n", "5"];
        run.extend(bad.iter().copied());
        let (out, _) = util::run(&run);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(&says), "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(logged(served).len(), served, "a refused run sent nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stream_times_out_on_silence_not_on_its_length() {
    // Events 100 ms apart for a second: longer than --timeout, never silent that long.
    let (_serve, url) =
        ServeProcess::listening(&["--port", "0", "--sse", "10", "--sse-interval", "100ms"]);
    let v = run_json(&[&url, "-c", "2", "-n", "2", "--timeout", "400ms"]);
    assert_eq!(count(&v, &["requests", "completed"]), 2, "{v}");
    assert_eq!(count(streams(&v), &["events"]), 20);
    // Two seconds between events: silent past the timeout.
    let (_serve, url) =
        ServeProcess::listening(&["--port", "0", "--h2", "--sse", "3", "--sse-interval", "2s"]);
    for h2 in [false, true] {
        let mut run = vec![url.as_str(), "-c", "1", "-n", "1", "--timeout", "300ms"];
        if h2 {
            run.push("--http2");
        }
        let (out, took) = util::run(&run);
        assert!(out.status.success());
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("the stream sent nothing for 300ms"), "{text}");
        let v = run_json(&run);
        assert_eq!(count(&v, &["errors", "timeout"]), 1, "{v}");
        assert_eq!(count(streams(&v), &["events"]), 1, "{v}");
    }
}

#[test]
fn results_with_streams_merge_exactly() {
    let (_serve, url) =
        ServeProcess::listening(&["--port", "0", "--sse", "7", "--sse-interval", "1ms"]);
    let dir = std::env::temp_dir().join(format!("pelt-streams-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parts: Vec<String> = (0..2)
        .map(|k| {
            let path = dir.join(format!("{k}.json")).display().to_string();
            let n = if k == 0 { "10" } else { "25" };
            let (out, _) = run(&[&url, "-c", "2", "-n", n, "--json", &path, "-q"]);
            assert!(out.status.success());
            path
        })
        .collect();
    let html = dir.join("merged.html").display().to_string();
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--json", "-", "--html", &html]);
    let out = pelt().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = streams(&v);
    assert_eq!((count(s, &["streams"]), count(s, &["events"])), (35, 245));
    assert_eq!(count(s, &["events_per_stream", "max"]), 7);
    // The HTML report has the streams' rows and table.
    let page = std::fs::read_to_string(&html).unwrap();
    for want in [
        "time to first event (TTFT)",
        "Event streams",
        "<td>events</td>",
    ] {
        assert!(page.contains(want), "{want} missing from the HTML report");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// sse-starlette on uvicorn: its own count of (streams finished, events sent).
fn sse_counts(app: &PythonApp) -> (u64, u64) {
    let v = app.counts();
    (count(&v, &["streams"]), count(&v, &["events"]))
}

#[test]
fn sse_starlette_streams_are_counted_event_by_event() {
    let Some(app) = PythonApp::start("sse_app.py") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/stream?n=25&gap_ms=2", app.port);
    let v = run_json(&[&url, "-c", "5", "-n", "40"]);
    let s = streams(&v);
    assert_eq!((count(s, &["streams"]), count(s, &["events"])), (40, 1000));
    assert_eq!(count(s, &["events_per_stream", "min"]), 25);
    // The server's own count: what it sent is what pelt read.
    assert_eq!(sse_counts(&app), (40, 1000));
    // The LLM shape: POST a JSON body on a Poisson schedule; [DONE] ends each stream.
    let url = format!("http://127.0.0.1:{}/stream?n=10&gap_ms=1&done=1", app.port);
    let v = run_json(&[
        &url,
        "-m",
        "POST",
        "-H",
        "Content-Type: application/json",
        "--body",
        r#"{"stream": true, "prompt": "hello"}"#,
        "--rate",
        "40",
        "--arrival",
        "poisson",
        "-n",
        "30",
        "--stream-end",
        "[DONE]",
    ]);
    let s = streams(&v);
    assert_eq!(count(s, &["ended_by_marker"]), 30, "{s}");
    assert_eq!(count(s, &["events"]), 300, "{s}");
    assert_eq!(v["latency_from"], "due");
    assert_eq!(sse_counts(&app), (70, 1300));
}

#[test]
fn sse_starlette_through_nginx_as_http2() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let Some(app) = PythonApp::start("sse_app.py") else {
        return;
    };
    let upstream = app.port;
    let nginx = RealServer::start("nginx-sse", 1, |dir, ports| {
        let http = format!(
            "    access_log off;
    server {{
        listen 127.0.0.1:{p} http2;
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
            proxy_buffering off;
        }}
    }}
",
            p = ports[0]
        );
        nginx_command(&bin, dir, &http)
    });
    let url = format!("{}stream?n=12&gap_ms=2", nginx.url("http", 0));
    let v = run_json(&[&url, "--http2", "-c", "2", "--streams", "10", "-n", "60"]);
    let s = streams(&v);
    assert_eq!((count(s, &["streams"]), count(s, &["events"])), (60, 720));
    assert_eq!(v["http"], "2");
    assert_eq!(sse_counts(&app), (60, 720));
}
