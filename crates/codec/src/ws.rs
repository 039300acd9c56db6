//! WebSocket (RFC 6455), the client's side: the opening handshake's request and the check of
//! the server's answer, frames encoded and masked, and an incremental decoder of the server's
//! frames that hands out each message's payload as it passes.
//!
//! Written here rather than taken from a crate: tungstenite and its kin own the socket (a
//! `Read + Write` stream) and hand out each message as an owned buffer, an allocation and a
//! copy per message on the path pelt times. This decoder is a byte state machine like the
//! HTTP/1.1 parser: it keeps at most a frame header (14 bytes), a control frame's payload
//! (125 bytes) and three bytes of a UTF-8 character split across reads, whatever the server
//! sends; data payloads are borrowed from the read, never copied, and a text message's UTF-8
//! is checked as it passes. The tests check it against tungstenite both ways.
//!
//! What is a protocol error ([`WsError`]), as the RFC says a client must fail the connection:
//! a masked frame from the server, reserved bits set (no extension is offered), an unknown
//! opcode, a fragmented or oversized (> 125 bytes) control frame, a continuation with no
//! message begun or a new message inside a fragmented one, a length with its top bit set,
//! text that is not UTF-8, a close frame with a 1-byte payload, a code no endpoint may send or
//! a reason that is not UTF-8, and any frame after the server's close. A message longer than
//! the decoder's limit is [`WsError::TooBig`].
//!
//! ```
//! use pelt_codec::ws::{encode, Decoder, Opcode, WsEvent};
//! // A client frame is masked.
//! let mut wire = Vec::new();
//! encode(&mut wire, Opcode::Text, b"hi", [1, 2, 3, 4]);
//! assert_eq!(wire, [0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
//! // The server's are not; a message may come in fragments, split anywhere.
//! let mut d = Decoder::new();
//! let mut got = Vec::new();
//! for part in [&[0x01, 0x02, b'h'][..], &[b'e', 0x80, 0x01, b'y']] {
//!     d.receive(part, &mut |e: WsEvent<'_>| {
//!         if let WsEvent::Message { text, len } = e {
//!             got.push((text, len))
//!         }
//!     })
//!     .unwrap();
//! }
//! assert_eq!(got, [(true, 3)]);
//! ```

use crate::request::{HeaderError, RequestSpec};
use std::fmt;

/// The GUID RFC 6455 appends to the key before hashing it into the accept value.
pub const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The longest message a decoder takes unless told otherwise (tungstenite's default too).
pub const DEFAULT_MAX_MESSAGE: u64 = 64 << 20;

/// The longest handshake response head a reader keeps.
pub const MAX_HANDSHAKE: usize = 64 << 10;

/// A frame's opcode, as pelt sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    Text = 1,
    Binary = 2,
    Close = 8,
    Ping = 9,
    Pong = 10,
}

/// What the decoder found in the server's bytes, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsEvent<'a> {
    /// Bytes of a data message's payload as they pass (of any of its fragments).
    Data(&'a [u8]),
    /// A data message ended (its last fragment's last byte): text or binary, and its length.
    Message { text: bool, len: u64 },
    /// A ping, with its payload (the client owes a pong with the same).
    Ping(&'a [u8]),
    /// A pong.
    Pong(&'a [u8]),
    /// The server's close frame: its status code, if it gave one, and reason.
    Close { code: Option<u16>, reason: &'a [u8] },
}

/// A protocol violation in the server's frames: the connection must fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsError {
    /// The server masked a frame (RFC 6455 §5.1: a client must close on it).
    Masked,
    /// A reserved bit is set, with no extension negotiated.
    Reserved,
    /// An opcode RFC 6455 does not define.
    Opcode(u8),
    /// A control frame without FIN.
    FragmentedControl,
    /// A control frame longer than 125 bytes.
    ControlTooLong,
    /// A continuation frame with no fragmented message under way.
    UnexpectedContinuation,
    /// A new text or binary frame inside a fragmented message.
    ExpectedContinuation,
    /// A 64-bit length with its most significant bit set (a claim of 2^63 bytes or more).
    LengthTopBit,
    /// A message longer than the limit.
    TooBig { limit: u64 },
    /// A text message (or a close reason) that is not UTF-8.
    Utf8,
    /// A close frame whose payload is one byte.
    CloseLength,
    /// A close code no endpoint may send (RFC 6455 §7.4).
    CloseCode(u16),
    /// A frame after the server's close frame.
    AfterClose,
}

impl fmt::Display for WsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WsError::Masked => write!(f, "the server masked a frame"),
            WsError::Reserved => write!(f, "a frame has a reserved bit set"),
            WsError::Opcode(o) => write!(f, "a frame has the unknown opcode {o:#x}"),
            WsError::FragmentedControl => write!(f, "a control frame is fragmented"),
            WsError::ControlTooLong => write!(f, "a control frame is longer than 125 bytes"),
            WsError::UnexpectedContinuation => {
                write!(f, "a continuation frame came with no message begun")
            }
            WsError::ExpectedContinuation => {
                write!(f, "a new message began inside a fragmented one")
            }
            WsError::LengthTopBit => write!(f, "a frame claims a length of 2^63 bytes or more"),
            WsError::TooBig { limit } => write!(f, "a message is longer than {limit} bytes"),
            WsError::Utf8 => write!(f, "a text message is not UTF-8"),
            WsError::CloseLength => write!(f, "a close frame has a 1-byte payload"),
            WsError::CloseCode(c) => write!(f, "a close frame has the code {c}, not one to send"),
            WsError::AfterClose => write!(f, "a frame came after the server's close frame"),
        }
    }
}

impl std::error::Error for WsError {}

/// True for a close code an endpoint may send (RFC 6455 §7.4.1 and the IANA registry;
/// 3000-4999 for libraries and applications).
pub fn sendable_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999)
}

/// Appends one whole frame (FIN set) carrying `payload`, masked with `mask`, as a client sends
/// it.
pub fn encode(out: &mut Vec<u8>, opcode: Opcode, payload: &[u8], mask: [u8; 4]) {
    let len = payload.len();
    out.push(0x80 | opcode as u8);
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= u16::MAX as usize {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// Appends a close frame with `code` and `reason` (at most 123 bytes of it), masked.
pub fn encode_close(out: &mut Vec<u8>, code: u16, reason: &[u8], mask: [u8; 4]) {
    let mut payload = [0u8; 125];
    let reason = &reason[..reason.len().min(123)];
    payload[..2].copy_from_slice(&code.to_be_bytes());
    payload[2..2 + reason.len()].copy_from_slice(reason);
    encode(out, Opcode::Close, &payload[..2 + reason.len()], mask);
}

/// XORs `bytes` with the mask, as if they began at a multiple of four in the payload.
pub fn apply_mask(bytes: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let mut chunks = bytes.chunks_exact_mut(4);
    for c in &mut chunks {
        let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) ^ word;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (b, m) in chunks.into_remainder().iter_mut().zip(mask) {
        *b ^= m;
    }
}

/// `Sec-WebSocket-Key` for 16 random bytes: their base64.
pub fn key(nonce: [u8; 16]) -> [u8; 24] {
    let mut out = [0u8; 24];
    base64(&nonce, &mut out);
    out
}

/// The `Sec-WebSocket-Accept` a server must answer `key` with: base64(SHA-1(key + GUID)).
pub fn accept(key: &[u8]) -> [u8; 28] {
    let mut h = sha1_smol::Sha1::new();
    h.update(key);
    h.update(GUID);
    let mut out = [0u8; 28];
    base64(&h.digest().bytes(), &mut out);
    out
}

/// Standard base64 with padding of `input` into `out` (exactly 4 * ceil(len / 3) bytes).
/// Two fixed lengths only (16 and 20 bytes), so a dozen lines rather than a crate.
fn base64(input: &[u8], out: &mut [u8]) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (chunk, o) in input.chunks(3).zip(out.chunks_mut(4)) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from_be_bytes([0, b[0], b[1], b[2]]);
        for (k, slot) in o.iter_mut().enumerate() {
            *slot = if k <= chunk.len() {
                ABC[(n >> (18 - 6 * k) & 63) as usize]
            } else {
                b'='
            };
        }
    }
}

/// The opening handshake's request, built once: every connection writes it with its own key.
#[derive(Debug, Clone)]
pub struct Handshake {
    bytes: Vec<u8>,
    key_at: usize,
}

/// The key a handshake is built with and then replaced per connection.
const KEY_PLACEHOLDER: &str = "AAAAAAAAAAAAAAAAAAAAAA==";

impl Handshake {
    /// `GET path` with `Upgrade: websocket`, `Connection: Upgrade`, a key, version 13, the
    /// subprotocols asked for (`Sec-WebSocket-Protocol`, when not empty) and the user's headers
    /// (validated as any request's; a user `Host` replaces the URL's).
    pub fn new(
        host: &str,
        path: &str,
        protocols: &str,
        headers: &[(String, String)],
    ) -> Result<Handshake, HeaderError> {
        let mut all = vec![
            ("Upgrade".to_string(), "websocket".to_string()),
            ("Connection".to_string(), "Upgrade".to_string()),
            ("Sec-WebSocket-Key".to_string(), KEY_PLACEHOLDER.to_string()),
            ("Sec-WebSocket-Version".to_string(), "13".to_string()),
        ];
        if !protocols.is_empty() {
            all.push(("Sec-WebSocket-Protocol".to_string(), protocols.to_string()));
        }
        all.extend(headers.iter().cloned());
        let bytes = RequestSpec {
            method: "GET",
            path,
            host,
            headers: &all,
            body: b"",
            keep_alive: true,
        }
        .encode()?;
        let marker = format!("Sec-WebSocket-Key: {KEY_PLACEHOLDER}\r\n");
        let key_at = find(&bytes, marker.as_bytes()).expect("the key header is written") + 19;
        Ok(Handshake { bytes, key_at })
    }

    /// Appends the request with `key` to `out`.
    pub fn write(&self, key: &[u8; 24], out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        out[start + self.key_at..start + self.key_at + 24].copy_from_slice(key);
    }

    /// The request's length.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never: a request has a request line.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Why the server's answer to the handshake is not an accepted upgrade.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeError {
    /// The server answered with another status (no upgrade): the status.
    Status(u16),
    /// The answer is not an HTTP/1.1 response head (or too long): what was wrong.
    Malformed(&'static str),
    /// A 101 without `Upgrade: websocket`.
    NoUpgrade,
    /// A 101 without `Connection: Upgrade`.
    NoConnection,
    /// `Sec-WebSocket-Accept` is missing or not the key's.
    BadAccept,
    /// The server chose a subprotocol that was not asked for (the one named).
    Protocol(String),
    /// The server named extensions, none of which was offered.
    Extension,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Status(s) => write!(f, "the server answered the upgrade with {s}"),
            HandshakeError::Malformed(what) => write!(f, "the upgrade's answer {what}"),
            HandshakeError::NoUpgrade => write!(f, "a 101 without Upgrade: websocket"),
            HandshakeError::NoConnection => write!(f, "a 101 without Connection: Upgrade"),
            HandshakeError::BadAccept => {
                write!(f, "Sec-WebSocket-Accept is missing or not the key's")
            }
            HandshakeError::Protocol(p) => {
                write!(
                    f,
                    "the server chose the subprotocol {p:?}, which was not asked for"
                )
            }
            HandshakeError::Extension => {
                write!(f, "the server named an extension, and none was offered")
            }
        }
    }
}

impl std::error::Error for HandshakeError {}

/// Reads the server's answer to the handshake across reads (at most [`MAX_HANDSHAKE`] bytes
/// kept) and checks it.
#[derive(Debug, Clone, Default)]
pub struct HandshakeReader {
    head: Vec<u8>,
}

/// Where a handshake stands after a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upgraded {
    /// The head has not ended yet.
    Partial,
    /// Accepted: the read's bytes from `used` on are frames; `protocol`: the subprotocol the
    /// server chose, if any.
    Done {
        used: usize,
        protocol: Option<String>,
    },
}

impl HandshakeReader {
    /// Forgets a head begun on an earlier socket.
    pub fn reset(&mut self) {
        self.head.clear();
    }

    /// Reads `bytes`; `accept`: the value the key calls for; `protocols`: what was asked for
    /// (comma-separated; empty: none).
    pub fn receive(
        &mut self,
        bytes: &[u8],
        accept: &[u8; 28],
        protocols: &str,
    ) -> Result<Upgraded, HandshakeError> {
        let before = self.head.len();
        // The end may straddle the reads: search from three bytes back.
        let from = before.saturating_sub(3);
        let room = MAX_HANDSHAKE - before;
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let Some(end) = find(&self.head[from..], b"\r\n\r\n").map(|p| from + p + 4) else {
            return if self.head.len() >= MAX_HANDSHAKE {
                Err(HandshakeError::Malformed("head is longer than 64 KiB"))
            } else {
                Ok(Upgraded::Partial)
            };
        };
        let protocol = check(&self.head[..end], accept, protocols)?;
        let used = end - before;
        self.head.clear();
        Ok(Upgraded::Done { used, protocol })
    }
}

/// Checks a whole response head (ending in CRLF CRLF).
fn check(
    head: &[u8],
    accept: &[u8; 28],
    protocols: &str,
) -> Result<Option<String>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(HandshakeError::Malformed("is cut short")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HandshakeError::Malformed("has more than 64 headers"))
        }
        Err(_) => return Err(HandshakeError::Malformed("is not an HTTP response head")),
    }
    let status = resp.code.unwrap_or(0);
    if status != 101 {
        return Err(HandshakeError::Status(status));
    }
    let values = |name: &'static str| {
        resp.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    let tokens = |name: &'static str, token: &str| {
        values(name).any(|v| {
            v.split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    };
    if !tokens("upgrade", "websocket") {
        return Err(HandshakeError::NoUpgrade);
    }
    if !tokens("connection", "upgrade") {
        return Err(HandshakeError::NoConnection);
    }
    if !values("sec-websocket-accept").any(|v| v.trim_ascii() == accept) {
        return Err(HandshakeError::BadAccept);
    }
    if values("sec-websocket-extensions").any(|v| !v.trim_ascii().is_empty()) {
        return Err(HandshakeError::Extension);
    }
    match values("sec-websocket-protocol").next() {
        None => Ok(None),
        Some(v) => {
            let chosen = String::from_utf8_lossy(v.trim_ascii()).into_owned();
            if protocols.split(',').any(|p| p.trim() == chosen) && !chosen.is_empty() {
                Ok(Some(chosen))
            } else {
                Err(HandshakeError::Protocol(chosen))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Gathering a frame header (`have` bytes of it in `head`).
    Head,
    /// Inside a frame's payload: this many bytes left.
    Payload(u64),
    /// The server's close frame came: nothing more may.
    Closed,
}

/// The decoder of one connection's server frames (reset for the next socket).
#[derive(Debug, Clone)]
pub struct Decoder {
    max_message: u64,
    state: State,
    head: [u8; 10],
    have: u8,
    /// The frame being read: its opcode and FIN.
    opcode: u8,
    fin: bool,
    /// The data message under way (`Some(text)`) and its length so far.
    message: Option<bool>,
    message_len: u64,
    /// A UTF-8 character of a text message split across frames or reads.
    carry: [u8; 4],
    carry_len: u8,
    /// A control frame's payload so far.
    control: [u8; 125],
    control_len: u8,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder taking messages up to [`DEFAULT_MAX_MESSAGE`].
    pub fn new() -> Decoder {
        Decoder::with_max_message(DEFAULT_MAX_MESSAGE)
    }

    /// A decoder taking messages up to `max_message` bytes.
    pub fn with_max_message(max_message: u64) -> Decoder {
        Decoder {
            max_message,
            state: State::Head,
            head: [0; 10],
            have: 0,
            opcode: 0,
            fin: false,
            message: None,
            message_len: 0,
            carry: [0; 4],
            carry_len: 0,
            control: [0; 125],
            control_len: 0,
        }
    }

    /// Forgets everything of the last socket.
    pub fn reset(&mut self) {
        *self = Decoder::with_max_message(self.max_message);
    }

    /// A data message is under way (begun, not ended).
    pub fn in_message(&self) -> bool {
        self.message.is_some()
    }

    /// The server's close frame came.
    pub fn closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Reads `bytes` (any split of the server's stream), calling `on` for each event in order.
    /// After an error the decoder must be reset before it is used again.
    pub fn receive(
        &mut self,
        mut bytes: &[u8],
        on: &mut impl FnMut(WsEvent<'_>),
    ) -> Result<(), WsError> {
        while !bytes.is_empty() {
            match self.state {
                State::Closed => return Err(WsError::AfterClose),
                State::Head => {
                    let used = self.head_bytes(bytes)?;
                    bytes = &bytes[used..];
                    if self.state == State::Payload(0) {
                        self.frame_end(on)?;
                    }
                }
                State::Payload(left) => {
                    let n = (bytes.len() as u64).min(left) as usize;
                    let (now, rest) = bytes.split_at(n);
                    bytes = rest;
                    self.payload(now, on)?;
                    self.state = State::Payload(left - n as u64);
                    if left == n as u64 {
                        self.frame_end(on)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes header bytes; when the header is whole, checks it and enters its payload.
    fn head_bytes(&mut self, bytes: &[u8]) -> Result<usize, WsError> {
        let mut used = 0;
        while self.have < 2 && used < bytes.len() {
            self.head[self.have as usize] = bytes[used];
            self.have += 1;
            used += 1;
            if self.have == 2 {
                self.check_first_two()?;
            }
        }
        if self.have < 2 {
            return Ok(used);
        }
        let extra = match self.head[1] & 0x7f {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let want = (2 + extra) as usize;
        let take = (want - self.have as usize).min(bytes.len() - used);
        self.head[self.have as usize..self.have as usize + take]
            .copy_from_slice(&bytes[used..used + take]);
        self.have += take as u8;
        used += take;
        if (self.have as usize) < want {
            return Ok(used);
        }
        let len = match extra {
            2 => u16::from_be_bytes([self.head[2], self.head[3]]) as u64,
            8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.head[2..10]);
                let len = u64::from_be_bytes(b);
                if len >> 63 != 0 {
                    return Err(WsError::LengthTopBit);
                }
                len
            }
            _ => (self.head[1] & 0x7f) as u64,
        };
        if self.opcode & 8 != 0 {
            if len > 125 {
                return Err(WsError::ControlTooLong);
            }
            self.control_len = 0;
        } else {
            let total = self.message_len.saturating_add(len);
            if total > self.max_message {
                return Err(WsError::TooBig {
                    limit: self.max_message,
                });
            }
        }
        self.have = 0;
        self.state = State::Payload(len);
        Ok(used)
    }

    /// The first two header bytes: FIN, reserved bits, opcode, mask bit.
    fn check_first_two(&mut self) -> Result<(), WsError> {
        let (b0, b1) = (self.head[0], self.head[1]);
        if b0 & 0x70 != 0 {
            return Err(WsError::Reserved);
        }
        if b1 & 0x80 != 0 {
            return Err(WsError::Masked);
        }
        let opcode = b0 & 0x0f;
        let fin = b0 & 0x80 != 0;
        match opcode {
            0 if self.message.is_none() => return Err(WsError::UnexpectedContinuation),
            1 | 2 if self.message.is_some() => return Err(WsError::ExpectedContinuation),
            1 | 2 => {
                self.message = Some(opcode == 1);
                self.message_len = 0;
            }
            0 => {}
            8..=10 if !fin => return Err(WsError::FragmentedControl),
            8..=10 => {}
            other => return Err(WsError::Opcode(other)),
        }
        self.opcode = opcode;
        self.fin = fin;
        Ok(())
    }

    /// Some of the current frame's payload.
    fn payload(&mut self, bytes: &[u8], on: &mut impl FnMut(WsEvent<'_>)) -> Result<(), WsError> {
        if self.opcode & 8 != 0 {
            let at = self.control_len as usize;
            self.control[at..at + bytes.len()].copy_from_slice(bytes);
            self.control_len += bytes.len() as u8;
            return Ok(());
        }
        if bytes.is_empty() {
            return Ok(());
        }
        self.message_len += bytes.len() as u64;
        if self.message == Some(true) {
            self.utf8(bytes)?;
        }
        on(WsEvent::Data(bytes));
        Ok(())
    }

    /// The current frame ended.
    fn frame_end(&mut self, on: &mut impl FnMut(WsEvent<'_>)) -> Result<(), WsError> {
        self.state = State::Head;
        let payload = &self.control[..self.control_len as usize];
        match self.opcode {
            8 => {
                let (code, reason) = match payload.len() {
                    0 => (None, &payload[..0]),
                    1 => return Err(WsError::CloseLength),
                    _ => {
                        let code = u16::from_be_bytes([payload[0], payload[1]]);
                        if !sendable_close_code(code) {
                            return Err(WsError::CloseCode(code));
                        }
                        (Some(code), &payload[2..])
                    }
                };
                if std::str::from_utf8(reason).is_err() {
                    return Err(WsError::Utf8);
                }
                self.state = State::Closed;
                on(WsEvent::Close { code, reason });
            }
            9 => on(WsEvent::Ping(payload)),
            10 => on(WsEvent::Pong(payload)),
            _ if self.fin => {
                if self.carry_len != 0 {
                    return Err(WsError::Utf8);
                }
                let text = self.message.take() == Some(true);
                on(WsEvent::Message {
                    text,
                    len: self.message_len,
                });
                self.message_len = 0;
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks the next bytes of a text message, a character split across calls included.
    fn utf8(&mut self, mut bytes: &[u8]) -> Result<(), WsError> {
        if self.carry_len > 0 {
            let width = match self.carry[0] {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - self.carry_len as usize).min(bytes.len());
            let at = self.carry_len as usize;
            self.carry[at..at + take].copy_from_slice(&bytes[..take]);
            self.carry_len += take as u8;
            bytes = &bytes[take..];
            let have = &self.carry[..self.carry_len as usize];
            match std::str::from_utf8(have) {
                Ok(_) => self.carry_len = 0,
                Err(e) if e.error_len().is_some() => return Err(WsError::Utf8),
                Err(_) => return Ok(()),
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_some() => Err(WsError::Utf8),
            Err(e) => {
                let tail = &bytes[e.valid_up_to()..];
                self.carry[..tail.len()].copy_from_slice(tail);
                self.carry_len = tail.len() as u8;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `wire` fed in pieces of `step` bytes, data joined per message.
    fn decode(wire: &[u8], step: usize) -> (Vec<String>, Option<WsError>) {
        let mut d = Decoder::with_max_message(1 << 20);
        let mut got = Vec::new();
        let mut data = Vec::new();
        for part in wire.chunks(step.max(1)) {
            let r = d.receive(part, &mut |e| match e {
                WsEvent::Data(b) => data.extend_from_slice(b),
                WsEvent::Message { text, len } => {
                    assert_eq!(len as usize, data.len());
                    got.push(format!(
                        "{} {}",
                        if text { "text" } else { "binary" },
                        String::from_utf8_lossy(&data)
                    ));
                    data.clear();
                }
                WsEvent::Ping(p) => got.push(format!("ping {}", String::from_utf8_lossy(p))),
                WsEvent::Pong(p) => got.push(format!("pong {}", String::from_utf8_lossy(p))),
                WsEvent::Close { code, reason } => got.push(format!(
                    "close {code:?} {}",
                    String::from_utf8_lossy(reason)
                )),
            });
            if let Err(e) = r {
                return (got, Some(e));
            }
        }
        (got, None)
    }

    fn frame(b0: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![b0];
        match payload.len() {
            n if n < 126 => v.push(n as u8),
            n if n <= 65535 => {
                v.push(126);
                v.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                v.push(127);
                v.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn the_rfc_accept_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            &accept(b"dGhlIHNhbXBsZSBub25jZQ=="),
            b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(&key(*b"the sample nonce"), b"dGhlIHNhbXBsZSBub25jZQ==");
    }

    #[test]
    fn the_rfc_frame_examples_decode_however_split() {
        // RFC 6455 §5.7 (the server's, unmasked).
        let mut wire = vec![0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
        wire.extend([0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f]);
        wire.extend([0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
        wire.extend([0x8a, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
        wire.extend(frame(0x82, &[7u8; 256]));
        wire.extend(frame(0x82, &[9u8; 65536]));
        wire.extend([0x88, 0x02, 0x03, 0xe8]);
        let whole = decode(&wire, wire.len());
        assert_eq!(whole.1, None);
        assert_eq!(
            &whole.0[..4],
            ["text Hello", "text Hello", "ping Hello", "pong Hello"]
        );
        assert_eq!(whole.0[6], "close Some(1000) ");
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(decode(&wire, step), whole, "step {step}");
        }
    }

    #[test]
    fn control_frames_interleave_with_fragments() {
        let mut wire = frame(0x01, "ab".as_bytes());
        wire.extend(frame(0x89, b"p"));
        wire.extend(frame(0x00, "\u{e9}".as_bytes()));
        wire.extend(frame(0x80, b"c"));
        let (got, err) = decode(&wire, 1);
        assert_eq!(err, None);
        assert_eq!(got, ["ping p", "text ab\u{e9}c"]);
    }

    #[test]
    fn a_character_split_across_fragments_and_reads_is_utf8() {
        let e = "\u{1F600}".as_bytes();
        let mut wire = frame(0x01, &e[..1]);
        wire.extend(frame(0x00, &e[1..3]));
        wire.extend(frame(0x80, &e[3..]));
        for step in 1..wire.len() {
            assert_eq!(decode(&wire, step), (vec!["text \u{1F600}".into()], None));
        }
        // Cut short at the message's end.
        let (_, err) = decode(&frame(0x81, &e[..3]), 1);
        assert_eq!(err, Some(WsError::Utf8));
        // Not UTF-8 at all: binary is fine, text is not.
        assert_eq!(decode(&frame(0x82, &[0xff]), 1).1, None);
        assert_eq!(decode(&frame(0x81, &[0xff]), 1).1, Some(WsError::Utf8));
        assert_eq!(
            decode(&frame(0x81, &[0xed, 0xa0, 0x80]), 1).1,
            Some(WsError::Utf8)
        );
    }

    #[test]
    fn violations_are_errors() {
        let cases: Vec<(Vec<u8>, WsError)> = vec![
            (vec![0x81, 0x81, 1, 2, 3, 4, b'a'], WsError::Masked),
            (vec![0xc1, 0x00], WsError::Reserved),
            (vec![0x83, 0x00], WsError::Opcode(3)),
            (vec![0x8b, 0x00], WsError::Opcode(0xb)),
            (vec![0x09, 0x00], WsError::FragmentedControl),
            (frame(0x89, &[0; 126]), WsError::ControlTooLong),
            (vec![0x80, 0x00], WsError::UnexpectedContinuation),
            (
                [frame(0x01, b"a"), frame(0x81, b"b")].concat(),
                WsError::ExpectedContinuation,
            ),
            (
                vec![0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0],
                WsError::LengthTopBit,
            ),
            (
                vec![0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 0],
                WsError::TooBig { limit: 1 << 20 },
            ),
            (vec![0x88, 0x01, 0x03], WsError::CloseLength),
            (vec![0x88, 0x02, 0x03, 0xed], WsError::CloseCode(1005)),
            (vec![0x88, 0x02, 0x13, 0x88], WsError::CloseCode(5000)),
            (vec![0x88, 0x03, 0x03, 0xe8, 0xff], WsError::Utf8),
            (vec![0x88, 0x00, 0x81, 0x00], WsError::AfterClose),
        ];
        for (wire, want) in cases {
            for step in [1, wire.len()] {
                assert_eq!(decode(&wire, step).1, Some(want), "{wire:x?} in {step}");
            }
        }
        // A fragmented message's fragments add up against the limit.
        let mut d = Decoder::with_max_message(4);
        let wire = [frame(0x01, b"abc"), frame(0x80, b"de")].concat();
        assert_eq!(
            d.receive(&wire, &mut |_| {}),
            Err(WsError::TooBig { limit: 4 })
        );
    }

    #[test]
    fn masking_round_trips_at_any_offset() {
        let payload: Vec<u8> = (0..=255).collect();
        for len in [0, 1, 3, 4, 5, 125, 126, 200, 256] {
            let mut out = Vec::new();
            encode(
                &mut out,
                Opcode::Binary,
                &payload[..len],
                [0xa1, 0xb2, 0xc3, 0xd4],
            );
            let head = out.len() - len;
            let mut back = out[head..].to_vec();
            apply_mask(&mut back, [0xa1, 0xb2, 0xc3, 0xd4]);
            assert_eq!(back, &payload[..len]);
            assert_eq!(out[1] & 0x80, 0x80);
        }
        let mut out = Vec::new();
        encode(&mut out, Opcode::Text, &[b'x'; 70000], [0; 4]);
        assert_eq!(&out[..10], &[0x81, 0xff, 0, 0, 0, 0, 0, 1, 0x11, 0x70]);
    }

    #[test]
    fn the_handshake_request_carries_the_key_and_the_headers() {
        let hs = Handshake::new(
            "example.com:8080",
            "/chat?x=1",
            "chat, superchat",
            &[("Origin".into(), "http://example.com".into())],
        )
        .unwrap();
        let mut out = Vec::new();
        hs.write(&key(*b"the sample nonce"), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("GET /chat?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"),
            "{text}"
        );
        for line in [
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Protocol: chat, superchat",
            "Origin: http://example.com",
        ] {
            assert!(text.contains(&format!("{line}\r\n")), "{line} in {text}");
        }
        assert!(text.ends_with("\r\n\r\n"));
        assert!(Handshake::new("h", "/", "", &[("Bad\n".into(), "x".into())]).is_err());
    }

    #[test]
    fn the_handshake_answer_is_checked() {
        let acc = accept(b"dGhlIHNhbXBsZSBub25jZQ==");
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\n\
                  Connection: keep-alive, Upgrade\r\n\
                  Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n";
        let run = |head: &str, protocols: &str, step: usize| {
            let mut r = HandshakeReader::default();
            let wire = format!("{head}\r\n\u{81}");
            let mut used_total = 0;
            for part in wire.as_bytes().chunks(step) {
                match r.receive(part, &acc, protocols)? {
                    Upgraded::Partial => used_total += part.len(),
                    Upgraded::Done { used, protocol } => {
                        return Ok((used_total + used, protocol));
                    }
                }
            }
            Err(HandshakeError::Malformed("never ended"))
        };
        let n = ok.len() + 2;
        for step in [1, 5, 1000] {
            assert_eq!(run(ok, "", step), Ok((n, None)));
        }
        let with = format!("{ok}Sec-WebSocket-Protocol: chat\r\n");
        assert_eq!(
            run(&with, "superchat, chat", 3),
            Ok((with.len() + 2, Some("chat".into())))
        );
        assert_eq!(
            run(&with, "", 3),
            Err(HandshakeError::Protocol("chat".into()))
        );
        assert_eq!(
            run(&with, "superchat", 3),
            Err(HandshakeError::Protocol("chat".into()))
        );
        let cases = [
            (
                ok.replace("101 Switching Protocols", "404 Not Found"),
                HandshakeError::Status(404),
            ),
            (
                ok.replace("Upgrade: WebSocket\r\n", ""),
                HandshakeError::NoUpgrade,
            ),
            (
                ok.replace("keep-alive, Upgrade", "keep-alive"),
                HandshakeError::NoConnection,
            ),
            (ok.replace("s3pP", "s3pQ"), HandshakeError::BadAccept),
            (
                format!("{ok}Sec-WebSocket-Extensions: permessage-deflate\r\n"),
                HandshakeError::Extension,
            ),
            (
                "SSH-2.0-OpenSSH\r\n".into(),
                HandshakeError::Malformed("is not an HTTP response head"),
            ),
        ];
        for (head, want) in cases {
            assert_eq!(run(&head, "", 4), Err(want), "{head}");
        }
        // A head that never ends is cut at the limit.
        let mut r = HandshakeReader::default();
        let junk = vec![b'a'; MAX_HANDSHAKE + 10];
        assert!(matches!(
            r.receive(&junk, &acc, ""),
            Err(HandshakeError::Malformed(_))
        ));
    }
}
