//! End to end: the real pelt binary against real servers on 127.0.0.1, port 0.

mod util;

use pelt_server::ServerConfig;
use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;
use util::*;

#[test]
fn exact_request_count_matches_the_servers_own_count() {
    let (server, url) = serve(ServerConfig {
        threads: 2,
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "5000", "-c", "16", "-t", "2"]);
    assert_eq!(count(&v, &["requests", "sent"]), 5000);
    assert_eq!(count(&v, &["requests", "completed"]), 5000);
    assert_eq!(count(&v, &["status", "200"]), 5000);
    assert_eq!(count(&v, &["requests", "in_flight"]), 0);
    assert_eq!(v["stopped_by"], "requests");
    assert_eq!(server.stop(), 5000);
}

#[test]
fn fewer_requests_than_connections_is_still_exact() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "-n", "5", "-c", "64", "-t", "2"]);
    assert_eq!(count(&v, &["requests", "completed"]), 5);
    assert_eq!(server.stop(), 5);
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "-n", "300", "-c", "4", "--no-keepalive"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300);
    assert_eq!(count(&v, &["connections_opened"]), 300);
    assert_eq!(v["keep_alive"], false);
    assert_eq!(server.stop(), 300);
}

#[test]
fn server_that_closes_every_connection() {
    let (server, url) = serve(ServerConfig {
        close: true,
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "300", "-c", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    assert_eq!(count(&v, &["connections_opened"]), 300);
    assert_eq!(server.stop(), 300);
}

#[test]
fn server_errors_are_counted_by_status_not_as_errors() {
    let (server, url) = serve(ServerConfig {
        error_rate: 0.1,
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "1000", "-c", "4"]);
    assert_eq!(count(&v, &["status", "500"]), 100);
    assert_eq!(count(&v, &["status", "200"]), 900);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    assert_eq!(server.stop(), 1000);
}

#[test]
fn chunked_bodies_and_head_requests() {
    let (server, url) = serve(ServerConfig {
        chunked: true,
        body_size: 5000,
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "200", "-c", "4"]);
    assert_eq!(count(&v, &["status", "200"]), 200);
    let v = run_json(&[&url, "-n", "200", "-c", "4", "-m", "HEAD"]);
    assert_eq!(count(&v, &["status", "200"]), 200);
    assert_eq!(server.stop(), 400);
}

#[test]
fn bytes_are_counted_exactly_at_the_socket() {
    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let raw = RawServer::start(answer_each(RESPONSE));
    let url = raw.url();
    let v = run_json(&[
        &url,
        "-n",
        "1000",
        "-c",
        "8",
        "-m",
        "POST",
        "-b",
        "0123456789",
    ]);
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let request =
        format!("POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 10\r\n\r\n0123456789");
    assert_eq!(count(&v, &["requests", "completed"]), 1000);
    assert_eq!(count(&v, &["bytes", "sent"]), 1000 * request.len() as u64);
    assert_eq!(
        count(&v, &["bytes", "received"]),
        1000 * RESPONSE.len() as u64
    );
    assert_eq!(raw.accepted.load(Ordering::Relaxed), 8);
}

#[test]
fn default_request_is_what_wrk_sends() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let raw = RawServer::start(move |mut s| {
        let mut buf = [0u8; 1024];
        let n = std::io::Read::read(&mut s, &mut buf).unwrap_or(0);
        s2.lock().unwrap().extend_from_slice(&buf[..n]);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    });
    let v = run_json(&[&raw.url(), "-n", "1", "-c", "1"]);
    assert_eq!(count(&v, &["requests", "completed"]), 1);
    let expected = format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", raw.addr);
    assert_eq!(String::from_utf8_lossy(&seen.lock().unwrap()), expected);
}

#[test]
fn refused_port_counts_connect_errors_and_ends_on_time() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (out, took) = run(&[&url, "-d", "1s", "-c", "4", "--json", "-", "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert!(count(&v, &["errors", "refused"]) > 0, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 0);
    // With a backoff per connection the count stays far from a busy loop's millions.
    assert!(count(&v, &["errors", "refused"]) < 10_000, "{v}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The kind carries a hint the user can act on, in the JSON as in the summary.
    let hint = v["error_hints"]["refused"].as_str().unwrap_or_default();
    assert!(hint.contains("listening on that port"), "{v}");
}

#[test]
fn refused_port_with_a_request_count_ends() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let v = run_json(&[&url, "-n", "20", "-c", "4"]);
    assert_eq!(count(&v, &["errors", "refused"]), 20);
    assert!(
        v["error_examples"]["refused"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{v}"
    );
}

#[test]
fn server_that_never_answers_times_out() {
    let raw = RawServer::start(|mut s| {
        read_request(&mut s);
        std::thread::sleep(Duration::from_secs(5));
    });
    let (out, took) = run(&[
        &raw.url(),
        "-d",
        "1s",
        "-c",
        "2",
        "--timeout",
        "300ms",
        "--json",
        "-",
        "-q",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert!(count(&v, &["errors", "timeout"]) >= 2, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 0);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn server_closing_without_answering_is_a_closed_error() {
    let raw = RawServer::start(|mut s| {
        read_request(&mut s);
    });
    let v = run_json(&[&raw.url(), "-n", "50", "-c", "2"]);
    assert_eq!(count(&v, &["errors", "closed"]), 50);
}

#[test]
fn duration_and_count_stop_at_whichever_comes_first() {
    let (server, url) = serve(ServerConfig {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "1m", "-d", "500ms", "-c", "2"]);
    assert_eq!(v["stopped_by"], "duration");
    assert!(count(&v, &["requests", "sent"]) < 1_000_000);
    drop(server);
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[&url, "-n", "10", "-d", "30s", "-c", "2"]);
    assert_eq!(v["stopped_by"], "requests");
    assert_eq!(server.stop(), 10);
}

#[test]
fn summary_goes_to_stdout_and_json_to_a_file() {
    let (server, url) = serve(ServerConfig::default());
    let dir = std::env::temp_dir().join(format!("pelt-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("result.json");
    let (out, _) = run(&[
        &url,
        "-n",
        "100",
        "-c",
        "2",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Requests") && text.contains("Latency") && text.contains("200"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(count(&v, &["requests", "completed"]), 100);
    std::fs::remove_dir_all(&dir).unwrap();
    drop(server);
}

#[test]
fn csv_timeline_has_a_row_per_second_that_adds_up() {
    let (server, url) = serve(ServerConfig {
        error_rate: 0.25,
        ..Default::default()
    });
    let dir = std::env::temp_dir().join(format!("pelt-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("timeline.csv");
    let v = run_json(&[
        &url,
        "-d",
        "2500ms",
        "-c",
        "2",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[..4],
        ["second", "length_s", "warmup", "sent"],
        "{text}"
    );
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        v["timeline"].as_array().unwrap().len(),
        "{text}"
    );
    assert!(rows.len() >= 3, "{text}");
    let sum = |name: &str| -> u64 {
        rows.iter()
            .map(|r| r[col(name)].parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(
        sum("completed"),
        count(&v, &["requests", "completed"]),
        "{text}"
    );
    assert_eq!(sum("2xx") + sum("5xx"), sum("completed"), "{text}");
    assert_eq!(sum("5xx"), count(&v, &["status", "500"]), "{text}");
    // Both connections open at each second's end; no stages, no target.
    assert!(rows.iter().all(|r| r[col("connections")] == "2"), "{text}");
    assert!(rows.iter().all(|r| r[col("target")].is_empty()), "{text}");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), header.len(), "{text}");
        assert_eq!(r[0], k.to_string(), "{text}");
    }
    // '-' is not a CSV destination; a missing directory is caught before any traffic.
    for bad in ["-", "/nonexistent-dir/t.csv"] {
        let (out, _) = run(&[&url, "-n", "1", "--csv", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    drop(server);
}

#[test]
fn serve_binary_prints_its_address_and_count() {
    let mut serve = ServeProcess::start(&["--port", "0"]);
    let first = serve.line();
    let url = first
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{first}");
    let v = run_json(&[&format!("{url}/"), "-n", "100", "-c", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 100);
    assert_eq!(serve.stop(), "served 100 requests");
}

#[test]
fn result_matches_the_documented_schema() {
    let (server, url) = serve(ServerConfig {
        error_rate: 0.5,
        ..Default::default()
    });
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let ok = run_json(&[&url, "-n", "100", "-c", "2"]);
    let refused = run_json(&[
        &format!("http://127.0.0.1:{}/", closed_port()),
        "-n",
        "3",
        "-c",
        "1",
    ]);
    let open = run_json(&[
        &url, "--rate", "500", "-n", "50", "-c", "2", "--warmup", "200ms", "--expect", "p99<60s",
        "--expect", "5xx<=60%",
    ]);
    assert!(open["open_loop"].is_object() && open["warmup"].is_object());
    // Many requests, in random order: `request_set` filled in.
    let dir = std::env::temp_dir().join(format!("pelt-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET {url}a\n\nPOST {url}b\n")).unwrap();
    let many = run_json(&[
        "--targets",
        &targets.display().to_string(),
        "-n",
        "20",
        "-c",
        "2",
        "--order",
        "random",
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(many["request_set"]["order"], "random", "{many}");
    let names: Vec<&str> = many["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GET /a", "POST /b"], "{many}");
    let sent: u64 = many["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["sent"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, 20, "per-target counts add up: {many}");
    assert!(many["request_set"]["seed"].is_u64(), "{many}");
    let mut broken = ok.clone();
    broken.as_object_mut().unwrap().remove("requests");
    assert!(
        !validator.is_valid(&broken),
        "the schema accepts a result without requests"
    );
    // Stages: `stages` filled in, and each point's target.
    let staged = run_json(&[
        &url,
        "--rate",
        "0",
        "--stages",
        "0s:200,500ms:200",
        "-c",
        "2",
    ]);
    assert_eq!(staged["stages"]["of"], "rate", "{staged}");
    assert_eq!(staged["timeline"][0]["target"], 200.0, "{staged}");
    for v in [ok, refused, open, many, staged] {
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{v:#}");
    }
    drop(server);
}

#[test]
fn ctrl_c_stops_the_run_and_keeps_the_results() {
    let (server, url) = serve(ServerConfig::default());
    let child = pelt()
        .args([url.as_str(), "-d", "30s", "-c", "4", "--json", "-", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let (out, took) = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130));
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert_eq!(v["stopped_by"], "signal");
    assert_eq!(v["interrupted"], true);
    assert!(count(&v, &["requests", "completed"]) > 0, "{v}");
    drop(server);
}

#[test]
fn demo_runs_with_no_setup() {
    let (out, _) = run(&["demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Requests") && text.contains("Status       200"),
        "{text}"
    );
    assert!(text.contains("The built-in server answered"), "{text}");
    assert!(text.contains("pelt http://HOST:PORT/PATH"), "{text}");
    // One description of the run: the start line on stderr is the summary's first line and
    // what is to come, in the same words ("1 thread", not "1 threads").
    let stderr = String::from_utf8(out.stderr).unwrap();
    let start = stderr
        .lines()
        .find_map(|l| l.strip_prefix("pelt: "))
        .unwrap_or_else(|| panic!("no start line: {stderr}"));
    let title = text.lines().next().unwrap();
    assert!(
        title.contains("with 32 connections on 1 thread ("),
        "{title}"
    );
    assert_eq!(start, format!("{title}, for 3s"), "{stderr}");
}

/// What `recording_server` saw: each request's target and body, in order.
type Recorded = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// A server that records every request's target and body (read by its Content-Length, so a
/// wrong length shows), answering each with an empty 200.
fn recording_server() -> (RawServer, Recorded) {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let server = RawServer::start(move |mut s| {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            // One request: its head, then Content-Length bytes of body.
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let target = head.split(' ').nth(1).unwrap_or("").to_string();
            let len: usize = head
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < end + 4 + len {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
            record.lock().unwrap().push((target, body));
            buf.drain(..end + 4 + len);
            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .is_err()
            {
                return;
            }
        }
    });
    (server, seen)
}

/// `--bodies`: one body per line, sent in turn (request i sends line i mod N): over one
/// connection the server sees them in order, each exactly k times, with Content-Length right.
#[test]
fn bodies_are_sent_in_turn_each_exactly_k_times() {
    let (server, seen) = recording_server();
    let dir = std::env::temp_dir().join(format!("pelt-bodies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bodies.jsonl");
    std::fs::write(&file, "{\"id\":1}\n{\"id\":22}\n\n{\"id\":333}\n").unwrap();
    let url = server.url();
    let file_arg = file.display().to_string();
    for pipeline in ["1", "3"] {
        seen.lock().unwrap().clear();
        let v = run_json(&[
            &url,
            "--bodies",
            &file_arg,
            "-m",
            "POST",
            "-n",
            "12",
            "-c",
            "1",
            "-t",
            "1",
            "--pipeline",
            pipeline,
            "-H",
            "Content-Type: application/json",
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 12, "{v}");
        assert_eq!(v["request_set"]["entries"], 3, "{v}");
        assert_eq!(v["request_set"]["from"], "bodies", "{v}");
        let want: Vec<String> = (0..12)
            .map(|i| ["{\"id\":1}", "{\"id\":22}", "{\"id\":333}"][i % 3].to_string())
            .collect();
        let bodies: Vec<String> = seen.lock().unwrap().iter().map(|r| r.1.clone()).collect();
        assert_eq!(bodies, want, "pipeline {pipeline}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Templates: `{{seq}}` is unique and complete over two threads and four connections
/// (pipelined too); a body template gets its Content-Length per request; the same `--seed`
/// gives the same `{{rand}}` and `{{uuid}}` values; `{{line:FILE}}` takes the lines in turn.
#[test]
fn templates_render_per_request() {
    let (server, seen) = recording_server();
    let url = server.url();
    for pipeline in ["1", "4"] {
        seen.lock().unwrap().clear();
        let v = run_json(&[
            &format!("{url}u/{{{{seq}}}}?x=1"),
            "-n",
            "2000",
            "-c",
            "4",
            "-t",
            "2",
            "--pipeline",
            pipeline,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 2000, "{v}");
        assert_eq!(v["request_set"]["from"], "url", "{v}");
        let mut seqs: Vec<u64> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| t["/u/".len()..t.len() - "?x=1".len()].parse().unwrap())
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..2000).collect::<Vec<u64>>(), "pipeline {pipeline}");
    }
    let dir = std::env::temp_dir().join(format!("pelt-templates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let names = dir.join("names.txt");
    std::fs::write(&names, "ann\nbo\n\ncy\n").unwrap();
    let body = format!(
        "{{\"id\":{{{{seq}}}},\"r\":{{{{rand:1:1000}}}},\"u\":\"{{{{uuid}}}}\",\"n\":\"{{{{line:{}}}}}\"}}",
        names.display()
    );
    let run_once = |seed: &str| -> Vec<serde_json::Value> {
        seen.lock().unwrap().clear();
        let v = run_json(&[
            &url, "-m", "POST", "-b", &body, "-n", "30", "-c", "1", "-t", "1", "--seed", seed,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 30, "{v}");
        assert_eq!(
            v["request_set"]["seed"],
            seed.parse::<u64>().unwrap(),
            "{v}"
        );
        let bodies = seen.lock().unwrap().clone();
        bodies
            .iter()
            .map(|(_, b)| {
                serde_json::from_str(b).expect("the body is whole JSON: its length was right")
            })
            .collect()
    };
    let (a, b, c) = (run_once("7"), run_once("7"), run_once("8"));
    assert_eq!(a, b, "the same seed, the same values");
    assert_ne!(a, c, "another seed, other values");
    for (i, r) in a.iter().enumerate() {
        assert_eq!(r["id"], i as u64, "{r}");
        assert!((1..=1000).contains(&r["r"].as_u64().unwrap()), "{r}");
        assert_eq!(r["u"].as_str().unwrap().len(), 36, "{r}");
        assert_eq!(r["n"], ["ann", "bo", "cy"][i % 3], "{r}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--unix-socket`: against `pelt serve` on a Unix socket, HTTP/1.1 (pipelined too) and h2c,
/// on both backends: every request answered, and the server counted exactly as many.
#[test]
fn unix_socket_against_the_built_in_server() {
    let dir = std::env::temp_dir().join(format!("pelt-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pelt.sock");
    let server = pelt_server::Server::start(ServerConfig {
        unix_socket: Some(path.clone()),
        h2: true,
        ..Default::default()
    })
    .unwrap();
    let sock = path.display().to_string();
    let mut backends = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        backends.push("uring");
    }
    let mut total = 0;
    for io in backends {
        for extra in [
            &["-c", "4"][..],
            &["-c", "2", "--pipeline", "8"],
            &["-c", "2", "--http2", "--streams", "16"],
        ] {
            let mut args = vec![
                "http://localhost/x",
                "--unix-socket",
                &sock,
                "-n",
                "3000",
                "--io",
                io,
                "--json",
                "-",
                "-q",
            ];
            args.extend_from_slice(extra);
            // This test picks each backend itself (PELT_IO is not its business).
            let (out, _) = wait_bounded(spawn_any_backend(&args), CHILD_LIMIT);
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                count(&v, &["requests", "completed"]),
                3000,
                "{io} {extra:?}: {v}"
            );
            assert_eq!(count(&v, &["requests", "errors"]), 0, "{io} {extra:?}: {v}");
            assert_eq!(v["unix_socket"], sock.as_str(), "{v}");
            total += 3000;
        }
    }
    assert_eq!(server.stop(), total, "the server counted every request");
    assert!(
        !path.exists(),
        "the server removes its socket when it stops"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Time to first byte: a server that sends its head at once and its body 300 ms later. TTFB
/// is the head (well under the delay) and latency the body (at least the delay), overall, per
/// target, per second, in the CSV and for `--expect`; in open loop both count from the due
/// time. Bounds are loose: they say which side of the delay each lies, no more (290 ms: the
/// histograms' precision, two digits per target, rounds 300 ms down to 299).
#[test]
fn time_to_first_byte_is_the_head_and_latency_the_whole_response() {
    let raw = RawServer::start(|mut s| {
        while read_request(&mut s) {
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
            if s.write_all(head).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
            if s.write_all(b"OK").is_err() {
                return;
            }
        }
    });
    let url = raw.url();
    let dir = std::env::temp_dir().join(format!("pelt-ttfb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("GET {url}a\n\nGET {url}b\n")).unwrap();
    let csv = dir.join("seconds.csv");
    let v = run_json(&[
        "--targets",
        &targets.display().to_string(),
        "-n",
        "6",
        "-c",
        "2",
        "--expect",
        "ttfb.p99<250ms",
        "--expect",
        "p50>=290ms",
        "--csv",
        &csv.display().to_string(),
    ]);
    let us = |v: &serde_json::Value| v.as_u64().unwrap();
    assert_eq!(v["requests"]["completed"], 6, "{v}");
    assert!(us(&v["ttfb_us"]["p99"]) < 250_000, "{}", v["ttfb_us"]);
    assert!(
        us(&v["latency_us"]["p50"]) >= 290_000,
        "{}",
        v["latency_us"]
    );
    assert!(v["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["passed"] == true));
    assert!(v["histograms"]["ttfb_us"].is_string());
    for t in v["targets"].as_array().unwrap() {
        assert!(us(&t["ttfb_us"]["max"]) < 250_000, "{t}");
        assert!(us(&t["latency_us"]["min"]) >= 290_000, "{t}");
    }
    let seconds: Vec<&serde_json::Value> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| us(&p["completed"]) > 0)
        .collect();
    assert!(!seconds.is_empty());
    for p in seconds {
        assert!(us(&p["ttfb_us"]["max"]) < 250_000, "{p}");
        assert!(us(&p["latency_us"]["p50"]) >= 290_000, "{p}");
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = head
        .iter()
        .position(|c| *c == "ttfb_p99_us")
        .expect("a ttfb column");
    assert!(text
        .lines()
        .skip(1)
        .any(|l| !l.split(',').nth(col).unwrap().is_empty()));
    // A TTFB objective that does not hold fails the run (exit 3): the head is not that late.
    let (out, _) = run(&[
        &url,
        "-n",
        "2",
        "-c",
        "1",
        "-q",
        "--expect",
        "ttfb.p50>=250ms",
    ]);
    assert_eq!(out.status.code(), Some(3));
    // Open loop: both from the due time, so a request that waited for the one connection
    // counts its wait in both (no coordinated omission in either).
    let open = run_json(&[
        &url,
        "--rate",
        "10",
        "-n",
        "4",
        "-c",
        "1",
        "--max-connections",
        "1",
    ]);
    assert_eq!(open["latency_from"], "due");
    let (ttfb, lat) = (us(&open["ttfb_us"]["max"]), us(&open["latency_us"]["max"]));
    assert!(ttfb < lat && lat >= 290_000, "ttfb {ttfb}, latency {lat}");
    // The second and later requests queued behind a 300 ms response: their TTFB holds the wait.
    assert!(ttfb >= 200_000, "ttfb {ttfb}");
    std::fs::remove_dir_all(&dir).unwrap();
}
