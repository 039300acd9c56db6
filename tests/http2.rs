//! HTTP/2: against the built-in server (hyper's HTTP/2, a real peer) with exact accounting,
//! and against scripted raw HTTP/2 servers for what hyper will not do on demand (a zero
//! window, RST_STREAM, PING before answering, HTTP/1.1 on an h2c port).

mod util;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use util::h2::*;
use util::*;

/// The backends here: epoll, and io_uring where this kernel allows it.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        b.push("uring");
    }
    b
}

fn h2_server(cfg: pelt_server::ServerConfig) -> (pelt_server::Server, String) {
    serve(pelt_server::ServerConfig { h2: true, ..cfg })
}

/// Runs pelt on the backend given in `args` (not PELT_IO's) and returns the JSON result.
fn run_h2(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--http2", "--json", "-", "-q"]);
    let (out, _) = wait_bounded(spawn_any_backend(&all), Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pelt {all:?}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    v
}

#[test]
fn h2c_counts_are_exact_on_every_backend() {
    for io in backends() {
        let (server, url) = h2_server(Default::default());
        let v = run_h2(&[
            &url,
            "-n",
            "5000",
            "-c",
            "4",
            "--streams",
            "16",
            "-t",
            "1",
            "--io",
            io,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 5000, "{io}: {v}");
        assert_eq!(count(&v, &["status", "200"]), 5000, "{io}: {v}");
        assert_eq!(v["http"], "2", "{io}: {v}");
        assert_eq!(v["streams"], 16, "{io}: {v}");
        assert_eq!(count(&v, &["connections_opened"]), 4, "{io}: {v}");
        assert_eq!(server.stop(), 5000, "{io}");
    }
}

#[test]
fn open_loop_takes_free_streams() {
    let (server, url) = h2_server(Default::default());
    let v = run_h2(&[&url, "--rate", "2000", "-d", "1s", "-c", "2", "-t", "1"]);
    let completed = count(&v, &["requests", "completed"]);
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert!(completed >= 1900, "{v}");
    assert_eq!(v["streams"], 100, "open loop's default: {v}");
    // A duration run does not drain: the server may have answered requests still in flight
    // for pelt at the stop, never more.
    let served = server.stop();
    let in_flight = count(&v, &["requests", "in_flight"]);
    assert!(
        (completed..=completed + in_flight).contains(&served),
        "served {served}: {v}"
    );
}

#[test]
fn post_bodies_and_1mb_responses() {
    let (server, url) = h2_server(pelt_server::ServerConfig {
        body_size: 1 << 20,
        ..Default::default()
    });
    let body = "x".repeat(100_000);
    let v = run_h2(&[
        &url,
        "-n",
        "60",
        "-c",
        "2",
        "--streams",
        "4",
        "-m",
        "POST",
        "-b",
        &body,
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 60, "{v}");
    // Every response body arrived: the receive windows were opened as it came.
    assert!(count(&v, &["bytes", "received"]) >= 60 << 20, "{v}");
    // Every request body was sent: 100 KB each, over the server's 64 KiB initial window.
    assert!(count(&v, &["bytes", "sent"]) >= 60 * 100_000, "{v}");
    assert_eq!(server.stop(), 60);
}

#[test]
fn goaway_mid_run_finishes_what_it_may_and_retries_the_rest() {
    for io in backends() {
        // GOAWAY after every 50 requests of a connection, with 8 streams open on each.
        let (server, url) = h2_server(pelt_server::ServerConfig {
            max_requests: Some(50),
            ..Default::default()
        });
        let v = run_h2(&[
            &url,
            "-n",
            "2000",
            "-c",
            "2",
            "--streams",
            "8",
            "-t",
            "1",
            "--io",
            io,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 2000, "{io}: {v}");
        assert_eq!(count(&v, &["requests", "errors"]), 0, "{io}: {v}");
        // Each connection serves its 50, plus the streams it had open when it sent GOAWAY
        // (up to 7): 2000 / 57 connections at the least.
        assert!(count(&v, &["connections_opened"]) >= 2000 / 57, "{io}: {v}");
        assert_eq!(server.stop(), 2000, "{io}");
    }
}

#[test]
fn a_server_allowing_one_stream_gets_one() {
    let (server, url) = h2_server(pelt_server::ServerConfig {
        max_streams: Some(1),
        delay: Duration::from_millis(1),
        ..Default::default()
    });
    // hyper refuses (RST_STREAM) a stream over its limit: zero errors means pelt kept to it.
    let v = run_h2(&[&url, "-n", "300", "-c", "2", "--streams", "10", "-t", "1"]);
    assert_eq!(count(&v, &["requests", "completed"]), 300, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert_eq!(server.stop(), 300);
}

#[test]
fn https_negotiates_h2_with_alpn_and_verifies() {
    let identity = pelt_server::TlsIdentity::self_signed().unwrap();
    let ca = std::env::temp_dir().join(format!("pelt-h2-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, &identity.cert_pem).unwrap();
    let server = pelt_server::Server::start(pelt_server::ServerConfig {
        tls: Some(identity.clone()),
        h2: true,
        ..Default::default()
    })
    .unwrap();
    let url = format!("https://127.0.0.1:{}/", server.addr().port());
    let ca_path = ca.to_str().unwrap();
    for io in backends() {
        let v = run_h2(&[
            &url,
            "-n",
            "3000",
            "-c",
            "3",
            "--streams",
            "8",
            "--cacert",
            ca_path,
            "--io",
            io,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 3000, "{io}: {v}");
        let handshakes =
            count(&v, &["tls_handshakes", "full"]) + count(&v, &["tls_handshakes", "resumed"]);
        assert_eq!(handshakes, 3, "{io}: {v}");
    }
    assert_eq!(server.stop(), 6000);
    // A TLS server that offers only http/1.1: a protocol error that says what to do.
    let h1 = pelt_server::Server::start(pelt_server::ServerConfig {
        tls: Some(identity),
        ..Default::default()
    })
    .unwrap();
    let url = format!("https://127.0.0.1:{}/", h1.addr().port());
    let v = run_h2(&[&url, "-n", "5", "-c", "1", "--cacert", ca_path]);
    assert_eq!(count(&v, &["errors", "protocol"]), 5, "{v}");
    let example = v["error_examples"]["protocol"].as_str().unwrap();
    assert!(example.contains("ALPN"), "{example}");
    assert_eq!(h1.stop(), 0);
    let _ = std::fs::remove_file(ca);
}

#[test]
fn an_http1_server_on_an_h2c_url_is_a_protocol_error() {
    let (server, url) = serve(Default::default());
    let v = run_h2(&[&url, "-n", "5", "-c", "1"]);
    // hyper closes at once on a preface it cannot parse.
    assert_eq!(count(&v, &["errors", "closed"]), 5, "{v}");
    let example = v["error_examples"]["closed"].as_str().unwrap();
    assert!(example.contains("prior knowledge"), "{example}");
    assert_eq!(server.stop(), 0);
    // A server that answers HTTP/1.1 400 (as nginx does) is told apart by its bytes.
    let raw = RawServer::start(|mut s| {
        let mut buf = [0u8; 24];
        let _ = s.read_exact(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        std::thread::sleep(Duration::from_millis(100));
    });
    let v = run_h2(&[&raw.url(), "-n", "3", "-c", "1"]);
    assert_eq!(count(&v, &["errors", "protocol"]), 3, "{v}");
    let example = v["error_examples"]["protocol"].as_str().unwrap();
    assert!(example.contains("HTTP/1.x"), "{example}");
}

#[test]
fn http2_flags_are_checked_before_any_traffic() {
    let port = closed_port().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    for args in [
        vec![url.as_str(), "--streams", "4"],
        vec![url.as_str(), "--http2", "--pipeline", "4"],
        vec![url.as_str(), "--http2", "--no-keepalive"],
        vec![url.as_str(), "--http2", "--streams", "0"],
    ] {
        let (out, _) = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

// ---- scripted HTTP/2 servers ----

/// Reads one frame: (type, flags, stream, payload); `None` at EOF.
#[test]
fn a_zero_window_times_out_and_never_hangs() {
    let data_bytes = Arc::new(AtomicU64::new(0));
    let seen = data_bytes.clone();
    // SETTINGS_INITIAL_WINDOW_SIZE 0 and never a WINDOW_UPDATE: no body byte may be sent.
    let server = RawServer::start(move |mut s| {
        if !accept_h2(&mut s, &[(4, 0)]) {
            return;
        }
        while let Some((kind, _, _, payload)) = read_frame(&mut s) {
            if kind == DATA {
                seen.fetch_add(payload.len() as u64, Ordering::Relaxed);
            }
        }
    });
    let url = server.url();
    let (out, _) = wait_bounded(
        spawn(&[
            &url,
            "--http2",
            "-n",
            "3",
            "-c",
            "1",
            "-m",
            "POST",
            "-b",
            "hello",
            "--timeout",
            "300ms",
            "--json",
            "-",
            "-q",
        ]),
        Duration::from_secs(20),
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    assert_eq!(count(&v, &["errors", "timeout"]), 3, "{v}");
    assert_eq!(
        data_bytes.load(Ordering::Relaxed),
        0,
        "DATA sent past a zero window"
    );
}

#[test]
fn rst_stream_is_its_own_error_kind_and_ping_is_answered() {
    let pings_acked = Arc::new(AtomicU64::new(0));
    let acked = pings_acked.clone();
    // Answers stream 1 with 200 only after its PING is acknowledged, resets every other
    // stream with REFUSED_STREAM.
    let server = RawServer::start(move |mut s| {
        if !accept_h2(&mut s, &[]) {
            return;
        }
        while let Some((kind, flags, stream, payload)) = read_frame(&mut s) {
            match kind {
                HEADERS if stream == 1 => write_frame(&mut s, PING, 0, 0, b"pingpong"),
                HEADERS => write_frame(&mut s, RST_STREAM, 0, stream, &7u32.to_be_bytes()),
                PING if flags & 1 == 1 && payload == b"pingpong" => {
                    acked.fetch_add(1, Ordering::Relaxed);
                    // :status 200 (static index 8), END_STREAM | END_HEADERS.
                    write_frame(&mut s, HEADERS, 0x5, 1, &[0x88]);
                }
                _ => {}
            }
        }
    });
    let v = run_h2(&[&server.url(), "-n", "4", "-c", "1"]);
    assert_eq!(count(&v, &["status", "200"]), 1, "{v}");
    assert_eq!(count(&v, &["errors", "stream_reset"]), 3, "{v}");
    let example = v["error_examples"]["stream_reset"].as_str().unwrap();
    assert!(example.contains("REFUSED_STREAM"), "{example}");
    assert_eq!(
        count(&v, &["error_codes", "stream_reset", "REFUSED_STREAM"]),
        3
    );
    assert!(v["error_hints"]["stream_reset"].is_string(), "{v}");
    assert_eq!(pings_acked.load(Ordering::Relaxed), 1);
}

/// An HTTPS HTTP/2 server that sends its SETTINGS in the same TCP write as its last handshake
/// message, as nginx does on TLS 1.2 (SETTINGS right behind its Finished) and as a TLS 1.3
/// server may (0.5-RTT data behind its Finished): the client's read that ends the handshake
/// also holds the first HTTP/2 frame. Every HEADERS frame gets `:status 200` with END_STREAM.
/// The SETTINGS frame is queued in the session before the handshake, so rustls writes it as
/// soon as it may send application data: in the same `write_tls` output as its Finished.
/// Returns the server and the path of its certificate, for `--cacert`.
fn settings_with_finished_server(
    version: &'static rustls::SupportedProtocolVersion,
) -> (RawServer, std::path::PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let config = Arc::new(config);
    let pem = cert.pem();
    let server = RawServer::start(move |mut sock| {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut tls = rustls::ServerConnection::new(config.clone()).unwrap();
        let mut frames = vec![0, 0, 0, SETTINGS, 0, 0, 0, 0, 0];
        tls.writer().write_all(&frames).unwrap();
        frames.clear();
        let mut plain = Vec::new();
        let mut preface_seen = false;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // Everything rustls has to send goes out in one write: one segment on loopback.
            let mut wire = Vec::new();
            while tls.wants_write() {
                tls.write_tls(&mut wire).unwrap();
            }
            if !wire.is_empty() && sock.write_all(&wire).is_err() {
                return;
            }
            match sock.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut input = &buf[..n];
                    while !input.is_empty() {
                        if tls.read_tls(&mut input).is_err() || tls.process_new_packets().is_err() {
                            return;
                        }
                    }
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            while let Ok(n) = tls.reader().read(&mut chunk) {
                if n == 0 {
                    return;
                }
                plain.extend_from_slice(&chunk[..n]);
            }
            if !preface_seen {
                if plain.len() < 24 {
                    continue;
                }
                assert_eq!(&plain[..24], b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
                plain.drain(..24);
                preface_seen = true;
            }
            // Whole frames: SETTINGS get their ack, HEADERS their response.
            while plain.len() >= 9 {
                let len = (plain[0] as usize) << 16 | (plain[1] as usize) << 8 | plain[2] as usize;
                if plain.len() < 9 + len {
                    break;
                }
                let (kind, flags) = (plain[3], plain[4]);
                let stream = u32::from_be_bytes([plain[5], plain[6], plain[7], plain[8]]);
                plain.drain(..9 + len);
                let mut reply = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
                    frames.extend_from_slice(&[0, 0, payload.len() as u8, kind, flags]);
                    frames.extend_from_slice(&stream.to_be_bytes());
                    frames.extend_from_slice(payload);
                };
                match kind {
                    SETTINGS if flags & 1 == 0 => reply(SETTINGS, 1, 0, &[]),
                    // :status 200 (static index 8), END_STREAM | END_HEADERS.
                    HEADERS => reply(HEADERS, 0x5, stream, &[0x88]),
                    _ => {}
                }
            }
            if !frames.is_empty() {
                tls.writer().write_all(&frames).unwrap();
                frames.clear();
            }
        }
    });
    let ca = std::env::temp_dir().join(format!(
        "pelt-h2-finished-{}-{}.pem",
        std::process::id(),
        server.addr.port()
    ));
    std::fs::write(&ca, pem).unwrap();
    (server, ca)
}

/// Regression (nginx, TLS 1.2, HTTP/2): the read that ended the handshake also held the
/// server's SETTINGS, and those bytes were parsed as HTTP/1.1 ("not HTTP"), failing the
/// connection's first request and reconnecting. Every run must be exact.
#[test]
fn settings_in_the_same_segment_as_the_tls_finished_are_read_as_http2() {
    for (name, version) in [
        ("1.2", &rustls::version::TLS12),
        ("1.3", &rustls::version::TLS13),
    ] {
        let (server, ca) = settings_with_finished_server(version);
        let url = format!("https://127.0.0.1:{}/", server.addr.port());
        for io in backends() {
            let v = run_h2(&[
                &url,
                "-n",
                "2000",
                "-c",
                "4",
                "--streams",
                "10",
                "-t",
                "1",
                "--tls-version",
                name,
                "--cacert",
                ca.to_str().unwrap(),
                "--io",
                io,
            ]);
            assert_eq!(
                count(&v, &["requests", "completed"]),
                2000,
                "TLS {name} {io}: {v}"
            );
            assert_eq!(
                count(&v, &["requests", "errors"]),
                0,
                "TLS {name} {io}: {v}"
            );
            assert_eq!(
                count(&v, &["connections_opened"]),
                4,
                "TLS {name} {io}: {v}"
            );
            assert_eq!(
                count(&v, &["tls_handshakes", "full"]),
                4,
                "TLS {name} {io}: {v}"
            );
        }
        let _ = std::fs::remove_file(ca);
    }
}
