//! End to end: open loop (--rate), the stall scenario, the per-second timeline and --jsonl,
//! warm-up, interrupting a run, and --expect thresholds. Loose bounds only: these assert
//! behaviour (counts, which histogram shows a stall), never speed.

mod util;

use pelt_server::ServerConfig;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;
use util::*;

fn sum_timeline(v: &serde_json::Value, key: &str) -> u64 {
    v["timeline"]
        .as_array()
        .expect("timeline is an array")
        .iter()
        .map(|p| p[key].as_u64().unwrap())
        .sum()
}

#[test]
fn rate_with_a_request_count_sends_exactly_that_many() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "--rate", "2000", "-n", "500", "-c", "8"]);
    assert_eq!(count(&v, &["requests", "sent"]), 500);
    assert_eq!(count(&v, &["requests", "completed"]), 500);
    assert_eq!(v["load_model"], "open");
    assert_eq!(v["latency_from"], "due");
    assert_eq!(v["rate"], 2000.0);
    assert_eq!(v["stopped_by"], "requests");
    let open = &v["open_loop"];
    assert!(open["service_time_us"]["p50"].as_u64().is_some(), "{open}");
    assert!(open["lag_us"]["max"].as_u64().is_some(), "{open}");
    assert_eq!(server.stop(), 500);
}

/// Requests due within one batch window start together and responses are read at its end:
/// every request is still sent and answered once, each response is booked from its due time
/// (latency dominates the lag and the service time, request by request, so percentile by
/// percentile), and the report says which window ran.
#[test]
fn a_batch_window_sends_every_request_and_books_each_from_its_due_time() {
    let (server, url) = serve(ServerConfig::default());
    for (window, us) in [("1ms", 1000), ("0", 0)] {
        let v = run_json(&[
            &url,
            "--rate",
            "4000",
            "-n",
            "2000",
            "-c",
            "8",
            "-t",
            "2",
            "--batch-window",
            window,
        ]);
        assert_eq!(count(&v, &["requests", "sent"]), 2000);
        assert_eq!(count(&v, &["requests", "completed"]), 2000);
        assert_eq!(v["batch_window_us"], us);
        let open = &v["open_loop"];
        for p in ["p50", "p90", "p99", "max"] {
            let latency = count(&v, &["latency_us", p]);
            assert!(latency >= count(open, &["lag_us", p]), "{p}: {v}");
            assert!(latency >= count(open, &["service_time_us", p]), "{p}: {v}");
        }
    }
    assert_eq!(server.stop(), 4000);
    let out = pelt()
        .args([&url, "--rate", "100", "-n", "5", "--batch-window", "250us"])
        .output()
        .expect("pelt runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "open loop: 100/s, constant arrivals, up to 50 connections, batch window 250us"
        ),
        "{text}"
    );
}

#[test]
fn poisson_arrivals_and_a_rate_below_the_thread_count() {
    let (server, url) = serve(ServerConfig::default());
    // 4 threads at 20/s: every worker still sends (no share rounds to zero).
    let v = run_json(&[&url, "--rate", "20", "-n", "10", "-t", "4", "-c", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 10);
    let v = run_json(&[
        &url,
        "--rate",
        "400",
        "--arrival",
        "poisson",
        "-n",
        "100",
        "-c",
        "4",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 100);
    assert_eq!(v["arrival"], "poisson");
    assert_eq!(server.stop(), 110);
}

/// The timeline's points as (target, sent, connections).
fn stage_points(v: &serde_json::Value) -> Vec<(f64, u64, u64)> {
    v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let target = p["target"]
                .as_f64()
                .unwrap_or_else(|| panic!("no target: {p}"));
            (
                target,
                p["sent"].as_u64().unwrap(),
                p["connections"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_rate_ramp_sends_what_its_stages_hold_and_shows_in_the_timeline() {
    let (server, url) = serve(ServerConfig::default());
    // From 0 up to 400/s over 1 s, held 1 s, down to 0 over 1 s (200 + 400 + 200 requests),
    // and nothing for the last half second.
    let stages = "1s:400,1s:400,1s:0,500ms:0";
    let v = run_json(&[&url, "--rate", "0", "--stages", stages, "-c", "8"]);
    assert_eq!(count(&v, &["requests", "sent"]), 800, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 800);
    assert_eq!(v["duration_limit_s"], 3.5, "-d is the stages' total");
    assert_eq!(v["stopped_by"], "duration");
    assert_eq!(v["rate"], 400.0, "the peak");
    assert_eq!(v["stages"]["of"], "rate");
    assert_eq!(v["stages"]["start"], 0.0);
    assert_eq!(v["stages"]["stages"][1]["target"], 400.0);
    let points = stage_points(&v);
    assert!(points.len() >= 4, "{points:?}");
    // The schedule is exact; when each request starts is not: loose bounds per second.
    for (k, want) in [(0, 200.0), (1, 400.0), (2, 200.0), (3, 0.0)] {
        let (target, sent, _) = points[k];
        assert!((target - want).abs() < 1e-6, "second {k}: target {target}");
        let sent = sent as f64;
        assert!(
            sent >= want * 0.5 && sent <= want * 1.5 + 5.0,
            "second {k}: sent {sent}, asked {want}: {points:?}"
        );
    }
    assert_eq!(server.stop(), 800);
    // A request count still ends a staged run exactly.
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "--rate", "500", "--stages", "10s:1k", "-n", "60"]);
    assert_eq!(count(&v, &["requests", "completed"]), 60);
    assert_eq!(v["stopped_by"], "requests");
    assert_eq!(server.stop(), 60);
}

#[test]
fn a_connection_ramp_opens_and_closes_connections_as_its_stages_say() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    // The server counts the connections open at once and the most it saw.
    let (live, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (l, m) = (live.clone(), most.clone());
    let server = RawServer::start(move |stream| {
        let now = l.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        answer_each(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")(stream);
        l.fetch_sub(1, Ordering::SeqCst);
    });
    // Up to 6 connections over 1 s, held 1 s, down to none over 1 s, none for 0.5 s.
    let stages = "1s:6,1s:6,1s:0,500ms:0";
    let v = run_json(&[&server.url(), "--stages", stages, "-t", "2"]);
    assert_eq!(v["load_model"], "closed");
    assert_eq!(v["connections"], 6, "the peak, not -c's default");
    assert_eq!(v["stages"]["of"], "connections");
    assert!(count(&v, &["requests", "completed"]) > 0);
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    let points = stage_points(&v);
    let targets: Vec<f64> = points.iter().map(|p| p.0).collect();
    assert_eq!(&targets[..4], &[6.0, 6.0, 0.0, 0.0], "{points:?}");
    assert!(points.iter().all(|p| p.2 <= 6), "{points:?}");
    assert_eq!(points[1].2, 6, "all six open at the top: {points:?}");
    assert_eq!(
        points.last().unwrap().2,
        0,
        "none open at the end: {points:?}"
    );
    // The held stage sends; the empty one does not.
    assert!(points[1].1 > 0 && points[3].1 == 0, "{points:?}");
    // The server saw the same: at most 6 at once, each opened once and kept alive.
    assert_eq!(most.load(Ordering::SeqCst), 6);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 6);
    assert_eq!(v["connections_opened"], 6);
}

#[test]
fn more_connections_open_when_every_one_is_busy() {
    // Each response takes 200 ms; 100/s needs about 20 connections, -c gives 2.
    let (server, url) = serve(ServerConfig {
        delay: Duration::from_millis(200),
        threads: 2,
        ..Default::default()
    });
    let v = run_json(&[
        &url,
        "--rate",
        "100",
        "-n",
        "60",
        "-c",
        "2",
        "-t",
        "1",
        "--max-connections",
        "40",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 60);
    let opened = count(&v, &["connections_opened"]);
    assert!(opened > 2 && opened <= 40, "opened {opened}");
    assert_eq!(v["max_connections"], 40);
    drop(server);
}

/// The reason --rate exists: a 1.5 s server stall shows in the open-loop latency of every
/// request it delayed, while service time and the closed-loop latency hide it.
#[test]
fn a_server_stall_shows_in_corrected_latency_only() {
    let stall = Some((Duration::from_millis(1500), Duration::from_millis(1500)));
    let (server, url) = serve(ServerConfig {
        stall,
        ..Default::default()
    });
    let open = run_json(&[&url, "--rate", "500", "-d", "4s", "-c", "10", "-t", "1"]);
    drop(server);
    let p99 = count(&open, &["latency_us", "p99"]);
    let service_p99 = count(&open, &["open_loop", "service_time_us", "p99"]);
    assert!(p99 >= 700_000, "the stall is missing from latency: {open}");
    assert!(
        service_p99 * 4 < p99,
        "service time should hide the stall: {service_p99} vs {p99}"
    );
    assert!(count(&open, &["open_loop", "late_requests"]) > 0);

    let (server, url) = serve(ServerConfig {
        stall,
        ..Default::default()
    });
    let closed = run_json(&[&url, "-d", "4s", "-c", "10", "-t", "1"]);
    drop(server);
    let closed_p99 = count(&closed, &["latency_us", "p99"]);
    assert!(
        closed_p99 * 4 < p99,
        "closed loop hides the stall: {closed_p99} vs {p99}"
    );
    assert!(
        count(&closed, &["latency_us", "max"]) >= 700_000,
        "{closed}"
    );
    let note = closed["notes"][0].as_str().unwrap();
    assert!(note.contains("coordinated omission") && note.contains("--rate"));
}

#[test]
fn the_timeline_adds_up_to_the_totals() {
    let (server, url) = serve(ServerConfig {
        error_rate: 0.1,
        ..Default::default()
    });
    let v = run_json(&[&url, "-d", "2500ms", "-c", "4", "--warmup", "1s"]);
    let timeline = v["timeline"].as_array().unwrap();
    let seconds: Vec<u64> = timeline
        .iter()
        .map(|p| p["second"].as_u64().unwrap())
        .collect();
    assert_eq!(seconds, (0..seconds.len() as u64).collect::<Vec<_>>());
    // 1 s of warm-up and 2.5 s measured: at least the seconds 0..=2 (a loaded machine may
    // end a little late and add one: no upper bound, timings are not asserted).
    assert!(seconds.len() >= 3, "{seconds:?}");
    assert_eq!(timeline[0]["warmup"], true);
    assert_eq!(timeline[1]["warmup"], false);
    let w = &v["warmup"]["requests"];
    let total = |key: &str| count(&v, &["requests", key]) + w[key].as_u64().unwrap();
    // Every request appears in exactly one second, warm-up included.
    assert_eq!(sum_timeline(&v, "sent"), total("sent"));
    assert_eq!(sum_timeline(&v, "completed"), total("completed"));
    assert_eq!(sum_timeline(&v, "errors"), total("errors"));
    let fives: u64 = timeline
        .iter()
        .map(|p| p["status_classes"]["5xx"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(
        fives,
        count(&v, &["status", "500"]) + v["warmup"]["status"]["500"].as_u64().unwrap_or(0)
    );
    drop(server);
}

#[test]
fn warm_up_is_counted_apart_and_n_counts_after_it() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "-n", "300", "-c", "4", "--warmup", "500ms"]);
    assert_eq!(count(&v, &["requests", "sent"]), 300);
    assert_eq!(count(&v, &["requests", "completed"]), 300);
    let w = &v["warmup"];
    assert_eq!(w["duration_s"], 0.5);
    let warm_sent = count(w, &["requests", "sent"]);
    let warm_done = count(w, &["requests", "completed"]);
    assert!(warm_sent > 0, "{w}");
    assert_eq!(
        warm_sent,
        warm_done + count(w, &["requests", "errors"]) + count(w, &["requests", "in_flight"])
    );
    // Nothing disappears: the server answered the warm-up and the measured requests.
    assert_eq!(server.stop(), warm_done + 300);
}

#[test]
fn jsonl_streams_one_line_per_second_while_the_run_goes() {
    let (server, url) = serve(ServerConfig::default());
    let mut child = spawn(&[url.as_str(), "-d", "3s", "-c", "2", "--jsonl", "-", "-q"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    // The first second arrives while the run is still going (flushed, not buffered).
    assert!(
        child.try_wait().unwrap().is_none(),
        "pelt ended before its first line arrived"
    );
    let mut all = vec![first];
    all.extend(lines.map(Result::unwrap));
    let (out, _) = wait_bounded(child, Duration::from_secs(30));
    assert!(out.status.success());
    // A 3 s run: at least three seconds (no upper bound: a loaded machine may end late).
    assert!(all.len() >= 3, "{all:?}");
    for (i, line) in all.iter().enumerate() {
        let p: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        assert_eq!(p["second"], i as u64);
        assert!(
            p["completed"].as_u64().unwrap() > 0 || i == all.len() - 1,
            "{line}"
        );
    }
    // With the lines on stdout, the summary went to stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Requests"), "{stderr}");
    drop(server);
}

#[test]
fn jsonl_to_a_file_matches_the_timeline() {
    let (server, url) = serve(ServerConfig::default());
    let path = std::env::temp_dir().join(format!("pelt-jsonl-{}.jsonl", std::process::id()));
    let v = run_json(&[
        &url,
        "-d",
        "2s",
        "-c",
        "2",
        "--jsonl",
        path.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(serde_json::Value::Array(lines), v["timeline"]);
    std::fs::remove_file(&path).unwrap();
    drop(server);
}

fn interrupt(child: &std::process::Child) {
    rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::INT,
    )
    .unwrap();
}

#[test]
fn interrupted_open_loop_run_writes_its_result() {
    let (server, url) = serve(ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.json");
    let child = spawn(&[
        url.as_str(),
        "--rate",
        "1000",
        "-d",
        "30s",
        "-c",
        "4",
        "--json",
        path.to_str().unwrap(),
        "-q",
    ]);
    std::thread::sleep(Duration::from_millis(1200));
    interrupt(&child);
    let (out, _) = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_invariant(&v);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["stopped_by"], "signal");
    assert!(count(&v, &["requests", "completed"]) > 0);
    // The summary still printed, and no temp file was left behind.
    assert!(String::from_utf8_lossy(&out.stdout).contains("interrupted"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
    drop(server);
}

#[test]
fn the_grace_period_lets_requests_in_flight_finish() {
    let (server, url) = serve(ServerConfig {
        delay: Duration::from_millis(400),
        threads: 2,
        ..Default::default()
    });
    let child = spawn(&[
        url.as_str(),
        "-d",
        "30s",
        "-c",
        "4",
        "--grace",
        "5s",
        "--json",
        "-",
        "-q",
    ]);
    std::thread::sleep(Duration::from_millis(600));
    interrupt(&child);
    let (out, _) = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    // The four requests in flight at the signal were answered within the grace.
    assert_eq!(count(&v, &["requests", "in_flight"]), 0, "{v}");
    assert_eq!(server.stop(), count(&v, &["requests", "completed"]));
}

#[test]
fn a_second_interrupt_exits_at_once() {
    // A server that reads requests and never answers: the grace would last 60 s.
    let silent = RawServer::start(|mut s| {
        let _ = read_request(&mut s);
        std::thread::sleep(Duration::from_secs(5));
    });
    let child = spawn(&[
        silent.url().as_str(),
        "-d",
        "60s",
        "-c",
        "2",
        "--grace",
        "60s",
        "-q",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(200));
    interrupt(&child);
    // Bounded well below the grace: the second interrupt did not wait for it.
    let (out, _) = wait_bounded(child, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130));
}

#[test]
fn expectations_pass_and_fail_as_they_should() {
    let (server, url) = serve(ServerConfig {
        error_rate: 0.5,
        ..Default::default()
    });
    let checks = [
        ("p50<60s", true),
        ("p90<60s", true),
        ("p99<60s", true),
        ("p99.9<=60s", true),
        ("max<60000ms", true),
        ("mean<60s", true),
        ("min>=1us", true),
        ("p99<1us", false),
        ("max<1us", false),
        ("errors<1", true),
        ("errors<0.1%", true),
        ("errors>0", false),
        ("rps>1", true),
        ("rps>1g", false),
        ("5xx<=50%", true),
        ("5xx<10%", false),
        ("5xx>=100", true),
        ("2xx<100", false),
        ("500<=100", true),
        ("404>0", false),
    ];
    let mut args = vec![url.as_str(), "-n", "200", "-c", "2", "--json", "-", "-q"];
    for (e, _) in &checks {
        args.extend(["--expect", e]);
    }
    let (out, _) = run(&args);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = v["thresholds"].as_array().unwrap();
    assert_eq!(got.len(), checks.len());
    for ((expr, passes), t) in checks.iter().zip(got) {
        assert_eq!(t["expect"], *expr);
        assert_eq!(t["passed"], *passes, "{expr}: {t}");
    }
    // Everything holds: exit 0, and the summary lists them.
    let (out, _) = run(&[
        &url,
        "-n",
        "50",
        "-c",
        "2",
        "--expect",
        "p99<60s",
        "--expect",
        "errors<1%",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Thresholds") && text.contains("errors<1%"),
        "{text}"
    );
    drop(server);
    // Transport errors count under errors; a latency objective with no response fails.
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let (out, _) = run(&[
        &refused,
        "-n",
        "3",
        "-c",
        "1",
        "--json",
        "-",
        "-q",
        "--expect",
        "errors<=100%",
        "--expect",
        "p99<60s",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["thresholds"][0]["passed"], true);
    assert_eq!(v["thresholds"][1]["passed"], false);
    assert!(v["thresholds"][1]["actual"].is_null());
}

/// The live line appears on a terminal (a pty from util-linux's `script`) and nowhere else.
/// Runs pelt with `args` on a pty (util-linux's `script`) and returns what the terminal got.
fn on_a_terminal(args: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_pelt");
    let child = std::process::Command::new("script")
        .args(["-qec", &format!("{bin} {args}"), "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux's script (Debian: bsdutils) runs pelt on a pty");
    let (out, _) = wait_bounded(child, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn live_view_shows_the_stages_target_beside_what_was_reached() {
    let (server, url) = serve(ServerConfig::default());
    let tty = on_a_terminal(&format!("{url} --stages 2s:4,500ms:4 -t 1"));
    assert!(
        tty.contains("  connections ") && tty.contains(" of 4"),
        "{tty:?}"
    );
    let tty = on_a_terminal(&format!("{url} --rate 0 --stages 0s:100,2s:100 -c 2"));
    assert!(
        tty.contains("  sent ") && tty.contains("/s of 100.0/s"),
        "{tty:?}"
    );
    assert!(
        tty.contains("stages: rate 0/s, to 100/s at once, to 100/s over 2s"),
        "{tty:?}"
    );
    drop(server);
}

#[test]
fn live_view_only_on_a_terminal() {
    let (server, url) = serve(ServerConfig::default());
    let args = format!("{url} -d 2500ms -c 2 -n 50m");
    let tty = on_a_terminal(&args);
    // Redrawn in place each second: elapsed / total, rate, percentiles, errors, -n progress.
    assert!(tty.contains("\r\x1b[2K[   1s / 2s]"), "{tty:?}");
    assert!(
        tty.contains("req/s  p50 ") && tty.contains("/50,000,000 ("),
        "{tty:?}"
    );
    assert!(tty.contains("Requests"), "the summary follows: {tty:?}");
    // Not on a pipe, and not with -q on a terminal.
    let (out, _) = run(&[&url, "-d", "1500ms", "-c", "2"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("req/s"));
    let tty = on_a_terminal(&format!("{args} -q"));
    assert!(
        !tty.contains("req/s  p50") && tty.contains("Requests"),
        "{tty:?}"
    );
    drop(server);
}
