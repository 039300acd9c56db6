//! The hostile-server suite: the cases of docs/HOSTILE.md (sections A to G), each a
//! script a raw-socket server plays to every connection, run against the real binary on every
//! I/O backend this machine has. Each case asserts the exact outcome counts, the accounting
//! invariant, that pelt exits in bounded time, and that pelt counted the bytes the script
//! wrote (all of them, or no more than them where pelt rightly stops reading early).

mod util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use util::*;

/// One step of a server script.
#[derive(Clone, Debug)]
enum Step {
    /// Read one request head (the script ends if the client closed).
    Read,
    /// Write these bytes at once.
    Write(Vec<u8>),
    /// Write these bytes one per segment, `gap` apart.
    Trickle(Vec<u8>, Duration),
    Sleep(Duration),
    /// Close with a TCP RST (SO_LINGER 0).
    Reset,
    /// Keep the connection open, reading and discarding, until the client closes.
    Hold,
    /// Write these bytes over and over until the client closes.
    Forever(Vec<u8>),
    /// Read a WebSocket upgrade request and write what this makes of the accept value its
    /// key calls for (the script ends if the client closed).
    Upgrade(fn(&str) -> String),
    /// As `Upgrade` with the right answer, these bytes behind it in the same write.
    UpgradeAnd(Vec<u8>),
    /// Read whatever the client sends next (a frame); the script ends if it closed.
    ReadAny,
}

fn w(bytes: &str) -> Step {
    Step::Write(bytes.as_bytes().to_vec())
}

/// A script: its steps, played once per connection, or over and over while the client sends
/// requests (`repeat`). The connection closes when the script ends.
struct Script {
    steps: Vec<Step>,
    repeat: bool,
}

fn once(steps: Vec<Step>) -> Script {
    Script {
        steps,
        repeat: false,
    }
}

fn each(steps: Vec<Step>) -> Script {
    Script {
        steps,
        repeat: true,
    }
}

/// The bytes pelt must report: exactly what the script wrote, or at most that when pelt may
/// rightly stop reading first (a limit tripped, a deadline passed).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Bytes {
    Exact,
    AtMost,
}

/// Plays `steps` on one connection; false when the client went away.
fn play(s: &mut TcpStream, steps: &[Step], written: &AtomicU64) -> bool {
    let write = |s: &mut TcpStream, b: &[u8]| -> bool {
        match s.write_all(b) {
            Ok(()) => {
                written.fetch_add(b.len() as u64, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    };
    for step in steps {
        let ok = match step {
            Step::Read => read_request(s),
            Step::Write(b) => write(s, b),
            Step::Trickle(b, gap) => b.iter().all(|byte| {
                std::thread::sleep(*gap);
                write(s, std::slice::from_ref(byte))
            }),
            Step::Sleep(d) => {
                std::thread::sleep(*d);
                true
            }
            Step::Reset => {
                let _ = rustix::net::sockopt::set_socket_linger(&*s, Some(Duration::ZERO));
                return false;
            }
            Step::Hold => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
                let mut sink = [0u8; 4096];
                while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
                return false;
            }
            Step::Forever(b) => {
                let started = Instant::now();
                while started.elapsed() < Duration::from_secs(20) && write(s, b) {}
                return false;
            }
            Step::Upgrade(answer) => match upgrade_key(s) {
                Some(key) => {
                    let accept = pelt_codec::ws::accept(key.as_bytes());
                    write(s, answer(std::str::from_utf8(&accept).unwrap()).as_bytes())
                }
                None => false,
            },
            Step::UpgradeAnd(after) => match upgrade_key(s) {
                Some(key) => {
                    let accept = pelt_codec::ws::accept(key.as_bytes());
                    let mut b = accepted(std::str::from_utf8(&accept).unwrap()).into_bytes();
                    b.extend_from_slice(after);
                    write(s, &b)
                }
                None => false,
            },
            Step::ReadAny => matches!(s.read(&mut [0u8; 4096]), Ok(n) if n > 0),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Reads an upgrade request's head; its Sec-WebSocket-Key.
fn upgrade_key(s: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? != 1 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("sec-websocket-key")
            .then(|| value.trim().to_string())
    })
}

fn serve_script(script: Script) -> (RawServer, Arc<AtomicU64>) {
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    let server = RawServer::start(move |mut s| {
        let _ = s.set_nodelay(true);
        while play(&mut s, &script.steps, &counter) && script.repeat {}
    });
    (server, written)
}

/// The backends to run every case on: epoll, and io_uring where this kernel allows it.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["epoll"];
    if pelt_engine::IoBackend::Uring.check().is_ok() {
        b.push("uring");
    }
    b
}

/// Runs pelt with `args` against a fresh server playing `script`, on every backend; checks
/// the exit, the time bound, the invariant and the bytes; returns each backend's result.
fn case(script: impl Fn() -> Script, bytes: Bytes, args: &[&str]) -> Vec<serde_json::Value> {
    case_at("http://", script, bytes, args)
}

/// [`case`] on a ws:// URL.
fn ws_case(script: impl Fn() -> Script, bytes: Bytes, args: &[&str]) -> Vec<serde_json::Value> {
    case_at("ws://", script, bytes, args)
}

fn case_at(
    scheme: &str,
    script: impl Fn() -> Script,
    bytes: Bytes,
    args: &[&str],
) -> Vec<serde_json::Value> {
    backends()
        .into_iter()
        .map(|io| {
            let (server, written) = serve_script(script());
            let url = server.url().replace("http://", scheme);
            let mut all = vec![url.as_str()];
            all.extend_from_slice(args);
            all.extend(["--io", io, "--json", "-", "-q"]);
            let child = spawn_any_backend(&all);
            let (out, took) = wait_bounded(child, Duration::from_secs(20));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{io}: pelt {all:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
            assert!(took < Duration::from_secs(10), "{io}: took {took:?}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_invariant(&v);
            // The script's last writes may still be on their way when pelt has what it needs.
            std::thread::sleep(Duration::from_millis(50));
            let wrote = written.load(Ordering::Relaxed);
            let read = count(&v, &["bytes", "received"]);
            match bytes {
                Bytes::Exact => assert_eq!(read, wrote, "{io}: bytes read vs written: {v}"),
                Bytes::AtMost => assert!(read <= wrote, "{io}: read {read} > wrote {wrote}"),
            }
            v
        })
        .collect()
}

fn completed(v: &serde_json::Value) -> u64 {
    count(v, &["requests", "completed"])
}

fn errors(v: &serde_json::Value, kind: &str) -> u64 {
    count(v, &["errors", kind])
}

fn total_errors(v: &serde_json::Value) -> u64 {
    count(v, &["requests", "errors"])
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// ---- A. Body framing ----

#[test]
fn a01_short_body_then_close_is_incomplete() {
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
            Step::Write(vec![b'x'; 40]),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(errors(&v, "incomplete"), 3, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 3);
    }
}

#[test]
fn a02_short_body_then_silence_times_out() {
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
            Step::Write(vec![b'x'; 40]),
            Step::Hold,
        ])
    };
    for v in case(
        script,
        Bytes::Exact,
        &["-n", "2", "-c", "1", "--timeout", "300ms"],
    ) {
        assert_eq!(errors(&v, "timeout"), 2, "{v}");
    }
}

#[test]
fn a03_a04_body_until_close() {
    for head in [
        "HTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
        // A12: a transfer coding other than chunked last: body until close.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    ] {
        let script = || once(vec![Step::Read, w(head), w("the body, until close")]);
        for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
            assert_eq!(completed(&v), 3, "{head}: {v}");
            assert_eq!(total_errors(&v), 0);
            assert_eq!(count(&v, &["connections_opened"]), 3, "not reused");
        }
    }
}

#[test]
fn a05_bytes_beyond_content_length_close_the_connection() {
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "4", "-c", "1"]) {
        assert_eq!(completed(&v), 4, "{v}");
        assert_eq!(count(&v, &["connection_errors", "protocol"]), 4, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 4);
    }
}

#[test]
fn a06_chunked_wins_over_content_length_and_closes() {
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 3);
    }
}

#[test]
fn a07_bad_content_lengths_are_bad_framing() {
    for cl in [
        "abc",
        "-1",
        "+5",
        "",
        "123456789012345678901234567890",
        "3, 4",
    ] {
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\nabc");
        let script = || once(vec![Step::Read, Step::Write(head.clone().into_bytes())]);
        for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
            assert_eq!(errors(&v, "bad_framing"), 2, "Content-Length {cl:?}: {v}");
        }
    }
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(completed(&v), 2, "3, 3 is one length: {v}");
    }
}

#[test]
fn a08_a09_bad_chunks_are_bad_framing() {
    for body in [
        "ffffffffffffffffffff\r\n",
        "zz\r\nabc\r\n0\r\n\r\n",
        "3\r\nabcXX0\r\n\r\n",
        "3;\x01\r\nabc\r\n0\r\n\r\n",
    ] {
        let msg = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
        let script = || once(vec![Step::Read, Step::Write(msg.clone().into_bytes())]);
        for v in case(script, Bytes::AtMost, &["-n", "2", "-c", "1"]) {
            assert_eq!(errors(&v, "bad_framing"), 2, "{body:?}: {v}");
        }
    }
}

#[test]
fn a10_chunked_cut_short_is_incomplete() {
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(errors(&v, "incomplete"), 2, "{v}");
    }
}

#[test]
fn a11_chunk_extensions_and_trailers() {
    let ext = ";a=b".repeat(50);
    let trailers = (0..40)
        .map(|i| format!("X-Trailer-{i}: {}\r\n", "v".repeat(100)))
        .collect::<String>();
    let msg = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5{ext}\r\nhello\r\n0{ext}\r\n{trailers}\r\n"
    );
    let script = || each(vec![Step::Read, Step::Write(msg.clone().into_bytes())]);
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 1);
    }
}

#[test]
fn a13_one_byte_per_segment_is_the_same_response() {
    let msg = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    let script = || {
        each(vec![
            Step::Read,
            Step::Trickle(msg.as_bytes().to_vec(), Duration::from_micros(300)),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(completed(&v), 2, "{v}");
        assert_eq!(count(&v, &["bytes", "received"]), 2 * msg.len() as u64);
    }
}

// ---- B. Status and message semantics ----

#[test]
fn b14_head_with_a_content_length_completes_at_the_headers() {
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1", "-m", "HEAD"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 1, "reused");
    }
}

#[test]
fn b15_204_and_304_have_no_body() {
    for head in [
        "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
    ] {
        let script = || each(vec![Step::Read, w(head)]);
        for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
            assert_eq!(completed(&v), 3, "{head}: {v}");
            assert_eq!(count(&v, &["connections_opened"]), 1);
        }
    }
}

#[test]
fn b16_interim_responses_before_the_final_one() {
    for interim in [
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n",
    ] {
        let script = || each(vec![Step::Read, w(interim), w(OK)]);
        for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
            assert_eq!(count(&v, &["status", "200"]), 3, "{interim:?}: {v}");
            assert_eq!(total_errors(&v), 0);
        }
    }
}

#[test]
fn b17_continue_then_close_and_unasked_upgrade() {
    let script = || once(vec![Step::Read, w("HTTP/1.1 100 Continue\r\n\r\n")]);
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(errors(&v, "incomplete"), 2, "{v}");
    }
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"),
            Step::Hold,
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(errors(&v, "protocol"), 2, "{v}");
    }
}

#[test]
fn b18_b19_bad_status_lines_and_other_protocols() {
    for (line, kind) in [
        ("HTTP/1.1 001 OK\r\n\r\n", "bad_status"),
        ("HTTP/1.1 1 OK\r\n\r\n", "bad_status"),
        ("HTTP/1.1 2000 OK\r\n\r\n", "bad_status"),
        ("HTTP/5.6 200 OK\r\n\r\n", "bad_status"),
        ("HEAT/1.1 200 OK\r\n\r\n", "not_http"),
        ("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", "not_http"),
        ("\x16\x03\x01\x00\x2a\x02\x00\x00\x26\x03\x03", "not_http"),
    ] {
        let script = || once(vec![Step::Read, w(line)]);
        for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
            assert_eq!(errors(&v, kind), 2, "{line:?}: {v}");
        }
    }
    // The message names the likely cause.
    let script = || once(vec![Step::Read, w("SSH-2.0-OpenSSH_9.2p1\r\n")]);
    for v in case(script, Bytes::Exact, &["-n", "1", "-c", "1"]) {
        let example = v["error_examples"]["not_http"].as_str().unwrap_or("");
        assert!(example.contains("SSH"), "{example}");
    }
}

#[test]
fn b20_b21_every_status_is_a_response_redirects_are_not_followed() {
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"),
            Step::Read,
            w("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n"),
            Step::Read,
            w("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
            Step::Read,
            w("HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "8", "-c", "1"]) {
        for code in ["201", "302", "404", "503"] {
            assert_eq!(count(&v, &["status", code]), 2, "{code}: {v}");
        }
        assert_eq!(total_errors(&v), 0);
    }
}

// ---- C. Headers ----

#[test]
fn c22_c23_huge_or_endless_headers_trip_the_limit() {
    let big = format!(
        "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n",
        "a".repeat(500 * 1024)
    );
    let script = || once(vec![Step::Read, Step::Write(big.clone().into_bytes())]);
    for v in case(script, Bytes::AtMost, &["-n", "2", "-c", "1"]) {
        assert_eq!(errors(&v, "headers_too_large"), 2, "{v}");
    }
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\n"),
            Step::Forever(b"X-Again: and again and again\r\n".to_vec()),
        ])
    };
    for v in case(script, Bytes::AtMost, &["-n", "2", "-c", "1"]) {
        assert_eq!(errors(&v, "headers_too_large"), 2, "{v}");
    }
}

#[test]
fn c24_odd_header_lines_have_a_defined_outcome() {
    for head in [
        "HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: b\rc\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: b\r\n folded\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 Ok\u{e9}\u{e8}\r\nContent-Length: 0\r\n\r\n",
    ] {
        let script = || each(vec![Step::Read, w(head)]);
        for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
            // Either accepted or a bad header, every request once (the invariant held).
            assert_eq!(completed(&v) + errors(&v, "bad_header"), 2, "{head:?}: {v}");
        }
    }
}

#[test]
fn c25_keep_alive_and_close_together_mean_close() {
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(count(&v, &["connections_opened"]), 3);
    }
}

// ---- D. Connection lifecycle ----

#[test]
fn d26_server_closes_idle_connections_between_requests() {
    // One response per connection, then the server closes it while pelt is idle (the rate
    // leaves 100 ms between requests): the next request reconnects, nothing is lost or retried.
    let script = || once(vec![Step::Read, w(OK)]);
    for v in case(script, Bytes::Exact, &["-R", "10", "-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(total_errors(&v), 0);
        assert_eq!(count(&v, &["connections_opened"]), 3);
    }
}

#[test]
fn d28_reset_mid_body() {
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
            Step::Write(vec![b'x'; 10]),
            Step::Sleep(Duration::from_millis(20)),
            Step::Reset,
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(errors(&v, "reset"), 3, "{v}");
    }
}

#[test]
fn d30_a_listener_that_never_accepts() {
    // Bound and listening, never accepted: connects complete into the backlog, nothing answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    for io in backends() {
        let v = run_json(&[
            &url,
            "-d",
            "1s",
            "-c",
            "4",
            "--timeout",
            "300ms",
            "--connect-timeout",
            "300ms",
            "--io",
            io,
        ]);
        let timeouts = errors(&v, "timeout") + errors(&v, "connect_timeout");
        assert!(timeouts >= 4, "{io}: {v}");
        assert_eq!(completed(&v), 0);
    }
    drop(listener);
}

#[test]
fn d32_early_413_on_a_large_upload() {
    let body = std::env::temp_dir().join(format!("pelt-upload-{}", std::process::id()));
    std::fs::write(&body, vec![b'u'; 4 * 1024 * 1024]).unwrap();
    let body_path = body.to_str().unwrap().to_string();
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
            Step::Sleep(Duration::from_millis(20)),
        ])
    };
    let args = [
        "-n",
        "4",
        "-c",
        "1",
        "-m",
        "POST",
        "--body-file",
        &body_path,
    ];
    for v in case(script, Bytes::Exact, &args) {
        // Each request once: the 413, or (when the close wins the race) one error.
        assert_eq!(completed(&v) + total_errors(&v), 4, "{v}");
        assert_eq!(completed(&v), count(&v, &["status", "413"]));
    }
    let _ = std::fs::remove_file(&body);
}

#[test]
fn d33_a_server_that_stops_reading_an_upload_times_out() {
    let body = std::env::temp_dir().join(format!("pelt-upload2-{}", std::process::id()));
    std::fs::write(&body, vec![b'u'; 16 * 1024 * 1024]).unwrap();
    let body_path = body.to_str().unwrap().to_string();
    // Reads only the head, then holds the connection without reading: the window closes.
    let script = || once(vec![Step::Read, Step::Sleep(Duration::from_secs(3))]);
    let args = [
        "-n",
        "1",
        "-c",
        "1",
        "-m",
        "PUT",
        "--body-file",
        &body_path,
        "--timeout",
        "500ms",
    ];
    for v in case(script, Bytes::Exact, &args) {
        assert_eq!(errors(&v, "timeout"), 1, "{v}");
    }
    let _ = std::fs::remove_file(&body);
}

// ---- E. Timing ----

#[test]
fn e34_e35_headers_then_nothing_or_a_trickle_hit_the_deadline() {
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"),
            Step::Hold,
        ])
    };
    for v in case(
        script,
        Bytes::Exact,
        &["-n", "1", "-c", "1", "--timeout", "300ms"],
    ) {
        assert_eq!(errors(&v, "timeout"), 1, "{v}");
    }
    // A byte every 100 ms keeps the connection busy but never finishes in time.
    let script = || {
        once(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
            Step::Trickle(vec![b'x'; 100], Duration::from_millis(100)),
        ])
    };
    for v in case(
        script,
        Bytes::AtMost,
        &["-n", "1", "-c", "1", "--timeout", "500ms"],
    ) {
        assert_eq!(errors(&v, "timeout"), 1, "{v}");
    }
}

#[test]
fn e36_no_answer_within_the_run_is_in_flight_not_nothing() {
    let script = || once(vec![Step::Read, Step::Hold]);
    for v in case(script, Bytes::Exact, &["-d", "500ms", "-c", "3"]) {
        assert_eq!(count(&v, &["requests", "in_flight"]), 3, "{v}");
        assert_eq!(count(&v, &["requests", "sent"]), 3);
    }
}

// ---- F. Size and resources ----

#[test]
fn f38_endless_bodies_end_at_the_deadline() {
    for head in [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n",
    ] {
        let chunk = if head.contains("chunked") {
            format!("400\r\n{}\r\n", "z".repeat(1024)).into_bytes()
        } else {
            vec![b'z'; 1024]
        };
        let script = || once(vec![Step::Read, w(head), Step::Forever(chunk.clone())]);
        for v in case(
            script,
            Bytes::AtMost,
            &["-n", "1", "-c", "1", "--timeout", "500ms"],
        ) {
            assert_eq!(errors(&v, "timeout"), 1, "{head}: {v}");
            assert!(count(&v, &["bytes", "received"]) > 100_000, "{v}");
        }
    }
}

#[test]
fn f39_compressed_bodies_are_counted_on_the_wire() {
    let gz: &[u8] = &[
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0xcf, 0x06, 0x00, 0x47,
        0xdd, 0xdc, 0x47, 0x02, 0x00, 0x00, 0x00,
    ];
    let mut msg = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    msg.extend_from_slice(gz);
    let script = || each(vec![Step::Read, Step::Write(msg.clone())]);
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(count(&v, &["bytes", "received"]), 3 * msg.len() as u64);
    }
}

#[test]
fn d27_local_ports_exhausted_is_its_own_kind_with_a_hint() {
    // In a network namespace of its own (so the sysctl touches nothing else): four local
    // ports, ten keep-alive connections. The six that find no port fail with
    // EADDRNOTAVAIL, back off and try again; the four that connected carry the load.
    let setup = "ip link set lo up && sysctl -q -w net.ipv4.ip_local_port_range='40000 40003'";
    if !std::process::Command::new("unshare")
        .args(["-n", "sh", "-c", setup])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: no network namespace with its own port range here (unshare -n)");
        return;
    }
    for io in backends() {
        let pelt = env!("CARGO_BIN_EXE_pelt");
        let script = format!(
            "{setup} && {{ {pelt} serve --port 8080 >/dev/null & server=$!; sleep 0.3; \
             {pelt} http://127.0.0.1:8080/ -c 10 -t 1 -d 1s --io {io} --json - -q; rc=$?; \
             kill $server; exit $rc; }}"
        );
        let child = std::process::Command::new("unshare")
            .args(["-n", "sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn unshare");
        let (out, _) = wait_bounded(child, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{io}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_invariant(&v);
        assert!(errors(&v, "addr_not_available") > 0, "{io}: {v}");
        assert!(
            completed(&v) > 0,
            "{io}: the connected four carry load: {v}"
        );
        let hint = v["error_hints"]["addr_not_available"]
            .as_str()
            .unwrap_or("");
        assert!(hint.contains("ip_local_port_range"), "{io}: {v}");
    }
}

#[test]
fn d29_close_without_answering() {
    let script = || once(vec![Step::Read]);
    for v in case(script, Bytes::Exact, &["-n", "5", "-c", "1"]) {
        assert_eq!(errors(&v, "closed"), 5, "{v}");
        assert_eq!(count(&v, &["bytes", "received"]), 0);
    }
}

#[test]
fn d31_nothing_listening_backs_off_and_ends_on_time() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    for io in backends() {
        let started = Instant::now();
        let v = run_json(&[&url, "-d", "1s", "-c", "2", "--io", io]);
        assert!(started.elapsed() < Duration::from_secs(10));
        let refused = errors(&v, "refused");
        // 50 ms back-off per connection: about 40 in a second, never a busy loop's thousands.
        assert!((1..1000).contains(&refused), "{io}: {v}");
        assert_eq!(completed(&v), 0);
    }
}

/// A server that answers before reading a large request and closes: the bytes sent are what
/// the kernel took, not what pelt handed over (io_uring once counted every byte it queued:
/// 512 MiB for these eight requests, where the sockets' buffers took a few MiB each).
#[test]
fn d32_an_early_answer_counts_only_the_bytes_the_kernel_took() {
    const BODY: u64 = 64 << 20;
    const N: u64 = 8;
    let dir = std::env::temp_dir().join(format!("pelt-early-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body.bin");
    std::fs::write(&body, vec![b'x'; BODY as usize]).unwrap();
    for io in backends() {
        let server = RawServer::start(|mut s| {
            if read_request(&mut s) {
                let _ = s.write_all(
                    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n\
                      Connection: close\r\n\r\n",
                );
            }
            // Dropped with the body unread: the kernel resets the connection.
        });
        let url = server.url();
        let n = N.to_string();
        let v = run_json(&[
            &url,
            "-m",
            "POST",
            "--body-file",
            body.to_str().unwrap(),
            "-c",
            "1",
            "-n",
            &n,
            "--io",
            io,
        ]);
        let sent = count(&v, &["bytes", "sent"]);
        // Each request's head went out; its body only as far as the sockets' buffers.
        assert!(sent >= N * 100, "{io}: {v}");
        assert!(sent < N * BODY / 4, "{io}: {sent} bytes sent: {v}");
        assert_eq!(count(&v, &["requests", "sent"]), N, "{io}: {v}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- G. Event streams ----

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";

/// The `event_streams` figure at `key`.
fn stream_count(v: &serde_json::Value, key: &str) -> u64 {
    count(v, &["event_streams", key])
}

#[test]
fn g41_an_event_split_at_every_byte_is_the_same_events() {
    let body = "data: first\r\n\r\nevent: add\ndata: sec\rdata: ond\r\r";
    let script = || {
        each(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}Content-Length: {}\r\n\r\n", body.len())),
            Step::Trickle(body.as_bytes().to_vec(), Duration::from_millis(1)),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        assert_eq!(completed(&v), 2, "{v}");
        assert_eq!(stream_count(&v, "events"), 4, "{v}");
        assert_eq!(stream_count(&v, "streams"), 2, "{v}");
        assert_eq!(count(&v, &["event_streams", "events_per_stream", "max"]), 2);
    }
}

#[test]
fn g42_a_line_of_a_mebibyte_is_one_event_kept_to_its_bound() {
    let body = format!("data: {}\n\ndata: after\n\n", "x".repeat(1 << 20));
    let script = || {
        each(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}Content-Length: {}\r\n\r\n", body.len())),
            w(&body),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "3", "-c", "1"]) {
        assert_eq!(completed(&v), 3, "{v}");
        assert_eq!(stream_count(&v, "events"), 6, "{v}");
        assert_eq!(stream_count(&v, "bytes"), 3 * body.len() as u64, "{v}");
    }
}

#[test]
fn g43_a_stream_without_a_newline_ends_at_its_limit() {
    // Bytes keep coming, so it never stalls; no line ever ends, so no event.
    let script = || {
        once(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}\r\n")),
            Step::Forever(vec![b'x'; 512]),
        ])
    };
    for v in case(
        script,
        Bytes::AtMost,
        &["-n", "1", "-c", "1", "--stream-limit", "300ms"],
    ) {
        assert_eq!(completed(&v), 1, "{v}");
        assert_eq!(stream_count(&v, "cut"), 1, "{v}");
        assert_eq!(stream_count(&v, "without_events"), 1, "{v}");
        assert!(stream_count(&v, "bytes") > 10_000, "{v}");
    }
}

#[test]
fn g44_a_close_mid_event_drops_the_unfinished_event() {
    // Until close: the close ends the response; the event it cut is not one.
    let script = || {
        once(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}\r\ndata: 1\n\ndata: 2")),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "1", "-c", "1"]) {
        assert_eq!(completed(&v), 1, "{v}");
        assert_eq!(stream_count(&v, "events"), 1, "{v}");
        assert_eq!(stream_count(&v, "streams"), 1, "{v}");
    }
    // Chunked: the close cuts the response short (incomplete); its event stays counted.
    let script = || {
        once(vec![
            Step::Read,
            w(&format!(
                "{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n10\r\ndata: 1\n\ndata: 2\r\n"
            )),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "1", "-c", "1"]) {
        assert_eq!(errors(&v, "incomplete"), 1, "{v}");
        assert_eq!(stream_count(&v, "events"), 1, "{v}");
        assert_eq!(stream_count(&v, "streams"), 0, "{v}");
    }
}

#[test]
fn g45_bom_retry_id_and_comments_are_read_as_the_standard_says() {
    let body =
        "\u{feff}retry: 1000\nid: 7\n: keep-alive\ndata: a\n\nretry: x\n\n: c\n\ndata: b\n\n";
    let script = || {
        each(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}Content-Length: {}\r\n\r\n", body.len())),
            w(body),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1"]) {
        // Blank lines after no data dispatch nothing: two events a stream.
        assert_eq!(stream_count(&v, "events"), 4, "{v}");
        assert_eq!(stream_count(&v, "without_events"), 0, "{v}");
    }
}

#[test]
fn g46_a_stream_that_stalls_times_out() {
    let script = || {
        once(vec![
            Step::Read,
            w(&format!("{SSE_HEAD}\r\ndata: 1\n\n")),
            Step::Hold,
        ])
    };
    for v in case(
        script,
        Bytes::Exact,
        &["-n", "1", "-c", "1", "--timeout", "300ms"],
    ) {
        assert_eq!(errors(&v, "timeout"), 1, "{v}");
        assert_eq!(stream_count(&v, "events"), 1, "{v}");
    }
}

#[test]
fn g47_stream_reads_json_lines_one_event_a_line() {
    // Chunks that split lines anywhere; CRLF and LF; a blank line is no event.
    let script = || {
        each(vec![
            Step::Read,
            w("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\
               Transfer-Encoding: chunked\r\n\r\n"),
            w("7\r\n{\"a\":1}\r\n"),
            w("7\r\n\n{\"a\":2\r\n"),
            w("5\r\n}\r\n\n{\r\n"),
            w("7\r\n\"a\":3}\n\r\n0\r\n\r\n"),
        ])
    };
    for v in case(script, Bytes::Exact, &["-n", "2", "-c", "1", "--stream"]) {
        assert_eq!(completed(&v), 2, "{v}");
        assert_eq!(stream_count(&v, "events"), 6, "{v}");
        assert_eq!(stream_count(&v, "streams"), 2, "{v}");
    }
    // Without --stream the body is a body.
    for v in case(script, Bytes::Exact, &["-n", "1", "-c", "1"]) {
        assert!(v.get("event_streams").is_none(), "{v}");
    }
}

// ---- H. WebSocket ----

/// The right answer to an upgrade.
fn accepted(accept: &str) -> String {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    )
}

/// A frame from the server (unmasked): FIN and `opcode`, `payload` (under 126 bytes).
fn frame(opcode: u8, payload: &[u8]) -> Step {
    let mut b = vec![0x80 | opcode, payload.len() as u8];
    b.extend_from_slice(payload);
    Step::Write(b)
}

/// A message (`-b hi`) on a socket the script plays, one at a time.
const ONE_MESSAGE: &[&str] = &["-b", "hi", "-n", "1", "-c", "1"];

#[test]
fn h48_h50_upgrades_refused_or_botched_are_upgrade_errors() {
    let answers: [fn(&str) -> String; 4] = [
        // A wrong accept key.
        |_| accepted("dGhlIHNhbXBsZSBub25jZQ=="),
        // 101 without Upgrade: websocket.
        |a| {
            format!("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {a}\r\n\r\n")
        },
        // A plain 200: not a WebSocket endpoint.
        |_| OK.to_string(),
        // A subprotocol pelt did not ask for.
        |a| accepted(a).replace("\r\n\r\n", "\r\nSec-WebSocket-Protocol: evil\r\n\r\n"),
    ];
    for answer in answers {
        let script = move || once(vec![Step::Upgrade(answer), Step::Hold]);
        for v in ws_case(script, Bytes::AtMost, ONE_MESSAGE) {
            assert_eq!(errors(&v, "upgrade"), 1, "{v}");
            assert_eq!(count(&v, &["websocket", "upgrades"]), 0, "{v}");
        }
    }
}

#[test]
fn h51_h52_frames_the_rfc_forbids_fail_the_socket() {
    let cases: [(Vec<u8>, &str); 4] = [
        // A masked frame from the server.
        (
            vec![0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2],
            "ws_protocol",
        ),
        // A frame claiming 2^63 bytes (the length's top bit must be 0).
        (vec![0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0], "ws_protocol"),
        // A frame claiming 2^62 bytes: more than --ws-max-message, refused before any of it.
        (vec![0x82, 127, 0x40, 0, 0, 0, 0, 0, 0, 0], "ws_too_big"),
        // Text that is not UTF-8.
        (vec![0x81, 2, 0xc3, 0x28], "ws_utf8"),
    ];
    for (bad, kind) in cases {
        let script = move || {
            once(vec![
                Step::Upgrade(accepted),
                Step::ReadAny,
                Step::Write(bad.clone()),
                Step::Hold,
            ])
        };
        for v in ws_case(script, Bytes::Exact, ONE_MESSAGE) {
            assert_eq!(errors(&v, kind), 1, "{kind}: {v}");
            assert_eq!(total_errors(&v), 1, "{v}");
        }
    }
}

#[test]
fn h53_a_close_mid_message_is_a_closed_socket() {
    // The first fragment of a message, then the TCP connection ends.
    let script = || {
        once(vec![
            Step::Upgrade(accepted),
            Step::ReadAny,
            Step::Write(vec![0x01, 3, b'a', b'b', b'c']),
        ])
    };
    for v in ws_case(script, Bytes::Exact, ONE_MESSAGE) {
        assert_eq!(errors(&v, "closed"), 1, "{v}");
        assert_eq!(count(&v, &["websocket", "drops"]), 1, "{v}");
    }
}

#[test]
fn h54_a_ping_flood_is_answered_and_the_reply_still_counts() {
    let script = || {
        let mut steps = vec![Step::Upgrade(accepted), Step::ReadAny];
        steps.extend((0..2000).map(|_| frame(0x9, b"flood")));
        steps.extend([frame(0x1, b"hi"), Step::Hold]);
        once(steps)
    };
    for v in ws_case(script, Bytes::Exact, ONE_MESSAGE) {
        assert_eq!(completed(&v), 1, "{v}");
        assert_eq!(count(&v, &["websocket", "pings_received"]), 2000, "{v}");
    }
}

#[test]
fn h55_h56_close_frames_are_counted_by_code_and_a_silent_server_is_not_waited_for() {
    // The server closes with 1011 instead of answering: the message is unanswered.
    let script = || {
        once(vec![
            Step::Upgrade(accepted),
            Step::ReadAny,
            frame(0x8, &[0x03, 0xf3]),
            Step::Hold,
        ])
    };
    for v in ws_case(
        script,
        Bytes::Exact,
        &["-b", "hi", "-n", "1", "-c", "1", "--timeout", "300ms"],
    ) {
        let w = &v["websocket"];
        assert_eq!(count(w, &["close_codes", "1011"]), 1, "{v}");
        assert_eq!(count(w, &["drops"]), 1, "{v}");
        assert_eq!(errors(&v, "closed"), 1, "{v}");
    }
    // Held sockets whose server never answers pelt's close: the run still ends on time.
    let script = || once(vec![Step::Upgrade(accepted), Step::Hold]);
    for v in ws_case(script, Bytes::Exact, &["-c", "3", "-d", "300ms"]) {
        assert_eq!(count(&v, &["websocket", "held"]), 3, "{v}");
        assert_eq!(total_errors(&v), 0, "{v}");
    }
}

#[test]
fn h57_held_sockets_the_server_ends_are_dropped_and_opened_again() {
    // The server ends each socket 100 ms after its upgrade (a TCP close, no close frame).
    let script = || {
        once(vec![
            Step::Upgrade(accepted),
            Step::Sleep(Duration::from_millis(100)),
        ])
    };
    for v in ws_case(script, Bytes::Exact, &["-c", "1", "-d", "700ms"]) {
        let w = &v["websocket"];
        let (upgrades, drops) = (count(w, &["upgrades"]), count(w, &["drops"]));
        // A new socket each time: every socket but the one open at the end was dropped.
        assert!(upgrades >= 2, "{v}");
        assert!(drops + 1 >= upgrades && drops <= upgrades, "{v}");
    }
}

#[test]
fn h58_a_message_before_any_is_sent_is_a_push_not_a_reply() {
    // A welcome message right behind the 101 (chat servers send one), then the echo of pelt's
    // message: one reply, one push, whichever read they arrive in.
    let script = || {
        let mut welcome = vec![0x81, 7];
        welcome.extend_from_slice(b"welcome");
        once(vec![
            Step::UpgradeAnd(welcome),
            Step::ReadAny,
            frame(0x1, b"hi"),
            Step::Hold,
        ])
    };
    for v in ws_case(script, Bytes::AtMost, ONE_MESSAGE) {
        assert_eq!(completed(&v), 1, "{v}");
        let w = &v["websocket"];
        assert_eq!(count(w, &["messages_received"]), 2, "{v}");
        assert_eq!(count(w, &["pushed"]), 1, "{v}");
    }
}
