//! gRPC's wire format over HTTP/2, the client's side (gRPC's PROTOCOL-HTTP2.md): a call is an
//! HTTP/2 stream whose DATA carries length-prefixed messages (a flag byte, then four bytes of
//! big-endian length, then the message), and whose status is the `grpc-status` field of its
//! trailers (or of its only header block, a "trailers-only" answer), with `grpc-message`
//! percent-encoded beside it. Sans-I/O, like the rest of the codec: [`frame`] writes a message,
//! [`MessageReader`] reads them from DATA bytes split anywhere, keeping nothing but a prefix
//! split across reads, and the functions below read and write the fields.
//!
//! Written here rather than taken from tonic or grpcio: those own their I/O and runtime (as the
//! h2 crate does, see docs/ARCHITECTURE.md), and the framing is five bytes.

use std::time::Duration;

/// The bytes before each message: the compressed flag and the length.
pub const PREFIX: usize = 5;

/// The largest message a reader takes by default: grpc-go's and grpc-java's default receive
/// limit (4 MiB). A longer one ends the call with `RESOURCE_EXHAUSTED`, as theirs do.
pub const DEFAULT_MAX_MESSAGE: u32 = 4 * 1024 * 1024;

/// gRPC's status codes, by number (grpc/doc/statuscodes.md).
pub const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A few codes by name.
pub mod code {
    pub const OK: u32 = 0;
    pub const CANCELLED: u32 = 1;
    pub const UNKNOWN: u32 = 2;
    pub const DEADLINE_EXCEEDED: u32 = 4;
    pub const PERMISSION_DENIED: u32 = 7;
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    pub const UNIMPLEMENTED: u32 = 12;
    pub const INTERNAL: u32 = 13;
    pub const UNAVAILABLE: u32 = 14;
    pub const UNAUTHENTICATED: u32 = 16;
}

/// A status code's name (`"UNAVAILABLE"`); a code outside the list is `"CODE_<n>"`.
pub fn code_name(code: u32) -> std::borrow::Cow<'static, str> {
    match CODE_NAMES.get(code as usize) {
        Some(name) => (*name).into(),
        None => format!("CODE_{code}").into(),
    }
}

/// A status code from its name (`"UNAVAILABLE"`, any case), or from its number.
pub fn code_of(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse::<u32>() {
        return Some(n);
    }
    CODE_NAMES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|n| n as u32)
}

/// Where the framed message that starts at `at` in `body` (a call's messages, framed) ends:
/// after its prefix and its length; the body's end when what is left is shorter.
pub fn message_end(body: &[u8], at: usize) -> usize {
    let len = match body.get(at + 1..at + PREFIX) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]) as usize,
        _ => return body.len(),
    };
    (at + PREFIX).saturating_add(len).min(body.len())
}

/// Appends `message` to `out`, length-prefixed and not compressed.
pub fn frame(message: &[u8], out: &mut Vec<u8>) {
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
}

/// The `grpc-status` field's value: a decimal code. `None`: not one.
pub fn parse_status(value: &[u8]) -> Option<u32> {
    if value.is_empty() || value.len() > 10 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The `grpc-message` field's value, percent-decoded (invalid escapes stay as they are, and
/// bytes that are not UTF-8 are replaced, as the protocol asks of a client).
pub fn decode_message(value: &[u8]) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        let escaped = (value[i] == b'%')
            .then(|| Some(hex(*value.get(i + 1)?)? << 4 | hex(*value.get(i + 2)?)?))
            .flatten();
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(value[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The status a call without `grpc-status` gets from its HTTP status (gRPC's
/// http-grpc-status-mapping.md): a proxy's or a server's error that is not gRPC's.
pub fn code_of_http(status: u16) -> u32 {
    match status {
        400 => code::INTERNAL,
        401 => code::UNAUTHENTICATED,
        403 => code::PERMISSION_DENIED,
        404 => code::UNIMPLEMENTED,
        429 | 502 | 503 | 504 => code::UNAVAILABLE,
        _ => code::UNKNOWN,
    }
}

/// The `grpc-timeout` field's value for `timeout`: at most eight digits, in the finest unit that
/// holds it (rounded up, so the server's deadline is never shorter than the client's).
pub fn timeout_value(timeout: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let units = [
        (1u128, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let ns = timeout.as_nanos();
    for (size, unit) in units {
        let n = ns.div_ceil(size);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

/// What [`MessageReader::feed`] reports of the messages in a stream's DATA.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A message begins: its length.
    Begin(u32),
    /// Bytes of the message under way (all of them, in order, possibly in several pieces).
    Bytes(&'a [u8]),
    /// The message under way is whole.
    End,
}

/// Why a call's messages cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageError {
    /// A message longer than the reader's limit (`RESOURCE_EXHAUSTED`).
    TooLong(u32),
    /// A compressed message, though the call asked for none (`INTERNAL`).
    Compressed,
    /// A flag byte with reserved bits set (`INTERNAL`).
    Flags(u8),
}

impl MessageError {
    /// The status the call ends with.
    pub fn code(self) -> u32 {
        match self {
            MessageError::TooLong(_) => code::RESOURCE_EXHAUSTED,
            MessageError::Compressed | MessageError::Flags(_) => code::INTERNAL,
        }
    }
}

impl std::fmt::Display for MessageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MessageError::TooLong(n) => write!(f, "a message of {n} bytes, over the limit"),
            MessageError::Compressed => {
                write!(
                    f,
                    "a compressed message, though the call asked for no compression"
                )
            }
            MessageError::Flags(b) => write!(f, "a message flag byte of {b:#04x}"),
        }
    }
}

/// Reads one call's messages from its DATA bytes, as they come. Keeps at most a prefix split
/// across reads; the messages themselves are handed out where they lie.
#[derive(Debug, Clone)]
pub struct MessageReader {
    max: u32,
    /// The prefix read so far, and how much of it.
    prefix: [u8; PREFIX],
    have: usize,
    /// Bytes of the message under way still to come (`None`: between messages).
    left: Option<u32>,
    /// Messages read whole.
    messages: u64,
}

impl Default for MessageReader {
    fn default() -> MessageReader {
        MessageReader::new(DEFAULT_MAX_MESSAGE)
    }
}

impl MessageReader {
    /// A reader that takes messages of at most `max` bytes.
    pub fn new(max: u32) -> MessageReader {
        MessageReader {
            max,
            prefix: [0; PREFIX],
            have: 0,
            left: None,
            messages: 0,
        }
    }

    /// Forgets the call under way (the next bytes begin a call).
    pub fn reset(&mut self) {
        self.have = 0;
        self.left = None;
        self.messages = 0;
    }

    /// Messages read whole so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Whether the call's DATA so far ended between messages (a call that ends otherwise
    /// ended inside one: `INTERNAL`).
    pub fn between(&self) -> bool {
        self.have == 0 && self.left.is_none()
    }

    /// Reads `bytes`, handing each message's pieces to `on`, in order. After an error the
    /// call's messages cannot be read: the reader must be `reset`.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        on: &mut impl FnMut(Piece<'_>),
    ) -> Result<(), MessageError> {
        loop {
            if let Some(left) = self.left {
                let take = (left as usize).min(bytes.len());
                if take > 0 {
                    on(Piece::Bytes(&bytes[..take]));
                }
                bytes = &bytes[take..];
                let left = left - take as u32;
                if left > 0 {
                    self.left = Some(left);
                    return Ok(());
                }
                self.left = None;
                self.messages += 1;
                on(Piece::End);
            }
            if bytes.is_empty() {
                return Ok(());
            }
            let take = (PREFIX - self.have).min(bytes.len());
            self.prefix[self.have..self.have + take].copy_from_slice(&bytes[..take]);
            self.have += take;
            bytes = &bytes[take..];
            if self.have < PREFIX {
                return Ok(());
            }
            self.have = 0;
            let [flags, a, b, c, d] = self.prefix;
            match flags {
                0 => {}
                1 => return Err(MessageError::Compressed),
                other => return Err(MessageError::Flags(other)),
            }
            let len = u32::from_be_bytes([a, b, c, d]);
            if len > self.max {
                return Err(MessageError::TooLong(len));
            }
            on(Piece::Begin(len));
            self.left = Some(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]], max: u32) -> (Vec<Vec<u8>>, Result<(), MessageError>, bool) {
        let mut r = MessageReader::new(max);
        let mut messages = Vec::new();
        let mut current = Vec::new();
        for c in chunks {
            let result = r.feed(c, &mut |p| match p {
                Piece::Begin(len) => current = Vec::with_capacity(len as usize),
                Piece::Bytes(b) => current.extend_from_slice(b),
                Piece::End => messages.push(std::mem::take(&mut current)),
            });
            if result.is_err() {
                return (messages, result, r.between());
            }
        }
        assert_eq!(r.messages(), messages.len() as u64);
        let between = r.between();
        (messages, Ok(()), between)
    }

    #[test]
    fn messages_read_whatever_the_split() {
        let mut wire = Vec::new();
        for m in [&b"hello"[..], b"", b"a longer message of some bytes"] {
            frame(m, &mut wire);
        }
        let want = vec![
            b"hello".to_vec(),
            Vec::new(),
            b"a longer message of some bytes".to_vec(),
        ];
        assert_eq!(read(&[&wire], 1024), (want.clone(), Ok(()), true));
        for at in 0..=wire.len() {
            assert_eq!(
                read(&[&wire[..at], &wire[at..]], 1024),
                (want.clone(), Ok(()), true)
            );
        }
        let singles: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(read(&singles, 1024), (want, Ok(()), true));
        // Cut inside a message or its prefix: not between messages.
        assert!(!read(&[&wire[..3]], 1024).2);
        assert!(!read(&[&wire[..7]], 1024).2);
        // Each message's end, from the one before's.
        assert_eq!(message_end(&wire, 0), 10);
        assert_eq!(message_end(&wire, 10), 15);
        assert_eq!(message_end(&wire, 15), wire.len());
        assert_eq!(message_end(&wire, wire.len()), wire.len());
        assert_eq!(message_end(&wire[..12], 10), 12);
        assert_eq!(message_end(&wire[..8], 0), 8);
    }

    #[test]
    fn bad_messages_are_errors_with_their_status() {
        let mut wire = Vec::new();
        frame(&[0; 100], &mut wire);
        let (_, err, _) = read(&[&wire], 99);
        assert_eq!(err, Err(MessageError::TooLong(100)));
        assert_eq!(MessageError::TooLong(100).code(), code::RESOURCE_EXHAUSTED);
        let (_, err, _) = read(&[&[1, 0, 0, 0, 1, 7]], 99);
        assert_eq!(err, Err(MessageError::Compressed));
        let (_, err, _) = read(&[&[0x80, 0, 0, 0, 0]], 99);
        assert_eq!(err, Err(MessageError::Flags(0x80)));
        assert_eq!(MessageError::Flags(2).code(), code::INTERNAL);
    }

    #[test]
    fn status_fields() {
        assert_eq!(parse_status(b"0"), Some(0));
        assert_eq!(parse_status(b"14"), Some(14));
        for bad in [&b""[..], b"-1", b"1 ", b"x", b"99999999999"] {
            assert_eq!(parse_status(bad), None, "{bad:?}");
        }
        assert_eq!(code_name(14), "UNAVAILABLE");
        assert_eq!(code_name(99), "CODE_99");
        assert_eq!(code_of("unavailable"), Some(14));
        assert_eq!(code_of("4"), Some(4));
        assert_eq!(code_of("NOPE"), None);
        assert_eq!(
            decode_message(b"no%20such%20user%3A%20%E2%9C%93"),
            "no such user: \u{2713}"
        );
        assert_eq!(decode_message(b"100%"), "100%");
        assert_eq!(decode_message(b"%zz%4"), "%zz%4");
        assert_eq!(code_of_http(503), code::UNAVAILABLE);
        assert_eq!(code_of_http(404), code::UNIMPLEMENTED);
        assert_eq!(code_of_http(500), code::UNKNOWN);
    }

    proptest::proptest! {
        /// Any bytes read whole, split anywhere or byte by byte give the same messages and
        /// the same error, and no message over the limit (the fuzz target's property).
        #[test]
        fn any_bytes_read_the_same_however_split(data in proptest::collection::vec(0u8..4, 0..64), at in 0usize..64) {
            let whole = read(&[&data], 16);
            let at = at.min(data.len());
            proptest::prop_assert_eq!(&whole, &read(&[&data[..at], &data[at..]], 16));
            let singles: Vec<&[u8]> = data.chunks(1).collect();
            proptest::prop_assert_eq!(&whole, &read(&singles, 16));
            proptest::prop_assert!(whole.0.iter().all(|m| m.len() <= 16));
        }
    }

    #[test]
    fn timeouts_take_eight_digits_at_most_rounded_up() {
        assert_eq!(timeout_value(Duration::from_millis(100)), "100000u");
        assert_eq!(timeout_value(Duration::from_millis(99)), "99000000n");
        assert_eq!(timeout_value(Duration::from_secs(1)), "1000000u");
        assert_eq!(timeout_value(Duration::from_secs(30)), "30000000u");
        assert_eq!(timeout_value(Duration::from_secs(3600)), "3600000m");
        assert_eq!(timeout_value(Duration::from_nanos(1_500)), "1500n");
        assert_eq!(
            timeout_value(Duration::from_secs(10 * 86_400 * 365)),
            "5256000M"
        );
        assert_eq!(timeout_value(Duration::MAX), "99999999H");
    }
}
