//! HTTP/3 servers pelt did not write, for the tests: Debian's caddy (HTTP/3 on by default on
//! an HTTPS site, its access log one JSON line per request) and aioquic's server from PyPI
//! (`tests/interop/h3_app.py`, which can misbehave on purpose: `aioquic.rs`, shared with the
//! engine's tests). Each ended by its PID.

use super::real::{find_server, RealServer};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// caddy serving `https://127.0.0.1:PORT` with its own CA (`tls internal`), answering "ok"
/// (or `routes`: Caddyfile lines inside the site), logging each request; `None` (skipped,
/// outside CI) without caddy.
pub fn caddy(routes: &str) -> Option<RealServer> {
    let bin = find_server("caddy", "caddy", &["/usr/bin/caddy"])?;
    let routes = if routes.is_empty() {
        "respond \"ok\" 200"
    } else {
        routes
    };
    let server = RealServer::start("caddy", 1, |dir: &Path, ports: &[u16]| {
        let d = dir.display();
        let conf = format!(
            "{{\n\tadmin off\n\tskip_install_trust\n\tdefault_sni 127.0.0.1\n\t\
             storage file_system {d}/data\n}}\nhttps://127.0.0.1:{} {{\n\ttls internal\n\t\
             log {{\n\t\toutput file {d}/access.log\n\t}}\n\t{routes}\n}}\n",
            ports[0]
        );
        std::fs::write(dir.join("Caddyfile"), conf).unwrap();
        let mut cmd = Command::new(&bin);
        cmd.args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"));
        cmd
    });
    udp_listening(server.ports[0]);
    Some(server)
}

/// Waits (up to 10 s) until something reads UDP port `port` on 127.0.0.1: caddy starts its
/// HTTP/3 listener after its TCP one. A datagram to a closed port draws an ICMP unreachable
/// (a refused read); a listener drops a datagram that is not QUIC, unanswered.
pub fn udp_listening(port: u16) {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        let _ = sock.send(b"not quic");
        match sock.recv(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => return,
        }
    }
    panic!("nothing listens on UDP port {port}");
}

/// The HTTP/3 requests caddy's access log holds, each as (method, uri), once at least
/// `at_least` are there (or 5 s have passed: the log is written as requests end).
pub fn caddy_h3_requests(server: &RealServer, at_least: usize) -> Vec<(String, String)> {
    caddy_h3_log(server, at_least)
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (s("method"), s("uri"))
        })
        .collect()
}

/// The HTTP/3 requests caddy's access log holds, as its `request` objects (`method`, `uri`,
/// `headers`: each name's values), once at least `at_least` are there (or 5 s have passed).
pub fn caddy_h3_log(server: &RealServer, at_least: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&server.access_log).unwrap_or_default();
        let seen: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["request"]["proto"] == "HTTP/3.0")
            .map(|v| v["request"].clone())
            .collect();
        if seen.len() >= at_least || Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
