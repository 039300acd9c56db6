//! A [`LoadSpec`] validated into a [`Prepared`] run: the engine's `Config` (the request
//! built once, the host resolved once, the TLS client set up, the fd limit raised) and the
//! report's `RunInfo`. Every problem is a [`SpecError`] whose message is the one line the CLI
//! prints, before any traffic.

use crate::sources::{self, TargetEntry, TargetsFormat, TargetsSource};
use crate::spec::{Body, IoChoice, LoadSpec, Requests, TargetOrder};
use crate::template::{LineFiles, Marked};
use crate::{target, tls, values};
use pelt_engine::{self as engine, Config};
use pelt_stats::{Http, Io, LoadModel, RequestSetInfo, RunInfo, StageInfo, StagesInfo};

/// Bad input: the spec cannot run. The message is one line that names the problem (and the
/// CLI flag it came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

fn bad(message: impl std::fmt::Display) -> SpecError {
    SpecError(message.to_string())
}

/// A validated run: what the engine runs, and what the report says about it.
pub struct Prepared {
    pub config: Config,
    pub info: RunInfo,
    pub expect: Vec<crate::expect::Expectation>,
    /// `--monitor`: what to sample, and what it matched when the run was prepared.
    pub monitor: Option<(crate::monitor::Watch, String)>,
    /// `--monitor-remote`: the monitor reached and authenticated, taken by the run, and what
    /// it watches, as the report says it.
    pub remote_monitor: std::sync::Mutex<Option<crate::fleet::monitor::RemoteMonitor>>,
    pub remote_watching: Option<String>,
    /// A replayed recording's own latencies, by target name number (`None`: none recorded).
    pub recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
}

/// Validates `spec` and does the I/O a run needs first: resolves the host, reads the body
/// file, reads the TLS files, raises the soft fd limit to the hard one and checks the
/// connections fit. Nothing is sent.
pub fn prepare(spec: &LoadSpec) -> Result<Prepared, SpecError> {
    prepare_here(spec, Here::Connects)
}

/// What this process does with the run it prepares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Here {
    /// Runs it: resolves the host, needs the file descriptors.
    Connects,
    /// Coordinates a fleet that runs it: resolves the host, opens no connection.
    Coordinates,
    /// Describes it for machines elsewhere (`pelt k8s`): the host may resolve only there.
    Describes,
}

/// [`prepare`], for a process that does `here` with the run: the request's parts, the load's
/// shape, the entries, the target, room for the connections, the requests as encoded, the TLS
/// client and the backend, then the engine's config and the report's info.
pub(crate) fn prepare_here(spec: &LoadSpec, here: Here) -> Result<Prepared, SpecError> {
    let (headers, body) = request_parts(spec)?;
    let mut shape = Shape::of(spec)?;
    let program = match &spec.requests_from {
        Requests::Scenario(source) => Some(scenario_program(spec, source)?),
        _ => None,
    };
    // A targets file read as the run goes: its first pass, instead of the entries read whole.
    let replaying = crate::replay::checked(spec)?;
    let streamed = match crate::streamed::chosen(spec)? {
        Some((path, format)) => crate::streamed::prepare(spec, &path, format, &headers, &body)?,
        None => None,
    };
    let mut entries = match (&program, &streamed) {
        (Some(p), _) => Some(scenario_entries(spec, p)?),
        (None, Some(_)) => None,
        (None, None) => entries(spec, &body)?,
    };
    let replay = match (entries.as_mut(), &streamed) {
        (_, Some(_)) if !replaying => None,
        (_, Some((scan, _))) => Some(
            engine::Replay::streamed(scan.len, scan.span_ns, spec.replay.speed, spec.replay.laps)
                .map_err(|e| bad(format!("--replay: {e}")))?,
        ),
        (Some(e), None) => crate::replay::replay(spec, &mut e.list, e.from.1.as_deref())?,
        (None, None) => crate::replay::replay(spec, &mut Vec::new(), None)?,
    };
    if let Some(r) = &replay {
        shape.replay(spec, r);
    }
    // With targets and no URL, the first target's origin is the run's.
    let url = match (&entries, &streamed, spec.url.is_empty()) {
        (Some(e), _, true) => e.list[0].url.as_str(),
        (_, Some((scan, _)), true) => scan.first_url.as_str(),
        _ => spec.url.as_str(),
    };
    let target = target_of(spec, url, here)?;
    let threads = spec.threads.unwrap_or_else(engine::default_threads);
    check_room(spec, &shape, threads, here)?;
    let https = target.tls_host.is_some();
    if !https && spec.tls.is_set() {
        return Err(bad(
            "--cacert, --insecure, --tls-full-handshake, --tls-version, --sni and --cert/--key \
             are for https:// URLs",
        ));
    }
    let websocket = websocket(spec, &target, &headers, &body, entries.as_ref())?;
    let mut encoded = Encoded::of(
        spec,
        &target,
        &headers,
        body,
        &entries,
        url,
        shape.rate.is_some(),
    )?;
    let (mut method, mut set_info) = (std::mem::take(&mut encoded.method), encoded.set_info.take());
    let mut recorded = std::mem::take(&mut encoded.recorded);
    let mut feed = None;
    if let Some((scan, f)) = streamed {
        method = scan.methods;
        set_info = Some(RequestSetInfo {
            from: "targets".to_string(),
            file: spec_file(spec),
            entries: scan.len as usize,
            order: "sequential".to_string(),
            seed: None,
            skipped: scan.skipped,
            encoded_bytes: scan.encoded_bytes as usize,
        });
        recorded = scan.recorded;
        feed = Some((std::sync::Arc::new(f), scan.names));
    }
    let tls = tls_client(spec, &target)?;
    let io = io_backend(spec.io)?;
    let requests = shape.requests;
    let mut config = config(spec, &target, shape, threads, io, tls, encoded);
    config.requests = requests;
    config.replay = replay.map(std::sync::Arc::new);
    if let Some((f, names)) = feed {
        config.feed = Some(f);
        config.names = names;
    }
    config.websocket = websocket;
    if let (Some(program), Some(e)) = (program, &entries) {
        config.scenario = Some(std::sync::Arc::new(scenario_run(program, &e.list)?));
    }
    let info = run_info(spec, &target, &config, method, set_info);
    let monitor = match (&spec.monitor, here) {
        (None, _) => None,
        (Some(w), Here::Connects) => {
            let w = match w {
                crate::monitor::Watch::Listener => {
                    if spec.unix_socket.is_some() {
                        return Err(bad(
                            "--monitor listener finds the process on the target's TCP port; \
                             with --unix-socket give its PID or name",
                        ));
                    }
                    crate::monitor::Watch::listening_on(target.addr.port())
                        .map_err(|e| bad(format!("--monitor listener: {e}")))?
                }
                other => other.clone(),
            };
            let matched = w.check().map_err(|e| bad(format!("--monitor: {e}")))?;
            Some((w, matched))
        }
        (Some(_), _) => {
            return Err(bad(
                "--monitor samples processes on the machine that sends the load; a fleet's \
                 agents send it from elsewhere: run pelt on the server's machine instead",
            ))
        }
    };
    let remote_monitor = match (&spec.monitor_remote, here) {
        (None, _) => None,
        (Some(_), _) if spec.monitor.is_some() => {
            return Err(bad(
                "--monitor and --monitor-remote: give one (the server is on this machine, or \
                 pelt monitor samples it on its own)",
            ))
        }
        (Some(addr), Here::Connects | Here::Coordinates) => {
            let token = match &spec.fleet_token {
                Some(t) => t.clone(),
                None => crate::fleet::Token::from_env()
                    .map_err(|e| bad(format!("--monitor-remote needs the fleet's token: {e}")))?,
            };
            let remote = crate::fleet::monitor::RemoteMonitor::connect(addr, &token)
                .map_err(|e| bad(format!("--monitor-remote: {e}")))?;
            Some(remote)
        }
        (Some(_), _) => {
            return Err(bad(
                "--monitor-remote reaches the monitor when the run starts; pelt k8s cannot \
                 (run the coordinator with --monitor-remote yourself)",
            ))
        }
    };
    Ok(Prepared {
        config,
        info,
        expect: spec.expect.clone(),
        monitor,
        remote_watching: remote_monitor.as_ref().map(|r| r.describe()),
        remote_monitor: std::sync::Mutex::new(remote_monitor),
        recorded,
    })
}

/// The command line's headers, parsed.
type Headers = Vec<(String, String)>;

/// The headers parsed, the method checked and the body read.
fn request_parts(spec: &LoadSpec) -> Result<(Headers, Vec<u8>), SpecError> {
    let headers = spec
        .headers
        .iter()
        .map(|h| {
            pelt_codec::request::parse_header(h).map_err(|e| {
                let shown = values::quote(&values::masked_header(h));
                bad(format!("invalid header {shown}: {e}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    pelt_codec::request::validate_method(&spec.method).map_err(|e| {
        bad(format!(
            "invalid method {}: {e}",
            values::quote(&spec.method)
        ))
    })?;
    let body = match &spec.body {
        Body::Bytes(b) => b.clone(),
        Body::File(p) if p.is_dir() => {
            return Err(bad(format!(
                "cannot read --body-file {}: it is a directory",
                p.display()
            )))
        }
        Body::File(p) => std::fs::read(p)
            .map_err(|e| bad(format!("cannot read --body-file {}: {e}", p.display())))?,
        Body::None => Vec::new(),
    };
    Ok((headers, body))
}

/// The load's shape: the stages, the rate, the connections and how long it runs.
struct Shape {
    stages: Option<engine::Stages>,
    rate: Option<engine::Rate>,
    connections: usize,
    max_connections: usize,
    duration: Option<std::time::Duration>,
    /// `-n`, or a replay's length (once through the recording).
    requests: Option<u64>,
}

impl Shape {
    fn of(spec: &LoadSpec) -> Result<Shape, SpecError> {
        let stages = stages(spec)?;
        let rate = match (spec.rate, &stages) {
            (None, _) => None,
            // The schedule follows the stages; the rate is their peak.
            (Some(_), Some(s)) => engine::Rate::per_second(s.peak()),
            (Some(r), None) => Some(engine::Rate::per_second(r).ok_or_else(|| rate_error(r))?),
        };
        // Closed-loop stages: the connections are the stages' (-c does not apply).
        let connections = match &stages {
            Some(s) if s.of() == engine::Ramped::Connections => s.peak() as usize,
            _ => spec.connections,
        };
        if spec.rate.is_none() && !spec.replay.on {
            let open_only = [
                ("--max-connections", spec.max_connections.is_some()),
                (
                    "--batch-window",
                    spec.batch_window != engine::DEFAULT_BATCH_WINDOW,
                ),
            ];
            if let Some((flag, _)) = open_only.iter().find(|(_, given)| *given) {
                return Err(bad(format!(
                    "{flag} is for the open loop: give it with --rate or --replay"
                )));
            }
        }
        let max_connections = spec.max_connections.unwrap_or(connections);
        if max_connections < connections {
            return Err(bad(format!(
                "--max-connections {max_connections} is below -c {connections}; it is the most \
                 connections pelt may open, at least -c"
            )));
        }
        let duration = match (spec.duration, spec.requests, &stages) {
            // The stages last as long as they say, -n or not.
            (None, _, Some(s)) => Some(s.total()),
            // A replay ends with the recording (see `Shape::replay`).
            (None, None, None) if spec.replay.on && !spec.replay.laps => None,
            (None, None, None) => Some(engine::DEFAULT_DURATION),
            (d, _, _) => d,
        };
        Ok(Shape {
            stages,
            rate,
            connections,
            max_connections,
            duration,
            requests: spec.requests,
        })
    }

    /// A replay: open loop at the recording's mean rate (what the report calls the rate),
    /// and, without laps, at most the recording's requests.
    fn replay(&mut self, spec: &LoadSpec, replay: &engine::Replay) {
        let mean = replay
            .mean_rate()
            .clamp(engine::Rate::MIN_PER_S, engine::Rate::MAX_PER_S);
        self.rate = engine::Rate::per_second(mean);
        if !replay.laps() {
            let n = replay.len() as u64;
            self.requests = Some(spec.requests.map_or(n, |r| r.min(n)));
        }
    }
}

fn rate_error(r: f64) -> SpecError {
    if r == 0.0 {
        bad(
            "--rate 0: must be greater than zero (0 only starts --stages; leave --rate out for \
             a closed loop)",
        )
    } else {
        bad(format!(
            "--rate {r}: must be from {} to {} requests per second",
            engine::Rate::MIN_PER_S,
            engine::Rate::MAX_PER_S
        ))
    }
}

/// The URL's target: resolved here unless a Unix socket is the way there or the run is only
/// described (its host may resolve only where it runs).
fn target_of(spec: &LoadSpec, url: &str, here: Here) -> Result<target::Target, SpecError> {
    match &spec.unix_socket {
        // The URL gives the Host header and the path only: nothing to resolve.
        Some(path) => {
            engine::check_unix_socket(path).map_err(bad)?;
            target::unresolved(url).map_err(bad)
        }
        None if here == Here::Describes => target::unresolved(url).map_err(bad),
        None => target::resolve(url).map_err(bad),
    }
}

/// A fleet agent's part fits the fleet, and a process that connects may open its connections.
fn check_room(spec: &LoadSpec, shape: &Shape, threads: usize, here: Here) -> Result<(), SpecError> {
    if let Some(slice) = spec.slice {
        slice
            .check(threads, shape.connections)
            .map_err(|e| bad(format!("this agent's part of the fleet: {e}")))?;
    }
    // A fleet's agent opens its part of the connections only.
    let max = shape.max_connections as u64;
    let opened = spec.slice.map_or(max, |s| s.part(max, threads));
    if here == Here::Connects {
        engine::ensure_fd_limit(opened as usize).map_err(bad)?;
    }
    Ok(())
}

/// The requests as the engine sends them: the one request, HTTP/2's, the set of many, and
/// what the report says of them.
struct Encoded {
    request: Vec<u8>,
    http2: Option<engine::Http2>,
    set: Option<engine::RequestSet>,
    set_info: Option<RequestSetInfo>,
    /// The report's method: the one all entries use, or each used, in order.
    method: String,
    /// The recording's latencies by target name number.
    recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
}

impl Encoded {
    fn of(
        spec: &LoadSpec,
        target: &target::Target,
        headers: &[(String, String)],
        body: Vec<u8>,
        entries: &Option<Entries>,
        url: &str,
        open: bool,
    ) -> Result<Encoded, SpecError> {
        let scheme = if target.tls_host.is_some() {
            "https"
        } else {
            "http"
        };
        // Many requests are sent from their set; the one request is for a run without.
        let request = match entries {
            Some(_) => Vec::new(),
            None => pelt_codec::RequestSpec {
                method: &spec.method,
                path: &target.path,
                host: &target.host_header,
                headers,
                body: &body,
                keep_alive: spec.keep_alive,
            }
            .encode()
            .map_err(|e| bad(format!("invalid request: {e}")))?,
        };
        let mut http2 = spec.http2.then(|| engine::Http2 {
            header_block: pelt_codec::h2::encode_headers(
                &spec.method,
                scheme,
                &target.host_header,
                &target.path,
                headers,
                body.len(),
            ),
            body: Vec::new(),
            streams: spec.streams.unwrap_or(if open { 100 } else { 1 }),
            targets: Vec::new(),
        });
        let mut e = Encoded {
            request,
            http2: None,
            set: None,
            set_info: None,
            method: spec.method.clone(),
            recorded: Vec::new(),
        };
        if let Some(entries) = entries {
            let (list, from) = (&entries.list, &entries.from);
            let mut methods: Vec<&str> = Vec::new();
            for t in list {
                let m = t.method.as_deref().unwrap_or(&spec.method);
                if !methods.contains(&m) {
                    methods.push(m);
                }
            }
            e.method = methods.join(",");
            let (set, h2_requests, info, recorded) =
                build_set(spec, entries, url, headers, &body, http2.is_some())?;
            e.recorded = recorded;
            if let Some(h) = http2.as_mut() {
                h.targets = h2_requests;
            }
            e.set_info = Some(RequestSetInfo {
                from: from.0.to_string(),
                file: from.1.clone(),
                skipped: entries.skipped.clone(),
                ..info
            });
            e.set = Some(set);
        }
        if let Some(h) = http2.as_mut() {
            h.body = body;
        }
        e.http2 = http2;
        Ok(e)
    }
}

/// A ws:// or wss:// run's settings, after the checks of what does not go with one; `None`
/// for http(s)://, where a `--ws-*` option is bad input.
fn websocket(
    spec: &LoadSpec,
    target: &target::Target,
    headers: &[(String, String)],
    body: &[u8],
    entries: Option<&Entries>,
) -> Result<Option<engine::WebSocket>, SpecError> {
    let ws = &spec.websocket;
    if !target.websocket {
        if ws.is_set() {
            return Err(bad(
                "--ws-protocol, --ws-ping, --ws-binary, --ws-max-message and --ws-no-reply are for ws:// and \
                 wss:// URLs",
            ));
        }
        return Ok(None);
    }
    let not_with = |what: &str| {
        bad(format!(
            "{what} is HTTP's; a ws:// or wss:// URL cannot take it"
        ))
    };
    if spec.pipeline > 1 {
        return Err(not_with("--pipeline"));
    }
    if spec.http2 {
        return Err(not_with("--http2"));
    }
    if !spec.keep_alive {
        return Err(not_with("--no-keepalive"));
    }
    if !spec.method.eq_ignore_ascii_case("GET") {
        return Err(not_with("-m/--method (the upgrade is a GET)"));
    }
    if spec.event_streams != engine::Streams::default() {
        return Err(not_with("--stream, --stream-limit and --stream-end"));
    }
    // The messages: --bodies' lines, each sent in turn (by the request's index), or the body.
    let messages: Vec<Vec<u8>> = match (&spec.requests_from, entries) {
        (Requests::Bodies(_), Some(e)) => e
            .list
            .iter()
            .map(|t| t.body.clone().unwrap_or_default())
            .collect(),
        (Requests::One, _) if matches!(spec.body, crate::spec::Body::None) => Vec::new(),
        (Requests::One, _) => vec![body.to_vec()],
        _ => {
            return Err(bad(
                "--targets and --scenario do not take ws:// or wss:// URLs: give the messages \
                 with --body, --body-file or --bodies",
            ))
        }
    };
    if messages.is_empty() {
        if spec.requests.is_some() {
            return Err(bad(
                "-n counts messages on a ws:// URL: give one with --body (without a message \
                 pelt holds the sockets open for -d)",
            ));
        }
        if spec.rate.is_some() {
            return Err(bad(
                "--rate sends messages on a ws:// URL: give one with --body (without a message \
                 pelt holds the sockets open for -d)",
            ));
        }
    }
    if !ws.binary && messages.iter().any(|m| std::str::from_utf8(m).is_err()) {
        return Err(bad(
            "a message is not UTF-8, so it cannot go as text: add --ws-binary",
        ));
    }
    let handshake =
        pelt_codec::ws::Handshake::new(&target.host_header, &target.path, &ws.protocols, headers)
            .map_err(|e| bad(format!("invalid request: {e}")))?;
    Ok(Some(engine::WebSocket {
        handshake,
        protocols: ws.protocols.clone(),
        messages,
        binary: ws.binary,
        expect_reply: !ws.no_reply,
        ping: ws.ping,
        max_message: ws
            .max_message
            .unwrap_or(pelt_codec::ws::DEFAULT_MAX_MESSAGE),
    }))
}

/// The TLS client of an https:// target.
fn tls_client(
    spec: &LoadSpec,
    target: &target::Target,
) -> Result<Option<engine::TlsClient>, SpecError> {
    let Some(host) = &target.tls_host else {
        return Ok(None);
    };
    let t = &spec.tls;
    let options = tls::TlsOptions {
        cacert: t.cacert.as_deref(),
        insecure: t.insecure,
        full_handshake: t.full_handshake,
        version: t.version,
        sni: t.sni.as_deref(),
        client_cert: t.cert.as_deref().zip(t.key.as_deref()),
        http2: spec.http2,
    };
    tls::client(host, &options).map(Some).map_err(bad)
}

fn io_backend(io: IoChoice) -> Result<engine::IoBackend, SpecError> {
    Ok(match io {
        IoChoice::Auto => engine::IoBackend::detect(),
        IoChoice::Epoll => engine::IoBackend::Epoll,
        IoChoice::Uring => {
            engine::IoBackend::Uring
                .check()
                .map_err(|e| bad(format!("--io uring: {e}; use --io epoll")))?;
            engine::IoBackend::Uring
        }
    })
}

/// The engine's config.
fn config(
    spec: &LoadSpec,
    target: &target::Target,
    shape: Shape,
    threads: usize,
    io: engine::IoBackend,
    tls: Option<engine::TlsClient>,
    encoded: Encoded,
) -> Config {
    let mut config = Config::new(target.addr, encoded.request);
    config.head_request = spec.method.eq_ignore_ascii_case("HEAD");
    config.keep_alive = spec.keep_alive;
    config.connections = shape.connections;
    config.threads = threads;
    config.slice = spec.slice;
    config.duration = shape.duration;
    config.requests = spec.requests;
    config.timeout = spec.timeout;
    config.connect_timeout = spec.connect_timeout;
    config.rate = shape.rate;
    config.arrival = spec.arrival;
    config.max_connections = shape.max_connections;
    config.batch_window = spec.batch_window;
    config.streams = spec.event_streams.clone();
    config.warmup = spec.warmup.unwrap_or_default();
    config.grace = spec.grace;
    config.io = io;
    config.pipeline = spec.pipeline;
    config.connect_rate = spec.connect_rate;
    config.tls = tls;
    config.targets = encoded.set;
    config.unix_socket = spec.unix_socket.clone();
    config.sample_every = spec.sample_every;
    config.sample_responses = spec.sample_responses;
    config.stages = shape.stages;
    config.http2 = encoded.http2;
    config
}

/// What the report says about the run (a fleet agent's, its part).
fn run_info(
    spec: &LoadSpec,
    target: &target::Target,
    config: &Config,
    method: String,
    request_set: Option<RequestSetInfo>,
) -> RunInfo {
    let open = config.rate.is_some();
    let t = &spec.tls;
    let stages = config.stages.as_ref().map(|s| StagesInfo {
        of: s.of().name().to_string(),
        start: s.start(),
        stages: s
            .stages()
            .iter()
            .map(|st| StageInfo {
                duration_s: st.duration.as_secs_f64(),
                target: st.target,
            })
            .collect(),
    });
    let mut info = RunInfo {
        // A template's braces as typed (the URL parser percent-encodes them in the path).
        target: as_typed(&target.display).into_owned(),
        method,
        connections: config.connections,
        threads: config.effective_threads(),
        keep_alive: config.keep_alive,
        io: match config.io {
            engine::IoBackend::Uring => Io::Uring,
            engine::IoBackend::Epoll => Io::Epoll,
        },
        pipeline: config.pipeline,
        http: if config.http2.is_some() {
            Http::Http2
        } else {
            Http::Http1
        },
        streams: config.http2.as_ref().map(|h| h.streams),
        connect_rate: config.connect_rate,
        tls: target.tls_host.is_some().then(|| pelt_stats::TlsInfo {
            insecure: t.insecure,
            resumption: !t.full_handshake,
            cacert: t.cacert.as_ref().map(|p| p.display().to_string()),
            version: t.version.map(|v| v.name().to_string()),
            sni: t.sni.clone(),
        }),
        load_model: if open {
            LoadModel::Open
        } else {
            LoadModel::Closed
        },
        rate: config.rate.map(|r| r.as_f64()),
        arrival: open.then_some(config.arrival),
        max_connections: open.then_some(config.max_connections),
        batch_window_us: open.then_some(config.batch_window.as_micros() as u64),
        warmup_s: config.warmup.as_secs_f64(),
        grace_s: config.grace.as_secs_f64(),
        duration_limit_s: config.duration.map(|d| d.as_secs_f64()),
        requests_limit: config.requests,
        timeout_s: spec.timeout.as_secs_f64(),
        request_set,
        unix_socket: spec.unix_socket.as_ref().map(|p| p.display().to_string()),
        stages,
        replay: config.replay.as_ref().map(|r| pelt_stats::ReplayInfo {
            recorded: r.len() as u64,
            span_s: r.span_ns() as f64 * r.speed() / 1e9,
            speed: r.speed(),
            laps: r.laps(),
        }),
    };
    if let Some(slice) = spec.slice {
        info_part(&mut info, slice, config.threads);
    }
    info
}

/// A fleet agent's report says what its part was, so the parts of a fleet's reports add up
/// to the run asked for (`pelt merge` adds these).
fn info_part(info: &mut RunInfo, slice: engine::Slice, threads: usize) {
    let exact = |n: usize| slice.part(n as u64, threads) as usize;
    let f = slice.fraction(threads);
    info.connections = exact(info.connections);
    info.max_connections = info.max_connections.map(exact);
    info.requests_limit = info.requests_limit.map(|n| slice.part(n, threads));
    info.rate = info.rate.map(|r| r * f);
    info.connect_rate = info.connect_rate.map(|r| r * f);
    if let Some(s) = info.stages.as_mut() {
        s.start *= f;
        for st in &mut s.stages {
            st.target *= f;
        }
    }
}

/// `--stages` checked against what they move: the rate with `--rate` (starting from it),
/// else the connections (from 0); `None` without stages.
fn stages(spec: &LoadSpec) -> Result<Option<engine::Stages>, SpecError> {
    if spec.stages.is_empty() {
        return Ok(None);
    }
    if spec.warmup.is_some() {
        return Err(bad(
            "--warmup and --stages do not go together: ramp up in a first stage instead (every \
             stage is measured)",
        ));
    }
    let (of, start) = match spec.rate {
        Some(r) => (engine::Ramped::Rate, r),
        None => (engine::Ramped::Connections, 0.0),
    };
    let s = engine::Stages::new(of, start, spec.stages.clone())
        .map_err(|e| bad(format!("--stages: {e}")))?;
    if s.total().is_zero() {
        return Err(bad(
            "--stages: every stage lasts 0s; give the last one a duration (30s:1k)",
        ));
    }
    Ok(Some(s))
}

/// Where many requests came from: `targets` or `bodies`, and the file.
pub(crate) type From = (&'static str, Option<String>);

/// A run's many requests: the entries, where they came from, and (a scenario's) the variables
/// `{{name}}` marks.
pub(crate) struct Entries {
    pub list: Vec<TargetEntry>,
    pub from: From,
    pub vars: Vec<String>,
    /// What the file held that is left out.
    pub skipped: Option<pelt_stats::SkippedInfo>,
}

impl Entries {
    fn of(list: Vec<TargetEntry>, from: From) -> Entries {
        Entries {
            list,
            from,
            vars: Vec::new(),
            skipped: None,
        }
    }
}

/// The entries of `--targets` or `--bodies`, read completely (`None`: one request).
pub(crate) fn entries(spec: &LoadSpec, body: &[u8]) -> Result<Option<Entries>, SpecError> {
    let log = |f: &TargetsFormat| matches!(f, TargetsFormat::Nginx | TargetsFormat::Apache);
    if spec.log_format.is_some()
        && !matches!(&spec.requests_from, Requests::Targets { format, .. } if log(format))
    {
        return Err(bad(
            "--log-format is the layout of an access log: give it with --targets FILE \
             --targets-format nginx (or apache)",
        ));
    }
    match &spec.requests_from {
        Requests::One => {
            // A request with templates is a set of one: its bytes change per request.
            let templated = spec.url.contains("{{")
                || spec.headers.iter().any(|h| h.contains("{{"))
                || std::str::from_utf8(body).is_ok_and(|b| b.contains("{{"));
            Ok(templated.then(|| {
                let one = TargetEntry {
                    url: spec.url.clone(),
                    ..TargetEntry::default()
                };
                Entries::of(vec![one], ("url", None))
            }))
        }
        Requests::Targets { source, format } => match source {
            TargetsSource::List(list) if list.is_empty() => {
                Err(bad("no targets given (the list is empty)"))
            }
            TargetsSource::List(list) => Ok(Some(Entries::of(list.clone(), ("targets", None)))),
            TargetsSource::File(path) => {
                let text = sources::read_input(path, "--targets").map_err(bad)?;
                let name = path.display().to_string();
                targets_file(spec, &text, name, format.of(&text)).map(Some)
            }
        },
        Requests::Bodies(path) => {
            if spec.url.is_empty() {
                return Err(bad("--bodies needs a URL to send them to"));
            }
            let text = sources::read_input(path, "--bodies").map_err(bad)?;
            let name = path.display().to_string();
            let bodies = sources::parse_bodies(&text, &name).map_err(bad)?;
            let list = bodies
                .into_iter()
                .map(|(line, b)| TargetEntry {
                    url: spec.url.clone(),
                    body: Some(b),
                    line,
                    ..TargetEntry::default()
                })
                .collect();
            Ok(Some(Entries::of(list, ("bodies", Some(name)))))
        }
        // Compiled by `scenario_program`, made entries by `scenario_entries`.
        Requests::Scenario(_) => Ok(None),
    }
}

/// The entries of targets file `name` in `format`, with what was skipped.
fn targets_file(
    spec: &LoadSpec,
    text: &[u8],
    name: String,
    format: TargetsFormat,
) -> Result<Entries, SpecError> {
    let mut bad_lines = sources::BadLines {
        skip: spec.skip_bad_lines,
        ..Default::default()
    };
    let (list, other) = match format {
        TargetsFormat::Nginx | TargetsFormat::Apache => {
            (access_log(spec, text, &name, &mut bad_lines)?, None)
        }
        TargetsFormat::Har => {
            let text = std::str::from_utf8(text)
                .map_err(|e| bad(format!("--targets {name}: not UTF-8 text ({e})")))?;
            let har = crate::har::parse(text, &name, &spec.url, &mut bad_lines).map_err(bad)?;
            let other = (har.other_origins > 0).then_some((har.other_origins, har.origin));
            (har.entries, other)
        }
        _ => (
            sources::parse_targets(text, &name, format, &mut bad_lines).map_err(bad)?,
            None,
        ),
    };
    let skipped = (bad_lines.count > 0 || other.is_some()).then(|| pelt_stats::SkippedInfo {
        bad_lines: bad_lines.count,
        first_bad: bad_lines.first,
        other_origins: other.as_ref().map_or(0, |o| o.0),
        origin: other.map(|o| o.1),
    });
    Ok(Entries {
        skipped,
        ..Entries::of(list, ("targets", Some(name)))
    })
}

/// An access log's requests, on the URL argument's origin.
fn access_log(
    spec: &LoadSpec,
    text: &[u8],
    file: &str,
    bad_lines: &mut sources::BadLines,
) -> Result<Vec<TargetEntry>, SpecError> {
    let (format, origin) = log_layout(spec, file)?;
    let text = std::str::from_utf8(text)
        .map_err(|e| bad(format!("--targets {file}: not UTF-8 text ({e})")))?;
    crate::access_log::parse(text, file, &origin, &format, bad_lines).map_err(bad)
}

/// An access log's layout (`--log-format`, else the combined format) and the origin its
/// requests go to (the URL argument's).
pub(crate) fn log_layout(
    spec: &LoadSpec,
    file: &str,
) -> Result<(crate::access_log::LogFormat, String), SpecError> {
    let format = crate::access_log::LogFormat::new(
        spec.log_format
            .as_deref()
            .unwrap_or(crate::access_log::COMBINED),
    )
    .map_err(bad)?;
    let origin = url::Url::parse(&spec.url)
        .ok()
        .filter(|u| u.has_host())
        .map(|u| u.origin().ascii_serialization())
        .ok_or_else(|| {
            bad(format!(
                "--targets {file} is an access log: give the URL of the server to send its \
                 requests to (a log has no host)"
            ))
        })?;
    Ok((format, origin))
}

/// What [`build_set`] makes: the HTTP/1.1 set, the HTTP/2 requests, what the report says of
/// them, and the recording's latencies by target name number.
type BuiltSet = (
    engine::RequestSet,
    Vec<engine::H2Request>,
    RequestSetInfo,
    Vec<Option<pelt_stats::LatencyHistogram>>,
);

/// Encodes every entry once, checking each is on the run's origin: the HTTP/1.1 set, the
/// HTTP/2 requests (when `h2`), and what the report says of them.
fn build_set(
    spec: &LoadSpec,
    entries: &Entries,
    origin: &str,
    headers: &[(String, String)],
    body: &[u8],
    h2: bool,
) -> Result<BuiltSet, SpecError> {
    let (list, from, vars) = (&entries.list, &entries.from, &entries.vars[..]);
    let chosen = spec.seed.unwrap_or_else(clock_seed);
    let order = match spec.order {
        TargetOrder::Sequential => engine::Order::Sequential,
        TargetOrder::Random => engine::Order::Random { seed: chosen },
    };
    let first = target::parse(origin).map_err(bad)?;
    let mut b = SetBuilder {
        spec,
        from,
        headers,
        body,
        h2,
        first: &first,
        set: engine::RequestSet::new(order),
        files: LineFiles::default(),
        h2_requests: Vec::new(),
        names: Names::default(),
        vars,
    };
    b.set.seed = chosen;
    for (k, e) in list.iter().enumerate() {
        b.add(k, e)?;
    }
    let SetBuilder {
        mut set,
        files,
        h2_requests,
        names,
        ..
    } = b;
    set.set_lines(files.files);
    let mut recorded = Vec::new();
    if matches!(from.0, "targets" | "scenario") {
        let (names, name_of, by_name) = names.into_parts();
        set.set_names(names, name_of);
        recorded = by_name;
    }
    let random = matches!(order, engine::Order::Random { .. });
    let info = RequestSetInfo {
        from: String::new(),
        file: None,
        entries: set.len(),
        order: if random { "random" } else { "sequential" }.to_string(),
        // What random draws (the order, {{rand}}, {{uuid}}) came from.
        seed: (random || set.has_templates()).then_some(chosen),
        skipped: None,
        encoded_bytes: set.bytes().len()
            + h2_requests
                .iter()
                .map(|r| r.header_block.len() + r.body.len())
                .sum::<usize>(),
    };
    Ok((set, h2_requests, info, recorded))
}

/// The request set as its entries are encoded into it.
pub(crate) struct SetBuilder<'a> {
    spec: &'a LoadSpec,
    from: &'a From,
    /// The command line's headers and body (an entry's own come after, or instead).
    headers: &'a [(String, String)],
    body: &'a [u8],
    h2: bool,
    /// The run's origin.
    first: &'a target::Parsed,
    set: engine::RequestSet,
    files: LineFiles,
    h2_requests: Vec<engine::H2Request>,
    names: Names,
    /// A scenario's variables (`{{name}}` marks their values); empty without one.
    vars: &'a [String],
}

/// An entry handed on: its bytes, whether it is a HEAD request, its name number.
pub(crate) type OneEntry<'a> = (&'a [u8], bool, u32);

/// What a [`SetBuilder`] that hands each entry on keeps between entries: its set (one entry
/// at a time) and the names it has numbered.
#[derive(Default)]
pub(crate) struct EncoderState {
    set: engine::RequestSet,
    names: Names,
}

impl<'a> SetBuilder<'a> {
    /// A builder that encodes one entry at a time and hands it on (a streamed recording:
    /// HTTP/1.1, no scenario), from `state`.
    pub(crate) fn one_by_one(
        spec: &'a LoadSpec,
        from: &'a From,
        headers: &'a [(String, String)],
        body: &'a [u8],
        first: &'a target::Parsed,
        state: EncoderState,
    ) -> SetBuilder<'a> {
        SetBuilder {
            spec,
            from,
            headers,
            body,
            h2: false,
            first,
            set: state.set,
            files: LineFiles::default(),
            h2_requests: Vec::new(),
            names: state.names,
            vars: &[],
        }
    }

    /// Encodes entry `k` and hands it on: its bytes, whether it is a HEAD request, and its
    /// name number; `None` when it has templates (its bytes change per request).
    pub(crate) fn encode(
        &mut self,
        k: usize,
        e: &TargetEntry,
    ) -> Result<Option<OneEntry<'_>>, SpecError> {
        self.set.clear();
        self.names.name_of.clear();
        self.add(k, e)?;
        if self.set.has_templates() || !self.files.files.is_empty() {
            return Ok(None);
        }
        let name = self.names.name_of.first().copied().unwrap_or(0);
        Ok(Some((self.set.bytes(), self.set.is_head(0), name)))
    }

    /// What it keeps between entries.
    pub(crate) fn into_state(self) -> EncoderState {
        EncoderState {
            set: self.set,
            names: self.names,
        }
    }
}

impl EncoderState {
    /// The names numbered, in order of their numbers, and the recording's latencies by name.
    pub(crate) fn into_names(self) -> (Vec<String>, Vec<Option<pelt_stats::LatencyHistogram>>) {
        let (names, _, recorded) = self.names.into_parts();
        (names, recorded)
    }
}

impl SetBuilder<'_> {
    /// Encodes entry `k`.
    pub(crate) fn add(&mut self, k: usize, e: &TargetEntry) -> Result<(), SpecError> {
        let spec = self.spec;
        // Where an entry came from, for a message (built only for one).
        let at = Where(self.from, e.line, k);
        let mut m = Marked {
            vars: self.vars.to_vec(),
            ..Marked::default()
        };
        let files = &mut self.files;
        let mut mark = |text: &str, part: &str| -> Result<String, SpecError> {
            if !text.contains("{{") {
                return Ok(text.to_string());
            }
            m.mark(text, &at.with(part), files).map_err(bad)
        };
        // A URL without templates is parsed where it is (it may be megabytes long).
        let marked_url = match e.url.contains("{{") {
            true => Some(mark(&e.url, "URL")?),
            false => None,
        };
        let url = marked_url.as_deref().unwrap_or(&e.url);
        let p = target::parse(url).map_err(|err| bad(format!("{}{err}", at.prefix())))?;
        let first = self.first;
        if (p.https, &p.host, p.port) != (first.https, &first.host, first.port) {
            return Err(bad(format!(
                "{at}: {} is not on {}://{}:{} like the run's URL; all targets share one \
                 origin (scheme, host and port)",
                values::quote(&e.url),
                if first.https { "https" } else { "http" },
                first.host,
                first.port
            )));
        }
        let method = e.method.as_deref().unwrap_or(&spec.method);
        pelt_codec::request::validate_method(method).map_err(|err| {
            bad(format!(
                "{at}: invalid method {}: {err}",
                values::quote(method)
            ))
        })?;
        let mut all = Vec::with_capacity(self.headers.len() + e.headers.len());
        for (name, value) in self.headers {
            all.push((name.clone(), mark(value, "header")?));
        }
        for h in &e.headers {
            let (name, value) = pelt_codec::request::parse_header(h)
                .map_err(|err| bad(format!("{at}: invalid header: {err}")))?;
            all.push((name, mark(&value, "header")?));
        }
        let body = e.body.as_deref().unwrap_or(self.body);
        let marked_body = match std::str::from_utf8(body) {
            Ok(text) if text.contains("{{") => Some(mark(text, "body")?.into_bytes()),
            _ => None,
        };
        let body = marked_body.as_deref().unwrap_or(body);
        let has_length = all
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-length"));
        if !m.is_empty() && has_length {
            return Err(bad(format!(
                "{}with templates Content-Length is written per request; drop -H Content-Length",
                at.prefix()
            )));
        }
        let bytes = pelt_codec::RequestSpec {
            method,
            path: &p.path,
            host: &p.host_header,
            headers: &all,
            body,
            keep_alive: spec.keep_alive,
        }
        .encode()
        .map_err(|err| bad(format!("{at}: invalid request: {err}")))?;
        let scenario = self.from.0 == "scenario";
        if self.from.0 == "targets" || scenario {
            self.names.add(e, method, &p.path);
        }
        let head = method.eq_ignore_ascii_case("HEAD");
        if m.is_empty() && !scenario {
            self.set.push(&bytes, head);
        } else {
            let mut template = m.template(&bytes, body.len(), !body.is_empty());
            if scenario {
                // The user's cookies, after the step's own headers.
                template.push_value(false, engine::template::Value::Cookie);
            }
            self.set.push_template(&bytes, head, template);
        }
        if self.h2 {
            self.h2_requests.push(h2_request(method, &p, &all, body));
        }
        Ok(())
    }
}

/// The scenario file compiled, and what a scenario run does not do refused.
fn scenario_program(
    spec: &LoadSpec,
    source: &crate::ScenarioSource,
) -> Result<crate::scenario::Program, SpecError> {
    let (program, _) = crate::scenario::load_source(source).map_err(bad)?;
    if spec.pipeline > 1 {
        // A user's next step depends on the response before it: nothing to pipeline.
        return Err(bad(
            "--scenario: a user sends a step after the response before it, so there is \
             nothing to pipeline: drop --pipeline (over HTTP/2, --streams seats that many \
             users on each connection)",
        ));
    }
    Ok(program)
}

/// A scenario's steps as the run's entries, in step order (entry k is step k): each step's
/// method, URL on the run's origin, headers and body, with `{{name}}` where a variable goes.
fn scenario_entries(
    spec: &LoadSpec,
    program: &crate::scenario::Program,
) -> Result<Entries, SpecError> {
    use crate::scenario::{Op, Part, Text};
    let origin = match (spec.url.is_empty(), &program.target) {
        (false, _) => spec.url.clone(),
        (true, Some(t)) => t.clone(),
        (true, None) => {
            return Err(bad(
                "--scenario needs a URL, or a target in the scenario file's config",
            ))
        }
    };
    let base = url::Url::parse(&origin).map_err(|e| bad(format!("invalid URL {origin}: {e}")))?;
    let text = |t: &Text| {
        t.0.iter()
            .map(|p| match p {
                Part::Lit(s) => s.clone(),
                Part::Var(v) => format!("{{{{{}}}}}", program.variables[*v as usize]),
            })
            .collect::<String>()
    };
    let mut steps: Vec<Option<TargetEntry>> = (0..program.steps.len()).map(|_| None).collect();
    for s in &program.scenarios {
        for op in s.once.iter().chain(&s.flow) {
            let Op::Request(step) = op else { continue };
            let url = text(&step.url);
            let url = if url.starts_with('/') {
                format!("{}{url}", base.origin().ascii_serialization())
            } else {
                url
            };
            steps[step.id as usize] = Some(TargetEntry {
                recorded_us: None,
                method: Some(step.method.clone()),
                url,
                headers: step
                    .headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", text(v)))
                    .collect(),
                body: Some(
                    step.body
                        .as_ref()
                        .map(|b| text(b).into_bytes())
                        .unwrap_or_default(),
                ),
                name: Some(program.steps[step.id as usize].clone()),
                line: 0,
                time: None,
            });
        }
    }
    let list = steps
        .into_iter()
        .map(|e| e.expect("every step is in a scenario"))
        .collect();
    Ok(Entries {
        list,
        from: ("scenario", Some(spec_path(spec))),
        vars: program.variables.clone(),
        skipped: None,
    })
}

fn spec_path(spec: &LoadSpec) -> String {
    match &spec.requests_from {
        Requests::Scenario(source) => source.name(),
        _ => String::new(),
    }
}

/// The engine's scenario run: the program, each step's URL (for its users' cookie jars).
fn scenario_run(
    program: crate::scenario::Program,
    list: &[TargetEntry],
) -> Result<engine::scenario::ScenarioRun, SpecError> {
    let urls = list
        .iter()
        .map(|e| url::Url::parse(&e.url).map_err(|err| bad(format!("step URL {}: {err}", e.url))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(engine::scenario::ScenarioRun {
        program,
        urls,
        seed: clock_seed(),
    })
}

/// An entry as HTTP/2 sends it: its header block encoded once, and its body.
fn h2_request(
    method: &str,
    p: &target::Parsed,
    headers: &[(String, String)],
    body: &[u8],
) -> engine::H2Request {
    let scheme = if p.https { "https" } else { "http" };
    engine::H2Request {
        header_block: pelt_codec::h2::encode_headers(
            method,
            scheme,
            &p.host_header,
            &p.path,
            headers,
            body.len(),
        ),
        body: body.to_vec(),
    }
}

/// A seed for `--order random` without `--seed` (reported, so the run can be repeated).
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The `--targets` file, as the report names it.
fn spec_file(spec: &LoadSpec) -> Option<String> {
    match &spec.requests_from {
        Requests::Targets {
            source: TargetsSource::File(path),
            ..
        } => Some(path.display().to_string()),
        _ => None,
    }
}

/// Names an entry in a message: `--targets FILE line N`, `target N` of a program's list, or
/// nothing for the command line's own request.
struct Where<'a>(&'a From, usize, usize);

impl Where<'_> {
    /// `WHERE: ` before a message (empty for the command line's request).
    fn prefix(&self) -> String {
        match self.0 .0 {
            "url" => String::new(),
            _ => format!("{self}: "),
        }
    }

    /// `WHERE, PART` (or `PART` for the command line's request).
    fn with(&self, part: &str) -> String {
        match self.0 .0 {
            "url" => part.to_string(),
            _ => format!("{self}, {part}"),
        }
    }
}

impl std::fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            ("url", _) => write!(f, "the request"),
            (kind, Some(file)) => write!(f, "--{kind} {file} line {}", self.1),
            (kind, None) => write!(f, "{} {}", kind.trim_end_matches('s'), self.2 + 1),
        }
    }
}

/// Per-target names: a target's `name`, else its method and path without the query (with any
/// template as typed). The first [`pelt_stats::MAX_TARGET_NAMES`] distinct names get figures
/// of their own; the rest share [`pelt_stats::OTHER`].
#[derive(Default)]
pub(crate) struct Names {
    /// Each distinct name and its number (kept once: a name may be as long as its URL).
    index: std::collections::HashMap<String, u32>,
    name_of: Vec<u32>,
    other: Option<u32>,
    /// The recording's latencies (`recorded_us`), by name number.
    recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
}

impl Names {
    /// Names entry `e`, whose URL's path is `path`.
    fn add(&mut self, e: &TargetEntry, method: &str, path: &str) {
        let name = match &e.name {
            Some(n) => n.clone(),
            None => {
                let path = path.split('?').next().unwrap_or("/");
                format!("{method} {}", as_typed(path))
            }
        };
        let next = self.index.len() as u32 + u32::from(self.other.is_some());
        let n = match self.index.get(&name) {
            Some(&n) => n,
            None if self.other.is_none() && self.index.len() < pelt_stats::MAX_TARGET_NAMES => {
                self.index.insert(name, next);
                next
            }
            None => *self.other.get_or_insert(next),
        };
        self.name_of.push(n);
        if let Some(us) = e.recorded_us {
            if self.recorded.len() <= n as usize {
                self.recorded.resize(n as usize + 1, None);
            }
            self.recorded[n as usize]
                .get_or_insert_with(pelt_stats::LatencyHistogram::coarse)
                .record(us);
        }
    }

    /// The names in order of their numbers, each entry's number, and the recording's
    /// latencies by number.
    fn into_parts(
        mut self,
    ) -> (
        Vec<String>,
        Vec<u32>,
        Vec<Option<pelt_stats::LatencyHistogram>>,
    ) {
        let count = self.index.len() + usize::from(self.other.is_some());
        let mut names = vec![String::new(); count];
        for (name, n) in self.index {
            names[n as usize] = name;
        }
        if let Some(n) = self.other {
            names[n as usize] = pelt_stats::OTHER.to_string();
        }
        self.recorded.resize(count, None);
        (names, self.name_of, self.recorded)
    }
}

/// A template's braces as typed (the URL parser percent-encodes them in the path).
fn as_typed(path: &str) -> std::borrow::Cow<'_, str> {
    if path.contains("%7B%7B") || path.contains("%7D%7D") {
        path.replace("%7B%7B", "{{").replace("%7D%7D", "}}").into()
    } else {
        path.into()
    }
}
