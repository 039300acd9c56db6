//! HTTP/3 over QUIC against servers pelt did not write: Debian's caddy (its access log counts
//! the requests) and aioquic's server (which can reset streams, send GOAWAY, close
//! connections or stop answering on purpose). pelt's counts equal each server's own, on both
//! backends, in closed and open loop, with one and many streams per connection.

mod util;

use std::time::Duration;
use util::aioquic::Aioquic;
use util::h3::*;
use util::*;

/// The backends here: epoll, and io_uring where this kernel allows it.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        b.push("uring");
    }
    b
}

/// Runs pelt over HTTP/3 (certificates not verified: the servers' are their own) and returns
/// the JSON result.
fn run_h3(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--http3", "--insecure", "--json", "-", "-q"]);
    let (out, _) = wait_bounded(spawn_any_backend(&all), Duration::from_secs(40));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pelt {all:?}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert_schema(&v);
    v
}

#[test]
fn counts_equal_caddys_access_log_on_every_backend_with_one_and_many_streams() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let mut logged = 0;
    for io in backends() {
        for streams in ["1", "16"] {
            let v = run_h3(&[
                &url,
                "-n",
                "1500",
                "-c",
                "3",
                "-t",
                "1",
                "--streams",
                streams,
                "--io",
                io,
            ]);
            let at = format!("{io}, {streams} streams: {v}");
            assert_eq!(count(&v, &["requests", "completed"]), 1500, "{at}");
            assert_eq!(count(&v, &["status", "200"]), 1500, "{at}");
            assert_eq!(v["http"], "3", "{at}");
            assert_eq!(count(&v, &["connections_opened"]), 3, "{at}");
            // QUIC's handshake is TLS 1.3's: one per connection, timed.
            assert_eq!(count(&v, &["tls_handshakes", "full"]), 3, "{at}");
            assert!(count(&v, &["tls_handshakes", "time_us", "max"]) > 0, "{at}");
            // "ok" in each response's DATA, inside QUIC packets: more read than that.
            assert!(count(&v, &["bytes", "received"]) > 1500 * 2, "{at}");
            // QUIC's own counts: each datagram carries one packet or more.
            let q = |k: &str| count(&v, &["quic", k]);
            assert!(
                q("datagrams_sent") > 0 && q("datagrams_received") > 0,
                "{at}"
            );
            assert!(q("packets_sent") >= q("datagrams_sent"), "{at}");
            assert!(q("packets_lost") <= q("packets_sent"), "{at}");
            // Each second's QUIC counts (the timeline, Prometheus's counters) add up to them.
            let points = v["timeline"].as_array().unwrap();
            for k in ["datagrams_sent", "datagrams_received", "packets_sent"] {
                let sum: u64 = points.iter().map(|p| count(p, &["quic", k])).sum();
                assert_eq!(sum, q(k), "{k}: {at}");
            }
            logged += 1500;
            assert_eq!(caddy_h3_requests(&server, logged).len(), logged, "{at}");
        }
    }
}

#[test]
fn open_loop_counts_equal_caddys_and_targets_go_as_listed() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let v = run_h3(&[&url, "--rate", "400", "-d", "2", "-c", "2", "-t", "1"]);
    let completed = count(&v, &["requests", "completed"]);
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert!(completed >= 700, "{v}");
    assert_eq!(v["load_model"], "open", "{v}");
    assert_eq!(
        caddy_h3_requests(&server, completed as usize).len() as u64,
        completed
    );

    // A targets list: each entry's method, path and body, as caddy logged them.
    let dir = std::env::temp_dir().join(format!("pelt-h3-targets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let targets = dir.join("targets.txt");
    std::fs::write(
        &targets,
        format!("GET {url}a\n\nPOST {url}b\n@{}\n\nDELETE {url}c?x=1\n", {
            let body = dir.join("body.json");
            std::fs::write(&body, "{\"k\": 1}").unwrap();
            body.display().to_string()
        }),
    )
    .unwrap();
    let t = targets.display().to_string();
    let v = run_h3(&["--targets", &t, "-n", "300", "-c", "2", "--streams", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300, "{v}");
    let seen = caddy_h3_requests(&server, completed as usize + 300);
    let of = |m: &str, u: &str| seen.iter().filter(|(sm, su)| sm == m && su == u).count();
    assert_eq!(of("GET", "/a"), 100, "{seen:?}");
    assert_eq!(of("POST", "/b"), 100);
    assert_eq!(of("DELETE", "/c?x=1"), 100);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streams_the_server_rejects_fail_with_their_code_and_the_rest_complete() {
    let Some(server) = Aioquic::start(&["reject", "10"]) else {
        return;
    };
    let v = run_h3(&[&server.url(), "-n", "400", "-c", "2", "--streams", "4"]);
    // Each connection's every 10th request stream is reset with H3_REQUEST_REJECTED.
    assert_eq!(count(&v, &["errors", "stream_reset"]), 40, "{v}");
    assert!(
        v["error_examples"]["stream_reset"]
            .as_str()
            .unwrap()
            .contains("H3_REQUEST_REJECTED"),
        "{v}"
    );
    assert_eq!(count(&v, &["requests", "completed"]), 360, "{v}");
    // By code, as the server reset them.
    assert_eq!(
        v["error_codes"],
        serde_json::json!({"stream_reset": {"H3_REQUEST_REJECTED": 40}}),
        "{v}"
    );
    assert_eq!(server.served(360), 360);
}

#[test]
fn goaway_and_closed_connections_lose_no_request_uncounted() {
    // GOAWAY after each connection's 50th request: the rest go on new connections.
    let Some(server) = Aioquic::start(&["goaway", "50"]) else {
        return;
    };
    let v = run_h3(&[&server.url(), "-n", "300", "-c", "2", "--streams", "4"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert!(count(&v, &["connections_opened"]) > 2, "{v}");
    assert_eq!(server.served(300), 300);
    drop(server);

    // Each connection closed with H3_EXCESSIVE_LOAD after its 30th answer: what was under way
    // fails, counted (closed, with the server's reason); the rest go on new connections.
    let Some(server) = Aioquic::start(&["close", "30"]) else {
        return;
    };
    let v = run_h3(&[&server.url(), "-n", "300", "-c", "2", "--streams", "4"]);
    let completed = count(&v, &["requests", "completed"]);
    let closed = count(&v, &["errors", "closed"]);
    assert_eq!(completed + closed, 300, "{v}");
    let opened = count(&v, &["connections_opened"]);
    assert!(opened > 2 && closed > 0, "{v}");
    assert!(
        v["error_examples"]["closed"]
            .as_str()
            .unwrap()
            .contains("enough"),
        "{v}"
    );
    // Every one by the code the server closed with.
    assert_eq!(
        v["error_codes"],
        serde_json::json!({"closed": {"H3_EXCESSIVE_LOAD": closed}}),
        "{v}"
    );
    // aioquic counts its 30th answer served, but its close drops the data it had not sent yet:
    // that answer's, those queued in the same turn before it, and those of the requests it
    // handles after it in that turn (one datagram can end several streams): answers counted
    // there and not here, at most a connection's streams in flight (4) for each connection.
    let served = server.served(completed);
    assert!(
        served >= completed && served - completed <= 4 * opened,
        "{served}: {v}"
    );
}

#[test]
fn a_server_that_stops_answering_mid_run_times_out_and_the_run_ends_on_time() {
    let Some(server) = Aioquic::start(&[]) else {
        return;
    };
    let url = server.url();
    let args = [
        url.as_str(),
        "-d",
        "4",
        "-c",
        "2",
        "--timeout",
        "1s",
        "--http3",
        "--insecure",
        "--json",
        "-",
        "-q",
    ];
    let child = spawn_any_backend(&args);
    std::thread::sleep(Duration::from_millis(1500));
    server.freeze();
    let (out, _) = wait_bounded(child, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    // Answered until it froze; then each connection's request under way ends as a timeout
    // (and the next one sent on it too), and the run at -d.
    assert!(count(&v, &["requests", "completed"]) > 0, "{v}");
    let errors = count(&v, &["requests", "errors"]);
    assert!(errors >= 2, "{v}");
    assert_eq!(errors, count(&v, &["errors", "timeout"]), "{v}");
}

/// The founding matrix's handshake cells over QUIC, one request a connection
/// (--no-keepalive): with resumption (caddy's tickets) every connection after the first may
/// resume; with --tls-full-handshake none does. Each connection is counted, each handshake
/// once, and caddy's log holds every request.
#[test]
fn a_connection_per_request_resumes_or_pays_full_handshakes() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let mut logged = 0;
    for io in backends() {
        for full in [false, true] {
            let mut args = vec![
                &url[..],
                "-n",
                "40",
                "-c",
                "2",
                "--no-keepalive",
                "--io",
                io,
            ];
            if full {
                args.push("--tls-full-handshake");
            }
            let v = run_h3(&args);
            let at = format!("{io}, full handshakes {full}: {v}");
            assert_eq!(count(&v, &["requests", "completed"]), 40, "{at}");
            assert_eq!(count(&v, &["errors", "total"]), 0, "{at}");
            assert_eq!(count(&v, &["connections_opened"]), 40, "{at}");
            let (f, r) = (
                count(&v, &["tls_handshakes", "full"]),
                count(&v, &["tls_handshakes", "resumed"]),
            );
            assert_eq!(f + r, 40, "{at}");
            if full {
                assert_eq!(r, 0, "{at}");
            } else {
                // Each connection's ticket serves the next on its slot, unless the answer
                // came before the ticket (caddy sends it after the handshake) and the
                // connection closed first: on a loaded machine a third or so did.
                assert!(r >= 10, "{at}");
            }
            assert_eq!(count(&v, &["quic", "early_accepted"]), 0, "{at}");
            logged += 40;
            assert_eq!(caddy_h3_requests(&server, logged).len(), logged, "{at}");
        }
    }
}

/// 0-RTT (--tls-early-data) against aioquic, which forgets every third ticket presented: the
/// requests of that connection's 0-RTT are refused, go again after the handshake, and are
/// counted once; the server's own count of the requests it answered equals pelt's.
#[test]
fn early_data_the_server_refuses_goes_again_and_is_counted_once() {
    for (mode, every) in [("tickets", "0"), ("forget", "3")] {
        let Some(server) = Aioquic::start(&[mode, every]) else {
            return;
        };
        let url = server.url();
        let args = [
            &url[..],
            "-n",
            "60",
            "-c",
            "1",
            "--no-keepalive",
            "--tls-early-data",
        ];
        let v = run_h3(&args);
        let at = format!("{mode} {every}: {v}");
        assert_eq!(count(&v, &["requests", "completed"]), 60, "{at}");
        assert_eq!(count(&v, &["requests", "sent"]), 60, "{at}");
        assert_eq!(count(&v, &["errors", "total"]), 0, "{at}");
        let q = |k: &str| count(&v, &["quic", k]);
        assert!(q("early_accepted") >= 10, "{at}");
        // One request a connection: each refusal sends one again.
        assert_eq!(q("early_resent"), q("early_refused"), "{at}");
        if mode == "forget" {
            assert!(q("early_refused") >= 5, "{at}");
        } else {
            assert_eq!(q("early_refused"), 0, "{at}");
        }
        // A refused 0-RTT handshake was a full one; an accepted one resumed.
        let resumed = count(&v, &["tls_handshakes", "resumed"]);
        assert!(resumed >= q("early_accepted"), "{at}");
        assert_eq!(server.served(60), 60, "{at}");
    }
    // A script's requests (wrk's counter.lua: /0, /1, ...) sent again after a refused 0-RTT
    // are the same requests: each path once.
    let Some(server) = Aioquic::start(&["forget", "3"]) else {
        return;
    };
    let url = server.url();
    let counter = script("wrk/counter.lua");
    let v = run_h3(&[
        &url,
        "-s",
        &counter,
        "-n",
        "60",
        "-c",
        "1",
        "-t",
        "1",
        "--no-keepalive",
        "--tls-early-data",
    ]);
    assert!(count(&v, &["quic", "early_resent"]) >= 5, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 60, "{v}");
    assert_eq!(server.served_paths(60), (60, 60), "{v}");
}

/// A file of the project's test scripts.
fn script(name: &str) -> String {
    format!("{}/tests/scripts/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Each stream sends a request of its own: templates rendered per request, wrk's counter.lua
/// (`request()` per request, in each thread's own state) and auth.lua (`response()` reads a
/// header, later requests carry it), as caddy logged them.
#[test]
fn templates_and_scripts_render_each_streams_own_request() {
    let routes =
        "handle /authenticate {\n\t\theader X-Token t0k3n\n\t\trespond \"ok\" 200\n\t}\n\t\
                  handle {\n\t\trespond \"ok\" 200\n\t}";
    let Some(server) = caddy(routes) else {
        return;
    };
    let url = server.url("https", 0);
    let templated = format!("{url}item/{{{{seq}}}}?r={{{{rand:1:9}}}}");
    let v = run_h3(&[
        &templated,
        "-H",
        "X-Id: {{seq}}",
        "-n",
        "300",
        "-c",
        "2",
        "--streams",
        "8",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 300, "{v}");
    let seen = caddy_h3_log(&server, 300);
    let mut seqs: Vec<u64> = seen
        .iter()
        .map(|r| {
            let uri = r["uri"].as_str().unwrap();
            let (path, query) = uri.split_once('?').unwrap();
            let seq = path.strip_prefix("/item/").unwrap();
            assert_eq!(r["headers"]["X-Id"][0], seq, "{r}");
            let rand: u64 = query.strip_prefix("r=").unwrap().parse().unwrap();
            assert!((1..=9).contains(&rand), "{uri}");
            seq.parse().unwrap()
        })
        .collect();
    seqs.sort();
    assert_eq!(seqs, (0..300).collect::<Vec<u64>>());

    // counter.lua, 2 threads of 2 connections of 4 streams: each thread counts from 0.
    let v = run_h3(&[
        &url,
        "-s",
        &script("wrk/counter.lua"),
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "2",
        "--streams",
        "4",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 200, "{v}");
    let seen = caddy_h3_log(&server, 500);
    let mut paths: Vec<String> = seen[300..]
        .iter()
        .map(|r| {
            let uri = r["uri"].as_str().unwrap().to_string();
            assert_eq!(
                format!("/{}", r["headers"]["X-Counter"][0].as_str().unwrap()),
                uri
            );
            uri
        })
        .collect();
    paths.sort();
    let mut want: Vec<String> = (0..2)
        .flat_map(|_| (0..100).map(|k| format!("/{k}")))
        .collect();
    want.sort();
    assert_eq!(paths, want);

    // auth.lua on one stream: the token from /authenticate's response on every later request.
    let v = run_h3(&[
        &url,
        "-s",
        &script("wrk/auth.lua"),
        "-n",
        "30",
        "-c",
        "1",
        "-t",
        "1",
        "--streams",
        "1",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 30, "{v}");
    let seen = caddy_h3_log(&server, 530);
    assert_eq!(seen.len(), 530);
    assert_eq!(seen[500]["uri"], "/authenticate");
    for r in &seen[501..] {
        assert_eq!(r["uri"], "/resource", "{r}");
        assert_eq!(r["headers"]["X-Token"][0], "t0k3n", "{r}");
    }
}

/// Verification is on over QUIC as over TCP: caddy's certificate from its own CA fails every
/// request as `tls`, counted by the code pelt closed the handshake with; with `--cacert` naming
/// that CA, every request completes.
#[test]
fn an_untrusted_certificate_fails_as_tls_by_code_and_cacert_trusts_it() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let args = [
        &url[..],
        "-n",
        "5",
        "-c",
        "1",
        "--http3",
        "--json",
        "-",
        "-q",
    ];
    let (out, _) = wait_bounded(spawn_any_backend(&args), Duration::from_secs(40));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert_eq!(count(&v, &["errors", "tls"]), 5, "{v}");
    assert_eq!(
        v["error_codes"],
        serde_json::json!({"tls": {"pelt: CRYPTO_ERROR": 5}}),
        "{v}"
    );
    let example = v["error_examples"]["tls"].as_str().unwrap();
    assert!(example.contains("UnknownIssuer"), "{example}");
    // caddy made its CA (`tls internal`) in its storage folder.
    let ca = server.dir.join("data/pki/authorities/local/root.crt");
    let ca = ca.display().to_string();
    let args = [&url[..], "-n", "5", "-c", "1", "--http3", "--cacert", &ca];
    let mut all = args.to_vec();
    all.extend(["--json", "-", "-q"]);
    let (out, _) = wait_bounded(spawn_any_backend(&all), Duration::from_secs(40));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(count(&v, &["requests", "completed"]), 5, "{v}");
    assert_eq!(count(&v, &["errors", "total"]), 0, "{v}");
}

/// `--monitor` over HTTP/3: caddy's CPU and memory beside each second, a verdict, `--csv`
/// with each second's QUIC counts, which add up to the result's, and the HTML report's chart
/// of them, drawn in a real browser.
#[test]
fn the_server_is_monitored_and_the_csv_and_report_have_quic_each_second() {
    let Some(server) = caddy("") else {
        return;
    };
    let pid = server.child.id().to_string();
    let csv = server.dir.join("timeline.csv");
    let html = server.dir.join("report.html");
    let v = run_h3(&[
        &server.url("https", 0),
        "-d",
        "2",
        "-c",
        "2",
        "--streams",
        "4",
        "--monitor",
        &pid,
        "--csv",
        csv.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let r = &v["resources"];
    assert!(
        r["monitored"]
            .as_str()
            .unwrap()
            .starts_with(&format!("PID {pid}")),
        "{r}"
    );
    assert!(
        r["server"]["rss_peak_bytes"].as_u64().unwrap() > 1 << 20,
        "{r}"
    );
    assert!(r["verdict"]["bottleneck"].is_string(), "{r}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty());
    let column = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for k in ["datagrams_sent", "datagrams_received", "packets_sent"] {
        let c = column(&format!("quic_{k}"));
        let sum: u64 = rows.iter().map(|r| r[c].parse::<u64>().unwrap()).sum();
        assert_eq!(sum, count(&v, &["quic", k]), "{k}: {text}");
    }
    let cpu = column("server_cpu");
    assert!(rows.iter().all(|r| !r[cpu].is_empty()), "{text}");
    let Some(page) = browser_check(&html, &server.dir.join("report.png")) else {
        return;
    };
    assert_eq!(page["problems"], serde_json::json!([]), "{page}");
    let c = page["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "chart-quic")
        .unwrap_or_else(|| panic!("no QUIC chart: {page}"));
    let sets = c["datasets"].as_array().unwrap();
    let labels: Vec<&str> = sets.iter().map(|d| d["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "packets sent/s",
            "datagrams received/s",
            "packets lost/s",
            "congestion events/s",
            "flow-control blocks/s"
        ],
        "{c}"
    );
    assert!(c["painted"].as_u64().unwrap() > 2000, "not drawn: {c}");
    // Thousands of packets a second went each way.
    for d in &sets[..2] {
        assert!(d["max"].as_f64().unwrap() > 1000.0, "{c}");
    }
}

/// Protocol-generic features over HTTP/3: stages ramping the arrival rate (every request
/// started is accounted for and caddy logs each that completed), and `--expect` thresholds
/// (those met, exit 0; one that cannot be met, exit 3, the run still whole).
#[test]
fn stages_and_expectations_work_over_http3() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let v = run_h3(&[
        &url,
        "--rate",
        "200",
        "--stages",
        "1s:400,1s:100",
        "-c",
        "2",
    ]);
    let completed = count(&v, &["requests", "completed"]);
    assert!(completed >= 400, "{v}");
    assert_eq!(count(&v, &["errors", "total"]), 0, "{v}");
    assert_eq!(
        caddy_h3_requests(&server, completed as usize).len() as u64,
        completed
    );
    let logged = completed;
    let met = run_h3(&[
        &url,
        "-n",
        "300",
        "-c",
        "2",
        "--expect",
        "p99<5s",
        "--expect",
        "errors<1%",
    ]);
    assert_eq!(thresholds_held(&met), vec![true, true], "{met}");
    let mut all = vec![&url[..], "-n", "300", "-c", "2", "--expect", "p50<1us"];
    all.extend(["--http3", "--insecure", "--json", "-", "-q"]);
    let (out, _) = wait_bounded(spawn_any_backend(&all), Duration::from_secs(40));
    // A threshold missed: exit 3, as on any run.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let unmet: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(thresholds_held(&unmet), vec![false], "{unmet}");
    assert_eq!(count(&unmet, &["requests", "completed"]), 300);
    assert_eq!(
        caddy_h3_requests(&server, logged as usize + 600).len() as u64,
        logged + 600
    );
}

/// Server-sent events over HTTP/3 (aioquic sends 20 events a stream, one every 5 ms): every
/// stream and event counted exactly; with --stream-limit 5 each stream is cut (cancelled with
/// H3_REQUEST_CANCELLED) after its fifth event and booked as a response.
#[test]
fn event_streams_over_http3_are_counted_event_by_event() {
    let Some(server) = Aioquic::start(&["sse", "20"]) else {
        return;
    };
    let url = server.url();
    let v = run_h3(&[&url, "-n", "40", "-c", "2", "--streams", "4"]);
    let s = &v["event_streams"];
    assert_eq!(count(&v, &["requests", "completed"]), 40, "{v}");
    assert_eq!(count(s, &["streams"]), 40, "{s}");
    assert_eq!(count(s, &["events"]), 800, "{s}");
    assert_eq!(count(s, &["cut"]), 0, "{s}");
    let v = run_h3(&[
        &url,
        "-n",
        "40",
        "-c",
        "2",
        "--streams",
        "4",
        "--stream-limit",
        "5",
    ]);
    let s = &v["event_streams"];
    assert_eq!(count(&v, &["requests", "completed"]), 40, "{v}");
    assert_eq!(count(&v, &["errors", "total"]), 0, "{v}");
    assert_eq!(count(s, &["events"]), 200, "{s}");
    assert_eq!(count(s, &["cut"]), 40, "{s}");
    assert_eq!(server.served(80), 80);
}

/// caddy advertises HTTP/3 on its HTTPS responses (`Alt-Svc: h3=":PORT"`): a run over
/// HTTP/1.1 or HTTP/2 says so in a note (suggesting --http3); the HTTP/3 run does not, and
/// neither does a run against a server that advertises nothing.
#[test]
fn a_server_advertising_http3_gets_a_note_suggesting_it() {
    let Some(server) = caddy("") else {
        return;
    };
    let url = server.url("https", 0);
    let says = |v: &serde_json::Value| {
        v["notes"].as_array().unwrap().iter().any(|n| {
            n.as_str()
                .unwrap()
                .contains("advertises HTTP/3 (Alt-Svc: h3)")
        })
    };
    for h2 in [false, true] {
        let mut args = vec![&url[..], "-n", "50", "--insecure"];
        if h2 {
            args.push("--http2");
        }
        let v = run_json(&args);
        assert!(says(&v), "http2 {h2}: {v}");
    }
    assert!(!says(&run_h3(&[&url, "-n", "50"])));
    let (_server, plain) = serve(pelt_server::ServerConfig::default());
    assert!(!says(&run_json(&[&plain, "-n", "50"])));
}

#[test]
fn http3_refuses_what_it_cannot_do_in_one_line() {
    assert_bad_input(
        &["http://127.0.0.1:1/", "--http3", "-n", "1"],
        "--http3 needs an https:// URL",
    );
    assert_bad_input(
        &[
            "https://127.0.0.1:1/",
            "--http3",
            "--pipeline",
            "4",
            "-n",
            "1",
        ],
        "'--http3' cannot be used with '--pipeline",
    );
    assert_bad_input(
        &[
            "https://127.0.0.1:1/",
            "--h3",
            "--unix-socket",
            "/tmp/x.sock",
            "-n",
            "1",
        ],
        "'--http3' cannot be used with '--unix-socket",
    );
    assert_bad_input(
        &[
            "https://127.0.0.1:1/",
            "--http3",
            "--tls-version",
            "1.2",
            "-n",
            "1",
        ],
        "QUIC's TLS is 1.3",
    );
    assert_bad_input(
        &["https://127.0.0.1:1/", "--tls-early-data", "-n", "1"],
        "required arguments were not provided: --http3",
    );
    assert_bad_input(
        &[
            "https://127.0.0.1:1/",
            "--http3",
            "--tls-early-data",
            "--tls-full-handshake",
            "-n",
            "1",
        ],
        "'--tls-early-data' cannot be used with '--tls-full-handshake'",
    );
    assert_bad_input(
        &[
            "https://127.0.0.1:1/",
            "--http3",
            "--targets",
            "/dev/null",
            "--targets-read",
            "stream",
            "-n",
            "1",
        ],
        "--targets-read stream: a targets file is read as the run goes over HTTP/1.1",
    );
}

/// A network namespace of its own (its loopback only), removed when dropped.
struct Netns(String);

impl Netns {
    /// A fresh namespace with its loopback up, or `None` (skipped, outside CI) without root or
    /// iproute2.
    fn new(tag: &str) -> Option<Netns> {
        let root = rustix::process::geteuid().is_root();
        let ip = std::process::Command::new("ip")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !root || !ip {
            let why = format!("needs root ({root}) and iproute2 ({ip})");
            assert!(std::env::var_os("CI").is_none(), "{tag}: {why}");
            eprintln!("SKIPPED: {tag}: {why}");
            return None;
        }
        let name = format!("pelt-{tag}-{}", std::process::id());
        let ns = Netns(name);
        ns.ip(&["netns", "add", &ns.0]);
        ns.ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
        Some(ns)
    }

    fn ip(&self, args: &[&str]) {
        let out = std::process::Command::new("ip")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "ip {args:?}: {out:?}");
    }

    /// `program args` run inside the namespace.
    fn command(&self, program: &str) -> std::process::Command {
        let mut c = std::process::Command::new("ip");
        c.args(["netns", "exec", &self.0, program]);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "delete", &self.0])
            .status();
    }
}

/// 5 % of packets dropped (at random, by nftables, in a network namespace of their own with
/// caddy and pelt inside): QUIC sends again what was lost, every request is accounted for, caddy's log
/// holds each that completed, and the losses show in the result's `quic` section.
#[test]
fn five_percent_packet_loss_loses_no_request_uncounted() {
    let Some(bin) = util::real::find_server("caddy", "caddy", &["/usr/bin/caddy"]) else {
        return;
    };
    let Some(ns) = Netns::new("h3loss") else {
        return;
    };
    // netem is not in every kernel (this machine's has no sch_netem); nftables' random drop
    // of every UDP packet as it arrives (both ways, on the loopback) is the same loss. (A drop
    // on output is not: the sender's send fails with EPERM, which caddy's QUIC does not take
    // as a loss, and its connections stall.)
    if !std::path::Path::new("/usr/sbin/nft").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nft is missing; .ci/run installs it"
        );
        eprintln!("SKIPPED: nft is not installed (Debian package: nftables)");
        return;
    }
    for rule in [
        "add table inet loss",
        "add chain inet loss in { type filter hook input priority 0 ; }",
        "add rule inet loss in meta l4proto udp numgen random mod 20 == 0 drop",
    ] {
        let nft = ns.command("nft").args(rule.split(' ')).output().unwrap();
        assert!(nft.status.success(), "nft {rule}: {nft:?}");
    }
    let dir = std::env::temp_dir().join(format!("pelt-h3loss-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    std::fs::write(
        dir.join("Caddyfile"),
        format!(
            "{{\n\tadmin off\n\tskip_install_trust\n\tdefault_sni 127.0.0.1\n\t\
             storage file_system {d}/data\n}}\nhttps://127.0.0.1:8443 {{\n\ttls internal\n\t\
             log {{\n\t\toutput file {d}/access.log\n\t}}\n\trespond \"ok\" 200\n}}\n"
        ),
    )
    .unwrap();
    let caddy = ns
        .command(bin.to_str().unwrap())
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", &dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut caddy = Killed(caddy);
    // Its UDP listener, as the namespace's sockets show it.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let ss = ns
            .command("ss")
            .args(["-Hlun", "sport = :8443"])
            .output()
            .unwrap();
        if !ss.stdout.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "caddy did not listen on UDP"
        );
        assert!(caddy.0.try_wait().unwrap().is_none(), "caddy exited");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = ns
        .command(env!("CARGO_BIN_EXE_pelt"))
        .args([
            "https://127.0.0.1:8443/",
            "--http3",
            "--insecure",
            "-n",
            "2000",
            "-c",
            "4",
            "--streams",
            "8",
            "--json",
            "-",
            "-q",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (out, _) = wait_bounded(out, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    let completed = count(&v, &["requests", "completed"]);
    let errors = count(&v, &["requests", "errors"]);
    assert_eq!(completed + errors, 2000, "{v}");
    assert!(count(&v, &["quic", "packets_lost"]) > 0, "{v}");
    // Each request that completed was served once; one pelt gave up on may have been too.
    let log = dir.join("access.log");
    let served = |at_least: u64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let n = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("\"HTTP/3.0\""))
                .count() as u64;
            if n >= at_least || std::time::Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let logged = served(completed);
    assert!(
        logged >= completed && logged <= completed + errors,
        "{logged}: {v}"
    );
    drop(caddy);
    let _ = std::fs::remove_dir_all(&dir);
}
