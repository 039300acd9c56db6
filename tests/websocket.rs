//! WebSocket runs (ws://, wss://) end to end: against `pelt serve --ws` (echo and push),
//! against the Python websockets library's server (a server pelt did not write, with its own
//! counts of sockets and messages), over TLS, and merged. Counts are asserted exactly; no
//! timing is.

mod util;

use std::time::{Duration, Instant};
use util::real::PythonApp;
use util::*;

/// The `websocket` section of a result.
fn ws(v: &serde_json::Value) -> &serde_json::Value {
    v.get("websocket")
        .unwrap_or_else(|| panic!("no websocket section: {v}"))
}

/// Every message sent was answered, but those still on their way when the run's duration
/// ended (in flight, at most one a socket).
fn assert_answered(v: &serde_json::Value, sockets: u64) {
    let q = |k: &str| count(v, &["requests", k]);
    assert_eq!(q("errors"), 0, "{v}");
    assert_eq!(q("completed") + q("in_flight"), q("sent"), "{v}");
    assert!(q("in_flight") <= sockets, "{v}");
}

/// `http://127.0.0.1:PORT/` as `ws://127.0.0.1:PORT/PATH`.
fn ws_url(http: &str, path: &str) -> String {
    let rest = http.strip_prefix("http").unwrap();
    format!("ws{}{path}", rest.trim_end_matches('/').to_string() + "/")
}

#[test]
fn echoes_are_counted_exactly_against_pelt_serve() {
    let (serve, url) = ServeProcess::listening(&["--port", "0", "--ws", "--threads", "1"]);
    let url = ws_url(&url, "echo");
    // Closed loop: exactly -n messages, each answered.
    let csv = std::env::temp_dir().join(format!("pelt-ws-{}.csv", std::process::id()));
    let path = csv.display().to_string();
    let v = run_json(&[
        &url, "-b", "hello", "-n", "1000", "-c", "10", "--csv", &path,
    ]);
    assert_schema(&v);
    let w = ws(&v);
    // Each second's counts, in the timeline and in --csv, add up to the section's.
    let timeline = v["timeline"].as_array().unwrap();
    for key in ["upgrades", "messages_received", "received_bytes"] {
        let sum: u64 = timeline
            .iter()
            .map(|p| count(&p["websocket"], &[key]))
            .sum();
        assert_eq!(sum, count(w, &[key]), "{key}: {timeline:?}");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let (up, got) = (col("ws_upgrades"), col("ws_messages_received"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == head.len()), "{text}");
    let sum = |c: usize| {
        rows.iter()
            .map(|r| r[c].parse::<u64>().unwrap())
            .sum::<u64>()
    };
    assert_eq!((sum(up), sum(got)), (10, 1000), "{text}");
    assert_eq!(count(&v, &["requests", "completed"]), 1000, "{v}");
    assert_eq!(count(&v, &["status", "101"]), 1000, "{v}");
    assert_eq!(count(w, &["upgrades"]), 10, "{w}");
    assert_eq!(count(w, &["messages_received"]), 1000, "{w}");
    assert_eq!(count(w, &["received_bytes"]), 5000, "{w}");
    assert_eq!(count(w, &["pushed"]), 0, "{w}");
    assert_eq!(count(w, &["held"]), 10, "{w}");
    // Open loop: every message due is sent, and latency counts from its due time.
    let v = run_json(&[&url, "-b", "hi", "--rate", "500", "-d", "1s", "-c", "4"]);
    assert_eq!(v["latency_from"], "due");
    let sent = count(&v, &["requests", "sent"]);
    let answered = count(&v, &["requests", "completed"]);
    assert_answered(&v, 4);
    assert!((450..=510).contains(&sent), "{sent}");
    // Binary frames, and a message of 100 KiB in one frame each way.
    let big = "x".repeat(100 * 1024);
    let v = run_json(&[&url, "-b", &big, "--ws-binary", "-n", "20", "-c", "2"]);
    assert_eq!(count(ws(&v), &["received_bytes"]), 20 * 100 * 1024);
    let said = serve.stop_lines();
    let last = said.last().unwrap();
    let figures: Vec<u64> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(last.starts_with("websocket: "), "{said:?}");
    // Every message pelt wrote reached the server; the server echoed every one pelt counts as
    // answered, and the few in flight when pelt closed its sockets may have found them closed.
    assert_eq!(figures[..2], [10 + 4 + 2, 1020 + sent], "{last}");
    assert!(
        (1020 + answered..=1020 + sent).contains(&figures[2]),
        "{last}: answered {answered} sent {sent}"
    );
}

#[test]
fn held_sockets_are_the_servers_open_sockets() {
    let Some(app) = PythonApp::start("ws_app.py") else {
        return;
    };
    let url = format!("ws://127.0.0.1:{}/echo", app.port);
    let child = spawn(&[
        &url,
        "-c",
        "200",
        "-d",
        "3s",
        "--connect-rate",
        "2000",
        "--ws-ping",
        "500ms",
        "--json",
        "-",
        "-q",
    ]);
    // The server's own count, while pelt holds them: every socket pelt opened is open there.
    let start = Instant::now();
    let mut open = 0;
    while start.elapsed() < Duration::from_secs(3) {
        open = count(&app.counts(), &["open"]);
        if open == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(open, 200);
    let (out, _) = wait_bounded(child, CHILD_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    let w = ws(&v);
    assert_eq!(count(w, &["upgrades"]), 200, "{w}");
    assert_eq!(count(w, &["held"]), 200, "{w}");
    assert_eq!(count(w, &["drops"]), 0, "{w}");
    assert_eq!(count(&v, &["requests", "sent"]), 0, "{v}");
    // Pings every 500 ms for about 3 s on each socket, each answered (the last ones may be
    // on their way at the end).
    let (pings, pongs) = (count(w, &["pings_sent"]), count(w, &["pongs"]));
    assert!(
        pings >= 200 * 4 && pongs + 200 >= pings && pongs <= pings,
        "{w}"
    );
    // pelt closed them all with a close frame at the end: the server saw them go.
    let start = Instant::now();
    while count(&app.counts(), &["open"]) > 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = app.counts();
    assert_eq!(
        (count(&c, &["upgrades"]), count(&c, &["open"])),
        (200, 0),
        "{c}"
    );
}

#[test]
fn a_real_echo_server_counts_what_pelt_counts() {
    let Some(app) = PythonApp::start("ws_app.py") else {
        return;
    };
    let url = format!("ws://127.0.0.1:{}/echo", app.port);
    // A template renders per message: 3,000 messages, 3,000 different ones.
    let v = run_json(&[&url, "-b", "m{{seq}}", "-n", "3000", "-c", "30"]);
    let w = ws(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 3000, "{v}");
    assert_eq!(count(w, &["messages_received"]), 3000, "{w}");
    assert_eq!(count(&app.counts(), &["distinct"]), 3000);
    let v2 = run_json(&[&url, "-b", "m1", "--rate", "1000", "-d", "1s", "-c", "8"]);
    let sent = count(&v2, &["requests", "sent"]);
    let answered = count(&v2, &["requests", "completed"]);
    assert_answered(&v2, 8);
    // The last messages may still be on their way through the server when pelt is done.
    let start = Instant::now();
    while count(&app.counts(), &["received"]) < 3000 + sent
        && start.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = app.counts();
    assert_eq!(count(&c, &["received"]), 3000 + sent, "{c}");
    // The server echoed every message pelt counts as answered; those still in flight when the
    // run ended may have found their socket closed by pelt's close frame (the server's send
    // then fails and is not counted).
    let echoed = count(&c, &["sent"]);
    assert!(
        (3000 + answered..=3000 + sent).contains(&echoed),
        "{c} answered {answered} sent {sent}"
    );
    assert_eq!(count(&c, &["upgrades"]), 38, "{c}");
    // --bodies: each line a message, in turn: 3 new ones among 300.
    let bodies = std::env::temp_dir().join(format!("pelt-ws-bodies-{}", std::process::id()));
    std::fs::write(&bodies, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n").unwrap();
    let file = bodies.display().to_string();
    let v = run_json(&[&url, "--bodies", &file, "-n", "300", "-c", "3"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300, "{v}");
    let c = app.counts();
    assert_eq!(count(&c, &["received"]), 3300 + sent, "{c}");
    assert_eq!(count(&c, &["distinct"]), 3000 + 3, "{c}");
    let _ = std::fs::remove_file(&bodies);
    // A subprotocol the server takes is accepted; the server then says which.
    let chat = format!("ws://127.0.0.1:{}/chat", app.port);
    let v = run_json(&[
        &chat,
        "--ws-protocol",
        "v2.chat, chat",
        "-b",
        "x",
        "-n",
        "5",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 5);
}

#[test]
fn pushed_messages_are_counted_apart_from_replies() {
    for (args, path) in [
        (vec!["--port", "0", "--ws", "--ws-push", "10ms"], None),
        (vec![], Some("push")),
    ] {
        let (serve, app, url);
        if let Some(path) = path {
            let Some(a) = PythonApp::start("ws_app.py") else {
                return;
            };
            url = format!("ws://127.0.0.1:{}/{path}", a.port);
            (serve, app) = (None, Some(a));
        } else {
            let (s, u) = ServeProcess::listening(&args);
            url = ws_url(&u, "");
            (serve, app) = (Some(s), None);
        }
        let (out, _) = run(&[
            &url,
            "-c",
            "5",
            "-d",
            "1s",
            "--json",
            "-",
            "-q",
            "--expect",
            "upgrade.p99<30s",
            "--expect",
            "ws_held>=5",
            "--expect",
            "ws_drops<1",
            "--expect",
            "ws_held>5",
        ]);
        // Every threshold holds but the last: exit 3.
        assert_eq!(out.status.code(), Some(3));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(thresholds_held(&v), [true, true, true, false]);
        let w = ws(&v);
        let (pushed, received) = (count(w, &["pushed"]), count(w, &["messages_received"]));
        // A tick every 10 ms on 5 sockets for a second: hundreds, all of them pushes.
        assert!(pushed > 100 && pushed == received, "{w}");
        assert_eq!(count(&v, &["requests", "sent"]), 0);
        if let Some(app) = app {
            // What pelt read is at most what the server sent (a tick may be on its way).
            let sent = count(&app.counts(), &["sent"]);
            assert!(received <= sent && sent <= received + 5 * 5, "{sent} {w}");
        }
        drop(serve);
    }
}

#[test]
fn messages_without_replies_are_done_when_written() {
    let Some(app) = PythonApp::start("ws_app.py") else {
        return;
    };
    // /push answers nothing; it sends a tick every 10 ms whatever comes.
    let url = format!("ws://127.0.0.1:{}/push", app.port);
    let v = run_json(&[
        &url,
        "-b",
        "m",
        "--ws-no-reply",
        "--rate",
        "300",
        "-d",
        "1s",
        "-c",
        "3",
    ]);
    let sent = count(&v, &["requests", "sent"]);
    assert_answered(&v, 3);
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    let w = ws(&v);
    assert_eq!(
        count(w, &["pushed"]),
        count(w, &["messages_received"]),
        "{w}"
    );
    // Every message pelt wrote reached the server.
    let start = Instant::now();
    while count(&app.counts(), &["received"]) < sent && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(&app.counts(), &["received"]), sent);
}

#[test]
fn wss_upgrades_over_tls() {
    let (serve, url) = ServeProcess::listening(&["--port", "0", "--ws", "--tls"]);
    let url = url.replace("https://", "wss://");
    let v = run_json(&[&url, "--insecure", "-b", "secret", "-n", "200", "-c", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 200, "{v}");
    assert_eq!(count(ws(&v), &["upgrades"]), 4);
    assert_eq!(v["tls"]["insecure"], true);
    let said = serve.stop_lines();
    let last = said.last().unwrap();
    assert!(
        last.starts_with("websocket: 4 upgrades, 200 messages"),
        "{said:?}"
    );
}

#[test]
fn merged_results_add_their_websocket_figures() {
    let (_serve, url) = ServeProcess::listening(&["--port", "0", "--ws"]);
    let url = ws_url(&url, "");
    let dir = std::env::temp_dir().join(format!("pelt-ws-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let parts: Vec<String> = (0..2)
        .map(|i| {
            let path = dir.join(format!("{i}.json")).display().to_string();
            let n = ["300", "500"][i];
            let (out, _) = run(&[&url, "-b", "m", "-n", n, "-c", "3", "--json", &path, "-q"]);
            assert!(out.status.success());
            path
        })
        .collect();
    let html = dir.join("merged.html").display().to_string();
    let (out, _) = run(&[
        "merge", &parts[0], &parts[1], "--json", "-", "--html", &html,
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = ws(&v);
    assert_eq!(count(w, &["messages_received"]), 800, "{w}");
    assert_eq!(count(w, &["upgrades"]), 6, "{w}");
    // The upgrade figures come from the merged histogram: its max is the parts' max.
    let max = parts
        .iter()
        .map(|p| {
            let part: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            count(ws(&part), &["upgrade_us", "max"])
        })
        .max();
    assert!(max.unwrap() > 0, "{w}");
    assert_eq!(Some(count(w, &["upgrade_us", "max"])), max, "{w}");
    // The HTML report has the section, with the merged counts.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>WebSocket</h2>"), "no WebSocket section");
    assert!(page.contains("<tr><td>messages received</td><td class=\"n\">800</td></tr>"));
    let _ = std::fs::remove_dir_all(&dir);
}
