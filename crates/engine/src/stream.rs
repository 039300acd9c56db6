//! Streamed responses read event by event: a `text/event-stream` response (or, with
//! `--stream`, every response) is fed to an event-stream parser as its body's bytes arrive,
//! and each event is timed at the read that completed it.
//!
//! A [`StreamReader`] is one response's reader: HTTP/1.1 keeps one per connection (its
//! responses come one at a time), HTTP/2 one per stream that carries an event stream (made
//! once and reused). The protocols only hand it the body's bytes and ask it two things: whether
//! pelt must end the stream now (its marker came, or its limit: `--stream-end`,
//! `--stream-limit`), and until when it may stay silent (a stream that sends nothing for
//! `--timeout` is a timeout, however long it has run). Everything it measures goes to the
//! ledger; nothing is allocated per event.

use crate::ledger::Ledger;
use pelt_codec::sse::{LineParser, SseEvent, SseParser};
use pelt_stats::{Slo, StreamEnd, StreamFigures, Usage};
use std::time::{Duration, Instant};

/// After a stream's end marker, how long the server has to end the response before pelt
/// ends it (the stream is booked at the marker either way).
pub const MARKER_GRACE: Duration = Duration::from_millis(10);

/// The longest a stream runs unless `--stream-limit` says otherwise: a stream that never
/// ends (and never stalls for `--timeout`) is cut here, so no run waits on one for ever.
pub const DEFAULT_STREAM_TIME: Duration = Duration::from_secs(600);

/// How streamed responses are read (`--stream`, `--stream-limit`, `--stream-end`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streams {
    /// Read every response's body as a stream, whatever its `Content-Type`: one that is not
    /// a `text/event-stream` has an event per line (JSON lines). Without: only
    /// `text/event-stream` responses are read as streams.
    pub all: bool,
    /// pelt ends a stream at this many events (counted as cut, not as an error).
    pub max_events: Option<u64>,
    /// pelt ends a stream this long after its request was sent (cut, not an error);
    /// [`DEFAULT_STREAM_TIME`] unless told.
    pub max_time: Option<Duration>,
    /// An event whose data is exactly these bytes ends its stream (`[DONE]`, OpenAI's); it is
    /// not counted as an event.
    pub end_marker: Option<Vec<u8>>,
    /// The latency targets each stream is judged against (`--goodput`: goodput).
    pub slo: Option<Slo>,
}

impl Default for Streams {
    fn default() -> Streams {
        Streams {
            all: false,
            max_events: None,
            max_time: Some(DEFAULT_STREAM_TIME),
            end_marker: None,
            slo: None,
        }
    }
}

impl Streams {
    /// Whether a response is read as a stream.
    #[inline]
    pub(crate) fn reads(&self, event_stream: bool) -> bool {
        event_stream || self.all
    }
}

/// One response read as a stream.
#[derive(Default)]
pub(crate) struct StreamReader {
    parser: SseParser,
    /// `--stream` on a response that is not an event stream: each line is an event.
    lines: LineParser,
    by_line: bool,
    /// A stream is being read (`begin` to `finish` or `forget`).
    on: bool,
    /// When its request was sent.
    sent: Option<Instant>,
    /// Its last bytes.
    active: Option<Instant>,
    bytes: u64,
    /// Its events' times.
    events: Events,
}

/// A stream's events as they come: timed, counted, and its end when pelt ends it.
#[derive(Default)]
struct Events {
    /// Its request started in the warm-up.
    warm: bool,
    /// Where its latency starts (the due time in open loop, the send in closed loop).
    start: Option<Instant>,
    /// Its first and last events.
    first: Option<Instant>,
    last: Option<Instant>,
    count: u64,
    /// Its marker or limit came at this time: pelt ends it (the protocol books it then).
    ended: Option<(Instant, StreamEnd)>,
    /// The token counts its server reported in an event (the last such event's).
    usage: Option<Usage>,
    /// The run's latency targets, judged at its end.
    slo: Option<Slo>,
}

/// An event's OpenAI-style token counts: a JSON object with a `usage` object holding
/// `prompt_tokens` and `completion_tokens` (the last chunk of a stream whose request set
/// `stream_options.include_usage`; vLLM's continuous usage puts it in every chunk). Only
/// events that hold `"usage"` are parsed, into a struct of those fields alone, so an event
/// costs a search of its bytes and allocates nothing.
fn usage_in(data: &[u8]) -> Option<Usage> {
    #[derive(serde::Deserialize)]
    struct Chunk {
        usage: Option<Counts>,
    }
    #[derive(serde::Deserialize)]
    struct Counts {
        #[serde(default)]
        prompt_tokens: u64,
        completion_tokens: u64,
    }
    if data.first() != Some(&b'{') || memchr::memmem::find(data, b"\"usage\"").is_none() {
        return None;
    }
    let counts = serde_json::from_slice::<Chunk>(data).ok()?.usage?;
    Some(Usage {
        input: counts.prompt_tokens,
        output: counts.completion_tokens,
    })
}

impl Events {
    /// An event with `data` completed at `at` (its end marker ends the stream instead).
    #[inline]
    fn event(&mut self, data: &[u8], at: Instant, ledger: &mut Ledger, config: &Streams) {
        if self.ended.is_some() {
            return;
        }
        if config.end_marker.as_deref() == Some(data) {
            self.ended = Some((at, StreamEnd::Marker));
            return;
        }
        self.count += 1;
        if let Some(u) = usage_in(data) {
            self.usage = Some(u);
        }
        match self.last {
            None => ledger.stream_first(self.warm, micros(self.start.unwrap_or(at), at)),
            Some(before) => ledger.stream_gap(self.warm, micros(before, at)),
        }
        self.first.get_or_insert(at);
        self.last = Some(at);
        if config.max_events.is_some_and(|n| self.count >= n) {
            self.ended = Some((at, StreamEnd::Cut));
        }
    }
}

impl StreamReader {
    /// Whether a stream is being read.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// A response starts being read as a stream: its request was sent at `sent`, its latency
    /// starts at `start`, and its head arrived at `at`; `event_stream`: it is a
    /// `text/event-stream` (read by the event-stream rules), else one event per line.
    pub(crate) fn begin(
        &mut self,
        warm: bool,
        start: Instant,
        sent: Instant,
        at: Instant,
        event_stream: bool,
        slo: Option<Slo>,
    ) {
        self.parser.reset();
        self.lines.reset();
        self.by_line = !event_stream;
        self.on = true;
        self.sent = Some(sent);
        self.active = Some(at);
        self.bytes = 0;
        self.events = Events {
            warm,
            start: Some(start),
            slo,
            ..Events::default()
        };
    }

    /// Body bytes that arrived at `at`. Returns whether the stream reached its event limit in
    /// them: the protocol ends it now. After its marker the server has [`MARKER_GRACE`] to
    /// end the response itself (as OpenAI-style servers do right after `[DONE]`), so the
    /// connection is kept; [`end_at`](Self::end_at) ends it past that. Bytes after either end
    /// are not read.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        at: Instant,
        ledger: &mut Ledger,
        config: &Streams,
    ) -> bool {
        if !self.took(bytes.len(), at) {
            return false;
        }
        let StreamReader {
            parser,
            lines,
            by_line,
            events,
            ..
        } = self;
        let mut event = |data: &[u8]| events.event(data, at, ledger, config);
        if *by_line {
            lines.feed(bytes, &mut event);
        } else {
            parser.feed(bytes, &mut |e: SseEvent<'_>| event(e.data));
        }
        self.cut()
    }

    /// A stream whose events are framed elsewhere (gRPC's messages): `len` bytes of it arrived
    /// at `at`, completing `events` events. Returns whether it reached its event limit in them,
    /// as [`feed`](Self::feed).
    #[inline]
    pub(crate) fn framed(
        &mut self,
        len: usize,
        events: u64,
        at: Instant,
        ledger: &mut Ledger,
        config: &Streams,
    ) -> bool {
        if !self.took(len, at) {
            return false;
        }
        for _ in 0..events {
            self.events.event(&[], at, ledger, config);
        }
        self.cut()
    }

    /// `len` bytes of the stream arrived at `at`: counted, unless it is not read or has
    /// ended (then its bytes are not read: `false`).
    #[inline]
    fn took(&mut self, len: usize, at: Instant) -> bool {
        if !self.on || self.events.ended.is_some() {
            return false;
        }
        self.bytes += len as u64;
        self.active = Some(at);
        true
    }

    /// pelt cut the stream (its event or time limit came).
    #[inline]
    pub(crate) fn cut(&self) -> bool {
        matches!(self.events.ended, Some((_, StreamEnd::Cut)))
    }

    /// When pelt ends the stream, if it must at `now`: its event limit came, its time limit
    /// is past, or its marker came more than [`MARKER_GRACE`] ago.
    pub(crate) fn end_at(&mut self, now: Instant, config: &Streams) -> Option<Instant> {
        if !self.on {
            return None;
        }
        let ended = &mut self.events.ended;
        if ended.is_none() {
            let limit = config.max_time.zip(self.sent).map(|(t, sent)| sent + t);
            if let Some(at) = limit.filter(|&at| now >= at) {
                *ended = Some((at, StreamEnd::Cut));
            }
        }
        match (*ended)? {
            (at, StreamEnd::Marker) if now < at + MARKER_GRACE => None,
            (at, _) => Some(at),
        }
    }

    /// A stream that sends nothing by this time is a timeout (its last bytes + `timeout`);
    /// not a stream: `sent + timeout`, as any request.
    #[inline]
    pub(crate) fn deadline(&self, sent: Instant, timeout: Duration) -> Instant {
        match self.active.filter(|_| self.on) {
            Some(active) => active.max(sent) + timeout,
            None => sent + timeout,
        }
    }

    /// The stream ended: the server ended its response (with `status`) at `at`, or pelt
    /// ended it (at its `ended` time). Books its figures; returns when it ended.
    #[inline]
    pub(crate) fn finish(&mut self, at: Instant, status: u16, ledger: &mut Ledger) -> Instant {
        if !self.on {
            return at;
        }
        self.book(at, status, ledger)
    }

    fn book(&mut self, at: Instant, status: u16, ledger: &mut Ledger) -> Instant {
        self.on = false;
        let e = &self.events;
        let (done, end) = e.ended.unwrap_or((at, StreamEnd::Server));
        let start = e.start.unwrap_or(done);
        let mut figures = StreamFigures {
            events: e.count,
            bytes: self.bytes,
            duration_us: micros(start, done),
            span_us: match (e.first, e.last) {
                (Some(f), Some(l)) => micros(f, l),
                _ => 0,
            },
            after_first_us: e.first.map_or(0, |f| micros(f, done)),
            usage: e.usage,
            end,
            met: None,
        };
        if let Some(slo) = e.slo {
            // An error status met nothing, however fast it came.
            let ttft = e.first.map(|f| micros(start, f));
            figures.met =
                Some(status < 400 && slo.met(ttft, figures.tpot_us(), figures.duration_us));
        }
        ledger.stream_end(e.warm, &figures);
        done
    }

    /// The response failed (or its connection went): the stream is not booked (its events
    /// stay counted).
    #[inline]
    pub(crate) fn forget(&mut self) {
        self.on = false;
    }
}

#[inline]
fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_come_from_an_events_usage() {
        let last = br#"{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":40,"total_tokens":52}}"#;
        assert_eq!(
            usage_in(last),
            Some(Usage {
                input: 12,
                output: 40
            })
        );
        // vLLM's continuous usage: counts in a chunk that also carries a token.
        let mid = br#"{"choices":[{"delta":{"content":"a \"usage\" word"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
        assert_eq!(
            usage_in(mid),
            Some(Usage {
                input: 3,
                output: 1
            })
        );
        // Not counts: a token that says "usage", null usage, not JSON, another shape.
        let word = br#"{"choices":[{"delta":{"content":"\"usage\""}}]}"#;
        assert_eq!(usage_in(word), None);
        assert_eq!(usage_in(br#"{"usage":null}"#), None);
        assert_eq!(usage_in(b"[DONE]"), None);
        assert_eq!(usage_in(br#"{"usage":{"tokens":3}}"#), None);
    }
}
