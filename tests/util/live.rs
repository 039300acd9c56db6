//! A live page's server (`pelt --dashboard`) as the tests use it: plain HTTP/1.1 requests to
//! its state and control endpoints.

use super::real::{nginx_command, RealServer};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request to the page's server: the status and the body.
pub fn request(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (status, body)
}

pub fn post(addr: SocketAddr, json: &str) -> (u16, Value) {
    let (code, body) = request(
        addr,
        "POST /api/control HTTP/1.1\r\nContent-Type: application/json",
        json,
    );
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

pub fn state(addr: SocketAddr) -> Value {
    let (code, body) = request(addr, "GET /api/state HTTP/1.1", "");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits until the run has gone `s` seconds (by its own clock).
pub fn until_second(addr: SocketAddr, s: f64) {
    let limit = Instant::now() + Duration::from_secs(30);
    while state(addr)["elapsed_s"].as_f64().unwrap_or(0.0) < s {
        assert!(Instant::now() < limit, "the run never reached {s} s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// nginx answering 200, logging each request's time (`$msec`).
pub fn nginx_timed(bin: &std::path::Path) -> RealServer {
    let bin = bin.to_path_buf();
    RealServer::start("nginx-live", 1, move |dir, ports| {
        let http = format!(
            "    log_format t '$msec';\n    access_log {d}/access.log t;\n    \
             server {{ listen 127.0.0.1:{}; location / {{ return 200 \"ok\"; }} }}\n",
            ports[0],
            d = dir.display(),
        );
        nginx_command(&bin, dir, &http)
    })
}

/// The access log's times (Unix seconds), waiting for `n` of them.
pub fn logged_times(server: &RealServer, n: u64) -> Vec<f64> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&server.access_log).unwrap_or_default();
        let times: Vec<f64> = text.lines().map(|l| l.parse().unwrap()).collect();
        if times.len() as u64 >= n || start.elapsed() > Duration::from_secs(5) {
            return times;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// nginx's times (`times`, Unix seconds; the run started at `start`) follow the steps the tests
/// take: 1000/s until `at[0]`, 3000/s until the pause at `at[1]`, nothing until the resume at
/// `at[2]`, 3000/s until the stop at `at[3]`. Each phase within 1 %, and 5 ms at 3000/s at each
/// end (a request logged a few ms after it was due lands across a boundary); nothing at all
/// from 50 ms into the pause to 5 ms before the resume.
pub fn assert_phases(times: &[f64], start: f64, at: &[f64]) {
    let within = |a: f64, b: f64| {
        times
            .iter()
            .filter(|&&t| t - start >= a && t - start < b)
            .count() as f64
    };
    for (from, to, rate) in [
        (0.0, at[0], 1000.0),
        (at[0], at[1], 3000.0),
        (at[1], at[2], 0.0),
        (at[2], at[3], 3000.0),
    ] {
        let got = within(from, to);
        let want = rate * (to - from);
        assert!(
            (got - want).abs() <= want * 0.01 + 15.0,
            "{from:.2}..{to:.2} s at {rate}/s: nginx logged {got}, the schedule says {want:.0}"
        );
    }
    let paused: Vec<f64> = times
        .iter()
        .map(|t| t - start)
        // nginx's `$msec` and the start are to the millisecond: 5 ms off the resume.
        .filter(|&t| t >= at[1] + 0.05 && t < at[2] - 0.005)
        .collect();
    assert!(
        paused.is_empty(),
        "nothing is sent while paused ({at:?}): {paused:?}"
    );
}
