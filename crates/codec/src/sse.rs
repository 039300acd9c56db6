//! Server-sent events (`text/event-stream`): an incremental parser of the WHATWG HTML
//! standard's "interpreting an event stream" algorithm, fed a response body's bytes as they
//! arrive (after any chunked framing), calling back once per dispatched event.
//!
//! Written here rather than taken from a crate: the crates that parse event streams (sse-parse,
//! eventsource-stream) hand out each event as owned `String`s, an allocation per event on the
//! path that times every token, and keep whatever a line holds. This parser allocates nothing
//! per event: an event's type and data are borrowed from two buffers made once per connection
//! and reused, and what it keeps of a line or an event's data is bounded
//! ([`SseParser::with_limit`]; past it the bytes are counted, not kept, and the event says it was
//! cut), so a line of any length, or a stream that never sends a newline, costs the bound.
//!
//! The rules, as the standard states them: a UTF-8 BOM at the very start is skipped; lines end
//! with CRLF, LF or CR (a CR at the end of one read and an LF at the start of the next are one
//! line end); a line starting with `:` is a comment; otherwise the field name runs to the first
//! `:` (the whole line without one) and its value follows, less one leading space; `data`
//! appends the value and a LF to the data buffer, `event` sets the type, `id` the last event id
//! (unless the value holds a NUL), `retry` the reconnection time (ASCII digits only); other
//! fields are ignored; an empty line dispatches the event (with its data less the last LF) if
//! the data buffer is not empty, and resets the type and data either way. Bytes that are not
//! UTF-8 are kept as they came (pelt compares them, never displays them as text).
//!
//! ```
//! use pelt_codec::sse::{SseEvent, SseParser};
//! let mut p = SseParser::new();
//! let mut got = Vec::new();
//! p.feed(b"event: add\ndata: first\r\ndata: second\r\n\r", &mut |e: SseEvent<'_>| {
//!     got.push((e.event.to_vec(), e.data.to_vec()))
//! });
//! p.feed(b"\n: a comment\ndata: [DONE]\n\n", &mut |e: SseEvent<'_>| {
//!     got.push((e.event.to_vec(), e.data.to_vec()))
//! });
//! assert_eq!(got[0], (b"add".to_vec(), b"first\nsecond".to_vec()));
//! assert_eq!(got[1], (b"message".to_vec(), b"[DONE]".to_vec()));
//! ```

/// What a parser keeps of a line, and of an event's data, unless told otherwise.
pub const DEFAULT_LIMIT: usize = 64 << 10;

/// One dispatched event, borrowed from the parser until the callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// Its type: `message` unless an `event` field said otherwise.
    pub event: &'a [u8],
    /// Its data lines joined with LF (as far as the limit kept them).
    pub data: &'a [u8],
    /// Its data or a line of it was longer than the limit: `data` is its beginning.
    pub cut: bool,
}

/// The parser of one event stream (reset for the next).
#[derive(Debug, Clone)]
pub struct SseParser {
    limit: usize,
    /// A line begun in an earlier read (at most `limit` bytes of it), and its length in full.
    line: Vec<u8>,
    line_len: usize,
    /// The event being built: its type (empty: `message`) and data.
    event: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    cut: bool,
    /// The last byte read was a CR (a LF right after it ends nothing more).
    after_cr: bool,
    /// Bytes of the stream's start seen, while they may still be a BOM (0..=3).
    start: u8,
    last_id: Vec<u8>,
    retry_ms: Option<u64>,
    comments: u64,
    bytes: u64,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new()
    }
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::with_limit(DEFAULT_LIMIT)
    }

    /// A parser that keeps at most `limit` bytes of a line and of an event's data.
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            limit: limit.max(16),
            line: Vec::new(),
            line_len: 0,
            event: Vec::new(),
            data: Vec::new(),
            has_data: false,
            cut: false,
            after_cr: false,
            start: 0,
            last_id: Vec::new(),
            retry_ms: None,
            comments: 0,
            bytes: 0,
        }
    }

    /// Ready for a new stream (the buffers are kept).
    pub fn reset(&mut self) {
        self.line.clear();
        self.line_len = 0;
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        self.cut = false;
        self.after_cr = false;
        self.start = 0;
        self.last_id.clear();
        self.retry_ms = None;
        self.comments = 0;
        self.bytes = 0;
    }

    /// The last `id` field's value.
    pub fn last_event_id(&self) -> &[u8] {
        &self.last_id
    }

    /// The last valid `retry` field's value, milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Comment lines seen (servers send them as keep-alives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Bytes fed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// An event is under way: some of its lines came, its blank line did not (a stream that
    /// ends here ends inside an event).
    pub fn within_event(&self) -> bool {
        self.line_len > 0 || self.has_data || !self.event.is_empty()
    }

    /// Parses `bytes`, calling `on_event` for each event they complete, in order. Linear in
    /// the bytes fed, whatever the chunking; never fails (every byte sequence is a stream).
    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        self.bytes += bytes.len() as u64;
        // The stream's first bytes may be a BOM, possibly split across reads.
        while self.start < 3 && !bytes.is_empty() {
            if bytes[0] == BOM[self.start as usize] {
                self.start += 1;
                bytes = &bytes[1..];
                continue;
            }
            // Not a BOM after all: what was taken of it is the line's beginning.
            let taken = self.start as usize;
            self.start = 3;
            if taken > 0 {
                self.take_partial(&BOM[..taken]);
            }
        }
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.take_partial(bytes);
                    return;
                }
                Some(end) => {
                    self.after_cr = bytes[end] == b'\r';
                    if self.line_len == 0 {
                        // The whole line is in this read: parsed where it lies (as far as the
                        // limit, as a line split across reads is kept).
                        self.line_end(&bytes[..end.min(self.limit)], end, on_event);
                    } else {
                        self.take_partial(&bytes[..end]);
                        let line = std::mem::take(&mut self.line);
                        let len = self.line_len;
                        self.line_end(&line, len, on_event);
                        self.line = line;
                        self.line.clear();
                    }
                    self.line_len = 0;
                    bytes = &bytes[end + 1..];
                }
            }
        }
    }

    /// Keeps the beginning of a line that goes on in a later read.
    fn take_partial(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.line_len += bytes.len();
    }

    /// One line, `line` being its first `len` bytes at most (longer: it was cut).
    fn line_end(&mut self, line: &[u8], len: usize, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if len == 0 {
            return self.dispatch(on_event);
        }
        if line.first() == Some(&b':') {
            self.comments += 1;
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let cut = len > line.len();
        match name {
            b"data" => {
                let room = self.limit.saturating_sub(self.data.len());
                if value.len() + 1 > room || cut {
                    self.cut = true;
                }
                let keep = value.len().min(room);
                self.data.extend_from_slice(&value[..keep]);
                if self.data.len() < self.limit {
                    self.data.push(b'\n');
                }
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                self.last_id.clear();
                self.last_id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) && !cut => {
                // More digits than a u64 holds: the longest wait there is.
                self.retry_ms = Some(value.iter().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                }));
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        if self.has_data {
            // The last line's LF is a separator, not data (a cut event may have lost it).
            let data = self.data.strip_suffix(b"\n").unwrap_or(&self.data);
            let event = if self.event.is_empty() {
                &b"message"[..]
            } else {
                &self.event[..]
            };
            on_event(SseEvent {
                event,
                data,
                cut: self.cut,
            });
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        self.cut = false;
    }
}

/// A newline-delimited stream (JSON lines, as Ollama and other servers stream tokens without
/// server-sent events): each non-empty line, less its CR LF or LF, is an event. Bounded as
/// [`SseParser`] is: at most `limit` bytes of a line are kept (the rest counted), and a long
/// line parsed where it lies is cut at the same point as one kept across reads.
#[derive(Debug, Clone)]
pub struct LineParser {
    limit: usize,
    line: Vec<u8>,
    line_len: usize,
}

impl Default for LineParser {
    fn default() -> Self {
        LineParser::new()
    }
}

impl LineParser {
    pub fn new() -> LineParser {
        LineParser::with_limit(DEFAULT_LIMIT)
    }

    /// A parser that keeps at most `limit` bytes of a line.
    pub fn with_limit(limit: usize) -> LineParser {
        LineParser {
            limit: limit.max(16),
            line: Vec::new(),
            line_len: 0,
        }
    }

    /// Ready for a new stream (the buffer is kept).
    pub fn reset(&mut self) {
        self.line.clear();
        self.line_len = 0;
    }

    /// Parses `bytes`, calling `on_line` for each non-empty line they end, in order.
    pub fn feed(&mut self, mut bytes: &[u8], on_line: &mut impl FnMut(&[u8])) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            let piece = &bytes[..end];
            if self.line_len == 0 {
                let line = piece.strip_suffix(b"\r").unwrap_or(piece);
                if !line.is_empty() {
                    on_line(&line[..line.len().min(self.limit)]);
                }
            } else {
                self.keep(piece);
                let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
                if !line.is_empty() {
                    on_line(line);
                }
                self.reset();
            }
            bytes = &bytes[end + 1..];
        }
        if !bytes.is_empty() {
            self.keep(bytes);
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.line_len += bytes.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `stream` fed whole, as (type, data, cut).
    fn events(p: &mut SseParser, chunks: &[&[u8]]) -> Vec<(String, String, bool)> {
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |e: SseEvent<'_>| {
                out.push((
                    String::from_utf8_lossy(e.event).into_owned(),
                    String::from_utf8_lossy(e.data).into_owned(),
                    e.cut,
                ))
            });
        }
        out
    }

    fn ev(t: &str, d: &str) -> (String, String, bool) {
        (t.into(), d.into(), false)
    }

    #[test]
    fn the_standards_examples() {
        // HTML's examples: multi-line data, comments, ids, and fields without a space.
        let s = b"data: YHOO\ndata: +2\ndata: 10\n\n: test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\ndata\n\ndata\ndata\n\ndata:\n";
        let mut p = SseParser::new();
        assert_eq!(
            events(&mut p, &[s]),
            [
                ev("message", "YHOO\n+2\n10"),
                ev("message", "first event"),
                ev("message", "second event"),
                ev("message", " third event"),
                ev("message", ""),
                ev("message", "\n"),
            ]
        );
        // The last `data:` has no blank line after it: no event, but one is under way.
        assert!(p.within_event());
        assert_eq!(p.comments(), 1);
        assert_eq!(p.last_event_id(), b"");
    }

    #[test]
    fn every_line_end_and_every_split_give_the_same_events() {
        let body = "\u{feff}event: add\r\ndata: a\r\n\r\nretry: 1500\ndata: b\rdata: c\r\rid: 7\n: keep-alive\n\ndata: [DONE]\n\n";
        let want = vec![
            ev("add", "a"),
            ev("message", "b\nc"),
            ev("message", "[DONE]"),
        ];
        let bytes = body.as_bytes();
        for split in 0..=bytes.len() {
            for second in split..=bytes.len() {
                let mut p = SseParser::new();
                let got = events(
                    &mut p,
                    &[&bytes[..split], &bytes[split..second], &bytes[second..]],
                );
                assert_eq!(got, want, "split at {split} and {second}");
                assert_eq!((p.retry_ms(), p.last_event_id()), (Some(1500), &b"7"[..]));
            }
        }
        // Byte by byte.
        let mut p = SseParser::new();
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(events(&mut p, &singles), want);
    }

    #[test]
    fn a_bom_only_at_the_start_and_a_near_bom_is_text() {
        let mut p = SseParser::new();
        assert_eq!(
            events(
                &mut p,
                &[b"\xEF\xBB", b"\xBFdata: x\n\n\xEF\xBB\xBFdata: y\n\n"]
            ),
            [ev("message", "x")]
        );
        // The second BOM is part of a field name (`\u{feff}data`): ignored, no event.
        let mut p = SseParser::new();
        assert_eq!(
            events(&mut p, &[b"\xEFdata: x\n\n", b"data: y\n\n"]),
            [ev("message", "y")]
        );
    }

    #[test]
    fn long_lines_and_endless_lines_cost_the_limit() {
        let mut p = SseParser::with_limit(64);
        let long = vec![b'z'; 1 << 20];
        let mut chunks: Vec<&[u8]> = vec![b"data: "];
        chunks.extend(long.chunks(4096));
        chunks.push(b"\n\ndata: short\n\n");
        let got = events(&mut p, &chunks);
        assert_eq!(got.len(), 2);
        assert!(got[0].2 && got[0].1.len() <= 64 && got[0].1.bytes().all(|b| b == b'z'));
        assert_eq!(got[1], ev("message", "short"));
        assert!(p.line.capacity() <= 128 && p.data.capacity() <= 128);
        // A stream that never sends a line end: nothing dispatched, memory bounded.
        let mut p = SseParser::with_limit(64);
        for _ in 0..1000 {
            p.feed(&long[..1024], &mut |_| panic!("no event"));
        }
        assert!(p.within_event() && p.line.len() <= 64);
        assert_eq!(p.bytes(), 1024 * 1000);
    }

    #[test]
    fn a_long_line_cuts_alike_whole_or_split() {
        let mut body = b"event: ".to_vec();
        body.extend(std::iter::repeat_n(b'e', 100));
        body.extend(b"\ndata: ");
        body.extend(std::iter::repeat_n(b'd', 300));
        body.extend(b"\n\n");
        let whole = events(&mut SseParser::with_limit(64), &[&body]);
        for at in 0..body.len() {
            let split = events(&mut SseParser::with_limit(64), &[&body[..at], &body[at..]]);
            assert_eq!(split, whole, "split at {at}");
        }
        assert!(whole[0].2 && whole[0].0.len() <= 64 && whole[0].1.len() <= 64);
    }

    #[test]
    fn fields_the_standard_ignores_are_ignored() {
        let mut p = SseParser::new();
        let got = events(
            &mut p,
            &[b"id: a\0b\nretry: 12x\nretry:\nfoo: bar\nevent\ndata: 1\n\nevent: x\n\ndata: 2\n\n"],
        );
        // `event` with no value is the empty type: `message`; a type without data is dropped.
        assert_eq!(got, [ev("message", "1"), ev("message", "2")]);
        assert_eq!((p.last_event_id(), p.retry_ms()), (&b""[..], None));
        p.reset();
        assert!(!p.within_event());
    }

    #[test]
    fn lines_are_events_however_the_bytes_are_split() {
        let stream = b"{\"t\":\"a\"}\n\r\n{\"t\":\"b\"}\r\n\n0123456789abcdefXYZ\r\nlast";
        let lines = |chunks: &[&[u8]]| {
            let mut p = LineParser::with_limit(16);
            let mut out = Vec::new();
            for c in chunks {
                p.feed(c, &mut |l: &[u8]| {
                    out.push(String::from_utf8_lossy(l).into_owned())
                });
            }
            out
        };
        let whole = lines(&[stream]);
        // Empty lines are no events; a line past the limit is its first 16 bytes; a line
        // without its end is not one yet.
        assert_eq!(
            whole,
            ["{\"t\":\"a\"}", "{\"t\":\"b\"}", "0123456789abcdef"]
        );
        for at in 0..=stream.len() {
            let (a, b) = stream.split_at(at);
            assert_eq!(lines(&[a, b]), whole, "split at {at}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(lines(&bytes), whole);
    }
}
