//! A live page's server (`pelt --dashboard`) as the tests use it: plain HTTP/1.1 requests to
//! its state and control endpoints.

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
