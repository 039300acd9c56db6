//! gRPC runs (grpc://) end to end against servers pelt did not write: Python's grpcio
//! (tests/interop/grpc_app.py, with its own count of the calls it ended by method and status),
//! directly and through nginx's grpc_pass. Counts are asserted exactly, per status; no timing
//! is.

mod util;

use util::real::{find_server, nginx_command, PythonApp, RealServer};
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

#[test]
fn grpcio_calls_are_counted_by_status_exactly() {
    let Some(app) = PythonApp::start("grpc_app.py") else {
        return;
    };
    let port = grpc_port(&app);
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
    let Some(app) = PythonApp::start("grpc_app.py") else {
        return;
    };
    let port = grpc_port(&app);
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
    assert_eq!(
        count(&server_calls(&app), &["SayHellos OK"]),
        40,
        "{}",
        app.counts()
    );
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
