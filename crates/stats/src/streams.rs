//! Streamed responses (server-sent events, or any body read as an event stream with
//! `--stream`): what a worker measured of them, the result's `streams` section, and each
//! second's share of it.
//!
//! Each event is timed at the read that completed it: the first from where latency starts (the
//! due time in open loop, the send in closed loop), each later one from the event before it.
//! A stream's own figures (its events, bytes, duration, the time per event after its first)
//! are booked when it ends: the server ended it, its marker came (`--stream-end`), or pelt cut
//! it at `--stream-limit`. LLM users read events as tokens: time to first token is `ttft`,
//! inter-token latency is `gap`, and time per output token is `time_per_event`. Where the
//! server reports a stream's token counts (OpenAI's `usage`, in the last chunk when the request
//! sets `stream_options.include_usage`), they are the tokens: `tokens` counts them, and its
//! time per output token is the stream's time after its first event over its output tokens
//! less one (as vLLM's and AIPerf's clients compute it).

use crate::{LatencyHistogram, LatencySummary, PointLatency};
use serde::{Deserialize, Serialize};

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server ended the response.
    Server,
    /// An event's data was the end marker (`--stream-end`).
    Marker,
    /// pelt cut it at `--stream-limit` (events or time).
    Cut,
}

/// The token counts a stream's server reported (OpenAI's `usage`: `prompt_tokens`,
/// `completion_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// The latency targets a stream must meet to count as good (`--goodput`: goodput), each the most
/// it may take, microseconds, inclusive (`ttft<500ms` is at most 499,999 us).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slo {
    /// Time to first token (event), from where latency starts.
    pub ttft_us: Option<u64>,
    /// Time per output token: the stream's TPOT from its server's token counts, or, without
    /// them, its time per event after the first (events read as tokens).
    pub tpot_us: Option<u64>,
    /// The whole request, from where latency starts to the stream's end.
    pub e2e_us: Option<u64>,
}

impl Slo {
    /// Whether a stream with these figures met every target: one without an event has no
    /// time to first token, and meets no `ttft` target; one of fewer than two tokens has no
    /// time per token to miss.
    pub fn met(&self, ttft_us: Option<u64>, tpot_us: Option<u64>, e2e_us: u64) -> bool {
        // A figure the stream lacks meets its target when `lacking` says so.
        let within = |target: Option<u64>, v: Option<u64>, lacking: bool| {
            target.is_none_or(|t| v.map_or(lacking, |v| v <= t))
        };
        within(self.ttft_us, ttft_us, false)
            && within(self.tpot_us, tpot_us, true)
            && within(self.e2e_us, Some(e2e_us), false)
    }
}

/// One stream's figures, booked when it ends.
#[derive(Debug, Clone, Copy)]
pub struct StreamFigures {
    pub events: u64,
    /// Body bytes read (up to its end).
    pub bytes: u64,
    /// From where latency starts to its end, microseconds.
    pub duration_us: u64,
    /// From its first event to its last, microseconds (0 with fewer than two events).
    pub span_us: u64,
    /// From its first event to its end, microseconds (0 without events).
    pub after_first_us: u64,
    /// The token counts its server reported, if it did.
    pub usage: Option<Usage>,
    pub end: StreamEnd,
    /// Whether it met the run's latency targets (`--goodput`; `None`: the run set none).
    pub met: Option<bool>,
}

impl StreamFigures {
    /// Its time per output token, microseconds: after its first event over its output tokens
    /// less one where its server counted them, else its time per event after the first;
    /// `None` with fewer than two.
    pub fn tpot_us(&self) -> Option<u64> {
        match self.usage {
            Some(u) => (u.output >= 2).then(|| self.after_first_us / (u.output - 1)),
            None => (self.events >= 2).then(|| self.span_us / (self.events - 1)),
        }
    }
}

/// What one worker (or a merge of them) measured of its streams.
#[derive(Debug, Clone)]
pub struct StreamStats {
    /// Streams that ended (the server ended them, their marker came, or pelt cut them).
    pub streams: u64,
    /// Events received (those of streams that later failed too).
    pub events: u64,
    /// Body bytes of the streams that ended.
    pub bytes: u64,
    /// Streams pelt cut at `--stream-limit`.
    pub cut: u64,
    /// Streams that ended at their marker (`--stream-end`).
    pub marked: u64,
    /// Streams that ended without an event.
    pub empty: u64,
    /// Time to first event, microseconds (from where latency starts).
    pub ttft: LatencyHistogram,
    /// The gap before each event after a stream's first, microseconds.
    pub gap: LatencyHistogram,
    /// Per stream with two events or more: (last event - first) / (events - 1), microseconds.
    pub time_per_event: LatencyHistogram,
    /// Per stream: from where latency starts to its end, microseconds.
    pub duration: LatencyHistogram,
    /// Per stream: its events (a count, not a time).
    pub events_per_stream: LatencyHistogram,
    /// Streams whose server reported their token counts, and the counts.
    pub usage_streams: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Per stream with two output tokens or more: its time after its first event over its
    /// output tokens less one (TPOT), microseconds.
    pub tpot: LatencyHistogram,
    /// Streams judged against the run's latency targets (`--goodput`), and those that met them.
    pub slo_judged: u64,
    pub slo_met: u64,
}

impl Default for StreamStats {
    fn default() -> Self {
        StreamStats::new()
    }
}

impl StreamStats {
    pub fn new() -> StreamStats {
        StreamStats {
            streams: 0,
            events: 0,
            bytes: 0,
            cut: 0,
            marked: 0,
            empty: 0,
            ttft: LatencyHistogram::new(),
            gap: LatencyHistogram::new(),
            time_per_event: LatencyHistogram::new(),
            duration: LatencyHistogram::new(),
            events_per_stream: LatencyHistogram::new(),
            usage_streams: 0,
            input_tokens: 0,
            output_tokens: 0,
            tpot: LatencyHistogram::new(),
            slo_judged: 0,
            slo_met: 0,
        }
    }

    /// A stream's first event, `ttft_us` after where latency starts.
    #[inline]
    pub fn first_event(&mut self, ttft_us: u64) {
        self.events += 1;
        self.ttft.record(ttft_us);
    }

    /// A later event, `gap_us` after the one before it.
    #[inline]
    pub fn next_event(&mut self, gap_us: u64) {
        self.events += 1;
        self.gap.record(gap_us);
    }

    /// A stream ended.
    pub fn end(&mut self, s: &StreamFigures) {
        self.streams += 1;
        self.bytes += s.bytes;
        match s.end {
            StreamEnd::Server => {}
            StreamEnd::Marker => self.marked += 1,
            StreamEnd::Cut => self.cut += 1,
        }
        if s.events == 0 {
            self.empty += 1;
        } else {
            self.events_per_stream.record(s.events);
        }
        if s.events >= 2 {
            self.time_per_event.record(s.span_us / (s.events - 1));
        }
        self.duration.record(s.duration_us);
        if let Some(u) = s.usage {
            self.usage_streams += 1;
            self.input_tokens += u.input;
            self.output_tokens += u.output;
            if let Some(t) = s.tpot_us() {
                self.tpot.record(t);
            }
        }
        if let Some(met) = s.met {
            self.slo_judged += 1;
            self.slo_met += u64::from(met);
        }
    }

    pub fn merge(&mut self, other: &StreamStats) {
        self.streams += other.streams;
        self.events += other.events;
        self.bytes += other.bytes;
        self.cut += other.cut;
        self.marked += other.marked;
        self.empty += other.empty;
        self.ttft.merge(&other.ttft);
        self.gap.merge(&other.gap);
        self.time_per_event.merge(&other.time_per_event);
        self.duration.merge(&other.duration);
        self.events_per_stream.merge(&other.events_per_stream);
        self.usage_streams += other.usage_streams;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.tpot.merge(&other.tpot);
        self.slo_judged += other.slo_judged;
        self.slo_met += other.slo_met;
    }

    /// The result's section, its rates over `duration_s`.
    pub fn report(&self, duration_s: f64) -> StreamsReport {
        let mut r = StreamsReport {
            streams: self.streams,
            events: self.events,
            bytes: self.bytes,
            cut: self.cut,
            ended_by_marker: self.marked,
            without_events: self.empty,
            events_per_s: 0.0,
            ttft_us: self.ttft.summary(),
            gap_us: self.gap.summary(),
            time_per_event_us: self.time_per_event.summary(),
            duration_us: self.duration.summary(),
            events_per_stream: self.events_per_stream.summary(),
            histograms: StreamHistograms {
                ttft_us: self.ttft.clone(),
                gap_us: self.gap.clone(),
                time_per_event_us: self.time_per_event.clone(),
                duration_us: self.duration.clone(),
                events_per_stream: self.events_per_stream.clone(),
            },
            tokens: (self.usage_streams > 0).then(|| TokensReport {
                streams: self.usage_streams,
                input: self.input_tokens,
                output: self.output_tokens,
                output_per_s: 0.0,
                tpot_us: self.tpot.summary(),
                tpot_histogram: self.tpot.clone(),
            }),
            goodput: (self.slo_judged > 0).then(|| {
                let mut g = GoodputReport {
                    targets: Vec::new(),
                    met: self.slo_met,
                    requests: 0,
                    share: 0.0,
                    per_s: 0.0,
                };
                g.over(self.slo_judged);
                g
            }),
        };
        r.set_rate(duration_s);
        r
    }
}

/// The result's `streams`: every figure of the run's streamed responses (measured part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamsReport {
    /// Streams that ended: by the server, at their marker, or cut by pelt.
    pub streams: u64,
    /// Events received (tokens, for an LLM server).
    pub events: u64,
    /// Body bytes of the streams that ended.
    pub bytes: u64,
    /// Streams pelt ended at `--stream-limit` (counted as responses, not errors).
    pub cut: u64,
    /// Streams that ended at the `--stream-end` marker.
    pub ended_by_marker: u64,
    /// Streams that ended without an event.
    pub without_events: u64,
    /// Events per second of the run's duration (tokens/s overall).
    pub events_per_s: f64,
    /// Time to first event (TTFT), microseconds from where latency starts.
    pub ttft_us: LatencySummary,
    /// The gap before each event after a stream's first (inter-token latency), microseconds.
    pub gap_us: LatencySummary,
    /// Per stream: its time per event after the first (TPOT), microseconds; a stream's own
    /// events/s is 1e6 over it.
    pub time_per_event_us: LatencySummary,
    /// Per stream: from where latency starts to its end, microseconds.
    pub duration_us: LatencySummary,
    /// Per stream: its events (counts, not microseconds).
    pub events_per_stream: LatencySummary,
    /// The HDR histograms behind the figures above, so results merge exactly.
    pub histograms: StreamHistograms,
    /// The tokens the server reported (its `usage`), when it did for any stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokensReport>,
    /// The requests that met every latency target (`--goodput`), when the run set any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<GoodputReport>,
}

/// The `streams.goodput` of a result: how many requests met every latency target the run set
/// (`--goodput`), as vLLM's and AIPerf's goodput counts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputReport {
    /// The targets, as given (`ttft<500ms`).
    pub targets: Vec<String>,
    /// Requests that met every target: a stream with a status below 400 whose figures are
    /// within each.
    pub met: u64,
    /// The requests judged: every request of the measured part that ended (completed or
    /// failed; a failed one met nothing).
    pub requests: u64,
    /// `met` as a percentage of `requests`.
    pub share: f64,
    /// Requests that met every target per second of the run's duration.
    pub per_s: f64,
}

impl GoodputReport {
    /// Judged over `requests` (the run's ended requests, at least the streams judged).
    pub fn over(&mut self, requests: u64) {
        self.requests = self.requests.max(requests);
        self.share = if self.requests > 0 {
            self.met as f64 * 100.0 / self.requests as f64
        } else {
            0.0
        };
    }

    fn merge(&mut self, other: &GoodputReport) {
        self.met += other.met;
        let requests = self.requests + other.requests;
        self.requests = 0;
        self.over(requests);
        if self.targets.is_empty() {
            self.targets = other.targets.clone();
        }
    }
}

/// The `streams.tokens` of a result: the token counts servers reported (OpenAI's `usage`) and
/// the time per output token they give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokensReport {
    /// Streams whose server reported their token counts.
    pub streams: u64,
    /// Input (prompt) tokens, and output (completion) tokens, of those streams.
    pub input: u64,
    pub output: u64,
    /// Output tokens per second of the run's duration.
    pub output_per_s: f64,
    /// Per stream with two output tokens or more: (its end - its first event) / (output
    /// tokens - 1), microseconds: time per output token (TPOT).
    pub tpot_us: LatencySummary,
    /// The histogram behind it.
    pub tpot_histogram: LatencyHistogram,
}

impl TokensReport {
    fn merge(&mut self, other: &TokensReport) {
        self.streams += other.streams;
        self.input += other.input;
        self.output += other.output;
        self.tpot_histogram.merge(&other.tpot_histogram);
        self.tpot_us = self.tpot_histogram.summary();
    }
}

/// The histograms of the `streams` section (HdrHistogram's compressed V2 encoding, base64).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamHistograms {
    pub ttft_us: LatencyHistogram,
    pub gap_us: LatencyHistogram,
    pub time_per_event_us: LatencyHistogram,
    pub duration_us: LatencyHistogram,
    pub events_per_stream: LatencyHistogram,
}

impl StreamsReport {
    /// Sets `events_per_s` (and output tokens per second) over `duration_s`.
    pub fn set_rate(&mut self, duration_s: f64) {
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        self.events_per_s = per_s(self.events);
        if let Some(t) = &mut self.tokens {
            t.output_per_s = per_s(t.output);
        }
        if let Some(g) = &mut self.goodput {
            g.per_s = per_s(g.met);
        }
    }

    /// A stream's own events per second at the quantile `q` of streams, slowest first (from
    /// the time per event's opposite quantile); 0 without streams of two events.
    pub fn stream_rate_at(&self, q: f64) -> f64 {
        let t = self.histograms.time_per_event_us.quantile_us(1.0 - q);
        if t == 0 {
            0.0
        } else {
            1e6 / t as f64
        }
    }

    /// Adds `other` (another worker's, agent's or run's): counts add, the figures come from
    /// the merged histograms; the rate is the caller's to set.
    pub fn merge(&mut self, other: &StreamsReport) {
        self.streams += other.streams;
        self.events += other.events;
        self.bytes += other.bytes;
        self.cut += other.cut;
        self.ended_by_marker += other.ended_by_marker;
        self.without_events += other.without_events;
        let (a, b) = (&mut self.histograms, &other.histograms);
        a.ttft_us.merge(&b.ttft_us);
        a.gap_us.merge(&b.gap_us);
        a.time_per_event_us.merge(&b.time_per_event_us);
        a.duration_us.merge(&b.duration_us);
        a.events_per_stream.merge(&b.events_per_stream);
        self.ttft_us = a.ttft_us.summary();
        self.gap_us = a.gap_us.summary();
        self.time_per_event_us = a.time_per_event_us.summary();
        self.duration_us = a.duration_us.summary();
        self.events_per_stream = a.events_per_stream.summary();
        match (&mut self.tokens, &other.tokens) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
        match (&mut self.goodput, &other.goodput) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(b.clone()),
            _ => {}
        }
    }
}

/// One second's stream figures, as one worker counts them.
#[derive(Debug, Clone, Default)]
pub struct StreamSecond {
    /// Streams that ended in the second, and of them the ones pelt cut.
    pub streams: u64,
    pub cut: u64,
    /// Of them, those that met the run's latency targets (`--goodput`).
    pub met: u64,
    /// Events received in the second.
    pub events: u64,
    /// The first events, and the gaps, that came in the second.
    pub ttft: LatencyHistogram,
    pub gap: LatencyHistogram,
    /// The token counts servers reported for the streams that ended in the second, and those
    /// streams' times per output token.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tpot: LatencyHistogram,
}

impl StreamSecond {
    /// A stream ended in the second.
    pub fn end(&mut self, s: &StreamFigures) {
        self.streams += 1;
        self.cut += u64::from(s.end == StreamEnd::Cut);
        self.met += u64::from(s.met == Some(true));
        if let Some(u) = s.usage {
            self.input_tokens += u.input;
            self.output_tokens += u.output;
            if let Some(t) = s.tpot_us() {
                self.tpot.record(t);
            }
        }
    }
}

impl StreamSecond {
    pub fn merge(&mut self, other: &StreamSecond) {
        self.streams += other.streams;
        self.cut += other.cut;
        self.met += other.met;
        self.events += other.events;
        self.ttft.merge(&other.ttft);
        self.gap.merge(&other.gap);
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.tpot.merge(&other.tpot);
    }

    pub fn point(&self) -> StreamPoint {
        let tokens = self.tpot.count() > 0 || self.output_tokens > 0 || self.input_tokens > 0;
        StreamPoint {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            tpot_us: tokens.then(|| PointLatency::of(&self.tpot)),
            tpot_histogram: tokens.then(|| self.tpot.encode()),
            streams: self.streams,
            cut: self.cut,
            met: self.met,
            events: self.events,
            ttft_us: PointLatency::of(&self.ttft),
            gap_us: PointLatency::of(&self.gap),
            ttft_histogram: self.ttft.encode(),
            gap_histogram: self.gap.encode(),
        }
    }
}

/// A timeline point's stream figures (`streams` in the JSON result's `timeline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamPoint {
    pub streams: u64,
    pub cut: u64,
    /// Streams that ended in the second having met the run's latency targets (`--goodput`).
    #[serde(default)]
    pub met: u64,
    pub events: u64,
    pub ttft_us: PointLatency,
    pub gap_us: PointLatency,
    /// The histograms behind them, encoded as a point's `histogram` is.
    pub ttft_histogram: String,
    pub gap_histogram: String,
    /// The token counts servers reported for the streams that ended in the second (`usage`).
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Those streams' times per output token, and its histogram (absent without usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_us: Option<PointLatency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_histogram: Option<String>,
}

impl StreamPoint {
    /// Adds another point's figures (the next seconds of the same run, or the same second of
    /// another): counts add, the histograms merge (one that does not decode is left as is).
    pub fn merge(&mut self, other: &StreamPoint) {
        self.streams += other.streams;
        self.cut += other.cut;
        self.met += other.met;
        self.events += other.events;
        let join = |a: &str, b: &str| -> Option<LatencyHistogram> {
            let mut a = LatencyHistogram::decode(a).ok()?;
            a.merge(&LatencyHistogram::decode(b).ok()?);
            Some(a)
        };
        if let Some(h) = join(&self.ttft_histogram, &other.ttft_histogram) {
            self.ttft_us = PointLatency::of(&h);
            self.ttft_histogram = h.encode();
        }
        if let Some(h) = join(&self.gap_histogram, &other.gap_histogram) {
            self.gap_us = PointLatency::of(&h);
            self.gap_histogram = h.encode();
        }
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        match (&self.tpot_histogram, &other.tpot_histogram) {
            (Some(a), Some(b)) => {
                if let Some(h) = join(a, b) {
                    self.tpot_us = Some(PointLatency::of(&h));
                    self.tpot_histogram = Some(h.encode());
                }
            }
            (None, Some(_)) => {
                self.tpot_us = other.tpot_us;
                self.tpot_histogram = other.tpot_histogram.clone();
            }
            _ => {}
        }
    }

    /// Points joined: `None` when none had streams.
    pub fn join<'a>(points: impl Iterator<Item = Option<&'a StreamPoint>>) -> Option<StreamPoint> {
        let mut out: Option<StreamPoint> = None;
        for p in points.flatten() {
            match &mut out {
                Some(o) => o.merge(p),
                None => out = Some(p.clone()),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_book_their_events_and_merge_exactly() {
        let mut a = StreamStats::new();
        a.first_event(1_000);
        a.next_event(100);
        a.next_event(300);
        a.end(&StreamFigures {
            events: 3,
            bytes: 90,
            duration_us: 1_500,
            span_us: 400,
            after_first_us: 500,
            usage: Some(Usage {
                input: 7,
                output: 3,
            }),
            end: StreamEnd::Server,
            met: Some(true),
        });
        let mut b = StreamStats::new();
        b.end(&StreamFigures {
            events: 0,
            bytes: 0,
            duration_us: 10,
            span_us: 0,
            after_first_us: 0,
            usage: None,
            end: StreamEnd::Cut,
            met: Some(false),
        });
        b.first_event(2_000);
        b.end(&StreamFigures {
            events: 1,
            bytes: 9,
            duration_us: 2_000,
            span_us: 0,
            after_first_us: 0,
            usage: Some(Usage {
                input: 2,
                output: 1,
            }),
            end: StreamEnd::Marker,
            met: Some(true),
        });
        let mut all = a.clone();
        all.merge(&b);
        let r = all.report(2.0);
        assert_eq!(
            (
                r.streams,
                r.events,
                r.bytes,
                r.cut,
                r.ended_by_marker,
                r.without_events
            ),
            (3, 4, 99, 1, 1, 1)
        );
        assert_eq!(r.events_per_s, 2.0);
        assert_eq!((r.ttft_us.min_us, r.ttft_us.max_us), (1_000, 2_000));
        assert_eq!((r.gap_us.min_us, r.gap_us.max_us), (100, 300));
        // (400 us over two gaps): one stream's time per event; 5,000 events/s.
        assert_eq!(r.time_per_event_us.max_us, 200);
        assert_eq!(r.stream_rate_at(0.5), 5_000.0);
        assert_eq!(r.events_per_stream.max_us, 3);
        // Tokens as the servers reported them: 500 us after the first over 3 - 1 tokens.
        let t = r.tokens.as_ref().unwrap();
        assert_eq!(
            (t.streams, t.input, t.output, t.output_per_s),
            (2, 9, 4, 2.0)
        );
        assert_eq!((t.tpot_us.min_us, t.tpot_us.max_us), (250, 250));
        // Goodput: two of the three streams judged met the targets.
        let g = r.goodput.as_ref().unwrap();
        assert_eq!((g.met, g.requests, g.per_s), (2, 3, 1.0));
        assert!((g.share - 200.0 / 3.0).abs() < 1e-9);
        // The reports of the two halves merge into the report of the whole.
        let mut m = a.report(1.0);
        m.merge(&b.report(1.0));
        m.set_rate(2.0);
        assert_eq!(m, r);
    }

    #[test]
    fn stream_points_merge_their_histograms() {
        let mut s = StreamSecond {
            events: 2,
            ..Default::default()
        };
        s.ttft.record(50);
        s.gap.record(7);
        let mut t = StreamSecond {
            events: 1,
            streams: 1,
            ..Default::default()
        };
        t.ttft.record(90);
        let mut p = s.point();
        p.merge(&t.point());
        let mut both = s.clone();
        both.merge(&t);
        assert_eq!(p, both.point());
        assert_eq!(
            StreamPoint::join([None, Some(&s.point()), Some(&t.point())].into_iter()),
            Some(p)
        );
        assert_eq!(StreamPoint::join([None, None].into_iter()), None);
    }
}
