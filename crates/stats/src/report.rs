//! The result document: what `--json` writes and the summary prints (docs/result-schema.json).

use crate::{
    Arrival, Http, Io, LatencyFrom, LatencyHistogram, LatencySummary, LoadModel, StopReason,
    TargetReport, TimelinePoint, WorkerStats, LATE_THRESHOLD_US,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the run was set up; the engine and CLI fill it in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// The target URL as given (credentials masked).
    pub target: String,
    pub method: String,
    pub connections: usize,
    pub threads: usize,
    pub keep_alive: bool,
    /// Which I/O backend ran (`io_uring` or `epoll`).
    pub io: Io,
    /// Requests in flight per connection (`--pipeline`; 1: no pipelining).
    pub pipeline: usize,
    /// The HTTP version spoken: `1.1` or `2`.
    pub http: Http,
    /// HTTP/2: concurrent streams per connection asked for (`--streams`; `null` for 1.1).
    pub streams: Option<usize>,
    /// New connections per second at the start (`--connect-rate`; `null`: unlimited).
    pub connect_rate: Option<f64>,
    /// HTTPS: how the server was verified and how sessions were used (`null` for http).
    pub tls: Option<TlsInfo>,
    /// `closed` (each connection sends its next request when a response completes) or `open`
    /// (requests are due on a fixed schedule, `--rate`).
    pub load_model: LoadModel,
    /// Open loop: requests per second asked for (with `stages`: their peak).
    pub rate: Option<f64>,
    /// Open loop: `constant` or `poisson` arrivals.
    pub arrival: Option<Arrival>,
    /// Open loop: the most connections pelt may open (`--max-connections`).
    pub max_connections: Option<usize>,
    /// Open loop: the batch window, microseconds (`--batch-window`; 0: none): requests due
    /// within one start together at its end.
    #[serde(default)]
    pub batch_window_us: Option<u64>,
    /// Warm-up before the measured part, seconds (0: none).
    pub warmup_s: f64,
    /// How long an interrupted run waits for requests in flight, seconds.
    pub grace_s: f64,
    /// The duration limit asked for, seconds (`null` when only -n was given).
    pub duration_limit_s: Option<f64>,
    /// The request-count limit asked for (`null` when only -d was given).
    pub requests_limit: Option<u64>,
    pub timeout_s: f64,
    /// Many requests (`--targets`, `--bodies`): where they came from and in which order
    /// (`null`: one request, the command line's).
    #[serde(default)]
    pub request_set: Option<RequestSetInfo>,
    /// `--unix-socket`: the socket connections went to instead of the URL's host and port.
    #[serde(default)]
    pub unix_socket: Option<String>,
    /// `--stages` (`null`: none): what they moved and how.
    #[serde(default)]
    pub stages: Option<StagesInfo>,
    /// `--replay` (`null`: none): the recording the due times came from.
    #[serde(default)]
    pub replay: Option<ReplayInfo>,
}

/// A replay: how many requests the recording holds, its span, and how it was played.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayInfo {
    /// Requests in the recording (sent once each without `laps`).
    pub recorded: u64,
    /// The recording's span: its first request to its last, seconds (recorded time).
    pub span_s: f64,
    /// Recorded time over replayed time (2: twice as fast).
    pub speed: f64,
    /// The recording started again at its end (`--replay-loop`).
    pub laps: bool,
}

/// A run's stages: `of` moves from `start` to each stage's target over its duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagesInfo {
    /// `rate` (open loop, requests per second) or `connections` (closed loop).
    pub of: String,
    /// The value before the first stage (`--rate`, or 0 connections).
    pub start: f64,
    pub stages: Vec<StageInfo>,
}

/// One stage: over `duration_s` seconds, move linearly to `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageInfo {
    pub duration_s: f64,
    pub target: f64,
}

/// Where a run's many requests came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetFrom {
    /// The command line's request, with templates.
    Url,
    /// `--targets`.
    Targets,
    /// `--bodies`.
    Bodies,
    /// `--scenario`: its steps, entry k step k.
    Scenario,
    /// `--prompts` or `--input-tokens`: an LLM benchmark's requests.
    Prompts,
}

impl SetFrom {
    /// As the JSON and the messages name it (`--targets`, `--bodies`).
    pub fn name(self) -> &'static str {
        match self {
            SetFrom::Url => "url",
            SetFrom::Targets => "targets",
            SetFrom::Bodies => "bodies",
            SetFrom::Scenario => "scenario",
            SetFrom::Prompts => "prompts",
        }
    }
}

/// The order a run's many requests are sent in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetOrder {
    /// Request i of the run sends entry i mod entries.
    Sequential,
    /// A draw per request from the seed.
    Random,
}

impl std::fmt::Display for SetOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SetOrder::Sequential => "sequential",
            SetOrder::Random => "random",
        })
    }
}

/// The requests of a run with many (`--targets` or `--bodies`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSetInfo {
    pub from: SetFrom,
    /// The file (`-`: standard input; `null`: given by a program).
    pub file: Option<String>,
    /// How many requests the set holds.
    pub entries: usize,
    pub order: SetOrder,
    /// With random order or templates: the seed (`--seed`, or the one chosen; give it to
    /// repeat the order and the `{{rand}}`/`{{uuid}}` values).
    pub seed: Option<u64>,
    /// The encoded requests' size in memory, bytes.
    pub encoded_bytes: usize,
    /// Entries of the file left out (`--skip-bad-lines`, a HAR file's other origins); absent
    /// when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<SkippedInfo>,
}

/// What a targets file held that the run left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkippedInfo {
    /// Lines (a HAR's entries) that did not parse, skipped with `--skip-bad-lines`.
    pub bad_lines: u64,
    /// The first of them: where, and what was wrong.
    pub first_bad: Option<String>,
    /// A HAR file's entries on other origins than `origin` (or not http/https).
    pub other_origins: u64,
    /// The recorded origin replayed (a HAR file), when it had entries on others.
    pub origin: Option<String>,
}

/// HTTPS settings of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlsInfo {
    /// `--insecure`: the server's certificate was NOT verified.
    pub insecure: bool,
    /// Session resumption was allowed (`false` with `--tls-full-handshake`).
    pub resumption: bool,
    /// Extra trusted certificates from `--cacert`, if any.
    pub cacert: Option<String>,
    /// The TLS version pinned with `--tls-version` (`null`: 1.2 or 1.3, as negotiated).
    pub version: Option<String>,
    /// The name sent as SNI and verified, when `--sni` overrides the URL's host.
    pub sni: Option<String>,
}

/// TLS handshakes of the measured part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HandshakesReport {
    pub full: u64,
    pub resumed: u64,
    /// From the connected socket to the finished handshake.
    pub time_us: LatencySummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestsReport {
    pub sent: u64,
    pub completed: u64,
    pub errors: u64,
    pub in_flight: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BytesReport {
    pub sent: u64,
    pub received: u64,
}

/// Open-loop figures: what closed-loop tools show, and pelt's own delay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenLoopReport {
    /// Completion - actual start (what closed-loop tools call latency), microseconds.
    pub service_time_us: LatencySummary,
    /// Actual start - due time: pelt's own delay (or waiting for a free connection).
    pub lag_us: LatencySummary,
    /// Requests that started more than `late_threshold_us` after they were due.
    pub late_requests: u64,
    pub late_threshold_us: u64,
    /// Requests that were due but never started when the run ended (all connections busy).
    pub backlog_at_end: u64,
}

impl OpenLoopReport {
    pub fn new(stats: &WorkerStats, backlog_at_end: u64) -> OpenLoopReport {
        OpenLoopReport {
            service_time_us: stats.service.summary(),
            lag_us: stats.lag.summary(),
            late_requests: stats.late,
            late_threshold_us: LATE_THRESHOLD_US,
            backlog_at_end,
        }
    }
}

/// What the warm-up sent and received: excluded from the main figures, never lost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WarmupReport {
    pub duration_s: f64,
    pub requests: RequestsReport,
    pub status: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub latency_us: LatencySummary,
}

impl WarmupReport {
    pub fn new(stats: &WorkerStats, duration_s: f64) -> WarmupReport {
        WarmupReport {
            duration_s,
            requests: RequestsReport::new(stats),
            status: status_map(stats),
            errors: error_map(stats),
            latency_us: stats.latency.summary(),
        }
    }
}

/// One `--expect` threshold and how the run fared against it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Threshold {
    /// As the user wrote it: `p99<20ms`.
    pub expect: String,
    /// The measured value in the expression's unit (`ms`, `%`, `/s`, `count`); null for a
    /// latency objective of a run without any complete response (it fails).
    pub actual: Option<f64>,
    pub unit: String,
    pub passed: bool,
}

impl RequestsReport {
    pub fn new(stats: &WorkerStats) -> RequestsReport {
        RequestsReport {
            sent: stats.sent,
            completed: stats.completed(),
            errors: stats.errors.total(),
            in_flight: stats.in_flight,
        }
    }
}

fn status_map(stats: &WorkerStats) -> BTreeMap<String, u64> {
    stats
        .status
        .iter()
        .map(|(s, n)| (s.to_string(), n))
        .collect()
}

fn error_map(stats: &WorkerStats) -> BTreeMap<String, u64> {
    stats
        .errors
        .iter()
        .map(|(k, n, _)| (k.name().to_string(), n))
        .collect()
}

/// The whole result of a run (serialized as the JSON result).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub pelt_version: String,
    #[serde(flatten)]
    pub info: RunInfo,
    /// Wall time from the first connection attempt to the stop, seconds.
    pub duration_s: f64,
    /// What ended the run: `duration`, `requests`, or `signal`.
    pub stopped_by: StopReason,
    /// The run was stopped by Ctrl-C or SIGTERM (the figures cover what ran).
    pub interrupted: bool,
    pub requests: RequestsReport,
    /// Completed responses per second of `duration_s`.
    pub rps: f64,
    /// Complete responses by status code.
    pub status: BTreeMap<String, u64>,
    /// Failed requests by error kind.
    pub errors: BTreeMap<String, u64>,
    /// The first message of each error kind.
    pub error_examples: BTreeMap<String, String>,
    /// What the user can do, for the error kinds seen that have a hint.
    pub error_hints: BTreeMap<String, String>,
    /// Connection-level problems that no request owned (bytes after a response), by kind.
    pub connection_errors: BTreeMap<String, u64>,
    /// The errors that came with a protocol's code, by kind and code: the HTTP/3 or HTTP/2
    /// code a server reset a stream with, the code a QUIC connection ended with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<String, BTreeMap<String, u64>>,
    pub latency_us: LatencySummary,
    /// Time to first byte of the complete responses: from where latency starts to the first
    /// byte of the response (`null` in results written before pelt measured it).
    #[serde(default)]
    pub ttfb_us: Option<LatencySummary>,
    /// Where latency is measured from: `send` (closed loop) or `due` (open loop).
    pub latency_from: LatencyFrom,
    /// Open loop only: service time, lag, late starts and the backlog.
    pub open_loop: Option<OpenLoopReport>,
    /// The warm-up's own figures, or null without --warmup.
    pub warmup: Option<WarmupReport>,
    /// One point per second of the run (warm-up included, marked).
    pub timeline: Vec<TimelinePoint>,
    /// The `--expect` thresholds and whether each held.
    pub thresholds: Vec<Threshold>,
    /// Plain-words remarks on how to read the figures (coordinated omission, pelt's own lag).
    pub notes: Vec<String>,
    pub bytes: BytesReport,
    /// Bytes per second of `duration_s`.
    pub throughput_bytes_per_s: BytesReport,
    pub connections_opened: u64,
    /// HTTPS only: handshakes completed in full and resumed.
    pub tls_handshakes: Option<HandshakesReport>,
    /// When the run started (its first connection attempt), milliseconds since the Unix epoch;
    /// `pelt merge` aligns timelines by it.
    #[serde(default)]
    pub started_unix_ms: u64,
    /// The HDR histograms behind the latency figures, so results merge without loss (absent
    /// from results written before pelt 0.2).
    #[serde(default)]
    pub histograms: Option<Histograms>,
    /// The results this one was merged from (`pelt merge`); empty for a single run.
    #[serde(default)]
    pub merged_from: Vec<String>,
    /// A fleet run (`--agents`): each agent's part and start; `null` for one process.
    #[serde(default)]
    pub fleet: Option<crate::FleetInfo>,
    /// Per target name (`--targets`), in the targets' order; empty otherwise. Their counts
    /// add up to `requests`.
    #[serde(default)]
    pub targets: Vec<TargetReport>,
    /// A scenario run (`--scenario`): its iterations and checks (its steps are `targets`);
    /// `null` otherwise.
    #[serde(default)]
    pub scenario: Option<ScenarioReport>,
    /// The server's, the host's and pelt's resources over the run, with a verdict on what
    /// limited it (`--monitor`); `null` when not sampled.
    #[serde(default)]
    pub resources: Option<crate::ResourcesReport>,
    /// Streamed responses (server-sent events, or every body with `--stream`): events, time
    /// to first event, gaps, per-stream figures; absent when no stream was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_streams: Option<crate::StreamsReport>,
    /// A WebSocket run (ws://, wss://): upgrades, sockets held and dropped, messages received
    /// (replies and pushes), pings, the server's close codes; absent otherwise. Its messages
    /// are the run's requests, their replies its responses (status 101).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<crate::WebSocketReport>,
    /// A gRPC run (grpc://, grpcs://): calls by gRPC status, with the first `grpc-message` of
    /// each, and the response messages received; absent otherwise. Its calls are the run's
    /// requests, booked with their HTTP status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::GrpcReport>,
    /// An HTTP/3 run: what QUIC counted underneath the requests (datagrams, packets sent and
    /// lost, congestion events, flow-control blocks each way); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<crate::QuicStats>,
    /// A run with a script (`-s`): the counters and histograms its `pelt.counter(name)` and
    /// `pelt.histogram(name)` kept, every thread's together; absent without a script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<crate::ScriptReport>,
    /// What was changed while the run went (`--dashboard`'s page or control endpoint), in
    /// order; each change is also on the timeline point of the second it took effect in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<crate::Change>,
}

/// What a scenario run's virtual users did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioReport {
    /// The scenario file.
    pub file: String,
    pub iterations: IterationsReport,
    /// Each check, by name, in the file's order.
    pub checks: Vec<CheckReport>,
    /// Each capture, by `step: variable`, in the file's order.
    pub captures: Vec<CaptureReport>,
}

/// Iterations (one pass of a user's flow): started, and of those ended, completed without a
/// failure or failed (a failed check or capture, a request that got no response, or a failed
/// login).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IterationsReport {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    /// The completed iterations' durations, from their first request's due time (open loop:
    /// the arrival, so a wait for a free user counts) to the end of their last response or
    /// think time (histogram: `histograms.iteration_us`).
    pub duration_us: LatencySummary,
}

/// A capture: the responses it found its value in, and those it found nothing in (each a
/// failed step).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CaptureReport {
    pub name: String,
    pub found: u64,
    pub missing: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckReport {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
}

/// The histograms of a result: HdrHistogram's compressed V2 encoding, base64, microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Histograms {
    /// Behind `latency_us`.
    pub latency_us: LatencyHistogram,
    /// Behind `ttfb_us`.
    #[serde(default)]
    pub ttfb_us: Option<LatencyHistogram>,
    /// Behind `open_loop.service_time_us` (open loop only).
    #[serde(default)]
    pub service_time_us: Option<LatencyHistogram>,
    /// Behind `open_loop.lag_us` (open loop only).
    #[serde(default)]
    pub lag_us: Option<LatencyHistogram>,
    /// Behind `tls_handshakes.time_us` (HTTPS only).
    #[serde(default)]
    pub handshake_us: Option<LatencyHistogram>,
    /// Behind `warmup.latency_us` (with --warmup only).
    #[serde(default)]
    pub warmup_latency_us: Option<LatencyHistogram>,
    /// Behind `scenario.iterations.duration_us` (scenario runs only).
    #[serde(default)]
    pub iteration_us: Option<LatencyHistogram>,
}

impl Report {
    /// Builds the document from merged stats.
    pub fn new(
        info: RunInfo,
        stats: &WorkerStats,
        duration_s: f64,
        stopped_by: StopReason,
    ) -> Report {
        let completed = stats.completed();
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        Report {
            pelt_version: env!("CARGO_PKG_VERSION").to_string(),
            resources: None,
            info,
            duration_s,
            stopped_by,
            interrupted: stopped_by == StopReason::Signal,
            requests: RequestsReport::new(stats),
            rps: per_s(completed),
            status: status_map(stats),
            errors: error_map(stats),
            error_examples: stats
                .errors
                .iter()
                .map(|(k, _, m)| (k.name().to_string(), m.to_string()))
                .collect(),
            error_hints: stats
                .errors
                .iter()
                .filter_map(|(k, _, _)| Some((k.name().to_string(), k.hint()?.to_string())))
                .collect(),
            error_codes: stats.error_codes.to_map(),
            connection_errors: stats
                .connection_errors
                .iter()
                .map(|(k, n, _)| (k.name().to_string(), n))
                .collect(),
            latency_us: stats.latency.summary(),
            ttfb_us: Some(stats.ttfb.summary()),
            latency_from: LatencyFrom::Send,
            open_loop: None,
            warmup: None,
            timeline: Vec::new(),
            thresholds: Vec::new(),
            notes: Vec::new(),
            bytes: BytesReport {
                sent: stats.bytes_sent,
                received: stats.bytes_received,
            },
            throughput_bytes_per_s: BytesReport {
                sent: per_s(stats.bytes_sent) as u64,
                received: per_s(stats.bytes_received) as u64,
            },
            connections_opened: stats.connections_opened,
            tls_handshakes: None,
            started_unix_ms: 0,
            histograms: Some(Histograms {
                latency_us: stats.latency.clone(),
                ttfb_us: Some(stats.ttfb.clone()),
                service_time_us: None,
                lag_us: None,
                handshake_us: None,
                warmup_latency_us: None,
                iteration_us: None,
            }),
            merged_from: Vec::new(),
            fleet: None,
            targets: Vec::new(),
            scenario: None,
            event_streams: stats.streams.as_ref().map(|s| s.report(duration_s)),
            websocket: stats.websocket.as_ref().map(|w| w.report(duration_s)),
            grpc: stats.grpc.as_ref().map(|g| g.report()),
            quic: stats.quic.as_deref().copied(),
            script: None,
            changes: Vec::new(),
        }
    }
}

#[cfg(test)]
impl RunInfo {
    /// A closed loop of 2 connections for 2 s, for tests.
    pub(crate) fn example() -> RunInfo {
        RunInfo {
            target: "http://127.0.0.1:1/".into(),
            method: "GET".into(),
            connections: 2,
            threads: 1,
            keep_alive: true,
            io: crate::Io::Epoll,
            pipeline: 1,
            http: crate::Http::Http1,
            streams: None,
            connect_rate: None,
            tls: None,
            load_model: crate::LoadModel::Closed,
            rate: None,
            arrival: None,
            max_connections: None,
            batch_window_us: None,
            warmup_s: 0.0,
            grace_s: 1.0,
            duration_limit_s: Some(2.0),
            requests_limit: None,
            request_set: None,
            unix_socket: None,
            stages: None,
            replay: None,
            timeout_s: 10.0,
        }
    }
}
