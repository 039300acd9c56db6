//! aioquic's HTTP/3 server from PyPI (`tests/interop/h3_app.py MODE...`, which can misbehave
//! on purpose), for the HTTP/3 tests of the engine's `quic.rs` and of `tests/http3.rs`: one
//! file, included by both (the engine's unit tests by `#[path]`), so it needs nothing but std
//! and rustix. Ended by its PID.

// Each includer uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// aioquic's server on a fresh port; `None` (skipped, outside CI) without aioquic in
/// tests/interop/.venv.
pub struct Aioquic {
    child: Child,
    pub port: u16,
    lines: std::sync::mpsc::Receiver<String>,
}

/// The repository's root: the first folder up from `start` with tests/interop/h3_app.py.
fn root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|d| d.join("tests/interop/h3_app.py").exists())
        .expect("tests/interop/h3_app.py above the crate")
        .to_path_buf()
}

impl Aioquic {
    /// `mode`: the server's arguments (see tests/interop/h3_app.py).
    pub fn start(mode: &[&str]) -> Option<Aioquic> {
        let root = root(Path::new(env!("CARGO_MANIFEST_DIR")));
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

    pub fn addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The requests it answered, as it last said, once at least `at_least` (or after 5 s).
    pub fn served(&self, at_least: u64) -> u64 {
        self.served_paths(at_least).0
    }

    /// The requests it answered and the distinct paths they asked for, as it last said, once
    /// at least `at_least` were answered (or after 5 s).
    pub fn served_paths(&self, at_least: u64) -> (u64, u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = (0, 0);
        while Instant::now() < deadline {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                let n: Vec<u64> = l.split(' ').filter_map(|w| w.trim().parse().ok()).collect();
                if let (true, [served, paths]) = (l.starts_with("served "), &n[..]) {
                    last = (*served, *paths);
                    if last.0 >= at_least {
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
    /// Woken (if frozen) and ended: SIGTERM, then SIGKILL after 10 s.
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let start = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if start.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
