//! HTTP/2 (RFC 9113) as pelt speaks it as a client, with no I/O.
//!
//! - [`encode_headers`] builds a request's header block once. It uses only the static table
//!   and literals "without indexing", so the same bytes are valid on every stream of every
//!   connection: the block is stateless and never needs re-encoding. (An HPACK encoder with a
//!   dynamic table, such as loona-hpack's, would make each block depend on the ones before.)
//! - [`Session`] is one connection's receiving side: feed it whatever a read returned and it
//!   reports [`Event`]s (a response's headers, the end of its body, a reset stream, GOAWAY,
//!   the server's settings) and queues the frames the protocol owes the server (SETTINGS and
//!   PING acknowledgements, WINDOW_UPDATE) in the connection's output. Response header blocks
//!   are decoded by [`crate::hpack`] (every block is decoded, so the dynamic table stays in
//!   step even for streams pelt has given up on).
//! - The frame writers ([`Session::headers`], [`Session::data`], ...) append frames to an
//!   output buffer the caller sends.
//!
//! DATA payloads are skipped by length and never copied; the only buffers are one for a
//! non-DATA frame split across reads (bounded by the 16 KiB frame size pelt advertises) and one
//! for a header block split over CONTINUATION frames (bounded by [`MAX_HEADER_BLOCK`]).
//!
//! Contracts: nothing here panics on any input from the server; every violation becomes an
//! [`H2Error`] (a connection error) naming what was wrong.

use std::fmt;

/// What a client sends first on every HTTP/2 connection.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The receive window pelt advertises, per stream and per connection (as h2load: 2^30 - 1).
/// pelt discards bodies, so a large window only keeps the server from ever waiting on it.
pub const WINDOW: u32 = (1 << 30) - 1;
/// The protocol's default window, before SETTINGS or WINDOW_UPDATE.
const DEFAULT_WINDOW: u32 = 65_535;
/// The frame size pelt accepts (the protocol's default; pelt never raises it).
pub const MAX_FRAME: usize = 16_384;
/// The largest response header block (HEADERS plus CONTINUATION) pelt takes.
pub const MAX_HEADER_BLOCK: usize = 256 * 1024;
const MAX_WINDOW: i64 = (1 << 31) - 1;

pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Error codes (RFC 9113 section 7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
}

/// The name of an HTTP/2 error code, as the RFC spells it.
pub fn code_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}

/// A connection error: the connection cannot go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Error {
    /// The error code pelt's GOAWAY names.
    pub code: u32,
    pub message: String,
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 {}: {}", code_name(self.code), self.message)
    }
}

impl std::error::Error for H2Error {}

fn err(code: u32, message: impl Into<String>) -> H2Error {
    H2Error {
        code,
        message: message.into(),
    }
}

/// Appends a frame header (RFC 9113 section 4.1).
pub fn frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Appends the client's opening: the preface, SETTINGS (no server push, pelt's stream
/// window) and a WINDOW_UPDATE raising the connection window to [`WINDOW`].
pub fn client_preface(out: &mut Vec<u8>) {
    out.extend_from_slice(PREFACE);
    frame_header(out, 12, kind::SETTINGS, 0, 0);
    out.extend_from_slice(&[0, 2]); // SETTINGS_ENABLE_PUSH
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&[0, 4]); // SETTINGS_INITIAL_WINDOW_SIZE
    out.extend_from_slice(&WINDOW.to_be_bytes());
    window_update(out, 0, WINDOW - DEFAULT_WINDOW);
}

/// Appends a WINDOW_UPDATE.
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame_header(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

/// Appends a RST_STREAM.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    frame_header(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a GOAWAY.
pub fn goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    frame_header(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// HPACK string literal, not Huffman-coded.
fn hpack_str(out: &mut Vec<u8>, s: &[u8]) {
    crate::hpack::put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// "Literal header field without indexing" with a static-table name (index > 0) or a
/// literal name (index 0).
fn hpack_literal(out: &mut Vec<u8>, index: usize, name: &[u8], value: &[u8]) {
    crate::hpack::put_integer(out, 0, 4, index);
    if index == 0 {
        // HTTP/2 field names are lower case.
        crate::hpack::put_integer(out, 0, 7, name.len());
        out.extend(name.iter().map(u8::to_ascii_lowercase));
    }
    hpack_str(out, value);
}

/// Headers that describe an HTTP/1.1 connection and are forbidden in HTTP/2 (RFC 9113
/// section 8.2.2); `Host` becomes `:authority`.
fn connection_specific(name: &[u8]) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
}

/// One request's header block, encoded once for every stream (see the module docs).
/// `headers` are the user's, already validated for HTTP/1.1 (tokens, no control characters);
/// their names are lower-cased, a `Host` header becomes `:authority`, and connection-specific
/// headers are dropped. `content-length` is added for a body unless given.
pub fn encode_headers(
    method: &str,
    scheme: &str,
    authority: &str,
    path: &str,
    headers: &[(String, String)],
    body_len: usize,
) -> Vec<u8> {
    let head = Head {
        method: method.as_bytes(),
        scheme,
        authority: authority.as_bytes(),
        path: path.as_bytes(),
    };
    headers_block::<Hpack>(Vec::with_capacity(64), head, headers, body_len)
}

/// `out` (a block's start: empty, or QPACK's prefix) with a request's fields after it, as
/// `B` writes them (see [`encode_headers`]).
pub(crate) fn headers_block<B: FieldBlock>(
    mut out: Vec<u8>,
    head: Head<'_>,
    headers: &[(String, String)],
    body_len: usize,
) -> Vec<u8> {
    let fields = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    encode_into::<B>(&mut out, head, fields, Some(body_len));
    out
}

/// A request rendered as HTTP/1.1 (its request line, headers, the blank line and its body,
/// as pelt's templates write it) turned into what HTTP/2 sends: its header block appended to
/// `block` (as [`encode_headers`] builds it) and its body to `body`. Allocates nothing once
/// the buffers have grown. An error names what does not parse (a template renders valid
/// requests, so this is a bug, not the server's doing).
pub fn encode_request(
    rendered: &[u8],
    scheme: &str,
    block: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<(), String> {
    encode_rendered::<Hpack>(rendered, scheme, block, body, true)
}

/// [`encode_request`] for the first of the HTTP/1.1 requests in `bytes` (a script's
/// `request()` may return several); returns its length in `bytes`.
pub fn encode_first_request(
    bytes: &[u8],
    scheme: &str,
    block: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<usize, String> {
    let n = crate::request::request_len(bytes)
        .filter(|n| *n <= bytes.len())
        .ok_or("not an HTTP/1.1 request")?;
    encode_request(&bytes[..n], scheme, block, body)?;
    Ok(n)
}

/// [`encode_request`] for a body the caller turns into another before it is sent (a gRPC
/// call's JSON into its binary message): the header block has no `content-length`.
pub fn encode_request_unsized(
    rendered: &[u8],
    scheme: &str,
    block: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<(), String> {
    encode_rendered::<Hpack>(rendered, scheme, block, body, false)
}

/// A rendered HTTP/1.1 request's head as `B`'s block, appended to `block`, and its body to
/// `body` (see [`encode_request`]).
pub(crate) fn encode_rendered<B: FieldBlock>(
    rendered: &[u8],
    scheme: &str,
    block: &mut Vec<u8>,
    body: &mut Vec<u8>,
    sized: bool,
) -> Result<(), String> {
    let mut found = [httparse::EMPTY_HEADER; crate::response::MAX_HEADERS];
    let mut head = httparse::Request::new(&mut found);
    let n = match head.parse(rendered) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("a rendered request cut short".into()),
        Err(e) => return Err(format!("a rendered request does not parse: {e}")),
    };
    let fields = head.headers.iter().map(|h| (h.name.as_bytes(), h.value));
    let authority = fields
        .clone()
        .find(|(n, _)| n.eq_ignore_ascii_case(b"host"))
        .map_or(&b""[..], |(_, v)| v);
    let h = Head {
        method: head.method.unwrap_or("GET").as_bytes(),
        scheme,
        authority,
        path: head.path.unwrap_or("/").as_bytes(),
    };
    body.extend_from_slice(&rendered[n..]);
    encode_into::<B>(block, h, fields, sized.then_some(rendered.len() - n));
    Ok(())
}

/// A request's pseudo-header fields.
pub(crate) struct Head<'a> {
    pub(crate) method: &'a [u8],
    pub(crate) scheme: &'a str,
    pub(crate) authority: &'a [u8],
    pub(crate) path: &'a [u8],
}

/// How a request's header block writes its fields: HPACK's (HTTP/2, [`Hpack`]) or QPACK's
/// (HTTP/3, `crate::h3`), each from its static table and literals only, so one block is
/// valid on every stream of every connection.
pub(crate) trait FieldBlock {
    fn method(out: &mut Vec<u8>, method: &[u8]);
    fn scheme(out: &mut Vec<u8>, scheme: &str);
    fn authority(out: &mut Vec<u8>, authority: &[u8]);
    fn path(out: &mut Vec<u8>, path: &[u8]);
    /// A field that is none of the above (its name lower-cased).
    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]);
    fn content_length(out: &mut Vec<u8>, digits: &[u8]);
}

/// HPACK's representations (static table, literals "without indexing").
pub(crate) struct Hpack;

impl FieldBlock for Hpack {
    fn method(out: &mut Vec<u8>, method: &[u8]) {
        match method {
            b"GET" => out.push(0x80 | 2),
            b"POST" => out.push(0x80 | 3),
            m => hpack_literal(out, 2, b"", m),
        }
    }

    fn scheme(out: &mut Vec<u8>, scheme: &str) {
        match scheme {
            "https" => out.push(0x80 | 7),
            _ => out.push(0x80 | 6),
        }
    }

    fn authority(out: &mut Vec<u8>, authority: &[u8]) {
        hpack_literal(out, 1, b"", authority);
    }

    fn path(out: &mut Vec<u8>, path: &[u8]) {
        if path == b"/" {
            out.push(0x80 | 4);
        } else {
            hpack_literal(out, 4, b"", path);
        }
    }

    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        hpack_literal(out, 0, name, value);
    }

    fn content_length(out: &mut Vec<u8>, digits: &[u8]) {
        // Static table entry 28 is content-length.
        hpack_literal(out, 28, b"", digits);
    }
}

/// Appends a request's header block: its pseudo-headers, then `fields` (see
/// [`encode_headers`]). `body_len`: `None` sends no `content-length`, not even one of
/// `fields`.
fn encode_into<'a, B: FieldBlock>(
    out: &mut Vec<u8>,
    head: Head<'_>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    body_len: Option<usize>,
) {
    B::method(out, head.method);
    B::scheme(out, head.scheme);
    let authority = fields
        .clone()
        .find(|(n, _)| n.eq_ignore_ascii_case(b"host"))
        .map_or(head.authority, |(_, v)| v);
    B::authority(out, authority);
    B::path(out, head.path);
    let mut has_length = false;
    for (name, value) in fields {
        if connection_specific(name) {
            continue;
        }
        if name.eq_ignore_ascii_case(b"te") && !value.eq_ignore_ascii_case(b"trailers") {
            continue;
        }
        let length = name.eq_ignore_ascii_case(b"content-length");
        if length && body_len.is_none() {
            continue;
        }
        has_length |= length;
        B::field(out, name, value);
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > 0 && !has_length {
        // Its digits written without allocating.
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = body_len;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        B::content_length(out, &digits[at..]);
    }
}

/// What the server said, one frame's worth at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// The server's SETTINGS arrived (the first, or a change). `window_delta` is the change
    /// of every open stream's send window (a new SETTINGS_INITIAL_WINDOW_SIZE).
    Settings { window_delta: i64 },
    /// A complete header block on `stream`: `status` is its `:status` (`None` if it had none,
    /// as trailers do).
    Headers {
        stream: u32,
        status: Option<u16>,
        end_stream: bool,
        /// Its `content-type` is `text/event-stream`.
        event_stream: bool,
    },
    /// A whole DATA frame on `stream` (`len` counts padding: it is what flow control counts).
    Data {
        stream: u32,
        len: u32,
        end_stream: bool,
    },
    /// The server reset `stream`.
    Reset { stream: u32, code: u32 },
    /// The server will take no stream above `last_stream`.
    GoAway {
        last_stream: u32,
        code: u32,
        debug: &'a [u8],
    },
    /// The server opened a send window (`stream` 0: the connection's).
    WindowUpdate { stream: u32, increment: u32 },
    /// One field of a header block on `stream`, decoded (before that block's
    /// [`Event::Headers`]); only after [`Session::read_responses`].
    Field {
        stream: u32,
        name: &'a [u8],
        value: &'a [u8],
    },
    /// Bytes of a DATA frame's content on `stream` (padding left out), as they arrive (before
    /// that frame's [`Event::Data`]).
    Body { stream: u32, bytes: &'a [u8] },
}

/// A DATA payload being skipped.
#[derive(Debug, Clone, Copy)]
struct DataFrame {
    stream: u32,
    len: u32,
    left: usize,
    end_stream: bool,
    /// PADDED: the first payload byte is the pad length.
    padded: bool,
    /// Read responses: payload bytes seen so far, and the pad length once known.
    pos: usize,
    pad: usize,
}

/// One HTTP/2 connection as a client sees it: what the server allows, and the frames it sent
/// split across reads.
pub struct Session {
    decoder: crate::hpack::Decoder,
    /// A non-DATA frame (header and payload) split across reads.
    partial: Vec<u8>,
    data: Option<DataFrame>,
    /// A header block continued in CONTINUATION frames, and its stream (0: none).
    block: Vec<u8>,
    block_stream: u32,
    block_end_stream: bool,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    max_streams: u32,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's send window.
    initial_window: u32,
    /// The server's SETTINGS_MAX_FRAME_SIZE: the largest frame pelt may send.
    max_frame: usize,
    /// Whether the server's first SETTINGS arrived.
    settled: bool,
    /// The connection's send window.
    send_window: i64,
    /// DATA bytes received since pelt last opened the connection's receive window.
    consumed: u32,
    next_stream: u32,
    /// The lowest `last_stream` of the server's GOAWAYs.
    goaway: Option<u32>,
    /// Header fields are reported ([`Session::read_responses`]).
    responses: bool,
    /// A response so far advertised HTTP/3 (`alt-svc` with `h3`): sticky, for the run's note.
    advertised_h3: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    pub fn new() -> Session {
        Session {
            decoder: crate::hpack::Decoder::new(),
            partial: Vec::new(),
            data: None,
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            max_streams: u32::MAX,
            initial_window: DEFAULT_WINDOW,
            max_frame: MAX_FRAME,
            settled: false,
            send_window: DEFAULT_WINDOW as i64,
            consumed: 0,
            next_stream: 1,
            goaway: None,
            responses: false,
            advertised_h3: false,
        }
    }

    /// A response's header block on this session advertised HTTP/3 (`alt-svc` with `h3`).
    pub fn advertised_h3(&self) -> bool {
        self.advertised_h3
    }

    /// From now on, reports each response header field ([`Event::Field`]), for a caller that
    /// reads responses (a scenario's captures and checks). Without it, fields other than
    /// `:status` and `content-type` are decoded and dropped. The bytes of DATA frames are
    /// reported either way ([`Event::Body`]: a streamed body is read as it comes), never
    /// copied.
    pub fn read_responses(&mut self) {
        self.responses = true;
    }

    /// Whether the server's first SETTINGS has arrived.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// How many streams the server lets pelt have open at once.
    pub fn max_streams(&self) -> u32 {
        self.max_streams
    }

    /// The send window each new stream starts with.
    pub fn initial_window(&self) -> u32 {
        self.initial_window
    }

    /// The server's GOAWAY: the last stream it may process.
    pub fn goaway(&self) -> Option<u32> {
        self.goaway
    }

    /// Whether a new stream may be opened: no GOAWAY and stream identifiers left.
    pub fn can_open(&self) -> bool {
        self.goaway.is_none() && self.next_stream <= 0x7fff_ffff
    }

    /// Takes the next stream identifier (check [`can_open`](Session::can_open) first).
    pub fn open_stream(&mut self) -> u32 {
        let id = self.next_stream;
        self.next_stream += 2;
        id
    }

    /// Appends a request's HEADERS (and CONTINUATION frames, if the block is larger than the
    /// server's frame size).
    pub fn headers(&self, out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool) {
        let end = if end_stream { flag::END_STREAM } else { 0 };
        let mut chunks = block.chunks(self.max_frame);
        let first = chunks.next().unwrap_or(&[]);
        let last = first.len() == block.len();
        let flags = end | if last { flag::END_HEADERS } else { 0 };
        frame_header(out, first.len(), kind::HEADERS, flags, stream);
        out.extend_from_slice(first);
        let mut rest = block.len() - first.len();
        for chunk in chunks {
            rest -= chunk.len();
            let flags = if rest == 0 { flag::END_HEADERS } else { 0 };
            frame_header(out, chunk.len(), kind::CONTINUATION, flags, stream);
            out.extend_from_slice(chunk);
        }
    }

    /// Appends DATA frames for `body[*sent..]`, as far as the connection's and the stream's
    /// send windows and the server's frame size allow; the last frame ends the stream.
    /// Returns whether the whole body is sent.
    pub fn data(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        body: &[u8],
        sent: &mut usize,
        stream_window: &mut i64,
    ) -> bool {
        self.data_until(out, stream, body, body.len(), sent, stream_window)
    }

    /// [`Session::data`] for `body[*sent..until]` only (a gRPC call that sends its next
    /// message once the last one is answered); the stream ends only with the body's last
    /// byte. Returns whether `until` is reached.
    pub fn data_until(
        &mut self,
        out: &mut Vec<u8>,
        stream: u32,
        body: &[u8],
        until: usize,
        sent: &mut usize,
        stream_window: &mut i64,
    ) -> bool {
        let until = until.min(body.len());
        while *sent < until {
            let room = self
                .send_window
                .min(*stream_window)
                .min(self.max_frame as i64);
            if room <= 0 {
                return false;
            }
            let n = (until - *sent).min(room as usize);
            let end = *sent + n == body.len();
            let flags = if end { flag::END_STREAM } else { 0 };
            frame_header(out, n, kind::DATA, flags, stream);
            out.extend_from_slice(&body[*sent..*sent + n]);
            *sent += n;
            self.send_window -= n as i64;
            *stream_window -= n as i64;
        }
        true
    }

    /// Reads `input` (any split of the server's bytes), calling `on` for each event. `on`
    /// returns how many bytes of a [`Event::Data`] frame to give back to the stream's receive
    /// window (0 for other events); frames the protocol owes the server go to `out`.
    pub fn receive(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        let mut rest = input;
        loop {
            if let Some(d) = self.data.as_mut() {
                let n = d.left.min(rest.len());
                if n > 0 {
                    data_bytes(d, &rest[..n], on)?;
                }
                d.left -= n;
                rest = &rest[n..];
                if d.left > 0 {
                    return Ok(());
                }
                let d = *d;
                self.data = None;
                self.on_data(d, out, on);
                continue;
            }
            if rest.is_empty() {
                return Ok(());
            }
            if !self.partial.is_empty() {
                // Finish the frame split across reads: its header first, then its payload.
                if self.partial.len() < 9 {
                    let n = (9 - self.partial.len()).min(rest.len());
                    self.partial.extend_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    if self.partial.len() < 9 {
                        return Ok(());
                    }
                }
                let head = self.frame_head(&self.partial[..9].try_into().unwrap())?;
                if head.kind == kind::DATA {
                    self.partial.clear();
                    self.start_data(head);
                    continue;
                }
                let want = 9 + head.len - self.partial.len();
                let n = want.min(rest.len());
                self.partial.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if n < want {
                    return Ok(());
                }
                let frame = std::mem::take(&mut self.partial);
                let result = self.frame(head, &frame[9..], out, on);
                self.partial = frame;
                self.partial.clear();
                result?;
                continue;
            }
            if rest.len() < 9 {
                self.partial.extend_from_slice(rest);
                return Ok(());
            }
            let head = self.frame_head(&rest[..9].try_into().unwrap())?;
            rest = &rest[9..];
            if head.kind == kind::DATA {
                self.start_data(head);
                continue;
            }
            if rest.len() < head.len {
                self.partial
                    .extend_from_slice(&input[input.len() - rest.len() - 9..]);
                return Ok(());
            }
            self.frame(head, &rest[..head.len], out, on)?;
            rest = &rest[head.len..];
        }
    }

    fn frame_head(&self, b: &[u8; 9]) -> Result<FrameHead, H2Error> {
        let len = (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize;
        let head = FrameHead {
            len,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        };
        if b.starts_with(b"HTTP/1.") {
            return Err(err(
                code::PROTOCOL_ERROR,
                "the server answered in HTTP/1.x, not HTTP/2 (it does not speak HTTP/2 with \
                 prior knowledge on this port)",
            ));
        }
        if len > MAX_FRAME {
            return Err(err(
                code::FRAME_SIZE_ERROR,
                format!("a frame of {len} bytes, over the {MAX_FRAME} pelt allows"),
            ));
        }
        if self.block_stream != 0
            && (head.kind != kind::CONTINUATION || head.stream != self.block_stream)
        {
            return Err(err(
                code::PROTOCOL_ERROR,
                format!(
                    "a frame of type {} arrived inside the header block of stream {}",
                    head.kind, self.block_stream
                ),
            ));
        }
        if head.kind == kind::DATA && head.stream == 0 {
            return Err(err(code::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        Ok(head)
    }

    fn start_data(&mut self, head: FrameHead) {
        self.data = Some(DataFrame {
            stream: head.stream,
            len: head.len as u32,
            left: head.len,
            end_stream: head.flags & flag::END_STREAM != 0,
            padded: head.flags & flag::PADDED != 0,
            pos: 0,
            pad: 0,
        });
    }

    fn on_data(&mut self, d: DataFrame, out: &mut Vec<u8>, on: &mut impl FnMut(Event) -> u32) {
        self.consumed += d.len;
        if self.consumed >= WINDOW / 2 {
            window_update(out, 0, self.consumed);
            self.consumed = 0;
        }
        let give_back = on(Event::Data {
            stream: d.stream,
            len: d.len,
            end_stream: d.end_stream,
        });
        if give_back > 0 && !d.end_stream {
            window_update(out, d.stream, give_back);
        }
    }

    /// One frame (DATA apart): HEADERS and CONTINUATION (`header_frame`), SETTINGS
    /// (`settings`), and the control frames.
    fn frame(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        out: &mut Vec<u8>,
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        match head.kind {
            kind::HEADERS | kind::CONTINUATION => self.header_frame(head, payload, on)?,
            kind::PRIORITY => need_stream(&head, true)?,
            kind::RST_STREAM => {
                need_stream(&head, true)?;
                need_len(&head, head.len == 4)?;
                let code = u32::from_be_bytes(payload.try_into().unwrap());
                on(Event::Reset {
                    stream: head.stream,
                    code,
                });
            }
            kind::SETTINGS => self.settings(head, payload, out, on)?,
            kind::PUSH_PROMISE => {
                return Err(err(
                    code::PROTOCOL_ERROR,
                    "PUSH_PROMISE, though pelt disabled server push",
                ))
            }
            kind::PING => {
                need_stream(&head, false)?;
                need_len(&head, head.len == 8)?;
                if head.flags & flag::ACK == 0 {
                    frame_header(out, 8, kind::PING, flag::ACK, 0);
                    out.extend_from_slice(payload);
                }
            }
            kind::GOAWAY => {
                need_stream(&head, false)?;
                need_len(&head, head.len >= 8)?;
                let last_stream =
                    u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff;
                let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                let last_stream = self.goaway.map_or(last_stream, |l| l.min(last_stream));
                self.goaway = Some(last_stream);
                on(Event::GoAway {
                    last_stream,
                    code,
                    debug: &payload[8..],
                });
            }
            kind::WINDOW_UPDATE => self.window_update(head, payload, on)?,
            // Unknown frame types are ignored, as the protocol requires.
            _ => {}
        }
        Ok(())
    }

    /// A HEADERS or CONTINUATION frame: a header block decoded once whole.
    fn header_frame(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        if head.kind == kind::HEADERS {
            need_stream(&head, true)?;
            let block = strip_headers(head.flags, payload)?;
            let end_stream = head.flags & flag::END_STREAM != 0;
            if head.flags & flag::END_HEADERS != 0 {
                return self.decode(head.stream, block, end_stream, on);
            }
            self.block.clear();
            self.block.extend_from_slice(block);
            self.block_stream = head.stream;
            self.block_end_stream = end_stream;
            return Ok(());
        }
        if self.block_stream == 0 {
            return Err(err(
                code::PROTOCOL_ERROR,
                "CONTINUATION with no header block open",
            ));
        }
        if self.block.len() + payload.len() > MAX_HEADER_BLOCK {
            return Err(err(
                code::PROTOCOL_ERROR,
                format!("a header block over {MAX_HEADER_BLOCK} bytes"),
            ));
        }
        self.block.extend_from_slice(payload);
        if head.flags & flag::END_HEADERS != 0 {
            let block = std::mem::take(&mut self.block);
            let stream = std::mem::replace(&mut self.block_stream, 0);
            let result = self.decode(stream, &block, self.block_end_stream, on);
            self.block = block;
            result?;
        }
        Ok(())
    }

    /// The server's SETTINGS: acknowledged, and the session settled.
    fn settings(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        out: &mut Vec<u8>,
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        need_stream(&head, false)?;
        if head.flags & flag::ACK != 0 {
            return need_len(&head, head.len == 0);
        }
        need_len(&head, head.len.is_multiple_of(6))?;
        let mut window_delta = 0;
        for s in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                3 => self.max_streams = value,
                4 => {
                    if value as i64 > MAX_WINDOW {
                        return Err(err(
                            code::FLOW_CONTROL_ERROR,
                            format!("SETTINGS_INITIAL_WINDOW_SIZE {value}"),
                        ));
                    }
                    window_delta += value as i64 - self.initial_window as i64;
                    self.initial_window = value;
                }
                5 => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(err(
                            code::PROTOCOL_ERROR,
                            format!("SETTINGS_MAX_FRAME_SIZE {value}"),
                        ));
                    }
                    self.max_frame = value as usize;
                }
                // Header table size: pelt's blocks never use the dynamic table.
                // Unknown settings are ignored, as the protocol requires.
                _ => {}
            }
        }
        frame_header(out, 0, kind::SETTINGS, flag::ACK, 0);
        self.settled = true;
        on(Event::Settings { window_delta });
        Ok(())
    }

    /// A WINDOW_UPDATE, for the connection (stream 0) or a stream.
    fn window_update(
        &mut self,
        head: FrameHead,
        payload: &[u8],
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        need_len(&head, head.len == 4)?;
        let increment = u32::from_be_bytes(payload.try_into().unwrap()) & 0x7fff_ffff;
        if increment == 0 {
            return Err(err(code::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
        }
        if head.stream == 0 {
            self.send_window += increment as i64;
            if self.send_window > MAX_WINDOW {
                return Err(err(
                    code::FLOW_CONTROL_ERROR,
                    "the connection's send window over 2^31-1",
                ));
            }
        }
        on(Event::WindowUpdate {
            stream: head.stream,
            increment,
        });
        Ok(())
    }

    fn decode(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        on: &mut impl FnMut(Event) -> u32,
    ) -> Result<(), H2Error> {
        let mut status = None;
        let mut bad_status = false;
        let mut event_stream = false;
        let responses = self.responses;
        let advertised_h3 = &mut self.advertised_h3;
        self.decoder
            .decode(block, |name, v| {
                if name == b"content-type" {
                    event_stream = crate::response::is_event_stream(v);
                } else if name == b"alt-svc" {
                    *advertised_h3 |= crate::response::advertises_h3(v);
                }
                if responses {
                    on(Event::Field {
                        stream,
                        name,
                        value: v,
                    });
                }
                if name == b":status" {
                    match v {
                        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                            let d = |x: &u8| (x - b'0') as u16;
                            status = Some(d(a) * 100 + d(b) * 10 + d(c));
                        }
                        _ => bad_status = true,
                    }
                }
            })
            .map_err(|e| err(code::COMPRESSION_ERROR, format!("HPACK: {e}")))?;
        if bad_status {
            return Err(err(code::PROTOCOL_ERROR, "a malformed :status"));
        }
        on(Event::Headers {
            stream,
            status,
            end_stream,
            event_stream,
        });
        Ok(())
    }
}

/// Reports `chunk`, the next bytes of DATA frame `d`'s payload, without its padding.
fn data_bytes(
    d: &mut DataFrame,
    mut chunk: &[u8],
    on: &mut impl FnMut(Event) -> u32,
) -> Result<(), H2Error> {
    if d.padded && d.pos == 0 {
        let pad = chunk[0] as usize;
        if pad >= d.len as usize {
            return Err(err(
                code::PROTOCOL_ERROR,
                "DATA padding as long as the frame or longer",
            ));
        }
        d.pad = pad;
        d.pos = 1;
        chunk = &chunk[1..];
    }
    let end = d.len as usize - d.pad;
    let content = &chunk[..end.saturating_sub(d.pos).min(chunk.len())];
    d.pos += chunk.len();
    if !content.is_empty() {
        on(Event::Body {
            stream: d.stream,
            bytes: content,
        });
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
struct FrameHead {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

/// A HEADERS payload without its padding and priority fields.
fn strip_headers(flags: u8, payload: &[u8]) -> Result<&[u8], H2Error> {
    let mut p = payload;
    let mut pad = 0;
    if flags & flag::PADDED != 0 {
        let (&n, rest) = p.split_first().ok_or_else(|| {
            err(
                code::FRAME_SIZE_ERROR,
                "a padded HEADERS with no pad length",
            )
        })?;
        pad = n as usize;
        p = rest;
    }
    if flags & flag::PRIORITY != 0 {
        p = p.get(5..).ok_or_else(|| {
            err(
                code::FRAME_SIZE_ERROR,
                "a HEADERS too short for its priority",
            )
        })?;
    }
    if pad > p.len() {
        return Err(err(
            code::PROTOCOL_ERROR,
            "HEADERS padding longer than the frame",
        ));
    }
    Ok(&p[..p.len() - pad])
}

/// A frame of `head`'s type must be on a stream (`nonzero`) or on the connection (stream 0).
fn need_stream(head: &FrameHead, nonzero: bool) -> Result<(), H2Error> {
    if (head.stream != 0) == nonzero {
        return Ok(());
    }
    let which = if nonzero {
        "on stream 0"
    } else {
        "on a stream"
    };
    Err(err(
        code::PROTOCOL_ERROR,
        format!("a frame of type {} {which}", head.kind),
    ))
}

/// A frame of `head`'s type must have a length that is `ok`.
fn need_len(head: &FrameHead, ok: bool) -> Result<(), H2Error> {
    if ok {
        return Ok(());
    }
    Err(err(
        code::FRAME_SIZE_ERROR,
        format!("a frame of type {} with {} bytes", head.kind, head.len),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response header block as a server with a dynamic table would send it.
    fn server_block(enc: &mut loona_hpack::Encoder, status: &[u8]) -> Vec<u8> {
        enc.encode([
            (&b":status"[..], status),
            (&b"content-length"[..], &b"2"[..]),
            (&b"date"[..], &b"Sun, 22 Nov 2026 16:00:00 GMT"[..]),
        ])
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![];
        frame_header(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    /// Every event `input` yields, fed in the given split sizes.
    fn events(s: &mut Session, input: &[u8], split: usize) -> (Vec<String>, Vec<u8>) {
        let mut seen = vec![];
        let mut out = vec![];
        for chunk in input.chunks(split.max(1)) {
            s.receive(chunk, &mut out, &mut |e| {
                // Body bytes come in as many pieces as the input (tested on their own).
                if !matches!(e, Event::Body { .. }) {
                    seen.push(format!("{e:?}"));
                }
                0
            })
            .unwrap();
        }
        (seen, out)
    }

    #[test]
    fn the_request_block_decodes_to_the_request() {
        let h = vec![
            ("Host".to_string(), "example.test".to_string()),
            ("X-Trace".to_string(), "abc".to_string()),
            ("Connection".to_string(), "close".to_string()),
        ];
        let block = encode_headers("PUT", "https", "127.0.0.1:1", "/a?b=1", &h, 5);
        let decoded = loona_hpack::Decoder::new().decode(&block).unwrap();
        let text: Vec<(String, String)> = decoded
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let want = [
            (":method", "PUT"),
            (":scheme", "https"),
            (":authority", "example.test"),
            (":path", "/a?b=1"),
            ("x-trace", "abc"),
            ("content-length", "5"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(text, want);
        // Stateless: the same bytes decode the same way again on the same decoder.
        let mut d = loona_hpack::Decoder::new();
        assert_eq!(d.decode(&block).unwrap(), d.decode(&block).unwrap());
    }

    #[test]
    fn long_values_use_multi_byte_lengths() {
        let long = "v".repeat(300);
        let h = vec![("x-long".to_string(), long.clone())];
        let block = encode_headers("GET", "http", "h", "/", &h, 0);
        let decoded = loona_hpack::Decoder::new().decode(&block).unwrap();
        assert_eq!(decoded.last().unwrap().1, long.into_bytes());
    }

    #[test]
    fn a_response_is_the_same_events_however_it_is_split() {
        let mut enc = loona_hpack::Encoder::new();
        let mut wire = frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 7]);
        wire.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS,
            1,
            &server_block(&mut enc, b"200"),
        ));
        wire.extend(frame(kind::DATA, 0, 1, b"O"));
        wire.extend(frame(kind::DATA, flag::END_STREAM, 1, b"K"));
        wire.extend(frame(kind::PING, 0, 0, b"12345678"));
        // A second response on stream 3 reuses the dynamic table entries.
        wire.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            3,
            &server_block(&mut enc, b"404"),
        ));
        let (whole, out_whole) = events(&mut Session::new(), &wire, wire.len());
        assert_eq!(
            whole,
            [
                "Settings { window_delta: 0 }",
                "Headers { stream: 1, status: Some(200), end_stream: false, event_stream: false }",
                "Data { stream: 1, len: 1, end_stream: false }",
                "Data { stream: 1, len: 1, end_stream: true }",
                "Headers { stream: 3, status: Some(404), end_stream: true, event_stream: false }",
            ]
        );
        // A SETTINGS ack and a PING ack.
        let mut acks = frame(kind::SETTINGS, flag::ACK, 0, b"");
        acks.extend(frame(kind::PING, flag::ACK, 0, b"12345678"));
        assert_eq!(out_whole, acks);
        for split in 1..wire.len() {
            let mut s = Session::new();
            assert_eq!(events(&mut s, &wire, split), (whole.clone(), acks.clone()));
            assert_eq!(s.max_streams(), 7);
        }
    }

    /// Reading responses: every header field and the DATA content, padding left out, the
    /// same however the bytes are split; the fields of a block come before its Headers event.
    #[test]
    fn fields_and_body_bytes_are_reported_when_asked() {
        let mut enc = loona_hpack::Encoder::new();
        let mut wire = frame(kind::SETTINGS, 0, 0, b"");
        wire.extend(frame(
            kind::HEADERS,
            flag::END_HEADERS,
            1,
            &server_block(&mut enc, b"200"),
        ));
        let mut padded = vec![3u8];
        padded.extend_from_slice(b"{\"id\":");
        padded.extend_from_slice(&[0, 0, 0]);
        wire.extend(frame(kind::DATA, flag::PADDED, 1, &padded));
        wire.extend(frame(kind::DATA, flag::END_STREAM, 1, b"42}"));
        let want = [
            "Settings { window_delta: 0 }",
            "Field { stream: 1, name: \":status\", value: \"200\" }",
            "Field { stream: 1, name: \"content-length\", value: \"2\" }",
            "Field { stream: 1, name: \"date\", value: \"Sun, 22 Nov 2026 16:00:00 GMT\" }",
            "Headers { stream: 1, status: Some(200), end_stream: false, event_stream: false }",
            "Data { stream: 1, len: 10, end_stream: false }",
            "Data { stream: 1, len: 3, end_stream: true }",
        ];
        for split in 1..=wire.len() {
            let mut s = Session::new();
            s.read_responses();
            let mut seen = vec![];
            let mut body = vec![];
            for chunk in wire.chunks(split) {
                s.receive(chunk, &mut vec![], &mut |e| {
                    match e {
                        Event::Body { stream: 1, bytes } => body.extend_from_slice(bytes),
                        e => seen.push(fields_as_text(&format!("{e:?}"))),
                    }
                    0
                })
                .unwrap();
            }
            assert_eq!(seen, want, "split {split}");
            assert_eq!(body, b"{\"id\":42}", "split {split}");
        }
        // Padding as long as the frame is a connection error.
        let mut s = Session::new();
        s.read_responses();
        let bad = frame(kind::DATA, flag::PADDED, 1, &[2, 0]);
        let e = s.receive(&bad, &mut vec![], &mut |_| 0).unwrap_err();
        assert_eq!(e.code, code::PROTOCOL_ERROR);
        // Without read_responses: no fields (the body's bytes still come).
        let (plain, _) = events(&mut Session::new(), &wire, wire.len());
        assert_eq!(plain.len(), 4);
        let mut body = vec![];
        Session::new()
            .receive(&wire, &mut vec![], &mut |e| {
                if let Event::Body { bytes, .. } = e {
                    body.extend_from_slice(bytes);
                }
                0
            })
            .unwrap();
        assert_eq!(body, b"{\"id\":42}");
    }

    /// `Field { name: [..], value: [..] }` with the byte lists shown as text.
    fn fields_as_text(e: &str) -> String {
        let mut out = String::new();
        let mut rest = e;
        while let Some(open) = rest.find('[') {
            let close = rest[open..].find(']').unwrap() + open;
            out.push_str(&rest[..open]);
            let bytes: Vec<u8> = rest[open + 1..close]
                .split(", ")
                .filter(|b| !b.is_empty())
                .map(|b| b.parse().unwrap())
                .collect();
            out.push_str(&format!("{:?}", String::from_utf8(bytes).unwrap()));
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }

    /// A rendered HTTP/1.1 request becomes the same block `encode_headers` builds from its
    /// parts, and its body.
    #[test]
    fn a_rendered_request_becomes_its_header_block_and_body() {
        let text = b"POST /cart/7?x=1 HTTP/1.1\r\nHost: shop.test\r\nAuthorization: Bearer T1\r\nConnection: keep-alive\r\nCookie: sid=a\r\nContent-Length: 9\r\n\r\n{\"id\":42}";
        let (mut block, mut body) = (vec![], vec![]);
        encode_request(text, "https", &mut block, &mut body).unwrap();
        assert_eq!(body, b"{\"id\":42}");
        let h: Vec<(String, String)> = [
            ("Host", "shop.test"),
            ("Authorization", "Bearer T1"),
            ("Connection", "keep-alive"),
            ("Cookie", "sid=a"),
            ("Content-Length", "9"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            block,
            encode_headers("POST", "https", "x", "/cart/7?x=1", &h, 9)
        );
        let decoded = loona_hpack::Decoder::new().decode(&block).unwrap();
        let names: Vec<&[u8]> = decoded.iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(
            names,
            [
                &b":method"[..],
                b":scheme",
                b":authority",
                b":path",
                b"authorization",
                b"cookie",
                b"content-length"
            ]
        );
        assert!(
            encode_request(b"GET / HTTP/1.1\r\nHost", "http", &mut block, &mut body)
                .unwrap_err()
                .contains("cut short")
        );
    }

    #[test]
    fn continuation_and_padding_and_priority() {
        let mut enc = loona_hpack::Encoder::new();
        let block = server_block(&mut enc, b"201");
        let (a, b) = block.split_at(3);
        let mut padded = vec![2u8]; // pad length
        padded.extend_from_slice(&[0, 0, 0, 0, 9]); // priority
        padded.extend_from_slice(a);
        padded.extend_from_slice(&[0, 0]);
        let mut wire = frame(
            kind::HEADERS,
            flag::PADDED | flag::PRIORITY | flag::END_STREAM,
            5,
            &padded,
        );
        wire.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 5, b));
        let mut s = Session::new();
        let (seen, _) = events(&mut s, &wire, 7);
        assert_eq!(
            seen,
            ["Headers { stream: 5, status: Some(201), end_stream: true, event_stream: false }"]
        );
        // An interleaved frame inside a header block is a connection error.
        let mut bad = frame(kind::HEADERS, 0, 5, a);
        bad.extend(frame(kind::PING, 0, 0, b"12345678"));
        let r = Session::new().receive(&bad, &mut vec![], &mut |_| 0);
        assert_eq!(r.unwrap_err().code, code::PROTOCOL_ERROR);
    }

    #[test]
    fn goaway_reset_window_and_settings_change() {
        let mut wire = frame(
            kind::SETTINGS,
            0,
            0,
            &[0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 0x80, 0],
        );
        wire.extend(frame(kind::RST_STREAM, 0, 3, &7u32.to_be_bytes()));
        wire.extend(frame(kind::WINDOW_UPDATE, 0, 0, &1000u32.to_be_bytes()));
        let mut ga = 5u32.to_be_bytes().to_vec();
        ga.extend_from_slice(&0u32.to_be_bytes());
        ga.extend_from_slice(b"bye");
        wire.extend(frame(kind::GOAWAY, 0, 0, &ga));
        let mut s = Session::new();
        let (seen, _) = events(&mut s, &wire, 5);
        assert_eq!(
            seen,
            [
                "Settings { window_delta: 1 }",
                "Reset { stream: 3, code: 7 }",
                "WindowUpdate { stream: 0, increment: 1000 }",
                "GoAway { last_stream: 5, code: 0, debug: [98, 121, 101] }",
            ]
        );
        assert_eq!(s.initial_window(), 65_536);
        assert_eq!(s.max_frame, 32_768);
        assert_eq!(s.send_window, 65_535 + 1000);
        assert!(!s.can_open());
    }

    #[test]
    fn data_respects_every_window_and_the_frame_size() {
        let mut s = Session::new();
        let body = vec![7u8; 80_000];
        let mut out = vec![];
        let (mut sent, mut window) = (0, 20_000i64);
        assert!(!s.data(&mut out, 1, &body, &mut sent, &mut window));
        assert_eq!(sent, 20_000);
        // Two frames: 16384 + 3616, neither ends the stream.
        assert_eq!(out.len(), 20_000 + 18);
        assert_eq!(out[4], 0);
        window += 100_000;
        // The connection window (65535) now limits it.
        assert!(!s.data(&mut out, 1, &body, &mut sent, &mut window));
        assert_eq!(sent, 65_535);
        let mut out2 = vec![];
        s.receive(
            &frame(kind::WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes()),
            &mut out2,
            &mut |_| 0,
        )
        .unwrap();
        let body2 = vec![1u8; 10];
        let (mut sent2, mut w2) = (0, 65_535i64);
        assert!(s.data(&mut out2, 3, &body2, &mut sent2, &mut w2));
        assert_eq!(out2[4], flag::END_STREAM);
        // Up to a point: its frames do not end the stream; the rest's last one does.
        let (mut out3, mut sent3, mut w3) = (vec![], 0, 65_535i64);
        assert!(s.data_until(&mut out3, 5, &body2, 4, &mut sent3, &mut w3));
        assert_eq!((sent3, out3.len(), out3[4]), (4, 9 + 4, 0));
        assert!(s.data_until(&mut out3, 5, &body2, 4, &mut sent3, &mut w3));
        assert_eq!(out3.len(), 13, "nothing more to send up to 4");
        assert!(s.data_until(&mut out3, 5, &body2, 99, &mut sent3, &mut w3));
        assert_eq!(
            (sent3, out3.len(), out3[13 + 4]),
            (10, 13 + 9 + 6, flag::END_STREAM)
        );
    }

    #[test]
    fn http1_and_garbage_are_connection_errors() {
        let r =
            Session::new().receive(b"HTTP/1.1 400 Bad Request\r\n\r\n", &mut vec![], &mut |_| 0);
        assert!(r.unwrap_err().message.contains("HTTP/1.x"));
        let r = Session::new().receive(&[0xff; 20], &mut vec![], &mut |_| 0);
        assert_eq!(r.unwrap_err().code, code::FRAME_SIZE_ERROR);
        let r = Session::new().receive(
            &frame(kind::PUSH_PROMISE, flag::END_HEADERS, 1, &[0, 0, 0, 2]),
            &mut vec![],
            &mut |_| 0,
        );
        assert_eq!(r.unwrap_err().code, code::PROTOCOL_ERROR);
        let r = Session::new().receive(
            &frame(kind::HEADERS, flag::END_HEADERS, 1, &[0xff, 0xff, 0xff]),
            &mut vec![],
            &mut |_| 0,
        );
        assert_eq!(r.unwrap_err().code, code::COMPRESSION_ERROR);
    }

    #[test]
    fn big_bodies_open_the_receive_windows() {
        let mut s = Session::new();
        let mut out = vec![];
        let chunk = vec![0u8; MAX_FRAME];
        let f = frame(kind::DATA, 0, 1, &chunk);
        let frames = (WINDOW as usize / 2) / MAX_FRAME + 1;
        let mut given = 0;
        for _ in 0..frames {
            s.receive(&f, &mut out, &mut |e| match e {
                Event::Data { len, .. } => {
                    given += 1;
                    len
                }
                _ => 0,
            })
            .unwrap();
        }
        assert_eq!(given, frames);
        // One connection-level update after half the window, and one per frame for the stream
        // (as the callback asked).
        let conn_updates = out
            .chunks(13)
            .filter(|f| f[3] == kind::WINDOW_UPDATE && f[5..9] == [0, 0, 0, 0])
            .count();
        assert_eq!(conn_updates, 1);
        assert_eq!(out.len(), 13 * (frames + 1));
    }

    /// Every event and output of a whole input, or its error, as text.
    fn outcome(input: &[u8], split: &[usize]) -> (Vec<String>, Vec<u8>, Option<String>) {
        let mut s = Session::new();
        let (mut seen, mut out): (Vec<String>, Vec<u8>) = (vec![], vec![]);
        // A body's bytes as one entry per run, however many pieces they came in.
        let mut body: Option<(u32, Vec<u8>)> = None;
        let mut rest = input;
        let mut cuts = split.iter().cycle();
        let mut error = None;
        while !rest.is_empty() {
            let n = (*cuts.next().unwrap()).clamp(1, rest.len());
            let (now, later) = rest.split_at(n);
            rest = later;
            let r = s.receive(now, &mut out, &mut |e| {
                match e {
                    Event::Body { stream, bytes } => match &mut body {
                        Some((s, b)) if *s == stream => b.extend_from_slice(bytes),
                        _ => {
                            if let Some((s, b)) = body.take() {
                                seen.push(format!("Body {s} {b:?}"));
                            }
                            body = Some((stream, bytes.to_vec()));
                        }
                    },
                    e => {
                        if let Some((s, b)) = body.take() {
                            seen.push(format!("Body {s} {b:?}"));
                        }
                        seen.push(format!("{e:?}"));
                    }
                }
                0
            });
            if let Err(e) = r {
                error = Some(e.to_string());
                break;
            }
        }
        if let Some((s, b)) = body.take() {
            seen.push(format!("Body {s} {b:?}"));
        }
        (seen, out, error)
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic, and give the same events, output and error however
        /// they are split across reads.
        #[test]
        fn any_input_any_split_same_outcome(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            split in proptest::collection::vec(1usize..50, 1..8),
        ) {
            let whole = outcome(&input, &[usize::MAX]);
            proptest::prop_assert_eq!(outcome(&input, &split), whole);
        }

        /// Well-formed frames with arbitrary payloads, split anywhere: the same as whole.
        #[test]
        fn framed_input_any_split_same_outcome(
            frames in proptest::collection::vec(
                (0u8..10, proptest::prelude::any::<u8>(), 0u32..4,
                 proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)),
                1..10),
            split in proptest::collection::vec(1usize..30, 1..8),
        ) {
            let mut input = vec![];
            for (kind, flags, stream, payload) in &frames {
                input.extend(frame(*kind, *flags, *stream, payload));
            }
            let whole = outcome(&input, &[usize::MAX]);
            proptest::prop_assert_eq!(outcome(&input, &split), whole);
        }
    }
}
