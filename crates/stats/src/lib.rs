//! pelt-stats: what a run measured, and the result document built from it.
//!
//! Each engine worker owns one [`WorkerStats`] and is its only writer: counters, status codes,
//! error kinds (with the first message of each kind), bytes, and an HDR latency histogram in
//! microseconds. At the end the workers' stats are merged with [`WorkerStats::merge`] (exact:
//! counts add, histograms add), and [`Report`] turns the merged stats into the document that
//! pelt prints and writes as JSON.
//!
//! ```
//! use pelt_stats::{ErrorKind, WorkerStats};
//! let mut a = WorkerStats::new();
//! a.sent = 2;
//! a.record_response(200, 150, 90);
//! a.record_error(ErrorKind::Timeout, || "no response within 10s".into());
//! let mut total = WorkerStats::new();
//! total.merge(&a);
//! assert_eq!(total.completed(), 1);
//! assert_eq!(total.errors.total(), 1);
//! ```
//!
//! Contracts: recording never allocates except the first message of an error kind; memory is
//! bounded whatever the run length; no I/O, no clock.

mod errors;
mod fleet;
pub mod fmt;
mod grpc;
mod histogram;
mod kinds;
mod merge;
mod quic;
mod report;
mod resources;
mod script;
mod streams;
mod targets;
mod timeline;
mod websocket;

pub use errors::{ErrorCodes, ErrorCounts, ErrorKind};
pub use fleet::{AgentReport, AgentState, FleetInfo};
pub use grpc::{GrpcPoint, GrpcReport, GrpcStats};
pub use histogram::{LatencyHistogram, LatencySummary, MAX_LATENCY_US};
pub use kinds::{Arrival, Http, Io, LatencyFrom, LoadModel, StopReason};
pub use merge::{check_mergeable, merge, merge_figures, merge_points};
pub use quic::QuicStats;
pub use report::{
    BytesReport, CaptureReport, CheckReport, HandshakesReport, Histograms, IterationsReport,
    OpenLoopReport, ReplayInfo, Report, RequestSetInfo, RequestsReport, RunInfo, ScenarioReport,
    SetFrom, SetOrder, SkippedInfo, StageInfo, StagesInfo, Threshold, TlsInfo, WarmupReport,
};
pub use resources::{
    Bottleneck, HostSample, HostSummary, LiveVerdict, Load, ProcessSample, ProcessSummary,
    ResourceSample, ResourcesReport, Sampled, Verdict, LIVE_WINDOW, QUEUED, SATURATED,
};
pub use script::{ScriptHistogram, ScriptMetrics, ScriptReport};
pub use streams::{
    GoodputReport, Slo, StreamEnd, StreamFigures, StreamHistograms, StreamPoint, StreamSecond,
    StreamStats, StreamsReport, TokensReport, Usage,
};
pub use targets::{busiest, Rest, TargetReport, TargetStats, MAX_TARGET_NAMES, OTHER};
pub use timeline::{
    fold, Change, Detail, Interval, PointLatency, Sample, Steer, TargetCounts, Timeline,
    TimelinePoint, COARSE_MAX, FINE_S, FIRST_GRAIN_S, SAMPLED_RESPONSE_MAX, SAMPLES_PER_SECOND,
};
pub use websocket::{WebSocketHistograms, WebSocketReport, WsPoint, WsStats};

/// A request that started this much after its due time counts as late (open loop).
pub const LATE_THRESHOLD_US: u64 = 1_000;

/// Counts per status code, indexed directly (no hashing on the hot path).
#[derive(Clone)]
pub struct StatusCounts {
    counts: Box<[u64; 1000]>,
}

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts {
            counts: Box::new([0; 1000]),
        }
    }
}

impl std::fmt::Debug for StatusCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl StatusCounts {
    /// Counts one response with `status` (100..=999; anything else is clamped into range).
    #[inline]
    pub fn record(&mut self, status: u16) {
        self.counts[(status as usize).min(999)] += 1;
    }

    /// The status codes seen, in ascending order, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(s, &n)| (s as u16, n))
    }

    /// All responses counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Responses counted with `status` (as [`record`](Self::record) clamps it).
    pub fn count(&self, status: u16) -> u64 {
        self.counts[(status as usize).min(999)]
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }
}

/// Everything one worker measured. The worker is the only writer; merged at the end.
#[derive(Debug, Clone)]
pub struct WorkerStats {
    /// Requests started (assigned to a connection). Each ends in exactly one outcome.
    pub sent: u64,
    /// Requests still unresolved when the run stopped.
    pub in_flight: u64,
    /// Complete responses, by status code.
    pub status: StatusCounts,
    /// Requests that ended in an error, by kind.
    pub errors: ErrorCounts,
    /// Connection-level problems not tied to any request (stray bytes after a response).
    pub connection_errors: ErrorCounts,
    /// The errors that came with a protocol's code (a stream reset, a QUIC close), by code.
    pub error_codes: ErrorCodes,
    /// Bytes written to and read from sockets.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// TCP connections opened (connect attempts that succeeded).
    pub connections_opened: u64,
    /// TLS handshakes completed in full, and resumed from a session.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// TLS handshake time, microseconds: from the connected socket to the finished handshake.
    pub handshake: LatencyHistogram,
    /// Latency of complete responses, microseconds: from the due time in open loop, from the
    /// first byte written in closed loop.
    pub latency: LatencyHistogram,
    /// Time to first byte of complete responses, microseconds: from where `latency` starts
    /// to the first byte of the response read.
    pub ttfb: LatencyHistogram,
    /// Open loop only: service time (completion - actual start), microseconds.
    pub service: LatencyHistogram,
    /// Open loop only: lag (actual start - due time) of every request started, microseconds.
    pub lag: LatencyHistogram,
    /// Open loop only: requests that started more than [`LATE_THRESHOLD_US`] after their due time.
    pub late: u64,
    /// Per target name (`--targets`; empty otherwise): the measured requests' figures.
    pub targets: Vec<TargetStats>,
    /// Streamed responses (made at the first stream's first event or end; `None`: none).
    pub streams: Option<Box<StreamStats>>,
    /// WebSocket runs: upgrades, messages received, pings, closes (`None`: not a ws:// run).
    pub websocket: Option<Box<WsStats>>,
    /// gRPC runs: calls by gRPC status, messages (`None`: not a grpc:// run).
    pub grpc: Option<Box<GrpcStats>>,
    /// HTTP/3 runs: QUIC's packets, losses and flow control (`None`: not an HTTP/3 run).
    pub quic: Option<Box<QuicStats>>,
    /// A response over HTTP/1.1 or HTTP/2 advertised HTTP/3 (`Alt-Svc: h3=...`).
    pub alt_svc_h3: bool,
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerStats {
    pub fn new() -> Self {
        WorkerStats {
            sent: 0,
            in_flight: 0,
            status: StatusCounts::default(),
            errors: ErrorCounts::default(),
            connection_errors: ErrorCounts::default(),
            error_codes: ErrorCodes::default(),
            bytes_sent: 0,
            bytes_received: 0,
            connections_opened: 0,
            handshakes_full: 0,
            handshakes_resumed: 0,
            alt_svc_h3: false,
            latency: LatencyHistogram::new(),
            ttfb: LatencyHistogram::new(),
            service: LatencyHistogram::new(),
            handshake: LatencyHistogram::new(),
            lag: LatencyHistogram::new(),
            late: 0,
            targets: Vec::new(),
            streams: None,
            websocket: None,
            grpc: None,
            quic: None,
        }
    }

    /// A complete response with `status`, `latency_us` after its first byte was written (or
    /// it was due), its first byte `ttfb_us` after.
    #[inline]
    pub fn record_response(&mut self, status: u16, latency_us: u64, ttfb_us: u64) {
        self.status.record(status);
        self.latency.record(latency_us);
        self.ttfb.record(ttfb_us);
    }

    /// Open loop: a request started `lag_us` after its due time.
    #[inline]
    pub fn record_lag(&mut self, lag_us: u64) {
        self.lag.record(lag_us);
        self.late += u64::from(lag_us > LATE_THRESHOLD_US);
    }

    /// A request that ended in an error; `message` is built only for the kind's first error.
    #[inline]
    pub fn record_error(&mut self, kind: ErrorKind, message: impl FnOnce() -> String) {
        self.errors.record(kind, message);
    }

    /// The stream figures, made on first use.
    #[inline]
    pub fn streams(&mut self) -> &mut StreamStats {
        self.streams.get_or_insert_with(Default::default)
    }

    /// The WebSocket figures, made on first use.
    #[inline]
    pub fn websocket(&mut self) -> &mut WsStats {
        self.websocket.get_or_insert_with(Default::default)
    }

    /// The gRPC figures, made on first use.
    #[inline]
    pub fn grpc(&mut self) -> &mut GrpcStats {
        self.grpc.get_or_insert_with(Default::default)
    }

    /// The QUIC figures, made on first use.
    #[inline]
    pub fn quic(&mut self) -> &mut QuicStats {
        self.quic.get_or_insert_with(Default::default)
    }

    /// Complete responses (all status codes).
    pub fn completed(&self) -> u64 {
        self.status.total()
    }

    /// Adds everything `other` measured to this.
    pub fn merge(&mut self, other: &WorkerStats) {
        self.sent += other.sent;
        self.in_flight += other.in_flight;
        self.status.merge(&other.status);
        self.errors.merge(&other.errors);
        self.connection_errors.merge(&other.connection_errors);
        self.error_codes.merge(&other.error_codes);
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.connections_opened += other.connections_opened;
        self.handshakes_full += other.handshakes_full;
        self.handshakes_resumed += other.handshakes_resumed;
        self.alt_svc_h3 |= other.alt_svc_h3;
        self.latency.merge(&other.latency);
        self.ttfb.merge(&other.ttfb);
        if self.targets.len() < other.targets.len() {
            self.targets
                .resize_with(other.targets.len(), TargetStats::default);
        }
        for (a, b) in self.targets.iter_mut().zip(&other.targets) {
            a.merge(b);
        }
        self.service.merge(&other.service);
        self.handshake.merge(&other.handshake);
        self.lag.merge(&other.lag);
        self.late += other.late;
        if let Some(s) = &other.streams {
            self.streams().merge(s);
        }
        if let Some(w) = &other.websocket {
            self.websocket().merge(w);
        }
        if let Some(g) = &other.grpc {
            self.grpc().merge(g);
        }
        if let Some(q) = &other.quic {
            self.quic().merge(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_every_field() {
        let mut a = WorkerStats::new();
        a.sent = 3;
        a.record_response(200, 100, 60);
        a.record_response(404, 300, 250);
        a.record_error(ErrorKind::Reset, || "reset by peer".into());
        a.bytes_sent = 10;
        let mut b = WorkerStats::new();
        b.sent = 2;
        b.in_flight = 1;
        b.record_response(200, 200, 20);
        b.record_error(ErrorKind::Reset, || "second message".into());
        b.bytes_received = 7;
        b.connections_opened = 4;
        b.record_lag(5_000);
        b.record_lag(10);
        b.service.record(40);
        let mut t = WorkerStats::new();
        t.merge(&a);
        t.merge(&b);
        assert_eq!(
            (t.sent, t.in_flight, t.completed(), t.errors.total()),
            (5, 1, 3, 2)
        );
        assert_eq!(
            t.status.iter().collect::<Vec<_>>(),
            vec![(200, 2), (404, 1)]
        );
        assert_eq!(
            t.errors.first_message(ErrorKind::Reset),
            Some("reset by peer")
        );
        assert_eq!(
            (t.bytes_sent, t.bytes_received, t.connections_opened),
            (10, 7, 4)
        );
        assert_eq!(t.latency.summary().max_us, 300);
        assert_eq!(t.latency.count(), 3);
        assert_eq!((t.ttfb.count(), t.ttfb.summary().max_us), (3, 250));
        assert_eq!((t.lag.count(), t.late, t.service.count()), (2, 1, 1));
    }

    #[test]
    fn status_codes_out_of_range_are_clamped_not_lost() {
        let mut s = StatusCounts::default();
        s.record(1200);
        s.record(200);
        assert_eq!(s.total(), 2);
    }
}
