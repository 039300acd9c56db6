//! What a load test is asked to do, as typed values: the [`LoadSpec`] every front end fills in
//! (the CLI from its flags, a program directly). Its `Default` is the CLI's defaults.

use pelt_engine::{Arrival, Stage};
use std::path::PathBuf;
use std::time::Duration;

/// Everything one load test needs. Start from `LoadSpec::new(url)` (the CLI's defaults) and
/// set what differs; [`crate::prepare`] validates it.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// The target: `http://` or `https://`, a host (resolved once, before the run), an
    /// optional port and path. With `--targets` it may be empty (the first target's origin
    /// is the run's); when given, every target must be on its origin.
    pub url: String,
    /// One request (the default), or many from `--targets` or `--bodies`.
    pub requests_from: Requests,
    /// Many requests: the order they are sent in.
    pub order: TargetOrder,
    /// Connect to this Unix socket instead of the URL's host and port (`--unix-socket`).
    pub unix_socket: Option<PathBuf>,
    /// Random choices (`--order random`) are drawn from this seed (`None`: one is chosen and
    /// reported, so the run can be repeated).
    pub seed: Option<u64>,
    pub method: String,
    /// `Name: value` lines, sent in order after `Host`.
    pub headers: Vec<String>,
    pub body: Body,
    /// `false`: a new connection per request (`Connection: close`).
    pub keep_alive: bool,
    pub connections: usize,
    /// Worker threads (`None`: the CPUs this process may use).
    pub threads: Option<usize>,
    /// Run this long; with neither this nor `requests`, [`pelt_engine::DEFAULT_DURATION`].
    pub duration: Option<Duration>,
    /// Send exactly this many requests.
    pub requests: Option<u64>,
    /// Whole request: first byte written to last byte read.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Open loop: requests due at this rate, per second (`None`: closed loop). With `stages`,
    /// the rate they start from (0 allowed).
    pub rate: Option<f64>,
    /// `--stages`: each moves linearly from the previous target to its own over its duration:
    /// the arrival rate with `rate`, else the active connections (from 0). Empty: none.
    pub stages: Vec<Stage>,
    /// Keep every this many measured requests that end, per thread, for `run`'s `on_second`
    /// (`TimelinePoint::samples`); `None`: none. For per-request views without a callback per
    /// request (the Node.js package's `statusCallback`).
    pub sample_every: Option<u64>,
    /// Sampled requests keep their responses (HTTP/1.1): Node.js's `sampleResponses`.
    pub sample_responses: bool,
    pub arrival: Arrival,
    /// Open loop: the most connections pelt may open (`None`: `connections`).
    pub max_connections: Option<usize>,
    /// Open loop: the batch window (`engine::Config::batch_window`).
    pub batch_window: Duration,
    /// HTTP/1.1 pipelining depth (1: none).
    pub pipeline: usize,
    pub http2: bool,
    /// HTTP/3 over QUIC (an https:// URL).
    pub http3: bool,
    /// HTTP/2 and HTTP/3 concurrent streams per connection (`None`: 1, or 100 with a rate).
    pub streams: Option<usize>,
    /// New connections per second at the start (`None`: all at once).
    pub connect_rate: Option<f64>,
    pub tls: TlsSpec,
    pub io: IoChoice,
    /// Sent first and reported apart (`None`: no warm-up).
    pub warmup: Option<Duration>,
    /// After a stop, how long requests in flight may still finish.
    pub grace: Duration,
    /// Thresholds checked against the report (`--expect`).
    pub expect: Vec<crate::expect::Expectation>,
    /// `--monitor`: the server's processes on this machine, sampled each second with the host
    /// and pelt itself.
    pub monitor: Option<crate::monitor::Watch>,
    /// How streamed responses are read (`--stream`, `--stream-limit`, `--stream-end`; and
    /// `--goodput`'s targets, parsed).
    pub event_streams: pelt_engine::Streams,
    /// The latency targets of goodput as given (`--goodput`).
    pub slo: Vec<String>,
    /// ws:// and wss:// settings (`--ws-*`).
    pub websocket: WsSpec,
    /// grpc:// and grpcs:// settings (`--proto`, `--protoset`, `-I`, `--reflect`).
    pub grpc: GrpcSpec,
    /// `--replay`: the targets' recorded times are their due times.
    pub replay: ReplaySpec,
    /// `-s`: a wrk Lua script, and the arguments its `init(args)` gets.
    pub script: Option<ScriptSource>,
    pub script_args: Vec<String>,
    /// `--log-format`: an access log's line layout, in nginx's syntax (`None`: combined).
    pub log_format: Option<String>,
    /// `--targets-read`: read a `--targets` file as the run goes, or whole before it.
    pub targets_read: TargetsRead,
    /// `--skip-bad-lines`: a targets line (a HAR's entry) that does not parse is counted and
    /// skipped instead of refusing the run.
    pub skip_bad_lines: bool,
    /// `--monitor-remote HOST:PORT`: a `pelt monitor` on the server's machine, reached over the
    /// fleet's channel with `fleet_token`.
    pub monitor_remote: Option<String>,
    /// The fleet's token (`--token-file`); `None`: `PELT_FLEET_TOKEN` or
    /// `PELT_FLEET_TOKEN_FILE` from the environment, when one is needed.
    pub fleet_token: Option<crate::fleet::Token>,
    /// This process runs one part of a fleet's run (`threads` must then be given): the
    /// figures above are the whole fleet's, and this process takes its workers' shares.
    pub slice: Option<pelt_engine::Slice>,
}

impl LoadSpec {
    /// A closed-loop GET of `url` with every other setting at its default.
    pub fn new(url: impl Into<String>) -> LoadSpec {
        LoadSpec {
            url: url.into(),
            requests_from: Requests::One,
            order: TargetOrder::Sequential,
            seed: None,
            unix_socket: None,
            method: "GET".into(),
            headers: Vec::new(),
            body: Body::None,
            keep_alive: true,
            connections: pelt_engine::DEFAULT_CONNECTIONS,
            threads: None,
            duration: None,
            requests: None,
            timeout: pelt_engine::DEFAULT_TIMEOUT,
            connect_timeout: pelt_engine::DEFAULT_CONNECT_TIMEOUT,
            rate: None,
            stages: Vec::new(),
            sample_every: None,
            sample_responses: false,
            arrival: Arrival::Constant,
            max_connections: None,
            batch_window: pelt_engine::DEFAULT_BATCH_WINDOW,
            pipeline: 1,
            http2: false,
            http3: false,
            streams: None,
            connect_rate: None,
            tls: TlsSpec::default(),
            io: IoChoice::Auto,
            warmup: None,
            grace: pelt_engine::DEFAULT_GRACE,
            monitor: None,
            event_streams: pelt_engine::Streams::default(),
            slo: Vec::new(),
            websocket: WsSpec::default(),
            grpc: GrpcSpec::default(),
            replay: ReplaySpec::default(),
            script: None,
            script_args: Vec::new(),
            log_format: None,
            targets_read: TargetsRead::Auto,
            skip_bad_lines: false,
            monitor_remote: None,
            fleet_token: None,
            expect: Vec::new(),
            slice: None,
        }
    }
}

/// Which requests a run sends.
#[derive(Debug, Clone, Default)]
pub enum Requests {
    /// The one built from the URL, method, headers and body.
    #[default]
    One,
    /// A targets file or list (`--targets`): each target's method, URL, headers and body;
    /// the command line's headers go first in each, its method and body fill in what a
    /// target leaves out.
    Targets {
        source: crate::TargetsSource,
        format: crate::TargetsFormat,
    },
    /// One body per line of this file (`-`: standard input), each sent with the URL, method
    /// and headers (`--bodies`).
    Bodies(PathBuf),
    /// User journeys from a scenario file (`--scenario`): each connection a virtual user.
    Scenario(ScenarioSource),
    /// An LLM serving benchmark's requests (`--prompts`, `--input-tokens`): each a streamed
    /// OpenAI-style request of its prompt, POSTed to the URL.
    Prompts(crate::prompts::Prompts),
}

/// Where a wrk Lua script (`-s`) comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptSource {
    File(PathBuf),
    /// A script given whole, with a name for messages: what a fleet's coordinator ships to its
    /// agents, which read no file.
    Inline {
        name: String,
        text: String,
    },
}

impl ScriptSource {
    /// The name messages and the report give it: the file's path, or the inline one's name.
    pub fn name(&self) -> String {
        match self {
            ScriptSource::File(p) => p.display().to_string(),
            ScriptSource::Inline { name, .. } => name.clone(),
        }
    }

    /// The script's text.
    pub fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            ScriptSource::File(p) => {
                std::fs::read(p).map_err(|e| format!("cannot read the script {}: {e}", p.display()))
            }
            ScriptSource::Inline { text, .. } => Ok(text.clone().into_bytes()),
        }
    }
}

/// Where a scenario comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ScenarioSource {
    /// A file; the data and body files it names are read from its folder.
    File(PathBuf),
    /// A scenario given whole: its text (YAML or JSON) and a name for messages. `files`: the
    /// files it names, by the names it gives them (what a fleet's coordinator ships to its
    /// agents, which read nothing else); `None`: they are read from the working folder (a
    /// scenario given as an object in Node.js).
    Inline {
        name: String,
        text: String,
        files: Option<std::collections::BTreeMap<String, String>>,
    },
}

impl ScenarioSource {
    /// The name messages and the report give it: the file's path, or the inline one's name.
    pub fn name(&self) -> String {
        match self {
            ScenarioSource::File(p) => p.display().to_string(),
            ScenarioSource::Inline { name, .. } => name.clone(),
        }
    }
}

/// The order in which many requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetOrder {
    /// Request i of the run sends entry i mod N (counted over all threads and connections),
    /// so `-n k*N` sends each exactly k times.
    #[default]
    Sequential,
    /// Each request sends an entry drawn at random (reproducible with the seed).
    Random,
}

/// The request body.
#[derive(Debug, Clone, Default)]
pub enum Body {
    #[default]
    None,
    /// These bytes (`--body`).
    Bytes(Vec<u8>),
    /// The contents of this file, read once by [`crate::prepare`] (`--body-file`).
    File(PathBuf),
}

/// ws:// and wss:// settings. Any of them on an http:// URL is bad input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WsSpec {
    /// Subprotocols to ask for (`Sec-WebSocket-Protocol`), comma-separated; empty: none.
    pub protocols: String,
    /// Ping each socket this often.
    pub ping: Option<Duration>,
    /// Send messages as binary frames (else text).
    pub binary: bool,
    /// Messages expect no reply (`--ws-no-reply`): each is done when written.
    pub no_reply: bool,
    /// The longest message the server may send (`None`: 64 MiB).
    pub max_message: Option<u64>,
}

impl WsSpec {
    /// Whether any `--ws-*` option was given.
    pub fn is_set(&self) -> bool {
        *self != WsSpec::default()
    }
}

/// grpc:// and grpcs:// settings: where the service's descriptors come from. Any of them on
/// another URL is bad input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GrpcSpec {
    /// A `.proto` file, compiled here (protox).
    pub proto: Option<PathBuf>,
    /// A compiled `FileDescriptorSet` (`protoc --descriptor_set_out`, `buf build -o`).
    pub protoset: Option<PathBuf>,
    /// Where `--proto`'s imports are looked for (protoc's `-I`); the proto's own folder is
    /// always one.
    pub import_paths: Vec<PathBuf>,
    /// Ask the server's reflection service for the descriptors.
    pub reflect: bool,
    /// A bidirectional call sends every message at once (ghz's way), not each after the reply
    /// to the one before.
    pub send_all: bool,
}

impl GrpcSpec {
    /// Whether any of them was given.
    pub fn is_set(&self) -> bool {
        *self != GrpcSpec::default()
    }
}

/// `--replay` and its settings (`--replay-speed`, `--replay-loop`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySpec {
    /// Send each target at its recorded time (`"t"`).
    pub on: bool,
    /// Recorded time over replayed time (2.0: twice as fast).
    pub speed: f64,
    /// Start the recording again at its end, until `-n` or `-d`.
    pub laps: bool,
}

impl Default for ReplaySpec {
    fn default() -> ReplaySpec {
        ReplaySpec {
            on: false,
            speed: 1.0,
            laps: false,
        }
    }
}

/// How a `--targets` file is read (`--targets-read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetsRead {
    /// As the run goes when the file is [`crate::prepare::streamed::STREAM_FROM`] bytes or more and
    /// can be streamed, else whole.
    #[default]
    Auto,
    /// As the run goes, in bounded memory (refused where it cannot be).
    Stream,
    /// Whole, before the run.
    Whole,
}

/// https:// settings. Any of them on an http:// URL is bad input.
#[derive(Debug, Clone, Default)]
pub struct TlsSpec {
    /// Also trust the certificates in this PEM file.
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate (the report says so).
    pub insecure: bool,
    /// No session resumption: every connection pays a full handshake.
    pub full_handshake: bool,
    /// HTTP/3: requests go in 0-RTT on resumed connections where the server allows it.
    pub early_data: bool,
    /// Only this TLS version (`None`: either).
    pub version: Option<TlsVersion>,
    /// Send and verify this name instead of the URL's host.
    pub sni: Option<String>,
    /// A client certificate chain and its key (PEM files).
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsSpec {
    /// Whether any setting differs from the default (they are for https:// only).
    pub fn is_set(&self) -> bool {
        self.cacert.is_some()
            || self.insecure
            || self.full_handshake
            || self.early_data
            || self.version.is_some()
            || self.sni.is_some()
            || self.cert.is_some()
    }
}

/// A TLS version to pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    V1_2,
    V1_3,
}

impl TlsVersion {
    /// `1.2` or `1.3`, as the CLI and the report spell it.
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::V1_2 => "1.2",
            TlsVersion::V1_3 => "1.3",
        }
    }
}

/// Which I/O backend runs the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoChoice {
    /// io_uring where this kernel and sandbox allow it, else epoll.
    #[default]
    Auto,
    /// io_uring; bad input where it cannot run.
    Uring,
    Epoll,
}
