//! Live views and control (`--dashboard`): the page in a real browser, the JSON control
//! endpoint steering a run (a new rate, a pause, a resume, a stop) as nginx's own access log
//! records it, and who may use the page. Timings are asserted only as shares a loaded machine
//! keeps (the schedule's counts, ±1 %).

mod util;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Child;
use std::time::{Duration, Instant};
use util::live::*;
use util::real::find_server;
use util::*;

/// pelt with `args` and `--dashboard 127.0.0.1:0`: the child, the page's address, and its
/// stderr's other lines as they come.
fn with_dashboard(args: &[&str]) -> (Child, SocketAddr, std::sync::mpsc::Receiver<String>) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--dashboard", "127.0.0.1:0"]);
    let mut child = spawn(&all);
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let start = Instant::now();
    let addr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("pelt says where its dashboard is");
        if let Some(rest) = line.strip_prefix("pelt: dashboard on http://") {
            break rest.trim_end_matches('/').parse().unwrap();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no dashboard line"
        );
    };
    (child, addr, rx)
}

#[test]
fn the_control_endpoint_changes_the_rate_pauses_resumes_and_stops_as_nginx_logs() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let server = nginx_timed(&bin);
    let url = server.url("http", 0);
    let (child, addr, _stderr) = with_dashboard(&[
        &url,
        "--rate",
        "1000",
        "-d",
        "30s",
        "-c",
        "20",
        "--max-connections",
        "200",
        "--json",
        "-",
    ]);
    // The steps, each asked for when the run's clock passes its second.
    for (at, json) in [
        (3.0, r#"{"action": "rate", "value": 3000}"#),
        (5.0, r#"{"action": "pause"}"#),
        (7.0, r#"{"action": "resume"}"#),
        (9.0, r#"{"action": "stop"}"#),
    ] {
        until_second(addr, at);
        let (code, answer) = post(addr, json);
        assert_eq!(code, 200, "{json}: {answer}");
        assert_eq!(answer["ok"], true);
    }
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(
        out.status.code(),
        Some(130),
        "a stop keeps the results, as Ctrl-C does"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&v);
    assert_invariant(&v);
    let changes = v["changes"].as_array().unwrap();
    let what: Vec<&str> = changes
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert_eq!(what, ["rate", "pause", "resume", "stop"]);
    let at: Vec<f64> = changes
        .iter()
        .map(|c| c["at_s"].as_f64().unwrap())
        .collect();
    assert_eq!(
        changes[2]["value"], 3000.0,
        "a resume goes back to the rate before the pause"
    );
    // Each change is marked on the timeline, in the second it took effect in.
    for c in changes {
        let second = c["at_s"].as_f64().unwrap().floor() as u64;
        let point = v["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["second"] == second)
            .unwrap();
        assert!(
            point["changes"].as_array().is_some_and(|m| m.contains(c)),
            "second {second} marks {c}"
        );
    }
    // nginx saw every request pelt counted, and each phase at its rate.
    let done = count(&v, &["requests", "completed"]) + count(&v, &["requests", "errors"]);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    let times = logged_times(&server, done);
    assert_eq!(times.len() as u64, done, "nginx logged what pelt counted");
    let start = v["started_unix_ms"].as_f64().unwrap() / 1000.0;
    assert_phases(&times, start, &at);
}

#[test]
fn a_closed_loop_changes_its_connections_and_refuses_a_rate() {
    let (server, url) = serve(pelt_server::ServerConfig::default());
    let (child, addr, _stderr) = with_dashboard(&[&url, "-c", "4", "-d", "20s", "--json", "-"]);
    until_second(addr, 1.0);
    let (code, answer) = post(addr, r#"{"action": "rate", "value": 500}"#);
    assert_eq!(code, 409);
    assert!(
        answer["error"].as_str().unwrap().contains("closed loop"),
        "{answer}"
    );
    assert_eq!(state(addr)["steers"], "connections");
    let (code, answer) = post(addr, r#"{"action": "connections", "value": 12}"#);
    assert_eq!(
        (code, &answer["change"]["value"]),
        (200, &Value::from(12.0))
    );
    until_second(addr, 3.5);
    let (code, _) = post(addr, r#"{"action": "pause"}"#);
    assert_eq!(code, 200);
    until_second(addr, 5.5);
    let (code, _) = post(addr, r#"{"action": "stop"}"#);
    assert_eq!(code, 200);
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(130));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    let points = v["timeline"].as_array().unwrap();
    let at = |s: u64| points.iter().find(|p| p["second"] == s).unwrap();
    assert_eq!(at(0)["connections"], 4);
    assert_eq!(
        at(2)["connections"],
        12,
        "a change opens the connections it asks for"
    );
    assert_eq!(at(2)["target"], 12.0);
    assert_eq!(at(4)["completed"], 0, "paused: every connection idle");
    assert_eq!(at(4)["connections"], 0);
    assert_eq!(
        server.served(),
        count(&v, &["requests", "completed"]),
        "the server counted what pelt did"
    );
}

#[test]
fn the_page_refuses_what_is_not_a_change_from_itself() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let (child, addr, _stderr) =
        with_dashboard(&[&url, "--rate", "200", "-d", "20s", "-c", "2", "--json", "-"]);
    let child = Killed(child);
    until_second(addr, 0.2);
    // A form (no JSON) and a script on another site are refused; so is a change the loop
    // has no value for, and nonsense.
    let (code, _) = request(addr, "POST /api/control HTTP/1.1", r#"{"action":"pause"}"#);
    assert_eq!(code, 415);
    let (code, _) = request(
        addr,
        "POST /api/control HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: http://evil.example",
        r#"{"action":"pause"}"#,
    );
    assert_eq!(code, 403);
    for (json, says) in [
        (r#"{"action": "connections", "value": 10}"#, "open loop"),
        (r#"{"action": "rate", "value": -5}"#, "out of range"),
        (r#"{"action": "rate"}"#, "needs a value"),
        (r#"{"action": "resume"}"#, "not paused"),
        (r#"{"action": "faster"}"#, "one of rate"),
        ("not json", "not JSON"),
    ] {
        let (code, answer) = post(addr, json);
        assert!(code == 400 || code == 409, "{json}: {code}");
        let e = answer["error"].as_str().unwrap();
        assert!(e.contains(says), "{json}: {e}");
    }
    let (code, page) = request(addr, "GET / HTTP/1.1", "");
    assert_eq!(code, 200);
    assert!(
        page.contains("rps-chart") && !page.contains("http://cdn"),
        "the page is whole"
    );
    drop(child);
}

#[test]
fn a_dashboard_beyond_loopback_needs_the_fleets_token() {
    assert_bad_input_without_token(
        &[
            "http://127.0.0.1:1/",
            "--dashboard",
            "0.0.0.0:0",
            "-d",
            "1s",
        ],
        "token",
    );
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let token = "a-token-of-twenty-chars";
    let mut cmd = pelt();
    cmd.env("PELT_FLEET_TOKEN", token).args([
        url.as_str(),
        "--rate",
        "100",
        "-d",
        "20s",
        "--dashboard",
        "0.0.0.0:0",
        "--json",
        "-",
    ]);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines
        .find_map(|l| l.ok().filter(|l| l.contains("dashboard on")))
        .unwrap();
    assert!(line.ends_with("?token=..."), "{line}");
    let port: u16 = line
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/?token=...")
        .parse()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let (code, _) = request(addr, "GET /api/state HTTP/1.1", "");
    assert_eq!(code, 401);
    let (code, _) = request(addr, &format!("GET /api/state?token={token} HTTP/1.1"), "");
    assert_eq!(code, 200);
    let (code, body) = request(
        addr,
        &format!("POST /api/control HTTP/1.1\r\nContent-Type: application/json\r\nAuthorization: Bearer {token}"),
        r#"{"action": "stop"}"#,
    );
    assert_eq!(code, 200, "{body}");
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(130));
}

/// `fmtUs` of the page's common.js.
fn fmt_us(us: f64) -> String {
    // As JavaScript's toFixed: an exact tie (2,625 us as 2.625 ms) goes up, where Rust's
    // formatting goes to the even digit (2.62); anything else rounds the same in both.
    let fixed = |x: f64, digits: usize| {
        // The double's exact decimal digits (a double of 1 or more has at most 52 after the
        // point): a tie is a 5 and then only zeros.
        let exact = format!("{x:.60}");
        let after = &exact[exact.find('.').unwrap() + 1 + digits..];
        let tie = after.starts_with('5') && after[1..].bytes().all(|b| b == b'0');
        let x = if tie {
            let scale = 10f64.powi(digits as i32);
            ((x * scale).floor() + 1.0) / scale
        } else {
            x
        };
        format!("{x:.digits$}")
    };
    if us < 1000.0 {
        format!("{} us", us.round())
    } else if us < 1e6 {
        let digits = if us < 1e4 { 2 } else { 1 };
        format!("{} ms", fixed(us / 1000.0, digits))
    } else {
        format!("{} s", fixed(us / 1e6, 2))
    }
}

#[test]
fn the_tests_formatting_rounds_as_the_page_does() {
    assert_eq!(fmt_us(2625.0), "2.63 ms");
    assert_eq!(fmt_us(2615.0), "2.62 ms");
    assert_eq!(fmt_us(1005.0), "1.00 ms");
    // 12.35 is 12.3499... as a double: not a tie, down in both.
    assert_eq!(fmt_us(12_350.0), "12.3 ms");
    assert_eq!(fmt_us(12_250.0), "12.3 ms");
    assert_eq!(fmt_us(999.0), "999 us");
}

#[test]
fn the_page_draws_the_run_live_steers_it_and_ends_with_its_figures() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    // The server runs in this test's process: --monitor names it.
    let pid = std::process::id().to_string();
    let (child, addr, _stderr) = with_dashboard(&[
        &url,
        "--rate",
        "400",
        "-d",
        "7s",
        "-c",
        "8",
        "--monitor",
        &pid,
        "--json",
        "-",
    ]);
    let shot = std::env::temp_dir().join(format!("pelt-dashboard-{}.png", std::process::id()));
    let page_url = format!("http://{addr}/");
    let Some(page) = browser(
        "check_dashboard.mjs",
        &[
            page_url.as_ref(),
            shot.as_os_str(),
            "2:set=800".as_ref(),
            "4:pause".as_ref(),
            "5:resume".as_ref(),
        ],
    ) else {
        return;
    };
    let page: Value = serde_json::from_slice(&page).unwrap();
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["problems"], serde_json::json!([]), "{page}");
    assert!(page["ended"].as_bool().unwrap(), "{page}");
    assert!(
        page["updates"].as_u64().unwrap() >= 3,
        "the charts moved live: {page}"
    );
    assert!(
        page["report"].as_bool().unwrap(),
        "the page offers the HTML report"
    );
    let f = &page["final"];
    assert_eq!(
        f["completed"],
        pelt_stats::fmt::thousands(count(&v, &["requests", "completed"]))
    );
    assert_eq!(
        f["errors"],
        pelt_stats::fmt::thousands(count(&v, &["requests", "errors"]))
    );
    assert_eq!(
        f["rps"],
        pelt_stats::fmt::thousands(v["rps"].as_f64().unwrap().round() as u64)
    );
    assert_eq!(f["p50"], fmt_us(v["latency_us"]["p50"].as_f64().unwrap()));
    assert_eq!(f["p99"], fmt_us(v["latency_us"]["p99"].as_f64().unwrap()));
    let kinds: Vec<&str> = page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["rate", "pause", "resume"], "{page}");
    let what: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert_eq!(what, kinds);
    // The status codes' table adds up the seconds as the result does.
    let ok = pelt_stats::fmt::thousands(count(&v, &["status", "200"]));
    assert_eq!(page["codes"], serde_json::json!([["200", ok]]), "{page}");
    // Who was the bottleneck: each second's while it ran, the result's at the end.
    let live = page["verdicts"].as_array().unwrap();
    assert!(!live.is_empty(), "{page}");
    for l in live {
        let l = l.as_str().unwrap();
        assert!(l.starts_with("Who is the bottleneck (last 10 s): "), "{l}");
    }
    assert_eq!(
        page["live_verdict_shown"], false,
        "the result's replaces it"
    );
    let verdict = page["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("Who was the bottleneck: "), "{page}");
    // Every second of the run is drawn.
    let drawn = page["charts"][0]["datasets"][0]["points"].as_u64().unwrap();
    assert_eq!(drawn, v["timeline"].as_array().unwrap().len() as u64);
}

/// The page's server-sent events from the start to the end: each point's second and verdict.
fn page_verdicts(addr: SocketAddr) -> Vec<(u64, Option<String>)> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut seen = Vec::new();
    let mut event = String::new();
    for line in BufReader::new(s).lines() {
        let line = line.expect("the page's events end with \"end\"");
        if let Some(name) = line.strip_prefix("event: ") {
            event = name.to_string();
        } else if let Some(data) = line.strip_prefix("data: ") {
            match event.as_str() {
                "end" => break,
                "point" => {
                    let p: Value = serde_json::from_str(data).unwrap();
                    let verdict = p["verdict"].as_str().map(String::from);
                    seen.push((p["second"].as_u64().unwrap(), verdict));
                }
                _ => {}
            }
        }
    }
    seen
}

/// With `--monitor`, each second the page names who was the bottleneck over the last seconds:
/// what the result's own seconds judge to, second by second.
#[test]
fn the_live_verdict_is_the_results_seconds_judged_as_they_came() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-live-verdict-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    // The server runs in this test's process.
    let pid = std::process::id().to_string();
    let (child, addr, _stderr) = with_dashboard(&[
        &url,
        "-c",
        "4",
        "-d",
        "4s",
        "--monitor",
        &pid,
        "--json",
        json.to_str().unwrap(),
    ]);
    let seen = page_verdicts(addr);
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert_eq!(out.status.code(), Some(0));
    let report: pelt_stats::Report =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(seen.len(), report.timeline.len(), "{seen:?}");
    let mut judge = pelt_stats::LiveVerdict::new(&report.info, false);
    for ((second, shown), p) in seen.iter().zip(&report.timeline) {
        assert_eq!(*second, p.second);
        let judged = judge.add(p).map(|v| v.headline());
        assert_eq!(shown, &judged, "second {second}");
    }
    assert!(
        seen.iter().any(|(_, v)| v.is_some()),
        "a verdict each second with --monitor: {seen:?}"
    );
}

/// tmux on its own socket (a test's own server, ended with it).
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    /// A session of `width` x `height` running `command`; `None` (skipped outside CI)
    /// without tmux.
    fn start(width: u16, height: u16, command: &str) -> Option<Tmux> {
        if !std::path::Path::new("/usr/bin/tmux").exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is missing (Debian package: tmux); .ci/run installs it"
            );
            eprintln!("SKIPPED: tmux is not installed");
            return None;
        }
        let socket = std::env::temp_dir().join(format!("pelt-tmux-{}", std::process::id()));
        let t = Tmux { socket };
        let (w, h) = (width.to_string(), height.to_string());
        let out = t.run(&[
            "new-session",
            "-d",
            "-s",
            "pelt",
            "-x",
            &w,
            "-y",
            &h,
            command,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(t)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .unwrap()
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "pelt"]).stdout).into()
    }

    /// Waits (at most 20 s) for the screen to satisfy `ok`; returns it.
    /// The screen must read the same twice, 100 ms apart: a capture taken
    /// while tmux is still applying a frame mixes two frames' characters.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let limit = Instant::now() + Duration::from_secs(20);
        let mut last = String::new();
        loop {
            let screen = self.screen();
            if ok(&screen) && screen == last {
                return screen;
            }
            last = screen.clone();
            assert!(Instant::now() < limit, "no {what} on the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The number after `before` on the screen (`12,345` read as 12345).
fn number_after(screen: &str, before: &str) -> Option<f64> {
    let rest = &screen[screen.find(before)? + before.len()..];
    let text: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
        .filter(|c| *c != ',')
        .collect();
    text.trim_end_matches('.').parse().ok()
}

/// The view's "at 12s: 12,000 completed" line: the second and the count.
fn so_far(screen: &str) -> Option<(u64, u64)> {
    let line = screen
        .lines()
        .find(|l| l.starts_with("at ") && l.contains("s: "))?;
    let at = number_after(line, "at ")? as u64;
    let completed = number_after(line, "s:")? as u64;
    Some((at, completed))
}

#[test]
fn the_terminal_view_shows_the_runs_figures_shrinks_and_stops_on_q() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-tui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, rc) = (dir.join("r.json"), dir.join("rc"));
    // The server runs in this test's process: --monitor names it.
    let command = format!(
        "{} {url} --rate 1000 -d 30s -c 8 --monitor {} --tui --json {}; echo $? > {}; sleep 30",
        env!("CARGO_BIN_EXE_pelt"),
        std::process::id(),
        json.display(),
        rc.display()
    );
    let Some(tmux) = Tmux::start(140, 40, &command) else {
        return;
    };
    // A few seconds in: the charts, the last second and the run so far.
    let screen = tmux.wait_for("third second", |s| so_far(s).is_some_and(|(at, _)| at >= 3));
    assert!(
        screen.contains("requests/s") && screen.contains("latency"),
        "{screen}"
    );
    assert!(screen.contains("q stop"), "{screen}");
    // Who was the bottleneck over the last seconds, and the server's CPU.
    assert!(
        screen.contains(&format!(
            "bottleneck (last {} s): ",
            pelt_stats::LIVE_WINDOW
        )),
        "{screen}"
    );
    assert!(
        screen.contains("server ") && screen.contains(" cores"),
        "{screen}"
    );
    let (at, shown_completed) = so_far(&screen).unwrap();
    let shown_rps = number_after(&screen, "last second:").unwrap();
    // Too small for the charts: the figures, one per line.
    tmux.run(&["resize-window", "-t", "pelt", "-x", "40", "-y", "12"]);
    let small = tmux.wait_for("reduced view", |s| s.contains("enlarge for charts"));
    assert!(
        small.contains("req/s") && small.contains("q: stop"),
        "{small}"
    );
    assert!(small.lines().all(|l| l.chars().count() <= 40), "{small}");
    tmux.run(&["send-keys", "-t", "pelt", "q"]);
    let limit = Instant::now() + Duration::from_secs(20);
    while !rc.exists() || std::fs::read_to_string(&rc).unwrap().trim().is_empty() {
        assert!(Instant::now() < limit, "q did not end the run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&rc).unwrap().trim(), "130");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        v["interrupted"], true,
        "q keeps the results, as Ctrl-C does"
    );
    // What the screen said is what the result says of those seconds.
    let points = v["timeline"].as_array().unwrap();
    let completed: u64 = points
        .iter()
        .filter(|p| p["second"].as_u64().unwrap() < at)
        .map(|p| p["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(shown_completed, completed, "{screen}");
    let last = points.iter().find(|p| p["second"] == at - 1).unwrap();
    assert_eq!(
        format!("{shown_rps:.1}"),
        format!("{:.1}", last["rps"].as_f64().unwrap()),
        "{screen}"
    );
}

#[test]
fn no_terminal_view_when_stdout_is_not_a_terminal() {
    let (_server, url) = serve(pelt_server::ServerConfig::default());
    let (out, _) = run(&[&url, "-n", "200", "-c", "2", "--tui"]);
    assert!(out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stdout.contains("Requests"),
        "the summary, as without --tui: {stdout}"
    );
    assert!(
        !stderr.contains('\x1b') && !stdout.contains('\x1b'),
        "no escape sequence: {stderr}"
    );
}
