//! HTTP/3 servers pelt did not write, for the tests: Debian's caddy (HTTP/3 on by default on
//! an HTTPS site, its access log one JSON line per request) and aioquic's server from PyPI
//! (`tests/interop/h3_app.py`, which can misbehave on purpose). Each ended by its PID.

use super::real::{find_server, stop_child, RealServer};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
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
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&server.access_log).unwrap_or_default();
        let seen: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["request"]["proto"] == "HTTP/3.0")
            .map(|v| {
                let r = &v["request"];
                let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                (s("method"), s("uri"))
            })
            .collect();
        if seen.len() >= at_least || Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// aioquic's HTTP/3 server (`tests/interop/h3_app.py MODE...`) on a fresh port; `None`
/// (skipped, outside CI) without aioquic in tests/interop/.venv.
pub struct Aioquic {
    child: Child,
    pub port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Aioquic {
    pub fn start(mode: &[&str]) -> Option<Aioquic> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join("tests/interop/.venv/bin/python");
        let has = python.exists()
            && Command::new(&python)
                .args(["-c", "import aioquic"])
                .status()
                .is_ok_and(|s| s.success());
        if !has {
            assert!(
                std::env::var_os("CI").is_none(),
                "aioquic is missing from tests/interop/.venv; .ci/run installs it"
            );
            eprintln!("SKIPPED: aioquic is not in tests/interop/.venv");
            return None;
        }
        let mut child = Command::new(&python)
            .arg(root.join("tests/interop/h3_app.py"))
            .args(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start aioquic");
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("aioquic says its port");
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("{first}"));
        Some(Aioquic { child, port, lines })
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.port)
    }

    /// The requests it answered, as it last said, once at least `at_least` (or after 5 s).
    pub fn served(&self, at_least: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = 0;
        while Instant::now() < deadline {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(600)) {
                if let Some(n) = l.strip_prefix("served ").and_then(|n| n.parse().ok()) {
                    last = n;
                    if last >= at_least {
                        return last;
                    }
                }
            }
        }
        last
    }

    /// Stops it answering (SIGSTOP), as a server that hangs.
    pub fn freeze(&self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    }
}

impl Drop for Aioquic {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
        stop_child(&mut self.child);
    }
}
