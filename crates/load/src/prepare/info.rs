//! The engine's `Config` and the report's `RunInfo`, from the parts prepared before them.

use super::*;

/// What a run sends besides its encoded requests, each prepared by its own stage: a replay's
/// times, a targets file read as the run goes (and its per-target names), WebSocket, a
/// scenario's users.
pub(super) struct Sources {
    pub(super) replay: Option<engine::Replay>,
    pub(super) feed: Option<(std::sync::Arc<engine::Feed>, Vec<String>)>,
    pub(super) websocket: Option<engine::WebSocket>,
    pub(super) scenario: Option<engine::scenario::ScenarioRun>,
    pub(super) http3: Option<engine::Http3>,
}

/// The engine's config, whole: nothing is set on it after.
#[allow(clippy::too_many_arguments)]
pub(super) fn config(
    spec: &LoadSpec,
    target: &target::Target,
    shape: Shape,
    threads: usize,
    io: engine::IoBackend,
    tls: Option<engine::TlsClient>,
    encoded: Encoded,
    sources: Sources,
) -> Config {
    let mut config = Config::new(target.addr, encoded.request);
    config.head_request = spec.method.eq_ignore_ascii_case("HEAD");
    config.keep_alive = spec.keep_alive;
    config.connections = shape.connections;
    config.threads = threads;
    config.slice = spec.slice;
    config.duration = shape.duration;
    // -n, or a replay's count (its recording's requests, over its laps).
    config.requests = shape.requests;
    config.timeout = spec.timeout;
    config.connect_timeout = spec.connect_timeout;
    config.streams = spec.event_streams.clone();
    config.warmup = spec.warmup.unwrap_or_default();
    config.grace = spec.grace;
    config.io = io;
    config.connect_rate = spec.connect_rate;
    config.tls = tls;
    config.unix_socket = spec.unix_socket.clone();
    config.sample_every = spec.sample_every;
    config.sample_responses = spec.sample_responses;
    config.load = shape.load(spec, sources.replay);
    // A scenario's steps are a set; a feed comes without one.
    config.requests_from = match (encoded.set, sources.feed, sources.scenario) {
        (Some(steps), _, Some(run)) => engine::Requests::Scenario {
            steps,
            run: std::sync::Arc::new(run),
        },
        (_, Some((feed, names)), _) => engine::Requests::Fed { feed, names },
        (Some(set), None, None) => engine::Requests::Set(set),
        (None, None, _) => engine::Requests::One,
    };
    // The checks (`prepare/protocol.rs`) let one protocol through: --http2 is refused on a
    // ws:// URL.
    config.wire = match (sources.websocket, encoded.http2, sources.http3) {
        (Some(ws), _, _) => engine::Wire::WebSocket(ws),
        (None, Some(h2), _) => engine::Wire::Http2(h2),
        (None, None, Some(h3)) => engine::Wire::Http3(h3),
        (None, None, None) => engine::Wire::Http1 {
            pipeline: spec.pipeline,
        },
    };
    config
}

/// What the report says about the run (a fleet agent's, its part).
pub(super) fn run_info(
    spec: &LoadSpec,
    target: &target::Target,
    config: &Config,
    method: String,
    request_set: Option<RequestSetInfo>,
) -> RunInfo {
    let load = &config.load;
    let open = load.open_loop();
    let t = &spec.tls;
    let stages = load.stages().map(|s| StagesInfo {
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
        pipeline: spec.pipeline,
        http: match (config.http2(), config.http3()) {
            (Some(_), _) => Http::Http2,
            (_, Some(_)) => Http::Http3,
            _ => Http::Http1,
        },
        streams: (config.http2().map(|h| h.streams)).or(config.http3().map(|h| h.streams)),
        connect_rate: config.connect_rate,
        tls: target.tls_host.is_some().then(|| pelt_stats::TlsInfo {
            insecure: t.insecure,
            resumption: !t.full_handshake,
            cacert: t.cacert.as_ref().map(|p| p.display().to_string()),
            version: t.version.map(|v| v.name().to_string()),
            sni: t.sni.clone(),
        }),
        load_model: if load.is_open() {
            LoadModel::Open
        } else {
            LoadModel::Closed
        },
        rate: load.rate().map(|r| r.as_f64()),
        arrival: open.map(|o| o.arrival),
        max_connections: open.map(|_| load.max_connections(config.connections)),
        batch_window_us: open.map(|o| o.batch_window.as_micros() as u64),
        warmup_s: config.warmup.as_secs_f64(),
        grace_s: config.grace.as_secs_f64(),
        duration_limit_s: config.duration.map(|d| d.as_secs_f64()),
        requests_limit: config.requests,
        timeout_s: spec.timeout.as_secs_f64(),
        request_set,
        unix_socket: spec.unix_socket.as_ref().map(|p| p.display().to_string()),
        stages,
        replay: load.replay().map(|r| pelt_stats::ReplayInfo {
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
pub(super) fn info_part(info: &mut RunInfo, slice: engine::Slice, threads: usize) {
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
