//! `pelt serve`: the built-in target server in the foreground.

use crate::args::ServeArgs;
use crate::{bad, values};
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::process::ExitCode;

pub fn serve(a: &ServeArgs) -> Result<ExitCode> {
    let ip: std::net::IpAddr = a.host.parse().map_err(|_| {
        bad(anyhow!(
            "invalid --host {}: expected an IP address",
            values::quote(&a.host)
        ))
    })?;
    let config = pelt_server::ServerConfig {
        addr: std::net::SocketAddr::new(ip, a.port),
        unix_socket: a.unix_socket.clone(),
        threads: a.threads,
        delay: a.delay,
        work: a.work,
        body_size: a.body_size,
        status: a.status,
        error_rate: a.error_rate,
        close: a.close,
        chunked: a.chunked,
        stall: a.stall.zip(a.stall_at).map(|(len, at)| (at, len)),
        tls: None,
        h2: a.h2,
        max_streams: a.h2.then_some(a.max_streams),
        max_requests: a.max_requests,
    };
    let (tls, cert_file) = serve_identity(a)?;
    let config = pelt_server::ServerConfig { tls, ..config };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server = pelt_server::Server::start(config).map_err(|e| match &a.unix_socket {
        Some(path) => bad(anyhow!("cannot serve on {}: {e}", path.display())),
        None => bad(anyhow!("cannot serve on {}:{}: {e}", a.host, a.port)),
    })?;
    match server.unix_socket() {
        Some(path) => println!(
            "listening on unix:{} (try: pelt http://localhost/ --unix-socket {})",
            path.display(),
            path.display()
        ),
        None => {
            let shown = match server.addr() {
                std::net::SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
                v4 => v4.to_string(),
            };
            println!("listening on {scheme}://{shown}");
        }
    }
    if let Some(path) = &cert_file {
        println!(
            "certificate {} (pass it to a client's --cacert)",
            path.display()
        );
    }
    std::io::stdout().flush()?;
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let _ = signals.forever().next();
    let served = server.stop();
    if let Some(path) = &cert_file {
        let _ = std::fs::remove_file(path);
    }
    println!("served {served} requests");
    Ok(ExitCode::SUCCESS)
}

/// The TLS identity `pelt serve` uses: --cert/--key as given, or with --tls a self-signed one
/// whose certificate is written to a file (returned) for clients to trust.
fn serve_identity(
    a: &ServeArgs,
) -> Result<(Option<pelt_server::TlsIdentity>, Option<std::path::PathBuf>)> {
    if let (Some(cert), Some(key)) = (&a.cert, &a.key) {
        let read = |p: &std::path::PathBuf, what: &str| {
            std::fs::read_to_string(p)
                .map_err(|e| bad(anyhow!("cannot read {what} {}: {e}", p.display())))
        };
        let identity = pelt_server::TlsIdentity {
            cert_pem: read(cert, "--cert")?,
            key_pem: read(key, "--key")?,
        };
        return Ok((Some(identity), None));
    }
    if !a.tls {
        return Ok((None, None));
    }
    let identity =
        pelt_server::TlsIdentity::self_signed().context("cannot make a self-signed certificate")?;
    let path = std::env::temp_dir().join(format!("pelt-serve-{}.pem", std::process::id()));
    std::fs::write(&path, &identity.cert_pem)
        .with_context(|| format!("cannot write the certificate to {}", path.display()))?;
    Ok((Some(identity), Some(path)))
}
