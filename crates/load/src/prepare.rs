//! A [`LoadSpec`] validated into a [`Prepared`] run: the engine's `Config` (the request
//! built once, the host resolved once, the TLS client set up, the fd limit raised) and the
//! report's `RunInfo`. Every problem is a [`SpecError`] whose message is the one line the CLI
//! prints, before any traffic.

use crate::spec::{Body, IoChoice, LoadSpec};
use crate::{target, tls, values};
use pelt_engine::{self as engine, Config};
use pelt_stats::{Http, Io, LoadModel, RunInfo};

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
}

/// Validates `spec` and does the I/O a run needs first: resolves the host, reads the body
/// file, reads the TLS files, raises the soft fd limit to the hard one and checks the
/// connections fit. Nothing is sent.
pub fn prepare(spec: &LoadSpec) -> Result<Prepared, SpecError> {
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
        Body::File(p) => {
            if p.is_dir() {
                return Err(bad(format!(
                    "cannot read --body-file {}: it is a directory",
                    p.display()
                )));
            }
            std::fs::read(p)
                .map_err(|e| bad(format!("cannot read --body-file {}: {e}", p.display())))?
        }
        Body::None => Vec::new(),
    };
    let max_connections = spec.max_connections.unwrap_or(spec.connections);
    if max_connections < spec.connections {
        return Err(bad(format!(
            "--max-connections {max_connections} is below -c {}; it is the most connections \
             pelt may open, at least -c",
            spec.connections
        )));
    }
    let target = target::resolve(&spec.url).map_err(bad)?;
    let request = pelt_codec::RequestSpec {
        method: &spec.method,
        path: &target.path,
        host: &target.host_header,
        headers: &headers,
        body: &body,
        keep_alive: spec.keep_alive,
    }
    .encode()
    .map_err(|e| bad(format!("invalid request: {e}")))?;
    engine::ensure_fd_limit(max_connections).map_err(bad)?;
    let https = target.tls_host.is_some();
    let t = &spec.tls;
    if !https && t.is_set() {
        return Err(bad(
            "--cacert, --insecure, --tls-full-handshake, --tls-version, --sni and --cert/--key \
             are for https:// URLs",
        ));
    }
    let open = spec.rate.is_some();
    let http2 = spec.http2.then(|| engine::Http2 {
        header_block: pelt_codec::h2::encode_headers(
            &spec.method,
            if https { "https" } else { "http" },
            &target.host_header,
            &target.path,
            &headers,
            body.len(),
        ),
        body: body.clone(),
        streams: spec.streams.unwrap_or(if open { 100 } else { 1 }),
    });
    let tls = match &target.tls_host {
        Some(host) => Some(
            tls::client(
                host,
                &tls::TlsOptions {
                    cacert: t.cacert.as_deref(),
                    insecure: t.insecure,
                    full_handshake: t.full_handshake,
                    version: t.version,
                    sni: t.sni.as_deref(),
                    client_cert: t.cert.as_deref().zip(t.key.as_deref()),
                    http2: spec.http2,
                },
            )
            .map_err(bad)?,
        ),
        None => None,
    };
    let io = match spec.io {
        IoChoice::Auto => engine::IoBackend::detect(),
        IoChoice::Epoll => engine::IoBackend::Epoll,
        IoChoice::Uring => {
            engine::IoBackend::Uring
                .check()
                .map_err(|e| bad(format!("--io uring: {e}; use --io epoll")))?;
            engine::IoBackend::Uring
        }
    };
    let duration = match (spec.duration, spec.requests) {
        (None, None) => Some(engine::DEFAULT_DURATION),
        (d, _) => d,
    };
    let mut config = Config::new(target.addr, request);
    config.head_request = spec.method.eq_ignore_ascii_case("HEAD");
    config.keep_alive = spec.keep_alive;
    config.connections = spec.connections;
    config.threads = spec.threads.unwrap_or_else(engine::default_threads);
    config.duration = duration;
    config.requests = spec.requests;
    config.timeout = spec.timeout;
    config.connect_timeout = spec.connect_timeout;
    config.rate = spec.rate;
    config.arrival = spec.arrival;
    config.max_connections = max_connections;
    config.warmup = spec.warmup.unwrap_or_default();
    config.grace = spec.grace;
    config.io = io;
    config.pipeline = spec.pipeline;
    config.connect_rate = spec.connect_rate;
    config.tls = tls;
    let info = RunInfo {
        target: target.display,
        method: spec.method.clone(),
        connections: config.connections,
        threads: config.effective_threads(),
        keep_alive: config.keep_alive,
        io: match config.io {
            engine::IoBackend::Uring => Io::Uring,
            engine::IoBackend::Epoll => Io::Epoll,
        },
        pipeline: config.pipeline,
        http: if http2.is_some() {
            Http::Http2
        } else {
            Http::Http1
        },
        streams: http2.as_ref().map(|h| h.streams),
        connect_rate: config.connect_rate,
        tls: https.then(|| pelt_stats::TlsInfo {
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
        max_connections: open.then_some(max_connections),
        warmup_s: config.warmup.as_secs_f64(),
        grace_s: config.grace.as_secs_f64(),
        duration_limit_s: duration.map(|d| d.as_secs_f64()),
        requests_limit: spec.requests,
        timeout_s: spec.timeout.as_secs_f64(),
    };
    config.http2 = http2;
    Ok(Prepared {
        config,
        info,
        expect: spec.expect.clone(),
    })
}
