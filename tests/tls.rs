//! HTTPS: the built-in server's TLS, checked with a real rustls client that verifies the
//! certificate (never with verification off).

mod util;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;
use util::*;

/// A rustls client config that trusts exactly the certificates in `pem` (none: an empty store).
fn client_trusting(pem: Option<&[u8]>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots.add(cert.unwrap()).unwrap();
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// One GET over TLS to `addr` as `name`; the response's first line, or the TLS error.
fn get(addr: &str, name: &str, config: Arc<rustls::ClientConfig>) -> Result<String, String> {
    let server_name = ServerName::try_from(name.to_string()).unwrap();
    let conn = rustls::ClientConnection::new(config, server_name).unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let request = format!("GET / HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    match tls.read_to_end(&mut response) {
        Ok(_) => {}
        // The server may close without close_notify after Connection: close.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(e) => return Err(e.to_string()),
    }
    let text = String::from_utf8_lossy(&response);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

#[test]
fn serve_tls_uses_a_certificate_clients_can_verify() {
    let mut serve = ServeProcess::start(&["--tls", "--port", "0"]);
    let first = serve.line();
    let url = first.strip_prefix("listening on https://").expect(&first);
    let addr = url.to_string();
    let second = serve.line();
    let path = second
        .strip_prefix("certificate ")
        .and_then(|s| s.split(' ').next())
        .expect(&second)
        .to_string();
    let pem = std::fs::read(&path).unwrap();
    let trusted = client_trusting(Some(&pem));
    // Verified against the certificate, by name and by IP address.
    assert_eq!(
        get(&addr, "localhost", trusted.clone()).unwrap(),
        "HTTP/1.1 200 OK"
    );
    assert_eq!(
        get(&addr, "127.0.0.1", trusted.clone()).unwrap(),
        "HTTP/1.1 200 OK"
    );
    // A client that does not trust it refuses, and so does one asking for another name.
    let err = get(&addr, "localhost", client_trusting(None)).unwrap_err();
    assert!(err.contains("UnknownIssuer"), "{err}");
    let err = get(&addr, "example.com", trusted).unwrap_err();
    assert!(err.contains("not valid for name"), "{err}");
    assert_eq!(serve.stop(), "served 2 requests");
    assert!(
        !std::path::Path::new(&path).exists(),
        "certificate file left behind"
    );
}

#[test]
fn serve_with_a_bad_certificate_file_is_bad_input() {
    let dir = std::env::temp_dir().join(format!("pelt-tls-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, "not a certificate").unwrap();
    std::fs::write(&key, "not a key").unwrap();
    let (out, _) = run(&[
        "serve",
        "--port",
        "0",
        "--cert",
        cert.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The built-in server over TLS in-process, and its certificate in a PEM file.
fn tls_server() -> (pelt_server::Server, String, std::path::PathBuf) {
    let identity = pelt_server::TlsIdentity::self_signed().unwrap();
    let path = std::env::temp_dir().join(format!(
        "pelt-test-ca-{}-{:?}.pem",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, &identity.cert_pem).unwrap();
    let server = pelt_server::Server::start(pelt_server::ServerConfig {
        tls: Some(identity),
        ..Default::default()
    })
    .unwrap();
    let url = format!("https://127.0.0.1:{}/", server.addr().port());
    (server, url, path)
}

/// Runs pelt (whatever PELT_IO says: https picks its backend itself) and returns the JSON.
fn run_https(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--json", "-", "-q"]);
    let child = spawn_any_backend(&all);
    let (out, _) = wait_bounded(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pelt {args:?}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_invariant(&v);
    v
}

/// The backends here: epoll, and io_uring where this kernel allows it.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        b.push("uring");
    }
    b
}

#[test]
fn https_on_every_backend() {
    for io in backends() {
        let (server, url, ca) = tls_server();
        let ca_path = ca.to_str().unwrap();
        let v = run_https(&[
            &url, "-n", "2000", "-c", "8", "--cacert", ca_path, "--io", io,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 2000, "{io}: {v}");
        // One handshake per connection; those that start after a session exists resume it.
        let (full, resumed) = (
            count(&v, &["tls_handshakes", "full"]),
            count(&v, &["tls_handshakes", "resumed"]),
        );
        assert!(full >= 1 && full + resumed == 8, "{io}: {v}");
        let v = reconnecting(&url, ca_path, 30, &["--io", io]);
        assert_eq!(count(&v, &["requests", "completed"]), 30, "{io}: {v}");
        assert_eq!(count(&v, &["tls_handshakes", "resumed"]), 29, "{io}: {v}");
        assert_eq!(server.stop(), 2030, "{io}");
        // Large bodies: many TLS records per response, more than a receive buffer.
        let identity = pelt_server::TlsIdentity::self_signed().unwrap();
        std::fs::write(&ca, &identity.cert_pem).unwrap();
        let big = pelt_server::Server::start(pelt_server::ServerConfig {
            tls: Some(identity),
            body_size: 256 * 1024,
            ..Default::default()
        })
        .unwrap();
        let big_url = format!("https://127.0.0.1:{}/", big.addr().port());
        let v = run_https(&[
            &big_url, "-n", "40", "-c", "4", "--cacert", ca_path, "--io", io,
        ]);
        assert_eq!(count(&v, &["requests", "completed"]), 40, "{io}: {v}");
        assert!(
            count(&v, &["bytes", "received"]) > 40 * 256 * 1024,
            "{io}: {v}"
        );
        assert_eq!(big.stop(), 40, "{io}");
        let _ = std::fs::remove_file(ca);
    }
}

/// `n` requests over one connection at a time, a new connection each, verified with `ca`.
fn reconnecting(url: &str, ca: &str, n: u64, extra: &[&str]) -> serde_json::Value {
    let n = n.to_string();
    let mut args = vec![url, "-n", &n, "-c", "1", "--no-keepalive", "--cacert", ca];
    args.extend_from_slice(extra);
    run_https(&args)
}

#[test]
fn https_keep_alive_with_verification_is_exact() {
    let (server, url, ca) = tls_server();
    let v = run_https(&[
        &url,
        "-n",
        "500",
        "-c",
        "4",
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 500, "{v}");
    let (full, resumed) = (
        count(&v, &["tls_handshakes", "full"]),
        count(&v, &["tls_handshakes", "resumed"]),
    );
    assert!(full >= 1 && full + resumed == 4, "{v}");
    assert_eq!(v["tls"]["insecure"], false);
    // An https result matches the documented schema too.
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(server.stop(), 500);
    let _ = std::fs::remove_file(ca);
}

#[test]
fn an_unknown_issuer_is_a_tls_error_with_a_hint() {
    let (server, url, ca) = tls_server();
    let v = run_https(&[&url, "-n", "5", "-c", "1"]);
    assert_eq!(count(&v, &["errors", "tls"]), 5, "{v}");
    let example = v["error_examples"]["tls"].as_str().unwrap_or_default();
    assert!(example.contains("UnknownIssuer"), "{example}");
    let hint = v["error_hints"]["tls"].as_str().unwrap_or_default();
    assert!(hint.contains("--cacert"), "{hint}");
    assert_eq!(server.stop(), 0, "no request reached the server");
    let _ = std::fs::remove_file(ca);
}

#[test]
fn insecure_works_and_says_so() {
    let (server, url, ca) = tls_server();
    let v = run_https(&[&url, "-n", "50", "-c", "2", "--insecure"]);
    assert_eq!(count(&v, &["requests", "completed"]), 50);
    assert_eq!(v["tls"]["insecure"], true);
    let notes = v["notes"].to_string();
    assert!(notes.contains("NOT verified"), "{notes}");
    let child = spawn_any_backend(&[&url, "-n", "10", "-c", "1", "-k"]);
    let (out, _) = wait_bounded(child, Duration::from_secs(30));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("certificate NOT verified"), "{summary}");
    server.stop();
    let _ = std::fs::remove_file(ca);
}

#[test]
fn new_connections_resume_sessions_unless_told_not_to() {
    let (server, url, ca) = tls_server();
    let ca = ca.to_str().unwrap().to_string();
    let v = reconnecting(&url, &ca, 50, &[]);
    assert_eq!(count(&v, &["requests", "completed"]), 50, "{v}");
    assert_eq!(count(&v, &["connections_opened"]), 50);
    assert_eq!(count(&v, &["tls_handshakes", "full"]), 1, "{v}");
    assert_eq!(count(&v, &["tls_handshakes", "resumed"]), 49);
    let v = reconnecting(&url, &ca, 20, &["--tls-full-handshake"]);
    assert_eq!(count(&v, &["tls_handshakes", "full"]), 20, "{v}");
    assert_eq!(count(&v, &["tls_handshakes", "resumed"]), 0);
    assert_eq!(v["tls"]["resumption"], false);
    assert_eq!(server.stop(), 70);
    let _ = std::fs::remove_file(ca);
}

#[test]
fn plain_http_on_an_https_url_is_a_tls_error() {
    // Answers in plain HTTP as soon as anything arrives (the ClientHello has no blank line).
    let server = RawServer::start(|mut s| {
        let mut hello = [0u8; 512];
        if s.read(&mut hello).is_ok_and(|n| n > 0) {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let url = format!("https://{}/", server.addr);
    let v = run_https(&[&url, "-n", "3", "-c", "1", "--insecure"]);
    assert_eq!(count(&v, &["errors", "tls"]), 3, "{v}");
    let example = v["error_examples"]["tls"].as_str().unwrap_or_default();
    assert!(
        !example.contains("within"),
        "a corrupt record, not a timeout: {example}"
    );
}

#[test]
fn tls_flags_are_checked_before_any_traffic() {
    let (server, url, ca) = tls_server();
    let plain = format!("http://{}/", server.addr());
    let missing = std::env::temp_dir().join("pelt-no-such-ca.pem");
    let empty = std::env::temp_dir().join(format!("pelt-empty-ca-{}.pem", std::process::id()));
    std::fs::write(&empty, "nothing here").unwrap();
    for (args, says) in [
        (vec![plain.as_str(), "--insecure"], "https"),
        (
            vec![url.as_str(), "--cacert", missing.to_str().unwrap()],
            "cannot read --cacert",
        ),
        (
            vec![url.as_str(), "--cacert", empty.to_str().unwrap()],
            "no PEM certificate",
        ),
        (
            vec![url.as_str(), "--cacert", ca.to_str().unwrap(), "-k"],
            "cannot be used with",
        ),
    ] {
        let (out, _) = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(server.stop(), 0);
    let _ = std::fs::remove_file(ca);
    let _ = std::fs::remove_file(empty);
}

#[test]
fn tls_version_sni_and_handshake_times() {
    let (server, url, ca) = tls_server();
    let ca = ca.to_str().unwrap().to_string();
    // TLS 1.2 resumes too (session IDs), and the handshake time is measured.
    let v = reconnecting(&url, &ca, 20, &["--tls-version", "1.2"]);
    assert_eq!(v["tls"]["version"], "1.2");
    assert_eq!(count(&v, &["tls_handshakes", "full"]), 1, "{v}");
    assert_eq!(count(&v, &["tls_handshakes", "resumed"]), 19, "{v}");
    assert!(count(&v, &["tls_handshakes", "time_us", "p50"]) > 0, "{v}");
    // --sni names what is sent and verified: the certificate holds localhost, not example.com.
    let with_sni =
        |name: &str| run_https(&[&url, "-n", "3", "-c", "1", "--cacert", &ca, "--sni", name]);
    let v = with_sni("localhost");
    assert_eq!(count(&v, &["requests", "completed"]), 3, "{v}");
    assert_eq!(v["tls"]["sni"], "localhost");
    let v = with_sni("example.com");
    assert_eq!(count(&v, &["errors", "tls"]), 3, "{v}");
    let example = v["error_examples"]["tls"].as_str().unwrap_or_default();
    assert!(example.contains("not valid for name"), "{example}");
    assert_eq!(server.stop(), 23);
    let _ = std::fs::remove_file(ca);
}

#[test]
fn an_expired_certificate_is_a_tls_error_that_says_so() {
    // Trusted (it is its own CA here) but expired in 2021.
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let ca = std::env::temp_dir().join(format!("pelt-expired-{}.pem", std::process::id()));
    std::fs::write(&ca, cert.pem()).unwrap();
    let server = pelt_server::Server::start(pelt_server::ServerConfig {
        tls: Some(pelt_server::TlsIdentity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }),
        ..Default::default()
    })
    .unwrap();
    let url = format!("https://127.0.0.1:{}/", server.addr().port());
    let v = run_https(&[&url, "-n", "2", "-c", "1", "--cacert", ca.to_str().unwrap()]);
    assert_eq!(count(&v, &["errors", "tls"]), 2, "{v}");
    let example = v["error_examples"]["tls"].as_str().unwrap_or_default();
    assert!(example.contains("certificate expired"), "{example}");
    assert_eq!(server.stop(), 0);
    let _ = std::fs::remove_file(ca);
}

/// A scripted TLS server: `identity`'s certificate, client certificates verified against
/// `client_ca` when given (and then required); each connection runs `script` on the TLS stream.
fn raw_tls_server<F>(
    cert: &rcgen::Certificate,
    key: &rcgen::KeyPair,
    client_ca: Option<&rcgen::Certificate>,
    script: F,
) -> RawServer
where
    F: Fn(&mut rustls::StreamOwned<rustls::ServerConnection, TcpStream>) + Send + Sync + 'static,
{
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = Arc::new(
        builder
            .with_single_cert(vec![cert.der().clone()], key_der)
            .unwrap(),
    );
    RawServer::start(move |sock| {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let conn = rustls::ServerConnection::new(config.clone()).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        script(&mut tls);
    })
}

/// Reads one request head from a TLS stream; false on EOF or error.
fn read_tls_request(tls: &mut impl Read) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match tls.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

#[test]
fn client_certificates_are_presented_when_asked() {
    let (ca, ca_key, server_cert, server_key) = ca_and_server_cert();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client_cert = rcgen::CertificateParams::new(vec!["pelt-client".to_string()])
        .unwrap()
        .signed_by(&client_key, &rcgen::Issuer::new(ca_params, &ca_key))
        .unwrap();
    let dir = std::env::temp_dir().join(format!("pelt-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca_path, cert_path, key_path) = (
        dir.join("ca.pem"),
        dir.join("client.pem"),
        dir.join("client.key"),
    );
    std::fs::write(&ca_path, ca.pem()).unwrap();
    std::fs::write(&cert_path, client_cert.pem()).unwrap();
    std::fs::write(&key_path, client_key.serialize_pem()).unwrap();
    let server = raw_tls_server(&server_cert, &server_key, Some(&ca), |tls| {
        while read_tls_request(tls) {
            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
            if tls.write_all(ok).and_then(|_| tls.flush()).is_err() {
                return;
            }
        }
    });
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let (ca_s, cert_s, key_s) = (
        ca_path.to_str().unwrap(),
        cert_path.to_str().unwrap(),
        key_path.to_str().unwrap(),
    );
    let v = run_https(&[
        &url, "-n", "50", "-c", "2", "--cacert", ca_s, "--cert", cert_s, "--key", key_s,
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 50, "{v}");
    // Without the certificate the server refuses the handshake: a tls error.
    let v = run_https(&[&url, "-n", "2", "-c", "1", "--cacert", ca_s]);
    assert_eq!(count(&v, &["errors", "tls"]), 2, "{v}");
    // --cert needs --key, and both must hold what they say, before any traffic.
    for args in [
        vec![url.as_str(), "--cert", cert_s],
        vec![url.as_str(), "--cert", key_s, "--key", key_s],
        vec![url.as_str(), "--cert", cert_s, "--key", cert_s],
    ] {
        let (out, _) = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_close_without_close_notify_cuts_a_close_delimited_body() {
    let (ca, _, server_cert, server_key) = ca_and_server_cert();
    let ca_path = std::env::temp_dir().join(format!("pelt-notify-{}.pem", std::process::id()));
    std::fs::write(&ca_path, ca.pem()).unwrap();
    // A body delimited by the close, then the TCP close with no close_notify: the body may
    // have been cut by an attacker or a crash, so it is incomplete, not a response.
    let server = raw_tls_server(&server_cert, &server_key, None, |tls| {
        if read_tls_request(tls) {
            let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial body");
            let _ = tls.flush();
            let _ = tls.sock.shutdown(std::net::Shutdown::Both);
        }
    });
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let ca_s = ca_path.to_str().unwrap();
    let v = run_https(&[&url, "-n", "3", "-c", "1", "--cacert", ca_s]);
    assert_eq!(count(&v, &["errors", "incomplete"]), 3, "{v}");
    assert_eq!(count(&v, &["requests", "completed"]), 0, "{v}");
    // The same with close_notify first: three complete responses.
    let clean = raw_tls_server(&server_cert, &server_key, None, |tls| {
        if read_tls_request(tls) {
            let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nwhole body");
            tls.conn.send_close_notify();
            let _ = tls.flush();
            let _ = tls.sock.shutdown(std::net::Shutdown::Both);
        }
    });
    let url = format!("https://127.0.0.1:{}/", clean.addr.port());
    let v = run_https(&[&url, "-n", "3", "-c", "1", "--cacert", ca_s]);
    assert_eq!(count(&v, &["status", "200"]), 3, "{v}");
    let _ = std::fs::remove_file(ca_path);
}
