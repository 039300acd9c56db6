//! pelt-load: the load-test library behind every front end of pelt (the `pelt` command, and
//! any program that runs a load test).
//!
//! A [`LoadSpec`] says what to do, with the CLI's defaults; [`prepare`] validates it into a
//! [`Prepared`] run (the host resolved once, the request built once, the TLS client set up),
//! or returns a [`SpecError`] whose message is the one line the CLI prints; [`run`] runs it
//! with a stop flag and a per-second progress callback and returns the [`Report`], the
//! document behind pelt's JSON result and summary.
//!
//! ```
//! use pelt_load::{prepare, run, LoadSpec};
//! use std::sync::atomic::AtomicBool;
//!
//! // A target to load: pelt's built-in server on a free port.
//! let server = pelt_server::Server::start(Default::default()).unwrap();
//! let mut spec = LoadSpec::new(format!("http://{}/", server.addr()));
//! spec.connections = 4;
//! spec.requests = Some(1000);
//! let prepared = prepare(&spec).unwrap();
//! let report = run(&prepared, &AtomicBool::new(false), &mut |_second| {});
//! assert_eq!(report.requests.completed, 1000);
//! assert_eq!(server.stop(), 1000);
//!
//! // Bad input never reaches the network: one line that says what is wrong.
//! let err = prepare(&LoadSpec::new("ftp://127.0.0.1/")).err().unwrap();
//! assert!(err.to_string().contains("ftp"), "{err}");
//! ```
//!
//! The modules below are the pieces front ends share: [`values`] parses what users type
//! (`10s`, `20k`, `0.1%`), [`expect`] the thresholds, [`target`] the URL, [`tls`] the
//! client's TLS settings, [`fmt`] the numbers as reports write them.

pub mod expect;
pub mod fleet;
pub mod fmt;
pub mod metrics;
pub mod monitor;
pub mod options;
mod prepare;
#[cfg(test)]
mod props;
mod report;
pub mod scenario;
pub mod sources;
mod spec;
pub mod study;
pub mod target;
mod template;
pub mod tls;
pub mod values;

pub use pelt_engine::{Arrival, IoBackend, Ramped, Rate, Slice, Stage};
pub use pelt_stats::{Report, TimelinePoint};
pub use prepare::{prepare, Prepared, SpecError};
pub use sources::{TargetEntry, TargetsFormat, TargetsSource};
pub use spec::{
    Body, IoChoice, LoadSpec, Requests, ScenarioSource, TargetOrder, TlsSpec, TlsVersion,
};

use std::sync::atomic::AtomicBool;

/// Runs a prepared load test until its duration or request count is reached, or `stop` is
/// set (then requests in flight get the spec's grace period), calling `on_second` with each
/// second's figures as the run goes. Returns the report, thresholds checked.
pub fn run(
    prepared: &Prepared,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&TimelinePoint),
) -> Report {
    let Some((watch, _)) = &prepared.monitor else {
        let result = pelt_engine::run(&prepared.config, stop, on_second);
        return prepared.report(&result);
    };
    // `--monitor`: a thread of its own (never a worker) samples at each second since the start,
    // sample k covering second k, and once more at the end (the last, shorter second). Each
    // point gets its second's sample: as it comes when the sample is in, and in the result.
    let start = std::time::Instant::now();
    let samples = std::sync::Mutex::new(Vec::new());
    let (ended, end) = std::sync::mpsc::channel::<()>();
    let mut result = std::thread::scope(|s| {
        let watch = watch.clone();
        let samples = &samples;
        s.spawn(move || {
            let mut sampler = monitor::Sampler::new(Some(watch));
            for k in 1u32.. {
                let due = start + std::time::Duration::from_secs(k.into());
                let wait = due.saturating_duration_since(std::time::Instant::now());
                let last = end.recv_timeout(wait).is_ok()
                    || matches!(
                        end.try_recv(),
                        Err(std::sync::mpsc::TryRecvError::Disconnected)
                    );
                let sample = sampler.sample();
                samples
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(sample);
                if last {
                    break;
                }
            }
        });
        let mut sampled = |point: &TimelinePoint| {
            let sample = samples
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(point.second as usize)
                .cloned();
            match sample {
                Some(sample) => {
                    let mut point = point.clone();
                    point.resources = Some(sample);
                    on_second(&point);
                }
                None => on_second(point),
            }
        };
        let result = pelt_engine::run(&prepared.config, stop, &mut sampled);
        let _ = ended.send(());
        result
    });
    let samples = samples.into_inner().unwrap_or_else(|e| e.into_inner());
    for p in &mut result.timeline {
        p.resources = samples.get(p.second as usize).cloned();
    }
    prepared.report(&result)
}
