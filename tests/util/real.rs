//! Real servers from Debian (nginx, Apache) as child processes for the tests: each in its own
//! directory, on ports that were free a moment before, ended by its PID.

use super::{ca_and_server_cert, free_port};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The first of `candidates` that exists, or `None` (and the test is skipped, outside CI).
pub fn find_server(what: &str, package: &str, candidates: &[&str]) -> Option<PathBuf> {
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is missing (Debian package: {package}); .ci/run installs it"
        );
        eprintln!("SKIPPED: {what} is not installed (Debian package: {package})");
    }
    found
}

/// A real server process in its own directory (configuration, logs, certificate).
pub struct RealServer {
    pub name: &'static str,
    pub child: Child,
    pub dir: PathBuf,
    pub ports: Vec<u16>,
    pub access_log: PathBuf,
}

impl RealServer {
    /// Starts `command` (given the directory and `listeners` fresh ports), and waits until
    /// every port accepts connections; on new ports again if the server exits first.
    pub fn start(
        name: &'static str,
        listeners: usize,
        command: impl Fn(&Path, &[u16]) -> Command,
    ) -> RealServer {
        // Tests run in parallel: each server its own directory (and access log).
        static SERVERS: AtomicU64 = AtomicU64::new(0);
        let k = SERVERS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pelt-{name}-{}-{k}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for attempt in 0..3 {
            // A port free a moment ago (util's closed_port: bound to 0 and released).
            let ports: Vec<u16> = (0..listeners).map(|_| free_port()).collect();
            let mut child = command(&dir, &ports)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {name}: {e}"));
            let start = Instant::now();
            loop {
                let up = ports.iter().all(|p| {
                    std::net::TcpStream::connect_timeout(
                        &([127, 0, 0, 1], *p).into(),
                        Duration::from_millis(200),
                    )
                    .is_ok()
                });
                if up {
                    return RealServer {
                        name,
                        child,
                        access_log: dir.join("access.log"),
                        dir,
                        ports,
                    };
                }
                if let Some(status) = child.try_wait().unwrap() {
                    let out = child.wait_with_output().unwrap();
                    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                    eprintln!(
                        "{name} exited ({status}) on attempt {attempt}: {}{log}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    break;
                }
                if start.elapsed() > Duration::from_secs(10) {
                    stop_child(&mut child);
                    panic!("{name} did not listen on {ports:?} within 10 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("{name} would not start; see the messages above");
    }

    pub fn url(&self, scheme: &str, listener: usize) -> String {
        format!("{scheme}://127.0.0.1:{}/", self.ports[listener])
    }
}

/// Ends a server this test started, by its PID: SIGTERM (nginx and Apache stop their
/// workers on it), then SIGKILL if it is still there after 10 s.
pub fn stop_child(child: &mut Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        stop_child(&mut self.child);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// nginx (`bin`) run with [`nginx_conf`] (written as `dir`/nginx.conf), `dir` its prefix.
pub fn nginx_command(bin: &Path, dir: &Path, http: &str) -> Command {
    std::fs::write(dir.join("nginx.conf"), nginx_conf(dir, http)).unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("-p").arg(dir).arg("-c").arg(dir.join("nginx.conf"));
    cmd
}

/// An nginx configuration: in the foreground with one worker, `dir` for its pid, error log and
/// temporary files, and `http` inside its `http` block.
pub fn nginx_conf(dir: &Path, http: &str) -> String {
    let d = dir.display();
    format!(
        "worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{http}}}
"
    )
}

/// Writes a test CA and a server certificate signed by it into `dir`: (ca.pem, cert, key).
pub fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (ca, _, cert, key) = ca_and_server_cert();
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

/// A server pelt did not write, from PyPI, run from tests/interop/.venv (made by .ci/run):
/// `tests/interop/SCRIPT` binds 127.0.0.1 port 0 and prints `listening on PORT`; it answers
/// `GET /count` with its own counts as JSON. Ended by its PID.
pub struct PythonApp {
    child: Child,
    pub port: u16,
}

impl PythonApp {
    /// Starts `script`, or `None` (the test is skipped, outside CI) without the venv.
    pub fn start(script: &str) -> Option<PythonApp> {
        PythonApp::start_with(script, &[])
    }

    /// [`start`](Self::start) with arguments for the script.
    pub fn start_with(script: &str, args: &[&std::ffi::OsStr]) -> Option<PythonApp> {
        use std::io::{BufRead, BufReader};
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join("tests/interop/.venv/bin/python");
        if !python.exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{script} needs tests/interop/.venv; .ci/run makes it"
            );
            eprintln!("SKIPPED: {script} (tests/interop/.venv is missing)");
            return None;
        }
        let mut child = Command::new(python)
            .arg(root.join("tests/interop").join(script))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python runs the app");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{script} said {line:?}"));
        Some(PythonApp { child, port })
    }

    /// Its own counts (`GET /count`).
    pub fn counts(&self) -> serde_json::Value {
        self.get("/count")
    }

    /// What it answers to `GET path`, read as JSON.
    pub fn get(&self, path: &str) -> serde_json::Value {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

impl Drop for PythonApp {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}
