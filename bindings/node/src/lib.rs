//! pelt for Node.js: the native half. It only carries JSON across: options in (checked by
//! pelt's library, with the CLI's messages), the `--json` result and each second's timeline
//! point out. `pelt.js` builds the JavaScript API (`run`, `startServer`, `loadTest`) on it.
//!
//! A run's engine runs on its own threads (never libuv's pool), so a server under test in the
//! same Node process keeps serving; the addon installs no signal handler (Node owns them).
//! The two callbacks of a run keep Node's event loop alive until it ends, and no longer.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use pelt_load::options::{self, Kind, OptionError};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// `InvalidArg` becomes a `TypeError` in `pelt.js`, anything else a `RangeError`.
fn js_error(e: OptionError) -> Error {
    let status = match e.kind {
        Kind::Type => Status::InvalidArg,
        Kind::Range => Status::GenericFailure,
    };
    Error::new(status, e.message)
}

fn range(message: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, message.to_string())
}

/// The options object, from the JSON `pelt.js` made of it.
fn object(json: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(json) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Error::new(
            Status::InvalidArg,
            "options must be an object".to_string(),
        )),
    }
}

/// A run under way: `stop()` ends it as Ctrl-C ends the CLI's (requests in flight get the
/// grace period, the result is kept and marked interrupted).
#[napi]
pub struct NativeRun {
    stop: Arc<AtomicBool>,
}

#[napi]
impl NativeRun {
    #[napi]
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The callback of a run, a search or a comparison: one string per event, in order (the
/// exported functions spell the type out: napi-rs writes the TypeScript from it).
type OnEvent = ThreadsafeFunction<String, (), String, Status, false>;

/// Starts `work` on a thread of its own, named `name`, with the stop flag `stop()` sets;
/// `work` says what happens as `(kind, JSON)` events, the last one `d` (done).
fn spawn(
    name: &str,
    on_event: OnEvent,
    work: impl FnOnce(&AtomicBool, &mut dyn FnMut(char, String)) + Send + 'static,
) -> Result<NativeRun> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new()
        .name(format!("pelt-{name}"))
        .spawn(move || {
            work(&flag, &mut |kind, json| {
                // Never blocks the engine: the queue has no bound, and one call a second; the
                // last event waits for its place.
                let mode = match kind {
                    'd' | 'e' => ThreadsafeFunctionCallMode::Blocking,
                    _ => ThreadsafeFunctionCallMode::NonBlocking,
                };
                on_event.call(format!("{kind}{json}"), mode);
            })
        })
        .map_err(|e| range(format!("cannot start the {name}'s thread: {e}")))?;
    Ok(NativeRun { stop })
}

/// A second's timeline point as the `tick` event has it: the point, and `detail`: the
/// second's responses by status code, errors by kind and bytes sent and received (what the
/// result's timeline does not keep).
fn tick(point: &pelt_stats::TimelinePoint) -> String {
    let mut v = serde_json::to_value(point).expect("pelt's documents serialize");
    let d = &point.detail;
    let codes: Map<String, Value> = d
        .codes
        .iter()
        .map(|(c, n)| (c.to_string(), Value::from(*n)))
        .collect();
    v["detail"] = serde_json::json!({
        "codes": codes,
        "errors": d.errors,
        "bytes_sent": d.bytes_sent,
        "bytes_received": d.bytes_received,
    });
    v.to_string()
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("pelt's documents serialize")
}

/// Checks `options` (throws before any traffic), then starts the run on its own threads.
/// `onEvent` gets, in order, one string per event: `t` and each second's timeline point (with
/// its `detail`: codes, error kinds, bytes),
/// `s` and that second's sampled requests (`sampleEvery`) as `[index, target, status,
/// errorKind | null, latencyUs]` rows, and last `d` and the result; each as JSON. One
/// callback, so Node sees them in the order they happened.
#[napi]
pub fn start_run(
    options: String,
    on_event: ThreadsafeFunction<String, (), String, Status, false>,
) -> Result<NativeRun> {
    let spec = options::spec(&object(&options)?).map_err(js_error)?;
    let prepared = pelt_load::prepare(&spec).map_err(range)?;
    spawn("run", on_event, move |stop, event| {
        prepared.script_output(false);
        let report = pelt_load::run(&prepared, stop, &mut |point| {
            event('t', tick(point));
            if !point.samples.is_empty() {
                let rows: Vec<Value> = point
                    .samples
                    .iter()
                    .map(|s| {
                        let error = s.error.map(|k| k.name());
                        let response = s.response.as_ref().map(|r| String::from_utf8_lossy(r));
                        serde_json::json!([
                            s.index,
                            s.target,
                            s.status,
                            error,
                            s.latency_us,
                            response
                        ])
                    })
                    .collect();
                event('s', Value::Array(rows).to_string());
            }
        });
        // `script`: the threads' init() or first request() failed (nothing was sent), or its
        // done() failed after the run: the run is rejected with the script's line.
        if let Some(e) = prepared.script_failure() {
            return event('e', Value::String(e).to_string());
        }
        if let Err(e) = prepared.script_done(&report, false) {
            return event('e', Value::String(e).to_string());
        }
        event('d', json(&report));
    })
}

/// `pelt find-max`: checks `options` (a run's and the search's, by name), then runs the search
/// on its own thread. `onEvent` gets `p` and each step as it ends, then `d` and the search's
/// document (or `e` and the line that says why it could not go on); each as JSON.
#[napi]
pub fn start_find_max(
    options: String,
    on_event: ThreadsafeFunction<String, (), String, Status, false>,
) -> Result<NativeRun> {
    let mut run = object(&options)?;
    let search = split_off(&mut run, options::FIND_MAX);
    let spec = options::spec(&run).map_err(js_error)?;
    let settings = options::find_max(&search).map_err(js_error)?;
    let prepared = pelt_load::study::prepare_find_max(&spec, &settings).map_err(range)?;
    spawn("search", on_event, move |stop, event| {
        match prepared.run(stop, &mut |step| event('p', json(step))) {
            Ok(doc) => event('d', json(&doc)),
            Err(e) => event('e', Value::String(e.0).to_string()),
        }
    })
}

/// `options` split into the ones of `table` (by name) and the rest (the run's).
fn split_off<S>(
    options: &mut Map<String, Value>,
    table: &[options::Flag<S>],
) -> Map<String, Value> {
    let mut own = Map::new();
    for f in table {
        if let Some(v) = options.remove(f.name) {
            own.insert(f.name.to_string(), v);
        }
    }
    own
}

/// `pelt compare`: checks `options` (the runs' without a URL, and the comparison's, by name)
/// and prepares every cell, then runs them on their own thread. `onEvent` gets `r` and each
/// run as it ends, then `d` and the comparison's document; each as JSON.
#[napi]
pub fn start_compare(
    options: String,
    on_event: ThreadsafeFunction<String, (), String, Status, false>,
) -> Result<NativeRun> {
    let mut run = object(&options)?;
    let settings = options::compare(&split_off(&mut run, options::COMPARE)).map_err(js_error)?;
    options::read(&run).map_err(js_error)?;
    let study = pelt_load::study::prepare_compare(&run, &settings).map_err(range)?;
    spawn("comparison", on_event, move |stop, event| {
        let doc = study.run(stop, &mut |r| event('r', json(r)));
        event('d', json(&doc));
    })
}

/// Checks `options` as a run would, without running: the spec and its preparation.
#[napi]
pub fn check_options(options: String) -> Result<()> {
    let spec = options::spec(&object(&options)?).map_err(js_error)?;
    pelt_load::prepare(&spec).map_err(range)?;
    Ok(())
}

/// The built-in server (`pelt serve`), serving on its own threads until `close()`.
#[napi]
pub struct NativeServer {
    server: Mutex<Option<pelt_server::Server>>,
    url: String,
    port: u32,
    served: Mutex<Option<u64>>,
}

#[napi]
impl NativeServer {
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    #[napi(getter)]
    pub fn port(&self) -> u32 {
        self.port
    }

    /// Requests served so far (after `close()`: in all).
    #[napi]
    pub fn served(&self) -> i64 {
        if let Some(n) = *self.served.lock().expect("not poisoned") {
            return n as i64;
        }
        self.server
            .lock()
            .expect("not poisoned")
            .as_ref()
            .map_or(0, |s| s.served() as i64)
    }

    /// Stops serving; returns the requests served. Closing twice is harmless.
    #[napi]
    pub fn close(&self) -> i64 {
        if let Some(server) = self.server.lock().expect("not poisoned").take() {
            *self.served.lock().expect("not poisoned") = Some(server.stop());
        }
        self.served()
    }
}

/// Starts the built-in server; it listens when this returns.
#[napi]
pub fn start_server(options: String) -> Result<NativeServer> {
    // `pelt serve`'s options (pelt_load::options::SERVE), on a port the OS picks unless given.
    let mut options = object(&options)?;
    if options.get("port").is_none_or(Value::is_null) {
        options.insert("port".into(), Value::from(0));
    }
    let spec = options::serve(&options).map_err(js_error)?;
    let config = spec.config().map_err(range)?;
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let server =
        pelt_server::Server::start(config).map_err(|e| range(format!("cannot serve: {e}")))?;
    let addr = server.addr();
    let url = match server.unix_socket() {
        Some(_) => "http://localhost/".to_string(),
        None => match addr {
            std::net::SocketAddr::V6(v6) => format!("{scheme}://[{}]:{}/", v6.ip(), v6.port()),
            v4 => format!("{scheme}://{v4}/"),
        },
    };
    Ok(NativeServer {
        server: Mutex::new(Some(server)),
        url,
        port: u32::from(addr.port()),
        served: Mutex::new(None),
    })
}

/// What a set of latency histograms holds, merged: microseconds.
#[napi(object)]
pub struct LatencyStats {
    pub count: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stdev: f64,
    /// The values at the quantiles asked for, in their order.
    pub quantiles: Vec<f64>,
}

/// Merges result histograms (`histograms.latency_us` of one or more results, pelt's encoding
/// or any HdrHistogram V2 writer's, microseconds) and gives their count, min, max, mean,
/// standard deviation and the values at quantiles `qs` (0..=1): percentiles the JSON does not
/// list (loadtest's p95, autocannon's p2_5 ... p99_999), and results merged exactly.
#[napi]
pub fn latency_stats(histograms: Vec<String>, qs: Vec<f64>) -> Result<LatencyStats> {
    let mut merged = pelt_stats::LatencyHistogram::new();
    for text in &histograms {
        merged.merge(&pelt_stats::LatencyHistogram::decode(text).map_err(range)?);
    }
    let h = merged.hdr();
    let empty = h.is_empty();
    let of = |v: u64| if empty { 0.0 } else { v as f64 };
    Ok(LatencyStats {
        count: h.len() as f64,
        min: of(h.min()),
        max: of(h.max()),
        mean: if empty { 0.0 } else { h.mean() },
        stdev: if empty { 0.0 } else { h.stdev() },
        quantiles: qs
            .iter()
            .map(|&q| merged.quantile_us(q.clamp(0.0, 1.0)) as f64)
            .collect(),
    })
}
