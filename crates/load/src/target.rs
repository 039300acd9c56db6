//! Turning the URL a user typed into a resolved address, a Host header and a request target.

use anyhow::{anyhow, bail, Result};
use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// The Host header: host, plus `:port` when the URL names one.
    pub host_header: String,
    /// Origin-form request target: path and query.
    pub path: String,
    /// The URL for reports, with any credentials masked.
    pub display: String,
    /// `https`: the host to verify and send as SNI.
    pub tls_host: Option<String>,
    /// `ws://` or `wss://`.
    pub websocket: bool,
    /// `grpc://` or `grpcs://`.
    pub grpc: bool,
}

/// A URL checked for pelt, not yet resolved.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub host: url::Host<String>,
    pub port: u16,
    pub host_header: String,
    pub path: String,
    pub display: String,
    pub https: bool,
    /// `ws://` or `wss://` (`https` for `wss://`).
    pub websocket: bool,
    /// `grpc://` or `grpcs://` (`https` for `grpcs://`).
    pub grpc: bool,
}

/// Parses and resolves `raw` (resolution happens once, here, before any traffic).
pub fn resolve(raw: &str) -> Result<Target> {
    let p = parse(raw)?;
    let addr = match &p.host {
        url::Host::Ipv4(ip) => SocketAddr::from((*ip, p.port)),
        url::Host::Ipv6(ip) => SocketAddr::from((*ip, p.port)),
        url::Host::Domain(d) => (d.as_str(), p.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                anyhow!(
                    "cannot resolve host '{d}' of URL {}",
                    crate::values::quote(raw)
                )
            })?,
    };
    Ok(Target {
        addr,
        tls_host: p.https.then(|| p.host.to_string()),
        websocket: p.websocket,
        grpc: p.grpc,
        host_header: p.host_header,
        path: p.path,
        display: p.display,
    })
}

/// `raw` as a target whose connections go elsewhere (a Unix socket): checked, not resolved
/// (its address is the unspecified one and never used).
pub fn unresolved(raw: &str) -> Result<Target> {
    let p = parse(raw)?;
    Ok(Target {
        addr: SocketAddr::from(([0, 0, 0, 0], p.port)),
        tls_host: p.https.then(|| p.host.to_string()),
        websocket: p.websocket,
        grpc: p.grpc,
        host_header: p.host_header,
        path: p.path,
        display: p.display,
    })
}

/// Checks `raw` as a URL pelt can load (scheme, host, port) without resolving it.
pub fn parse(raw: &str) -> Result<Parsed> {
    // Quoted only for a message (a targets file parses a URL per line).
    let q = || crate::values::quote(raw);
    let url = url::Url::parse(raw).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => {
            let like = match raw.len() {
                0..=60 => format!("like http://{raw}"),
                _ => "with http:// or https://".into(),
            };
            anyhow!("invalid URL {}: no scheme (write it {like})", q())
        }
        url::ParseError::InvalidPort => anyhow!("invalid URL {}: port out of range (1-65535)", q()),
        e => anyhow!("invalid URL {}: {e}", q()),
    })?;
    let (https, websocket, grpc) = match url.scheme() {
        "http" => (false, false, false),
        "https" => (true, false, false),
        "ws" => (false, true, false),
        "wss" => (true, true, false),
        "grpc" => (false, false, true),
        "grpcs" => (true, false, true),
        s => bail!(
            "invalid URL {}: unsupported scheme '{s}' (supported: http, https, ws, wss, grpc, grpcs)",
            q()
        ),
    };
    let host = url
        .host()
        .ok_or_else(|| anyhow!("invalid URL {}: no host", q()))?;
    let port = url
        .port_or_known_default()
        .unwrap_or(if https { 443 } else { 80 });
    if port == 0 {
        bail!("invalid URL {}: port 0 cannot be connected to", q());
    }
    let host = host.to_owned();
    let host_str = url.host_str().unwrap_or_default();
    let host_header = match url.port() {
        Some(p) => format!("{host_str}:{p}"),
        None => host_str.to_string(),
    };
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    // The URL's own text becomes the display (no copy), credentials masked.
    let mut display = url;
    if !display.username().is_empty() {
        let _ = display.set_username("***");
    }
    if display.password().is_some() {
        let _ = display.set_password(Some("***"));
    }
    Ok(Parsed {
        host,
        port,
        host_header,
        path,
        display: display.into(),
        https,
        websocket,
        grpc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_header_and_path() {
        let t = resolve("http://127.0.0.1:8080/a/b?x=1&y").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.host_header.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/a/b?x=1&y")
        );
        let t = resolve("http://127.0.0.1").unwrap();
        assert_eq!(
            (t.host_header.as_str(), t.path.as_str(), t.addr.port()),
            ("127.0.0.1", "/", 80)
        );
        let t = resolve("http://[::1]:9/").unwrap();
        assert_eq!(t.host_header, "[::1]:9");
        assert!(resolve("http://localhost:1/").is_ok());
    }

    #[test]
    fn https_defaults_to_port_443_and_verifies_the_host() {
        let t = resolve("https://127.0.0.1/").unwrap();
        assert_eq!(t.addr.port(), 443);
        assert_eq!(t.tls_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(resolve("http://127.0.0.1/").unwrap().tls_host, None);
    }

    #[test]
    fn credentials_are_masked() {
        let t = resolve("http://user:secret@127.0.0.1:1/").unwrap();
        assert_eq!(t.display, "http://***:***@127.0.0.1:1/");
    }

    #[test]
    fn bad_urls_name_the_problem() {
        let msg = |u: &str| resolve(u).unwrap_err().to_string();
        assert!(
            msg("127.0.0.1:8080").contains("scheme")
                || msg("127.0.0.1:8080").contains("unsupported")
        );
        assert!(msg("localhost/x").contains("no scheme"));
        assert!(msg("ftp://127.0.0.1/").contains("unsupported scheme 'ftp'"));
        assert!(
            msg("gopher://127.0.0.1/").contains("(supported: http, https, ws, wss, grpc, grpcs)")
        );
        let ws = resolve("wss://127.0.0.1/chat").unwrap();
        assert!(ws.websocket && ws.tls_host.is_some() && ws.addr.port() == 443);
        assert!(resolve("ws://127.0.0.1:9/").unwrap().tls_host.is_none());
        assert!(msg("http://127.0.0.1:99999/").contains("port out of range"));
        assert!(msg("http:///").contains("invalid URL"));
        assert!(msg("http://no-such-host.invalid/").contains("cannot resolve"));
    }
}
