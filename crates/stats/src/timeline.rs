//! The per-second timeline: what each worker measured in one second of the run, merged across
//! workers into one [`TimelinePoint`] per second.

use crate::{ErrorKind, LatencyHistogram};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One worker's counts for one second of the run (second `index`, counted from the start).
///
/// The worker fills it as requests end and hands it over once a second, so the main thread
/// can show a live view and stream the timeline without touching the hot path.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds since the run started: this interval covers `[index, index + 1)`.
    pub index: u64,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// Complete responses by status class: `[other, 1xx, 2xx, 3xx, 4xx, 5xx]`.
    pub classes: [u64; 6],
    /// Latency of the responses that completed in this second.
    pub latency: LatencyHistogram,
    /// Their time to first byte.
    pub ttfb: LatencyHistogram,
    /// Connections open (or opening) at the end of the second.
    pub connections: u64,
    /// Sampled requests that ended in this second (`Config::sample_every`), at most
    /// [`SAMPLES_PER_SECOND`] per worker.
    pub samples: Vec<Sample>,
    /// Sampled requests left out because the second already held its most.
    pub samples_dropped: u64,
    /// What the second added to the counts kept only as totals (see [`Detail`]).
    pub detail: Detail,
    /// Streamed responses' events in the second (made on first use).
    pub streams: Option<Box<crate::StreamSecond>>,
    /// WebSocket runs: what the second added to the socket counts (set at the hand-over).
    pub websocket: Option<crate::WsPoint>,
    /// HTTP/3 runs: what the second added to QUIC's counts (set at the hand-over).
    pub quic: Option<crate::QuicStats>,
}

/// What one second added to the counts the per-request path keeps only as totals: responses
/// by status code, errors by kind, bytes, late starts and the open-loop lag. A worker takes it
/// as the difference of its totals at each hand-over, once a second, never per request. For
/// live metrics; the result's timeline does not keep it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    /// Complete responses by status code.
    #[serde(default, with = "code_pairs")]
    pub codes: BTreeMap<u16, u64>,
    /// Errors by kind (`timeout`, `connect`, ...).
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub bytes_sent: u64,
    #[serde(default)]
    pub bytes_received: u64,
    /// Open loop: requests that started over the late threshold.
    #[serde(default)]
    pub late: u64,
    /// Open loop: the lag of the requests started in the second, microseconds.
    #[serde(default)]
    pub lag: Option<LatencyHistogram>,
    /// Per target name (`--targets` with names; the run's order): requests sent, completed
    /// and failed in the second (measured requests only, as the result's `targets`).
    #[serde(default)]
    pub targets: Vec<TargetCounts>,
    /// gRPC runs: calls by gRPC status name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc: BTreeMap<String, u64>,
    /// Errors that came with a protocol's code, by kind, then code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<String, BTreeMap<String, u64>>,
}

/// One target name's counts in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetCounts {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
}

/// Status codes as `[[code, count], ...]` on the wire: a JSON object's keys are strings, and
/// a map inside a tagged message does not read them back as numbers.
mod code_pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(m: &BTreeMap<u16, u64>, s: S) -> Result<S::Ok, S::Error> {
        m.iter().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u64>, D::Error> {
        Ok(Vec::<(u16, u64)>::deserialize(d)?.into_iter().collect())
    }
}

impl Detail {
    /// Adds another worker's (or agent's) detail for the same second.
    pub fn merge(&mut self, other: &Detail) {
        for (c, n) in &other.codes {
            *self.codes.entry(*c).or_insert(0) += n;
        }
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.late += other.late;
        if let Some(l) = &other.lag {
            self.lag.get_or_insert_with(LatencyHistogram::new).merge(l);
        }
        if self.targets.len() < other.targets.len() {
            self.targets
                .resize(other.targets.len(), TargetCounts::default());
        }
        for (a, b) in self.targets.iter_mut().zip(&other.targets) {
            a.sent += b.sent;
            a.completed += b.completed;
            a.errors += b.errors;
        }
        for (k, n) in &other.grpc {
            *self.grpc.entry(k.clone()).or_insert(0) += n;
        }
        for (kind, codes) in &other.error_codes {
            let mine = self.error_codes.entry(kind.clone()).or_default();
            for (c, n) in codes {
                *mine.entry(c.clone()).or_insert(0) += n;
            }
        }
    }
}

/// The most sampled requests one worker keeps per second; the rest are counted as dropped.
pub const SAMPLES_PER_SECOND: usize = 4096;

/// One sampled request, for a per-request view (the Node.js package's `statusCallback`)
/// without a callback per request: sampled requests ride with the second they ended in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The request's index in the run (`{{seq}}`).
    pub index: u64,
    /// Which entry of the request set it sent (0 with one request).
    pub target: u32,
    /// The response's status (0 for an error).
    pub status: u16,
    /// Why it failed (`None`: a response).
    pub error: Option<ErrorKind>,
    /// Its latency, microseconds (0 for an error).
    pub latency_us: u64,
    /// The response as it came, head and body (`Config::sample_responses`, HTTP/1.1; at most
    /// [`SAMPLED_RESPONSE_MAX`] bytes).
    pub response: Option<Box<[u8]>>,
}

/// The most bytes of a sampled response kept.
pub const SAMPLED_RESPONSE_MAX: usize = 64 * 1024;

impl Interval {
    pub fn new(index: u64) -> Interval {
        Interval {
            index,
            sent: 0,
            completed: 0,
            errors: 0,
            classes: [0; 6],
            latency: LatencyHistogram::new(),
            ttfb: LatencyHistogram::new(),
            connections: 0,
            samples: Vec::new(),
            samples_dropped: 0,
            detail: Detail::default(),
            streams: None,
            websocket: None,
            quic: None,
        }
    }

    /// The second's stream figures, made on first use.
    #[inline]
    pub fn streams(&mut self) -> &mut crate::StreamSecond {
        self.streams.get_or_insert_with(Default::default)
    }

    /// Keeps `sample` unless the second holds its most already.
    #[inline]
    pub fn sample(&mut self, sample: Sample) {
        if self.samples.len() < SAMPLES_PER_SECOND {
            self.samples.push(sample);
        } else {
            self.samples_dropped += 1;
        }
    }

    /// A complete response with `status`, `latency_us` and `ttfb_us`.
    #[inline]
    pub fn record_response(&mut self, status: u16, latency_us: u64, ttfb_us: u64) {
        self.completed += 1;
        let class = status as usize / 100;
        self.classes[if (1..=5).contains(&class) { class } else { 0 }] += 1;
        self.latency.record(latency_us);
        self.ttfb.record(ttfb_us);
    }

    /// Adds another worker's counts for the same second.
    pub fn merge(&mut self, other: &Interval) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.errors += other.errors;
        self.connections += other.connections;
        self.samples.extend_from_slice(&other.samples);
        self.samples_dropped += other.samples_dropped;
        for (a, b) in self.classes.iter_mut().zip(other.classes) {
            *a += b;
        }
        self.latency.merge(&other.latency);
        self.ttfb.merge(&other.ttfb);
        self.detail.merge(&other.detail);
        if let Some(s) = &other.streams {
            self.streams().merge(s);
        }
        self.websocket =
            crate::WsPoint::join([self.websocket.as_ref(), other.websocket.as_ref()].into_iter());
        self.quic = crate::QuicStats::join([self.quic.as_ref(), other.quic.as_ref()].into_iter());
    }

    /// The timeline point of this (merged) interval, `length_s` long (shorter than a second
    /// for the last one).
    pub fn point(&self, length_s: f64, warmup: bool) -> TimelinePoint {
        const NAMES: [&str; 6] = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
        TimelinePoint {
            resources: None,
            second: self.index,
            length_s,
            warmup,
            sent: self.sent,
            completed: self.completed,
            errors: self.errors,
            rps: if length_s > 0.0 {
                self.completed as f64 / length_s
            } else {
                0.0
            },
            status_classes: NAMES
                .iter()
                .zip(self.classes)
                .filter(|&(_, n)| n > 0)
                .map(|(name, n)| (name.to_string(), n))
                .collect(),
            latency_us: PointLatency::of(&self.latency),
            histogram: Some(self.latency.encode()),
            ttfb_us: Some(PointLatency::of(&self.ttfb)),
            ttfb_histogram: Some(self.ttfb.encode()),
            connections: self.connections,
            late: self.detail.late,
            target: None,
            changes: Vec::new(),
            samples: self.samples.clone(),
            samples_dropped: self.samples_dropped,
            detail: self.detail.clone(),
            event_streams: self.streams.as_ref().map(|s| s.point()),
            websocket: self.websocket,
            quic: self.quic,
            grpc: crate::GrpcPoint::of(&self.detail.grpc),
        }
    }
}

/// Latency percentiles of one second, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointLatency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl PointLatency {
    /// The percentiles of `h`.
    pub fn of(h: &LatencyHistogram) -> PointLatency {
        let s = h.summary();
        PointLatency {
            p50: s.p50_us,
            p90: s.p90_us,
            p99: s.p99_us,
            max: s.max_us,
        }
    }
}

/// What a change during the run set (`--dashboard`'s page and its control endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steer {
    /// The open loop's rate (requests/s, over the whole run).
    Rate,
    /// The closed loop's connections (over the whole run).
    Connections,
    /// Nothing more is due (open loop) or sent (closed loop) until a resume.
    Pause,
    /// Back to the value before the pause.
    Resume,
    /// The run stopped, its results kept.
    Stop,
}

impl Steer {
    pub fn name(self) -> &'static str {
        match self {
            Steer::Rate => "rate",
            Steer::Connections => "connections",
            Steer::Pause => "pause",
            Steer::Resume => "resume",
            Steer::Stop => "stop",
        }
    }
}

/// One change made during a run: when it took effect (seconds since the start), what, and
/// the value it set (the rate or the connections it left the run at).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub at_s: f64,
    pub what: Steer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2}s {}", self.at_s, self.what.name())?;
        match (self.what, self.value) {
            (Steer::Rate, Some(v)) => write!(f, " {}/s", crate::fmt::rate(v)),
            (_, Some(v)) => write!(f, " {}", crate::fmt::thousands(v.round() as u64)),
            (_, None) => Ok(()),
        }
    }
}

/// One second of the run, as the JSON result's `timeline` and `--jsonl` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the start: this point covers `[second, second + length_s)`.
    pub second: u64,
    pub length_s: f64,
    /// The second lies in the warm-up (its requests are not in the main statistics).
    pub warmup: bool,
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    /// Completed responses per second of this point.
    pub rps: f64,
    /// Complete responses by status class (`2xx`, `5xx`, ...; `other` for codes outside them).
    pub status_classes: BTreeMap<String, u64>,
    pub latency_us: PointLatency,
    /// This second's latency histogram ([`LatencyHistogram::encode`]), kept encoded (a few
    /// hundred bytes) so a long run's timeline stays small; `pelt merge` and `--hdr-log` use it.
    #[serde(default)]
    pub histogram: Option<String>,
    /// Time to first byte of the responses that completed in this second (absent from results
    /// written before pelt measured it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_us: Option<PointLatency>,
    /// Its histogram, encoded as `histogram` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfb_histogram: Option<String>,
    /// Streamed responses: the second's events, the streams that ended in it, and its time to
    /// first event and gaps (absent when no stream was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_streams: Option<crate::StreamPoint>,
    /// WebSocket runs: the second's upgrades, messages received (pushes among them), bytes,
    /// pings, pongs and sockets the server dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<crate::WsPoint>,
    /// HTTP/3 runs: what QUIC counted in the second (packets sent and lost, datagrams,
    /// congestion events, flow-control blocks, 0-RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<crate::QuicStats>,
    /// gRPC runs: the calls that ended in the second, and those OK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::GrpcPoint>,
    /// Connections open (or opening) at the end of the second, over all workers.
    #[serde(default)]
    pub connections: u64,
    /// Open loop: the requests that started in this second more than
    /// [`crate::LATE_THRESHOLD_US`] after their due time (what tells a queue in pelt).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u64,
    /// With `--stages`: what the stages asked for in this second: the mean arrival rate
    /// (requests/s, beside `sent / length_s`) or the active connections at its end (beside
    /// `connections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// What was changed during the run (`--dashboard`'s control) and took effect in this
    /// second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    /// The second's sampled requests, for the caller of `on_second` only (never serialized,
    /// never kept in the result's timeline).
    #[serde(skip)]
    pub samples: Vec<Sample>,
    /// Sampled requests left out of this second (over [`SAMPLES_PER_SECOND`] per worker).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub samples_dropped: u64,
    /// `--monitor`: the server's processes, the host and pelt over this second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::ResourceSample>,
    /// The second's codes, error kinds, bytes and lag, for the caller of `on_second` only
    /// (live metrics; never serialized, never kept in the result's timeline).
    #[serde(skip)]
    pub detail: Detail,
}

/// Seconds the timeline keeps one point each for: the run's last quarter of an hour.
pub const FINE_S: u64 = 900;
/// The coarse points' length when the timeline first coarsens, seconds.
pub const FIRST_GRAIN_S: u64 = 10;
/// The most coarse points the timeline keeps: past it, they merge in pairs.
pub const COARSE_MAX: usize = 720;

/// The run's timeline, its memory flat in the run's length: the last [`FINE_S`] seconds one
/// point each; before them, points [`FIRST_GRAIN_S`] seconds long, doubled in length (merged in
/// pairs) whenever they would be more than [`COARSE_MAX`]. A week is about 1,300 points.
///
/// Merging is exact: counts add and a coarse point's histogram is the sum of its seconds', so
/// percentiles over any span made of whole points are exact. A coarse point starts on a
/// multiple of its length; warm-up seconds never merge with measured ones. Resources merge as
/// [`ResourceSample::coarsen`](crate::ResourceSample::coarsen) says (CPU means, memory peaks,
/// counts summed).
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Closed coarse points, in time order.
    coarse: Vec<TimelinePoint>,
    /// The coarse point being filled: its figures so far, and its histogram kept decoded (its
    /// `histogram` is filled in when it closes); `exact` while every second had one.
    open: Option<Open>,
    /// The last `fine_s` seconds, one point each.
    fine: std::collections::VecDeque<TimelinePoint>,
    /// The coarse points' length, seconds.
    grain: u64,
    fine_s: u64,
    coarse_max: usize,
}

#[derive(Debug, Clone)]
struct Open {
    point: TimelinePoint,
    latency: LatencyHistogram,
    exact: bool,
    /// Time to first byte, while every second had its histogram.
    ttfb: Option<LatencyHistogram>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline::with_limits(FINE_S, FIRST_GRAIN_S, COARSE_MAX)
    }

    /// A timeline that keeps `fine_s` seconds whole and at most `coarse_max` coarse points,
    /// `grain_s` long at first (tests use small ones).
    pub fn with_limits(fine_s: u64, grain_s: u64, coarse_max: usize) -> Timeline {
        Timeline {
            coarse: Vec::new(),
            open: None,
            fine: std::collections::VecDeque::new(),
            grain: grain_s.max(1),
            fine_s,
            coarse_max: coarse_max.max(1),
        }
    }

    /// Adds the next second (later than every point so far); the seconds now older than the
    /// fine horizon join their coarse point.
    pub fn push(&mut self, point: TimelinePoint) {
        let newest = point.second;
        self.fine.push_back(point);
        while self
            .fine
            .front()
            .is_some_and(|p| newest - p.second >= self.fine_s)
        {
            if let Some(p) = self.fine.pop_front() {
                self.age(p);
            }
        }
    }

    /// Second `p` leaves the fine horizon for the coarse point of its grain.
    fn age(&mut self, mut p: TimelinePoint) {
        let bucket = |p: &TimelinePoint, grain: u64| (p.second / grain, p.warmup);
        if self
            .open
            .as_ref()
            .is_some_and(|o| bucket(&o.point, self.grain) != bucket(&p, self.grain))
        {
            self.close();
        }
        let decoded = p.histogram.take().map(|h| LatencyHistogram::decode(&h));
        let ttfb = p
            .ttfb_histogram
            .take()
            .and_then(|h| LatencyHistogram::decode(&h).ok());
        match &mut self.open {
            Some(o) => {
                match decoded {
                    Some(Ok(h)) => o.latency.merge(&h),
                    _ => o.exact = false,
                }
                o.ttfb = o.ttfb.take().zip(ttfb).map(|(mut a, b)| {
                    a.merge(&b);
                    a
                });
                o.point = fold(&[std::mem::replace(&mut o.point, p.clone()), p]);
            }
            None => {
                let exact = matches!(decoded, Some(Ok(_)));
                self.open = Some(Open {
                    latency: match decoded {
                        Some(Ok(h)) => h,
                        _ => LatencyHistogram::new(),
                    },
                    point: p,
                    exact,
                    ttfb,
                });
            }
        }
    }

    /// The open coarse point is complete: its histogram encoded, into the closed ones (merged
    /// with the last if the grain has grown over both).
    fn close(&mut self) {
        let Some(Open {
            mut point,
            latency,
            exact,
            ttfb,
        }) = self.open.take()
        else {
            return;
        };
        if exact {
            point.latency_us = PointLatency::of(&latency);
            point.histogram = Some(latency.encode());
        }
        if let Some(t) = ttfb {
            point.ttfb_us = Some(PointLatency::of(&t));
            point.ttfb_histogram = Some(t.encode());
        }
        let grain = self.grain;
        match self.coarse.last_mut() {
            Some(last)
                if last.second / grain == point.second / grain && last.warmup == point.warmup =>
            {
                *last = fold(&[std::mem::replace(last, point.clone()), point]);
            }
            _ => self.coarse.push(point),
        }
        while self.coarse.len() > self.coarse_max {
            self.grain *= 2;
            let grain = self.grain;
            let mut merged: Vec<TimelinePoint> = Vec::with_capacity(self.coarse.len() / 2 + 2);
            let mut rest = &self.coarse[..];
            while let Some(first) = rest.first() {
                let n = rest
                    .iter()
                    .take_while(|p| {
                        p.second / grain == first.second / grain && p.warmup == first.warmup
                    })
                    .count();
                merged.push(match &rest[..n] {
                    [one] => one.clone(),
                    many => fold(many),
                });
                rest = &rest[n..];
            }
            self.coarse = merged;
        }
    }

    /// Points held now (coarse, the one being filled, and the fine seconds).
    pub fn len(&self) -> usize {
        self.coarse.len() + usize::from(self.open.is_some()) + self.fine.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The points, in time order.
    pub fn into_points(mut self) -> Vec<TimelinePoint> {
        self.close();
        let mut points = self.coarse;
        points.extend(self.fine);
        points
    }

    /// The coarse points' length now, seconds.
    pub fn grain(&self) -> u64 {
        self.grain
    }
}

/// Consecutive points of one run as one: counts add, the histogram is their sum, the
/// connections are the last point's, the stages' target and the resources their means.
pub fn fold(points: &[TimelinePoint]) -> TimelinePoint {
    let (first, last) = (&points[0], &points[points.len() - 1]);
    let length_s = (last.second as f64 + last.length_s - first.second as f64).max(0.0);
    let mut latency = LatencyHistogram::new();
    let mut histograms = true;
    // Time to first byte: exact while every point has its histogram, else left out.
    let mut ttfb = Some(LatencyHistogram::new());
    let mut classes: BTreeMap<String, u64> = BTreeMap::new();
    for p in points {
        match p.histogram.as_deref().map(LatencyHistogram::decode) {
            Some(Ok(h)) => latency.merge(&h),
            _ => histograms = false,
        }
        match (
            &mut ttfb,
            p.ttfb_histogram.as_deref().map(LatencyHistogram::decode),
        ) {
            (Some(t), Some(Ok(h))) => t.merge(&h),
            _ => ttfb = None,
        }
        for (k, n) in &p.status_classes {
            *classes.entry(k.clone()).or_insert(0) += n;
        }
    }
    let sum = |f: fn(&TimelinePoint) -> u64| points.iter().map(f).sum::<u64>();
    let completed = sum(|p| p.completed);
    let weights: f64 = points.iter().map(|p| p.length_s).sum();
    let target = points.iter().any(|p| p.target.is_some()).then(|| {
        let t: f64 = points
            .iter()
            .map(|p| p.target.unwrap_or(0.0) * p.length_s)
            .sum();
        if weights > 0.0 {
            t / weights
        } else {
            last.target.unwrap_or(0.0)
        }
    });
    let resources: Vec<(&crate::ResourceSample, f64)> = points
        .iter()
        .filter_map(|p| p.resources.as_ref().map(|r| (r, p.length_s)))
        .collect();
    TimelinePoint {
        second: first.second,
        length_s,
        warmup: first.warmup,
        sent: sum(|p| p.sent),
        completed,
        errors: sum(|p| p.errors),
        rps: if length_s > 0.0 {
            completed as f64 / length_s
        } else {
            0.0
        },
        status_classes: classes,
        latency_us: if histograms {
            PointLatency::of(&latency)
        } else {
            // Without every histogram, no percentile is exact: the worst of each.
            let worst = |f: fn(&PointLatency) -> u64| {
                points.iter().map(|p| f(&p.latency_us)).max().unwrap_or(0)
            };
            PointLatency {
                p50: worst(|l| l.p50),
                p90: worst(|l| l.p90),
                p99: worst(|l| l.p99),
                max: worst(|l| l.max),
            }
        },
        histogram: histograms.then(|| latency.encode()),
        ttfb_us: ttfb.as_ref().map(PointLatency::of),
        ttfb_histogram: ttfb.as_ref().map(LatencyHistogram::encode),
        event_streams: crate::StreamPoint::join(points.iter().map(|p| p.event_streams.as_ref())),
        websocket: crate::WsPoint::join(points.iter().map(|p| p.websocket.as_ref())),
        quic: crate::QuicStats::join(points.iter().map(|p| p.quic.as_ref())),
        grpc: crate::GrpcPoint::join(points.iter().map(|p| p.grpc.as_ref())),
        connections: last.connections,
        late: sum(|p| p.late),
        target,
        changes: points.iter().flat_map(|p| p.changes.clone()).collect(),
        samples: Vec::new(),
        samples_dropped: sum(|p| p.samples_dropped),
        resources: (!resources.is_empty()).then(|| crate::ResourceSample::coarsen(&resources)),
        detail: Detail::default(),
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_seconds_coarsen_aligned_and_exact_and_warmup_apart() {
        let mut t = Timeline::with_limits(5, 2, 3);
        let mut all = LatencyHistogram::new();
        let mut most = 0;
        for k in 0..41u64 {
            let mut iv = Interval::new(k);
            iv.sent = k;
            iv.connections = k;
            iv.record_response(200, 100 + k * 10, 50 + k);
            if k >= 3 {
                all.record(100 + k * 10);
            }
            t.push(iv.point(1.0, k < 3));
            most = most.max(t.len());
        }
        // 5 fine, at most 3 coarse, the one being filled, and the warm-up's own.
        assert!(most <= 5 + 3 + 2, "{most}");
        let grain = t.grain();
        let points = t.into_points();
        for w in points.windows(2) {
            assert_eq!(w[0].second as f64 + w[0].length_s, w[1].second as f64);
        }
        let fine = &points[points.len() - 5..];
        assert_eq!(
            fine.iter().map(|p| p.second).collect::<Vec<_>>(),
            [36, 37, 38, 39, 40]
        );
        assert!(grain > 2, "{grain}");
        let coarse = &points[..points.len() - 5];
        // Warm-up seconds 0..3 are one point of their own; later points start on their grain.
        assert_eq!(
            (coarse[0].second, coarse[0].length_s, coarse[0].warmup),
            (0, 3.0, true)
        );
        assert!(coarse[1..].iter().all(|p| !p.warmup));
        assert_eq!(coarse[1].second, 3);
        assert!(
            coarse[2..].iter().all(|p| p.second % grain == 0),
            "{coarse:?}"
        );
        assert_eq!(
            points.iter().map(|p| p.sent).sum::<u64>(),
            (0..41).sum::<u64>()
        );
        // A coarse point's connections are its last second's.
        assert_eq!(coarse[1].connections, coarse[2].second - 1);
        let mut merged = LatencyHistogram::new();
        let mut ttfb = LatencyHistogram::new();
        for p in points.iter().filter(|p| !p.warmup) {
            merged.merge(&LatencyHistogram::decode(p.histogram.as_deref().unwrap()).unwrap());
            ttfb.merge(&LatencyHistogram::decode(p.ttfb_histogram.as_deref().unwrap()).unwrap());
        }
        assert_eq!(merged.summary(), all.summary());
        // Time to first byte folds as exactly, coarse points and all.
        assert_eq!(
            (ttfb.count(), ttfb.summary().min_us, ttfb.summary().max_us),
            (38, 53, 90)
        );
    }

    #[test]
    fn intervals_merge_and_summarize() {
        let mut a = Interval::new(3);
        a.sent = 3;
        a.record_response(200, 100, 40);
        a.record_response(503, 900, 800);
        a.errors = 1;
        let mut b = Interval::new(3);
        b.sent = 1;
        b.record_response(204, 300, 30);
        b.record_response(42, 10, 10);
        a.merge(&b);
        let p = a.point(0.5, false);
        assert_eq!((p.second, p.sent, p.completed, p.errors), (3, 4, 4, 1));
        assert_eq!(p.rps, 8.0);
        assert_eq!(p.status_classes["2xx"], 2);
        assert_eq!(p.status_classes["5xx"], 1);
        assert_eq!(p.status_classes["other"], 1);
        assert_eq!(p.latency_us.max, 900);
        assert_eq!(p.ttfb_us.map(|t| t.max), Some(800));
        assert!(!p.status_classes.contains_key("4xx"));
    }
}
