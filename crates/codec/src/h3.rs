//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) as pelt speaks them as a client, with no I/O: what
//! goes on a QUIC connection's streams, not the QUIC connection itself.
//!
//! - [`encode_headers`] builds a request's field section once, as HTTP/2's header block is
//!   built ([`crate::h2::encode_headers`]): QPACK's static table and literals only, with a
//!   Required Insert Count of 0, so the same bytes are valid on every stream of every
//!   connection. pelt's SETTINGS ([`control_stream`]) allow the server no dynamic table
//!   either (`SETTINGS_QPACK_MAX_TABLE_CAPACITY` 0): neither side needs QPACK's encoder and
//!   decoder streams (RFC 9204 section 4.2).
//! - [`Response`] is one request stream's receiving side: feed it the stream's bytes as they
//!   come and it reports [`Event`]s (the response's fields and headers, its body's bytes,
//!   trailers); [`Response::end`] says whether the stream ended where a response may end.
//! - [`Control`] reads the server's control stream: its SETTINGS, then GOAWAY.
//! - [`Frames`] is the framing under both: frames split across reads anywhere; a frame whose
//!   payload the reader needs whole (HEADERS, SETTINGS, GOAWAY) is held, up to
//!   [`MAX_FIELD_SECTION`]; DATA and unknown frames are streamed or skipped, never copied.
//!
//! Why by hand: the maintained HTTP/3 crates (h3, with its QPACK inside) are async and own
//! their streams through their own QUIC traits; pelt's workers drive QUIC themselves
//! (quinn-proto, sans-I/O) and need the framing alone, allocation-free per request. QPACK
//! without a dynamic table is small: HPACK's integers and strings (its Huffman code from the
//! httlib-huffman crate, as [`crate::hpack`] decodes it) and a 99-entry static table.
//!
//! Contracts: nothing here panics on any input from the server; every violation becomes an
//! [`H3Error`] with the HTTP/3 or QPACK error code a client closes the connection (or resets
//! the stream) with.

use crate::h2::{encode_rendered, headers_block, FieldBlock, Head};
use std::fmt;

/// The largest field section (a HEADERS frame's payload) pelt takes, as HTTP/2's header block.
pub const MAX_FIELD_SECTION: usize = crate::h2::MAX_HEADER_BLOCK;

/// Frame types (RFC 9114 section 7.2); those of HTTP/2 with no HTTP/3 meaning are errors.
pub mod frame {
    pub const DATA: u64 = 0x0;
    pub const HEADERS: u64 = 0x1;
    pub const CANCEL_PUSH: u64 = 0x3;
    pub const SETTINGS: u64 = 0x4;
    pub const PUSH_PROMISE: u64 = 0x5;
    pub const GOAWAY: u64 = 0x7;
    pub const MAX_PUSH_ID: u64 = 0xd;
    /// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION (RFC 9114 section 11.2.1).
    pub const HTTP2_ONLY: [u64; 4] = [0x2, 0x6, 0x8, 0x9];
}

/// Unidirectional stream types (RFC 9114 section 6.2, RFC 9204 section 4.2).
pub mod stream_type {
    pub const CONTROL: u64 = 0x0;
    pub const PUSH: u64 = 0x1;
    pub const QPACK_ENCODER: u64 = 0x2;
    pub const QPACK_DECODER: u64 = 0x3;
}

/// Settings (RFC 9114 section 7.2.4.1, RFC 9204 section 5).
pub mod setting {
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x6;
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x7;
    /// HTTP/2's settings with no HTTP/3 meaning: receiving one is an error.
    pub const HTTP2_ONLY: [u64; 4] = [0x2, 0x3, 0x4, 0x5];
}

/// Error codes (RFC 9114 section 8.1, RFC 9204 section 6).
pub mod code {
    pub const NO_ERROR: u64 = 0x100;
    pub const GENERAL_PROTOCOL_ERROR: u64 = 0x101;
    pub const INTERNAL_ERROR: u64 = 0x102;
    pub const STREAM_CREATION_ERROR: u64 = 0x103;
    pub const CLOSED_CRITICAL_STREAM: u64 = 0x104;
    pub const FRAME_UNEXPECTED: u64 = 0x105;
    pub const FRAME_ERROR: u64 = 0x106;
    pub const EXCESSIVE_LOAD: u64 = 0x107;
    pub const ID_ERROR: u64 = 0x108;
    pub const SETTINGS_ERROR: u64 = 0x109;
    pub const MISSING_SETTINGS: u64 = 0x10a;
    pub const REQUEST_REJECTED: u64 = 0x10b;
    pub const REQUEST_CANCELLED: u64 = 0x10c;
    pub const REQUEST_INCOMPLETE: u64 = 0x10d;
    pub const MESSAGE_ERROR: u64 = 0x10e;
    pub const CONNECT_ERROR: u64 = 0x10f;
    pub const VERSION_FALLBACK: u64 = 0x110;
    pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
    pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
    pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x202;
}

/// An HTTP/3 or QPACK error code's name, as the RFCs write it (`unknown` for others; the
/// reserved codes `0x1f * N + 0x21` are `reserved`).
pub fn code_name(c: u64) -> &'static str {
    match c {
        code::NO_ERROR => "H3_NO_ERROR",
        code::GENERAL_PROTOCOL_ERROR => "H3_GENERAL_PROTOCOL_ERROR",
        code::INTERNAL_ERROR => "H3_INTERNAL_ERROR",
        code::STREAM_CREATION_ERROR => "H3_STREAM_CREATION_ERROR",
        code::CLOSED_CRITICAL_STREAM => "H3_CLOSED_CRITICAL_STREAM",
        code::FRAME_UNEXPECTED => "H3_FRAME_UNEXPECTED",
        code::FRAME_ERROR => "H3_FRAME_ERROR",
        code::EXCESSIVE_LOAD => "H3_EXCESSIVE_LOAD",
        code::ID_ERROR => "H3_ID_ERROR",
        code::SETTINGS_ERROR => "H3_SETTINGS_ERROR",
        code::MISSING_SETTINGS => "H3_MISSING_SETTINGS",
        code::REQUEST_REJECTED => "H3_REQUEST_REJECTED",
        code::REQUEST_CANCELLED => "H3_REQUEST_CANCELLED",
        code::REQUEST_INCOMPLETE => "H3_REQUEST_INCOMPLETE",
        code::MESSAGE_ERROR => "H3_MESSAGE_ERROR",
        code::CONNECT_ERROR => "H3_CONNECT_ERROR",
        code::VERSION_FALLBACK => "H3_VERSION_FALLBACK",
        code::QPACK_DECOMPRESSION_FAILED => "QPACK_DECOMPRESSION_FAILED",
        code::QPACK_ENCODER_STREAM_ERROR => "QPACK_ENCODER_STREAM_ERROR",
        code::QPACK_DECODER_STREAM_ERROR => "QPACK_DECODER_STREAM_ERROR",
        c if reserved(c) => "reserved",
        _ => "unknown",
    }
}

/// A reserved ("grease") frame type, stream type, setting or error code: `0x1f * N + 0x21`.
pub fn reserved(v: u64) -> bool {
    v >= 0x21 && (v - 0x21).is_multiple_of(0x1f)
}

/// A connection error (or, where [`H3Error::stream`] says so, one stream's), with the code to
/// close (or reset) with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H3Error {
    pub code: u64,
    pub message: String,
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/3 {}: {}", code_name(self.code), self.message)
    }
}

impl std::error::Error for H3Error {}

fn err(code: u64, message: impl Into<String>) -> H3Error {
    H3Error {
        code,
        message: message.into(),
    }
}

impl H3Error {
    /// A malformed response (RFC 9114 section 4.1.2): the stream's error, not the
    /// connection's; the connection goes on.
    pub fn stream(&self) -> bool {
        self.code == code::MESSAGE_ERROR
    }
}

/// Appends a QUIC variable-length integer (RFC 9000 section 16); `v` below 2^62.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&((v & ((1 << 62) - 1)) | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// A QUIC variable-length integer at the start of `p`, and its length; `None` when `p` ends
/// first.
pub fn varint(p: &[u8]) -> Option<(u64, usize)> {
    let first = *p.first()?;
    let len = 1usize << (first >> 6);
    let bytes = p.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = v << 8 | u64::from(b);
    }
    Some((v, len))
}

/// What a client opens its control stream with: the stream's type and pelt's SETTINGS — no
/// dynamic table (capacity 0, no blocked streams) and the largest field section it takes.
pub fn control_stream(out: &mut Vec<u8>) {
    put_varint(out, stream_type::CONTROL);
    let mut settings = Vec::with_capacity(16);
    for (id, value) in [
        (setting::QPACK_MAX_TABLE_CAPACITY, 0),
        (setting::QPACK_BLOCKED_STREAMS, 0),
        (setting::MAX_FIELD_SECTION_SIZE, MAX_FIELD_SECTION as u64),
    ] {
        put_varint(&mut settings, id);
        put_varint(&mut settings, value);
    }
    put_varint(out, frame::SETTINGS);
    put_varint(out, settings.len() as u64);
    out.extend_from_slice(&settings);
}

/// Appends a HEADERS frame holding `section` (a field section, as [`encode_headers`] builds it).
pub fn headers_frame(out: &mut Vec<u8>, section: &[u8]) {
    put_varint(out, frame::HEADERS);
    put_varint(out, section.len() as u64);
    out.extend_from_slice(section);
}

/// Appends the head of a DATA frame of `len` bytes (its payload follows).
pub fn data_frame_head(out: &mut Vec<u8>, len: usize) {
    put_varint(out, frame::DATA);
    put_varint(out, len as u64);
}

/// Appends a GOAWAY frame (a client's names the largest push ID it allows: pelt allows none,
/// so 0).
pub fn goaway(out: &mut Vec<u8>, id: u64) {
    let mut payload = Vec::with_capacity(8);
    put_varint(&mut payload, id);
    put_varint(out, frame::GOAWAY);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(&payload);
}

/// RFC 9204 Appendix A.
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// QPACK's representations of a request's fields (static table, literals).
struct Qpack;

impl Qpack {
    /// An indexed field line, static table (`11` + a 6-bit index).
    fn indexed(out: &mut Vec<u8>, index: usize) {
        crate::hpack::put_integer(out, 0xc0, 6, index);
    }

    /// A literal field line with a static name reference (`0101` + a 4-bit index), its value
    /// not Huffman-coded.
    fn named(out: &mut Vec<u8>, index: usize, value: &[u8]) {
        crate::hpack::put_integer(out, 0x50, 4, index);
        crate::hpack::put_integer(out, 0, 7, value.len());
        out.extend_from_slice(value);
    }
}

impl FieldBlock for Qpack {
    fn method(out: &mut Vec<u8>, method: &[u8]) {
        match STATIC[15..22]
            .iter()
            .position(|(_, v)| v.as_bytes() == method)
        {
            Some(i) => Qpack::indexed(out, 15 + i),
            None => Qpack::named(out, 15, method),
        }
    }

    fn scheme(out: &mut Vec<u8>, scheme: &str) {
        Qpack::indexed(out, if scheme == "https" { 23 } else { 22 });
    }

    fn authority(out: &mut Vec<u8>, authority: &[u8]) {
        Qpack::named(out, 0, authority);
    }

    fn path(out: &mut Vec<u8>, path: &[u8]) {
        match path {
            b"/" => Qpack::indexed(out, 1),
            p => Qpack::named(out, 1, p),
        }
    }

    fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        // A literal field line with a literal name (`0010` + a 3-bit length), lower-cased.
        crate::hpack::put_integer(out, 0x20, 3, name.len());
        out.extend(name.iter().map(u8::to_ascii_lowercase));
        crate::hpack::put_integer(out, 0, 7, value.len());
        out.extend_from_slice(value);
    }

    fn content_length(out: &mut Vec<u8>, digits: &[u8]) {
        Qpack::named(out, 4, digits);
    }
}

/// A field section's prefix with no dynamic table: Required Insert Count 0, Base 0.
const PREFIX: [u8; 2] = [0, 0];

/// One request's field section, encoded once for every stream, as
/// [`crate::h2::encode_headers`] encodes HTTP/2's: the user's headers (already validated for
/// HTTP/1.1) lower-cased, `Host` as `:authority`, connection-specific ones dropped,
/// `content-length` added for a body unless given.
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
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&PREFIX);
    headers_block::<Qpack>(out, head, headers, body_len)
}

/// A request rendered as HTTP/1.1 (as pelt's templates write it) turned into what HTTP/3
/// sends: its field section appended to `section`, its body to `body` (see
/// [`crate::h2::encode_request`]).
pub fn encode_request(
    rendered: &[u8],
    scheme: &str,
    section: &mut Vec<u8>,
    body: &mut Vec<u8>,
) -> Result<(), String> {
    section.extend_from_slice(&PREFIX);
    encode_rendered::<Qpack>(rendered, scheme, section, body, true)
}

/// A request rendered as HTTP/1.1 as its HTTP/3 stream carries it, appended to `out`: a
/// HEADERS frame and, with a body, one DATA frame. `scratch` holds the field section and body
/// on the way (kept by the caller, so a request rendered per stream allocates nothing).
pub fn request_frames(
    rendered: &[u8],
    scheme: &str,
    out: &mut Vec<u8>,
    scratch: &mut (Vec<u8>, Vec<u8>),
) -> Result<(), String> {
    let (section, body) = scratch;
    section.clear();
    body.clear();
    encode_request(rendered, scheme, section, body)?;
    headers_frame(out, section);
    if !body.is_empty() {
        data_frame_head(out, body.len());
        out.extend_from_slice(body);
    }
    Ok(())
}

/// [`request_frames`] for the first of the HTTP/1.1 requests in `bytes` (a script's
/// `request()` may return several); returns its length in `bytes`.
pub fn first_request_frames(
    bytes: &[u8],
    scheme: &str,
    out: &mut Vec<u8>,
    scratch: &mut (Vec<u8>, Vec<u8>),
) -> Result<usize, String> {
    let n = crate::request::request_len(bytes)
        .filter(|n| *n <= bytes.len())
        .ok_or("not an HTTP/1.1 request")?;
    request_frames(&bytes[..n], scheme, out, scratch)?;
    Ok(n)
}

/// Decodes one field section (a HEADERS frame's payload), calling `on(name, value)` for each
/// field in order. pelt allows no dynamic table, so any reference to one is
/// QPACK_DECOMPRESSION_FAILED.
pub fn decode_fields(
    section: &[u8],
    scratch: &mut (Vec<u8>, Vec<u8>),
    mut on: impl FnMut(&[u8], &[u8]),
) -> Result<(), H3Error> {
    let failed = |what: &str| err(code::QPACK_DECOMPRESSION_FAILED, what.to_string());
    let bad = |e: crate::hpack::HpackError| failed(&e.to_string());
    let dynamic = || {
        failed("a reference to the dynamic table, though pelt's SETTINGS allow none (capacity 0)")
    };
    let mut p = section;
    let required = crate::hpack::integer(&mut p, 8).map_err(bad)?;
    if required != 0 {
        return Err(dynamic());
    }
    // The Base (a sign bit and a delta) means nothing without a dynamic table.
    crate::hpack::integer(&mut p, 7).map_err(bad)?;
    let (name, value) = scratch;
    while let Some(&first) = p.first() {
        let entry = |index: usize| {
            STATIC
                .get(index)
                .ok_or_else(|| failed(&format!("static table index {index}, past its 99")))
        };
        if first & 0x80 != 0 {
            // Indexed field line: `1T` + a 6-bit index.
            if first & 0x40 == 0 {
                return Err(dynamic());
            }
            let (n, v) = entry(crate::hpack::integer(&mut p, 6).map_err(bad)?)?;
            on(n.as_bytes(), v.as_bytes());
        } else if first & 0x40 != 0 {
            // Literal field line with a name reference: `01NT` + a 4-bit index.
            if first & 0x10 == 0 {
                return Err(dynamic());
            }
            let (n, _) = entry(crate::hpack::integer(&mut p, 4).map_err(bad)?)?;
            value.clear();
            crate::hpack::string(&mut p, 7, value).map_err(bad)?;
            on(n.as_bytes(), value);
        } else if first & 0x20 != 0 {
            // Literal field line with a literal name: `001NH` + a 3-bit length.
            name.clear();
            crate::hpack::string(&mut p, 3, name).map_err(bad)?;
            value.clear();
            crate::hpack::string(&mut p, 7, value).map_err(bad)?;
            on(name, value);
        } else {
            // `0001` (indexed, post-base) and `0000` (literal, post-base name): the dynamic
            // table's.
            return Err(dynamic());
        }
    }
    Ok(())
}

/// What [`Frames`] hands out, one frame (or piece of one) at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame the reader needs whole, with its payload.
    Whole { kind: u64, payload: &'a [u8] },
    /// The start of a frame streamed to the reader (DATA) or skipped (those it does not know):
    /// its payload follows as [`Piece::Bytes`], `len` bytes in all.
    Begin { kind: u64, len: u64 },
    /// Bytes of the streamed frame's payload, as they come.
    Bytes(&'a [u8]),
}

/// Where [`Frames`] is in a stream.
#[derive(Debug, Clone, Copy)]
enum At {
    /// At a frame's head (bytes of it may be held).
    Head,
    /// In a held frame's payload, `len` bytes in all.
    Held { kind: u64, len: usize },
    /// In a streamed frame's payload, `left` bytes to come.
    Streamed { left: u64 },
}

/// A stream's frames (RFC 9114 section 7.1), from its bytes split across reads anywhere. A
/// frame type in `held` comes [`Piece::Whole`] (up to [`MAX_FIELD_SECTION`] bytes; a longer
/// one is H3_EXCESSIVE_LOAD), the others streamed.
#[derive(Debug)]
pub struct Frames {
    at: At,
    /// A frame's head, or a held payload, split across reads.
    partial: Vec<u8>,
}

impl Default for Frames {
    fn default() -> Self {
        Frames::new()
    }
}

/// A frame's type and length at the start of `p`, and their bytes; `None` when `p` ends
/// first.
fn frame_head(p: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, a) = varint(p)?;
    let (len, b) = varint(&p[a..])?;
    Some((kind, len, a + b))
}

impl Frames {
    pub fn new() -> Frames {
        Frames {
            at: At::Head,
            partial: Vec::new(),
        }
    }

    /// Whether the stream may end here: between frames, nothing held.
    pub fn between(&self) -> bool {
        matches!(self.at, At::Head) && self.partial.is_empty()
    }

    /// Reads `input` (any split of the stream's bytes), handing each frame to `on`, which
    /// may stop the reading with an error.
    pub fn receive(
        &mut self,
        input: &[u8],
        held: impl Fn(u64) -> bool,
        on: &mut impl FnMut(Piece) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        let mut rest = input;
        loop {
            match self.at {
                At::Streamed { left } => {
                    let n = left.min(rest.len() as u64) as usize;
                    if n > 0 {
                        on(Piece::Bytes(&rest[..n]))?;
                    }
                    rest = &rest[n..];
                    let left = left - n as u64;
                    if left > 0 {
                        self.at = At::Streamed { left };
                        return Ok(());
                    }
                    self.at = At::Head;
                }
                At::Held { kind, len } => {
                    if self.partial.is_empty() && rest.len() >= len {
                        self.at = At::Head;
                        on(Piece::Whole {
                            kind,
                            payload: &rest[..len],
                        })?;
                        rest = &rest[len..];
                        continue;
                    }
                    let n = (len - self.partial.len()).min(rest.len());
                    self.partial.extend_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    if self.partial.len() < len {
                        return Ok(());
                    }
                    self.at = At::Head;
                    let payload = std::mem::take(&mut self.partial);
                    let result = on(Piece::Whole {
                        kind,
                        payload: &payload,
                    });
                    self.partial = payload;
                    self.partial.clear();
                    result?;
                }
                At::Head => {
                    if rest.is_empty() {
                        return Ok(());
                    }
                    // A head is at most 16 bytes (two 8-byte varints).
                    let (kind, len) = if self.partial.is_empty() {
                        match frame_head(rest) {
                            Some((kind, len, used)) => {
                                rest = &rest[used..];
                                (kind, len)
                            }
                            None => {
                                self.partial.extend_from_slice(rest);
                                return Ok(());
                            }
                        }
                    } else {
                        let had = self.partial.len();
                        let n = (16 - had).min(rest.len());
                        self.partial.extend_from_slice(&rest[..n]);
                        match frame_head(&self.partial) {
                            Some((kind, len, used)) => {
                                rest = &rest[used - had..];
                                self.partial.clear();
                                (kind, len)
                            }
                            None => return Ok(()),
                        }
                    };
                    if held(kind) {
                        if len > MAX_FIELD_SECTION as u64 {
                            return Err(err(
                                code::EXCESSIVE_LOAD,
                                format!(
                                    "a frame of type {kind:#x} of {len} bytes, over the \
                                     {MAX_FIELD_SECTION} pelt takes"
                                ),
                            ));
                        }
                        self.at = At::Held {
                            kind,
                            len: len as usize,
                        };
                    } else {
                        on(Piece::Begin { kind, len })?;
                        self.at = At::Streamed { left: len };
                    }
                }
            }
        }
    }
}

/// What a request stream said, one piece at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// One field of a HEADERS frame, decoded (before that frame's [`Event::Headers`]); only
    /// after [`Response::read_fields`].
    Field { name: &'a [u8], value: &'a [u8] },
    /// A whole HEADERS frame: `status` its `:status` (`None` for trailers; 1xx for an
    /// interim response, which a final one follows).
    Headers {
        status: Option<u16>,
        /// Its `content-type` is `text/event-stream`.
        event_stream: bool,
    },
    /// Bytes of the response's body, as they come.
    Body(&'a [u8]),
}

/// One request stream's receiving side: the server's response, from the stream's bytes.
#[derive(Debug, Default)]
pub struct Response {
    frames: Frames,
    /// The final (non-1xx) response's headers arrived.
    headers: bool,
    /// Its trailers arrived: nothing more may.
    trailers: bool,
    /// In a DATA frame (the bytes that come are the body's).
    data: bool,
    fields: bool,
    scratch: (Vec<u8>, Vec<u8>),
}

impl Response {
    pub fn new() -> Response {
        Response::default()
    }

    /// Report each field ([`Event::Field`]).
    pub fn read_fields(&mut self) {
        self.fields = true;
    }

    /// Ready for the next request's stream (buffers kept).
    pub fn reset(&mut self) {
        self.frames.at = At::Head;
        self.frames.partial.clear();
        self.headers = false;
        self.trailers = false;
        self.data = false;
    }

    /// The final response's headers have arrived.
    pub fn answered(&self) -> bool {
        self.headers
    }

    /// Reads `input` (any split of the stream's bytes), calling `on` for each event.
    pub fn receive(&mut self, input: &[u8], on: &mut impl FnMut(Event)) -> Result<(), H3Error> {
        let Response {
            frames,
            headers,
            trailers,
            data,
            fields,
            scratch,
        } = self;
        frames.receive(input, |k| k == frame::HEADERS, &mut |piece| {
            match piece {
                Piece::Bytes(b) => {
                    if *data {
                        on(Event::Body(b));
                    }
                }
                Piece::Begin { kind, .. } => {
                    *data = kind == frame::DATA;
                    if *data && (!*headers || *trailers) {
                        return Err(err(
                            code::FRAME_UNEXPECTED,
                            match *trailers {
                                true => "DATA after the response's trailers",
                                false => "DATA before the response's HEADERS",
                            },
                        ));
                    }
                    if kind == frame::PUSH_PROMISE {
                        return Err(err(
                            code::ID_ERROR,
                            "PUSH_PROMISE, though pelt allows no push (it sent no MAX_PUSH_ID)",
                        ));
                    }
                    if matches!(
                        kind,
                        frame::CANCEL_PUSH | frame::SETTINGS | frame::GOAWAY | frame::MAX_PUSH_ID
                    ) || frame::HTTP2_ONLY.contains(&kind)
                    {
                        return Err(err(
                            code::FRAME_UNEXPECTED,
                            format!("a frame of type {kind:#x} on a request stream"),
                        ));
                    }
                    // Other types are unknown ones (reserved among them): skipped.
                }
                Piece::Whole { payload, .. } => {
                    if *trailers {
                        return Err(err(
                            code::FRAME_UNEXPECTED,
                            "HEADERS after the response's trailers",
                        ));
                    }
                    let (status, event_stream) = read_section(payload, scratch, *fields, on)?;
                    match (status, *headers) {
                        (None, false) => {
                            return Err(err(
                                code::MESSAGE_ERROR,
                                "a response's HEADERS without :status",
                            ))
                        }
                        (Some(_), true) => {
                            return Err(err(
                                code::MESSAGE_ERROR,
                                "trailers with a :status (a second response?)",
                            ))
                        }
                        (Some(s), false) if !(100..200).contains(&s) => *headers = true,
                        (None, true) => *trailers = true,
                        _ => {}
                    }
                    on(Event::Headers {
                        status,
                        event_stream,
                    });
                }
            }
            Ok(())
        })
    }

    /// The server ended the stream (its FIN): `Ok` if a whole response came.
    pub fn end(&self) -> Result<(), H3Error> {
        if !self.frames.between() {
            return Err(err(code::FRAME_ERROR, "the stream ended inside a frame"));
        }
        if !self.headers {
            return Err(err(
                code::MESSAGE_ERROR,
                "the stream ended before the response's headers",
            ));
        }
        Ok(())
    }
}

/// Decodes a HEADERS frame's field section: its `:status` and whether its `content-type` is
/// `text/event-stream`; each field to `on` when `fields`.
fn read_section(
    payload: &[u8],
    scratch: &mut (Vec<u8>, Vec<u8>),
    fields: bool,
    on: &mut impl FnMut(Event),
) -> Result<(Option<u16>, bool), H3Error> {
    let mut status = None;
    let mut bad_status = false;
    let mut event_stream = false;
    decode_fields(payload, scratch, |name, value| {
        if name == b":status" {
            let s = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<u16>().ok())
                .filter(|s| (100..1000).contains(s) && value.len() == 3);
            bad_status |= s.is_none();
            status = s;
        } else if name == b"content-type" {
            event_stream = value
                .split(|&b| b == b';')
                .next()
                .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"text/event-stream"));
        }
        if fields {
            on(Event::Field { name, value });
        }
    })?;
    if bad_status {
        return Err(err(code::MESSAGE_ERROR, "a :status that is not 3 digits"));
    }
    Ok((status, event_stream))
}

/// What the server's control stream said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlEvent {
    /// Its SETTINGS (the first frame): the largest field section it takes (`None`:
    /// unlimited) and its dynamic table's capacity (pelt uses none).
    Settings {
        max_field_section: Option<u64>,
        qpack_capacity: u64,
    },
    /// It will take no request stream from `stream` on.
    GoAway { stream: u64 },
}

/// The server's control stream, after its type (RFC 9114 section 6.2.1).
#[derive(Debug, Default)]
pub struct Control {
    frames: Frames,
    settled: bool,
    /// The lowest stream ID of its GOAWAYs.
    goaway: Option<u64>,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }

    /// Reads `input` (any split of the stream's bytes), calling `on` for each event.
    pub fn receive(
        &mut self,
        input: &[u8],
        on: &mut impl FnMut(ControlEvent),
    ) -> Result<(), H3Error> {
        let Control {
            frames,
            settled,
            goaway,
        } = self;
        frames.receive(
            input,
            |k| matches!(k, frame::SETTINGS | frame::GOAWAY),
            &mut |piece| {
                let kind = match piece {
                    Piece::Bytes(_) => return Ok(()),
                    Piece::Whole { kind, .. } | Piece::Begin { kind, .. } => kind,
                };
                if !*settled && kind != frame::SETTINGS {
                    return Err(err(
                        code::MISSING_SETTINGS,
                        format!("the control stream began with a frame of type {kind:#x}"),
                    ));
                }
                match piece {
                    Piece::Whole {
                        kind: frame::SETTINGS,
                        payload,
                    } => {
                        if *settled {
                            return Err(err(code::FRAME_UNEXPECTED, "a second SETTINGS"));
                        }
                        *settled = true;
                        on(settings(payload)?);
                    }
                    Piece::Whole {
                        kind: frame::GOAWAY,
                        payload,
                    } => {
                        let stream = match varint(payload) {
                            Some((id, n)) if n == payload.len() => id,
                            _ => return Err(err(code::FRAME_ERROR, "a GOAWAY that is not one ID")),
                        };
                        if !stream.is_multiple_of(4) {
                            return Err(err(
                                code::ID_ERROR,
                                format!("GOAWAY names stream {stream}, not a request stream"),
                            ));
                        }
                        if goaway.is_some_and(|g| stream > g) {
                            return Err(err(
                                code::ID_ERROR,
                                format!("a GOAWAY raised its stream ID to {stream}"),
                            ));
                        }
                        *goaway = Some(stream);
                        on(ControlEvent::GoAway { stream });
                    }
                    Piece::Begin { kind, .. }
                        if matches!(
                            kind,
                            frame::DATA | frame::HEADERS | frame::PUSH_PROMISE | frame::MAX_PUSH_ID
                        ) || frame::HTTP2_ONLY.contains(&kind) =>
                    {
                        return Err(err(
                            code::FRAME_UNEXPECTED,
                            format!("a frame of type {kind:#x} on the control stream"),
                        ))
                    }
                    // CANCEL_PUSH (pelt has no push) and unknown frames.
                    _ => {}
                }
                Ok(())
            },
        )
    }
}

/// A SETTINGS frame's payload.
fn settings(mut p: &[u8]) -> Result<ControlEvent, H3Error> {
    let mut seen: Vec<u64> = Vec::new();
    let (mut max_field_section, mut qpack_capacity) = (None, 0);
    while !p.is_empty() {
        let pair = varint(p).and_then(|(id, a)| varint(&p[a..]).map(|(v, b)| (id, v, a + b)));
        let Some((id, value, n)) = pair else {
            return Err(err(
                code::FRAME_ERROR,
                "a SETTINGS frame cut inside a setting",
            ));
        };
        p = &p[n..];
        if seen.contains(&id) {
            return Err(err(
                code::SETTINGS_ERROR,
                format!("setting {id:#x} given twice"),
            ));
        }
        if setting::HTTP2_ONLY.contains(&id) {
            return Err(err(
                code::SETTINGS_ERROR,
                format!("setting {id:#x}, HTTP/2's, not HTTP/3's"),
            ));
        }
        seen.push(id);
        match id {
            setting::MAX_FIELD_SECTION_SIZE => max_field_section = Some(value),
            setting::QPACK_MAX_TABLE_CAPACITY => qpack_capacity = value,
            _ => {}
        }
    }
    Ok(ControlEvent::Settings {
        max_field_section,
        qpack_capacity,
    })
}

/// A unidirectional stream the server opened, by its type (the stream's first varint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniStream {
    /// Its control stream: read it with [`Control`].
    Control,
    /// QPACK's encoder or decoder stream: with no dynamic table on either side there is
    /// nothing in them pelt needs; their bytes are read and dropped.
    Qpack,
    /// A type pelt does not know (a reserved one among them): read and dropped, as RFC 9114
    /// section 6.2 allows.
    Unknown,
}

/// The type of a unidirectional stream the server opened, from its first bytes, and the
/// bytes it took; `Ok(None)` until they have come. A push stream is H3_ID_ERROR (pelt allows
/// no push).
pub fn uni_stream(first: &[u8]) -> Result<Option<(UniStream, usize)>, H3Error> {
    let Some((kind, n)) = varint(first) else {
        return Ok(None);
    };
    let kind = match kind {
        stream_type::CONTROL => UniStream::Control,
        stream_type::QPACK_ENCODER | stream_type::QPACK_DECODER => UniStream::Qpack,
        stream_type::PUSH => {
            return Err(err(
                code::ID_ERROR,
                "a push stream, though pelt allows no push (it sent no MAX_PUSH_ID)",
            ))
        }
        _ => UniStream::Unknown,
    };
    Ok(Some((kind, n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fields(section: &[u8]) -> Result<Vec<(String, String)>, H3Error> {
        let mut out = vec![];
        decode_fields(section, &mut Default::default(), |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(varint(&out), Some((v, out.len())));
            assert_eq!(varint(&out[..out.len() - 1]), None);
        }
        // RFC 9000 Appendix A.1's examples.
        assert_eq!(
            varint(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]),
            Some((151_288_809_941_952_652, 8))
        );
        assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
        assert_eq!(varint(&[0x7b, 0xbd]), Some((15_293, 2)));
        assert_eq!(varint(&[0x25]), Some((37, 1)));
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn a_request_section_decodes_to_its_fields() {
        let h = vec![
            ("Host".to_string(), "example.com:8443".to_string()),
            ("X-Token".to_string(), "abc".to_string()),
            ("Connection".to_string(), "keep-alive".to_string()),
        ];
        let s = encode_headers("PUT", "https", "127.0.0.1:1", "/a?b=1", &h, 5);
        assert_eq!(
            fields(&s).unwrap(),
            pairs(&[
                (":method", "PUT"),
                (":scheme", "https"),
                (":authority", "example.com:8443"),
                (":path", "/a?b=1"),
                ("x-token", "abc"),
                ("content-length", "5"),
            ])
        );
        let s = encode_headers("PATCH", "http", "h", "/", &[], 0);
        assert_eq!(
            fields(&s).unwrap(),
            pairs(&[
                (":method", "PATCH"),
                (":scheme", "http"),
                (":authority", "h"),
                (":path", "/"),
            ])
        );
        // A rendered HTTP/1.1 request gives the same section.
        let (mut section, mut body) = (vec![], vec![]);
        encode_request(
            b"PUT /a?b=1 HTTP/1.1\r\nHost: example.com:8443\r\nX-Token: abc\r\nContent-Length: 5\r\n\r\nhello",
            "https",
            &mut section,
            &mut body,
        )
        .unwrap();
        assert_eq!(body, b"hello");
        assert_eq!(
            fields(&section).unwrap(),
            pairs(&[
                (":method", "PUT"),
                (":scheme", "https"),
                (":authority", "example.com:8443"),
                (":path", "/a?b=1"),
                ("x-token", "abc"),
                ("content-length", "5"),
            ])
        );
    }

    #[test]
    fn dynamic_references_and_bad_indexes_are_decompression_failures() {
        for section in [
            &[0x01, 0x00][..],               // Required Insert Count 1
            &[0x00, 0x00, 0x80],             // indexed, dynamic
            &[0x00, 0x00, 0x10],             // indexed, post-base
            &[0x00, 0x00, 0x40, 0x00],       // literal, dynamic name
            &[0x00, 0x00, 0x00, 0x00],       // literal, post-base name
            &[0x00, 0x00, 0xff, 0x30],       // static index 63 + 48 = 111
            &[0x00, 0x00, 0x5f],             // cut integer
            &[0x00, 0x00, 0x51, 0x05, b'a'], // value cut short
        ] {
            let e = fields(section).unwrap_err();
            assert_eq!(e.code, code::QPACK_DECOMPRESSION_FAILED, "{section:?}");
        }
    }

    /// A server's response: HEADERS, DATA in two frames, unknown and reserved frames between,
    /// trailers.
    fn response_bytes() -> Vec<u8> {
        let mut out = vec![];
        let mut section = PREFIX.to_vec();
        Qpack::indexed(&mut section, 25); // :status 200
        Qpack::named(&mut section, 44 + 2, b"x"); // content-type, a literal value
        Qpack::field(&mut section, b"server", b"test");
        headers_frame(&mut out, &section);
        // A reserved frame type with a payload, skipped.
        put_varint(&mut out, 0x21 + 0x1f * 3);
        put_varint(&mut out, 3);
        out.extend_from_slice(b"zzz");
        data_frame_head(&mut out, 5);
        out.extend_from_slice(b"hello");
        data_frame_head(&mut out, 0);
        data_frame_head(&mut out, 6);
        out.extend_from_slice(b" world");
        let mut trailer = PREFIX.to_vec();
        Qpack::field(&mut trailer, b"grpc-status", b"0");
        headers_frame(&mut out, &trailer);
        out
    }

    fn read(input: &[u8], step: usize) -> (Vec<String>, Vec<u8>, Result<(), H3Error>) {
        let mut r = Response::new();
        r.read_fields();
        let (mut seen, mut body) = (vec![], vec![]);
        for chunk in input.chunks(step.max(1)) {
            let got = r.receive(chunk, &mut |e| match e {
                Event::Body(b) => body.extend_from_slice(b),
                e => seen.push(format!("{e:?}")),
            });
            if let Err(e) = got {
                return (seen, body, Err(e));
            }
        }
        (seen, body, r.end())
    }

    #[test]
    fn a_response_reads_the_same_however_it_is_split() {
        let input = response_bytes();
        let whole = read(&input, usize::MAX);
        assert_eq!(whole.1, b"hello world");
        assert!(whole.2.is_ok(), "{:?}", whole.2);
        assert!(whole.0.iter().any(|e| e.contains("Some(200)")), "{whole:?}");
        assert!(
            whole.0.iter().any(|e| e.contains("status: None")),
            "{whole:?}"
        );
        for step in 1..input.len() {
            assert_eq!(read(&input, step), whole, "step {step}");
        }
        // Cut inside a frame, the stream did not end where a response may; after the
        // HEADERS frame, it did (a response with no body).
        let (_, _, end) = read(&input[..input.len() - 1], usize::MAX);
        assert_eq!(end.unwrap_err().code, code::FRAME_ERROR);
        let (_, _, end) = read(&input[..1], usize::MAX);
        assert_eq!(end.unwrap_err().code, code::FRAME_ERROR);
        let (first, used) = varint(&input[1..]).unwrap();
        let (_, body, end) = read(&input[..1 + used + first as usize], usize::MAX);
        assert!(end.is_ok() && body.is_empty(), "{end:?}");
    }

    #[test]
    fn frames_out_of_place_are_errors() {
        // DATA first.
        let mut out = vec![];
        data_frame_head(&mut out, 1);
        out.push(b'x');
        assert_eq!(read(&out, 1).2.unwrap_err().code, code::FRAME_UNEXPECTED);
        // SETTINGS on a request stream.
        let mut out = vec![];
        control_stream(&mut out);
        assert_eq!(
            read(&out[1..], 3).2.unwrap_err().code,
            code::FRAME_UNEXPECTED
        );
        // PUSH_PROMISE.
        let out = [0x05, 0x01, 0x00];
        assert_eq!(read(&out, 1).2.unwrap_err().code, code::ID_ERROR);
        // HEADERS without :status.
        let mut out = vec![];
        headers_frame(
            &mut out,
            &encode_headers("GET", "http", "h", "/", &[], 0)[..2],
        );
        assert_eq!(read(&out, 2).2.unwrap_err().code, code::MESSAGE_ERROR);
        // A HEADERS frame over the limit, refused at its head.
        let mut out = vec![];
        put_varint(&mut out, frame::HEADERS);
        put_varint(&mut out, MAX_FIELD_SECTION as u64 + 1);
        assert_eq!(read(&out, 1).2.unwrap_err().code, code::EXCESSIVE_LOAD);
        // An interim response, then the final one.
        let mut out = vec![];
        for index in [63, 25] {
            let mut s = PREFIX.to_vec();
            Qpack::indexed(&mut s, index);
            headers_frame(&mut out, &s);
        }
        let (seen, _, end) = read(&out, 1);
        assert!(end.is_ok());
        let heads: Vec<&String> = seen.iter().filter(|e| e.starts_with("Headers")).collect();
        assert_eq!(heads.len(), 2, "{seen:?}");
    }

    #[test]
    fn the_control_stream_gives_settings_then_goaway() {
        let mut out = vec![];
        control_stream(&mut out);
        // A reserved frame, then GOAWAY 8, then GOAWAY 4.
        put_varint(&mut out, 0x21);
        put_varint(&mut out, 0);
        goaway(&mut out, 8);
        goaway(&mut out, 4);
        let (kind, n) = uni_stream(&out).unwrap().unwrap();
        assert_eq!(kind, UniStream::Control);
        for step in [1, 2, 5, 100] {
            let mut c = Control::new();
            let mut seen = vec![];
            for chunk in out[n..].chunks(step) {
                c.receive(chunk, &mut |e| seen.push(e)).unwrap();
            }
            assert_eq!(
                seen,
                [
                    ControlEvent::Settings {
                        max_field_section: Some(MAX_FIELD_SECTION as u64),
                        qpack_capacity: 0
                    },
                    ControlEvent::GoAway { stream: 8 },
                    ControlEvent::GoAway { stream: 4 },
                ]
            );
        }
        // GOAWAY first; a raised GOAWAY; a duplicate setting; HTTP/2's setting.
        let mut c = Control::new();
        let mut g = vec![];
        goaway(&mut g, 4);
        assert_eq!(
            c.receive(&g, &mut |_| {}).unwrap_err().code,
            code::MISSING_SETTINGS
        );
        let mut c = Control::new();
        let mut s = out[n..].to_vec();
        goaway(&mut s, 12);
        assert_eq!(c.receive(&s, &mut |_| {}).unwrap_err().code, code::ID_ERROR);
        for payload in [&[0x06, 0x01, 0x06, 0x02][..], &[0x02, 0x00]] {
            let mut s = vec![];
            put_varint(&mut s, frame::SETTINGS);
            put_varint(&mut s, payload.len() as u64);
            s.extend_from_slice(payload);
            let e = Control::new().receive(&s, &mut |_| {}).unwrap_err();
            assert_eq!(e.code, code::SETTINGS_ERROR);
        }
        assert_eq!(uni_stream(&[0x01]).unwrap_err().code, code::ID_ERROR);
        assert_eq!(uni_stream(&[0x40]).unwrap(), None);
        assert_eq!(uni_stream(&[0x02]).unwrap(), Some((UniStream::Qpack, 1)));
        assert_eq!(uni_stream(&[0x21]).unwrap(), Some((UniStream::Unknown, 1)));
    }

    proptest! {
        /// Any bytes as a request stream and as a control stream: no panic, and the same
        /// events, body and error whole, in pieces and byte by byte.
        #[test]
        fn any_bytes_read_the_same_however_split(
            input in proptest::collection::vec(any::<u8>(), 0..200),
            step in 1usize..17,
        ) {
            let whole = read(&input, usize::MAX);
            prop_assert_eq!(&read(&input, step), &whole);
            prop_assert_eq!(&read(&input, 1), &whole);
            let control = |step: usize| {
                let mut c = Control::new();
                let mut seen = vec![];
                for chunk in input.chunks(step) {
                    if let Err(e) = c.receive(chunk, &mut |e| seen.push(e)) {
                        return (seen, Some(e));
                    }
                }
                (seen, None)
            };
            prop_assert_eq!(control(step), control(usize::MAX));
        }
    }
}
