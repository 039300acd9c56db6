//! `pelt serve`: the built-in target server in the foreground.

use crate::args::ServeArgs;
use crate::bad;
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::process::ExitCode;

pub fn serve(a: &ServeArgs) -> Result<ExitCode> {
    let spec = &a.0;
    let config = spec.config().map_err(|e| bad(anyhow!(e)))?;
    // A self-signed certificate goes to a file, for clients to trust.
    let cert_file = match &config.tls {
        Some(identity) if spec.cert.is_none() => {
            let path = std::env::temp_dir().join(format!("pelt-serve-{}.pem", std::process::id()));
            std::fs::write(&path, &identity.cert_pem)
                .with_context(|| format!("cannot write the certificate to {}", path.display()))?;
            Some(path)
        }
        _ => None,
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server =
        pelt_server::Server::start(config).map_err(|e| match &spec.config.unix_socket {
            Some(path) => bad(anyhow!("cannot serve on {}: {e}", path.display())),
            None => bad(anyhow!(
                "cannot serve on {}: {e}",
                std::net::SocketAddr::new(spec.host, spec.port)
            )),
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
    let ws = server.ws_counts();
    let speaks_ws = spec.config.ws.is_some();
    let served = server.stop();
    if let Some(path) = &cert_file {
        let _ = std::fs::remove_file(path);
    }
    println!("served {served} requests");
    if speaks_ws {
        println!(
            "websocket: {} upgrades, {} messages received, {} sent",
            ws.upgrades, ws.received, ws.sent
        );
    }
    Ok(ExitCode::SUCCESS)
}
