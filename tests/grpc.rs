//! gRPC runs (grpc://) end to end against servers pelt did not write: Python's grpcio
//! (tests/interop/grpc_app.py, with its own count of the calls it ended by method and status),
//! directly and through nginx's grpc_pass. Counts are asserted exactly, per status; no timing
//! is.

mod util;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use util::h2::*;
use util::real::{certificates, find_server, nginx_command, PythonApp, RealServer};
use util::shop::target;
use util::*;

const PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/greeter.proto");

/// The `grpc` section of a result.
fn grpc(v: &serde_json::Value) -> &serde_json::Value {
    v.get("grpc")
        .unwrap_or_else(|| panic!("no grpc section: {v}"))
}

/// The calls grpcio ended, by "Method STATUS".
fn server_calls(app: &PythonApp) -> serde_json::Value {
    app.counts()["calls"].clone()
}

fn call_url(port: u16, method: &str) -> String {
    format!("grpc://127.0.0.1:{port}/pelt.test.Greeter/{method}")
}

fn grpc_port(app: &PythonApp) -> u16 {
    app.counts()["grpc_port"].as_u64().unwrap() as u16
}

/// grpc_app.py started, and its gRPC port; `None` (skipped, outside CI) without the venv.
fn grpcio() -> Option<(PythonApp, u16)> {
    let app = PythonApp::start("grpc_app.py")?;
    let port = grpc_port(&app);
    Some((app, port))
}

#[test]
fn grpcio_calls_are_counted_by_status_exactly() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    let url = call_url(port, "SayHello");
    // Every third "flaky" call is UNAVAILABLE: 100 of 300.
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "flaky"}"#,
        "-n",
        "300",
        "-c",
        "3",
        "--streams",
        "4",
    ]);
    assert_invariant(&v);
    assert_schema(&v);
    let g = grpc(&v);
    assert_eq!(count(g, &["calls"]), 300, "{g}");
    assert_eq!(count(g, &["status", "OK"]), 200, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 100, "{g}");
    assert_eq!(g["messages"]["UNAVAILABLE"], "backend down: flaky");
    assert_eq!(count(g, &["messages_received"]), 200);
    // Second by second, the calls add up to the section's.
    let seconds = v["timeline"].as_array().unwrap();
    let sum = |k: &str| -> u64 {
        seconds
            .iter()
            .map(|p| p["grpc"][k].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!((sum("calls"), sum("ok")), (300, 200), "{seconds:?}");
    // Each call is a response with its HTTP status; a gRPC status is not an HTTP error.
    assert_eq!(count(&v, &["status", "200"]), 300);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    assert_eq!(v["target"], url);
    let calls = server_calls(&app);
    assert_eq!(
        (
            count(&calls, &["SayHello OK"]),
            count(&calls, &["SayHello UNAVAILABLE"])
        ),
        (200, 100),
        "{calls}"
    );

    // The open loop: latency from each call's due time, counts still exact; and a threshold
    // on a status's share, which the flaky third breaks.
    let (out, _) = run(&[
        &url,
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "flaky"}"#,
        "--rate",
        "300",
        "-n",
        "90",
        "-c",
        "2",
        "--expect",
        "status[UNAVAILABLE]<1%",
        "--expect",
        "status[ok]>=60%",
        "--json",
        "-",
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["latency_from"], "due");
    assert_eq!(count(grpc(&v), &["calls"]), 90);
    assert_eq!(thresholds_held(&v), vec![false, true]);
    let calls = server_calls(&app);
    assert_eq!(count(&calls, &["SayHello OK"]), 260, "{calls}");
    assert_eq!(count(&calls, &["SayHello UNAVAILABLE"]), 130, "{calls}");
}

#[test]
fn grpcio_server_streams_and_limits() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    // Server streaming: every message of every call is read (5 a call).
    let v = run_json(&[
        &call_url(port, "SayHellos"),
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "count:5"}"#,
        "-n",
        "40",
        "-c",
        "2",
        "--streams",
        "4",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 40, "{g}");
    assert_eq!(count(g, &["messages_received"]), 200, "{g}");
    // Each message is timed as a stream's event: time to the first, the gaps.
    let s = &v["event_streams"];
    assert_eq!(
        (count(s, &["streams"]), count(s, &["events"])),
        (40, 200),
        "{s}"
    );
    assert_eq!(count(s, &["events_per_stream", "min"]), 5, "{s}");
    assert_eq!(
        count(&server_calls(&app), &["SayHellos OK"]),
        40,
        "{}",
        app.counts()
    );
    // --stream-limit cuts each call at its third message: CANCELLED, as a client that
    // cancels sees it, and the server saw each call cancelled.
    let v = run_json(&[
        &call_url(port, "SayHellos"),
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "count:50"}"#,
        "-n",
        "10",
        "-c",
        "2",
        "--stream-limit",
        "3",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "CANCELLED"]), 10, "{g}");
    assert_eq!(
        g["messages"]["CANCELLED"],
        "pelt: the stream reached --stream-limit"
    );
    let s = &v["event_streams"];
    assert_eq!((count(s, &["cut"]), count(s, &["events"])), (10, 30), "{s}");
    let cancelled = || count(&server_calls(&app), &["SayHellos CANCELLED"]);
    let waited = std::time::Instant::now();
    while cancelled() < 10 && waited.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(cancelled(), 10, "{}", app.counts());
    // --bodies: one message a line, each framed once, sent in turn.
    let dir = std::env::temp_dir().join(format!("pelt-grpc-bodies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bodies = dir.join("names.jsonl");
    std::fs::write(&bodies, "{\"name\": \"ann\"}\n{\"name\": \"fail bob\"}\n").unwrap();
    let v = run_json(&[
        &call_url(port, "SayHello"),
        "--proto",
        PROTO,
        "--bodies",
        bodies.to_str().unwrap(),
        "-n",
        "10",
        "-c",
        "1",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 5, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 5, "{g}");
    assert_eq!(g["messages"]["UNAVAILABLE"], "backend down: fail bob");
    let _ = std::fs::remove_dir_all(&dir);
    // A 5 MiB reply is over the 4 MiB a client takes: RESOURCE_EXHAUSTED, pelt's own, with
    // its reason; the connection goes on.
    let v = run_json(&[
        &call_url(port, "SayHello"),
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "big"}"#,
        "-n",
        "6",
        "-c",
        "1",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "RESOURCE_EXHAUSTED"]), 6, "{g}");
    assert!(
        g["messages"]["RESOURCE_EXHAUSTED"]
            .as_str()
            .unwrap()
            .starts_with("pelt: a message of 5242885 bytes"),
        "{g}"
    );
    assert_eq!(count(&v, &["connections_opened"]), 1);
    // The summary names the statuses.
    let (out, _) = run(&[
        &call_url(port, "SayHello"),
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "fail now"}"#,
        "-n",
        "5",
        "-c",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("gRPC"), "{text}");
    assert!(text.contains("UNAVAILABLE"), "{text}");
    assert!(text.contains("backend down: fail now"), "{text}");
}

#[test]
fn grpcio_through_nginx_grpc_pass() {
    let Some(bin) = find_server("nginx", "nginx-light", &["/usr/sbin/nginx"]) else {
        return;
    };
    let Some(app) = PythonApp::start("grpc_app.py") else {
        return;
    };
    let upstream = grpc_port(&app);
    let nginx = RealServer::start("nginx-grpc", 1, |dir, ports| {
        let http = format!(
            "    access_log off;
    server {{
        listen 127.0.0.1:{p} http2;
        location / {{
            grpc_pass grpc://127.0.0.1:{upstream};
        }}
    }}
",
            p = ports[0]
        );
        nginx_command(&bin, dir, &http)
    });
    let port: u16 = nginx
        .url("http", 0)
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let v = run_json(&[
        &call_url(port, "SayHello"),
        "--proto",
        PROTO,
        "--body",
        r#"{"name": "flaky"}"#,
        "-n",
        "150",
        "-c",
        "2",
        "--streams",
        "5",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["calls"]), 150, "{g}");
    assert_eq!(count(g, &["status", "OK"]), 100, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 50, "{g}");
    let calls = server_calls(&app);
    assert_eq!(count(&calls, &["SayHello OK"]), 100, "{calls}");
    assert_eq!(count(&calls, &["SayHello UNAVAILABLE"]), 50, "{calls}");
}

#[test]
fn pelt_ghz_takes_ghz_flags_and_prints_its_layout() {
    let Some(app) = PythonApp::start("grpc_app.py") else {
        return;
    };
    let host = format!("127.0.0.1:{}", grpc_port(&app));
    let ghz = |extra: &[&str]| {
        let mut args = vec![
            "ghz",
            "--insecure",
            "--proto",
            PROTO,
            "--call",
            "pelt.test.Greeter.SayHello",
            "-d",
            r#"{"name":"flaky"}"#,
            "-n",
            "30",
            "-c",
            "6",
            "--connections",
            "2",
        ];
        args.extend_from_slice(extra);
        args.push(&host);
        let (out, _) = run(&args);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = ghz(&[]);
    for line in [
        "Summary:",
        "  Count:\t30",
        "Response time histogram:",
        "Latency distribution:",
        "  99 % in ",
        "Status code distribution:",
        "  [OK]\t20 responses",
        "  [UNAVAILABLE]\t10 responses",
        "  [10]\trpc error: code = UNAVAILABLE desc = backend down: flaky",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    let v: serde_json::Value = serde_json::from_str(&ghz(&["-O", "json"])).unwrap();
    assert_eq!(v["count"], 30, "{v}");
    assert_eq!(v["statusCodeDistribution"]["OK"], 20, "{v}");
    assert_eq!(v["latencyDistribution"].as_array().unwrap().len(), 7);
    // pelt's own result rides along: 2 connections, 3 calls on each at a time.
    assert_eq!(v["pelt"]["connections"], 2, "{}", v["pelt"]);
    assert_eq!(v["pelt"]["streams"], 3);
    let calls = server_calls(&app);
    assert_eq!(count(&calls, &["SayHello OK"]), 40, "{calls}");
}

/// An HPACK literal field (not indexed, no Huffman): `name: value`.
fn field(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0);
    block.push(name.len() as u8);
    block.extend_from_slice(name.as_bytes());
    block.push(value.len() as u8);
    block.extend_from_slice(value.as_bytes());
}

/// Ends `stream` with trailers that say OK (`grpc-status: 0`, END_STREAM).
fn ok_trailers(s: &mut std::net::TcpStream, stream: u32) {
    let mut t = vec![];
    field(&mut t, "grpc-status", "0");
    write_frame(s, HEADERS, 0x5, stream, &t);
}

/// A response head: `:status` (200 is static entry 8), `content-type: application/grpc`, then
/// `fields`.
fn head(status: u16, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = match status {
        200 => vec![0x88],
        s => {
            let mut b = vec![0x08, 3];
            b.extend_from_slice(s.to_string().as_bytes());
            b
        }
    };
    field(&mut b, "content-type", "application/grpc");
    for (n, v) in fields {
        field(&mut b, n, v);
    }
    b
}

/// A reply message `HelloReply { message: "hi" }`, framed.
const REPLY: &[u8] = &[0, 0, 0, 0, 4, 0x0a, 2, b'h', b'i'];

#[test]
fn scripted_answers_end_each_call_with_one_defined_status() {
    // Answers the calls in turn with eight behaviours, each once in every eight calls.
    let calls = Arc::new(AtomicU64::new(0));
    let n = calls.clone();
    let server = RawServer::start(move |mut s| {
        if !accept_h2(&mut s, &[]) {
            return;
        }
        while let Some((kind, flags, stream, _)) = read_frame(&mut s) {
            // A request is whole at its END_STREAM (its message is in DATA).
            if kind != DATA || flags & 1 == 0 {
                continue;
            }
            let end_headers = 0x4;
            let end = 0x1 | end_headers;
            let headers = |s: &mut std::net::TcpStream, block: Vec<u8>, flags: u8| {
                write_frame(s, HEADERS, flags, stream, &block)
            };
            match n.fetch_add(1, Ordering::Relaxed) % 8 {
                // OK: head, a message, trailers.
                0 => {
                    headers(&mut s, head(200, &[]), end_headers);
                    write_frame(&mut s, DATA, 0, stream, REPLY);
                    ok_trailers(&mut s, stream);
                }
                // Trailers-only: the head carries the status and a percent-encoded message.
                1 => headers(
                    &mut s,
                    head(
                        200,
                        &[("grpc-status", "14"), ("grpc-message", "down%20now")],
                    ),
                    end,
                ),
                // A compressed message, though none was asked for.
                2 => {
                    headers(&mut s, head(200, &[]), end_headers);
                    write_frame(&mut s, DATA, 0, stream, &[1, 0, 0, 0, 1, 0]);
                    ok_trailers(&mut s, stream);
                }
                // DATA that ends inside a message, then OK.
                3 => {
                    headers(&mut s, head(200, &[]), end_headers);
                    write_frame(&mut s, DATA, 0, stream, &REPLY[..7]);
                    ok_trailers(&mut s, stream);
                }
                // No grpc-status at all: the DATA ends the stream.
                4 => {
                    headers(&mut s, head(200, &[]), end_headers);
                    write_frame(&mut s, DATA, 1, stream, REPLY);
                }
                // A proxy's 503, not gRPC's.
                5 => headers(&mut s, head(503, &[]), end),
                // Reset (CANCEL) in the middle of a message.
                6 => {
                    headers(&mut s, head(200, &[]), end_headers);
                    write_frame(&mut s, DATA, 0, stream, &REPLY[..3]);
                    write_frame(&mut s, RST_STREAM, 0, stream, &8u32.to_be_bytes());
                }
                // A code gRPC does not define.
                _ => headers(&mut s, head(200, &[("grpc-status", "42")]), end),
            }
        }
    });
    let url = server.url().replace("http://", "grpc://") + "pelt.test.Greeter/SayHello";
    let v = run_json(&[&url, "--proto", PROTO, "-n", "16", "-c", "1"]);
    assert_invariant(&v);
    assert_schema(&v);
    let g = grpc(&v);
    assert_eq!(count(g, &["calls"]), 14, "{g}");
    assert_eq!(count(g, &["status", "OK"]), 2, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), 4, "{g}");
    assert_eq!(count(g, &["status", "INTERNAL"]), 6, "{g}");
    assert_eq!(count(g, &["status", "CODE_42"]), 2, "{g}");
    assert_eq!(g["messages"]["UNAVAILABLE"], "down now");
    assert_eq!(
        g["messages"]["INTERNAL"],
        "pelt: a compressed message, though the call asked for no compression"
    );
    // The reset is HTTP/2's: an error, not a status.
    assert_eq!(count(&v, &["errors", "stream_reset"]), 2, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 14);
    assert_eq!(calls.load(Ordering::Relaxed), 16);
}

#[test]
fn grpcio_reflection_gives_the_descriptors() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    // No --proto: the method's types come from the server (grpcio serves v1alpha only, so
    // pelt falls back to it from v1).
    let v = run_json(&[
        &call_url(port, "SayHello"),
        "--reflect",
        "--body",
        r#"{"name": "ann"}"#,
        "-n",
        "10",
        "-c",
        "1",
    ]);
    assert_eq!(count(grpc(&v), &["status", "OK"]), 10, "{v}");
    assert_eq!(count(&server_calls(&app), &["SayHello OK"]), 10);
    // A service the server lacks: one line before the load, naming those it has.
    let url = format!("grpc://127.0.0.1:{port}/pelt.Nope/SayHello");
    let (out, _) = run(&[&url, "--reflect", "-n", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has no service pelt.Nope (it has"), "{err}");
    assert!(err.contains("pelt.test.Greeter"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn grpcs_verifies_the_server_and_reflects_over_tls() {
    let dir = std::env::temp_dir().join(format!("pelt-grpcs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, cert, key) = certificates(&dir);
    let tls = [
        std::ffi::OsStr::new("--tls"),
        cert.as_os_str(),
        key.as_os_str(),
    ];
    let Some(app) = PythonApp::start_with("grpc_app.py", &tls) else {
        return;
    };
    let url = format!(
        "grpcs://127.0.0.1:{}/pelt.test.Greeter/SayHello",
        grpc_port(&app)
    );
    let ca = ca.to_str().unwrap();
    let v = run_json(&[
        &url,
        "--reflect",
        "--cacert",
        ca,
        "-b",
        r#"{"name": "tls"}"#,
        "-n",
        "20",
        "-c",
        "2",
    ]);
    assert_eq!(count(grpc(&v), &["status", "OK"]), 20, "{v}");
    assert_eq!(
        count(&v, &["tls_handshakes", "full"]) + count(&v, &["tls_handshakes", "resumed"]),
        2,
        "{v}"
    );
    // Without the CA the certificate does not verify: each call a tls error, never a status.
    let v = run_json(&[&url, "--proto", PROTO, "-n", "3", "-c", "1"]);
    assert_eq!(count(&v, &["errors", "tls"]), 3, "{v}");
    assert!(
        v.get("grpc").is_none_or(|g| count(g, &["calls"]) == 0),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn templates_render_each_call_s_message() {
    let Some(app) = PythonApp::start("grpc_app.py") else {
        return;
    };
    let url = call_url(grpc_port(&app), "SayHello");
    // {{seq}} in a string field: 60 calls, 60 names; each call's JSON made a message once.
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "-b",
        r#"{"name": "user-{{seq}}"}"#,
        "-n",
        "60",
        "-c",
        "2",
        "--streams",
        "3",
    ]);
    assert_eq!(count(grpc(&v), &["status", "OK"]), 60, "{v}");
    assert_eq!(app.counts()["names"], 60, "{}", app.counts());
    // A few values over many calls (kept, not encoded again), with --bodies lines that mix
    // templates and plain messages.
    let dir = std::env::temp_dir().join(format!("pelt-grpc-templates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bodies = dir.join("names.jsonl");
    std::fs::write(
        &bodies,
        "{\"name\": \"r{{rand:1:5}}\"}\n{\"name\": \"plain\"}\n",
    )
    .unwrap();
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "--bodies",
        bodies.to_str().unwrap(),
        "-n",
        "200",
        "-c",
        "2",
    ]);
    assert_eq!(count(grpc(&v), &["status", "OK"]), 200, "{v}");
    // 60 + at most r1..r5 + plain.
    let names = app.counts()["names"].as_u64().unwrap();
    assert!((62..=66).contains(&names), "{}", app.counts());
    let _ = std::fs::remove_dir_all(&dir);
    // A template whose JSON does not fit the message is bad input, before any call.
    let (out, _) = run(&[
        &url,
        "--proto",
        PROTO,
        "-b",
        r#"{"nom": "{{seq}}"}"#,
        "-n",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unrecognized field name 'nom'") && err.contains("as 0"),
        "{err}"
    );
}

#[test]
fn client_and_bidirectional_streams_send_each_message_of_the_array() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    let names = r#"[{"name": "a"}, {"name": "b"}, {"name": "c{{seq}}"}]"#;
    // Client streaming: three messages, then the half-close; one reply each call.
    let v = run_json(&[
        &call_url(port, "SayHelloMany"),
        "--reflect",
        "-b",
        names,
        "-n",
        "20",
        "-c",
        "2",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 20, "{g}");
    assert_eq!(count(g, &["messages_received"]), 20, "{g}");
    let c = app.counts();
    assert_eq!(count(&c["calls"], &["SayHelloMany OK"]), 20, "{c}");
    assert_eq!(count(&c["calls"], &["messages in"]), 60, "{c}");
    // Bidirectional: each message answered, the answers timed as a stream's events.
    let v = run_json(&[
        &call_url(port, "Chat"),
        "--proto",
        PROTO,
        "-b",
        names,
        "-n",
        "20",
        "-c",
        "2",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 20, "{g}");
    assert_eq!(count(g, &["messages_received"]), 60, "{g}");
    assert_eq!(count(&v["event_streams"], &["events"]), 60, "{v}");
    let c = app.counts();
    assert_eq!(count(&c["calls"], &["Chat OK"]), 20, "{c}");
    assert_eq!(count(&c["calls"], &["messages in"]), 120, "{c}");
}

/// A scenario file's steps in a folder of their own (with `users.csv`), its path back.
fn scenario_file(name: &str, yaml: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pelt-grpc-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), "user\nann\nbob\n").unwrap();
    let file = dir.join("flow.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// A journey of calls: a login-like call once per user whose reply is captured, a client
/// stream that sends the capture back, a server stream whose last message is captured, and a
/// call that fails on purpose, checked by its gRPC status and its trailers' message.
const JOURNEY: &str = r#"
config:
  target: grpc://127.0.0.1:{port}
  data:
    - file: users.csv
scenarios:
  - name: greet
    once:
      - grpc:
          name: hello
          call: pelt.test.Greeter/SayHello
          json: {name: "{{user}}"}
          capture:
            - json: /message
              as: greeting
          check:
            - status: OK
    flow:
      - grpc:
          name: many
          call: pelt.test.Greeter/SayHelloMany
          json: [{name: "{{greeting}}"}, {name: "b"}]
          check:
            - json: /message
              matches: "^Hello Hello (ann|bob), b$"
      - grpc:
          name: stream
          call: pelt.test.Greeter.SayHellos
          body: '{"name": "count:3"}'
          metadata: {x-user: "{{user}}"}
          capture:
            - json: $[2].message
              as: last
      - grpc:
          name: fail
          call: pelt.test.Greeter/SayHello
          json: {name: "fail-{{last}}"}
          metadata: {x-greeting: "{{greeting}}"}
          check:
            - status: [UNAVAILABLE, 4]
            - name: down
              header: grpc-message
              equals: "backend down: fail-Hello 2"
"#;

#[test]
fn scenario_steps_are_calls_with_captures_and_checks() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    let file = scenario_file("journey", &JOURNEY.replace("{port}", &port.to_string()));
    let file = file.to_str().unwrap();
    // Two users on one connection's two streams.
    let v = run_json(&[
        "--scenario",
        file,
        "--proto",
        PROTO,
        "-n",
        "62",
        "-c",
        "1",
        "--streams",
        "2",
    ]);
    assert_invariant(&v);
    assert_schema(&v);
    let completed = |step: &str| target(&v, step)["completed"].as_u64().unwrap();
    let (many, stream, fail) = (completed("many"), completed("stream"), completed("fail"));
    assert_eq!(completed("hello"), 2, "{v}");
    assert_eq!(2 + many + stream + fail, 62, "{v}");
    let s = &v["scenario"];
    let pairs = |key: &str, a: &str, b: &str| -> Vec<(String, u64, u64)> {
        s[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let n = |k: &str| c[k].as_u64().unwrap();
                (c["name"].as_str().unwrap().to_string(), n(a), n(b))
            })
            .collect()
    };
    let checks = pairs("checks", "passed", "failed");
    assert_eq!(
        checks,
        [
            ("status OK".to_string(), 2, 0),
            (
                "json /message matches ^Hello Hello (ann|bob), b$".into(),
                many,
                0
            ),
            ("status UNAVAILABLE,DEADLINE_EXCEEDED".into(), fail, 0),
            ("down".into(), fail, 0),
        ],
        "{s}"
    );
    let captures = pairs("captures", "found", "missing");
    assert_eq!(
        captures,
        [
            ("hello: greeting".to_string(), 2, 0),
            ("stream: last".into(), stream, 0)
        ],
        "{s}"
    );
    assert_eq!(s["iterations"]["completed"].as_u64(), Some(fail), "{s}");
    assert_eq!(s["iterations"]["failed"], 0, "{s}");
    // Every call with its status, as the server ended it.
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 2 + many + stream, "{g}");
    assert_eq!(count(g, &["status", "UNAVAILABLE"]), fail, "{g}");
    assert_eq!(count(g, &["messages_received"]), 2 + many + 3 * stream);
    let c = app.counts();
    let calls = &c["calls"];
    assert_eq!(count(calls, &["SayHello OK"]), 2, "{c}");
    assert_eq!(count(calls, &["SayHello UNAVAILABLE"]), fail, "{c}");
    assert_eq!(count(calls, &["SayHelloMany OK"]), many, "{c}");
    assert_eq!(count(calls, &["SayHellos OK"]), stream, "{c}");
    assert_eq!(count(calls, &["messages in"]), 2 * many, "{c}");
    // SayHello saw the two users' names and the captured stream's last message, and the
    // first call's captured replies as metadata.
    assert_eq!(c["names"], 3, "{c}");
    assert_eq!(
        c["tokens"],
        serde_json::json!(["Hello ann", "Hello bob"]),
        "{c}"
    );

    // The open loop over reflection: iterations arrive at a rate, counts still exact.
    let v = run_json(&[
        "--scenario",
        file,
        "--reflect",
        "--rate",
        "200",
        "-n",
        "40",
        "-c",
        "2",
    ]);
    assert_eq!(v["latency_from"], "due");
    let g = grpc(&v);
    assert_eq!(count(g, &["calls"]), 40, "{g}");
    assert_eq!(count(&v["scenario"]["checks"][3], &["failed"]), 0, "{v}");
}

#[test]
fn bad_scenario_calls_are_one_line_errors_before_any_call() {
    // No server: each is refused while the run is prepared.
    let rejected = |yaml: &str, args: &[&str]| {
        let file = scenario_file("bad", yaml);
        let mut all = vec![
            "--scenario",
            file.to_str().unwrap(),
            "--proto",
            PROTO,
            "-n",
            "1",
        ];
        all.extend_from_slice(args);
        let (out, _) = run(&all);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        err
    };
    let target = "config: {target: 'grpc://127.0.0.1:9'}\n";
    let e = rejected(
        &format!("{target}scenarios:\n  - flow:\n      - grpc: {{call: pelt.test.Greeter/Nope}}\n"),
        &[],
    );
    assert!(
        e.contains("scenario step 'pelt.test.Greeter/Nope': pelt.test.Greeter has no method Nope"),
        "{e}"
    );
    let e = rejected(
        &format!(
            "{target}scenarios:\n  - flow:\n      - grpc: {{name: hi, call: pelt.test.Greeter/SayHello, json: {{nom: x}}}}\n"
        ),
        &[],
    );
    assert!(
        e.contains("scenario step 'hi' (pelt.test.Greeter/SayHello)") && e.contains("'nom'"),
        "{e}"
    );
    let e = rejected(
        "scenarios:\n  - flow:\n      - grpc: {call: pelt.test.Greeter/SayHello}\n",
        &["http://127.0.0.1:9/"],
    );
    assert!(
        e.contains("grpc steps need a grpc:// or grpcs:// URL"),
        "{e}"
    );
    let e = rejected(
        "scenarios:\n  - flow:\n      - get: {url: /}\n",
        &["grpc://127.0.0.1:9"],
    );
    assert!(e.contains("a grpc:// URL's steps are grpc calls"), "{e}");
    let e = rejected(
        &format!(
            "{target}scenarios:\n  - flow:\n      - grpc: {{call: pelt.test.Greeter/SayHellos}}\n"
        ),
        &["--stream-limit", "2"],
    );
    assert!(
        e.contains("--stream-limit is for one server-streaming"),
        "{e}"
    );
}

/// The messages in a DATA payload of whole gRPC messages.
fn messages_in(mut payload: &[u8]) -> u64 {
    let mut n = 0;
    while payload.len() >= 5 {
        let len = u32::from_be_bytes([payload[1], payload[2], payload[3], payload[4]]) as usize;
        payload = &payload[(5 + len).min(payload.len())..];
        n += 1;
    }
    n
}

#[test]
fn a_bidirectional_call_sends_each_message_after_the_reply_before() {
    // Answers every message with one reply, and counts each message that came before the
    // reply to the one ahead of it went out (a client that does not wait for replies).
    let early = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let (e, r) = (early.clone(), received.clone());
    let server = RawServer::start(move |mut s| {
        if !accept_h2(&mut s, &[]) {
            return;
        }
        // By stream: (messages received, replies sent).
        let mut calls = std::collections::HashMap::<u32, (u64, u64)>::new();
        while let Some((kind, flags, stream, payload)) = read_frame(&mut s) {
            if kind != DATA {
                continue;
            }
            let call = calls.entry(stream).or_default();
            if call.1 == 0 && call.0 == 0 {
                write_frame(&mut s, HEADERS, 0x4, stream, &head(200, &[]));
            }
            for _ in 0..messages_in(&payload) {
                call.0 += 1;
                r.fetch_add(1, Ordering::Relaxed);
                if call.0 > call.1 + 1 {
                    e.fetch_add(1, Ordering::Relaxed);
                }
            }
            while call.1 < call.0 {
                write_frame(&mut s, DATA, 0, stream, REPLY);
                call.1 += 1;
            }
            if flags & 1 != 0 {
                ok_trailers(&mut s, stream);
            }
        }
    });
    let url = server.url().replace("http://", "grpc://") + "pelt.test.Greeter/Chat";
    let names = r#"[{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]"#;
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "-b",
        names,
        "-n",
        "12",
        "-c",
        "1",
        "--streams",
        "3",
    ]);
    assert_invariant(&v);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 12, "{g}");
    assert_eq!(count(g, &["messages_received"]), 48, "{g}");
    // Each reply an event: the gaps are the round trips of messages 2 to 4.
    assert_eq!(count(&v["event_streams"], &["events"]), 48, "{v}");
    assert_eq!(received.load(Ordering::Relaxed), 48);
    assert_eq!(
        early.load(Ordering::Relaxed),
        0,
        "a message went before its turn"
    );
    // ghz's way, on demand (and `pelt ghz`'s): all four at once.
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "-b",
        names,
        "-n",
        "5",
        "-c",
        "1",
        "--grpc-send-all",
    ]);
    assert_eq!(count(grpc(&v), &["status", "OK"]), 5, "{v}");
    assert_eq!(received.load(Ordering::Relaxed), 68);
    // Each call's messages 2, 3 and 4 came before the replies ahead of them.
    assert_eq!(early.load(Ordering::Relaxed), 15);
}

#[test]
fn a_call_the_server_ends_early_stops_sending_and_is_reset() {
    // Ends each call after its first message (a reply, then OK), and counts the calls reset
    // by the client and any DATA for a call already ended.
    let resets = Arc::new(AtomicU64::new(0));
    let late = Arc::new(AtomicU64::new(0));
    let (r, l) = (resets.clone(), late.clone());
    let server = RawServer::start(move |mut s| {
        if !accept_h2(&mut s, &[]) {
            return;
        }
        let mut ended = std::collections::HashSet::new();
        while let Some((kind, _, stream, payload)) = read_frame(&mut s) {
            match kind {
                RST_STREAM if payload == 8u32.to_be_bytes() => {
                    r.fetch_add(1, Ordering::Relaxed);
                }
                DATA if ended.contains(&stream) => {
                    l.fetch_add(1, Ordering::Relaxed);
                }
                DATA => {
                    ended.insert(stream);
                    write_frame(&mut s, HEADERS, 0x4, stream, &head(200, &[]));
                    write_frame(&mut s, DATA, 0, stream, REPLY);
                    ok_trailers(&mut s, stream);
                }
                _ => {}
            }
        }
    });
    let url = server.url().replace("http://", "grpc://") + "pelt.test.Greeter/Chat";
    let v = run_json(&[
        &url,
        "--proto",
        PROTO,
        "-b",
        r#"[{"name": "a"}, {"name": "b"}]"#,
        "-n",
        "6",
        "-c",
        "1",
        "--streams",
        "2",
    ]);
    let g = grpc(&v);
    assert_eq!(count(g, &["status", "OK"]), 6, "{g}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    // The server reads on its own thread: what it has read by now (bounded wait).
    for _ in 0..100 {
        if resets.load(Ordering::Relaxed) >= 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(late.load(Ordering::Relaxed), 0);
    // Each call reset but those the connection's close ended with the run (at most the two
    // last, one per stream).
    assert!(resets.load(Ordering::Relaxed) >= 4, "{resets:?}");
}

#[test]
fn compare_puts_a_grpc_method_beside_its_json_gateway() {
    let Some((app, port)) = grpcio() else {
        return;
    };
    let gateway = format!("http://127.0.0.1:{}/v1/greeter/hello", app.port);
    let dir = std::env::temp_dir().join(format!("pelt-grpc-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("cmp.json");
    // The same message both ways; every third call fails on either side. The proto is the
    // gRPC target's alone.
    let (out, _) = run(&[
        "compare",
        "--target",
        &format!("grpc={}", call_url(port, "SayHello")),
        "--target",
        &format!("json={gateway}"),
        "--proto",
        PROTO,
        "-m",
        "POST",
        "-b",
        r#"{"name": "flaky"}"#,
        "-n",
        "30",
        "-c",
        "1",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    for (row, name) in rows.iter().zip(["grpc", "json"]) {
        assert_eq!(row["target"], name, "{row}");
        let run = &row["runs"][0];
        assert_eq!(run["completed"], 30, "{row}");
        // A call that did not end OK counts as the gateway's 503 does.
        assert_eq!(run["non_2xx"], 10, "{row}");
    }
    let calls = server_calls(&app);
    assert_eq!(count(&calls, &["SayHello OK"]), 20, "{calls}");
    assert_eq!(count(&calls, &["Gateway UNAVAILABLE"]), 10, "{calls}");
    let _ = std::fs::remove_dir_all(&dir);
}
