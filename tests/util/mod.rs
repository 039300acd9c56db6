//! Helpers for end-to-end tests: the real pelt binary, servers on port 0, scripted raw
//! sockets. Every child process is bounded in time and ended by its own PID.

#![allow(dead_code)]

pub mod aioquic;
pub mod h2;
pub mod h3;
pub mod live;
pub mod real;
pub mod shop;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest any pelt invocation in a test may run before it is killed and the test fails.
pub const CHILD_LIMIT: Duration = Duration::from_secs(60);

pub fn pelt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pelt"))
}

/// Waits for `child` at most `limit`; kills it (by its PID, through the handle) past that.
/// Its stdout and stderr are read as it runs, so output beyond a pipe's buffer (64 KiB) does
/// not stall it.
pub fn wait_bounded(mut child: Child, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = stderr.join().unwrap_or_default();
            panic!(
                "pelt ran past {limit:?}; stderr: {}",
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    (out, start.elapsed())
}

/// Starts pelt with `args`, stdout and stderr piped; end it with [`wait_bounded`].
pub fn spawn(args: &[&str]) -> Child {
    spawn_piped(pelt(), args)
}

/// Like [`spawn`], but pelt picks its backend itself (`PELT_IO` is not passed on): for tests
/// that choose `--io` themselves, or that run the same on every backend.
pub fn spawn_any_backend(args: &[&str]) -> Child {
    let mut cmd = pelt();
    cmd.env_remove("PELT_IO");
    spawn_piped(cmd, args)
}

fn spawn_piped(mut cmd: Command, args: &[&str]) -> Child {
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pelt")
}

/// A child killed (by its PID, through the handle) when the test is done with it, even when
/// it fails.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `pelt serve ARGS` as a child: its stdout lines as they come, stopped by SIGTERM.
pub struct ServeProcess {
    /// Taken by `stop`; killed (by its PID, through the handle) when dropped with it.
    child: Option<Child>,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl ServeProcess {
    pub fn start(args: &[&str]) -> ServeProcess {
        use std::io::BufRead;
        let mut child = pelt()
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pelt serve");
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        ServeProcess {
            child: Some(child),
            lines,
        }
    }

    /// `pelt serve ARGS` (with `--port 0` among them) and the URL it says it listens on.
    pub fn listening(args: &[&str]) -> (ServeProcess, String) {
        let mut serve = ServeProcess::start(args);
        let line = serve.line();
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("pelt serve said {line:?}"))
            .to_string();
        (serve, url)
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The next line it printed.
    pub fn line(&mut self) -> String {
        self.lines.next().expect("a line").expect("readable")
    }

    /// Sends SIGTERM (to its PID), returns every line it printed since the last one read,
    /// and checks it exited cleanly.
    pub fn stop_lines(mut self) -> Vec<String> {
        let child = self.child.take().expect("running");
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        let lines = self.lines.by_ref().map_while(Result::ok).collect();
        let (out, _) = wait_bounded(child, Duration::from_secs(10));
        assert!(out.status.success());
        lines
    }

    /// Sends SIGTERM (to its PID), returns its next line, and checks it exited cleanly.
    pub fn stop(mut self) -> String {
        let child = self.child.take().expect("running");
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        let last = self.line();
        let (out, _) = wait_bounded(child, Duration::from_secs(10));
        assert!(out.status.success());
        last
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs pelt with `args` and checks it refused them as bad input: exit 2 and one line on
/// stderr that contains `says`.
pub fn assert_bad_input(args: &[&str], says: &str) {
    let (out, _) = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(says) && err.lines().count() == 1,
        "{args:?}: {err}"
    );
}

/// As [`assert_bad_input`], with no fleet token in the environment.
pub fn assert_bad_input_without_token(args: &[&str], says: &str) {
    let (out, _) = wait_bounded(
        pelt()
            .args(args)
            .env_remove("PELT_FLEET_TOKEN")
            .env_remove("PELT_FLEET_TOKEN_FILE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pelt"),
        CHILD_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(says) && err.lines().count() == 1,
        "{args:?}: {err}"
    );
}

/// Runs pelt with `args`, bounded; returns its output and wall time.
pub fn run(args: &[&str]) -> (Output, Duration) {
    wait_bounded(spawn(args), CHILD_LIMIT)
}

/// Runs pelt with `--json -` added, expects exit 0, and returns the parsed result.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", "-", "-q"]);
    let (out, _) = run(&all);
    assert!(
        out.status.success(),
        "pelt {all:?} failed: {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_invariant(&v);
    v
}

/// Checks that `v` has the figures `pelt merge` gives for the result files `parts`.
pub fn assert_is_merge_of(v: &serde_json::Value, parts: &[String]) {
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--json", "-"]);
    let (out, _) = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_hand: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "requests",
        "status",
        "errors",
        "latency_us",
        "histograms",
        "bytes",
    ] {
        assert_eq!(v[key], by_hand[key], "{key}");
    }
}

/// sent == completed + errors + in_flight; the status and error maps add up. When the suite
/// runs under `PELT_IO=epoll|uring` (pelt reads it as --io), the report names that backend.
pub fn assert_invariant(v: &serde_json::Value) {
    match std::env::var("PELT_IO").as_deref() {
        Ok("epoll") => assert_eq!(v["io"], "epoll", "PELT_IO=epoll not honoured"),
        Ok("uring") => assert_eq!(v["io"], "io_uring", "PELT_IO=uring not honoured"),
        _ => {}
    }
    let r = &v["requests"];
    let n = |k: &str| {
        r[k].as_u64()
            .unwrap_or_else(|| panic!("requests.{k} missing: {v}"))
    };
    assert_eq!(
        n("sent"),
        n("completed") + n("errors") + n("in_flight"),
        "accounting invariant broken: {r}"
    );
    let sum = |m: &serde_json::Value| {
        m.as_object()
            .unwrap()
            .values()
            .map(|x| x.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(
        sum(&v["status"]),
        n("completed"),
        "status counts != completed: {v}"
    );
    assert_eq!(
        sum(&v["errors"]),
        n("errors"),
        "error counts != errors: {v}"
    );
}

/// Whether each `--expect` of result `v` held, in order.
pub fn thresholds_held(v: &serde_json::Value) -> Vec<bool> {
    v["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["passed"].as_bool().unwrap())
        .collect()
}

pub fn count(v: &serde_json::Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64().unwrap_or(0)
}

/// The built-in server in-process on 127.0.0.1:0.
pub fn serve(cfg: pelt_server::ServerConfig) -> (pelt_server::Server, String) {
    let s = pelt_server::Server::start(cfg).expect("start server");
    let url = format!("http://{}/", s.addr());
    (s, url)
}

/// A port on 127.0.0.1 that nothing listens on, and nothing will while the tests run.
pub fn closed_port() -> u16 {
    use rustix::net::{bind, socket, AddressFamily, SocketType};
    // Bound but never listening: connects are refused, and no other test's server (binding
    // port 0 in parallel) can be given this port while the test process runs.
    static HELD: std::sync::Mutex<Vec<TcpListener>> = std::sync::Mutex::new(Vec::new());
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    bind(&fd, &SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let held = TcpListener::from(fd);
    let port = held.local_addr().unwrap().port();
    HELD.lock().unwrap().push(held);
    port
}

/// A port that was free a moment ago, for a server that cannot bind port 0 and report it
/// (nginx, Apache): bound to 0 and released.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A scripted raw-socket server: each accepted connection runs `script` on its own thread.
/// Counts accepted connections. Stops accepting when dropped.
pub struct RawServer {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    pub fn start<F>(script: F) -> RawServer
    where
        F: Fn(TcpStream) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script);
        let (acc, st) = (accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if st.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                acc.fetch_add(1, Ordering::Relaxed);
                let script = script.clone();
                std::thread::spawn(move || script(stream));
            }
        });
        RawServer {
            addr,
            accepted,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// Reads one request head (up to the blank line); false on EOF or error.
pub fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// Script: answer every request on the connection with `response`.
pub fn answer_each(response: &'static [u8]) -> impl Fn(TcpStream) + Send + Sync + 'static {
    move |mut s| {
        while read_request(&mut s) {
            if s.write_all(response).is_err() {
                return;
            }
        }
    }
}

/// The browser check (tests/browser/check_report.mjs): what a reader of `html` sees.
pub fn browser_check(html: &Path, screenshot: &Path) -> Option<serde_json::Value> {
    let out = browser(
        "check_report.mjs",
        &[html.as_os_str(), screenshot.as_os_str()],
    )?;
    Some(serde_json::from_slice(&out).unwrap())
}

/// Runs `script` of tests/browser with `args`: Node.js with playwright-core driving Debian's
/// chromium, for a minute at most; its standard output. `.ci/run` installs both; elsewhere
/// the test says what is missing and passes (`None`) only outside CI.
pub fn browser(script: &str, args: &[&std::ffi::OsStr]) -> Option<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = std::env::var("PELT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let missing = if !dir.join("node_modules/playwright-core").is_dir() {
        Some("tests/browser/node_modules (run: npm ci --prefix tests/browser)")
    } else if !Path::new(&chromium).exists() {
        Some("chromium (Debian package: chromium)")
    } else {
        None
    };
    if let Some(what) = missing {
        assert!(
            std::env::var_os("CI").is_none(),
            "the browser test needs {what}; .ci/run installs it"
        );
        eprintln!("SKIPPED: the browser test needs {what}");
        return None;
    }
    let mut child = Command::new("node")
        .arg(dir.join(script))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    // Bounded like every child: chromium gets a minute.
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{script} ran past 60s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out.stdout)
}

/// A test CA and a server certificate for 127.0.0.1 signed by it: (CA, CA key, server
/// certificate, server key).
pub fn ca_and_server_cert() -> (
    rcgen::Certificate,
    rcgen::KeyPair,
    rcgen::Certificate,
    rcgen::KeyPair,
) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &rcgen::Issuer::new(ca_params, &ca_key))
        .unwrap();
    (ca, ca_key, server, server_key)
}

/// Checks `v` against docs/result-schema.json.
pub fn assert_schema(v: &serde_json::Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/result-schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let problems: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:?}");
}
