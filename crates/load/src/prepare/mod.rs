//! A [`LoadSpec`] validated into a [`Prepared`] run: the engine's `Config` (the request
//! built once, the host resolved once, the TLS client set up, the fd limit raised) and the
//! report's `RunInfo`. Every problem is a [`SpecError`] whose message is the one line the CLI
//! prints, before any traffic.

use crate::sources::{self, TargetEntry, TargetsFormat, TargetsSource};
use crate::spec::{Body, IoChoice, LoadSpec, Requests, TargetOrder};
use crate::template::{LineFiles, Marked};
use crate::{target, tls, values};
use pelt_engine::{self as engine, Config};
use pelt_stats::{
    Http, Io, LoadModel, RequestSetInfo, RunInfo, SetFrom, SetOrder, StageInfo, StagesInfo,
};
mod encode;
mod entries;
mod grpc;
mod info;
mod monitor;
mod names;
mod protocol;
mod scenario;
mod script;
pub use script::wrk_errors;
mod shape;
pub(crate) mod streamed;

pub(crate) use self::encode::{EncoderState, SetBuilder};
pub(crate) use self::entries::{entries, log_layout, From};
use self::{
    encode::*, entries::*, info::*, monitor::*, names::*, protocol::*, scenario::*, shape::*,
};

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
    /// Goodput's latency targets as given (`--goodput`).
    pub slo: Vec<String>,
    /// `--monitor`: what to sample, and what it matched when the run was prepared.
    pub monitor: Option<(crate::monitor::Watch, String)>,
    /// `--monitor-remote`: the monitor reached and authenticated, taken by the run, and what
    /// it watches, as the report says it.
    pub remote_monitor: std::sync::Mutex<Option<crate::fleet::monitor::RemoteMonitor>>,
    pub remote_watching: Option<String>,
    /// A replayed recording's own latencies, by target name number (`None`: none recorded).
    pub recorded: Vec<Option<pelt_stats::LatencyHistogram>>,
    /// `-s`: the script, for its `done`.
    pub script: Option<pelt_script::Scripted>,
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
    let mut program = match &spec.requests_from {
        Requests::Scenario(source) => Some(scenario_program(spec, source)?),
        _ => None,
    };
    // A gRPC run is the HTTP/2 run of its calls, prepared as one.
    let call = grpc::call(spec, here, program.as_mut())?;
    let spec = call.as_ref().map_or(spec, |c| &c.spec);
    // A script's run is the run of the request its wrk table leaves.
    let threads = spec.threads.unwrap_or_else(engine::default_threads);
    let (scripted_spec, script) = script::run(spec, threads, here)?.unzip();
    let spec = scripted_spec.as_ref().unwrap_or(spec);
    if spec.streams.is_some() && !spec.http2 && !spec.http3 {
        return Err(bad(
            "--streams is HTTP/2's and HTTP/3's: add --http2 or --http3 (a grpc:// URL is \
             HTTP/2 already)",
        ));
    }
    slo_reads_streams(spec, call.as_ref())?;
    let (headers, body) = request_parts(spec)?;
    let mut shape = Shape::of(spec)?;
    // A targets file read as the run goes: its first pass, instead of the entries read whole.
    let replaying = crate::replay::checked(spec)?;
    let streamed = match streamed::chosen(spec)? {
        Some((path, format)) => streamed::prepare(spec, &path, format, &headers, &body)?,
        None => None,
    };
    let mut entries = match (&program, &streamed) {
        (Some(p), _) => Some(scenario_entries(spec, p)?),
        (None, Some(_)) => None,
        (None, None) => entries(spec, &body)?,
    };
    let mut templated_bodies = false;
    if let (Some(c), Some(e)) = (&call, entries.as_mut()) {
        templated_bodies = c.frame_bodies(e)?;
    }
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
    let mut target = target_of(spec, url, here)?;
    if let Some(c) = &call {
        target.display = c.display.clone();
        target.grpc = true;
    }
    check_room(spec, &shape, threads, here)?;
    tls_flags_fit(spec, &target)?;
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
    if let (Some(h2), Some(c)) = (encoded.http2.as_mut(), &call) {
        h2.grpc = Some(c.engine(templated_bodies));
    }
    let (mut method, mut set_info) = (std::mem::take(&mut encoded.method), encoded.set_info.take());
    let mut recorded = std::mem::take(&mut encoded.recorded);
    let mut feed = None;
    if let Some((scan, f)) = streamed {
        method = scan.methods;
        set_info = Some(RequestSetInfo {
            from: SetFrom::Targets,
            file: spec_file(spec),
            entries: scan.len as usize,
            order: SetOrder::Sequential,
            seed: None,
            skipped: scan.skipped,
            encoded_bytes: scan.encoded_bytes as usize,
        });
        recorded = scan.recorded;
        feed = Some((std::sync::Arc::new(f), scan.names));
    }
    let mut tls = tls_client(spec, &target)?;
    let http3 = http3(spec, &target, &encoded, &mut tls)?;
    let io = io_backend(spec.io)?;
    let scenario = match (program, &entries) {
        (Some(program), Some(e)) => Some(scenario_run(program, &e.list)?),
        _ => None,
    };
    let sources = Sources {
        replay,
        feed,
        websocket,
        scenario,
        http3,
    };
    let mut config = config(spec, &target, shape, threads, io, tls, encoded, sources);
    // A script's per-request hooks: each worker's request() says what it sends.
    if let Some(s) = &script {
        if let Some(maker) = s.hooks.clone() {
            // The targets or templates the run would send are offered to request().
            let offered = match std::mem::take(&mut config.requests_from) {
                engine::Requests::Set(set) => Some(std::sync::Arc::new(set)),
                engine::Requests::Fed { .. } => {
                    return Err(bad(format!(
                        "{}: a script's request() is offered the targets read whole (not \
                         --targets-read stream, nor --replay)",
                        s.file
                    )))
                }
                _ => None,
            };
            config.requests_from = engine::Requests::Scripted { maker, offered };
        }
        config.worker_addrs.clone_from(&s.addrs);
    }
    let info = run_info(spec, &target, &config, method, set_info);
    let monitor = monitor(spec, &target, here)?;
    let remote_monitor = remote_monitor(spec, here)?;
    Ok(Prepared {
        config,
        info,
        expect: spec.expect.clone(),
        slo: spec.slo.clone(),
        monitor,
        remote_watching: remote_monitor.as_ref().map(|r| r.describe()),
        remote_monitor: std::sync::Mutex::new(remote_monitor),
        recorded,
        script,
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

/// `--goodput` judges streams, so the run must read its responses as streams: `--stream`, an end
/// marker (`--stream-end '[DONE]'`, as OpenAI-style servers end theirs), an event limit, or a
/// server-streaming gRPC call. (A `text/event-stream` response is read as one anyway, but the
/// run cannot know before its first response that any will be.)
fn slo_reads_streams(spec: &LoadSpec, call: Option<&grpc::Call>) -> Result<(), SpecError> {
    let s = &spec.event_streams;
    let reads = s.all
        || s.end_marker.is_some()
        || s.max_events.is_some()
        || call.is_some_and(|c| c.grpc.server_streaming);
    if s.slo.is_none() || reads {
        return Ok(());
    }
    Err(bad(
        "--goodput judges streamed responses: add --stream-end '[DONE]' (an OpenAI-style server's \
         end), --stream or --prompts",
    ))
}
