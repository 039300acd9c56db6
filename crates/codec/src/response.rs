//! The incremental HTTP/1.x response parser: bytes in, "consumed N, response complete?" out.

use std::fmt;

/// Most headers one response head may carry (the rest is [`ParseError::HeadersTooLarge`]).
pub const MAX_HEADERS: usize = 100;
/// Default limit on a response head, and on a chunked body's trailer section, in bytes.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 64 * 1024;

/// Parser settings, fixed for the life of a connection.
#[derive(Debug, Clone, Copy)]
pub struct ParserOptions {
    /// Limit on a head (status line + headers), and on a chunk line or trailer section.
    pub max_head_bytes: usize,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
        }
    }
}

/// A complete final response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Final status code (100..=999, never 1xx).
    pub status: u16,
    /// The connection may carry another request: HTTP/1.1 without `Connection: close`, or
    /// HTTP/1.0 with `Connection: keep-alive`, and framing that does not end at close.
    pub keep_alive: bool,
    /// Body bytes as framed (chunk data only for chunked bodies).
    pub body_bytes: u64,
    /// Interim (1xx) responses that came before this one.
    pub interim: u16,
    /// Its head said `Content-Type: text/event-stream` (its body is a stream of events).
    pub event_stream: bool,
}

/// What one call to [`ResponseParser::parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// All given bytes were consumed and the response is not complete yet.
    Partial,
    /// A response completed; bytes after the consumed count belong to what comes next.
    Complete(Response),
}

/// Why a response could not be parsed. Each variant is a distinct error kind in pelt's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The bytes do not start like an HTTP response; `hint` names what they look like.
    NotHttp { hint: &'static str },
    /// `HTTP/` but a bad version, status code or status line.
    BadStatusLine,
    /// A malformed header line (space in a name, obs-fold, bare CR, ...).
    BadHeader,
    /// The head (or a chunk line, or the trailers) exceeded the limit or [`MAX_HEADERS`].
    HeadersTooLarge,
    /// Content-Length not a plain decimal number, or two different values.
    BadContentLength,
    /// A chunk size that is not hex, overflows, or chunk data not followed by CRLF.
    BadChunk,
    /// A `101 Switching Protocols` that pelt never asked for.
    UnexpectedUpgrade,
    /// The connection closed in the middle of a response.
    Incomplete,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::NotHttp { hint } => write!(f, "the response is not HTTP ({hint})"),
            ParseError::BadStatusLine => write!(f, "malformed status line"),
            ParseError::BadHeader => write!(f, "malformed header line"),
            ParseError::HeadersTooLarge => write!(f, "response head larger than the limit"),
            ParseError::BadContentLength => write!(f, "invalid Content-Length"),
            ParseError::BadChunk => write!(f, "invalid chunked encoding"),
            ParseError::UnexpectedUpgrade => write!(f, "unexpected 101 Switching Protocols"),
            ParseError::Incomplete => {
                write!(f, "connection closed before the response was complete")
            }
        }
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size; `digits` counts the ones seen.
    Size {
        size: u64,
        digits: u8,
    },
    /// Whitespace after the size: only `;` (an extension) may follow.
    SizeWs {
        size: u64,
    },
    /// Just after `;`: optional whitespace, then an extension name.
    ExtStart {
        size: u64,
    },
    /// Inside an extension (name, `=value`), up to CR or the next `;`.
    ExtBody {
        size: u64,
    },
    /// Saw CR at the end of the size line.
    SizeLf {
        size: u64,
    },
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines; `at_line_start` when the next byte starts a line.
    Trailer {
        at_line_start: bool,
    },
    /// Saw CR at the start of a trailer line: the LF ends the message.
    TrailerEndLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Fixed { remaining: u64 },
    Chunked(Chunk),
    UntilClose,
}

/// Incremental parser for the responses on one connection.
///
/// Call [`parse`](Self::parse) with each read's bytes until it returns
/// [`Parsed::Complete`]; call it again with the bytes it did not consume, which start the next
/// response. Call [`finish`](Self::finish) when the peer closes. After an error the parser
/// must be [`reset`](Self::reset) (the connection is closed anyway).
#[derive(Debug)]
pub struct ResponseParser {
    opts: ParserOptions,
    state: State,
    head_request: bool,
    /// Head bytes carried over when a head is split across reads; bounded by the head limit.
    head_buf: Vec<u8>,
    /// Bytes of this message seen so far (heads of interim responses included).
    seen: u64,
    /// Bytes in the current chunk line or trailer section (bounded by the head limit).
    line_bytes: usize,
    // The response being read.
    status: u16,
    keep_alive: bool,
    body_bytes: u64,
    interim: u16,
    /// The final head said `Content-Type: text/event-stream`.
    event_stream: bool,
    /// A head so far advertised HTTP/3 (`Alt-Svc: h3=...`): sticky, for the run's note.
    advertised_h3: bool,
}

impl ResponseParser {
    /// A parser waiting for the first response.
    pub fn new(opts: ParserOptions) -> Self {
        ResponseParser {
            opts,
            state: State::Head,
            head_request: false,
            head_buf: Vec::new(),
            seen: 0,
            line_bytes: 0,
            status: 0,
            keep_alive: true,
            body_bytes: 0,
            interim: 0,
            event_stream: false,
            advertised_h3: false,
        }
    }

    /// Says whether the response being awaited answers a HEAD request (it then has no body,
    /// whatever its headers say). Set before its bytes are parsed.
    pub fn set_head_request(&mut self, head: bool) {
        self.head_request = head;
    }

    /// Forgets any partial response (for a fresh connection). Keeps the allocated buffer.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head_buf.clear();
        self.start_message();
    }

    /// True when no byte of a response has been seen since the last complete one.
    pub fn is_idle(&self) -> bool {
        self.seen == 0
    }

    fn start_message(&mut self) {
        self.seen = 0;
        self.line_bytes = 0;
        self.status = 0;
        self.keep_alive = true;
        self.body_bytes = 0;
        self.interim = 0;
        self.event_stream = false;
    }

    /// The final status of the response being read (0 before its head).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// A response's head on this parser advertised HTTP/3 (`Alt-Svc` with `h3`).
    pub fn advertised_h3(&self) -> bool {
        self.advertised_h3
    }

    /// The response being read is a `text/event-stream` (known once its final head is parsed,
    /// until it completes).
    pub fn event_stream(&self) -> bool {
        self.event_stream
    }

    fn complete(&mut self) -> Parsed {
        let r = Response {
            status: self.status,
            keep_alive: self.keep_alive,
            body_bytes: self.body_bytes,
            interim: self.interim,
            event_stream: self.event_stream,
        };
        self.state = State::Head;
        self.start_message();
        Parsed::Complete(r)
    }

    /// The peer closed the connection. Returns the response that the close completes (a
    /// close-delimited body), `None` if no response was in progress, or
    /// [`ParseError::Incomplete`] if the close cut one short.
    pub fn finish(&mut self) -> Result<Option<Response>, ParseError> {
        match self.state {
            State::UntilClose => match self.complete() {
                Parsed::Complete(r) => Ok(Some(r)),
                Parsed::Partial => unreachable!("complete() always completes"),
            },
            State::Head if self.seen == 0 => Ok(None),
            // A head cut short is judged on what arrived, as the whole bytes would have been.
            State::Head if !self.head_buf.is_empty() => {
                check_prefix(&self.head_buf, true)?;
                parse_head_bytes(&self.head_buf)?;
                Err(ParseError::Incomplete)
            }
            _ => Err(ParseError::Incomplete),
        }
    }

    /// Parses as much of `buf` as belongs to the current response.
    ///
    /// Returns the bytes consumed (never more than `buf.len()`) and whether the response
    /// completed. On `Partial` every byte was consumed.
    #[inline]
    pub fn parse(&mut self, buf: &[u8]) -> Result<(usize, Parsed), ParseError> {
        self.parse_with(buf, &mut |_, _| {})
    }

    /// As [`parse`](Self::parse), handing `on_body` the body's bytes as they pass, in order
    /// (chunk data without its framing; nothing of a head or an interim response), and
    /// whether the response is a `text/event-stream`, so a streamed body (server-sent events)
    /// can be read as it arrives. Nothing is buffered.
    pub fn parse_with(
        &mut self,
        buf: &[u8],
        on_body: &mut impl FnMut(&[u8], bool),
    ) -> Result<(usize, Parsed), ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                State::Head => {
                    if rest.is_empty() {
                        return Ok((pos, Parsed::Partial));
                    }
                    let mut rest = rest;
                    if self.head_buf.is_empty() {
                        // Empty lines before a status line are ignored (RFC 9112 section 2.2).
                        let blank = rest
                            .iter()
                            .take_while(|&&b| b == b'\r' || b == b'\n')
                            .count();
                        pos += blank;
                        rest = &rest[blank..];
                        if rest.is_empty() {
                            return Ok((pos, Parsed::Partial));
                        }
                    }
                    let (n, outcome) = self.parse_head(rest)?;
                    pos += n;
                    self.seen += n as u64;
                    match outcome {
                        HeadOutcome::Partial => return Ok((pos, Parsed::Partial)),
                        HeadOutcome::NoBody => return Ok((pos, self.complete())),
                        HeadOutcome::Interim | HeadOutcome::Body => {}
                    }
                }
                State::Fixed { remaining } => {
                    let take = remaining.min(rest.len() as u64);
                    if take > 0 {
                        on_body(&rest[..take as usize], self.event_stream);
                    }
                    pos += take as usize;
                    self.seen += take;
                    self.body_bytes += take;
                    if take == remaining {
                        return Ok((pos, self.complete()));
                    }
                    self.state = State::Fixed {
                        remaining: remaining - take,
                    };
                    return Ok((pos, Parsed::Partial));
                }
                State::UntilClose => {
                    if !rest.is_empty() {
                        on_body(rest, self.event_stream);
                    }
                    self.seen += rest.len() as u64;
                    self.body_bytes += rest.len() as u64;
                    return Ok((buf.len(), Parsed::Partial));
                }
                State::Chunked(_) => {
                    let (n, done) = self.parse_chunked(rest, on_body)?;
                    pos += n;
                    self.seen += n as u64;
                    if done {
                        return Ok((pos, self.complete()));
                    }
                    return Ok((pos, Parsed::Partial));
                }
            }
        }
    }

    /// Consumes head bytes from `rest`: returns how many, and what the head (if complete)
    /// means. A head with a body moves the state to its framing.
    fn parse_head(&mut self, rest: &[u8]) -> Result<(usize, HeadOutcome), ParseError> {
        if self.head_buf.is_empty() {
            // What a head is found to be must not depend on how its bytes were split across
            // reads: a head without its end is judged when the end comes, when it outgrows
            // the limit, or at the close (`finish`), never earlier here than on the slow path.
            let parsed = if check_prefix(rest, false)? {
                parse_head_bytes(rest)
            } else {
                Ok(None)
            };
            match parsed {
                Ok(Some((len, _))) if len > self.opts.max_head_bytes => {
                    return Err(ParseError::HeadersTooLarge)
                }
                Ok(Some((len, head))) => return Ok((len, self.apply_head(head)?)),
                Err(e) if has_head_end(rest) => return Err(e),
                Ok(None) | Err(_) => {
                    if rest.len() > self.opts.max_head_bytes {
                        return Err(ParseError::HeadersTooLarge);
                    }
                    self.head_buf.extend_from_slice(rest);
                    return Ok((rest.len(), HeadOutcome::Partial));
                }
            }
        }
        // Slow path: a head split across reads. Look for its end only in the new bytes (plus
        // three bytes of overlap), so feeding one byte at a time stays linear.
        let old = self.head_buf.len();
        let room = self.opts.max_head_bytes + 1 - old.min(self.opts.max_head_bytes);
        let add = rest.len().min(room);
        self.head_buf.extend_from_slice(&rest[..add]);
        let decided = check_prefix(&self.head_buf, false)?;
        let from = old.saturating_sub(3);
        if !decided || !has_head_end(&self.head_buf[from..]) {
            if self.head_buf.len() > self.opts.max_head_bytes {
                return Err(ParseError::HeadersTooLarge);
            }
            return Ok((add, HeadOutcome::Partial));
        }
        let buf = std::mem::take(&mut self.head_buf);
        let result = parse_head_bytes(&buf);
        let out = match result {
            Ok(Some((len, _))) if len > self.opts.max_head_bytes => {
                Err(ParseError::HeadersTooLarge)
            }
            Ok(Some((len, head))) => self.apply_head(head).map(|o| (len - old, o)),
            Ok(None) => Err(ParseError::BadHeader),
            Err(e) => Err(e),
        };
        self.head_buf = buf;
        self.head_buf.clear();
        out
    }

    fn count_line_byte(&mut self) -> Result<(), ParseError> {
        self.line_bytes += 1;
        if self.line_bytes > self.opts.max_head_bytes {
            return Err(ParseError::HeadersTooLarge);
        }
        Ok(())
    }

    fn apply_head(&mut self, head: Head) -> Result<HeadOutcome, ParseError> {
        if head.status < 100 {
            return Err(ParseError::BadStatusLine);
        }
        if head.status == 101 {
            return Err(ParseError::UnexpectedUpgrade);
        }
        if head.status < 200 {
            // Interim response: the final one follows (RFC 9110 section 15.2).
            self.interim = self.interim.saturating_add(1);
            return Ok(HeadOutcome::Interim);
        }
        self.status = head.status;
        self.keep_alive = head.keep_alive;
        self.event_stream = head.event_stream;
        self.advertised_h3 |= head.alt_svc_h3;
        if self.head_request || head.status == 204 || head.status == 304 {
            return Ok(HeadOutcome::NoBody);
        }
        self.state = match (head.framing, head.content_length) {
            (Framing::Chunked, cl) => {
                if cl.is_some() {
                    // RFC 9112 section 6.3 rule 3: chunked wins, and the connection must close.
                    self.keep_alive = false;
                }
                State::Chunked(Chunk::Size { size: 0, digits: 0 })
            }
            (Framing::Length, Some(0)) => return Ok(HeadOutcome::NoBody),
            (Framing::Length, Some(n)) => State::Fixed { remaining: n },
            (Framing::UntilClose, _) | (Framing::Length, None) => {
                self.keep_alive = false;
                State::UntilClose
            }
        };
        Ok(HeadOutcome::Body)
    }

    /// Runs the chunked decoder over `rest`. Returns bytes consumed and whether the message
    /// ended (last chunk and trailers read).
    fn parse_chunked(
        &mut self,
        rest: &[u8],
        on_body: &mut impl FnMut(&[u8], bool),
    ) -> Result<(usize, bool), ParseError> {
        let State::Chunked(mut st) = self.state else {
            unreachable!("parse_chunked outside the chunked state")
        };
        let mut i = 0;
        while i < rest.len() {
            if let Chunk::Data { remaining } = st {
                let take = remaining.min((rest.len() - i) as u64);
                on_body(&rest[i..i + take as usize], self.event_stream);
                i += take as usize;
                self.body_bytes += take;
                st = if take == remaining {
                    Chunk::DataCr
                } else {
                    Chunk::Data {
                        remaining: remaining - take,
                    }
                };
                continue;
            }
            match self.chunk_byte(st, rest[i])? {
                Some(next) => st = next,
                None => {
                    self.state = State::Chunked(st);
                    return Ok((i + 1, true));
                }
            }
            i += 1;
        }
        self.state = State::Chunked(st);
        Ok((rest.len(), false))
    }

    /// One byte of the chunked framing (a size line, its extensions, the CRLF after the
    /// data, the trailers) in state `st`: the state after it, or `None` when it ended the
    /// message. Chunk data is read apart, in runs (`parse_chunked`).
    #[inline]
    fn chunk_byte(&mut self, st: Chunk, b: u8) -> Result<Option<Chunk>, ParseError> {
        Ok(Some(match st {
            Chunk::Data { .. } => st,
            Chunk::Size { size, digits } => {
                if let Some(d) = hex_value(b) {
                    let size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(d))
                        .ok_or(ParseError::BadChunk)?;
                    Chunk::Size {
                        size,
                        digits: digits.saturating_add(1),
                    }
                } else if digits == 0 {
                    return Err(ParseError::BadChunk);
                } else if b == b'\r' {
                    Chunk::SizeLf { size }
                } else if b == b';' {
                    self.line_bytes = 0;
                    Chunk::ExtStart { size }
                } else if b == b' ' || b == b'\t' {
                    self.line_bytes = 0;
                    Chunk::SizeWs { size }
                } else {
                    return Err(ParseError::BadChunk);
                }
            }
            Chunk::SizeWs { size } => {
                self.count_line_byte()?;
                match b {
                    b' ' | b'\t' => st,
                    b';' => Chunk::ExtStart { size },
                    _ => return Err(ParseError::BadChunk),
                }
            }
            Chunk::ExtStart { size } => {
                self.count_line_byte()?;
                match b {
                    b' ' | b'\t' => st,
                    _ if crate::request::is_token_char(b) => Chunk::ExtBody { size },
                    _ => return Err(ParseError::BadChunk),
                }
            }
            Chunk::ExtBody { size } => {
                self.count_line_byte()?;
                match b {
                    b'\r' => Chunk::SizeLf { size },
                    b';' => Chunk::ExtStart { size },
                    b'\n' | 0 => return Err(ParseError::BadChunk),
                    _ => st,
                }
            }
            Chunk::SizeLf { size } => {
                if b != b'\n' {
                    return Err(ParseError::BadChunk);
                }
                self.line_bytes = 0;
                if size == 0 {
                    Chunk::Trailer {
                        at_line_start: true,
                    }
                } else {
                    Chunk::Data { remaining: size }
                }
            }
            Chunk::DataCr if b == b'\r' => Chunk::DataLf,
            Chunk::DataLf if b == b'\n' => Chunk::Size { size: 0, digits: 0 },
            Chunk::DataCr | Chunk::DataLf => return Err(ParseError::BadChunk),
            Chunk::Trailer { at_line_start } => {
                self.count_line_byte()?;
                match b {
                    b'\r' if at_line_start => Chunk::TrailerEndLf,
                    b'\n' if at_line_start => return Ok(None),
                    _ => Chunk::Trailer {
                        at_line_start: b == b'\n',
                    },
                }
            }
            Chunk::TrailerEndLf if b == b'\n' => return Ok(None),
            Chunk::TrailerEndLf => return Err(ParseError::BadChunk),
        }))
    }
}

fn hex_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u64),
        b'a'..=b'f' => Some((b - b'a' + 10) as u64),
        b'A'..=b'F' => Some((b - b'A' + 10) as u64),
        _ => None,
    }
}

/// True when `buf` contains the blank line that ends a head (CRLF CRLF, or bare LF LF).
fn has_head_end(buf: &[u8]) -> bool {
    buf.windows(2).any(|w| w == b"\n\n") || buf.windows(3).any(|w| w == b"\n\r\n")
}

/// Rejects early bytes that cannot start `HTTP/`, naming what they look like.
fn check_prefix(buf: &[u8], at_close: bool) -> Result<bool, ParseError> {
    const PREFIX: &[u8] = b"HTTP/";
    let n = buf.len().min(PREFIX.len());
    if buf[..n] == PREFIX[..n] {
        return Ok(true);
    }
    // Not HTTP; which hint fits depends on the first five bytes, so wait for them (or the
    // close): the message must not depend on how the bytes were split.
    if buf.len() < PREFIX.len() && !at_close {
        return Ok(false);
    }
    let hint = if buf.starts_with(b"SSH-") {
        "it looks like an SSH server"
    } else if buf[0] == 0x16 || buf[0] == 0x15 {
        "it looks like a TLS record: is this an https server?"
    } else if buf.starts_with(b"HTTP") || buf.starts_with(b"ICE/") || buf.starts_with(b"RTSP/") {
        "the status line does not start with HTTP/"
    } else if buf.starts_with(b"\x00\x00") {
        "it looks like binary data, perhaps HTTP/2 or another protocol"
    } else {
        "the first bytes are not an HTTP status line"
    };
    Err(ParseError::NotHttp { hint })
}

/// What a parsed head means for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadOutcome {
    /// The head is not complete yet.
    Partial,
    /// A 1xx interim response: another head follows.
    Interim,
    /// A final response with no body: the message is complete.
    NoBody,
    /// A final response whose body follows; the state says how it is framed.
    Body,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    UntilClose,
    Length,
}

struct Head {
    status: u16,
    keep_alive: bool,
    framing: Framing,
    content_length: Option<u64>,
    /// `Content-Type: text/event-stream`.
    event_stream: bool,
    /// `Alt-Svc` offers `h3`.
    alt_svc_h3: bool,
}

/// Parses a complete head at the start of `buf`; `None` if the head is not complete yet.
///
/// The status line is parsed here (httparse accepts only HTTP/1.x; pelt also takes HTTP/0.9
/// status lines, as llhttp does); the header lines by `httparse::parse_headers`.
fn parse_head_bytes(buf: &[u8]) -> Result<Option<(usize, Head)>, ParseError> {
    let Some(line_end) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() >= 8 && !valid_version(&buf[..8]) {
            Err(ParseError::BadStatusLine)
        } else {
            Ok(None)
        };
    };
    let (status, version_minor) = parse_status_line(&buf[..line_end])?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let (head_len, headers) = match httparse::parse_headers(&buf[line_end + 1..], &mut headers) {
        Ok(httparse::Status::Complete((n, h))) => (line_end + 1 + n, h),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadersTooLarge),
        Err(_) => return Err(ParseError::BadHeader),
    };
    let mut close = false;
    let mut keep_alive_token = false;
    let mut framing = Framing::Length;
    let mut content_length: Option<u64> = None;
    let mut event_stream = false;
    let mut alt_svc_h3 = false;
    for h in headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-type") {
            event_stream = is_event_stream(h.value);
        } else if name.eq_ignore_ascii_case("alt-svc") {
            alt_svc_h3 |= advertises_h3(h.value);
        }
        if name.eq_ignore_ascii_case("content-length") {
            for part in h.value.split(|&b| b == b',') {
                let n = parse_decimal(trim_ows(part)).ok_or(ParseError::BadContentLength)?;
                match content_length {
                    Some(prev) if prev != n => return Err(ParseError::BadContentLength),
                    _ => content_length = Some(n),
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let last = h
                .value
                .split(|&b| b == b',')
                .map(trim_ows)
                .rfind(|t| !t.is_empty())
                .unwrap_or(b"");
            framing = if last.eq_ignore_ascii_case(b"chunked") {
                Framing::Chunked
            } else {
                Framing::UntilClose
            };
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',').map(trim_ows) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive_token = true;
                }
            }
        }
    }
    let keep_alive = !close && (version_minor >= 1 || keep_alive_token);
    Ok(Some((
        head_len,
        Head {
            status,
            keep_alive,
            framing,
            content_length,
            event_stream,
            alt_svc_h3,
        },
    )))
}

/// `HTTP/1.0`, `HTTP/1.1` or `HTTP/0.9`.
fn valid_version(v: &[u8]) -> bool {
    matches!(v, b"HTTP/1.0" | b"HTTP/1.1" | b"HTTP/0.9")
}

/// `HTTP/1.x SP 3DIGIT [SP reason]`, the line without its LF. Returns the status and the
/// minor version (HTTP/0.9 counts as 1.0 for keep-alive purposes: minor 0).
fn parse_status_line(line: &[u8]) -> Result<(u16, u8), ParseError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() < 12 || !valid_version(&line[..8]) || line[8] != b' ' {
        return Err(ParseError::BadStatusLine);
    }
    let digits = &line[9..12];
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(ParseError::BadStatusLine);
    }
    let status = digits
        .iter()
        .fold(0u16, |acc, &d| acc * 10 + (d - b'0') as u16);
    let reason = &line[12..];
    let reason_ok = reason.is_empty()
        || reason[0] == b' '
            && reason[1..]
                .iter()
                .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f));
    if !reason_ok {
        return Err(ParseError::BadStatusLine);
    }
    let minor = if &line[..8] == b"HTTP/1.1" { 1 } else { 0 };
    Ok((status, minor))
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// A plain decimal number: digits only, no sign, at most 19 digits (so it fits in u64).
fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add((d - b'0') as u64)
    })
}

/// A response's header fields as [`read_complete`] leaves them: names lower-cased, values
/// trimmed. The strings stay between responses and are written over, so reading the next
/// response allocates nothing once they have grown to the server's headers.
#[derive(Debug, Default, Clone)]
pub struct Fields {
    all: Vec<(String, String)>,
    len: usize,
}

impl Fields {
    /// The current response's fields, in order.
    pub fn as_slice(&self) -> &[(String, String)] {
        &self.all[..self.len]
    }

    /// Forgets the fields (keeping the strings for the next response).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Adds a field as it came over HTTP/2 (name and value as bytes; not UTF-8 is replaced,
    /// the value trimmed).
    pub fn push_bytes(&mut self, name: &[u8], value: &[u8]) {
        let name = String::from_utf8_lossy(name);
        let value = String::from_utf8_lossy(value);
        self.push(&name, value.trim());
    }

    fn push(&mut self, name: &str, value: &str) {
        if self.len == self.all.len() {
            self.all.push((String::new(), String::new()));
        }
        let (n, v) = &mut self.all[self.len];
        n.clear();
        n.extend(name.chars().map(|c| c.to_ascii_lowercase()));
        v.clear();
        v.push_str(value);
        self.len += 1;
    }
}

/// A complete response's final head and body, from its bytes as they came (interim 1xx
/// responses before it, chunked framing): what a scenario's captures and checks read. The
/// bytes must be one response the streaming [`ResponseParser`] accepted (or its first part,
/// when a caller kept only so many bytes: the body is then what there is of it). `fields`
/// gets the final head's fields; `body` the body without its framing. Both are cleared first
/// and keep their capacity. Returns the final status, or `None` when the bytes hold no
/// complete final head.
pub fn read_complete(raw: &[u8], fields: &mut Fields, body: &mut Vec<u8>) -> Option<u16> {
    fields.clear();
    body.clear();
    let mut rest = raw;
    loop {
        let mut found = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut head = httparse::Response::new(&mut found);
        let n = match head.parse(rest) {
            Ok(httparse::Status::Complete(n)) => n,
            _ => return None,
        };
        let status = head.code?;
        if (100..200).contains(&status) {
            rest = &rest[n..];
            continue;
        }
        let mut chunked = false;
        for h in head.headers.iter() {
            let value = String::from_utf8_lossy(h.value);
            let value = value.trim();
            if h.name.eq_ignore_ascii_case("transfer-encoding")
                && value
                    .get(value.len().saturating_sub(7)..)
                    .is_some_and(|end| end.eq_ignore_ascii_case("chunked"))
            {
                chunked = true;
            }
            fields.push(h.name, value);
        }
        let mut data = &rest[n..];
        if !chunked {
            body.extend_from_slice(data);
            return Some(status);
        }
        while let Ok(httparse::Status::Complete((at, size))) = httparse::parse_chunk_size(data) {
            if size == 0 {
                break;
            }
            let end = (at as u64).saturating_add(size).min(data.len() as u64) as usize;
            body.extend_from_slice(&data[at..end]);
            // Past the chunk and its CRLF (or the end of what was kept).
            data = &data[(end + 2).min(data.len())..];
        }
        return Some(status);
    }
}

/// Whether an `Alt-Svc` value (RFC 7838: `h3=":443"; ma=86400, h3-29=":443"`) offers HTTP/3
/// (the `h3` protocol id; drafts' `h3-NN` are not what pelt speaks).
pub fn advertises_h3(alt_svc: &[u8]) -> bool {
    alt_svc.split(|&b| b == b',').any(|alt| {
        let id = alt.split(|&b| b == b'=').next().unwrap_or(b"");
        trim_ows(id) == b"h3"
    })
}

/// Whether a `Content-Type` value names `text/event-stream` (its media type, before any
/// parameter such as `; charset=utf-8`; case-insensitive).
pub fn is_event_stream(content_type: &[u8]) -> bool {
    let media = content_type.split(|&b| b == b';').next().unwrap_or(b"");
    trim_ows(media).eq_ignore_ascii_case(b"text/event-stream")
}
