//! `--replay`: a recording's requests sent at their recorded times, against nginx from Debian
//! (its access log, with `$msec`, is the server's own record of what came and when). Timings
//! are asserted only as ranges a loaded machine keeps.

mod util;

use util::real::{find_server, nginx_command, PythonApp, RealServer};
use util::*;

/// nginx answering 200 to everything, logging each request's time (`$msec`) and URI, and the
/// same requests in the combined format to `combined.log`.
fn nginx(bin: &std::path::Path) -> RealServer {
    let bin = bin.to_path_buf();
    RealServer::start("nginx-replay", 1, move |dir, ports| {
        let http = format!(
            "    log_format replay '$msec $request_method $request_uri';\n    \
             access_log {d}/access.log replay;\n    \
             access_log {d}/combined.log combined;\n    \
             server {{ listen 127.0.0.1:{}; location / {{ return 200 \"ok\"; }} }}\n",
            ports[0],
            d = dir.display(),
        );
        nginx_command(&bin, dir, &http)
    })
}

/// The access log's lines as (seconds, method, URI), waiting for `n` of them.
fn logged(server: &RealServer, n: usize) -> Vec<(f64, String, String)> {
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(&server.access_log).unwrap_or_default();
        let lines: Vec<(f64, String, String)> = text
            .lines()
            .map(|l| {
                let mut p = l.split(' ');
                let t = p.next().unwrap().parse().unwrap();
                (t, p.next().unwrap().into(), p.next().unwrap().into())
            })
            .collect();
        if lines.len() >= n || start.elapsed() > std::time::Duration::from_secs(5) {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A recording of `n` requests 100 ms apart (JSON lines, "t" in milliseconds), written a
/// little out of order (request 3 before request 2), with a POST among them.
fn recording(url: &str, n: usize, tag: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("pelt-replay-{}-{tag}.jsonl", std::process::id()));
    let mut lines: Vec<String> = (0..n)
        .map(|k| {
            let method = if k == 4 { "POST" } else { "GET" };
            format!(
                r#"{{"method": "{method}", "url": "{url}r{k}?q={k}", "body": "b{k}", "t": {}}}"#,
                1000 + 100 * k
            )
        })
        .collect();
    lines.swap(2, 3);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn a_recording_is_replayed_in_order_at_its_pace() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let n = 12;
    let mut sent = 0;
    // Read whole, and as the run goes (`feed.rs`).
    for (speed, span_s, read) in [
        ("1x", 1.1, "whole"),
        ("2x", 0.55, "whole"),
        ("1x", 1.1, "stream"),
        ("2x", 0.55, "stream"),
    ] {
        let server = nginx(&bin);
        let file = recording(&server.url("http", 0), n, &format!("{speed}-{read}"));
        let path = file.display().to_string();
        let v = run_json(&[
            "--targets",
            &path,
            "--replay",
            "--replay-speed",
            speed,
            "--targets-read",
            read,
            "-c",
            "2",
            "--max-connections",
            "4",
        ]);
        let _ = std::fs::remove_file(&file);
        assert_schema(&v);
        // A replay is an open loop: it takes the open loop's options.
        assert_eq!(v["max_connections"], 4, "{v}");
        // Exactly the recording: each request once, answered, and no more.
        assert_eq!(count(&v, &["requests", "completed"]), n as u64, "{v}");
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
        assert_eq!(v["latency_from"], "due", "{v}");
        let notes = v["notes"].to_string();
        assert!(
            notes.contains(&format!("replay of {n} recorded requests")),
            "{notes}"
        );
        assert_eq!(
            notes.contains("read as the run went"),
            read == "stream",
            "{notes}"
        );
        // The server saw them in the recording's time order, with their methods.
        let log = logged(&server, n);
        let uris: Vec<String> = log.iter().map(|(_, _, u)| u.clone()).collect();
        let expected: Vec<String> = (0..n).map(|k| format!("/r{k}?q={k}")).collect();
        assert_eq!(uris, expected, "{log:?}");
        assert_eq!(log[4].1, "POST");
        // Their span is the recording's over the speed (1.1 s, or 0.55 s at 2x), within what
        // a loaded machine keeps; nginx logs to the millisecond.
        let span = log[n - 1].0 - log[0].0;
        assert!(
            (span_s * 0.8..span_s * 1.5).contains(&span),
            "{speed}: {span} s, recorded {span_s} s: {log:?}"
        );
        sent += n;
    }
    assert_eq!(sent, 4 * n);
}

#[test]
fn a_looped_recording_runs_until_n() {
    let (_serve, url) = ServeProcess::listening(&["--port", "0"]);
    let file = recording(&format!("{url}/"), 5, "loop");
    let path = file.display().to_string();
    for read in ["whole", "stream"] {
        // 5 requests over 400 ms, a lap every 500 ms: 12 requests in three laps.
        let v = run_json(&[
            "--targets",
            &path,
            "--replay",
            "--replay-loop",
            "--replay-speed",
            "4x",
            "--targets-read",
            read,
            "-n",
            "12",
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 12, "{read}: {v}");
        // The nominal rate is the recording's mean: 5 requests a 500 ms lap, 4x.
        assert_eq!(v["rate"], 40.0, "{v}");
        // Sequential over the entries in time order: r0..r4, r0..r4, r0, r1.
        let targets = v["targets"].as_array().unwrap();
        let sent = |name: &str| {
            targets
                .iter()
                .find(|t| t["name"] == name)
                .map_or(0, |t| t["sent"].as_u64().unwrap())
        };
        assert_eq!(
            (
                sent("GET /r0"),
                sent("GET /r1"),
                sent("GET /r3"),
                sent("POST /r4")
            ),
            (3, 3, 2, 2),
            "{read}: {targets:?}"
        );
    }
    let _ = std::fs::remove_file(&file);
}

/// A streamed recording goes through the engine's look-ahead (262,144 requests) and back, its
/// blocks reused: 1,000 entries in 300 laps send each entry exactly 300 times, the HEAD ones
/// answered without a body.
#[test]
fn a_streamed_recording_longer_than_the_look_ahead_is_sent_exactly() {
    let (_serve, url) = ServeProcess::listening(&["--port", "0"]);
    let path = std::env::temp_dir().join(format!("pelt-replay-{}-long.jsonl", std::process::id()));
    let text: String = (0..1000)
        .map(|k| {
            let method = if k % 4 == 0 { "HEAD" } else { "GET" };
            format!(
                "{{\"method\": \"{method}\", \"url\": \"{url}/r{}?k={k}\", \"t\": {}}}\n",
                k % 5,
                k
            )
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let file = path.display().to_string();
    // Laps of 1 s at 1000x: as fast as pelt goes.
    let v = run_json(&[
        "--targets",
        &file,
        "--replay",
        "--targets-read",
        "stream",
        "--replay-loop",
        "--replay-speed",
        "1000x",
        "-n",
        "300000",
        "-c",
        "16",
        "-t",
        "2",
    ]);
    let _ = std::fs::remove_file(&path);
    assert_schema(&v);
    assert_eq!(count(&v, &["requests", "completed"]), 300_000, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    let targets = v["targets"].as_array().unwrap();
    let sent: std::collections::BTreeMap<String, u64> = targets
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["sent"].as_u64().unwrap(),
            )
        })
        .collect();
    // k % 5 names the path, k % 4 == 0 makes it HEAD: per lap, 50 HEAD and 150 GET of each.
    for r in 0..5 {
        assert_eq!(sent[&format!("HEAD /r{r}")], 50 * 300, "{sent:?}");
        assert_eq!(sent[&format!("GET /r{r}")], 150 * 300, "{sent:?}");
    }
}

/// The issue's round trip: nginx logs a run of known requests; pelt replays that log (nginx's
/// own format, with `$msec`) against a second nginx at 1x and 2x, whose log then holds the
/// same requests in the same order, spread as the first's over the speed.
#[test]
fn an_nginx_access_log_replays_against_a_second_nginx() {
    let Some(bin) = find_server(
        "nginx",
        "nginx-light",
        &["/usr/bin/nginx", "/usr/sbin/nginx"],
    ) else {
        return;
    };
    let n = 10;
    let first = nginx(&bin);
    let file = recording(&first.url("http", 0), n, "first");
    let path = file.display().to_string();
    run_json(&["--targets", &path, "--replay", "-c", "2"]);
    let _ = std::fs::remove_file(&file);
    let original = logged(&first, n);
    assert_eq!(original.len(), n, "{original:?}");
    let span = original[n - 1].0 - original[0].0;
    let log = first.access_log.display().to_string();
    for (speed, factor) in [("1x", 1.0), ("2x", 0.5)] {
        let second = nginx(&bin);
        let v = run_json(&[
            &second.url("http", 0),
            "--targets",
            &log,
            "--targets-format",
            "nginx",
            "--log-format",
            "$msec $request_method $request_uri",
            "--replay",
            "--replay-speed",
            speed,
            "-c",
            "2",
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), n as u64, "{v}");
        assert_eq!(v["replay"]["recorded"], n, "{v}");
        let replayed = logged(&second, n);
        assert_eq!(requests_of(&replayed), requests_of(&original));
        let again = replayed[n - 1].0 - replayed[0].0;
        assert!(
            (span * factor * 0.8..span * factor * 1.5).contains(&again),
            "{speed}: {again} s against {span} s recorded"
        );
    }
    // The combined format, nginx's default (times to the second): the same requests, in order.
    let combined = first.dir.join("combined.log").display().to_string();
    let second = nginx(&bin);
    let v = run_json(&[
        &second.url("http", 0),
        "--targets",
        &combined,
        "--targets-format",
        "nginx",
        "--replay",
        "--replay-speed",
        "1000x",
        // Due together (the same second): one connection keeps them in order.
        "-c",
        "1",
        "-t",
        "1",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), n as u64, "{v}");
    assert_eq!(requests_of(&logged(&second, n)), requests_of(&original));
}

fn requests_of(l: &[(f64, String, String)]) -> Vec<(String, String)> {
    l.iter().map(|(_, m, u)| (m.clone(), u.clone())).collect()
}

/// A request as site_app.py logged it: (method, path with query, body).
fn site_log(app: &PythonApp, host: &str) -> Vec<(String, String, String)> {
    let v = app.get("/__log");
    let mut list: Vec<(String, String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["host"].as_str().unwrap().starts_with(host))
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("method"), s("path"), s("body"))
        })
        .collect();
    // The browser fetches some in parallel: compared as sets.
    list.sort();
    list
}

/// The issue's browser test: headless Chromium loads a page of a local site (a JSON POST, a
/// GET with a query, a form POST, an image from another origin) and records it as a HAR; pelt
/// replays the HAR against a second server, which then gets the same requests, with their
/// methods, paths and bodies; the other origin's entry is skipped and counted, and the HAR's
/// own times are the recorded latencies beside the replayed ones.
#[test]
fn a_browsers_har_replays_with_its_methods_paths_and_bodies() {
    let Some(site) = PythonApp::start("site_app.py") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("pelt-har-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let har = dir.join("page.har");
    let page = format!("http://127.0.0.1:{}/", site.port);
    if util::browser("record_har.mjs", &[page.as_ref(), har.as_os_str()]).is_none() {
        return;
    }
    let recorded = site_log(&site, "127.0.0.1:");
    let methods: Vec<&str> = recorded.iter().map(|r| r.0.as_str()).collect();
    assert!(methods.contains(&"POST"), "{recorded:?}");
    assert!(
        recorded.contains(&(
            "POST".into(),
            "/api/save".into(),
            r#"{"item":42,"note":"from the page"}"#.into()
        )),
        "{recorded:?}"
    );

    let Some(second) = PythonApp::start("site_app.py") else {
        return;
    };
    let to = format!("http://127.0.0.1:{}/", second.port);
    // The format is told by the file (auto); the URL is where the requests go. One run
    // writes the JSON, the HTML report and the text summary.
    let (json, html) = (dir.join("result.json"), dir.join("report.html"));
    let out = pelt()
        .args([
            &to,
            "--targets",
            har.to_str().unwrap(),
            "--replay",
            "-c",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_schema(&v);
    let replayed = site_log(&second, "127.0.0.1:");
    assert_eq!(replayed, recorded);
    assert_eq!(
        count(&v, &["requests", "completed"]),
        recorded.len() as u64,
        "{v}"
    );
    // The image on localhost: one entry on another origin, skipped and said.
    let skipped = &v["request_set"]["skipped"];
    assert_eq!(skipped["other_origins"], 1, "{v}");
    assert_eq!(skipped["origin"], page.trim_end_matches('/'), "{v}");
    assert_eq!(skipped["bad_lines"], 0, "{v}");
    // The HAR's times: each target's recorded latencies beside its replayed ones.
    let targets = v["targets"].as_array().unwrap();
    let save = targets
        .iter()
        .find(|t| t["name"] == "POST /api/save")
        .unwrap_or_else(|| panic!("{targets:?}"));
    assert!(count(save, &["recorded_us", "max"]) > 0, "{save}");
    assert_eq!(save["completed"], 1, "{save}");

    // The text summary says what was skipped, and shows the recorded latencies; so does the
    // HTML report's targets table.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "skipped: 1 on other origins than {}",
            page.trim_end_matches('/')
        )),
        "{text}"
    );
    assert!(text.contains("recorded p50/p99"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    let table = &page[page.find("<h2>Targets</h2>").expect("a targets table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(
        table.contains("<th class=\"n\">recorded p99</th>"),
        "{table}"
    );
    let save_row = table
        .lines()
        .find(|l| l.contains("<td>POST /api/save</td>"))
        .unwrap_or_else(|| panic!("{table}"));
    // Ten cells, the last two the recorded p50 and p99 (a latency, not empty).
    assert_eq!(save_row.matches("<td").count(), 10, "{save_row}");
    assert!(
        !save_row.ends_with("<td class=\"n\"></td></tr>"),
        "{save_row}"
    );
    // The chart draws them beside the replayed ones, as a reader sees it in a browser.
    assert!(page.contains("recorded beside replayed"), "{page}");
    if let Some(seen) = browser_check(&html, &dir.join("report.png")) {
        assert_eq!(seen["problems"], serde_json::json!([]), "{seen}");
        let charts = seen["charts"].as_array().unwrap();
        let chart = charts
            .iter()
            .find(|c| c["id"] == "chart-targets")
            .unwrap_or_else(|| panic!("{seen}"));
        let labels: Vec<&str> = chart["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["label"].as_str().unwrap())
            .collect();
        assert_eq!(
            labels,
            ["p50", "p99", "recorded p50", "recorded p99"],
            "{chart}"
        );
        assert!(count(chart, &["painted"]) > 0, "{chart}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--skip-bad-lines`: the lines that do not parse are counted and skipped, the first named;
/// the rest run.
#[test]
fn bad_lines_are_skipped_and_counted_when_asked() {
    let (_serve, url) = ServeProcess::listening(&["--port", "0"]);
    let path = std::env::temp_dir().join(format!("pelt-skip-{}.jsonl", std::process::id()));
    let text = format!(
        "{{\"url\": \"{url}/a\", \"t\": 0}}\nnot json\n{{\"url\": \"{url}/b\", \"t\": 10}}\n\
         {{\"url\": \"{url}/c\", \"t\": \"then\"}}\n"
    );
    std::fs::write(&path, text).unwrap();
    let file = path.display().to_string();
    for read in ["whole", "stream"] {
        let v = run_json(&[
            "--targets",
            &file,
            "--replay",
            "--skip-bad-lines",
            "--targets-read",
            read,
        ]);
        assert_schema(&v);
        assert_eq!(count(&v, &["requests", "completed"]), 2, "{read}: {v}");
        let skipped = &v["request_set"]["skipped"];
        assert_eq!(skipped["bad_lines"], 2, "{read}: {v}");
        assert_eq!(skipped["other_origins"], 0, "{v}");
        let first = skipped["first_bad"].as_str().unwrap();
        assert!(
            first.starts_with(&format!("--targets {file} line 2: ")),
            "{first}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

/// Plain `--targets` (no `--replay`) read as the run goes, closed loop and open: `-n` sends
/// the file's first n requests over laps, each exactly once, as the whole read does, by the
/// server's own log (nginx's). 10,000 requests over a 3,000-line file are three blocks of the
/// reader's, dealt to two workers (closed loop) or shared by them (open loop).
#[test]
fn a_targets_file_read_as_the_run_goes_sends_its_first_n_requests() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let (lines, n) = (3000usize, 10_000usize);
    let method = |k: usize| if k % 9 == 4 { "HEAD" } else { "GET" };
    let mut want: Vec<(String, String)> = (0..n)
        .map(|i| (method(i % lines).to_string(), format!("/t{}", i % lines)))
        .collect();
    want.sort();
    for (load, read) in [
        ("closed", "stream"),
        ("closed", "whole"),
        ("open", "stream"),
    ] {
        let server = nginx(&bin);
        let url = server.url("http", 0);
        let path = std::env::temp_dir().join(format!(
            "pelt-targets-stream-{}-{load}-{read}.jsonl",
            std::process::id()
        ));
        let text: String = (0..lines)
            .map(|k| {
                format!(
                    "{{\"method\": \"{}\", \"url\": \"{url}t{k}\", \"name\": \"n{}\"}}\n",
                    method(k),
                    k % 4
                )
            })
            .collect();
        std::fs::write(&path, text).unwrap();
        let file = path.display().to_string();
        let n_text = n.to_string();
        let mut args = vec![
            "--targets",
            &file,
            "--targets-read",
            read,
            "-n",
            &n_text,
            "-c",
            "8",
            "-t",
            "2",
        ];
        if load == "open" {
            args.extend(["--rate", "20000"]);
        }
        let v = run_json(&args);
        assert_schema(&v);
        assert_eq!(
            count(&v, &["requests", "completed"]),
            n as u64,
            "{load} {read}: {v}"
        );
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{load} {read}: {v}");
        // By name: n0 is lines 0, 4, 8, ... of each lap.
        let by_name: Vec<(String, u64)> = v["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    count(t, &["completed"]),
                )
            })
            .collect();
        for (name, got) in &by_name {
            let r: usize = name[1..].parse().unwrap();
            let expect = (0..n).filter(|i| (i % lines) % 4 == r).count() as u64;
            assert_eq!(*got, expect, "{load} {read}: {name} in {by_name:?}");
        }
        let notes = v["notes"].to_string();
        assert_eq!(
            notes.contains("the targets file was read as the run went"),
            read == "stream",
            "{load} {read}: {notes}"
        );
        let mut got: Vec<(String, String)> = logged(&server, n)
            .into_iter()
            .map(|(_, m, uri)| (m, uri))
            .collect();
        got.sort();
        assert_eq!(got.len(), n, "{load} {read}");
        assert!(
            got == want,
            "{load} {read}: the server's log is not the file's first {n}"
        );
        let _ = std::fs::remove_file(&path);
    }
}
