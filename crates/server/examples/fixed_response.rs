//! A minimal fixed-response HTTP/1.1 server for benchmarks, lighter than nginx, so that where
//! nginx's one core is the limit, the generator's own limit can show.
//!
//! One thread, level-triggered epoll, non-blocking sockets. Every request head (found by its
//! blank line; request bodies are not supported) is answered with the same 40-byte response,
//! pipelined requests with their responses in one write. Not a general server: `pelt serve`
//! (hyper) is the one that checks what it is sent.
//!
//! Usage: cargo run --release -p pelt-server --example fixed_response [PORT]
//! (port 0 or none: a free one); prints `listening on http://127.0.0.1:PORT`.

use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::io::Errno;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
const LISTENER: u64 = u64::MAX;

struct Conn {
    stream: TcpStream,
    /// How much of "\r\n\r\n" the last read ended in.
    matched: usize,
    /// Responses owed but not yet written (the socket was full).
    pending: Vec<u8>,
    /// EPOLLOUT is armed (while `pending` is not empty).
    armed: bool,
}

fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .map(|p| p.parse().expect("PORT must be a number"))
        .unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    listener.set_nonblocking(true)?;
    println!("listening on http://{}", listener.local_addr()?);
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(
        &ep,
        listener.as_fd(),
        EventData::new_u64(LISTENER),
        EventFlags::IN,
    )?;
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    let mut next_key = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::with_capacity(64 * 1024);
    let mut events = Vec::with_capacity(256);
    loop {
        events.clear();
        match epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        for ev in &events {
            let key = ev.data.u64();
            if key == LISTENER {
                while let Ok((stream, _)) = listener.accept() {
                    stream.set_nonblocking(true)?;
                    stream.set_nodelay(true)?;
                    epoll::add(
                        &ep,
                        stream.as_fd(),
                        EventData::new_u64(next_key),
                        EventFlags::IN,
                    )?;
                    let conn = Conn {
                        stream,
                        matched: 0,
                        pending: Vec::new(),
                        armed: false,
                    };
                    conns.insert(next_key, conn);
                    next_key += 1;
                }
                continue;
            }
            let Some(c) = conns.get_mut(&key) else {
                continue;
            };
            if !serve(c, &mut buf, &mut out, &ep, key) {
                conns.remove(&key);
            }
        }
    }
}

/// Reads what is there, answers every complete request head; false when the connection ends.
fn serve(c: &mut Conn, buf: &mut [u8], out: &mut Vec<u8>, ep: &impl AsFd, key: u64) -> bool {
    out.clear();
    out.append(&mut c.pending);
    match c.stream.read(buf) {
        Ok(0) => return false,
        Ok(n) => {
            for &b in &buf[..n] {
                c.matched = match (c.matched, b) {
                    (0 | 2, b'\r') => c.matched + 1,
                    (1 | 3, b'\n') => c.matched + 1,
                    (_, b'\r') => 1,
                    _ => 0,
                };
                if c.matched == 4 {
                    out.extend_from_slice(RESPONSE);
                    c.matched = 0;
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(_) => return false,
    }
    let mut written = 0;
    while written < out.len() {
        match c.stream.write(&out[written..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(_) => return false,
        }
    }
    c.pending.extend_from_slice(&out[written..]);
    let want = !c.pending.is_empty();
    if want == c.armed {
        return true;
    }
    c.armed = want;
    let flags = if want {
        EventFlags::IN | EventFlags::OUT
    } else {
        EventFlags::IN
    };
    epoll::modify(ep, c.stream.as_fd(), EventData::new_u64(key), flags).is_ok()
}
