//! HTTPS: the built-in server's TLS, checked with a real rustls client that verifies the
//! certificate (never with verification off).

mod util;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
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
    let mut child = pelt()
        .args(["serve", "--tls", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("listening on https://").expect(&first);
    let addr = url.to_string();
    let second = lines.next().unwrap().unwrap();
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
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let last = lines.next().unwrap().unwrap();
    assert_eq!(last, "served 2 requests");
    let (out, _) = wait_bounded(child, Duration::from_secs(10));
    assert!(out.status.success());
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
