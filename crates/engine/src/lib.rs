//! pelt-engine: the load engine. Workers, connections, event loops and load models.
//!
//! [`run`] takes a validated [`Config`] (target address, the request bytes built once, limits)
//! and drives the load: one shared-nothing worker thread per core, each owning its connections,
//! its buffers and its [`pelt_stats::WorkerStats`]; no lock, channel or allocation per request.
//! When every worker has stopped, their stats are merged into one.
//!
//! ```no_run
//! use pelt_engine::{Config, run};
//! use std::sync::atomic::AtomicBool;
//! let addr = "127.0.0.1:8080".parse().unwrap();
//! let request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".to_vec();
//! let cfg = Config { requests: Some(1000), duration: None, ..Config::new(addr, request) };
//! let result = run(&cfg, &AtomicBool::new(false), &mut |_second| {});
//! assert_eq!(result.stats.sent, 1000);
//! ```
//!
//! Each worker hands the main thread its counts once a second (one message per worker per
//! second, never per request); [`run`] merges them into a per-second [`TimelinePoint`] and
//! calls the caller's `on_second` with it on the calling thread, for a live view or a stream.
//!
//! Contracts: the engine never prints, never reads argv or the environment, never exits the
//! process. Errors from the server are data (counted by kind, the connection replaced), never
//! a reason to stop. Every request it starts ends in exactly one outcome: a response, an
//! error, or in flight when the run stopped, so
//! `sent == completed + errors + in_flight` holds for every run. `requests: Some(n)` sends
//! exactly `n` requests.

mod backend;
mod choice;
mod conn;
mod control;
mod epoll;
#[cfg(test)]
mod fake;
mod feed;
pub mod hooks;
mod ledger;
mod load;
mod model;
mod quic;
mod replay;
mod requests;
pub mod scenario;
mod schedule;
mod stages;
mod stream;
pub mod template;
mod uring;
mod worker;

use ledger::Published;
use pelt_stats::{Interval, TimelinePoint, WorkerStats};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

pub use choice::IoBackend;
pub use control::{Control, LEAD as CONTROL_LEAD};
pub use feed::{Block, Feed, Source as FeedSource, BLOCK as FEED_BLOCK, BLOCKS as FEED_BLOCKS};
pub use load::{Load, OpenLoop, Pace};
pub use pelt_stats::{Arrival, StopReason};
pub use quic::Verifier as QuicVerifier;
pub use replay::{Replay, SPEED_RANGE as REPLAY_SPEEDS};
pub use requests::{Order, RequestSet};
pub use schedule::Rate;
pub use stages::{Ramped, Stage, Stages, MAX_STAGE_CONNECTIONS};
pub use stream::{Streams, DEFAULT_STREAM_TIME};

/// Connections when none are asked for (as oha and hey).
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Run length when neither a duration nor a request count is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Whole-request timeout: from the first byte written to the last byte of the response.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connection establishment timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection waits before trying again after a failed connect (no busy loop
/// against a closed port).
pub const RECONNECT_BACKOFF: Duration = Duration::from_millis(50);
/// How long an interrupted run waits for requests in flight.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);
/// File descriptors pelt keeps for itself besides one per connection.
pub const RESERVED_FDS: u64 = 64;
/// The open loop's batch window by default ([`OpenLoop::batch_window`]): short enough that
/// pelt's lag stays well under the report's 1 ms warning, long enough to wake once for
/// several requests and responses at higher rates.
pub const DEFAULT_BATCH_WINDOW: Duration = Duration::from_micros(100);

/// Checks that `path` can be a Unix socket's address (it fits `sun_path`, no NUL byte) and
/// that a socket is there to connect to; the error is one line.
pub fn check_unix_socket(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    rustix::net::SocketAddrUnix::new(path)
        .map_err(|_| format!("--unix-socket {shown}: not a usable socket path (too long?)"))?;
    let meta = std::fs::metadata(path).map_err(|e| format!("--unix-socket {shown}: {e}"))?;
    if !meta.file_type().is_socket() {
        return Err(format!("--unix-socket {shown}: not a socket"));
    }
    Ok(())
}

/// Worker threads when none are asked for: the CPUs this process may run on.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Everything the engine needs, validated by the caller.
#[derive(Debug, Clone)]
pub struct Config {
    /// Resolved target address.
    pub addr: SocketAddr,
    /// Per worker of this process, the address it connects to instead (a script's `setup`
    /// set `thread.addr`, as wrk's `addr.lua` does); empty: every worker connects to `addr`.
    pub worker_addrs: Vec<SocketAddr>,
    /// The request, encoded once; every connection writes these bytes (with `Requests::One`).
    pub request: Vec<u8>,
    /// Where the requests come from: the one request, a set, a file read as the run goes, or
    /// a scenario's steps.
    pub requests_from: Requests,
    /// The request is a HEAD request (its responses carry no body).
    pub head_request: bool,
    /// Keep connections open between requests (`false`: one request per connection).
    pub keep_alive: bool,
    /// Concurrent connections in total (spread over the threads).
    pub connections: usize,
    /// Worker threads (at most `connections` are used).
    pub threads: usize,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after exactly this many requests have ended.
    pub requests: Option<u64>,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Which I/O backend runs the workers.
    pub io: IoBackend,
    /// The load model: closed loop, or open loop with its pace (a rate, rate stages, a
    /// replay's times), spacing, added connections and batch window.
    pub load: Load,
    /// Sent but not measured, before the measured part (which `duration` and `requests` count).
    pub warmup: Duration,
    /// After a stop signal, how long to wait for requests in flight.
    pub grace: Duration,
    /// New connections per second at the start, over all workers (`None`: as fast as they
    /// connect).
    pub connect_rate: Option<f64>,
    /// Connect to this Unix socket instead of `addr` (`--unix-socket`; the URL still gives
    /// the Host header and the path). Check it first with [`check_unix_socket`].
    pub unix_socket: Option<std::path::PathBuf>,
    /// HTTPS: the TLS client settings and the name the server must prove (`None`: http).
    pub tls: Option<TlsClient>,
    /// What the connections speak: HTTP/1.1 (and its pipelining), HTTP/2 or WebSocket.
    pub wire: Wire,
    /// Sample every this many measured requests that end, per worker (`None`: none): each
    /// second's point then carries them to `on_second` ([`pelt_stats::Sample`], at most
    /// [`pelt_stats::SAMPLES_PER_SECOND`] per worker, the rest counted as dropped).
    pub sample_every: Option<u64>,
    /// Sampled requests keep their responses' bytes, head and body (HTTP/1.1; Node.js's
    /// loadtest `statusCallback`). Off: no response byte is copied.
    pub sample_responses: bool,
    /// One process's part of a run spread over several (a fleet): `None` runs it all here.
    pub slice: Option<Slice>,
    /// How streamed responses (server-sent events) are read: `--stream`, its limit and end
    /// marker.
    pub streams: Streams,
    /// Changes while the run goes (`--dashboard`): `None`, the run is as configured.
    pub control: Option<Arc<Control>>,
}

/// A fleet run is one run whose workers live in several processes: this process runs workers
/// `first .. first + threads` of `workers` in all. The config's figures (connections,
/// `--max-connections`, `-n`, the rate and its stages, `--connect-rate`) are then the whole
/// fleet's, and each worker takes the share it would take as a thread of one process: the
/// shares add up exactly over the fleet, request *i* of the open-loop schedule goes to the
/// same worker wherever it runs, and `--order sequential` and `{{seq}}` count over all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub first: usize,
    pub workers: usize,
}

impl Slice {
    /// Checks that this process's `threads` workers fit in the fleet, and that every worker of
    /// the fleet gets a connection (as `effective_threads` ensures in one process).
    pub fn check(&self, threads: usize, connections: usize) -> Result<(), String> {
        if threads == 0 || self.first + threads > self.workers {
            return Err(format!(
                "workers {}..{} are not within the fleet's {}",
                self.first,
                self.first + threads,
                self.workers
            ));
        }
        if connections < self.workers {
            return Err(format!(
                "{connections} connections cannot give each of the fleet's {} workers one",
                self.workers
            ));
        }
        Ok(())
    }

    /// This process's exact part of a fleet-wide count (connections, `-n`): the sum of its
    /// `threads` workers' shares. The parts of all processes add up to `total`.
    pub fn part(&self, total: u64, threads: usize) -> u64 {
        (self.first..self.first + threads)
            .map(|w| share(total, self.workers, w))
            .sum()
    }

    /// This process's fraction of the fleet's workers, for rates (its part of the schedule, to
    /// within one request).
    pub fn fraction(&self, threads: usize) -> f64 {
        threads as f64 / self.workers as f64
    }

    /// The most requests this process's `threads` workers could have started by `elapsed`
    /// after their start under `config`: their part of the open loop's schedule (constant
    /// arrivals: exact; Poisson's come near it), at most their part of `-n`; in the closed loop
    /// only their part of `-n`. `None` where nothing bounds it: a closed loop without `-n`, or a
    /// recording read as the run goes without it.
    pub fn started_at_most(
        &self,
        config: &Config,
        threads: usize,
        elapsed: Duration,
    ) -> Option<u64> {
        let limit = config.requests.map(|n| self.part(n, threads));
        let Some(open) = config.load.open_loop() else {
            return limit;
        };
        // A recording read as the run goes: its times are in its blocks, not here.
        if config.load.replay().is_some() && config.feed().is_some() {
            return limit;
        }
        let elapsed_ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let pace = || open.pace.schedule();
        let due: u64 = (self.first..self.first + threads)
            .map(|w| {
                schedule::Schedule::new(pace(), Arrival::Constant, w, self.workers)
                    .due_by(elapsed_ns)
            })
            .sum();
        Some(limit.map_or(due, |n| n.min(due)))
    }
}

/// Where a run's requests come from: one of five.
#[derive(Debug, Clone, Default)]
pub enum Requests {
    /// `Config::request`, every time.
    #[default]
    One,
    /// Many requests (`--targets`, `--bodies`), each encoded once. Every entry goes to
    /// `Config::addr`. With HTTP/2, `Http2::targets` holds them as HTTP/2 sends them, in the
    /// same order.
    Set(RequestSet),
    /// A targets file read as the run goes (`feed.rs`): its entries, encoded, come from `feed`,
    /// and `names` are the per-target names their name numbers index. A replay's `Load` has
    /// the recording's length and span but no times; plain targets loop, and the source ends
    /// after `Config::requests`. HTTP/1.1 only.
    Fed {
        feed: std::sync::Arc<Feed>,
        names: Vec<String>,
    },
    /// A scenario (`--scenario`): each connection is a virtual user running the program, and
    /// `steps` holds each step's request, by step id.
    Scenario {
        steps: RequestSet,
        run: std::sync::Arc<scenario::ScenarioRun>,
    },
    /// A script's hooks (`hooks.rs`): each worker makes its own, and its `request()` writes
    /// each request's bytes (HTTP/1.1 text; over HTTP/2 each is a stream). `offered`: the
    /// targets or templates the run would send without the script, each request's entry
    /// rendered and offered to `request()` (`pelt.next()`); `None`: `Config::request` is.
    Scripted {
        maker: std::sync::Arc<dyn hooks::HookMaker>,
        offered: Option<std::sync::Arc<RequestSet>>,
    },
}

impl Config {
    /// The requests' set: the targets, or a scenario's steps.
    #[inline]
    pub fn targets(&self) -> Option<&RequestSet> {
        match &self.requests_from {
            Requests::Set(set) | Requests::Scenario { steps: set, .. } => Some(set),
            Requests::One | Requests::Fed { .. } | Requests::Scripted { .. } => None,
        }
    }

    /// A targets file read as the run goes.
    #[inline]
    pub fn feed(&self) -> Option<&std::sync::Arc<Feed>> {
        match &self.requests_from {
            Requests::Fed { feed, .. } => Some(feed),
            _ => None,
        }
    }

    /// With a feed, the per-target names its entries' name numbers index (none otherwise).
    pub fn names(&self) -> &[String] {
        match &self.requests_from {
            Requests::Fed { names, .. } => names,
            _ => &[],
        }
    }

    /// The scenario's program and users' settings.
    #[inline]
    pub fn scenario(&self) -> Option<&std::sync::Arc<scenario::ScenarioRun>> {
        match &self.requests_from {
            Requests::Scenario { run, .. } => Some(run),
            _ => None,
        }
    }

    /// A script's hooks.
    #[inline]
    pub fn script(&self) -> Option<&std::sync::Arc<dyn hooks::HookMaker>> {
        match &self.requests_from {
            Requests::Scripted { maker, .. } => Some(maker),
            _ => None,
        }
    }

    /// The entries a script's `request()` is offered (see `Requests::Scripted`).
    #[inline]
    pub fn offered(&self) -> Option<&RequestSet> {
        match &self.requests_from {
            Requests::Scripted { offered, .. } => offered.as_deref(),
            _ => None,
        }
    }
}

/// What the connections speak: one of three, each with what only it needs.
#[derive(Debug, Clone)]
pub enum Wire {
    /// HTTP/1.1, with `pipeline` requests in flight per connection (1: none), written
    /// together (wrk's pipelining).
    Http1 { pipeline: usize },
    /// HTTP/2: the request as HTTP/2 sends it, and streams per connection.
    Http2(Http2),
    /// WebSocket: the upgrade and the messages.
    WebSocket(WebSocket),
    /// HTTP/3 over QUIC: the requests as their streams carry them, streams per connection,
    /// and QUIC's TLS.
    Http3(Http3),
}

impl Default for Wire {
    fn default() -> Wire {
        Wire::Http1 { pipeline: 1 }
    }
}

impl Config {
    /// HTTP/1.1's requests in flight per connection (1 for the other protocols).
    #[inline]
    pub fn pipeline(&self) -> usize {
        match self.wire {
            Wire::Http1 { pipeline } => pipeline.max(1),
            Wire::Http2(_) | Wire::WebSocket(_) | Wire::Http3(_) => 1,
        }
    }

    /// The HTTP/2 request and streams, on an HTTP/2 run.
    #[inline]
    pub fn http2(&self) -> Option<&Http2> {
        match &self.wire {
            Wire::Http2(h2) => Some(h2),
            Wire::Http1 { .. } | Wire::WebSocket(_) | Wire::Http3(_) => None,
        }
    }

    /// The upgrade and messages, on a WebSocket run.
    #[inline]
    pub fn websocket(&self) -> Option<&WebSocket> {
        match &self.wire {
            Wire::WebSocket(ws) => Some(ws),
            Wire::Http1 { .. } | Wire::Http2(_) | Wire::Http3(_) => None,
        }
    }

    /// The requests and streams, on an HTTP/3 run.
    #[inline]
    pub fn http3(&self) -> Option<&Http3> {
        match &self.wire {
            Wire::Http3(h3) => Some(h3),
            Wire::Http1 { .. } | Wire::Http2(_) | Wire::WebSocket(_) => None,
        }
    }
}

/// An HTTP/3 run's requests, concurrency and TLS (`Config::tls` is TLS over TCP's: `None`).
#[derive(Debug, Clone)]
pub struct Http3 {
    /// Each request as its stream carries it, built once: a HEADERS frame (QPACK's static
    /// table, [`pelt_codec::h3::encode_headers`]) and a DATA frame with its body, if any. One
    /// for a run of one request; with `Config::targets`, each entry's, in the same order.
    pub requests: Vec<Vec<u8>>,
    /// Concurrent streams per connection (the server's stream limit lowers it).
    pub streams: usize,
    /// QUIC's TLS 1.3 client: its ALPN offers `h3`.
    pub tls: TlsClient,
}

/// An HTTP/2 run's request and concurrency. `request` and `pipeline` are unused then.
#[derive(Debug, Clone)]
pub struct Http2 {
    /// The request's header block, encoded once ([`pelt_codec::h2::encode_headers`]).
    pub header_block: Vec<u8>,
    /// The request body, sent in DATA frames as the server's flow control allows.
    pub body: Vec<u8>,
    /// Concurrent streams per connection (the server's SETTINGS_MAX_CONCURRENT_STREAMS
    /// lowers it). Closed loop: a stream restarts as soon as it completes.
    pub streams: usize,
    /// With `Config::targets`: each entry's header block and body, in the same order
    /// (`header_block` and `body` are unused then).
    pub targets: Vec<H2Request>,
    /// gRPC: the streams are calls, their responses read as gRPC's (`None`: plain HTTP/2).
    pub grpc: Option<Grpc>,
}

/// A gRPC run's calls (grpc://, grpcs://): HTTP/2 streams whose requests carry framed
/// messages (built by the caller) and whose responses end with a `grpc-status`. Each call
/// ends with one gRPC status, counted in [`pelt_stats::GrpcStats`].
#[derive(Debug, Clone)]
pub struct Grpc {
    /// The longest response message taken; a longer one ends its call with
    /// `RESOURCE_EXHAUSTED` (as grpc-go's client does at its 4 MiB default).
    pub max_message: u32,
    /// The method answers with a stream of messages: each is timed as a stream's event (time
    /// to the first, the gaps, messages per call, in the `event_streams` figures), and
    /// `--stream-limit` cuts a call (`CANCELLED`).
    pub server_streaming: bool,
    /// Templates: a call's message as rendered (its JSON) made into the framed binary one, for
    /// each stream whose request is rendered from a template (`None`: no template).
    pub encoder: Option<std::sync::Arc<dyn MessageCodec>>,
    /// A scenario's calls: each step's method (by step number, the request set's entry), which
    /// makes its rendered JSON a message and, for a step whose captures or checks read the
    /// reply, its reply JSON. Empty: every call is `encoder`'s.
    pub steps: Vec<std::sync::Arc<dyn MessageCodec>>,
    /// A bidirectional method's calls send each message once the one before is answered (a
    /// reply message came): the first with the call's head, the last with its half-close.
    /// The replies are timed as stream events, so each gap is a message's round trip. `false`:
    /// every message at once (ghz's way).
    pub ping_pong: bool,
}

impl Grpc {
    /// The codec of entry `target`'s messages (`None`: its messages are framed already).
    #[inline]
    pub fn codec(&self, target: u32) -> Option<&dyn MessageCodec> {
        match self.steps.is_empty() {
            true => self.encoder.as_deref(),
            false => self.steps.get(target as usize).map(|c| &**c),
        }
    }
}

impl Default for Grpc {
    fn default() -> Grpc {
        Grpc {
            max_message: pelt_codec::grpc::DEFAULT_MAX_MESSAGE,
            server_streaming: false,
            encoder: None,
            steps: Vec::new(),
            ping_pong: false,
        }
    }
}

/// A gRPC method's messages as the caller's schema reads them (the engine knows none).
///
/// `encode` makes a call's message from its rendered text (a template's JSON) and frames it
/// for the wire: called once per distinct rendered text on each worker (each keeps what it
/// made, up to [`MESSAGES_KEPT`]), on the worker's thread. `decode` makes a scenario step's
/// reply JSON, for its captures and checks: called only for a step that reads its reply.
pub trait MessageCodec: Send + Sync + std::fmt::Debug {
    /// Appends the framed message `text` describes to `out`; an error says why it cannot.
    fn encode(&self, text: &[u8], out: &mut Vec<u8>) -> Result<(), String>;
    /// Appends a reply's JSON to `out`, from its framed messages (`body`, the response's DATA
    /// as it came): one message's object, or a server stream's messages as an array.
    fn decode(&self, body: &[u8], out: &mut String) -> Result<(), String>;
}

/// The most distinct rendered messages a worker keeps encoded (`{{rand:1:100}}` is 100 of
/// them; `{{seq}}` makes each call's anew once they are kept).
pub const MESSAGES_KEPT: usize = 4096;

impl Http2 {
    /// Whether any request has a body (DATA frames may wait for flow control).
    pub fn has_body(&self) -> bool {
        !self.body.is_empty() || self.targets.iter().any(|t| !t.body.is_empty())
    }
}

/// A WebSocket run (ws://, wss://): the upgrade, and what each socket sends. `request`,
/// `pipeline` and `http2` are unused then.
#[derive(Debug, Clone)]
pub struct WebSocket {
    /// The upgrade request, built once; each connection writes it with its own key.
    pub handshake: pelt_codec::ws::Handshake,
    /// The subprotocols asked for (`Sec-WebSocket-Protocol`; empty: none).
    pub protocols: String,
    /// The messages' payloads (a request is a message, its reply the response): one for every
    /// message, or one per entry of the request set (`--bodies`), taken by the request's
    /// index; empty: no messages: every socket connects at once, upgrades and is held.
    pub messages: Vec<Vec<u8>>,
    /// Messages go as binary frames (else text).
    pub binary: bool,
    /// Each message awaits a reply (else it is done when written, and every message received
    /// is a push).
    pub expect_reply: bool,
    /// Ping each upgraded socket this often.
    pub ping: Option<Duration>,
    /// The longest message the server may send.
    pub max_message: u64,
}

/// One request as HTTP/2 sends it.
#[derive(Debug, Clone)]
pub struct H2Request {
    pub header_block: Vec<u8>,
    pub body: Vec<u8>,
}

/// What a worker needs to speak TLS: the rustls config (roots, resumption, ALPN) and the
/// server name to verify and send as SNI.
#[derive(Debug, Clone)]
pub struct TlsClient {
    pub config: std::sync::Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl Config {
    /// A config with the defaults for everything but the target and the request.
    pub fn new(addr: SocketAddr, request: Vec<u8>) -> Config {
        Config {
            addr,
            worker_addrs: Vec::new(),
            request,
            requests_from: Requests::One,
            head_request: false,
            keep_alive: true,
            connections: DEFAULT_CONNECTIONS,
            threads: default_threads(),
            duration: Some(DEFAULT_DURATION),
            requests: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            io: IoBackend::Epoll,
            load: Load::default(),
            warmup: Duration::ZERO,
            grace: DEFAULT_GRACE,
            connect_rate: None,
            tls: None,
            unix_socket: None,
            wire: Wire::default(),
            sample_every: None,
            sample_responses: false,
            slice: None,
            streams: Streams::default(),
            control: None,
        }
    }

    /// The address worker `worker` (numbered over the run, as `WorkerPlan::worker`)
    /// connects to.
    pub fn addr_of(&self, worker: usize) -> SocketAddr {
        let first = self.slice.map_or(0, |s| s.first);
        *self
            .worker_addrs
            .get(worker.wrapping_sub(first))
            .unwrap_or(&self.addr)
    }

    /// Worker threads that will actually run (with a [`Slice`], its threads as given).
    pub fn effective_threads(&self) -> usize {
        match self.slice {
            Some(_) => self.threads.max(1),
            None => self.threads.clamp(1, self.connections.max(1)),
        }
    }
}

/// The merged outcome of a run.
#[derive(Debug)]
pub struct RunResult {
    /// Requests started after the warm-up.
    pub stats: WorkerStats,
    /// Requests started during the warm-up (`None` without one).
    pub warmup: Option<WorkerStats>,
    /// One point per second, in order.
    pub timeline: Vec<TimelinePoint>,
    /// Wall-clock time of the start (the run's second 0).
    pub started_at: std::time::SystemTime,
    /// From the start of the workers to the last one stopping.
    pub elapsed: Duration,
    /// The measured part: `elapsed` less the warm-up.
    pub measured: Duration,
    pub stopped_by: StopReason,
    /// The backend that ran.
    pub io: IoBackend,
    /// Open loop: requests that were due but had not started when the run stopped.
    pub backlog_at_end: u64,
    /// Scenarios: what the users did, over all workers.
    pub scenario: Option<scenario::ScenarioCounts>,
    /// What was changed while the run went (`Config::control`), in order.
    pub changes: Vec<pelt_stats::Change>,
}

/// One worker's share of the run.
#[derive(Debug)]
pub(crate) struct WorkerPlan {
    pub worker: usize,
    pub workers: usize,
    pub connections: usize,
    /// Open loop: connections this worker may open at most.
    pub max_connections: usize,
    /// Measured requests this worker may start (`None`: unlimited).
    pub budget: Option<u64>,
    pub start: Instant,
    pub end: Option<Instant>,
    /// This worker's share of `--connect-rate`, per second.
    pub connect_rate: Option<f64>,
    pub tx: Sender<Published>,
    /// The run's clock: `start` and `end` are moved to when every worker is ready.
    pub clock: Arc<Clock>,
    /// A streamed replay: the blocks of the recording, from its reader.
    pub feed: Option<mpsc::Receiver<Arc<feed::Block>>>,
}

impl WorkerPlan {
    /// Waits for every worker to be set up, then moves `start` (and `end` with it) to the
    /// run's start, read from `now` by the first to get there; returns it.
    pub fn begin(&mut self, now: impl FnOnce() -> Instant) -> Instant {
        let start = self.clock.sync(now);
        let shift = start.saturating_duration_since(self.start);
        self.start = start;
        self.end = self.end.map(|e| e + shift);
        start
    }
}

/// Where a run's time starts: when every worker has built what it needs (its I/O, buffers,
/// connections' state and figures) and can send. A clock started before that would have the
/// first requests of an open loop due while their worker was still setting up (18 ms with
/// 15,000 targets on io_uring), late through no fault of the server.
#[derive(Debug)]
pub(crate) struct Clock {
    ready: Barrier,
    start: OnceLock<Instant>,
}

impl Clock {
    /// A clock for `parties` threads (the workers, and the thread that runs them).
    pub fn new(parties: usize) -> Clock {
        Clock {
            ready: Barrier::new(parties),
            start: OnceLock::new(),
        }
    }

    /// Waits for every party, then returns the start (read from `now` by the first).
    pub fn sync(&self, now: impl FnOnce() -> Instant) -> Instant {
        self.ready.wait();
        *self.start.get_or_init(now)
    }
}

/// What a worker returns: its measured and warm-up figures, why it stopped, its backlog.
#[derive(Debug)]
pub(crate) struct WorkerOutcome {
    pub main: WorkerStats,
    pub warm: WorkerStats,
    pub reason: StopReason,
    pub backlog: u64,
    /// Scenarios: what this worker's users did.
    pub scenario: Option<scenario::ScenarioCounts>,
}

/// Splits `total` into `parts` shares that differ by at most one, larger shares first.
pub(crate) fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

/// Runs the load described by `config` until its duration, its request count, or `stop`;
/// calls `on_second` on this thread with each second's merged figures as they become known
/// (what it adds to the point, such as its resources, stays in the result's timeline).
pub fn run(
    config: &Config,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&mut TimelinePoint),
) -> RunResult {
    let threads = config.effective_threads();
    // Moved to when every worker is ready (`Clock`).
    let mut started_at = std::time::SystemTime::now();
    let mut start = Instant::now();
    let end = config.duration.map(|d| start + config.warmup + d);
    let max_connections = config.load.max_connections(config.connections) as u64;
    // This process's workers, numbered within the whole run (see `Slice`).
    let (first, workers) = config.slice.map_or((0, threads), |s| (s.first, s.workers));
    let (tx, rx) = mpsc::channel();
    let clock = Arc::new(Clock::new(threads + 1));
    // Every write of k pipelined requests sends the first k of these; built once, and alive
    // until every worker has ended (the io_uring backend sends from it asynchronously).
    // With many requests, the entries back to back: a write sends one entry from there, or
    // several copied together.
    let repeated;
    let batch = match config.targets() {
        Some(set) => set.bytes(),
        None => {
            repeated = config.request.repeat(config.pipeline());
            &repeated[..]
        }
    };
    // A streamed replay: the reader, and each worker's channel of blocks from it.
    let (reader, mut feeds, primed) = match config.feed() {
        Some(f) => {
            // Open loop, the workers go at the schedule's pace together: each takes its indices
            // from every block. A closed loop's go at their own speeds: the blocks are dealt.
            let share = match config.load.is_open() {
                true => feed::Share::Every,
                false => feed::Share::Dealt,
            };
            let (reader, blocks, primed) = feed::start(f, threads, share, config.load.is_open());
            (
                Some(reader),
                blocks.into_iter().map(Some).collect(),
                Some(primed),
            )
        }
        None => (None, (0..threads).map(|_| None).collect::<Vec<_>>(), None),
    };
    let quit_reading = AtomicBool::new(false);
    let mut timeline =
        TimelineBuilder::new(threads, first, config.warmup, config.load.stages().cloned());
    timeline.control = config.control.clone();
    // A slice's points carry its part of what the stages ask for, so a fleet's parts add up.
    timeline.part = config.slice.map_or(1.0, |s| s.fraction(threads));
    let outcomes: Vec<WorkerOutcome> = std::thread::scope(|s| {
        if let (Some(reader), Some(f)) = (reader, config.feed()) {
            let quit = &quit_reading;
            std::thread::Builder::new()
                .name("pelt-reader".into())
                .spawn_scoped(s, move || reader.run(f, quit))
                .expect("spawning the reader thread");
        }
        // The workers start with the look-ahead full (or the recording read).
        if let Some(primed) = &primed {
            let _ = primed.recv();
        }
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let w = first + i;
                let plan = WorkerPlan {
                    worker: w,
                    workers,
                    connections: share(config.connections as u64, workers, w) as usize,
                    max_connections: share(max_connections, workers, w) as usize,
                    // Plain targets read as the run goes in a closed loop: the workers take what
                    // they are dealt, and the source ends after `-n`.
                    budget: match (config.feed(), config.load.is_open()) {
                        (Some(_), false) => None,
                        _ => config.requests.map(|n| share(n, workers, w)),
                    },
                    start,
                    end,
                    connect_rate: config.connect_rate.map(|r| r / workers as f64),
                    tx: tx.clone(),
                    clock: clock.clone(),
                    feed: feeds[i].take(),
                };
                std::thread::Builder::new()
                    .name(format!("pelt-worker-{i}"))
                    .spawn_scoped(s, move || choice::run_worker(config, batch, plan, stop))
                    .expect("spawning a worker thread")
            })
            .collect();
        drop(tx);
        // The run starts when every worker is ready.
        start = clock.sync(Instant::now);
        started_at = std::time::SystemTime::now();
        if let Some(c) = &config.control {
            c.started(start);
        }
        // Ends when every worker has finished and dropped its sender.
        for published in rx {
            timeline.add(published, on_second);
        }
        let outcomes = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        quit_reading.store(true, std::sync::atomic::Ordering::Relaxed);
        outcomes
    });
    let elapsed = start.elapsed();
    timeline.finish(elapsed, on_second);
    let mut stats = WorkerStats::new();
    let mut warm = WorkerStats::new();
    for o in &outcomes {
        stats.merge(&o.main);
        warm.merge(&o.warm);
    }
    // The run ended for the most significant reason any worker saw.
    let stopped_by = outcomes
        .iter()
        .map(|o| o.reason)
        .max()
        .unwrap_or(StopReason::Requests);
    RunResult {
        stats,
        warmup: (!config.warmup.is_zero()).then_some(warm),
        timeline: timeline.points.into_points(),
        started_at,
        elapsed,
        measured: elapsed.saturating_sub(config.warmup),
        stopped_by,
        io: config.io,
        backlog_at_end: outcomes.iter().map(|o| o.backlog).sum(),
        changes: config.control.as_ref().map_or(Vec::new(), |c| c.changes()),
        scenario: outcomes.iter().filter_map(|o| o.scenario.as_ref()).fold(
            None,
            |acc: Option<scenario::ScenarioCounts>, c| {
                let mut acc = acc.unwrap_or_default();
                acc.merge(c);
                Some(acc)
            },
        ),
    }
}

/// Merges the workers' per-second intervals into timeline points, in order, each as soon as
/// every worker has reported that second (or finished).
struct TimelineBuilder {
    /// Per worker (this process's, from `first`): the last second it reported, and whether
    /// it has finished.
    reported: Vec<(Option<u64>, bool)>,
    first: usize,
    pending: BTreeMap<u64, Interval>,
    warmup_s: f64,
    /// With stages, each point carries what they asked for.
    stages: Option<stages::Stages>,
    /// The part of the stages' targets this process runs (1: all of it).
    part: f64,
    /// Changes during the run: the points carry them, and the stages they made.
    control: Option<Arc<Control>>,
    /// Bounded however long the run (see [`pelt_stats::Timeline`]).
    points: pelt_stats::Timeline,
}

impl TimelineBuilder {
    fn new(workers: usize, first: usize, warmup: Duration, stages: Option<stages::Stages>) -> Self {
        TimelineBuilder {
            reported: vec![(None, false); workers],
            first,
            pending: BTreeMap::new(),
            warmup_s: warmup.as_secs_f64(),
            stages,
            part: 1.0,
            control: None,
            points: pelt_stats::Timeline::new(),
        }
    }

    fn add(&mut self, p: Published, on_second: &mut dyn FnMut(&mut TimelinePoint)) {
        let index = p.interval.index;
        match self.pending.get_mut(&index) {
            Some(iv) => iv.merge(&p.interval),
            None => {
                self.pending.insert(index, p.interval);
            }
        }
        self.reported[p.worker - self.first] = (Some(index), p.last);
        // A second is complete once every worker has moved past it or finished; it is a
        // whole second if some worker has moved past it (the run went on).
        while let Some(&k) = self.pending.keys().next() {
            let all_in = self
                .reported
                .iter()
                .all(|&(r, done)| done || r.is_some_and(|r| r >= k));
            let went_on = self.reported.iter().any(|&(r, _)| r.is_some_and(|r| r > k));
            if !(all_in && went_on) {
                break;
            }
            self.emit(k, 1.0, on_second);
        }
    }

    /// Emits what is left once every worker has finished; the last second is partial.
    fn finish(&mut self, elapsed: Duration, on_second: &mut dyn FnMut(&mut TimelinePoint)) {
        let elapsed = elapsed.as_secs_f64();
        while let Some(&k) = self.pending.keys().next() {
            let length = (elapsed - k as f64).clamp(0.0, 1.0);
            let iv = &self.pending[&k];
            // A sliver of a second after the last tick, with nothing in it, says nothing; one
            // with bytes (HTTP/3's and WebSocket's goodbyes at the end) keeps them counted.
            let bytes = iv.detail.bytes_sent + iv.detail.bytes_received;
            if length < 0.05 && iv.sent + iv.completed + iv.errors + bytes == 0 {
                self.pending.remove(&k);
                continue;
            }
            self.emit(k, length, on_second);
        }
    }

    fn emit(&mut self, k: u64, length_s: f64, on_second: &mut dyn FnMut(&mut TimelinePoint)) {
        if let Some(iv) = self.pending.remove(&k) {
            let mut point = iv.point(length_s, (k as f64) < self.warmup_s);
            let (from, to) = (k as f64, k as f64 + length_s);
            if let Some(c) = &self.control {
                // Once a second, on this thread: what the changes so far made of the run.
                if c.generation() > 0 {
                    self.stages = c.stages();
                }
                point.changes = c.changes_within(from, to);
            }
            point.target = self.stages.as_ref().map(|s| match s.of() {
                stages::Ramped::Rate => s.mean_over(from, to),
                stages::Ramped::Connections => s.connections_at(to) as f64,
            } * self.part);
            on_second(&mut point);
            // The samples and the detail were for on_second; the result's timeline keeps none.
            point.samples = Vec::new();
            point.detail = pelt_stats::Detail::default();
            self.points.push(point);
        }
    }
}

/// The open-file limit is too low for the connections asked for, even after raising it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdLimitError {
    pub needed: u64,
    pub hard_limit: u64,
}

impl std::fmt::Display for FdLimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} connections need about {} open files, but the hard limit is {}; raise it \
             (ulimit -Hn {} as root, or LimitNOFILE in a systemd unit) or use fewer connections",
            self.needed - RESERVED_FDS,
            self.needed,
            self.hard_limit,
            self.needed
        )
    }
}

impl std::error::Error for FdLimitError {}

/// Raises the soft open-file limit to the hard limit, and checks `connections` fit under it.
pub fn ensure_fd_limit(connections: usize) -> Result<(), FdLimitError> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let needed = connections as u64 + RESERVED_FDS;
    let mut lim = getrlimit(Resource::Nofile);
    let hard = lim.maximum.unwrap_or(u64::MAX);
    if lim.current.is_some_and(|cur| cur < hard) {
        lim.current = Some(hard);
        // Failing to raise it is only a problem if the current limit is too low, checked next.
        let _ = setrlimit(Resource::Nofile, lim);
    }
    let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    if current < needed {
        return Err(FdLimitError {
            needed,
            hard_limit: hard,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, parts) in [(10u64, 3usize), (1, 4), (0, 2), (100_000, 7), (5, 5)] {
            let shares: Vec<u64> = (0..parts).map(|i| share(total, parts, i)).collect();
            assert_eq!(shares.iter().sum::<u64>(), total);
            let (min, max) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(max - min <= 1, "{shares:?}");
        }
    }

    #[test]
    fn timeline_emits_each_second_once_every_worker_is_past_it() {
        let mut t = TimelineBuilder::new(2, 0, Duration::from_millis(1500), None);
        let mut seen = vec![];
        let mut on = |p: &mut TimelinePoint| seen.push((p.second, p.length_s, p.warmup, p.sent));
        let iv = |index, sent| Interval {
            sent,
            ..Interval::new(index)
        };
        let publish = |worker, index, sent, last| Published {
            worker,
            interval: iv(index, sent),
            last,
        };
        t.add(publish(0, 0, 1, false), &mut on);
        t.add(publish(0, 1, 1, false), &mut on);
        t.add(publish(1, 0, 2, false), &mut on);
        // Second 0 is complete: worker 0 has moved on and worker 1 reported it.
        t.add(publish(1, 1, 2, true), &mut on);
        // Worker 1 finished in second 1; worker 0 went on to second 2.
        t.add(publish(0, 2, 5, true), &mut on);
        t.finish(Duration::from_millis(2250), &mut on);
        assert_eq!(
            seen,
            vec![(0, 1.0, true, 3), (1, 1.0, true, 3), (2, 0.25, false, 5)]
        );
    }

    #[test]
    fn threads_never_exceed_connections() {
        let mut c = Config::new("127.0.0.1:1".parse().unwrap(), vec![]);
        c.connections = 2;
        c.threads = 8;
        assert_eq!(c.effective_threads(), 2);
    }

    #[test]
    fn fd_limit_check_names_what_is_needed() {
        assert!(ensure_fd_limit(10).is_ok());
        let err = ensure_fd_limit(usize::MAX / 2).unwrap_err();
        assert!(err.to_string().contains("ulimit"), "{err}");
    }
}
