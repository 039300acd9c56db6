//! A raw HTTP/2 server's side, frame by frame, for scripted servers (tests/http2.rs,
//! tests/grpc.rs): what hyper or a real server will not do on demand.

use std::io::{Read, Write};
use std::net::TcpStream;

/// One frame: (type, flags, stream, payload); `None` at the end of the connection.
pub fn read_frame(s: &mut TcpStream) -> Option<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head).ok()?;
    let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some((head[3], head[4], stream, payload))
}

pub fn write_frame(s: &mut TcpStream, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    let _ = s.write_all(&f);
}

pub const SETTINGS: u8 = 4;
pub const HEADERS: u8 = 1;
pub const DATA: u8 = 0;
pub const RST_STREAM: u8 = 3;
pub const PING: u8 = 6;

/// Reads the client preface and answers with SETTINGS `settings` (id, value pairs).
pub fn accept_h2(s: &mut TcpStream, settings: &[(u16, u32)]) -> bool {
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).is_err() || &preface != b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" {
        return false;
    }
    let mut payload = vec![];
    for (id, value) in settings {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    write_frame(s, SETTINGS, 0, 0, &payload);
    true
}
