//! Pipelining, many connections, --connect-rate and the choice of I/O backend, end to end.

mod util;

use pelt_server::ServerConfig;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use util::*;

#[test]
fn pipelined_requests_are_counted_exactly() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[
        &url,
        "-n",
        "20000",
        "-c",
        "4",
        "-t",
        "2",
        "--pipeline",
        "16",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 20_000);
    assert_eq!(count(&v, &["requests", "errors"]), 0);
    assert_eq!(v["pipeline"], 16);
    assert_eq!(count(&v, &["connections_opened"]), 4);
    assert_eq!(server.stop(), 20_000);
}

#[test]
fn pipelining_in_open_loop_keeps_the_schedule_exact() {
    let (server, url) = serve(ServerConfig::default());
    let v = run_json(&[
        &url,
        "-R",
        "2000",
        "-n",
        "600",
        "-c",
        "2",
        "--pipeline",
        "8",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), 600);
    assert_eq!(server.stop(), 600);
}

/// The four responses a batch gets, in order: every framing pelt must find the end of.
const RESPONSES: [&[u8]; 4] = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno",
];

/// Answers pipelined requests four at a time, writing the four responses as one byte
/// stream cut in two at a different offset each time (0 to all of it), a pause between the
/// pieces so they arrive in separate reads.
fn split_server(requests_seen: Arc<AtomicU64>) -> impl Fn(TcpStream) + Send + Sync + 'static {
    move |mut s| {
        let _ = s.set_nodelay(true);
        let batch: Vec<u8> = RESPONSES.concat();
        let mut cut = 0usize;
        let mut pending = Vec::new();
        let mut owed = 0;
        let mut buf = [0u8; 4096];
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buf[..n]);
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                pending.drain(..end + 4);
                owed += 1;
                requests_seen.fetch_add(1, Ordering::Relaxed);
            }
            while owed >= 4 {
                owed -= 4;
                let at = cut % (batch.len() + 1);
                cut += 1;
                if s.write_all(&batch[..at]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
                if s.write_all(&batch[at..]).is_err() {
                    return;
                }
            }
        }
    }
}

#[test]
fn pipelined_responses_split_at_every_byte_are_parsed() {
    let seen = Arc::new(AtomicU64::new(0));
    let server = RawServer::start(split_server(seen.clone()));
    let batch_len: usize = RESPONSES.iter().map(|r| r.len()).sum();
    // One batch per cut offset, 0 to the whole batch.
    let n = 4 * (batch_len as u64 + 1);
    let v = run_json(&[
        &server.url(),
        "-n",
        &n.to_string(),
        "-c",
        "1",
        "--pipeline",
        "4",
    ]);
    assert_eq!(count(&v, &["requests", "completed"]), n, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert_eq!(count(&v, &["status", "200"]), n / 2);
    assert_eq!(count(&v, &["status", "204"]), n / 4);
    assert_eq!(count(&v, &["status", "404"]), n / 4);
    assert_eq!(count(&v, &["connections_opened"]), 1);
    assert_eq!(seen.load(Ordering::Relaxed), n);
}

#[test]
fn a_close_among_pipelined_responses_fails_only_the_unanswered() {
    // Answers the first request of each connection, then closes with the rest unanswered.
    let server = RawServer::start(|mut s| {
        if read_request(&mut s) {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let v = run_json(&[&server.url(), "-n", "40", "-c", "1", "--pipeline", "4"]);
    let completed = count(&v, &["requests", "completed"]);
    let closed = count(&v, &["errors", "closed"]);
    assert_eq!(completed + closed, 40, "{v}");
    assert!(
        completed >= 10,
        "one answer per connection of 4 requests: {v}"
    );
    assert!(closed > 0, "{v}");
}

/// Raises this process's open-file limit (the in-process server holds one fd per
/// connection); false if the hard limit is too low.
fn raise_fd_limit(needed: u64) -> bool {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current.is_some_and(|c| c >= needed) {
        return true;
    }
    if lim.maximum.is_some_and(|m| m < needed) {
        return false;
    }
    lim.current = Some(needed);
    setrlimit(Resource::Nofile, lim).is_ok()
}

#[test]
fn two_thousand_connections_with_exact_accounting() {
    if !raise_fd_limit(8192) {
        eprintln!("skipped: the hard open-file limit is below 8192");
        return;
    }
    let (server, url) = serve(ServerConfig {
        threads: 2,
        ..Default::default()
    });
    let v = run_json(&[&url, "-n", "20000", "-c", "2000", "-t", "2"]);
    assert_eq!(count(&v, &["requests", "completed"]), 20_000, "{v}");
    assert_eq!(count(&v, &["requests", "errors"]), 0, "{v}");
    assert_eq!(count(&v, &["connections_opened"]), 2000);
    assert_eq!(server.stop(), 20_000);
}

#[test]
fn connect_rate_spreads_the_connections_out() {
    let (server, url) = serve(ServerConfig::default());
    // 40 connections at 20 per second cannot all open within a 1-second run.
    let v = run_json(&[&url, "-d", "1s", "-c", "40", "--connect-rate", "20"]);
    let opened = count(&v, &["connections_opened"]);
    assert!((1..40).contains(&opened), "opened {opened}");
    assert_eq!(v["connect_rate"], 20.0);
    assert!(count(&v, &["requests", "completed"]) > 0);
    server.stop();
}

#[test]
fn the_report_names_the_backend_that_ran() {
    let (server, url) = serve(ServerConfig::default());
    let run_io = |io: &str| {
        let mut cmd = pelt();
        cmd.env_remove("PELT_IO")
            .args([&url, "-n", "200", "-c", "2", "--json", "-"]);
        if !io.is_empty() {
            cmd.args(["--io", io]);
        }
        cmd.output().expect("run pelt")
    };
    let json = |out: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    };
    let epoll = run_io("epoll");
    assert_eq!(json(&epoll)["io"], "epoll");
    let uring = run_io("uring");
    let auto = json(&run_io(""));
    match uring.status.code() {
        Some(0) => {
            let v = json(&uring);
            assert_eq!(v["io"], "io_uring");
            assert_eq!(count(&v, &["requests", "completed"]), 200);
            assert_eq!(
                auto["io"], "io_uring",
                "auto prefers io_uring where it works"
            );
        }
        Some(2) => {
            // Unavailable here: one clear line, and auto falls back to epoll.
            let err = String::from_utf8_lossy(&uring.stderr);
            assert!(
                err.contains("io_uring") && err.lines().count() == 1,
                "{err}"
            );
            assert_eq!(auto["io"], "epoll");
        }
        other => panic!("--io uring exited {other:?}"),
    }
    server.stop();
}

#[test]
fn large_responses_on_many_connections_outrun_the_receive_buffers() {
    // 600 connections on one thread, 64 KiB bodies: far more bytes in flight than io_uring's
    // buffer ring holds (receives then end in ENOBUFS and are re-armed); every byte and every
    // response must still be counted.
    if !raise_fd_limit(4096) {
        eprintln!("skipped: the hard open-file limit is below 4096");
        return;
    }
    let (server, url) = serve(ServerConfig {
        threads: 2,
        body_size: 64 * 1024,
        ..Default::default()
    });
    let one = run_json(&[&url, "-n", "1", "-c", "1"]);
    let per_response = count(&one, &["bytes", "received"]);
    let v = run_json(&[&url, "-n", "5000", "-c", "600", "-t", "1"]);
    assert_eq!(count(&v, &["requests", "completed"]), 5000, "{v}");
    assert_eq!(count(&v, &["bytes", "received"]), 5000 * per_response);
    assert_eq!(server.stop(), 5001);
}
